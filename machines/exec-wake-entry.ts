// One shell session's completion wake (`wake:<id>`, a child of the wake coordinator, so it outlives the session's
// own actor: an evicted session that exited on its own keeps this as its tombstone). The invariant: a completion
// reaches the model through a finalized tool result or through one prompt, never both, never twice.
//
// - `on_exit` is a flag (`armed`), changed by exec_command's commit and by set_on_exit.
// - A call that could return the exit holds an observation lease (its tool call id). An exit while a lease is held
//   waits in `held`: the call that returns it `report`s it, and Pi finalizing that result (`finalize ok`) consumes
//   the wake; an error or cancelled result, or a call that returned without the exit, releases its lease.
// - An exit nobody observes with the flag set is `due`: the coordinator batches it into one prompt (`delivering`),
//   and a failed delivery makes it `due` again for the next attempt.
// - A kill, eviction or shutdown `suppress`es before any signal; the exit then ends the entry without a wake, and a
//   kill that failed `restore`s it.
import { and, assertEvent, assign, enqueueActions, sendParent, setup } from "xstate";

/** Bounded metadata of a completion: never output. */
export interface WakeNotice {
  id: number;
  command: string;
  cwd: string;
  startedAt: number;
  logPath?: string;
  /** Filled in at the exit. */
  exitedAt?: number;
  code?: number | null;
  signal?: string | null;
  failure?: string;
}

export interface WakeEntryInput {
  notice: WakeNotice;
  armed: boolean;
  /** Calls observing the session from the start (exec_command's own call). */
  leases: string[];
}

export interface WakeEntryContext extends WakeEntryInput {
  /** Leases whose call's result carries the exit (consumed when Pi finalizes it without error). */
  reported: string[];
}

export type OnExit = "none" | "wake";
export type SetOnExitStatus = "disarmed" | "already_none" | "armed" | "already_armed" | "too_late";

// ---- commands (coordinator -> entry) ----
export type WakeEntryEvent =
  | { type: "entry.set"; id: number; onExit: OnExit; requestId?: string }
  | { type: "entry.observe"; id: number; callId: string }
  | { type: "entry.release"; id: number; callId: string }
  | { type: "entry.report"; id: number; callId: string }
  | { type: "entry.finalize"; callId: string; ok: boolean }
  | { type: "entry.suppress"; id: number }
  | { type: "entry.restore"; id: number }
  | { type: "entry.exit"; id: number; at: number; code: number | null; signal: string | null; failure?: string }
  | { type: "entry.handoff"; id: number }
  | { type: "entry.delivered"; id: number }
  | { type: "entry.failed"; id: number }
  | { type: "entry.shutdown" };

// ---- notices (entry -> coordinator) ----
export type WakeEntryNotice =
  | { type: "wake.due"; notice: WakeNotice }
  | { type: "wake.withdraw"; id: number }
  | { type: "wake.answer"; requestId: string; id: number; found: true; status: SetOnExitStatus; armed: boolean };

export type WakeEnd = "delivered" | "consumed" | "quiet" | "ended";

export interface WakeEntryOutput {
  id: number;
  end: WakeEnd;
}

/** Events naming an observing call. */
const CALL_EVENTS = ["entry.observe", "entry.release", "entry.report", "entry.finalize"] as const;

const without = (list: string[], x: string) => list.filter((v) => v !== x);

/** A lease leaving `held`: the last one out makes the exit due (armed) or quiet; others just go. */
const leaseLeaves = [
  { guard: and(["lastLeaseLeaving", "armed"]), target: "due", actions: "dropLease" },
  { guard: "lastLeaseLeaving", target: "quiet", actions: "dropLease" },
  { actions: "dropLease" },
] as const;

/** A final state: the entry's output names how its completion ended. */
const ended = (end: WakeEnd) => ({
  type: "final" as const,
  output: ({ context }: { context: WakeEntryContext }): WakeEntryOutput => ({ id: context.notice.id, end }),
});

/** set_on_exit none: `disarmed` if the flag was set, else `already_none`. */
const answerDisarm = {
  type: "answer",
  params: ({ context }: { context: WakeEntryContext }) => ({
    status: context.armed ? ("disarmed" as const) : ("already_none" as const),
    armed: false,
  }),
} as const;

