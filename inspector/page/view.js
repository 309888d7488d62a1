// DOM rendering of the model: the actor tree (updated in place, so a state change is in the DOM as soon as its frame
// is applied), the selected actor's details, and a timeline of states per actor.
import { childrenOf, roots } from "./model.js";

const h = (tag, attrs = {}, ...children) => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) el.append(c);
  return el;
};

const time = (at, start) => (at === undefined || start === undefined ? "" : `+${((at - start) / 1000).toFixed(3)}s`);
const clock = (at) => (at ? new Date(at).toISOString().slice(11, 23) : "");
/** `supervisor`, `session`, `run`, `tool`, or for a boundary child (`…/runner`, `…/install`, `…/dispatch`) its id. */
const kindOf = (id) =>
  id === "supervisor" ? "supervisor" : id.includes("/") ? id.split("/").pop() : id.split(":")[0] || "actor";
const isBoundary = (id) => id.includes("/");

/** The tree view: one `<li data-actor=id data-state=label data-status=status>` per actor, kept across updates. */
export class TreeView {
  constructor(root, onSelect) {
    this.root = root;
    this.onSelect = onSelect;
    this.nodes = new Map();
    this.list = h("ul", { class: "tree" });
    root.replaceChildren(this.list);
    this.selected = undefined;
  }

  node(model, id) {
    let n = this.nodes.get(id);
    if (!n) {
      const a = model.actors.get(id);
      const state = h("span", { class: "state" });
      const row = h(
        "div",
        { class: "row", onclick: () => this.onSelect(id) },
        h("span", { class: "kind" }, kindOf(id)),
        h("span", { class: "name", title: id }, id === "supervisor" ? "supervisor" : (a?.name ?? id)),
        state,
      );
      const li = h("li", { "data-actor": id, "data-kind": kindOf(id) }, row, h("ul"));
      n = { li, state, row, parent: undefined };
      this.nodes.set(id, n);
    }
    return n;
  }

  /** Places and updates the nodes of `ids` (all actors when undefined). */
  update(model, ids) {
    const list = ids ?? model.order;
    for (const id of list) {
      const a = model.actors.get(id);
      if (!a) continue;
      const n = this.node(model, id);
      const parent = a.parentId && model.actors.has(a.parentId) ? this.node(model, a.parentId).li.lastChild : this.list;
      if (n.li.parentNode !== parent) parent.append(n.li);
      if (n.li.dataset.state !== a.label) n.li.dataset.state = a.label;
      if (n.li.dataset.status !== a.status) n.li.dataset.status = a.status;
      if (n.state.textContent !== a.label) n.state.textContent = a.label;
      n.row.classList.toggle("selected", this.selected === id);
    }
    if (!ids) {
      for (const [id, n] of this.nodes) {
        if (!model.actors.has(id)) {
          n.li.remove();
          this.nodes.delete(id);
        }
      }
    }
  }

  select(model, id) {
    this.selected = id;
    for (const [nid, n] of this.nodes) n.row.classList.toggle("selected", nid === id);
  }
}

export function renderDetails(el, model, id, options) {
  const a = id ? model.actors.get(id) : undefined;
  if (!a) {
    el.replaceChildren(h("p", { class: "hint" }, "Select an actor to see its context and recent events."));
    return;
  }
  const canStop =
    options.actions &&
    !options.replaying &&
    a.id.startsWith("session:") &&
    !a.id.includes("/") &&
    a.status === "active";
  const events = [...a.events].reverse();
  el.replaceChildren(
    h(
      "div",
      { class: "details-head" },
      h("h2", {}, a.id),
      h("span", { class: "pill", "data-status": a.status }, a.label || a.status),
      a.incarnation > 1 ? h("span", { class: "muted" }, `incarnation ${a.incarnation}`) : undefined,
      canStop
        ? h(
            "button",
            { class: "danger", "data-action": "stop-session", onclick: () => options.onStop(a.id.slice(8)) },
            "Stop session",
          )
        : undefined,
    ),
    h("p", { class: "muted" }, `created ${clock(a.createdAt)}`, a.endedAt ? ` · ended ${clock(a.endedAt)}` : ""),
    h("h3", {}, "Recent events"),
    events.length
      ? h(
          "table",
          { class: "events" },
          h("tr", {}, h("th", {}, "time"), h("th", {}, "event"), h("th", {}, "from")),
          events.map((e) =>
            h(
              "tr",
              { title: JSON.stringify(e.event) },
              h("td", {}, time(e.at, model.start)),
              h("td", { class: "event-type" }, e.type),
              h("td", { class: "muted" }, e.from ?? "(outside)"),
            ),
          ),
        )
      : h("p", { class: "muted" }, "none yet"),
    h("h3", {}, "States"),
    h(
      "ol",
      { class: "history" },
      a.history.map((s) => h("li", {}, h("span", { class: "muted" }, time(s.at, model.start)), " ", s.label)),
    ),
    a.context !== undefined ? h("h3", {}, "Context") : undefined,
    a.context !== undefined ? h("pre", { class: "context" }, JSON.stringify(a.context, null, 2)) : undefined,
  );
}

/** One lane per actor (boundary children such as runners left out), coloured by state over time. */
export function renderTimeline(el, model, now) {
  const start = model.start;
  const end = Math.max(now ?? model.end ?? 0, (model.end ?? 0) + 1);
  if (start === undefined) {
    el.replaceChildren(h("p", { class: "hint" }, "No activity yet."));
    return;
  }
  const span = Math.max(end - start, 1);
  const pct = (t) => `${(((t - start) / span) * 100).toFixed(3)}%`;
  const lanes = [];
  const visit = (id, depth) => {
    const a = model.actors.get(id);
    if (!a) return;
    if (!isBoundary(id)) {
      const segments = a.history.map((s, i) => {
        const until = a.history[i + 1]?.at ?? a.endedAt ?? end;
        return h("span", {
          class: `seg${s.restart ? " restart" : ""}`,
          "data-state": s.label,
          style: undefined,
          title: `${s.label} ${time(s.at, start)} – ${time(until, start)}`,
          "data-left": pct(s.at),
          "data-width": `${(Math.max(until - s.at, 0) / span) * 100}%`,
        });
      });
      lanes.push(
        h(
          "div",
          { class: "lane", "data-actor": id },
          h("span", { class: "lane-name", style: undefined, title: id, "data-depth": depth }, a.id),
          h("span", { class: "lane-bar" }, segments),
        ),
      );
    }
    for (const c of childrenOf(model, id)) visit(c, depth + 1);
  };
  for (const r of roots(model)) visit(r, 0);
  el.replaceChildren(
    h(
      "div",
      { class: "axis" },
      h("span", {}, clock(start)),
      h("span", {}, `${(span / 1000).toFixed(1)} s`),
      h("span", {}, clock(end)),
    ),
    ...lanes,
  );
  // Geometry through CSSOM (the page's CSP forbids inline style attributes).
  for (const seg of el.querySelectorAll(".seg")) {
    seg.style.left = seg.dataset.left;
    seg.style.width = seg.dataset.width;
  }
  for (const name of el.querySelectorAll(".lane-name"))
    name.style.paddingLeft = `${Number(name.dataset.depth) * 0.8}em`;
}
