// What the inspector tests expect, read from XState itself: every state node of a machine, every transition in
// `StateNode.transitions`/`always`, the active nodes of a value (`getStateNodes`), the machines a root can spawn.
import { createActor, getStateNodes } from "xstate";
import type { AnyStateMachine, AnyStateNode } from "xstate";

export function stateNodes(machine: AnyStateMachine): AnyStateNode[] {
  const out: AnyStateNode[] = [];
  const visit = (n: AnyStateNode) => {
    out.push(n);
    for (const c of Object.values(n.states) as AnyStateNode[]) visit(c);
  };
  visit(machine.root);
  return out;
}

/** `<source>|<event>|<index>` for every transition of the machine (`always` ones with the empty event). */
export function transitionIds(machine: AnyStateMachine): string[] {
  const ids: string[] = [];
  for (const n of stateNodes(machine)) {
    for (const [event, list] of n.transitions) list.forEach((_, i) => ids.push(`${n.id}|${event}|${i}`));
    (n.always ?? []).forEach((_, i) => ids.push(`${n.id}||${i}`));
  }
  return ids.sort();
}

/** The active leaves of a state value, by XState's own resolution. */
export function activeLeaves(machine: AnyStateMachine, value: unknown): string[] {
  const nodes = getStateNodes(machine.root, value as never) as AnyStateNode[];
  const ids = new Set(nodes.map((n) => n.id));
  const leaves = nodes.filter((n) => !Object.values(n.states).some((c) => ids.has((c as AnyStateNode).id)));
  return [...new Set(leaves.map((n) => n.id))];
}

export function activeAncestors(machine: AnyStateMachine, value: unknown): string[] {
  const leaves = new Set(activeLeaves(machine, value));
  // XState lists a compound state once per active descendant: each id once.
  return [...new Set((getStateNodes(machine.root, value as never) as AnyStateNode[]).map((n) => n.id))].filter(
    (id) => !leaves.has(id),
  );
}

/** Machines the supervisor can run, found through the actors each machine provides, recursively. */
export function reachableMachines(root: AnyStateMachine): Map<string, AnyStateMachine> {
  const found = new Map<string, AnyStateMachine>();
  const visit = (m: AnyStateMachine) => {
    if (found.has(m.id)) return;
    found.set(m.id, m);
    for (const logic of Object.values(m.implementations.actors ?? {})) {
      if (logic && typeof logic === "object" && "root" in logic) visit(logic as AnyStateMachine);
    }
  };
  visit(root);
  return found;
}

export const sorted = (xs: Iterable<string>) => [...xs].sort();

/** The guide's rule for every machine: each state node says what it means (`description`: a sentence, from its
 * capital to its full stop, so half of one is caught too), and so does each transition that has a description (the
 * inspector shows it beside the arrow): those are listed as `<source>|<event>|<index>`. The tests also check each
 * machine's own id: the inspector and the recorded logs name machines by it. */
export function undescribedStates(machine: AnyStateMachine): string[] {
  const sentence = (d: unknown) => typeof d === "string" && /^[A-Z][^]*\.$/.test(d);
  const nodes = stateNodes(machine);
  const states = nodes.filter((n) => n !== machine.root && !sentence(n.description)).map((n) => n.id);
  const transitions: string[] = [];
  for (const n of nodes) {
    const lists: [string, { description?: unknown }[]][] = [...n.transitions, ["", n.always ?? []]];
    for (const [event, list] of lists)
      list.forEach((t, i) => {
        if ("description" in t && t.description !== undefined && !sentence(t.description))
          transitions.push(`${n.id}|${event}|${i}`);
      });
  }
  return [...states, ...transitions];
}

/** Starts `machine` with none of its effects provided and returns the error it fails with: each placeholder actor
 * names its machine and itself (machines/placeholder.ts), so a missing effect is never a silent hang. */
export function missingEffectError(machine: AnyStateMachine, input: unknown): string {
  let message = "";
  const actor = createActor(machine, { input });
  actor.subscribe({ error: (e) => (message = e instanceof Error ? e.message : String(e)) });
  actor.start();
  actor.stop();
  return message;
}
