// The exec tools' results as pi-unified-exec shapes them: a text envelope for the model (`[still running]` or
// `[exited]`, the header fields, `---`, the output tail), the same fields in `details` (snake_case, plus status,
// running, output, truncated) and a `structuredContent` object matching each tool's `outputSchema`, so codemode
// scripts get objects.
import { randomBytes } from "node:crypto";
import type { KillReport, ProcessReport } from "../../host/index.ts";
import type { BackendMark } from "../shared/backend-mark.ts";
import { modelOutput, oneLine } from "./text.ts";

export type WaitStatus = "completed" | "relative_deadline_reached" | "absolute_deadline_reached" | "cancelled";

export interface ProcessDetails {
  operation: "exec_command" | "write_stdin";
  /** Where the shell runs, when not on this machine (the renderer says `runs on <backend>`). */
  backend?: BackendMark;
  status: "running" | "exited";
  running: boolean;
  session_id?: number;
  exit_code?: number;
  signal?: string;
  failure_message?: string;
  note?: string;
  wait_mode?: "relative" | "absolute";
  wait_status?: WaitStatus;
  yield_until?: string;
  effective_wait_ms?: number;
  yield_time_ms?: number;
  on_exit?: "none" | "wake";
  completion_notification?: "armed";
  completion_delivery?: "direct";
  on_exit_wake?: "consumed";
  tool_time_utc: string;
  log_path?: string;
  cwd: string;
  command: string;
  pid?: number;
  wall_time_seconds: number;
  chunk_id: string;
  original_token_count: number;
  output_bytes_total: number;
  omitted_bytes?: number;
  tty: boolean;
  output: string;
  truncated: boolean;
  /** The footer shown under a truncated output. */
  truncation_note?: string;
}

export interface ProcessExtra {
  onExit?: "none" | "wake";
  /** exec_command asked for a wake but the exit came inside its window. */
  wantedWake?: boolean;
  waitMode?: "relative" | "absolute";
  yieldUntil?: string;
  yieldTimeMs?: number;
}

export const HELD_NOTE =
  "the shell has exited, but a background process it started still holds the output open, so the session stays " +
  "open until that process exits. To detach such a job, redirect it: `(cd dir && cmd >log 2>&1 </dev/null) &` or " +
  "`setsid cmd >log 2>&1 </dev/null &`; or end the session with kill_session.";

const chunkId = () => randomBytes(3).toString("hex");
const seconds = (ms: number) => Math.round(ms) / 1000;

/** The fields every exec result shares about its output window: timing, sizes and the model's bounded text. */
function outputFields(r: ProcessReport | KillReport) {
  const out = modelOutput(r.output, r.logPath);
  return {
    wall_time_seconds: seconds(r.wallMs),
    chunk_id: chunkId(),
    original_token_count: Math.ceil(r.output.length / 4),
    output_bytes_total: r.totalBytes,
    ...(r.omittedBytes > 0 ? { omitted_bytes: r.omittedBytes } : {}),
    tty: r.tty,
    output: out.text,
    truncated: out.truncated,
    ...(out.footer ? { truncation_note: out.footer } : {}),
  };
}

function waitStatus(r: ProcessReport, mode: "relative" | "absolute"): WaitStatus {
  if (!r.running) return "completed";
  if (r.wait === "cancelled") return "cancelled";
  return mode === "relative" ? "relative_deadline_reached" : "absolute_deadline_reached";
}

