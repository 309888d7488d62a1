// The wake coordinator (`wake` under the exec pool): one entry per shell session (machines/exec-wake-entry.ts,
// `wake:<id>`), and the delivery of due completions as prompts. Completions that become due close together are
// batched: the first starts a short debounce (`collecting`), then all due ones go out as one prompt
// (`delivering`: the pool announces it to the host, which sends it to Pi and reports back). A failed delivery
// waits for Pi's `agent_settled` (`retrying`). After shutdown (`stopped`) every entry is ended and nothing is sent.
import { and, assertEvent, assign, enqueueActions, sendParent, setup } from "xstate";
import type { DoneActorEvent } from "xstate";
import {
  wakeEntryMachine,
  type OnExit,
  type SetOnExitStatus,
  type WakeEntryEvent,
  type WakeEntryInput,
  type WakeEntryNotice,
  type WakeEntryOutput,
  type WakeNotice,
} from "./exec-wake-entry.ts";
import { wakeActorId } from "./actor-ids.ts";

export interface WakeInput {
  /** Completions due within this window of the first go out in one prompt. */
  debounceMs: number;
}

export interface WakeContext extends WakeInput {
  /** Ids of the entries that exist (live sessions and tombstones). */
  entries: number[];
  /** Due completions waiting for the next prompt, by session id. */
  pending: Record<string, WakeNotice>;
  /** The prompt being delivered. */
  batch?: { n: number; ids: number[] };
  batches: number;
  /** Which entries each observing call leases, so its finalization goes only to them. */
  leases: Record<string, number[]>;
}

// ---- commands (pool -> coordinator) ----
export type WakeCommand =
  | { type: "wake.track"; id: number; entry: WakeEntryInput }
  /** set_on_exit for an id: answered by its entry, or here when there is none. */
  | { type: "wake.set"; id: number; onExit: OnExit; requestId: string; registered: boolean }
  | { type: "wake.delivered"; batch: number }
  | { type: "wake.failed"; batch: number }
  /** Pi's agent settled: a failed delivery is tried again. */
  | { type: "wake.settled" }
  | { type: "wake.stop" }
  | WakeEntryEvent;

// ---- notices (coordinator -> pool) ----
export type WakeNoticeOut =
  | { type: "wake.deliver"; batch: number; notices: WakeNotice[] }
  | { type: "wake.answer"; requestId: string; id: number; found: boolean; status?: SetOnExitStatus; armed: boolean };

export type WakeEvent = WakeCommand | WakeEntryNotice | DoneActorEvent<WakeEntryOutput>;

const entryId = (id: number) => wakeActorId(id);

/** A due completion withdrawn (observed or disarmed) while a prompt waits: the last one out leaves none to send. */
const withdrawing = [
  { guard: "withdrawsLast", target: "idle", actions: "withdrawDue" },
  { actions: "withdrawDue" },
] as const;

