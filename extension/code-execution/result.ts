// What the model and the user see of a run: output first (stdout, then stderr after a `[stderr]` line), then
// short notices that tell the truth about the session's state.
import type { RunOutcome } from "../../machines/events.ts";
import type { NestedCallRecord } from "../../machines/tool-events.ts";
import type { RunResult } from "../../host/index.ts";
import type { OutputRef } from "../../store/artifacts.ts";
import type { ImageInfo } from "../shared/display/collector.ts";
import type { BackendMark } from "../shared/backend-mark.ts";
import { completeText, headTailText, type ArtifactOutcome } from "./preview.ts";
import {
  extraDetails,
  hintNotices,
  preludeNotices,
  replacedNotice,
  sessionState,
  type ExtraDetails,
  type SessionState,
} from "./notices.ts";

export interface CodeExecutionDetails extends ExtraDetails {
  backend?: BackendMark;
  status: RunOutcome["status"];
  exitCode?: number;
  signal?: string;
  durationMs: number;
  stdoutBytes: number;
  stderrBytes: number;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  displayedValue: boolean;
  /** `ordinal`: the run's ordinal within the session process; `incarnation`: which process of the session. */
  session?: { name: string; ordinal: number; incarnation: number; isLost: boolean; state: SessionState };
  /** The saved script (code_execution_source reads it; code_execution reruns it). */
  sourceId?: string;
  /** The saved transcript, when the text above is a preview (code_execution_output reads it). */
  output?: OutputRef;
  /** Every Pi tool call the code attempted, in start order (machines/tool-events.ts); empty when none. */
  nestedCalls: NestedCallRecord[];
  /** Images the run displayed (shown to the model, or saved as files when over the limits). */
  images?: ImageInfo[];
  /** JSON outputs the run displayed, parsed. */
  json?: unknown[];
}

export type RunningDetails = { status: "running"; sourceId: string };

export function detailsOf(
  result: RunResult,
  saved: { sourceId?: string; output?: OutputRef } = {},
): CodeExecutionDetails {
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
    ...(o.session
      ? {
          session: {
            name: o.session.name,
            ordinal: o.session.ordinal,
            incarnation: o.session.incarnation,
            isLost: o.session.isLost,
            state: sessionState(o) ?? "continued",
          },
        }
      : {}),
    ...extraDetails(o),
    ...(saved.sourceId ? { sourceId: saved.sourceId } : {}),
    ...(saved.output ? { output: saved.output } : {}),
    // Always present (seed-compatible): an empty array when the code called no tool.
    nestedCalls: o.nestedCalls ?? [],
  };
}

export function transcript(stdout: string, stderr: string): string {
  if (!stderr) return stdout;
  return `${stdout}${stdout && !stdout.endsWith("\n") ? "\n" : ""}[stderr]\n${stderr}`;
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
    const version = o.runner ? ` (Python ${o.runner.python})` : "";
    if (ctx.reset) lines.push(`[session "${s.name}" was reset: started fresh${version}, no earlier state]`);
    else if (s.replaced) lines.push(replacedNotice(s, version)!);
    else if (s.replacedLost)
      lines.push(
        `[session "${s.name}" started anew${version}: its previous process was lost, so earlier state is gone]`,
      );
    else lines.push(`[session "${s.name}" started${version}]`);
  }
  lines.push(...preludeNotices(o));
  if (o.status === "setup_error" && o.message) lines.push(`[setup error: ${o.message}]`);
  if (o.status === "policy_error") lines.push(policyNotice(o.nestedCalls ?? []));
  const why =
    o.stopReason === "timeout"
      ? `timed out after ${seconds(ctx.timeoutMs)}`
      : o.stopReason === "cancelled"
        ? "cancelled"
        : undefined;
  if (why && o.stage === "install") {
    lines.push(`[${why} during dependency installation: the code did not run]`);
  } else if (why) {
    if (o.killed)
      lines.push(
        `[${why}: the code did not stop within the ${seconds(ctx.graceMs)} grace after KeyboardInterrupt, so its process was killed]`,
      );
    else lines.push(`[${why}: KeyboardInterrupt was raised in the code]`);
  }
  if (s?.isLost) {
    const how = o.message
      ? o.message
      : o.killed
        ? "its process was killed"
        : o.signal
          ? `its process died (${o.signal})`
          : `its process exited (exit code ${o.exitCode ?? "unknown"})`;
    lines.push(`[session "${s.name}" lost its state: ${how}; the next run starts a new process]`);
  } else if (s && why && o.status !== "setup_error") {
    lines.push(`[session "${s.name}" kept its state]`);
  } else if (!s && o.message && o.status !== "setup_error" && o.stage !== "install") {
    lines.push(`[${o.message}]`);
  } else if (!s && o.status === "runtime_error" && o.signal) {
    lines.push(`[process died (${o.signal})]`);
  }
  if (o.status === "runtime_error" && o.exitCode !== undefined && o.exitCode !== 1 && !o.signal) {
    lines.push(`[exit code ${o.exitCode}]`);
  }
  lines.push(...hintNotices(o));
  return lines;
}

/** Which nested calls a policy blocked: the run fails with policy_error even when the code caught the error. */
function policyNotice(calls: readonly NestedCallRecord[]): string {
  const blocked = calls.filter((c) => c.status === "blocked");
  const first = blocked[0];
  const what = first?.error?.text.slice(0, 300) || `${first?.registeredName ?? "a nested tool call"} was blocked`;
  const more = blocked.length > 1 ? ` (and ${blocked.length - 1} more blocked calls)` : "";
  return `[policy error: ${what}${more}; the run counts as failed even if the code caught the error]`;
}

/**
 * The model-visible text, at most 20 KiB: the whole output then the notices when they fit (`complete`);
 * otherwise the head-tail preview, which needs the saved artifact (`artifact`) for its last line.
 */
export function resultText(
  result: RunResult,
  ctx: NoticeContext,
  artifact?: ArtifactOutcome,
): { complete: true; text: string } | { complete: false; text: string } {
  const lines = notices(result.outcome, ctx);
  const text = completeText(result.capture, lines);
  if (text !== undefined) return { complete: true, text };
  return { complete: false, text: headTailText(result.capture, lines, artifact ?? { ok: false, error: "not saved" }) };
}

/** A bounded live view of both channels while the run executes. */
export function liveText(preview: { stdout: string; stderr: string }): string {
  return transcript(preview.stdout, preview.stderr);
}
