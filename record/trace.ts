// The vocabulary shared by the recorder, replay and the inspector: explicit actor names, bounded serializable
// copies of events and contexts, and the log's record kinds. Live recording and replay both reduce inspection
// events with these functions, so a recorded trace and a replayed one compare field by field.
// Past 400 lines, one concept: a vocabulary; the recorder, replay and the inspector must reduce events with the
// very same functions, so they stay in one file.
import type { AnyActorRef, InspectionEvent } from "xstate";
import type { CommandEvent, RunnerFact } from "../machines/events.ts";
import { TRACE_STRING_LIMIT } from "./log-codec.ts";

export { TRACE_STRING_LIMIT };

export const LOG_FORMAT = "pi-code-supervisor.log";
/** v2: runner.* facts (were kernel.*), the `prepare` boundary actor, runs reporting through their parents. v3: the
 * same machines; trace records may point at a value the log already holds instead of repeating it
 * (record/log-codec.ts). Replay takes these versions only: a log describes the machines that recorded it. */
export const LOG_VERSION = 3;
/** The versions replay reads: those recorded by the same machines. */
export const READABLE_VERSIONS: readonly number[] = [2, 3];

const names = new WeakMap<object, string>();

/** The explicit name of an actor: ids containing `:` (`supervisor` children such as `session:<name>`, `run:<id>`,
 * `tool:<runId>:<n>`) are unique in the system; other ids (`runner`) are scoped by their parent's name. XState's
 * `sessionId` counter is never used: it depends on everything created before in the process. */
export function actorName(ref: AnyActorRef): string {
  const cached = names.get(ref);
  if (cached) return cached;
  const parent = ref._parent;
  const name = !parent || ref.id.includes(":") ? ref.id : `${actorName(parent)}/${ref.id}`;
  names.set(ref, name);
  return name;
}

function isActorRef(value: object): value is AnyActorRef {
  return typeof (value as { send?: unknown }).send === "function" && "sessionId" in value;
}

/** How many times `compact` elided an object (a cycle, or past depth 12): a copy made while this did not move
 * depends on nothing but the value, so it may stand for the same value at another depth. */
let elided = 0;

/** A JSON-safe copy: strings over `limit` are cut (with their length), errors become `{error, message}`,
 * actor refs become `{actor: name}`, functions and cycles are named, `undefined` fields are dropped. */
export function compact(value: unknown, limit = TRACE_STRING_LIMIT, depth = 0, seen = new Set<object>()): unknown {
  switch (typeof value) {
    case "string":
      return value.length > limit ? `${value.slice(0, limit)}…[${value.length} chars]` : value;
    case "number":
      return Number.isFinite(value) ? value : String(value);
    case "bigint":
      return String(value);
    case "function":
      return `[function ${value.name || "anonymous"}]`;
    case "symbol":
      return String(value);
    case "object":
      break;
    default:
      return value;
  }
  if (value === null) return null;
  const object = value as object;
  if (object instanceof Error) return { error: object.name, message: compact(object.message, limit) };
  if (isActorRef(object)) return { actor: actorName(object) };
  if (seen.has(object) || depth > 12) {
    elided += 1;
    return "[…]";
  }
  seen.add(object);
  try {
    if (Array.isArray(object)) return object.map((v) => compact(v, limit, depth + 1, seen) ?? null);
    if (object instanceof Map) return compact(Object.fromEntries(object), limit, depth + 1, seen);
    if (object instanceof Set) return compact([...object], limit, depth + 1, seen);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(object)) {
      if (v !== undefined) out[k] = compact(v, limit, depth + 1, seen);
    }
    return out;
  } finally {
    seen.delete(object);
  }
}

// ---- log records ----