export function processDetails(
  operation: ProcessDetails["operation"],
  r: ProcessReport,
  extra: ProcessExtra,
  nowMs = Date.now(),
): ProcessDetails {
  const notes = [r.held && r.running ? HELD_NOTE : undefined, r.logProblem].filter(Boolean);
  const failure = r.end?.failure ?? r.writeFailure;
  const d: ProcessDetails = {
    operation,
    status: r.running ? "running" : "exited",
    running: r.running,
    ...(r.running ? { session_id: r.id } : {}),
    ...(!r.running && r.end?.end === "failed" ? { exit_code: -1 } : {}),
    ...(!r.running && typeof r.end?.code === "number" ? { exit_code: r.end.code } : {}),
    ...(!r.running && r.end?.signal ? { signal: r.end.signal } : {}),
    ...(failure ? { failure_message: oneLine(failure) } : {}),
    ...(notes.length ? { note: notes.join(" ") } : {}),
    ...(extra.waitMode
      ? {
          wait_mode: extra.waitMode,
          wait_status: waitStatus(r, extra.waitMode),
          ...(extra.waitMode === "absolute" && extra.yieldUntil ? { yield_until: extra.yieldUntil } : {}),
          ...(r.running ? { effective_wait_ms: Math.round(r.wallMs) } : {}),
        }
      : {}),
    ...(extra.yieldTimeMs !== undefined ? { yield_time_ms: extra.yieldTimeMs } : {}),
    tool_time_utc: new Date(nowMs).toISOString(),
    ...(r.logPath ? { log_path: r.logPath } : {}),
    cwd: r.cwd,
    command: r.command,
    ...(r.pid !== undefined ? { pid: r.pid } : {}),
    ...outputFields(r),
  };
  if (r.running && r.armed) Object.assign(d, { on_exit: "wake", completion_notification: "armed" });
  else if (!r.running && (r.consumedWake || extra.wantedWake))
    Object.assign(d, { on_exit: "wake", completion_delivery: "direct", ...(r.consumedWake ? { on_exit_wake: "consumed" } : {}) });
  else if (extra.onExit) d.on_exit = extra.onExit;
  return d;
}

function body(header: string[], output: string, footer: string | undefined): string {
  return `${header.join("\n")}\n---\n${output || "(no output)"}${footer ? `\n\n${footer}` : ""}`;
}

export function processText(d: ProcessDetails): string {
  const lines = [d.running ? "[still running]" : "[exited]"];
  if (d.session_id !== undefined) lines.push(`session_id: ${d.session_id}`);
  if (d.exit_code !== undefined) lines.push(`exit_code: ${d.exit_code}`);
  if (d.signal) lines.push(`signal: ${d.signal}`);
  if (d.failure_message) lines.push(`failure: ${d.failure_message}`);
  if (d.note) lines.push(`note: ${oneLine(d.note)}`);
  if (d.wait_mode) lines.push(`wait_mode: ${d.wait_mode}`);
  if (d.wait_status) lines.push(`wait_status: ${d.wait_status}`);
  if (d.yield_until) lines.push(`yield_until: ${d.yield_until}`);
  if (d.effective_wait_ms !== undefined) lines.push(`effective_wait_ms: ${d.effective_wait_ms}`);
  if (d.on_exit) lines.push(`on_exit: ${d.on_exit}`);
  if (d.completion_notification) lines.push(`completion_notification: ${d.completion_notification}`);
  if (d.completion_delivery) lines.push(`completion_delivery: ${d.completion_delivery}`);
  if (d.on_exit_wake) lines.push(`on_exit_wake: ${d.on_exit_wake}`);
  lines.push(`tool_time_utc: ${d.tool_time_utc}`);
  if (d.log_path) lines.push(`log_path: ${oneLine(d.log_path)}`);
  lines.push(`cwd: ${oneLine(d.cwd)}`);
  lines.push(`wall_time_seconds: ${d.wall_time_seconds.toFixed(3)}`);
  lines.push(`chunk_id: ${d.chunk_id}`);
  lines.push(`original_token_count: ${d.original_token_count}`);
  lines.push(`output_bytes_total: ${d.output_bytes_total}`);
  if (d.omitted_bytes) lines.push(`omitted_bytes: ${d.omitted_bytes}`);
  lines.push(`tty: ${d.tty}`);
  return body(lines, d.output, d.truncation_note);
}

/** What a codemode script gets from exec_command and write_stdin. */
export function processStructured(d: ProcessDetails) {
  return {
    status: d.status,
    running: d.running,
    output: d.output,
    truncated: d.truncated,
    ...(d.session_id !== undefined ? { session_id: d.session_id } : {}),
    ...(d.exit_code !== undefined ? { exit_code: d.exit_code } : {}),
    ...(d.signal ? { signal: d.signal } : {}),
    ...(d.failure_message ? { failure_message: d.failure_message } : {}),
    ...(d.log_path ? { log_path: d.log_path } : {}),
    wall_time_seconds: d.wall_time_seconds,
    ...(d.note ? { note: d.note } : {}),
    ...(d.wait_status ? { wait_status: d.wait_status } : {}),
    ...(d.on_exit ? { on_exit: d.on_exit } : {}),
    tool_time_utc: d.tool_time_utc,
  };
}

