// Stepping through a recorded log without rebuilding the model from the start at every step.
import { applyStep, createModel } from "./model.js";

/** A copy that later steps do not change: frames replace an actor's values and contexts and append to its lists,
 * so copying each actor and its lists is enough (contexts and events are shared, never mutated). */
export function copyModel(m) {
  const actors = new Map();
  for (const [id, a] of m.actors) actors.set(id, { ...a, events: a.events.slice(), history: a.history.slice() });
  const kids = new Map();
  for (const [id, set] of m.kids) kids.set(id, new Set(set));
  return { ...m, actors, kids, order: m.order.slice(), sequence: m.sequence.slice() };
}

/** Stepping through a log: forward steps apply only the new frames; a step back starts from the nearest checkpoint
 * (a copy kept every `every` steps as the cursor passes) instead of from the start of the log. */
export class LogCursor {
  constructor(steps, every = 1000) {
    this.steps = steps;
    this.every = every;
    this.model = createModel();
    this.position = 0;
    this.marks = new Map([[0, copyModel(this.model)]]);
  }

  /** The model after the first `position` steps (the same object while stepping forward). */
  at(position) {
    const p = Math.max(0, Math.min(position, this.steps.length));
    if (p < this.position) {
      let c = Math.floor(p / this.every) * this.every;
      while (!this.marks.has(c)) c -= this.every;
      this.model = copyModel(this.marks.get(c));
      this.position = c;
    }
    while (this.position < p) {
      applyStep(this.model, this.steps[this.position++]);
      if (this.position % this.every === 0 && !this.marks.has(this.position)) {
        this.marks.set(this.position, copyModel(this.model));
      }
    }
    return this.model;
  }
}