/** The system's observable behaviour: compared record by record on replay. */
export type TraceRecord =
  | { k: "actor"; id: string; parent?: string }
  | { k: "event"; to: string; from?: string; event: unknown }
  | {
      k: "snap";
      id: string;
      cause: string;
      status: string;
      value?: unknown;
      context?: unknown;
      /** Context keys changed since this actor's previous snapshot (see TraceEncoder), and keys removed. */
      delta?: Record<string, unknown>;
      removed?: string[];
      /** Recorder only (v3, decoded on reading): the context before `delta`/`removed` is the actor's start input. */
      base?: "input";
      /** Recorder only (v3, decoded on reading): this context key changed to the output of the actor's done event. */
      output?: string;
      children?: string[];
      error?: unknown;
    }
  /** A timer armed by the system (an `after` delay or a delayed send), numbered in creation order. */
  | { k: "set"; n: number; ms: number }
  | { k: "clear"; n: number };

/** The children that stand for the outside world (processes, request preparation, installers, Pi's tools, shells):
 * callback actors provided from actors/. Everything they send back to their parent is a fact, recorded as an input
 * and re-delivered on replay by a stub under the same name. They talk to their parent through `sendBack` only. */
export const BOUNDARY_IDS: readonly string[] = ["runner", "prepare", "install", "dispatch", "shell"];

/** Which event each boundary actor is handling right now, from the inspection stream: an event delivered to it
 * opens the window, its next snapshot closes it. A fact sent inside the window is part of that event's processing
 * (a callback that calls `sendBack` synchronously in its start or in `receive`), not a separate input. */
export class BoundaryTracker {
  private received = new WeakMap<object, number>();
  private readonly handling = new WeakMap<object, number>();
  /** Counts start again (a rotated segment starts from a checkpoint, where replay restores the actors anew). */
  reset(): void {
    this.received = new WeakMap();
  }
  observe(ev: InspectionEvent): void {
    if (ev.type === "@xstate.event") {
      const target = ref(ev.actorRef);
      if (!BOUNDARY_IDS.includes(target.id) || ev.sourceRef === ev.actorRef) return;
      const n = (this.received.get(target) ?? 0) + 1;
      this.received.set(target, n);
      this.handling.set(target, n);
    } else if (ev.type === "@xstate.snapshot") {
      this.handling.delete(ref(ev.actorRef));
    }
  }
  during(actor: object): number | undefined {
    return this.handling.get(actor);
  }
}

/** What drives the machines: replay feeds exactly these, in this order. */
export type InputRecord =
  /** A command from outside: to the root, or (`to`: the actor's system id) a direct run to its session. */
  | { k: "cmd"; event: CommandEvent; to?: string }
  /** A fact from boundary actor `from` to its parent `to`, or, from a session's runner, straight to the run it
   * concerns (`to` is then `run:<id>`). `during: n`: sent synchronously while `from` handled the n-th event it
   * received (1 is its start, `xstate.init`); replay then delivers it at that same point. */
  | { k: "fact"; to: string; from: string; event: RunnerFact | { type: string }; during?: number }
  | { k: "timer"; n: number }
  /** The host stopped the root actor (Pi shut down). */
  | { k: "stop" };

export interface HeaderRecord {
  k: "header";
  format: typeof LOG_FORMAT;
  v: number;
  segment: number;
  /** The file this segment continues (rotation), by base name. */
  continues?: string;
  piSession?: string;
  pid: number;
  startedAt: number;
  versions: Record<string, string>;
}

export type LogRecord = (
  | HeaderRecord
  /** The root actor was created with this input (first segment). */
  | { k: "start"; input: unknown }
  /** A rotated segment starts from the supervisor's persisted snapshot, taken when no timer was pending. */
  | { k: "checkpoint"; snapshot: unknown; nextTimer: number; quiescent: boolean }
  | TraceRecord
  | InputRecord
  /** Output written by a run (metadata only; output does not drive the machines). */
  | { k: "out"; run: string; ch: string; bytes: number; chunks: number }
  | { k: "end"; reason: string; next?: string }
) & { at?: number };

export const INPUT_KINDS = new Set(["cmd", "fact", "timer", "stop"]);
export const TRACE_KINDS = new Set(["actor", "event", "snap", "set", "clear"]);

