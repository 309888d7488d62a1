// The statechart view: the selected actor's machine as an SVG diagram laid out by ELK (in a Web Worker, served by
// the inspector from the elkjs package), with the active states lit and the transition just taken highlighted.
// Each machine's layout and SVG are built once and kept; showing an actor or stepping through a log only moves
// classes on a few elements. Clicking a state lists the transitions that leave it and the tests that cover it.
import { innerLines, LINE, transitionText } from "./chart-layout.js";
import { activeStates, takenTransitions } from "./chart-model.js";
import { stateInfo } from "./chart-info.js";
import { h, svg } from "./dom.js";
export { Charts } from "./chart-model.js";

/** How long a transition stays highlighted in live mode (in a log, an actor's last transition up to the position
 * stays highlighted). */
const TAKEN_MS = 1500;

/** The SVG of a laid-out chart, with lookups from state ids and transition ids to their elements. */
function drawChart(machine, { geo, routes }) {
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
  const defs = svg("defs");
  const marker = svg("marker", {
    id: `${machine.kind}-arrow`,
    viewBox: "0 0 10 10",
    refX: 9,
    refY: 5,
    markerWidth: 7,
    markerHeight: 7,
    orient: "auto-start-reverse",
  });
  // The head takes its line's colour (context-stroke), so a highlighted arrow is highlighted to its tip.
  marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" }));
  defs.append(marker);
  root.append(defs);
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

export class ChartView {
  constructor(el, charts) {
    this.el = el;
    this.charts = charts;
    this.drawn = new Map();
    this.current = undefined;
    /** Elements lit now (→ `lit` or `active`) and transitions highlighted now. */
    this.lit = new Map();
    this.taken = new Set();
    this.takenTimer = undefined;
    this.selectedState = undefined;
    this.zoom = "fit";
    this.canvas = h("div", { class: "chart-canvas" });
    this.info = h("aside", { class: "chart-info" });
    this.title = h("span", { class: "chart-title muted" });
    this.note = h("span", { class: "chart-note" });
    this.zoomButton = h(
      "button",
      { class: "zoom", onclick: () => this.toggleZoom(), title: "Fit the chart / actual size" },
      "1:1",
    );
    el.replaceChildren(
      h("div", { class: "chart-bar" }, this.title, this.note, h("span", { class: "spacer" }), this.zoomButton),
      h("div", { class: "chart-body" }, this.canvas, this.info),
    );
    this.canvas.addEventListener("click", (ev) => {
      const g = ev.target.closest?.("g.state");
      if (g) this.selectState(g.dataset.stateId);
    });
    // States are focusable: Enter or Space selects the focused one, as a click does.
    this.canvas.addEventListener("keydown", (ev) => {
      const g = ev.target.closest?.("g.state");
      if (!g || (ev.key !== "Enter" && ev.key !== " ")) return;
      ev.preventDefault();
      this.selectState(g.dataset.stateId);
    });
    new ResizeObserver(() => this.applyZoom()).observe(this.canvas);
    this.actor = undefined;
    this.token = 0;
  }

  toggleZoom() {
    this.zoom = this.zoom === "fit" ? "actual" : "fit";
    this.zoomButton.textContent = this.zoom === "fit" ? "1:1" : "fit";
    this.applyZoom();
    this.reveal();
  }

  /** `fit`: the chart's width fits the canvas (never enlarged); `actual`: 1:1, scrolled. */
  applyZoom() {
    const d = this.current && this.drawn.get(this.current.kind);
    if (!d) return;
    const [, , w, hh] = d.root.getAttribute("viewBox").split(" ").map(Number);
    const avail = Math.max(this.canvas.clientWidth - 6, 200);
    const scale = this.zoom === "fit" ? Math.min(1, avail / w) : 1;
    d.root.setAttribute("width", String(Math.round(w * scale)));
    d.root.setAttribute("height", String(Math.round(hh * scale)));
  }

  /** Scrolls the canvas so the first lit state is in view. */
  reveal() {
    const lit = [...this.lit].find(([, cls]) => cls === "lit")?.[0];
    if (!lit) return;
    const c = this.canvas.getBoundingClientRect();
    const r = lit.getBoundingClientRect();
    if (r.top < c.top || r.bottom > c.bottom) this.canvas.scrollTop += r.top - c.top - (c.height - r.height) / 2;
    if (r.left < c.left || r.right > c.right) this.canvas.scrollLeft += r.left - c.left - (c.width - r.width) / 2;
  }

  /** Shows `actor` (a model entry); `live` makes the taken transition fade. Synchronous once the machine's chart
   * is drawn (stepping through a log lights states in the same task); the first time, it loads and lays out. */
  show(actor, { live = false } = {}) {
    const token = ++this.token;
    this.actor = actor;
    const machines = this.charts.machines;
    if (!machines) {
      return this.charts.load().then(() => {
        if (token === this.token) return this.show(actor, { live });
      });
    }
    const machine = actor ? this.charts.machineOf(actor.id) : undefined;
    if (!actor || !machine) {
      this.unlight();
      this.current = undefined;
      this.title.textContent = actor ? actor.id : "";
      this.canvas.replaceChildren(
        h(
          "p",
          { class: "hint" },
          !actor
            ? "Select an actor to see its statechart."
            : machines.length
              ? `${actor.id} is not a state machine (it stands for the outside world: a process, an installer or a tool dispatch).`
              : "The inspector serves no machine definitions.",
        ),
      );
      this.info.replaceChildren();
      this.infoKey = undefined;
      this.el.dataset.machine = "";
      return;
    }
    if (this.current?.kind !== machine.kind) {
      const drawn = this.drawn.get(machine.kind);
      // The SVG being left is kept for later, without lit states.
      if (drawn) this.unlight();
      if (!drawn) {
        this.canvas.replaceChildren(h("p", { class: "hint" }, `laying out the ${machine.kind} machine…`));
        return this.charts.layout(machine).then(
          (layout) => {
            if (!this.drawn.has(machine.kind)) this.drawn.set(machine.kind, drawChart(machine, layout));
            if (token === this.token) return this.show(actor, { live });
          },
          (e) => {
            if (token === this.token) {
              this.canvas.replaceChildren(
                h("p", { class: "hint" }, `cannot lay out ${machine.kind}: ${e?.message ?? e}`),
              );
            }
          },
        );
      }
      this.current = machine;
      this.litKey = undefined;
      this.selectedState = undefined;
      this.canvas.replaceChildren(drawn.root);
      this.el.dataset.machine = machine.kind;
      this.applyZoom();
    }
    const title = `${actor.id} · ${machine.kind} machine (${machine.chart.id})`;
    if (this.title.textContent !== title) this.title.textContent = title;
    if (this.light(actor, live)) this.reveal();
  }

  unlight() {
    for (const [el, cls] of this.lit) el.classList.remove(cls);
    for (const el of this.taken) el.classList.remove("taken");
    this.lit = new Map();
    this.taken = new Set();
  }

  /** Lights the active states and the transition the actor took last; true when other states are lit now. Only
   * what changed is written to the DOM: live, this runs on every update of the selected actor. */
  light(actor, live) {
    const machine = this.current;
    const drawn = this.drawn.get(machine.kind);
    const { active, leaves, unknown } = activeStates(machine.index, actor.value);
    const lit = new Map();
    for (const id of active) {
      const el = drawn.nodes.get(id);
      if (el) lit.set(el, leaves.includes(id) ? "lit" : "active");
    }
    const step = actor.step;
    const fresh = step && (!live || Date.now() - step.seen < TAKEN_MS);
    const taken = new Set();
    if (fresh) {
      for (const id of takenTransitions(machine.index, step)) for (const el of drawn.edges.get(id) ?? []) taken.add(el);
    }
    for (const [el, cls] of this.lit) if (lit.get(el) !== cls) el.classList.remove(cls);
    for (const [el, cls] of lit) if (this.lit.get(el) !== cls) el.classList.add(cls);
    for (const el of this.taken) if (!taken.has(el)) el.classList.remove("taken");
    for (const el of taken) if (!this.taken.has(el)) el.classList.add("taken");
    this.lit = lit;
    this.taken = taken;
    const note = unknown.length
      ? `not in this machine's definition: ${unknown.join(", ")} (a log from another version?)`
      : actor.status !== "active"
        ? actor.status
        : "";
    if (this.note.textContent !== note) this.note.textContent = note;
    if (this.el.dataset.status !== actor.status) this.el.dataset.status = actor.status;
    clearTimeout(this.takenTimer);
    if (live && taken.size) {
      this.takenTimer = setTimeout(
        () => {
          for (const el of this.taken) el.classList.remove("taken");
          this.taken = new Set();
        },
        TAKEN_MS - (Date.now() - step.seen),
      );
    }
    const key = `${actor.id} ${leaves.join(" ")}`;
    const changed = key !== this.litKey;
    this.litKey = key;
    if (!this.selectedState || !machine.index.nodes.has(this.selectedState)) {
      void this.renderInfo(leaves[0] ?? machine.chart.root, false);
    } else void this.renderInfo(this.selectedState, true);
    return changed;
  }

  selectState(id) {
    this.selectedState = id;
    void this.renderInfo(id, true);
  }

  /** The side panel for state `id` (the first active state unless one was clicked); unchanged states keep it. */
  async renderInfo(id, chosen) {
    const machine = this.current;
    if (!machine) return;
    const key = `${machine.kind}|${id}|${chosen}`;
    if (this.infoKey === key) return;
    this.infoKey = key;
    const drawn = this.drawn.get(machine.kind);
    for (const el of drawn.root.querySelectorAll("g.state.chosen")) el.classList.remove("chosen");
    if (chosen) drawn.nodes.get(id)?.classList.add("chosen");
    const tests = await this.charts.testIndex();
    if (machine !== this.current) return;
    this.info.replaceChildren(...stateInfo(machine, id, tests));
  }
}
