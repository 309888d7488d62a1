// Keeps XState's transition cache bounded. XState memoizes, per state node and for good, the transitions an event
// type may take (`StateNode.next`: memo(node, `candidates-${type}`)). Our event types are a fixed set, except the
// ones XState names after an actor: `xstate.done.actor.<id>`, `xstate.error.actor.<id>` and `xstate.snapshot.<id>`,
// and every run, tool call and spare has an id of its own. So each state node that saw a child end kept one entry
// per child: about 400 bytes a run on a warm session's path (issue 31; docs/reliability.md). Here those events are
// resolved on a throwaway view of the node (an object whose prototype is the node): XState computes the same
// candidates from the same transitions and memoizes them on the view, which is collected with it. Which transition
// is taken, and so every state sequence, is unchanged; only that cache entry is not kept.
import type { AnyActorLogic, AnyStateMachine, EventObject } from "xstate";

/** Event types XState names after an actor (one per actor id: unbounded). */
const ACTOR_EVENT_PREFIXES = ["xstate.done.actor.", "xstate.error.actor.", "xstate.snapshot."];

const isActorEvent = (type: string): boolean => ACTOR_EVENT_PREFIXES.some((prefix) => type.startsWith(prefix));

/** `StateNode.next` is XState's (internal) per-node transition selection, the one place that memoizes by type. */
interface Selecting {
  next(snapshot: unknown, event: EventObject): unknown;
  states: Record<string, Selecting>;
}

const patched = new WeakSet<object>();

/** Makes every state node of `machine`, and of each machine it provides as a child actor (their children too),
 * forget the transitions of actor-named events once they are taken. Returns `machine`; idempotent. */
export function forgetActorEventCandidates<T extends AnyStateMachine>(machine: T): T {
  patchMachine(machine);
  return machine;
}

function patchMachine(machine: AnyStateMachine): void {
  if (patched.has(machine)) return;
  patched.add(machine);
  patchNode(machine.root as unknown as Selecting);
  for (const logic of Object.values(machine.implementations.actors) as AnyActorLogic[]) {
    if (isMachine(logic)) patchMachine(logic);
  }
}

function patchNode(node: Selecting): void {
  const select = node.next;
  // An own property: lookups from XState (`stateNode.next(...)`) find it before the prototype's.
  node.next = function (this: Selecting, snapshot: unknown, event: EventObject) {
    return select.call(isActorEvent(event.type) ? Object.create(this) : this, snapshot, event);
  };
  for (const child of Object.values(node.states ?? {})) patchNode(child);
}

const isMachine = (logic: AnyActorLogic): logic is AnyStateMachine =>
  typeof logic === "object" && logic !== null && "root" in logic && "implementations" in logic;