function stateOf(
  snapshot: any,
  contextOf: (context: unknown) => unknown,
): Pick<Extract<TraceRecord, { k: "snap" }>, "status" | "value" | "context"> {
  return {
    status: String(snapshot?.status ?? "unknown"),
    ...(snapshot && "value" in snapshot ? { value: compact(snapshot.value) } : {}),
    ...(snapshot && "context" in snapshot && snapshot.context !== undefined
      ? { context: contextOf(snapshot.context) }
      : {}),
  };
}

/** Inspection events type their refs loosely; they are always full actor refs. */
export function ref(actor: unknown): AnyActorRef {
  return actor as AnyActorRef;
}

/** Per event object, the JSON of its trace copy: XState events are immutable, and a relayed event (a runner's
 * fact forwarded up, a tool result passed down) is delivered to several actors. */
const eventJson = new WeakMap<object, string>();

/** An event record's JSON line, exactly as `JSON.stringify({...traceOf(ev), at})` writes it, with the event's copy
 * serialized once per event object (the recorder's hot path: most records are events). */
export function eventLine(ev: Extract<InspectionEvent, { type: "@xstate.event" }>, at: number): string {
  const event = ev.event as object;
  let json = eventJson.get(event);
  if (json === undefined) {
    json = JSON.stringify(compact(event)) ?? "null";
    eventJson.set(event, json);
  }
  const from = ev.sourceRef ? `,"from":${JSON.stringify(actorName(ref(ev.sourceRef)))}` : "";
  return `{"k":"event","to":${JSON.stringify(actorName(ref(ev.actorRef)))}${from},"event":${json},"at":${JSON.stringify(at)}}`;
}

/** Reduces an inspection event to its trace record, read synchronously (the snapshot as of this event).
 * Microsteps and actions are left out: they follow from the same inputs and would only inflate logs. */
export function traceOf(
  ev: InspectionEvent,
  contextOf: (context: unknown) => unknown = (c) => compact(c),
): TraceRecord | undefined {
  switch (ev.type) {
    case "@xstate.actor": {
      const parent = ref(ev.actorRef)._parent;
      return { k: "actor", id: actorName(ref(ev.actorRef)), ...(parent ? { parent: actorName(parent) } : {}) };
    }
    case "@xstate.event":
      return {
        k: "event",
        to: actorName(ref(ev.actorRef)),
        ...(ev.sourceRef ? { from: actorName(ref(ev.sourceRef)) } : {}),
        event: compact(ev.event),
      };
    case "@xstate.snapshot": {
      const snapshot = ev.snapshot as any;
      const children =
        snapshot && typeof snapshot.children === "object" && snapshot.children
          ? Object.values(snapshot.children as Record<string, AnyActorRef>).map(actorName)
          : undefined;
      return {
        k: "snap",
        id: actorName(ref(ev.actorRef)),
        cause: ev.event.type,
        ...stateOf(snapshot, contextOf),
        ...(children && children.length ? { children } : {}),
        ...(snapshot?.status === "error" ? { error: compact(snapshot.error) } : {}),
      };
    }
    default:
      return undefined;
  }
}

/** Reduces inspection events to trace records, writing a snapshot's context in full only the first time for each
 * actor: after that a snapshot carries `delta` (the top-level keys whose value changed) and `removed` (keys gone),
 * or neither when the context is unchanged. Replay uses one as it is (whole records); the recorder's (`refs`) also
 * points at values the log already holds (format v3, decoded by record/log-codec.ts): an event that is the input
 * just recorded (`same`), an actor's first context as a delta of its `xstate.init` input (`base: "input"`), a
 * context key that is its done event's output (`output`). Replay decodes the log and compares it with its own
 * whole records, so the encoding itself is checked too. */
