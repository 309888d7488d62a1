// A spare runner: a fresh-mode interpreter started ahead of time for one (interpreter, cwd, environment) key, so a
// fresh run can take it instead of paying an interpreter start. It waits `ready`; a fresh run `claimed` it (its
// process moves to the run); unused for long enough it is `retired`; a process that dies while waiting is `failed`.
// It is a child of the spare pool (machines/spare-pool.ts), which claims and retires it; whether it is ready is read
// from its snapshot (`spareIsReady`), never copied.
import { assertEvent, sendTo, setup, spawnChild } from "xstate";
import type { RunnerCommand, RunnerFact, RunnerInput } from "./events.ts";
import { placeholder } from "./placeholder.ts";

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

export interface SpareOutput {
  id: string;
  key: string;
  end: "claimed" | "retired" | "failed";
}

/** Whether a spare's snapshot (undefined once it is gone) is `ready` for a fresh run to claim. */
export const spareIsReady = (snapshot: { value?: unknown } | undefined): boolean => snapshot?.value === "ready";

const end = (how: SpareOutput["end"]) => ({
  type: "final" as const,
  output: ({ context }: { context: SpareInput }): SpareOutput => ({ id: context.id, key: context.key, end: how }),
});

export const spareMachine = setup({
  types: {
    context: {} as SpareInput,
    input: {} as SpareInput,
    events: {} as SpareEvent,
    output: {} as SpareOutput,
  },
  actors: { runner: placeholder<RunnerCommand, RunnerInput>("spare", "runner") },
  actions: {
    startProcess: spawnChild("runner", {
      id: "runner",
      input: ({ context }): RunnerInput => ({
        mode: "fresh",
        cwd: context.cwd,
        owner: context.id,
        ...(context.python ? { python: context.python } : {}),
      }),
    }),
    /** The process moves to the run: the runner hands its handle over instead of stopping it. */
    handOver: sendTo("runner", ({ event }): RunnerCommand => {
      assertEvent(event, "spare.claim");
      return { type: "runner.handover", runId: event.runId };
    }),
  },
  delays: { idle: ({ context }) => context.idleMs },
}).createMachine({
  id: "spare",
  context: ({ input }) => input,
  entry: "startProcess",
  initial: "warming",
  on: {
    "runner.exited": ".failed",
    "runner.failed": ".failed",
    "spare.retire": ".retired",
  },
  states: {
    warming: {
      description: "The interpreter is starting.",
      on: { "runner.ready": "ready" },
    },
    ready: {
      description: "Started and idle, waiting for a fresh run with the same key.",
      on: { "spare.claim": { target: "claimed", actions: "handOver" } },
      after: { idle: "retired" },
    },
    claimed: { ...end("claimed"), description: "A fresh run took the process." },
    retired: { ...end("retired"), description: "Unused for too long, or the supervisor is shutting down." },
    failed: { ...end("failed"), description: "The process died or never started." },
  },
  output: ({ event }) => event.output as SpareOutput,
});
