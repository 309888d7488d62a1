// A machine definition as a plain graph for the page's statechart view: every state node (nesting, kind, initial
// child, description, invoked actors) and every transition (event, guard, `after` delay, targets, actions), read
// from `machine.root`. Names only: guards, actions and delays are shown by the names the machine gives them, inline
// functions as `inline`. Pure and computed once per machine (cached by the caller); the layout is the page's job.
import type { AnyStateMachine, AnyStateNode } from "xstate";

export type ChartNodeType = "atomic" | "compound" | "parallel" | "final" | "history";

export interface ChartNode {
  /** The state node's id (`run.grace`), unique in its machine; the root's is the machine id. */
  id: string;
  key: string;
  type: ChartNodeType;
  parent?: string;
  /** Child ids in definition order. */
  children: string[];
  /** The id of the initial child (compound states). */
  initial?: string;
  description?: string;
  /** Invoked actors by source name (`install`). */
  invoke: string[];
  entry: string[];
  exit: string[];
  tags: string[];
}

export type ChartEdgeKind = "event" | "after" | "always" | "done" | "error" | "wildcard";

export interface ChartEdge {
  /** `<source id>|<event type>|<index among the source's transitions for that event>`; `always` transitions have
   * the empty event type. Stable for a given definition. */
  id: string;
  source: string;
  /** Empty for a targetless transition (actions only): drawn inside its state. */
  targets: string[];
  /** The event type as machines receive it (`xstate.after.grace.run.grace` for delays, "" for `always`). */
  event: string;
  kind: ChartEdgeKind;
  /** What the arrow says: `run.cancel`, `after grace`, `always`, `done: run:*`. */
  label: string;
  guard?: string;
  /** The delay's name (or milliseconds) of an `after` transition. */
  delay?: string;
  actions: string[];
  reenter: boolean;
}

export interface MachineChart {
  id: string;
  root: string;
  nodes: ChartNode[];
  edges: ChartEdge[];
}

const INLINE = "inline";

/** The name XState users read for a guard, action or delay reference. */
function nameOf(ref: unknown): string {
  if (typeof ref === "string") return ref;
  if (typeof ref === "number") return `${ref} ms`;
  if (typeof ref === "function") {
    const f = ref as { name?: string; type?: string; guards?: unknown[]; stateValue?: unknown };
    // Higher-order guards (`not`, `and`, `or`) keep their operands; `stateIn` its state.
    if (Array.isArray(f.guards)) {
      const inner = f.guards.map(nameOf);
      if (f.name === "not") return `!${inner[0]}`;
      return inner.join(f.name === "and" ? " && " : " || ");
    }
    if (f.stateValue !== undefined) return `in(${JSON.stringify(f.stateValue)})`;
    // Built-in actions (`assign`, `sendTo`, `enqueueActions`...) carry their type, `xstate.assign`.
    if (typeof f.type === "string" && f.type.startsWith("xstate.")) return f.type.slice(7);
    return f.name && f.name !== "guard" && f.name !== "actions" ? f.name : INLINE;
  }
  if (ref && typeof ref === "object" && "type" in ref) {
    const { type, params } = ref as { type: unknown; params?: unknown };
    const name = nameOf(type);
    return typeof params === "string" || typeof params === "number" ? `${name}(${params})` : name;
  }
  return INLINE;
}

function labelOf(event: string, delay: string | undefined): { kind: ChartEdgeKind; label: string } {
  if (event === "") return { kind: "always", label: "always" };
  if (event.startsWith("xstate.after.")) return { kind: "after", label: `after ${delay ?? event.slice(13)}` };
  if (event.startsWith("xstate.done.state.")) return { kind: "done", label: "done" };
  if (event.startsWith("xstate.done.actor.")) return { kind: "done", label: `done: ${event.slice(18)}` };
  if (event.startsWith("xstate.error.actor.")) return { kind: "error", label: `error: ${event.slice(19)}` };
  if (event.includes("*")) return { kind: "wildcard", label: event };
  return { kind: "event", label: event };
}

/** Not the timers XState adds for `after` transitions (a delayed `raise` on entry, its `cancel` on exit): the
 * transitions already show them. */
function own(action: unknown): boolean {
  const a = action as { type?: string; event?: { type?: string }; sendId?: unknown };
  if (a?.type === "xstate.raise") return !String(a.event?.type ?? "").startsWith("xstate.after.");
  if (a?.type === "xstate.cancel") return !String(a.sendId ?? "").startsWith("xstate.after.");
  return true;
}

interface TransitionDef {
  eventType: string;
  target?: readonly AnyStateNode[];
  guard?: unknown;
  actions: readonly unknown[];
  reenter: boolean;
  delay?: string | number;
}

/** The chart of one machine. Every state node and every transition of the definition is in it, once. */
export function machineChart(machine: AnyStateMachine): MachineChart {
  const nodes: ChartNode[] = [];
  const edges: ChartEdge[] = [];
  const visit = (node: AnyStateNode) => {
    const children = Object.values(node.states) as AnyStateNode[];
    const initial = node.type === "compound" ? (node.initial?.target?.[0] as AnyStateNode | undefined) : undefined;
    nodes.push({
      id: node.id,
      key: node.key,
      type: node.type as ChartNodeType,
      ...(node.parent ? { parent: node.parent.id } : {}),
      children: children.map((c) => c.id),
      ...(initial ? { initial: initial.id } : {}),
      ...(node.description ? { description: node.description } : {}),
      invoke: node.invoke.map((i: { src: unknown; id?: string }) =>
        typeof i.src === "string" ? i.src : (i.id ?? INLINE),
      ),
      entry: node.entry.filter(own).map(nameOf),
      exit: node.exit.filter(own).map(nameOf),
      tags: [...node.tags],
    });
    const add = (event: string, list: readonly TransitionDef[]) =>
      list.forEach((t, index) => {
        const delay = t.delay === undefined ? undefined : nameOf(t.delay);
        const { kind, label } = labelOf(event, delay);
        const guard = t.guard === undefined ? undefined : nameOf(t.guard);
        edges.push({
          id: `${node.id}|${event}|${index}`,
          source: node.id,
          targets: (t.target ?? []).map((n) => n.id),
          event,
          kind,
          label,
          ...(guard ? { guard } : {}),
          ...(delay ? { delay } : {}),
          actions: t.actions.map(nameOf),
          reenter: t.reenter,
        });
      });
    for (const [event, list] of node.transitions as Map<string, TransitionDef[]>) add(event, list);
    if (node.always) add("", node.always as TransitionDef[]);
    for (const child of children) visit(child);
  };
  visit(machine.root);
  return { id: machine.id, root: machine.root.id, nodes, edges };
}