export class TraceEncoder {
  private readonly refs: boolean;
  constructor(refs = false) {
    this.refs = refs;
  }
  /** How many actors it holds a context, a name, a start input or an output for: live ones only. */
  get size(): number {
    return Math.max(this.contexts.size, this.holders.size, this.inits.size, this.outputs.size);
  }
  /** Per actor, its last context by top-level key: the raw value, its compact copy and that copy's JSON. */
  private readonly contexts = new Map<string, Map<string, KeyCopy>>();
  /** Per actor, the context object its last snapshot carried: a snapshot with that very object (no `assign` since)
   * changed nothing, and is encoded without looking at its keys. */
  private readonly raws = new Map<string, object>();
  /** Which actor holds each name now (a reset session's name passes to its successor). */
  private readonly holders = new Map<string, AnyActorRef>();
  /** `refs`: the event of the latest input record, which an event record delivering that very object points at. */
  private lastInput: object | undefined;
  /** `refs`: per actor, the copies of its `xstate.init` input by key, until its first snapshot (whose context is
   * mostly that input: machines spread it into their context, so its values are the very same objects). */
  private readonly inits = new Map<string, Map<string, KeyCopy>>();
  /** `refs`: per actor, the copy of the output its done event carried, until its last snapshot. */
  private readonly outputs = new Map<string, KeyCopy>();

  /** An input record, in log order (`refs`: an event record that delivers its very event points at it). */
  input(record: { k: string; event?: unknown }): void {
    if (!INPUT_KINDS.has(record.k)) return;
    this.lastInput =
      (record.k === "cmd" || record.k === "fact") && typeof record.event === "object" && record.event !== null
        ? record.event
        : undefined;
  }

  /** An event record's JSON line: `eventLine`'s, or (`refs`) one pointing at what the log already holds. */
  eventLine(ev: Extract<InspectionEvent, { type: "@xstate.event" }>, at: number): string {
    if (!this.refs) return eventLine(ev, at);
    const event = ev.event as { type: unknown; input?: unknown; output?: unknown; actorId?: unknown };
    const to = actorName(ref(ev.actorRef));
    const head = `{"k":"event","to":${JSON.stringify(to)}${ev.sourceRef ? `,"from":${JSON.stringify(actorName(ref(ev.sourceRef)))}` : ""}`;
    // The input record holds it whole; read back through JSON it gives the same trace copy (plain JSON data only).
    if (event === this.lastInput && jsonPlain(event, 0)) return `${head},"same":true,"at":${JSON.stringify(at)}}`;
    let json: string;
    if (event.type === "xstate.init" && isPlainRecord(event.input)) json = this.initJson(to, event);
    else if (
      typeof event.type === "string" &&
      event.type.startsWith("xstate.done.actor.") &&
      typeof event.actorId === "string" &&
      event.output !== undefined &&
      this.holders.has(event.actorId)
    )
      json = this.doneJson(event.actorId, event);
    else return eventLine(ev, at);
    return `${head},"event":${json},"at":${JSON.stringify(at)}}`;
  }

  /** An init event's JSON, its input copied key by key (as `compact` would, at the same depth) and kept for the
   * actor's first snapshot, unless copying elided anything (then a copy depends on its depth). */
  private initJson(to: string, event: object): string {
    const seen = new Set<object>([event]);
    const parts: string[] = [];
    const before = elided;
    let keys: Map<string, KeyCopy> | undefined;
    for (const [k, v] of Object.entries(event)) {
      if (v === undefined) continue;
      if (k !== "input") {
        parts.push(`${JSON.stringify(k)}:${JSON.stringify(compact(v, TRACE_STRING_LIMIT, 1, seen))}`);
        continue;
      }
      keys = new Map();
      const inner: string[] = [];
      seen.add(v as object);
      for (const [ik, iv] of Object.entries(v as object)) {
        if (iv === undefined) continue;
        const copy = compact(iv, TRACE_STRING_LIMIT, 2, seen);
        const json = JSON.stringify(copy);
        keys.set(ik, { value: iv, copy, json });
        inner.push(`${JSON.stringify(ik)}:${json}`);
      }
      seen.delete(v as object);
      parts.push(`"input":{${inner.join(",")}}`);
    }
    if (keys && elided === before) this.inits.set(to, keys);
    else this.inits.delete(to);
    return `{${parts.join(",")}}`;
  }

