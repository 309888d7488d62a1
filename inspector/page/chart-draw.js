// Drawing one laid-out statechart as SVG (inspector/page/chart-view.js shows it): states, their nesting, initial
// and final marks, and the transitions with their labels, each element findable by state or transition id.
import { innerLines, LINE, transitionText } from "./chart-layout.js";
import { arrowDefs, svg } from "./dom.js";

/** The SVG of a laid-out chart, with lookups from state ids and transition ids to their elements. */
export function drawChart(machine, { geo, routes }) {
  const { chart } = machine;
  const nodes = new Map();
  const edges = new Map();
  const margin = 6;
  const root = svg("svg", {
    class: "chart",
    "data-machine": machine.kind,
    viewBox: `${-margin} ${-margin} ${geo.width + 2 * margin} ${geo.height + 2 * margin}`,
    width: geo.width + 2 * margin,
    height: geo.height + 2 * margin,
  });
  root.append(arrowDefs(`${machine.kind}-arrow`));
  const states = svg("g", { class: "states" });
  const addEdge = (id, el) => {
    const list = edges.get(id) ?? [];
    list.push(el);
    edges.set(id, list);
  };
  for (const node of chart.nodes) {
    const box = geo.nodes[node.id];
    if (!box) continue;
    const g = svg("g", {
      class: "state",
      "data-state-id": node.id,
      "data-type": node.type,
      ...(node.parent && chart.nodes.find((n) => n.id === node.parent)?.initial === node.id
        ? { "data-initial": "" }
        : {}),
      tabindex: 0,
    });
    g.append(svg("title", {}, node.description ? `${node.id}\n${node.description}` : node.id));
    g.append(svg("rect", { class: "box", x: box.x, y: box.y, width: box.width, height: box.height, rx: 7 }));
    if (node.type === "final") {
      g.append(
        svg("rect", {
          class: "inner",
          x: box.x + 3,
          y: box.y + 3,
          width: box.width - 6,
          height: box.height - 6,
          rx: 5,
        }),
      );
    }
    g.append(
      svg("text", { class: "name", x: box.x + 10, y: box.y + 17 }, node.id === chart.root ? chart.id : node.key),
    );
    if (node.description) {
      // A small "i" in a circle: the state has a description (its tooltip, and the side panel).
      const cx = box.x + box.width - 10;
      const cy = box.y + 12;
      g.append(svg("circle", { class: "has-description", cx, cy, r: 5 }));
      g.append(svg("text", { class: "has-description-i", x: cx, y: cy + 3, "text-anchor": "middle" }, "i"));
    }
    innerLines(chart, node).forEach((line, i) => {
      const t = svg(
        "text",
        {
          class: `line ${line.kind}`,
          x: box.x + 10,
          y: box.y + 17 + LINE * (i + 1),
          ...(line.edge ? { "data-transition": line.edge } : {}),
        },
        line.text,
      );
      if (line.edge) addEdge(line.edge, t);
      g.append(t);
    });
    nodes.set(node.id, g);
    states.append(g);
    const dot = geo.nodes[`${node.id}#initial`];
    if (dot) {
      states.append(
        svg("circle", { class: "initial", cx: dot.x + dot.width / 2, cy: dot.y + dot.height / 2, r: dot.width / 2 }),
      );
    }
  }
  root.append(states);
  const arrows = svg("g", { class: "transitions" });
  const byEdge = new Map(chart.edges.map((e) => [e.id, e]));
  for (const [elkId, route] of Object.entries(geo.edges)) {
    const d = `M${route.points.map((p) => p.join(",")).join(" L")}`;
    if (elkId.endsWith("#initial>")) {
      arrows.append(svg("path", { class: "initial-arrow", d, "marker-end": `url(#${machine.kind}-arrow)` }));
      continue;
    }
    const r = routes.find((x) => x.id === elkId);
    if (!r) continue;
    // One arrow per (source, target); each transition along it is a line of the label.
    const g = svg("g", { class: "route", "data-source": r.source, "data-target": r.target });
    const path = svg("path", { class: "route-line", d, "marker-end": `url(#${machine.kind}-arrow)` });
    g.append(path);
    const l = route.label;
    if (l) g.append(svg("rect", { class: "label-bg", x: l.x, y: l.y, width: l.width, height: l.height, rx: 3 }));
    r.transitions.forEach((id, i) => {
      const edge = byEdge.get(id);
      const t = svg("g", { class: "transition", "data-transition": id, "data-kind": edge?.kind ?? "event" });
      t.append(svg("title", {}, edge ? describeEdge(edge) : id));
      if (l) t.append(svg("text", { class: "label", x: l.x + 4, y: l.y + LINE * (i + 1) - 4 }, r.lines[i]));
      addEdge(id, t);
      addEdge(id, g);
      g.append(t);
    });
    if (r.transitions.every((id) => byEdge.get(id)?.kind === "always")) g.dataset.kind = "always";
    arrows.append(g);
  }
  root.append(arrows);
  return { root, nodes, edges };
}

function describeEdge(e) {
  const target = e.targets.length ? ` → ${e.targets.join(", ")}` : " (stays)";
  const actions = e.actions.length ? ` / ${e.actions.join(", ")}` : "";
  return `${transitionText(e)}${target}${actions}`;
}
