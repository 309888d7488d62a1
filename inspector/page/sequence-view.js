// The sequence view: for the selected actor and its descendants, the events between actors as a sequence diagram
// (a lifeline per actor, an arrow per event from sender to receiver, in time order), as the Stately Inspector's
// sequence tab. A log's events come from its steps (indexed once per log), the live ones from the model's ring.
// Only a window of rows around the position is drawn, so a long log stays cheap to step through; the view scrolls
// to the event at the position and dims those after it.
import { arrowDefs, svg } from "./dom.js";

export const OUTSIDE = "(outside)";
const ROW = 22;
const COL = 150;
const GUTTER = 74;
const BEFORE = 200;
const AFTER = 100;

const eventType = (e) => (e && typeof e === "object" ? String(e.type) : String(e));

/** A log's events (`{step, at, from, to, type}`, step counted from 1) and actors (parents, creation order). */
export function logSequence(steps) {
  const events = [];
  const parents = new Map();
  const order = [];
  steps.forEach((s, i) => {
    const f = s.frame;
    if (!f) return;
    if (f.type === "@xstate.actor") {
      if (!parents.has(f.sessionId)) order.push(f.sessionId);
      parents.set(f.sessionId, f.parentId);
    } else if (f.type === "@xstate.event") {
      events.push({ step: i + 1, at: s.at, from: f.sourceId, to: f.sessionId, type: eventType(f.event) });
    }
  });
  return { events, parents, order };
}

/** The live model's recent events and actors in the same shape. */
export function liveSequence(model) {
  const parents = new Map();
  for (const [id, a] of model.actors) parents.set(id, a.parentId);
  return { events: model.sequence, parents, order: model.order };
}

/** `actor` and its descendants (by parent links; `a/b` names are children of `a` even when unseen). */
export function subtreeOf(seq, actor) {
  const inside = new Map([[actor, true]]);
  const test = (id) => {
    if (id === undefined) return false;
    if (inside.has(id)) return inside.get(id);
    inside.set(id, false);
    const parent = seq.parents.get(id) ?? (id.includes("/") ? id.slice(0, id.lastIndexOf("/")) : undefined);
    const yes = test(parent);
    inside.set(id, yes);
    return yes;
  };
  return test;
}

/** The events sent or received by `actor`'s subtree, in order. */
export function subtreeEvents(seq, actor) {
  const inside = subtreeOf(seq, actor);
  return seq.events.filter((e) => inside(e.to) || inside(e.from));
}

export class SequenceView {
  constructor(el) {
    this.el = el;
    this.head = document.createElement("div");
    this.head.className = "seq-head";
    this.scroller = document.createElement("div");
    this.scroller.className = "seq-scroll";
    this.scroller.append(this.head);
    this.caption = document.createElement("p");
    this.caption.className = "muted seq-caption";
    el.replaceChildren(this.caption, this.scroller);
    this.drawn = undefined;
  }

