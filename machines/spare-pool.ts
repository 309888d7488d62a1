// The spare runners of one supervisor (`spare:pool`, a child of the supervisor, spawned by the first fresh run that
// has a spare key): each spare is a child `spare:<n>` (machines/spare.ts) started for one key (interpreter, cwd,
// environment), and reports to the pool. The pool keeps which spares it started for which key and how many each key
// keeps (one; more while fresh runs find its spares still warming, at most MAX_SPARES_PER_KEY; back down as idle
// spares retire). Whether a spare is warming or ready is the spare's own state, never copied here: the supervisor
// finds a ready one for a fresh run by reading the pool's snapshot (`readySpare`), in the transition that starts the
// run, then tells the pool which run took which spare (or that it found none) and the pool claims it and replaces it.
import { assertEvent, enqueueActions, setup } from "xstate";
import type { AnyActorRef, DoneActorEvent, SnapshotFrom } from "xstate";
import { spareIsReady, spareMachine, type SpareEvent, type SpareInput, type SpareOutput } from "./spare.ts";
import { spareActorId } from "./actor-ids.ts";

export interface SparePoolInput {
  /** A spare unused this long retires. */
  idleMs: number;
}

/** What a spare is started for. */
export interface SpareRequest {
  key: string;
  cwd: string;
  python?: string;
}

/** The most spares kept per key: fresh runs arriving faster than one spare warms grow the pool up to this. */
export const MAX_SPARES_PER_KEY = 3;

export interface SparePoolContext extends SparePoolInput {
  /** The spares started and not yet ended, by actor id: the key each was started for. */
  spares: Record<string, string>;
  /** How many spares each key in use keeps. */
  target: Record<string, number>;
  /** The number of the last spare started (`spare:<seq>`). */
  seq: number;
}

/** From the supervisor: a fresh run of `key` started, taking spare `claimed` (read ready from this pool's snapshot),
 * or finding none ready. */
export type SparesRun = { type: "spares.run"; at: number; runId: string; claimed?: string } & SpareRequest;

export type SparePoolCommand = SparesRun | { type: "spares.shutdown"; at: number };

export type SparePoolEvent = SparePoolCommand | DoneActorEvent<SpareOutput>;

export const initialPool = (input: SparePoolInput): SparePoolContext => ({ ...input, spares: {}, target: {}, seq: 0 });

/** The ids of `key`'s spares, oldest first. */
export const sparesOf = (c: SparePoolContext, key: string): string[] =>
  Object.keys(c.spares).filter((id) => c.spares[id] === key);

/** How many spares `key` keeps after a fresh run of it: at least one, one more when the run found the key's spares
 * still warming (runs arrive faster than one spare warms), at most MAX_SPARES_PER_KEY. */
export function targetAfter(c: SparePoolContext, key: string, claimed: boolean): number {
  const grow = !claimed && sparesOf(c, key).length > 0 ? 1 : 0;
  return Math.min(MAX_SPARES_PER_KEY, Math.max(1, (c.target[key] ?? 0) + grow));
}

/** After a fresh run: the spares to start (the first run of a key starts one, which warms while that run starts
 * cold; a claimed one is replaced at once, so runs arriving back to back find the next one warming) and the pool's
 * new records. */
export function afterRun(c: SparePoolContext, run: SparesRun) {
  const request: SpareRequest = { key: run.key, cwd: run.cwd, ...(run.python ? { python: run.python } : {}) };
  const target = targetAfter(c, run.key, run.claimed !== undefined);
  let { [run.claimed ?? ""]: _taken, ...spares } = c.spares;
  let seq = c.seq;
  const start: SpareInput[] = [];
  for (let n = sparesOf({ ...c, spares }, run.key).length; n < target; n++) {
    seq += 1;
    const id = spareActorId(seq);
    start.push({ id, idleMs: c.idleMs, ...request });
    spares = { ...spares, [id]: run.key };
  }
  return { start, next: { spares, seq, target: { ...c.target, [run.key]: target } } };
}

/** A spare ended (claimed, retired or failed): it leaves the pool, and its key keeps what is left (the next burst
 * grows it again); a key with none left is forgotten. */
export function afterEnd(c: SparePoolContext, out: SpareOutput) {
  const { [out.id]: _gone, ...spares } = c.spares;
  const left = sparesOf({ ...c, spares }, out.key).length;
  const { [out.key]: _t, ...target } = c.target;
  return { spares, target: left ? { ...target, [out.key]: left } : target };
}

export type SparePoolSnapshot = SnapshotFrom<typeof sparePoolMachine>;

/** The first of `key`'s spares that is ready, read from the pool's snapshot and each spare's own (undefined: no
 * pool yet, or none ready). */
export function readySpare(pool: SparePoolSnapshot | undefined, key: string): string | undefined {
  if (!pool) return undefined;
  const children = pool.children as Record<string, AnyActorRef | undefined>;
  return sparesOf(pool.context, key).find((id) => spareIsReady(children[id]?.getSnapshot()));
}

export const sparePoolMachine = setup({
  types: {
    context: {} as SparePoolContext,
    input: {} as SparePoolInput,
    events: {} as SparePoolEvent,
  },
  actors: { spare: spareMachine },
  actions: {
    /** A fresh run of a key: the spare it took hands its process over, and the key's spares are topped up. */
    serveRun: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, "spares.run");
      if (event.claimed && context.spares[event.claimed]) {
        const claim = { type: "spare.claim", at: event.at, runId: event.runId } satisfies SpareEvent;
        enqueue.sendTo(event.claimed, claim);
      }
      const { start, next } = afterRun(context, event);
      for (const input of start) enqueue.spawnChild("spare", { id: input.id, systemId: input.id, input });
      enqueue.assign(next);
    }),
    /** A spare ended: removed at once (XState otherwise keeps done children), and out of its key's count. */
    release: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, "xstate.done.actor.*");
      enqueue.stopChild(event.actorId);
      const out = event.output as SpareOutput;
      if (context.spares[out.id]) enqueue.assign(afterEnd(context, out));
    }),
    retireAll: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, "spares.shutdown");
      const retire = { type: "spare.retire", at: event.at } satisfies SpareEvent;
      for (const id of Object.keys(context.spares)) enqueue.sendTo(id, retire);
    }),
  },
}).createMachine({
  id: "sparePool",
  context: ({ input }) => initialPool(input),
  initial: "serving",
  on: { "xstate.done.actor.*": { actions: "release" } },
  states: {
    serving: {
      description: "Spares warm or wait ready for the keys fresh runs use; each fresh run tops its key up.",
      on: {
        "spares.run": { actions: "serveRun" },
        "spares.shutdown": { target: "stopping", actions: "retireAll" },
      },
    },
    stopping: {
      description: "Pi is shutting down or reloading: every spare was told to retire, and none starts.",
    },
  },
});
