// Keeps XState's transition cache bounded. XState memoizes, per state node and for good, the transitions an event
// type may take (`StateNode.next`: memo(node, `candidates-${type}`)). Our event types are a fixed set, except the
// ones XState names after an actor: `xstate.done.actor.<id>`, `xstate.error.actor.<id>` and `xstate.snapshot.<id>`,
// and every run, tool call and spare has an id of its own. So each state node that saw a child end kept one entry
// per child: about 400 bytes a run on a warm session's path (issue 31; docs/reliability.md). Here such an event is
// selected under its prefix's wildcard (`xstate.done.actor.*`): a node whose only descriptors for that prefix are
// the wildcard itself, broader ones (`xstate.*`, `*`) and fixed ids (an invoke's `xstate.done.actor.install`) has the
// same candidates, in the same order, for every id it does not name, so one cache entry per prefix serves them all
// (computing them anew per id cost ~40 us a warm run). The guards see the event with that type (every guard of ours
// on these events asserts the wildcard and reads `actorId`/`output`). An event a node names exactly is selected as
// XState does (a fixed id: bounded); a node with a deeper wildcard under the prefix (`xstate.done.actor.run:x.*`)
// resolves it on a throwaway view of the node (an object whose prototype is the node), whose cache entry is
// collected with it. Which transition is taken, and so every state sequence, is unchanged.
import type { AnyActorLogic, AnyStateMachine, EventObject } from "xstate";

/** Event types XState names after an actor (one per actor id: unbounded). */
const ACTOR_EVENT_PREFIXES = ["xstate.done.actor.", "xstate.error.actor.", "xstate.snapshot."];

const prefixOf = (type: string): string | undefined => ACTOR_EVENT_PREFIXES.find((prefix) => type.startsWith(prefix));

/** `StateNode.next` is XState's (internal) per-node transition selection, the one place that memoizes by type. */
interface Selecting {
  next(snapshot: unknown, event: EventObject): unknown;
  states: Record<string, Selecting>;
  /** Event descriptor to transitions (XState's, set once when the machine is built). */
  transitions: Map<string, unknown>;
}

/** Whether `node` selects every event under `prefix` that it does not name exactly as it selects `prefix*`: no
 * descriptor of its own is a wildcard deeper under the prefix. */
function wildcardServes(node: Selecting, prefix: string): boolean {
  for (const descriptor of node.transitions.keys()) {
    if (descriptor.startsWith(prefix) && descriptor.endsWith("*") && descriptor !== `${prefix}*`) return false;
  }
  return true;
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
  /** Per prefix: whether its wildcard serves every id this node does not name (decided once, on first use). */
  const serves = new Map<string, boolean>();
  // An own property: lookups from XState (`stateNode.next(...)`) find it before the prototype's.
  node.next = function (this: Selecting, snapshot: unknown, event: EventObject) {
    const prefix = prefixOf(event.type);
    if (prefix === undefined || this.transitions.has(event.type)) return select.call(this, snapshot, event);
    let wildcard = serves.get(prefix);
    if (wildcard === undefined) serves.set(prefix, (wildcard = wildcardServes(this, prefix)));
    return wildcard
      ? select.call(this, snapshot, { ...event, type: `${prefix}*` })
      : select.call(Object.create(this), snapshot, event);
  };
  for (const child of Object.values(node.states ?? {})) patchNode(child);
}

const isMachine = (logic: AnyActorLogic): logic is AnyStateMachine =>
  typeof logic === "object" && logic !== null && "root" in logic && "implementations" in logic;
