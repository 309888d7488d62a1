// What the exec side of the host returns to the exec tools (host/exec.ts): reports of a session after each call,
// the requests the tools make, and where shell-session logs go.
import { join } from "node:path";
import type { ExecRecord } from "../machines/exec-pool.ts";
import type { OnExit, SetOnExitStatus } from "../machines/exec-wake-entry.ts";
import type { SessionIO } from "../actors/shell/session-io.ts";
import type { WaitOutcome } from "../actors/shell/waits.ts";

export interface ProcessReport {
  /** The session's id (the model's `session_id` while it runs). */
  id: number;
  running: boolean;
  /** The shell exited but a background process holds its output open. */
  held: boolean;
  end?: SessionIO["ended"];
  output: Uint8Array;
  omittedBytes: number;
  totalBytes: number;
  logPath?: string;
  logProblem?: string;
  command: string;
  cwd: string;
  tty: boolean;
  pid?: number;
  wallMs: number;
  wait: WaitOutcome;
  /** on_exit wake is armed after this call. */
  armed: boolean;
  /** The exit was returned here while a wake was armed: this result consumes it once Pi finalizes it. */
  consumedWake: boolean;
  writeFailure?: string;
  /** exec_command of a session kept running: how many sessions were registered when it started (itself included). */
  openSessions?: number;
}

export interface KillReport extends Omit<ProcessReport, "wait" | "consumedWake"> {
  signal: string;
  killed: boolean;
  escalated: boolean;
  /** The process had already exited when the kill came. */
  alreadyExited: boolean;
  /** A stop was already under way when the kill came (an LRU eviction, another kill, Pi's shutdown): this call
   * sent no signal and only waited for that stop, so it did not kill the session itself. */
  alreadyStopping: boolean;
  failure?: string;
}

export interface ExecSessionInfo extends ExecRecord {
  running: boolean;
  wakeArmed: boolean;
  logPath?: string;
  totalBytes: number;
}

export interface SetOnExitReport {
  found: boolean;
  status?: SetOnExitStatus;
  armed: boolean;
  session?: ExecSessionInfo;
}

export interface StartRequest {
  command: string;
  cwd: string;
  shell?: string;
  tty: boolean;
  cols: number;
  rows: number;
  yieldMs: number;
  onExit: OnExit;
  callId: string;
  signal?: AbortSignal;
  /** Called with the session's I/O once it exists (live previews). */
  onStart?: (io: SessionIO) => void;
}

export interface WriteRequest {
  id: number;
  bytes?: Uint8Array;
  /** `answer`: return once the process answers the input; `full`: wait out the window (exit ends it early). */
  until: "answer" | "full";
  durationMs: number;
  callId: string;
  signal?: AbortSignal;
}

/** What one exec call returns of a session: its new output (drained unless the call was cancelled), its state, and
 * whether on_exit still has a wake armed. */
export function processReport(
  io: SessionIO,
  r: ExecRecord | undefined,
  wait: WaitOutcome,
  began: number,
  drain: boolean,
  wakeArmed: (id: number) => boolean,
  writeFailure?: string,
): ProcessReport {
  const d = drain ? io.drain() : { bytes: new Uint8Array(0), omitted: 0 };
  return {
    id: io.id,
    running: !io.ended,
    held: r?.status === "held",
    ...(io.ended ? { end: io.ended } : {}),
    output: d.bytes,
    omittedBytes: d.omitted,
    totalBytes: io.totalBytes,
    ...(io.logPath ? { logPath: io.logPath } : {}),
    ...(io.logProblem ? { logProblem: io.logProblem } : {}),
    command: r?.command ?? "",
    cwd: r?.cwd ?? "",
    tty: r?.tty ?? false,
    ...(io.pid !== undefined ? { pid: io.pid } : {}),
    wallMs: performance.now() - began,
    wait,
    armed: !io.ended && wakeArmed(io.id),
    consumedWake: false,
    ...(writeFailure ? { writeFailure } : {}),
  };
}

/** The report of a start that never happened (its workdir or shell does not exist): an exit with the reason as its
 * failure, no session, no log. */
export function notStarted(req: StartRequest, failure: string): ProcessReport {
  return {
    id: 0,
    running: false,
    held: false,
    end: { end: "failed", at: Date.now(), code: null, signal: null, failure },
    output: new Uint8Array(0),
    omittedBytes: 0,
    totalBytes: 0,
    command: req.command,
    cwd: req.cwd,
    tty: req.tty,
    wallMs: 0,
    wait: "exit",
    armed: false,
    consumedWake: false,
  };
}

/** The answer for a session id that is not (or no longer) registered. */
export function unknownSession(id: number, ids: string[]): string {
  return `Unknown session_id ${id}${ids.length ? ` (sessions: ${ids.join(", ")})` : " (no sessions are open)"}. A session that exited and was reported once is gone; its log keeps the output.`;
}

/** A log file name's time: UTC, compact. */
export function stamp(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
}

export function execLogDir(agentDir: string): string {
  return join(agentDir, "pi-code-supervisor", "exec-logs");
}