  /** A done event's JSON, its output's copy kept for the actor's last snapshot (the same object in its context). */
  private doneJson(actorId: string, event: object): string {
    const seen = new Set<object>([event]);
    const parts: string[] = [];
    const before = elided;
    let output: KeyCopy | undefined;
    for (const [k, v] of Object.entries(event)) {
      if (v === undefined) continue;
      const copy = compact(v, TRACE_STRING_LIMIT, 1, seen);
      const json = JSON.stringify(copy);
      if (k === "output") output = { value: v, copy, json };
      parts.push(`${JSON.stringify(k)}:${json}`);
    }
    if (output && elided === before) this.outputs.set(actorId, output);
    else this.outputs.delete(actorId);
    return `{${parts.join(",")}}`;
  }

  encode(ev: InspectionEvent): TraceRecord | undefined {
    let keys: Map<string, KeyCopy> | undefined;
    const id = ev.type === "@xstate.snapshot" ? actorName(ref(ev.actorRef)) : undefined;
    // What this actor's snapshot may point at: its start input (first snapshot only), its done event's output.
    let base: Map<string, KeyCopy> | undefined;
    let output: KeyCopy | undefined;
    if (id !== undefined && this.refs) {
      base = this.inits.get(id);
      this.inits.delete(id);
      output = this.outputs.get(id);
    }
    // A plain context, compared key by key with the copies of the previous one (or of the start input), which it
    // updates in place: the keys whose copy changed, and the keys gone.
    let changed: [string, KeyCopy][] | undefined;
    let removed: string[] | undefined;
    let onBase = false;
    const r = traceOf(ev, (raw) => {
      if (!isPlainRecord(raw)) return compact(raw);
      // A context's top-level values are immutable (machines assign new ones): a value that is the very one of the
      // previous snapshot keeps its copy, so only changed keys are copied and serialized.
      const previous = this.contexts.get(id!);
      if (previous && this.raws.get(id!) === raw) {
        keys = previous;
        return UNCHANGED;
      }
      this.raws.set(id!, raw);
      let seen: Set<object> | undefined;
      const copyOf = (v: unknown): KeyCopy => {
        if (output && output.value === v) return output;
        seen ??= new Set<object>([raw]);
        const copy = compact(v, TRACE_STRING_LIMIT, 1, seen);
        return { value: v, copy, json: JSON.stringify(copy) };
      };
      const against = previous ?? base;
      if (!against || against.has("")) {
        keys = new Map();
        for (const k in raw) if (raw[k] !== undefined) keys.set(k, copyOf(raw[k]));
        return WHOLE;
      }
      onBase = !previous;
      keys = against;
      changed = [];
      let present = 0;
      for (const k in raw) {
        const v = raw[k];
        if (v === undefined) continue;
        present += 1;
        const had = against.get(k);
        if (had && had.value === v) continue;
        const c = copyOf(v);
        if (had?.json !== c.json) changed.push([k, c]);
        against.set(k, c);
      }
      if (present !== against.size) {
        removed = [...against.keys()].filter((k) => raw[k] === undefined);
        for (const k of removed) against.delete(k);
      }
      return BY_KEYS;
    });
    if (r?.k === "actor") {
      this.forget(r.id);
      this.holders.set(r.id, ref(ev.actorRef));
    }
    if (r?.k !== "snap") return r;
    // An actor that ended sends no more snapshots: forget it, so the encoder does not grow with every run there was.
    // Only while it still holds its name: the last snapshot of a session that a reset already replaced is kept
    // under the name, as it always was, so logs encode as they did.
    const ended = r.status !== "active" && this.holders.get(r.id) === ref((ev as { actorRef: unknown }).actorRef);
    if (ended) this.holders.delete(r.id);
    if (r.status !== "active") this.outputs.delete(r.id);
    if (r.context === undefined || r.context === UNCHANGED) {
      delete r.context;
      if (ended) this.forget(r.id);
      return r;
    }
    if (r.context === WHOLE || r.context === BY_KEYS) {
      if (ended) this.forget(r.id);
      else this.contexts.set(r.id, keys!);
      if (r.context === WHOLE) {
        r.context = Object.fromEntries([...keys!].map(([k, c]) => [k, c.copy]));
        return r;
      }
      delete r.context;
      const delta: Record<string, unknown> = {};
      let outputKey: string | undefined;
      for (const [k, c] of changed!) {
        if (c === output && outputKey === undefined) outputKey = k;
        else delta[k] = c.copy;
      }
      if (onBase) r.base = "input";
      if (Object.keys(delta).length) r.delta = delta;
      if (removed?.length) r.removed = removed;
      if (outputKey !== undefined) {
        r.output = outputKey;
        this.outputs.delete(r.id);
      }
      return r;
    }
    const context = r.context;
    keys ??= isRecord(context)
      ? new Map(Object.entries(context).map(([k, v]) => [k, { value: NO_VALUE, copy: v, json: JSON.stringify(v) }]))
      : new Map([["", { value: NO_VALUE, copy: context, json: JSON.stringify(context) }]]);
    const previous = this.contexts.get(r.id);
    if (ended) this.forget(r.id);
    else this.contexts.set(r.id, keys);
    if (!previous || !isRecord(context) || previous.has("")) return r;
    delete r.context;
    const delta: Record<string, unknown> = {};
    for (const [k, c] of keys) if (previous.get(k)?.json !== c.json) delta[k] = context[k];
    const gone = [...previous.keys()].filter((k) => !keys!.has(k));
    if (Object.keys(delta).length) r.delta = delta;
    if (gone.length) r.removed = gone;
    return r;
  }

