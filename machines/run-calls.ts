// The run's side of nested tool calls, as pure functions of the run's context (machines/run.ts wires them into
// actions). A run spawns one `tool:<runId>:<seq>` actor per nested call (machines/tool-call.ts), answers the runner
// when a call ends, and passes each call's terminal record to its parent as a `run.nested_call` event (a session
// passes it on, the supervisor emits it, the host puts the records in start order on the run's result). Calls that
// cannot start (no such tool, too many in flight, the run is stopping) are answered at once and recorded all the
// same: `nestedCalls` lists every attempt.
//
// The context keeps only what is bounded: a counter, the open calls and how many were blocked. Records never
// accumulate in it: every snapshot of a run is observed (and recorded), so a growing list would cost each event of
// a run with many calls time in proportion to all earlier calls.
import {
  MAX_OPEN_CALLS,
  type CallsRequest,
  type DispatchInput,
  type NestedCallRecord,
  type Preview,
  type ToolCallFact,
  type ToolCallOutput,
  type ToolReply,
  type ToolResultCommand,
} from "./tool-events.ts";
import { callRecord, preview } from "./tool-records.ts";
import { runActorId, toolActorId } from "./actor-ids.ts";

/** What a run keeps of a call until it ends: enough to record it if it never reports. */
export interface OpenCall {
  seq: number;
  name: string;
  python: string;
  at: number;
  input: Preview;
}

export interface CallsContext {
  runId: string;
  calls?: CallsRequest;
  /** Calls started so far (the next call's seq is this + 1). */
  callCount?: number;
  /** Open calls: runner call id -> what is known of it. */
  open?: Record<string, OpenCall>;
  /** Calls a policy blocked. */
  blocked?: number;
}

/** The run -> parent event carrying one call's terminal record (a session passes it on; the supervisor emits it to
 * the host). */
export type NestedCallEvent = { type: "run.nested_call"; runId: string; record: NestedCallRecord };

export const recorded = (c: CallsContext, record: NestedCallRecord): NestedCallEvent => ({
  type: "run.nested_call",
  runId: c.runId,
  record,
});

type CallFact = Extract<ToolCallFact, { type: "runner.tool_call" }>;

export type CallStep =
  | { kind: "spawn"; id: string; input: DispatchInput; callCount: number; open: Record<string, OpenCall> }
  | { kind: "refuse"; callCount: number; record: NestedCallRecord; reply: ToolResultCommand };

export type RefusalReason = "stopping" | "ended";

const parentOf = (c: CallsContext) => c.calls?.callerId ?? runActorId(c.runId);

function inputOf(c: CallsContext, e: CallFact): DispatchInput {
  const seq = (c.callCount ?? 0) + 1;
  const spec = c.calls?.tools.find((t) => t.name === e.name);
  return {
    runId: c.runId,
    callId: e.callId,
    seq,
    childId: toolActorId(c.runId, seq),
    parentId: parentOf(c),
    name: e.name,
    python: spec?.python ?? e.name,
    args: e.args,
    at: e.at,
  };
}

function refuse(c: CallsContext, input: DispatchInput, record: NestedCallRecord, reply: ToolReply): CallStep {
  return {
    kind: "refuse",
    callCount: input.seq,
    record,
    reply: { type: "runner.tool_result", runId: c.runId, callId: input.callId, ...reply },
  };
}

/** A call while user code runs: spawn its actor, unless the tool is not exposed or too many calls are open. */
export function startCall(c: CallsContext, e: CallFact): CallStep {
  const input = inputOf(c, e);
  const open = c.open ?? {};
  const failed = (text: string) =>
    refuse(c, input, callRecord(input, { status: "failed", at: e.at, error: preview(text) }), {
      status: "error",
      text,
    });
  if (!c.calls?.tools.some((t) => t.name === e.name)) {
    return failed(`${e.name} is not exposed to Python in this run; available_tools() lists what is.`);
  }
  if (Object.keys(open).length >= MAX_OPEN_CALLS) {
    return failed(`${input.python}: ${MAX_OPEN_CALLS} tool calls are already in flight; limit the concurrency.`);
  }
  const known: OpenCall = {
    seq: input.seq,
    name: input.name,
    python: input.python,
    at: e.at,
    input: preview(JSON.stringify(e.args)),
  };
  return { kind: "spawn", id: input.childId, input, callCount: input.seq, open: { ...open, [e.callId]: known } };
}

/** A call that arrives while the run is being stopped or has ended: answered as cancelled, never started. */
export function refuseCall(c: CallsContext, e: CallFact, why: RefusalReason): CallStep {
  const input = inputOf(c, e);
  const text =
    why === "stopping"
      ? `${input.python}: the run is being stopped (timeout or cancellation); no new tool calls start.`
      : `${input.python}: the run has ended; no new tool calls start.`;
  return refuse(c, input, callRecord(input, { status: "cancelled", at: e.at, error: preview(text) }), {
    status: "cancelled",
    text,
  });
}

const childOf = (c: CallsContext, seq: number) => toolActorId(c.runId, seq);

/** The child id of an open call, by the runner's call id. */
export function openChild(c: CallsContext, callId: string): string | undefined {
  const call = c.open?.[callId];
  return call ? childOf(c, call.seq) : undefined;
}

export function openChildren(c: CallsContext): string[] {
  return Object.values(c.open ?? {}).map((call) => childOf(c, call.seq));
}

export const hasOpenCalls = (c: CallsContext) => Object.keys(c.open ?? {}).length > 0;

/** A call's actor ended: the runner gets the answer; the record goes on. */
export function finishCall(
  c: CallsContext,
  out: ToolCallOutput,
): { open: Record<string, OpenCall>; blocked: number; reply: ToolResultCommand } {
  const { [out.callId]: _done, ...open } = c.open ?? {};
  return {
    open,
    blocked: (c.blocked ?? 0) + (out.record.status === "blocked" ? 1 : 0),
    reply: { type: "runner.tool_result", runId: c.runId, callId: out.callId, ...out.reply },
  };
}

/** Calls still open when the drain bound passed (or that cannot drain): recorded as cancelled, ending at `at`. */
export function abandonCalls(
  c: CallsContext,
  at: number,
  boundMs: number,
  text = `The run ended and this call did not finish within ${boundMs} ms of cancellation (its tool, after handler or finish observation did not return).`,
): NestedCallRecord[] {
  return Object.entries(c.open ?? {})
    .sort(([, a], [, b]) => a.seq - b.seq)
    .map(([callId, call]) =>
      callRecord(
        {
          runId: c.runId,
          callId,
          seq: call.seq,
          childId: childOf(c, call.seq),
          parentId: parentOf(c),
          name: call.name,
          python: call.python,
          args: {},
          at: call.at,
        },
        { status: "cancelled", at, input: call.input, error: preview(text) },
      ),
    );
}

/** A call was blocked by a policy (a tool_call hook, the legacy event or a `before` handler). */
export const policyViolated = (c: CallsContext) => (c.blocked ?? 0) > 0;
