// machines/actor-event-candidates.ts: events XState names after an actor are selected as XState selects them
// (same transition, same order of candidates), whether a node has only the wildcard, names a fixed id, or has a
// deeper wildcard under the prefix; and new ids are served from the cache, not computed again.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { assertEvent, assign, createActor, setup, type AnyStateMachine } from "xstate";
import { forgetActorEventCandidates } from "../../machines/actor-event-candidates.ts";

type Ev = { type: string; actorId?: string; output?: unknown };

/** A machine whose root takes done events by a fixed id, a deeper wildcard, the prefix's wildcard and `xstate.*`,
 * in that order of precedence, and notes which one took each. */
function machine() {
  return setup({
    types: { context: {} as { took: string[] }, events: {} as Ev },
    guards: {
      fromRun: ({ event }) => {
        assertEvent(event, "xstate.done.actor.*");
        return String(event.actorId).startsWith("run:");
      },
    },
    actions: {
      note: assign(({ context }, which: string) => ({ took: [...context.took, which] })),
    },
  }).createMachine({
    context: { took: [] },
    initial: "a",
    states: {
      a: {
        on: {
          "xstate.done.actor.install": { actions: { type: "note", params: "exact" } },
          "xstate.done.actor.*": [
            { guard: "fromRun", actions: { type: "note", params: "run" } },
            { actions: { type: "note", params: "wildcard" } },
          ],
          "xstate.*": { actions: { type: "note", params: "xstate" } },
        },
      },
    },
  });
}

function deeper() {
  return setup({
    types: { context: {} as { took: string[] }, events: {} as Ev },
    actions: { note: assign(({ context }, which: string) => ({ took: [...context.took, which] })) },
  }).createMachine({
    context: { took: [] },
    on: {
      "xstate.done.actor.tool.*": { actions: { type: "note", params: "deeper" } },
      "xstate.done.actor.*": { actions: { type: "note", params: "wildcard" } },
    },
  });
}

const EVENTS: Ev[] = [
  { type: "xstate.done.actor.install", actorId: "install" },
  { type: "xstate.done.actor.run:abc", actorId: "run:abc" },
  { type: "xstate.done.actor.spare:3", actorId: "spare:3" },
  { type: "xstate.done.actor.tool.7", actorId: "tool.7" },
  { type: "xstate.error.actor.run:x", actorId: "run:x" },
  { type: "xstate.snapshot.run:y", actorId: "run:y" },
];

function took(logic: AnyStateMachine, events: Ev[]): string[] {
  const actor = createActor(logic).start();
  for (const e of events) actor.send(e);
  return (actor.getSnapshot().context as { took: string[] }).took;
}

describe("actor-named events", () => {
  it("take the transition XState takes, on a node with the wildcard, a fixed id and xstate.*", () => {
    const plain = took(machine(), EVENTS);
    assert.deepEqual(plain, ["exact", "run", "wildcard", "wildcard", "xstate", "xstate"]);
    assert.deepEqual(took(forgetActorEventCandidates(machine()), EVENTS), plain);
  });

  it("take the transition XState takes on a node with a deeper wildcard under the prefix", () => {
    // Done events only: an error event nothing takes errors the actor (XState's rule for a child's error).
    const done = EVENTS.filter((e) => e.type.startsWith("xstate.done."));
    const plain = took(deeper(), done);
    assert.deepEqual(plain, ["wildcard", "wildcard", "wildcard", "deeper"]);
    assert.deepEqual(took(forgetActorEventCandidates(deeper()), done), plain);
  });

  it("are selected from one cache entry per prefix: a thousand new ids compute no candidates again", () => {
    const logic = forgetActorEventCandidates(machine());
    const actor = createActor(logic).start();
    const send = (from: number, n: number) => {
      for (let i = from; i < from + n; i++) actor.send({ type: `xstate.done.actor.run:${i}`, actorId: `run:${i}` });
    };
    // The cache is XState's private WeakMap: what it would hold per id shows as a miss, which computes candidates
    // anew (XState's getCandidates reads the node's transitions' keys): count those reads.
    const node = (logic.root as unknown as { states: Record<string, { transitions: Map<string, unknown> }> }).states.a!;
    let reads = 0;
    const keys = node.transitions.keys.bind(node.transitions);
    node.transitions.keys = () => ((reads += 1), keys());
    send(0, 10);
    const afterTen = reads;
    send(10, 1000);
    assert.equal(reads, afterTen, "candidates were computed again for new ids");
    actor.stop();
  });
});
