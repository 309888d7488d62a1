// One nested tool call made by a run's Python code: an actor spawned by its run as `tool:<runId>:<seq>`. It spawns the
// `dispatch` actor (provided from actors/: the fixed lifecycle of observations, validation, interception, the tool
// itself and the `after` handler), follows it through validation and execution, and ends in a final state named by
// the outcome. Its output, the terminal record and the answer for Python, goes to the run. Cancellation (the run is
// stopping, or Python stopped waiting) is sent to the dispatch actor, which aborts the tool's signal and still runs
// `after` and the finish observation; stopping this actor (its run ended) stops the dispatch actor, which aborts too.
import { assign, fromCallback, sendTo, setup } from "xstate";
import type {
  DispatchCommand,
  DispatchEvent,
  DispatchInput,
  NestedCallRecord,
  NestedCallStatus,
  ToolCallOutput,
  ToolReply,
} from "./tool-events.ts";
import { callRecord, preview } from "./tool-records.ts";

export type ToolCallInput = DispatchInput;

export interface ToolCallContext extends ToolCallInput {
  record?: NestedCallRecord;
  reply?: ToolReply;
}

export type ToolCallEvent =
  DispatchEvent | { type: "tool.cancel"; at: number } | { type: "xstate.error.actor.dispatch"; error: unknown };

/** Placeholder: the real dispatcher is provided from actors/ (actors/calls/dispatch.ts). Without one, calls fail. */
const dispatchPlaceholder = fromCallback<DispatchCommand, DispatchInput>(() => {
  throw new Error("no tool dispatcher is available to this run");
});

type Finished = Extract<DispatchEvent, { type: "dispatch.finished" }>;

const is =
  (status: NestedCallStatus) =>
  ({ event }: { event: ToolCallEvent }) =>
    (event as Finished).record.status === status;

/** `dispatch.finished` ends the call in the state named by the record's status. */
const finish = (["succeeded", "failed", "invalid", "blocked", "cancelled"] as const).map((status) => ({
  guard: is(status),
  target: `#toolCall.${status}`,
  actions: "finish" as const,
}));

export const toolCallMachine = setup({
  types: {
    context: {} as ToolCallContext,
    input: {} as ToolCallInput,
    events: {} as ToolCallEvent,
    output: {} as ToolCallOutput,
  },
  actors: { dispatch: dispatchPlaceholder },
  actions: {
    finish: assign(({ event }) => {
      const e = event as Finished;
      return { record: e.record, reply: e.reply };
    }),
    /** The dispatcher itself broke: the call failed; Python gets the message. */
    broken: assign(({ context, event }) => {
      const error = (event as { error?: unknown }).error;
      const message = `${context.name}: ${error instanceof Error ? error.message : String(error)}`;
      return {
        record: callRecord(context, { status: "failed", at: context.at, error: preview(message) }),
        reply: { status: "error" as const, text: message },
      };
    }),
    cancelDispatch: sendTo("dispatch", ({ event }): DispatchCommand => ({
      type: "dispatch.cancel",
      at: (event as { at?: number }).at ?? 0,
    })),
  },
}).createMachine({
  id: "toolCall",
  context: ({ input }) => ({ ...input }),
  invoke: {
    src: "dispatch",
    id: "dispatch",
    input: ({ context }): DispatchInput => ({
      runId: context.runId,
      callId: context.callId,
      seq: context.seq,
      childId: context.childId,
      parentId: context.parentId,
      name: context.name,
      python: context.python,
      args: context.args,
      at: context.at,
    }),
    onError: { target: ".failed", actions: "broken" },
  },
  initial: "validating",
  states: {
    /** The start observation went out; the arguments are checked against the tool's schema. */
    validating: {
      on: {
        "dispatch.validated": "running",
        "dispatch.finished": finish,
        "tool.cancel": "cancelling",
      },
    },
    /** Intercepted (legacy event, `before`) and dispatched: the tool runs. */
    running: {
      on: {
        "dispatch.finished": finish,
        "tool.cancel": "cancelling",
      },
    },
    /** The tool's signal was aborted; `after` and the finish observation still run. */
    cancelling: {
      entry: "cancelDispatch",
      on: { "dispatch.finished": finish },
    },
    succeeded: { type: "final" },
    failed: { type: "final" },
    invalid: { type: "final" },
    blocked: { type: "final" },
    cancelled: { type: "final" },
  },
  output: ({ context }) => ({ callId: context.callId, record: context.record!, reply: context.reply! }),
});