export const wakeEntryMachine = setup({
  types: {
    context: {} as WakeEntryContext,
    input: {} as WakeEntryInput,
    events: {} as WakeEntryEvent,
    output: {} as WakeEntryOutput,
  },
  actions: {
    addLease: assign({
      leases: ({ context, event }) => {
        assertEvent(event, [...CALL_EVENTS]);
        return [...without(context.leases, event.callId), event.callId];
      },
    }),
    dropLease: assign(({ context, event }) => {
      assertEvent(event, [...CALL_EVENTS]);
      return { leases: without(context.leases, event.callId), reported: without(context.reported, event.callId) };
    }),
    markReported: assign({
      reported: ({ context, event }) => {
        assertEvent(event, "entry.report");
        return context.leases.includes(event.callId)
          ? [...without(context.reported, event.callId), event.callId]
          : context.reported;
      },
    }),
    setFlag: assign({
      armed: ({ event }) => {
        assertEvent(event, "entry.set");
        return event.onExit === "wake";
      },
    }),
    clearFlag: assign({ armed: false }),
    recordExit: assign({
      notice: ({ context, event }) => {
        assertEvent(event, "entry.exit");
        return {
          ...context.notice,
          exitedAt: event.at,
          code: event.code,
          signal: event.signal,
          ...(event.failure ? { failure: event.failure } : {}),
        };
      },
    }),
    /** set_on_exit's answer to the coordinator, when the command came with a request to answer. */
    answer: enqueueActions(({ context, event, enqueue }, p: { status: SetOnExitStatus; armed: boolean }) => {
      assertEvent(event, "entry.set");
      if (event.requestId === undefined) return;
      enqueue.sendParent({
        type: "wake.answer",
        requestId: event.requestId,
        id: context.notice.id,
        found: true,
        status: p.status,
        armed: p.armed,
      } satisfies WakeEntryNotice);
    }),
    announceDue: sendParent(({ context }): WakeEntryNotice => ({ type: "wake.due", notice: context.notice })),
    withdraw: sendParent(({ context }): WakeEntryNotice => ({ type: "wake.withdraw", id: context.notice.id })),
  },
  guards: {
    observed: ({ context }) => context.leases.length > 0,
    armed: ({ context }) => context.armed,
    wantsWake: ({ event }) => {
      assertEvent(event, "entry.set");
      return event.onExit === "wake";
    },
    lastLeaseLeaving: ({ context, event }) => {
      assertEvent(event, [...CALL_EVENTS]);
      return without(context.leases, event.callId).length === 0;
    },
    consumes: ({ context, event }) => {
      assertEvent(event, "entry.finalize");
      return event.ok && context.reported.includes(event.callId);
    },
  },
}).createMachine({
  id: "wake-entry",
  context: ({ input }) => ({ ...input, reported: [] }),
  initial: "running",
  on: { "entry.shutdown": ".ended" },
  states: {
    running: {
      description: "The process runs; on_exit is the `armed` flag; observing calls hold leases.",
      initial: "watching",
      on: {
        "entry.set": [
          {
            guard: "wantsWake",
            actions: [
              {
                type: "answer",
                params: ({ context }) => ({ status: context.armed ? "already_armed" : "armed", armed: true }),
              },
              "setFlag",
            ],
          },
          { actions: [answerDisarm, "setFlag"] },
        ],
        "entry.observe": { actions: "addLease" },
        "entry.release": { actions: "dropLease" },
        "entry.finalize": { actions: "dropLease" },
      },
      states: {
        watching: {
          description: "An exit now is returned to an observer, prompts once if armed, or passes quietly.",
          on: {
            "entry.suppress": "suppressed",
            "entry.exit": [
              { guard: "observed", target: "#wake-entry.held", actions: "recordExit" },
              { guard: "armed", target: "#wake-entry.due", actions: "recordExit" },
              { target: "#wake-entry.quiet", actions: "recordExit" },
            ],
          },
        },
        suppressed: {
          description: "A kill, eviction or shutdown is stopping the process: its exit brings no wake.",
          on: {
            "entry.restore": "watching",
            "entry.exit": { target: "#wake-entry.ended", actions: "recordExit" },
          },
        },
      },
    },
    held: {
      description: "Exited while observed: the observing call returns the exit; Pi finalizing its result consumes it.",
      on: {
        "entry.set": [
          { guard: "wantsWake", actions: { type: "answer", params: { status: "too_late", armed: false } } },
          { actions: [answerDisarm, "clearFlag"] },
        ],
        "entry.observe": { actions: "addLease" },
        "entry.report": { actions: "markReported" },
        "entry.finalize": [{ guard: "consumes", target: "consumed" }, ...leaseLeaves],
        "entry.release": leaseLeaves,
      },
    },
    due: {
      description: "Exited unobserved with on_exit wake: waiting in the coordinator's batch.",
      entry: "announceDue",
      on: {
        "entry.set": [
          { guard: "wantsWake", actions: { type: "answer", params: { status: "already_armed", armed: true } } },
          {
            target: "quiet",
            actions: [{ type: "answer", params: { status: "disarmed", armed: false } }, "clearFlag", "withdraw"],
          },
        ],
        "entry.observe": { target: "held", actions: ["addLease", "withdraw"] },
        "entry.handoff": "delivering",
      },
    },
    delivering: {
      description: "Handed to Pi as part of one prompt: too late to disarm.",
      on: {
        "entry.set": {
          actions: {
            type: "answer",
            params: ({ event }) => ({ status: event.onExit === "wake" ? "already_armed" : "too_late", armed: true }),
          },
        },
        "entry.delivered": "delivered",
        "entry.failed": "due",
      },
    },
    delivered: { ...ended("delivered"), description: "The one prompt was delivered." },
    consumed: { ...ended("consumed"), description: "A finalized tool result returned the exit." },
    quiet: { ...ended("quiet"), description: "Exited with nothing to deliver (on_exit none, or disarmed)." },
    ended: { ...ended("ended"), description: "Suppressed: killed, evicted while running, or Pi shut down." },
  },
  output: ({ event }) => event.output as WakeEntryOutput,
});