  /** `events`: the subtree's events; `position`: the log position (a step number), or undefined live (all shown).
   * `start`: the time the `+s` column counts from. */
  show({ actor, seq, events, position, start }) {
    const n = events.length;
    // The current event: the last one at or before the position.
    let cur = n - 1;
    if (position !== undefined) {
      let lo = 0;
      let hi = n;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (events[mid].step <= position) lo = mid + 1;
        else hi = mid;
      }
      cur = lo - 1;
    }
    this.el.dataset.count = String(n);
    this.el.dataset.current = String(cur);
    if (n === 0) {
      this.drawn = undefined;
      this.caption.textContent = `No events between actors under ${actor} yet.`;
      this.head.replaceChildren();
      for (const c of [...this.scroller.children]) if (c !== this.head) c.remove();
      return;
    }
    const d = this.drawn;
    const reuse =
      d &&
      d.events === events &&
      d.actor === actor &&
      d.live === (position === undefined) &&
      (cur < 0 || (cur >= d.from && cur < d.to)) &&
      (position === undefined ? d.to === n : cur - d.from >= 20 || d.from === 0) &&
      (position === undefined || d.to - cur >= 20 || d.to === n);
    if (!reuse) this.draw(actor, seq, events, cur, start, position === undefined);
    this.mark(cur);
  }

  draw(actor, seq, events, cur, start, live) {
    const n = events.length;
    const from = live ? Math.max(0, n - BEFORE - AFTER) : Math.max(0, cur - BEFORE);
    const to = live ? n : Math.min(n, Math.max(cur, 0) + AFTER);
    const rows = events.slice(from, to);
    const inside = subtreeOf(seq, actor);
    // Lifelines: the outside world, then actors outside the subtree that talk to it, then the subtree in creation
    // order (parents before their children).
    const seen = new Set();
    for (const e of rows) {
      seen.add(e.from ?? OUTSIDE);
      seen.add(e.to);
    }
    const rank = new Map(seq.order.map((id, i) => [id, i]));
    const lifelines = [...seen].sort((a, b) => {
      const ka = a === OUTSIDE ? -2 : inside(a) ? 0 : -1;
      const kb = b === OUTSIDE ? -2 : inside(b) ? 0 : -1;
      if (ka !== kb) return ka - kb;
      return (rank.get(a) ?? 1e9) - (rank.get(b) ?? 1e9) || a.localeCompare(b);
    });
    const x = new Map(lifelines.map((id, i) => [id, GUTTER + i * COL + COL / 2]));
    // Room on the right for the label of a self-sent event on the last lifeline.
    const width = GUTTER + lifelines.length * COL + COL;
    const height = rows.length * ROW + 12;
    this.head.replaceChildren(
      ...lifelines.map((id) => {
        const s = document.createElement("span");
        s.className = `lifeline-name${id === actor ? " focus" : ""}`;
        s.dataset.actor = id;
        s.title = id;
        s.textContent = id;
        return s;
      }),
    );
    this.head.dataset.width = String(width);
    const root = svg("svg", { class: "sequence", width, height, viewBox: `0 0 ${width} ${height}` });
    root.append(arrowDefs("seq-arrow"));
    for (const id of lifelines) {
      root.append(
        svg("line", { class: "lifeline", "data-actor": id, x1: x.get(id), x2: x.get(id), y1: 0, y2: height }),
      );
    }
    const rowEls = [];
    rows.forEach((e, k) => {
      const y = k * ROW + ROW - 4;
      const x1 = x.get(e.from ?? OUTSIDE);
      const x2 = x.get(e.to);
      const g = svg("g", {
        class: "msg",
        "data-i": from + k,
        "data-from": e.from ?? OUTSIDE,
        "data-to": e.to,
        "data-type": e.type,
        ...(e.step ? { "data-step": e.step } : {}),
      });
      g.append(svg("rect", { class: "band", x: 0, y: y - ROW + 6, width, height: ROW }));
      g.append(
        svg(
          "text",
          { class: "time", x: 4, y: y - 2 },
          start !== undefined && e.at !== undefined ? `+${((e.at - start) / 1000).toFixed(3)}` : "",
        ),
      );
      if (x1 === x2) {
        g.append(
          svg("path", { class: "arrow-line", d: `M${x1},${y - 8} h18 v8 h-16`, "marker-end": "url(#seq-arrow)" }),
        );
        g.append(svg("text", { class: "msg-label", x: x1 + 22, y: y - 3 }, e.type));
      } else {
        g.append(svg("line", { class: "arrow-line", x1, x2, y1: y, y2: y, "marker-end": "url(#seq-arrow)" }));
        g.append(svg("text", { class: "msg-label", x: (x1 + x2) / 2, y: y - 4, "text-anchor": "middle" }, e.type));
      }
      g.append(svg("title", {}, `${e.from ?? OUTSIDE} → ${e.to}: ${e.type}`));
      rowEls.push(g);
      root.append(g);
    });
    for (const c of [...this.scroller.children]) if (c !== this.head) c.remove();
    this.scroller.append(root);
    for (const s of this.head.children) s.style.width = `${COL}px`;
    this.head.style.width = `${width}px`;
    this.head.style.paddingLeft = `${GUTTER}px`;
    this.caption.textContent = `${events.length} events between ${actor} and its descendants${
      from > 0 || to < n ? `; showing ${from + 1}–${to} around the position` : ""
    }`;
    this.drawn = { events, actor, from, to, rowEls, live, cur: undefined };
  }

  /** Marks the current row and those after it, and scrolls the current row into view. */
  mark(cur) {
    const d = this.drawn;
    if (!d) return;
    if (d.cur === cur) return;
    d.rowEls.forEach((g, k) => {
      const i = d.from + k;
      g.classList.toggle("current", i === cur);
      g.classList.toggle("future", i > cur);
    });
    d.cur = cur;
    const k = cur - d.from;
    if (k >= 0 && k < d.rowEls.length) {
      const y = k * ROW;
      const view = this.scroller.clientHeight - this.head.offsetHeight;
      const top = this.scroller.scrollTop;
      if (y < top || y > top + view - ROW * 2) this.scroller.scrollTop = Math.max(0, y - view / 2);
    }
  }
}