  private forget(id: string): void {
    this.contexts.delete(id);
    this.raws.delete(id);
    this.inits.delete(id);
    this.outputs.delete(id);
  }
}

/** A value JSON carries as it is, so its trace copy read back from an input record's JSON is the one `compact` makes
 * of it: strings, finite numbers, booleans, null, arrays and plain objects (without `toJSON`), at most 12 deep. */
function jsonPlain(v: unknown, depth: number): boolean {
  switch (typeof v) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(v);
    case "undefined":
      // A field left out (or an array's `null`) in both copies.
      return depth > 0;
    case "object":
      break;
    default:
      return false;
  }
  if (v === null) return true;
  if (depth > 12) return false;
  if (Array.isArray(v)) {
    for (const x of v) if (!jsonPlain(x, depth + 1)) return false;
    return true;
  }
  const proto = Object.getPrototypeOf(v);
  if ((proto !== Object.prototype && proto !== null) || typeof (v as { toJSON?: unknown }).toJSON === "function")
    return false;
  for (const k in v) if (!jsonPlain((v as Record<string, unknown>)[k], depth + 1)) return false;
  return true;
}

interface KeyCopy {
  value: unknown;
  copy: unknown;
  json: string;
}
const NO_VALUE = Symbol("no raw value");
/** A context that is the very object of the actor's previous snapshot. */
const UNCHANGED = Symbol("unchanged context");
/** A plain context compared key by key with the previous one: the record gets its changed keys (a delta). */
const BY_KEYS = Symbol("context by keys");
/** A plain context copied key by key with nothing to compare it with: the record gets it whole. */
const WHOLE = Symbol("whole context");

/** A plain object (not an actor ref, error, map or class instance): its keys are compacted one by one. */
function isPlainRecord(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && !isActorRef(v);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Canonical JSON (sorted keys) of a record without its wall-clock time: what replay compares. */
export function canonical(record: object): string {
  const { at: _at, ...rest } = record as { at?: number };
  return JSON.stringify(rest, (_k, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v as object)
            .sort()
            .map((key) => [key, (v as Record<string, unknown>)[key]]),
        )
      : v,
  );
}

/** A state value as people read it: `running`, or `parent.child` for nested states. */
export function stateLabel(value: unknown): string {
  if (typeof value === "string") return value;
  if (value && typeof value === "object") {
    return Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => (v && (typeof v === "string" || typeof v === "object") ? `${k}.${stateLabel(v)}` : k))
      .join(",");
  }
  return value === undefined ? "" : String(value);
}
