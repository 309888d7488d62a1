// Nested-call frames on the control channel (docs/protocol.md, "Nested tool calls"): the runner's `tool.call` and
// `tool.cancel` become runner facts for the run that is executing; the run's answers become `tool.result` frames.
// Anything malformed or meant for another run is answered here and never reaches a machine.
import type { RunnerFact } from "../../machines/events.ts";
import type { ToolResultCommand } from "../../machines/tool-events.ts";
import type { Frame } from "../process/framing.ts";
import type { RunnerHandle } from "../process/operations.ts";
import { fail, ok, type Result } from "../../lib/result.ts";

/** Call ids are the runner's short counters; anything longer is not one. */
const MAX_ID_LENGTH = 64;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The fact for a `tool.call`/`tool.cancel` frame, or the answer that refuses it (undefined: nothing to answer). */
export function toolFrameFact(
  frame: Frame,
  at: number,
  executingRun: string | undefined,
): Result<RunnerFact, Frame | undefined> {
  const id = frame.id;
  if (typeof id !== "string" || id.length === 0 || id.length > MAX_ID_LENGTH) return fail(undefined);
  const refuse = (text: string) =>
    fail({ type: "tool.result", id, run: String(frame.run ?? ""), status: "error", text });
  if (typeof frame.run !== "string" || frame.run !== executingRun) {
    return frame.type === "tool.cancel"
      ? fail(undefined)
      : refuse("tool calls are accepted only while their run executes");
  }
  if (frame.type === "tool.cancel") return ok({ type: "runner.tool_cancel", at, runId: frame.run, callId: id });
  if (typeof frame.name !== "string" || !isObject(frame.args)) return refuse("bad tool.call frame: name and args");
  return ok({ type: "runner.tool_call", at, runId: frame.run, callId: id, name: frame.name, args: frame.args });
}

/** Sends a run's answer; an answer too large for one frame becomes an error the script can read. */
export function sendToolResult(proc: RunnerHandle, c: ToolResultCommand): void {
  const frame = {
    type: "tool.result",
    id: c.callId,
    run: c.runId,
    status: c.status,
    text: c.text,
    ...(c.structured !== undefined ? { structured: c.structured } : {}),
  };
  const sent = proc.send(frame);
  if (!sent.ok) {
    const { structured: _dropped, ...plain } = frame as typeof frame & { structured?: string };
    proc.send({ ...plain, status: "error", text: `the result of this call could not be sent: ${sent.error}` });
  }
}