// ---- kill_session ----

export interface KillDetails {
  operation: "kill_session";
  status: "killed" | "kill_failed" | "already_exited" | "not_found";
  found: boolean;
  running: boolean;
  killed: boolean;
  escalated: boolean;
  session_id: number;
  requested_signal?: string;
  pid?: number;
  exit_code?: number;
  signal?: string;
  failure_message?: string;
  log_path?: string;
  cwd?: string;
  command?: string;
  wall_time_seconds: number;
  chunk_id?: string;
  original_token_count?: number;
  output_bytes_total?: number;
  omitted_bytes?: number;
  tty?: boolean;
  output: string;
  truncated: boolean;
  truncation_note?: string;
  tool_time_utc: string;
}

export function killDetails(id: number, signal: string, r: KillReport | undefined, nowMs = Date.now()): KillDetails {
  const tool_time_utc = new Date(nowMs).toISOString();
  if (!r)
    return {
      operation: "kill_session",
      status: "not_found",
      found: false,
      running: false,
      killed: false,
      escalated: false,
      session_id: id,
      requested_signal: signal,
      wall_time_seconds: 0,
      output: "",
      truncated: false,
      tool_time_utc,
    };
  const failure = r.killed || r.alreadyExited
    ? r.end?.failure
    : `the process is still running after ${signal}${r.escalated ? " and SIGKILL" : ""}: ${r.failure ?? "it did not exit"}; the session stays open (retry kill_session, or check what holds its output)`;
  return {
    operation: "kill_session",
    status: r.alreadyExited ? "already_exited" : r.killed ? "killed" : "kill_failed",
    found: true,
    running: r.running,
    killed: r.killed,
    escalated: r.escalated,
    session_id: id,
    requested_signal: signal,
    ...(r.pid !== undefined ? { pid: r.pid } : {}),
    ...(typeof r.end?.code === "number" ? { exit_code: r.end.code } : {}),
    ...(r.end?.signal ? { signal: r.end.signal } : {}),
    ...(failure ? { failure_message: oneLine(failure) } : {}),
    ...(r.logPath ? { log_path: r.logPath } : {}),
    cwd: r.cwd,
    command: r.command,
    ...outputFields(r),
    tool_time_utc,
  };
}

export function killText(d: KillDetails): string {
  if (!d.found) return `No such session: ${d.session_id}\ntool_time_utc: ${d.tool_time_utc}`;
  const lines = [d.status === "killed" ? "[killed]" : d.status === "already_exited" ? "[exited]" : "[kill failed]"];
  lines.push(`session_id: ${d.session_id}`);
  if (d.pid !== undefined) lines.push(`pid: ${d.pid}`);
  lines.push(`requested_signal: ${d.requested_signal}`);
  lines.push(`killed: ${d.killed}`, `running: ${d.running}`, `escalated: ${d.escalated}`);
  if (d.exit_code !== undefined) lines.push(`exit_code: ${d.exit_code}`);
  if (d.signal) lines.push(`signal: ${d.signal}`);
  if (d.failure_message) lines.push(`failure: ${d.failure_message}`);
  lines.push(`tool_time_utc: ${d.tool_time_utc}`);
  if (d.log_path) lines.push(`log_path: ${oneLine(d.log_path)}`);
  if (d.cwd) lines.push(`cwd: ${oneLine(d.cwd)}`);
  lines.push(`wall_time_seconds: ${d.wall_time_seconds.toFixed(3)}`);
  if (d.chunk_id) lines.push(`chunk_id: ${d.chunk_id}`);
  if (d.original_token_count !== undefined) lines.push(`original_token_count: ${d.original_token_count}`);
  if (d.output_bytes_total !== undefined) lines.push(`output_bytes_total: ${d.output_bytes_total}`);
  if (d.omitted_bytes) lines.push(`omitted_bytes: ${d.omitted_bytes}`);
  if (d.tty !== undefined) lines.push(`tty: ${d.tty}`);
  return body(lines, d.output, d.truncation_note);
}

export function killStructured(d: KillDetails) {
  const { operation: _o, chunk_id: _c, original_token_count: _t, truncation_note: _n, cwd: _w, command: _m, ...rest } = d;
  return rest;
}
