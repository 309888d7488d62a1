// One nested tool call made by a run's Python code: an actor spawned by its run as `tool:<runId>:<seq>`. It spawns the
// `dispatch` actor (provided from actors/calls/: the fixed lifecycle of observations, validation, interception, the tool
// itself and the `after` handler), follows it through validation and execution, and ends in a final state named by
// the outcome. Its output, the terminal record and the answer for Python, goes to the run. Cancellation (the run is
// stopping, or Python stopped waiting) is sent to the dispatch actor, which aborts the tool's signal and still runs
// `after` and the finish observation; stopping this actor (its run ended) stops the dispatch actor, which aborts too.
import { assertEvent, assign, sendTo, setup } from "xstate";
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
import { placeholder } from "./placeholder.ts";

export type ToolCallInput = DispatchInput;

export interface ToolCallContext extends ToolCallInput {
  record?: NestedCallRecord;
  reply?: ToolReply;
}

export type ToolCallEvent =
  DispatchEvent | { type: "tool.cancel"; at: number } | { type: "xstate.error.actor.dispatch"; error: unknown };

/** `dispatch.finished` ends the call in the state named by the record's status. */
const finish = (["succeeded", "failed", "invalid", "blocked", "cancelled"] as const).map((status) => ({
  guard: { type: "statusIs" as const, params: status },
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
  // Without a provided dispatcher every call fails at once (it never hangs), and Python is told why.
  actors: {
    dispatch: placeholder<DispatchCommand, DispatchInput>(
      "toolCall",
      "dispatch",
      "no tool dispatcher is available to this run",
    ),
  },
  actions: {
    finish: assign(({ event }) => {
      assertEvent(event, "dispatch.finished");
      return { record: event.record, reply: event.reply };
    }),
    /** The dispatcher itself broke: the call failed; Python gets the message. */
    broken: assign(({ context, event }) => {
      assertEvent(event, "xstate.error.actor.dispatch");
      const message = `${context.name}: ${event.error instanceof Error ? event.error.message : String(event.error)}`;
      return {
        record: callRecord(context, { status: "failed", at: context.at, error: preview(message) }),
        reply: { status: "error" as const, text: message },
      };
    }),
    cancelDispatch: sendTo("dispatch", ({ event }): DispatchCommand => {
      assertEvent(event, "tool.cancel");
      return { type: "dispatch.cancel", at: event.at };
    }),
  },
  guards: {
    statusIs: ({ event }, status: NestedCallStatus) => {
      assertEvent(event, "dispatch.finished");
      return event.record.status === status;
    },
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
    validating: {
      description: "The start observation went out; the arguments are checked against the tool's schema.",
      on: {
        "dispatch.validated": "running",
        "dispatch.finished": finish,
        "tool.cancel": "cancelling",
      },
    },
    running: {
      description: "Intercepted (legacy event, `before`) and dispatched: the tool runs.",
      on: {
        "dispatch.finished": finish,
        "tool.cancel": "cancelling",
      },
    },
    cancelling: {
      description: "The tool's signal was aborted; `after` and the finish observation still run.",
      entry: "cancelDispatch",
      on: { "dispatch.finished": finish },
    },
    succeeded: { type: "final", description: "The tool returned a result." },
    failed: { type: "final", description: "The tool (or its dispatcher) failed, or it is not exposed." },
    invalid: { type: "final", description: "The arguments failed validation against the tool's schema." },
    blocked: { type: "final", description: "A policy blocked the call (tool_call hook, legacy event, `before`)." },
    cancelled: { type: "final", description: "The run stopped, or Python stopped waiting." },
  },
  output: ({ context }) => ({ callId: context.callId, record: context.record!, reply: context.reply! }),
});
