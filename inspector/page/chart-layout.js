// A machine chart (inspector/graph.ts) as an ELK graph, and ELK's answer as drawable boxes and routes. Plain ES
// module without DOM: the page measures text and runs ELK (in a Web Worker); Node tests use it as is.
//
// Shapes: every state is a box; compound and parallel states contain their children; a compound state's initial
// child is pointed at from a small dot inside it; transitions without a target (actions only) are lines inside
// their state's box, under its name, as in Stately's editor; transitions with targets are labelled arrows.

export const FONT = "12px ui-sans-serif, system-ui, sans-serif";
export const LINE = 16;
const PAD_X = 10;
const HEAD = 24;
const MIN_W = 90;
const DOT = 10;

/** The text of a transition on its arrow or line: `event [guard]`. */
export function transitionText(edge) {
  return edge.guard ? `${edge.label} [${edge.guard}]` : edge.label;
}

/** What a state lists inside its box under its name: invoked actors, then its targetless transitions. */
export function innerLines(chart, node) {
  const lines = node.invoke.map((src) => ({ kind: "invoke", text: `invoke ${src}` }));
  for (const e of chart.edges) {
    if (e.source === node.id && e.targets.length === 0) {
      const actions = e.actions.length ? ` / ${e.actions.join(", ")}` : "";
      lines.push({ kind: "transition", edge: e.id, text: `${transitionText(e)}${actions}` });
    }
  }
  return lines;
}

const initialId = (id) => `${id}#initial`;

export const LAYOUT_OPTIONS = {
  "elk.algorithm": "layered",
  "elk.hierarchyHandling": "INCLUDE_CHILDREN",
  "elk.spacing.nodeNode": "16",
  "elk.spacing.edgeEdge": "6",
  "elk.spacing.edgeNode": "8",
  "elk.spacing.edgeLabel": "3",
  "elk.layered.spacing.edgeNodeBetweenLayers": "8",
  "elk.layered.spacing.edgeEdgeBetweenLayers": "6",
  "elk.layered.spacing.nodeNodeBetweenLayers": "24",
  "elk.edgeLabels.placement": "CENTER",
  "elk.layered.edgeLabels.sideSelection": "SMART_DOWN",
};

/** Of the layouts in both directions, the one that fits a wide screen larger. */
export function betterFit(a, b, width = 1200, height = 680) {
  const fit = (g) => Math.min(width / g.width, height / g.height);
  return fit(b) > fit(a) * 1.05 ? b : a;
}

/** The ELK graph of a chart (`graph`, for ELK) and its arrows (`routes`: `{id, source, target, transitions,
 * lines}`); `measure(text)` gives a text's width in pixels in FONT. */
export function elkGraph(chart, measure, direction = "DOWN") {
  const byId = new Map(chart.nodes.map((n) => [n.id, n]));
  /** The lowest common ancestor container of two states: where an edge between them is declared. */
  const container = (a, b) => {
    const up = new Set();
    for (let n = byId.get(a); n; n = byId.get(n.parent)) up.add(n.id);
    for (let n = byId.get(b); n; n = byId.get(n.parent)) if (up.has(n.id) && n.id !== b) return n.id;
    // b is an ancestor of a (or the same state): the edge lives in b's parent, or the root.
    return byId.get(b)?.parent ?? chart.root;
  };
  const elkNodes = new Map();
  const build = (node) => {
    const lines = innerLines(chart, node);
    // The name is bold (about 8% wider than measured) and a description adds an icon after it.
    const textW = Math.max(
      measure(node.key) * 1.08 + 8 + (node.description ? 16 : 0),
      ...lines.map((l) => measure(l.text)),
    );
    const head = HEAD + lines.length * LINE;
    const hasChildren = node.children.length > 0;
    const elk = {
      id: node.id,
      width: Math.max(MIN_W, Math.ceil(textW) + 2 * PAD_X),
      height: hasChildren ? head : head + 10,
      children: [],
      edges: [],
    };
    if (hasChildren) {
      elk.layoutOptions = { "elk.padding": `[top=${head + 8},left=14,bottom=14,right=14]` };
      if (node.initial) {
        elk.children.push({ id: initialId(node.id), width: DOT, height: DOT });
        elk.edges.push({ id: `${initialId(node.id)}>`, sources: [initialId(node.id)], targets: [node.initial] });
      }
      for (const c of node.children) elk.children.push(build(byId.get(c)));
    }
    elkNodes.set(node.id, elk);
    return elk;
  };
  const root = build(byId.get(chart.root));
  // One arrow per (source, target) pair, labelled with each of its transitions on a line of its own: a state left
  // by five events for the same target gets one arrow, not five.
  const routes = new Map();
  for (const e of chart.edges) {
    for (const target of e.targets) {
      const id = `${e.source}>${target}`;
      let r = routes.get(id);
      if (!r) routes.set(id, (r = { id, source: e.source, target, transitions: [], lines: [] }));
      if (!r.transitions.includes(e.id)) {
        r.transitions.push(e.id);
        r.lines.push(transitionText(e));
      }
    }
  }
  for (const r of routes.values()) {
    const edge = {
      id: r.id,
      sources: [r.source],
      targets: [r.target],
      labels: [
        {
          id: `${r.id}@label`,
          text: r.lines.join("\n"),
          width: Math.ceil(Math.max(...r.lines.map(measure))) + 8,
          height: LINE * r.lines.length,
        },
      ],
    };
    // A self-loop is declared beside its state, not inside it.
    const owner = r.source === r.target ? (byId.get(r.source)?.parent ?? chart.root) : container(r.source, r.target);
    (elkNodes.get(owner) ?? root).edges.push(edge);
  }
  // ELK reads most options per node: every container gets them.
  const options = { ...LAYOUT_OPTIONS, "elk.direction": direction };
  for (const n of elkNodes.values()) if (n.children.length) n.layoutOptions = { ...options, ...n.layoutOptions };
  const graph = {
    id: "graph",
    layoutOptions: { ...options, "elk.json.shapeCoords": "ROOT", "elk.json.edgeCoords": "ROOT" },
    children: [root],
    edges: [],
  };
  return { graph, routes: [...routes.values()] };
}

/** ELK's laid-out graph as plain geometry: `{width, height, nodes: {id: {x, y, width, height}}, edges: {id:
 * {points, label}}}` in absolute coordinates. */
export function geometry(laid) {
  const nodes = {};
  const edges = {};
  const visit = (n) => {
    for (const c of n.children ?? []) {
      nodes[c.id] = { x: c.x, y: c.y, width: c.width, height: c.height };
      visit(c);
    }
    for (const e of n.edges ?? []) {
      const s = e.sections?.[0];
      if (!s) continue;
      const points = [s.startPoint, ...(s.bendPoints ?? []), s.endPoint].map((p) => [p.x, p.y]);
      const l = e.labels?.[0];
      edges[e.id] = {
        points,
        ...(l && l.x !== undefined
          ? { label: { x: l.x, y: l.y, width: l.width, height: l.height, text: l.text } }
          : {}),
      };
    }
  };
  visit(laid);
  return { width: laid.width, height: laid.height, nodes, edges };
}
