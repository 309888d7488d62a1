// Reading trace records as the recorder writes them. Since format v3 a record may point at a value the log already
// holds instead of repeating it (docs/replay.md): an event that is the input just recorded, a new actor's first
// context as a delta of its `xstate.init` input, a context key that is the output its done event carried. The
// decoder turns such records back into whole ones, so replay, the divergence report and the inspector read v2 and
// v3 logs alike. No imports: the inspector page runs this module too (inspector/page/log-codec.js).

/** Long strings (code, messages) are cut in trace records; inputs keep them whole. */
export const TRACE_STRING_LIMIT = 240;

/** The trace copy of a JSON value (an input's event, read back from the log): what `compact` in record/trace.ts
 * makes of the live value, for values that JSON carries (strings over `limit` cut, objects past depth 12 elided). */
export function cutJson(value: unknown, limit = TRACE_STRING_LIMIT, depth = 0): unknown {
  if (typeof value === "string")
    return value.length > limit ? `${value.slice(0, limit)}…[${value.length} chars]` : value;
  if (typeof value !== "object" || value === null) return value;
  if (depth > 12) return "[…]";
  if (Array.isArray(value)) return value.map((v) => cutJson(v, limit, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = cutJson(v, limit, depth + 1);
  return out;
}

type Rec = Record<string, unknown>;

function isRecord(v: unknown): v is Rec {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Turns the records of one log segment, in file order, back into whole records. One decoder per segment: what a
 * record points at is always earlier in the same segment. */
export class LogDecoder {
  /** The event of the latest input record (`cmd`, `fact`); undefined after a timer firing or a stop. */
  private lastInput: unknown;
  /** Per actor, the `input` of its `xstate.init` event, until its first snapshot. */
  private readonly inits = new Map<string, Rec>();
  /** Per actor id, the `output` of its done event (`xstate.done.actor.<id>`), until a snapshot of it takes it. */
  private readonly outputs = new Map<string, unknown>();

  /** The record whole (a new object if it pointed at anything), or (a string) what it points at that the log lacks. */
  decode(record: Rec): Rec | string {
    switch (record.k) {
      case "cmd":
      case "fact":
        this.lastInput = record.event;
        return record;
      case "timer":
      case "stop":
        this.lastInput = undefined;
        return record;
      case "event":
        return this.event(record);
      case "snap":
        return this.snap(record);
      default:
        return record;
    }
  }

  private event(record: Rec): Rec | string {
    let r = record;
    if (record.same !== undefined) {
      if (record.same !== true || !isRecord(this.lastInput))
        return "an event record naming the input before it (`same`), with no input event there";
      const { same: _same, ...rest } = record;
      r = { ...rest, event: cutJson(this.lastInput) };
    }
    const event = r.event;
    if (isRecord(event) && typeof event.type === "string" && typeof r.to === "string") {
      if (event.type === "xstate.init" && isRecord(event.input)) this.inits.set(r.to, event.input);
      else if (event.type.startsWith("xstate.done.actor.") && typeof event.actorId === "string" && "output" in event)
        this.outputs.set(event.actorId, event.output);
    }
    return r;
  }

  private snap(record: Rec): Rec | string {
    const id = record.id;
    if (typeof id !== "string") return record;
    const base = this.inits.get(id);
    this.inits.delete(id);
    const output = this.outputs.get(id);
    // An actor that ended takes no output later (the map holds live actors only).
    if (record.status !== "active") this.outputs.delete(id);
    if (record.base === undefined && record.output === undefined) return record;
    const { base: baseMark, output: outputKey, ...r } = record;
    if (outputKey !== undefined) {
      if (typeof outputKey !== "string" || output === undefined)
        return `a snapshot of ${id} naming its done event's output (\`output\`), with no such event before it`;
      r.delta = { ...(isRecord(r.delta) ? r.delta : {}), [outputKey]: output };
      this.outputs.delete(id);
    }
    if (baseMark !== undefined) {
      if (baseMark !== "input" || !base)
        return `a snapshot of ${id} built on its start input (\`base\`), with no xstate.init input before it`;
      const context: Rec = { ...base, ...(isRecord(r.delta) ? r.delta : {}) };
      if (Array.isArray(r.removed)) for (const k of r.removed) delete context[k as string];
      delete r.delta;
      delete r.removed;
      r.context = context;
    }
    return r;
  }
}
