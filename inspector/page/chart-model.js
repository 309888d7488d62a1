// The machines the statechart view draws: their charts (from the server's `api/machines`), their layouts (ELK in a
// Web Worker, once per machine), which states a value makes active and which transitions a step took. No drawing.
import { betterFit, elkGraph, FONT, geometry } from "./chart-layout.js";

/** One machine's chart with lookups for the page. */
function indexChart(chart) {
  const nodes = new Map(chart.nodes.map((n) => [n.id, n]));
  const childByKey = new Map(chart.nodes.map((n) => [n.id, new Map(n.children.map((c) => [nodes.get(c).key, c]))]));
  const from = new Map(chart.nodes.map((n) => [n.id, []]));
  for (const e of chart.edges) from.get(e.source)?.push(e);
  return { chart, nodes, childByKey, from };
}

/** The ids of the states a value makes active (ancestors included), and those that are not in the chart. */
export function activeStates(index, value) {
  const active = new Set();
  const unknown = [];
  const walk = (id, v) => {
    active.add(id);
    const node = index.nodes.get(id);
    const children = index.childByKey.get(id);
    if (node.type === "parallel") {
      for (const c of node.children) walk(c, v && typeof v === "object" ? v[index.nodes.get(c).key] : undefined);
      return;
    }
    if (typeof v === "string") {
      const c = children.get(v);
      if (c) walk(c, undefined);
      else unknown.push(`${id}.${v}`);
    } else if (v && typeof v === "object") {
      for (const [k, sub] of Object.entries(v)) {
        const c = children.get(k);
        if (c) walk(c, sub);
        else unknown.push(`${id}.${k}`);
      }
    }
  };
  if (value !== undefined) walk(index.chart.root, value);
  const leaves = [...active].filter((id) => !index.nodes.get(id).children.some((c) => active.has(c)));
  return { active, leaves, unknown };
}

const matches = (edgeEvent, cause) =>
  edgeEvent === cause || (edgeEvent.endsWith("*") && cause.startsWith(edgeEvent.slice(0, -1)));

/** The transitions a step took: those for its event from a state active before, whose targets are active after
 * (directly or through `always` transitions, which are then taken too). A step that kept the value took the
 * matching targetless transitions of its active states. */
export function takenTransitions(index, step) {
  if (!step?.event) return [];
  const before = activeStates(index, step.from).active;
  const after = activeStates(index, step.to).active;
  const taken = new Set();
  const reaches = (state, depth) => {
    if (after.has(state)) return true;
    if (depth > 6) return false;
    let ok = false;
    for (const a of index.from.get(state) ?? []) {
      if (a.kind === "always" && a.targets.some((t) => reaches(t, depth + 1))) {
        taken.add(a.id);
        ok = true;
        break;
      }
    }
    return ok;
  };
  const same = JSON.stringify(step.from) === JSON.stringify(step.to);
  for (const id of before) {
    for (const e of index.from.get(id) ?? []) {
      if (!matches(e.event, step.event)) continue;
      if (e.targets.length === 0 ? same : e.targets.some((t) => reaches(t, 0))) taken.add(e.id);
    }
  }
  return [...taken];
}

export class Charts {
  constructor(base) {
    this.base = base;
    this.machines = undefined;
    this.layouts = new Map();
    this.tests = undefined;
    this.elk = undefined;
    this.canvas = undefined;
  }

  async load() {
    if (this.machines) return this.machines;
    this.loading ??= fetch(`${this.base}api/machines`)
      .then((r) => (r.ok ? r.json() : { machines: [] }))
      .then((body) => {
        this.machines = body.machines.map((m) => ({ ...m, match: new RegExp(m.actors), index: indexChart(m.chart) }));
        return this.machines;
      });
    return this.loading;
  }

  /** Titles of the tests that entered each state: `{machineId: {stateId: [title]}}`, or null without an index. */
  async testIndex() {
    this.tests ??= fetch(`${this.base}api/state-tests`)
      .then((r) => (r.ok ? r.json() : null))
      .catch(() => null);
    return this.tests;
  }

  machineOf(actorId) {
    return this.machines?.find((m) => m.match.test(actorId));
  }

  measure(text) {
    this.canvas ??= document.createElement("canvas").getContext("2d");
    this.canvas.font = FONT;
    return this.canvas.measureText(text).width;
  }

  /** The machine's layout (`{geo, routes}`), computed once (ELK in a Web Worker) and kept. Top-down first; a
   * chart much wider than tall is laid out left-right too, and the one that fits a wide screen better wins. */
  layout(machine) {
    let p = this.layouts.get(machine.kind);
    if (!p) {
      // elk-api.js (a classic script) defines ELK; the worker is elkjs's own, served next to the page.
      this.elk ??= new window.ELK({ workerUrl: `${this.base}elk-worker.min.js` });
      const measure = (t) => this.measure(t);
      const run = (direction) => {
        const { graph, routes } = elkGraph(machine.chart, measure, direction);
        return this.elk.layout(graph).then((laid) => ({ geo: geometry(laid), routes, direction }));
      };
      p = run("DOWN").then((down) =>
        down.geo.width > 2 * down.geo.height
          ? run("RIGHT").then((right) => (betterFit(down.geo, right.geo) === down.geo ? down : right))
          : down,
      );
      this.layouts.set(machine.kind, p);
    }
    return p;
  }
}
