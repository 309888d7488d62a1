// A spare runner: a fresh-mode interpreter started ahead of time for one (interpreter, cwd, environment) key, so a
// fresh run can take it instead of paying an interpreter start. It waits `ready`; a fresh run `claimed` it (its
// process moves to the run); unused for long enough it is `retired`; a process that dies while waiting is `failed`.
import { enqueueActions, fromCallback, sendParent, setup } from "xstate";
import type { RunnerCommand, RunnerFact, RunnerInput } from "./events.ts";

export interface SpareInput {
  /** `spare:<n>`: the actor's id and systemId, and the handover key of its process. */
  id: string;
  key: string;
  cwd: string;
  python?: string;
  /** Unused this long, the spare retires (its key is no longer in use). */
  idleMs: number;
}

export type SpareEvent =
  RunnerFact | { type: "spare.claim"; at: number; runId: string } | { type: "spare.retire"; at: number };

export type SpareNotice = { type: "spare.ready"; key: string; id: string };

export interface SpareOutput {
  id: string;
  key: string;
  end: "claimed" | "retired" | "failed";
}

const runnerPlaceholder = fromCallback<RunnerCommand, RunnerInput>(() => {
  throw new Error("spare: the `runner` actor must be provided");
});

export const spareMachine = setup({
  types: {
    context: {} as SpareInput,
    input: {} as SpareInput,
    events: {} as SpareEvent,
    output: {} as SpareOutput,
  },
  actors: { runner: runnerPlaceholder },
  delays: { idle: ({ context }) => context.idleMs },
}).createMachine({
  id: "spare",
  context: ({ input }) => input,
  entry: enqueueActions(({ context, enqueue }) => {
    enqueue.spawnChild("runner", {
      id: "runner",
      input: {
        mode: "fresh",
        cwd: context.cwd,
        owner: context.id,
        ...(context.python ? { python: context.python } : {}),
      },
    });
  }),
  initial: "warming",
  on: {
    "runner.exited": ".failed",
    "runner.failed": ".failed",
    "spare.retire": ".retired",
  },
  states: {
    /** The interpreter is starting. */
    warming: {
      on: { "runner.ready": "ready" },
    },
    /** Started and idle, waiting for a fresh run with the same key. */
    ready: {
      entry: sendParent(({ context }): SpareNotice => ({ type: "spare.ready", key: context.key, id: context.id })),
      on: {
        "spare.claim": {
          target: "claimed",
          // The process moves to the run: the runner hands its handle over instead of stopping it.
          actions: enqueueActions(({ enqueue, event }) =>
            enqueue.sendTo("runner", { type: "runner.handover", runId: event.runId }),
          ),
        },
      },
      after: { idle: "retired" },
    },
    claimed: {
      type: "final",
      output: ({ context }) => ({ id: context.id, key: context.key, end: "claimed" as const }),
    },
    retired: {
      type: "final",
      output: ({ context }) => ({ id: context.id, key: context.key, end: "retired" as const }),
    },
    failed: { type: "final", output: ({ context }) => ({ id: context.id, key: context.key, end: "failed" as const }) },
  },
  output: ({ event }) => event.output as SpareOutput,
});
