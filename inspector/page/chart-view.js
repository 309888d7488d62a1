// The statechart view: the selected actor's machine as an SVG diagram laid out by ELK (in a Web Worker, served by
// the inspector from the elkjs package), with the active states lit and the transition just taken highlighted.
// Each machine's layout and SVG are built once and kept; showing an actor or stepping through a log only moves
// classes on a few elements. Clicking a state lists the transitions that leave it and the tests that cover it.
import { activeStates, takenTransitions } from "./chart-model.js";
import { stateInfo } from "./chart-info.js";
import { drawChart } from "./chart-draw.js";
import { h } from "./dom.js";
export { Charts } from "./chart-model.js";

/** The smallest text a chart draws (transition labels and the lines inside states) is 11 px at 1:1; the default
 * zoom never shrinks it below MIN_TEXT_PX. A chart wider than that allows is scrolled to its lit state instead. */
const SMALLEST_FONT_PX = 11;
export const MIN_TEXT_PX = 10;
const MIN_SCALE = MIN_TEXT_PX / SMALLEST_FONT_PX;

/** How long a transition stays highlighted in live mode (in a log, an actor's last transition up to the position
 * stays highlighted). */
const TAKEN_MS = 1500;

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
    /** `readable`: fit the width, but text stays at least MIN_TEXT_PX (scrolled to the lit state); `whole`: the
     * whole width, however small the text. */
    this.zoom = "readable";
    this.canvas = h("div", { class: "chart-canvas" });
    this.info = h("aside", { class: "chart-info" });
    this.title = h("span", { class: "chart-title muted" });
    this.note = h("span", { class: "chart-note" });
    this.zoomButton = h(
      "button",
      { class: "zoom", onclick: () => this.toggleZoom(), title: "The whole chart (small text) / readable text" },
      "whole chart",
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
    this.zoom = this.zoom === "readable" ? "whole" : "readable";
    this.zoomButton.textContent = this.zoom === "readable" ? "whole chart" : "readable";
    this.el.dataset.zoom = this.zoom;
    this.applyZoom();
    this.reveal();
  }

  /** The chart's width fits the canvas (never enlarged); in `readable`, not below the scale that keeps text at
   * MIN_TEXT_PX. */
  applyZoom() {
    const d = this.current && this.drawn.get(this.current.kind);
    if (!d) return;
    const [, , w, hh] = d.root.getAttribute("viewBox").split(" ").map(Number);
    const avail = Math.max(this.canvas.clientWidth - 6, 200);
    const fit = Math.min(1, avail / w);
    const scale = this.zoom === "readable" ? Math.max(fit, MIN_SCALE) : fit;
    d.root.setAttribute("width", String(Math.round(w * scale)));
    d.root.setAttribute("height", String(Math.round(hh * scale)));
  }

  /** Scrolls the canvas so the first lit state is in view (centred when it was not). */
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