export const wakeMachine = setup({
  types: {
    context: {} as WakeContext,
    input: {} as WakeInput,
    events: {} as WakeEvent,
  },
  actors: { entry: wakeEntryMachine },
  actions: {
    track: enqueueActions(({ context, enqueue, system }, e: Extract<WakeCommand, { type: "wake.track" }>) => {
      if (system.get(entryId(e.id))) return;
      enqueue.spawnChild("entry", { id: entryId(e.id), systemId: entryId(e.id), input: e.entry });
      const leases = { ...context.leases };
      for (const callId of e.entry.leases) leases[callId] = [...(leases[callId] ?? []), e.id];
      enqueue.assign({ entries: [...context.entries, e.id], leases });
    }),
    /** Commands naming one session go to its entry; `entry.finalize` to the entries its call leased. */
    route: enqueueActions(({ context, enqueue, event, system }) => {
      assertEvent(event, "entry.*");
      const e: WakeEntryEvent = event;
      const ids = "id" in e ? [e.id] : e.type === "entry.finalize" ? (context.leases[e.callId] ?? []) : context.entries;
      for (const id of ids) {
        const ref = system.get(entryId(id));
        if (ref) enqueue.sendTo(ref, e);
      }
      if (e.type === "entry.observe" && !context.leases[e.callId]?.includes(e.id))
        enqueue.assign({ leases: { ...context.leases, [e.callId]: [...(context.leases[e.callId] ?? []), e.id] } });
      if (e.type === "entry.finalize" && context.leases[e.callId]) {
        const { [e.callId]: _done, ...leases } = context.leases;
        enqueue.assign({ leases });
      }
    }),
    set: enqueueActions(({ enqueue, system }, e: Extract<WakeCommand, { type: "wake.set" }>) => {
      const ref = system.get(entryId(e.id));
      if (ref) {
        const set = { type: "entry.set", id: e.id, onExit: e.onExit, requestId: e.requestId } satisfies WakeEntryEvent;
        enqueue.sendTo(ref, set);
        return;
      }
      // No entry: a session that is registered has already exited (its completion was settled); otherwise unknown.
      enqueue.sendParent({
        type: "wake.answer",
        requestId: e.requestId,
        id: e.id,
        found: e.registered,
        ...(e.registered ? { status: e.onExit === "wake" ? "too_late" : "already_none" } : {}),
        armed: false,
      } satisfies WakeNoticeOut);
    }),
    forwardAnswer: sendParent(({ event }) => {
      assertEvent(event, "wake.answer");
      return { ...event };
    }),
    addDue: assign({
      pending: ({ context }, notice: WakeNotice) => ({ ...context.pending, [notice.id]: notice }),
    }),
    withdrawDue: assign({
      pending: ({ context, event }) => {
        assertEvent(event, "wake.withdraw");
        const { [event.id]: _gone, ...rest } = context.pending;
        return rest;
      },
    }),
    /** Every pending completion into one prompt: entries are told it is on its way, the pool announces it. */
    deliver: enqueueActions(({ context, enqueue, system }) => {
      const ids = Object.keys(context.pending)
        .map(Number)
        .sort((a, b) => a - b);
      const n = context.batches + 1;
      for (const id of ids) {
        const ref = system.get(entryId(id));
        const handoff = { type: "entry.handoff", id } satisfies WakeEntryEvent;
        if (ref) enqueue.sendTo(ref, handoff);
      }
      enqueue.assign({ batch: { n, ids }, batches: n, pending: {} });
      enqueue.sendParent({
        type: "wake.deliver",
        batch: n,
        notices: ids.map((id) => context.pending[id]),
      } satisfies WakeNoticeOut);
    }),
    settleBatch: enqueueActions(({ context, enqueue, system }, outcome: "entry.delivered" | "entry.failed") => {
      for (const id of context.batch?.ids ?? []) {
        const ref = system.get(entryId(id));
        const settled = { type: outcome, id } satisfies WakeEntryEvent;
        if (ref) enqueue.sendTo(ref, settled);
      }
      enqueue.assign({ batch: undefined });
    }),
    release: enqueueActions(({ context, enqueue, event }) => {
      assertEvent(event, "xstate.done.actor.*");
      enqueue.stopChild(event.actorId);
      const id = event.output.id;
      const { [id]: _gone, ...pending } = context.pending;
      enqueue.assign({ entries: context.entries.filter((x) => x !== id), pending });
    }),
    endAll: enqueueActions(({ context, enqueue, system }) => {
      for (const id of context.entries) {
        const ref = system.get(entryId(id));
        const shutdown = { type: "entry.shutdown" } satisfies WakeEntryEvent;
        if (ref) enqueue.sendTo(ref, shutdown);
      }
      enqueue.assign({ pending: {}, batch: undefined });
    }),
  },
  guards: {
    nothingPending: ({ context }) => Object.keys(context.pending).length === 0,
    isCurrentBatch: ({ context, event }) => {
      assertEvent(event, ["wake.delivered", "wake.failed"]);
      return context.batch?.n === event.batch;
    },
    withdrawsLast: ({ context, event }) => {
      assertEvent(event, "wake.withdraw");
      return Object.keys(context.pending).every((k) => Number(k) === event.id);
    },
  },
  delays: { debounce: ({ context }) => context.debounceMs },
}).createMachine({
  id: "wake",
  context: ({ input }) => ({ ...input, entries: [], pending: {}, batches: 0, leases: {} }),
  initial: "idle",
  on: {
    "wake.track": { actions: { type: "track", params: ({ event }) => event } },
    "wake.set": { actions: { type: "set", params: ({ event }) => event } },
    "wake.answer": { actions: "forwardAnswer" },
    "entry.*": { actions: "route" },
    "wake.due": { actions: { type: "addDue", params: ({ event }) => event.notice } },
    "wake.withdraw": { actions: "withdrawDue" },
    "xstate.done.actor.*": { actions: "release" },
    "wake.stop": { target: ".stopped", actions: "endAll" },
  },
  states: {
    idle: {
      description: "No completion is due.",
      on: { "wake.due": { target: "collecting", actions: { type: "addDue", params: ({ event }) => event.notice } } },
    },
    collecting: {
      description: "A completion is due; others arriving within the debounce join the same prompt.",
      after: { debounce: [{ guard: "nothingPending", target: "idle" }, { target: "delivering" }] },
      on: {
        "wake.withdraw": withdrawing,
      },
    },
    delivering: {
      description: "One prompt with every due completion is with the host, on its way to Pi.",
      entry: "deliver",
      on: {
        "wake.delivered": [
          {
            guard: and(["isCurrentBatch", "nothingPending"]),
            target: "idle",
            actions: { type: "settleBatch", params: "entry.delivered" },
          },
          // Completions that became due meanwhile make the next prompt.
          {
            guard: "isCurrentBatch",
            target: "collecting",
            actions: { type: "settleBatch", params: "entry.delivered" },
          },
        ],
        "wake.failed": {
          guard: "isCurrentBatch",
          target: "retrying",
          actions: { type: "settleBatch", params: "entry.failed" },
        },
      },
    },
    retrying: {
      description: "The last delivery failed; the next attempt waits for Pi's agent to settle.",
      on: {
        "wake.settled": [{ guard: "nothingPending", target: "idle" }, { target: "delivering" }],
        "wake.withdraw": withdrawing,
      },
    },
    stopped: {
      description: "Pi is shutting down: no prompt is sent.",
      on: {
        "wake.due": {},
        "wake.withdraw": {},
        "wake.track": {},
      },
    },
  },
});
