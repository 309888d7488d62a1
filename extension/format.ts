// What the model and the user see of a run: output first (stdout, then stderr after a `[stderr]` line), then
// short notices that tell the truth about the session's state.
import type { RunOutcome } from "../machines/events.ts";
import type { RunResult } from "../actors/host.ts";

export interface CodeExecutionDetails {
  status: RunOutcome["status"];
  exitCode?: number;
  signal?: string;
  durationMs: number;
  stdoutBytes: number;
  stderrBytes: number;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  displayedValue: boolean;
  session?: { name: string; ordinal: number; isLost: boolean };
}

export type RunningDetails = { status: "running" };

/** Model-visible output bound; past it the head of stdout and the tail (where tracebacks are) are kept. */
export const MAX_TEXT_BYTES = 48 * 1024;

export function detailsOf(result: RunResult): CodeExecutionDetails {
  const o = result.outcome;
  return {
    status: o.status,
    ...(o.exitCode !== undefined ? { exitCode: o.exitCode } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
    durationMs: o.durationMs,
    stdoutBytes: result.stdoutBytes,
    stderrBytes: result.stderrBytes,
    stdoutTruncated: result.stdoutTruncated,
    stderrTruncated: result.stderrTruncated,
    displayedValue: o.displayedValue,
    ...(o.session ? { session: { name: o.session.name, ordinal: o.session.ordinal, isLost: o.session.isLost } } : {}),
  };
}

export function transcript(stdout: string, stderr: string): string {
  if (!stderr) return stdout;
  return `${stdout}${stdout && !stdout.endsWith("\n") ? "\n" : ""}[stderr]\n${stderr}`;
}

/** Keeps the head and the tail of `text` within `maxBytes`, saying exactly how much was left out. */
export function headTail(text: string, maxBytes = MAX_TEXT_BYTES): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return text;
  const half = Math.floor((maxBytes - 100) / 2);
  let headEnd = half;
  while (headEnd > 0 && (bytes[headEnd] & 0xc0) === 0x80) headEnd--;
  let tailStart = bytes.length - half;
  while (tailStart < bytes.length && (bytes[tailStart] & 0xc0) === 0x80) tailStart++;
  const omitted = tailStart - headEnd;
  return `${bytes.subarray(0, headEnd).toString("utf8")}\n[... ${omitted} bytes of output omitted ...]\n${bytes.subarray(tailStart).toString("utf8")}`;
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

export interface NoticeContext {
  timeoutMs: number;
  graceMs: number;
  reset: boolean;
}

/** One line per fact the model must know: session started, kept or lost; why the run ended. */
export function notices(o: RunOutcome, ctx: NoticeContext): string[] {
  const lines: string[] = [];
  const s = o.session;
  if (s?.started) {
    const version = o.kernel ? ` (Python ${o.kernel.python})` : "";
    if (ctx.reset) lines.push(`[session "${s.name}" was reset: started fresh${version}, no earlier state]`);
    else if (s.replacedLost)
      lines.push(
        `[session "${s.name}" started anew${version}: its previous process was lost, so earlier state is gone]`,
      );
    else lines.push(`[session "${s.name}" started${version}]`);
  }
  if (o.status === "setup_error" && o.message) lines.push(`[setup error: ${o.message}]`);
  const why =
    o.stopReason === "timeout"
      ? `timed out after ${seconds(ctx.timeoutMs)}`
      : o.stopReason === "cancelled"
        ? "cancelled"
        : undefined;
  if (why) {
    if (o.killed)
      lines.push(
        `[${why}: the code did not stop within the ${seconds(ctx.graceMs)} grace after KeyboardInterrupt, so its process was killed]`,
      );
    else lines.push(`[${why}: KeyboardInterrupt was raised in the code]`);
  }
  if (s?.isLost) {
    const how = o.killed
      ? "its process was killed"
      : o.signal
        ? `its process died (${o.signal})`
        : `its process exited (exit code ${o.exitCode ?? "unknown"})`;
    lines.push(`[session "${s.name}" lost its state: ${how}; the next run starts a new process]`);
  } else if (s && why && o.status !== "setup_error") {
    lines.push(`[session "${s.name}" kept its state]`);
  } else if (!s && o.status === "runtime_error" && o.signal) {
    lines.push(`[process died (${o.signal})]`);
  }
  if (o.status === "runtime_error" && o.exitCode !== undefined && o.exitCode !== 1 && !o.signal) {
    lines.push(`[exit code ${o.exitCode}]`);
  }
  return lines;
}

export function resultText(result: RunResult, ctx: NoticeContext): string {
  const out = headTail(transcript(result.stdout, result.stderr));
  const lines = notices(result.outcome, ctx);
  if (lines.length === 0) return out || "[no output]";
  return `${out}${out && !out.endsWith("\n") ? "\n" : ""}${lines.join("\n")}`;
}

/** A bounded live view of both channels while the run executes. */
export function liveText(preview: { stdout: string; stderr: string }): string {
  return transcript(preview.stdout, preview.stderr);
}
