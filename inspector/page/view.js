// DOM rendering of the model: the actor tree (updated in place, so a state change is in the DOM as soon as its frame
// is applied), the selected actor's details, and a timeline of states per actor.
import { actorKind, isActor } from "./actor-ids.js";
import { h } from "./dom.js";
import { childrenOf, displayName, roots, runTitle } from "./model.js";

const time = (at, start) => (at === undefined || start === undefined ? "" : `+${((at - start) / 1000).toFixed(3)}s`);
const clock = (at) => (at ? new Date(at).toISOString().slice(11, 23) : "");
/** `supervisor`, `session`, `run`, `tool`, or for a boundary child (`…/runner`, `…/install`, `…/dispatch`) its id. */
const kindOf = (id) =>
  id === "supervisor" ? "supervisor" : id.includes("/") ? id.split("/").pop() : (actorKind(id) ?? (id.split(":")[0] || "actor"));
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
      const state = h("span", { class: "state" });
      // A run's name is its title (surface and first line of code), set once its context arrives.
      const name = h("span", { class: "name", title: id });
      const row = h(
        "div",
        { class: "row", onclick: () => this.onSelect(id) },
        h("span", { class: "kind" }, kindOf(id)),
        name,
        state,
      );
      const li = h("li", { "data-actor": id, "data-kind": kindOf(id) }, row, h("ul"));
      n = { li, state, row, name, parent: undefined };
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
      const name = displayName(a);
      if (n.name.textContent !== name) n.name.textContent = name;
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

/** The selected actor's name, state and actions, above the views. */
export function renderHead(el, model, id, options) {
  const a = id ? model.actors.get(id) : undefined;
  if (!a) {
    el.replaceChildren(h("p", { class: "hint" }, "Select an actor to see its statechart, events and context."));
    return;
  }
  const canStop =
    options.actions &&
    !options.replaying &&
    isActor(a.id, "session") &&
    !a.id.includes("/") &&
    a.status === "active";
  el.replaceChildren(
    h(
      "div",
      { class: "details-head" },
      h("h2", {}, a.id),
      displayName(a) !== a.name ? h("span", { class: "title" }, displayName(a)) : undefined,
      h("span", { class: "pill", "data-status": a.status }, a.label || a.status),
      a.incarnation > 1 ? h("span", { class: "muted" }, `incarnation ${a.incarnation}`) : undefined,
      h("span", { class: "muted" }, `created ${clock(a.createdAt)}`, a.endedAt ? ` · ended ${clock(a.endedAt)}` : ""),
      canStop
        ? h(
            "button",
            { class: "danger", "data-action": "stop-session", onclick: () => options.onStop(a.id.slice(8)) },
            "Stop session",
          )
        : undefined,
    ),
  );
}

/** The Details view: recent events, states over time and context. */
export function renderDetails(el, model, id) {
  const a = id ? model.actors.get(id) : undefined;
  if (!a) {
    el.replaceChildren(h("p", { class: "hint" }, "Select an actor to see its context and recent events."));
    return;
  }
  const events = [...a.events].reverse();
  el.replaceChildren(
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

/** One lane per actor (boundary children such as runners left out), coloured by state over time. Lanes are kept
 * per actor and redrawn only when their actor changed or the time axis moved: stepping through a log (whose axis
 * spans the whole log, with a marker at the position) touches a few lanes, not hundreds. */
export class TimelineView {
  constructor(el) {
    this.el = el;
    this.axis = h("div", { class: "axis" });
    this.lanes = h("div", { class: "lanes" });
    this.marker = h("span", { class: "position-marker", hidden: true });
    this.hint = h("p", { class: "hint" }, "No activity yet.");
    el.replaceChildren(this.hint);
    this.kept = new Map();
    this.span = "";
  }

  /** `span`: the axis (`{start, end}`), by default the model's activity up to `now`; `marker`: a time to mark;
   * `source`: what the model comes from (the live stream, a log): lanes are kept while it stays the same, and
   * redrawn when their actor's revision or history moved. */
  update(model, { now, span, marker, source } = {}) {
    const start = span?.start ?? model.start;
    const end = span?.end ?? Math.max(now ?? model.end ?? 0, (model.end ?? 0) + 1);
    if (start === undefined) {
      if (this.el.firstChild !== this.hint) this.el.replaceChildren(this.hint);
      return;
    }
    if (this.el.firstChild === this.hint)
      this.el.replaceChildren(this.axis, h("div", { class: "lane-area" }, this.lanes, this.marker));
    const range = Math.max(end - start, 1);
    const pct = (t) => `${(((t - start) / range) * 100).toFixed(3)}%`;
    const width = (from, until) => `${((Math.max(until - from, 0) / range) * 100).toFixed(3)}%`;
    const key = `${start}:${end}`;
    const moved = key !== this.span || source !== this.source;
    if (moved) {
      this.span = key;
      this.source = source;
      this.axis.replaceChildren(
        h("span", {}, clock(start)),
        h("span", {}, `${(range / 1000).toFixed(1)} s`),
        h("span", {}, clock(end)),
      );
    }
    // The current time in the model: open segments reach it.
    const current = model.end ?? end;
    const order = [];
    const visit = (id, depth) => {
      const a = model.actors.get(id);
      if (!a) return;
      if (!isBoundary(id)) order.push([id, depth]);
      for (const c of childrenOf(model, id)) visit(c, depth + 1);
    };
    for (const r of roots(model)) visit(r, 0);
    const wanted = new Set();
    let previous = null;
    for (const [id, depth] of order) {
      wanted.add(id);
      const a = model.actors.get(id);
      let lane = this.kept.get(id);
      if (!lane) {
        const name = h("span", { class: "lane-name", title: id }, a.id);
        name.style.paddingLeft = `${depth * 0.8}em`;
        const bar = h("span", { class: "lane-bar" });
        lane = {
          el: h("div", { class: "lane", "data-actor": id }, name, bar),
          name,
          bar,
          rev: -1,
          history: -1,
          open: null,
        };
        this.kept.set(id, lane);
      }
      if (moved || lane.rev !== a.rev || lane.history !== a.history.length) {
        lane.rev = a.rev;
        lane.history = a.history.length;
        // A run's lane reads as its title; the id stays in the tooltip.
        const title = runTitle(a) ?? a.id;
        if (lane.name.textContent !== title) lane.name.textContent = title;
        lane.open = null;
        lane.bar.replaceChildren(
          ...a.history.map((s, i) => {
            const next = a.history[i + 1]?.at;
            const until = next ?? a.endedAt ?? current;
            const seg = h("span", {
              class: `seg${s.restart ? " restart" : ""}`,
              "data-state": s.label,
              title: `${s.label} ${time(s.at, start)} – ${time(until, start)}`,
            });
            seg.style.left = pct(s.at);
            seg.style.width = width(s.at, until);
            if (next === undefined && a.endedAt === undefined) lane.open = { seg, from: s.at };
            return seg;
          }),
        );
      } else if (lane.open) {
        lane.open.seg.style.width = width(lane.open.from, current);
      }
      const expected = previous ? previous.nextSibling : this.lanes.firstChild;
      if (expected !== lane.el) this.lanes.insertBefore(lane.el, expected);
      previous = lane.el;
    }
    for (const [id, lane] of this.kept) {
      if (!wanted.has(id)) {
        lane.el.remove();
        this.kept.delete(id);
      }
    }
    this.marker.hidden = marker === undefined;
    // The lanes' bars start after the 220 px of names.
    if (marker !== undefined) this.marker.style.left = `calc(220px + (100% - 220px) * ${(marker - start) / range})`;
  }
}
