// Analysing a machine with xstate/graph (test/machines/*.test.ts, "the graph").
//
// `getShortestPaths`/`getSimplePaths` call `machine.transition` with a mock actor scope whose `self` has no parent, so
// a machine's `sendParent` throws "Unable to send event to actor '#_parent'"; giving it merely a system without a
// supervisor is not enough. So the analysed logic is the real provided machine with `getInitialSnapshot`/`transition`
// bound to a scope of our own: `self` is an unstarted actor whose parent is an unstarted stub (sendParent resolves,
// nothing is delivered: the scope's `actionExecutor` and `defer` are no-ops, so no child is ever started). The
// machine definition itself is untouched.
import { __unsafe_getAllOwnEventDescriptors, createActor, fromCallback } from "xstate";
import type { AnyActorScope, AnyEventObject, AnyMachineSnapshot, AnyStateMachine, EventObject } from "xstate";
import type { AdjacencyValue, StatePath } from "xstate/graph";

export type Path = StatePath<AnyMachineSnapshot, EventObject>;
export type Table = Record<string, readonly AnyEventObject[]>;
export type Adjacency = Record<string, AdjacencyValue<AnyMachineSnapshot, EventObject>>;

/** The machine, analysable by xstate/graph: transitions resolve against a scope with a parent and no supervisor.
 * Each step gets a system of its own: a child spawned under a fixed system id on two paths (the same request
 * taken in two states) would otherwise collide in one shared registry. */
export function analysable(machine: AnyStateMachine): AnyStateMachine {
  const scope = () => {
    const parent = createActor(fromCallback(() => {})); // never started
    const self = createActor(
      fromCallback(() => {}),
      { parent },
    ); // never started
    return {
      self,
      id: "graph",
      sessionId: "graph",
      logger: () => {},
      defer: () => {},
      emit: () => {},
      system: self.system,
      stopChild: () => {},
      actionExecutor: () => {},
    } as unknown as AnyActorScope;
  };
  return Object.assign(Object.create(machine) as AnyStateMachine, {
    getInitialSnapshot: (_scope: AnyActorScope, input: unknown) => machine.getInitialSnapshot(scope(), input),
    transition: (snapshot: AnyMachineSnapshot, event: EventObject) => machine.transition(snapshot, event, scope()),
  });
}

/** The events to try in a state: its own event descriptors (root included), with explicit payloads from `table`.
 * Wildcard descriptors (`xstate.done.actor.*`) are never sent literally: only the concrete events listed under the
 * pattern are. Delays become their `xstate.after.*` event. Any other descriptor without a payload is an error, so a
 * new event in a machine shows up here. */
export function alphabet(table: Table) {
  return (snapshot: AnyMachineSnapshot): EventObject[] => {
    const out: EventObject[] = [];
    for (const type of __unsafe_getAllOwnEventDescriptors(snapshot) as string[]) {
      const payloads = table[type];
      if (payloads) out.push(...payloads);
      else if (type.startsWith("xstate.after.")) out.push({ type });
      else if (!type.endsWith("*"))
        throw new Error(`no payload for event ${type} in ${JSON.stringify(snapshot.value)}`);
    }
    return out;
  };
}

/** Only events the state really handles (a target or actions after guards): the rest are not edges. */
export const handled = (snapshot: AnyMachineSnapshot, event: EventObject) =>
  snapshot.status === "active" && snapshot.can(event);

/** The notes' serialization: the state value only. */
export const byValue = (s: AnyMachineSnapshot) => JSON.stringify(s.value);

export function describePath(path: Path): string {
  return path.steps.map((s) => s.event.type.replace(/^xstate\.after\.(\w+)\..*$/, "after($1)")).join(" > ");
}
