// What the machines once recorded and no longer do: context fields they stopped keeping, events between actors
// that were renamed, inputs a machine gives its children from its own constants that changed, actors that moved
// to another parent, and states that gained substates. A log recorded before such a change carries the old; today's
// machines, replaying the same inputs, record the new. Replay reads an older log as today's machines would have
// recorded it (a retired field taken out, and a snapshot whose only change was to it then showing no change to that
// key; a renamed event under its new name; a child's start input as today's parent gives it; a moved actor's records
// under its new parent; a state's old value as the substate today's machine is in, read from the recorded context),
// so a log from before a deliberate change still replays identical, and any other difference still diverges. An
// entry is added here with the change that made it.
import { isActor, isSpareRunner, SPARE_POOL_ID } from "../machines/actor-ids.ts";
import { canonical, type TraceRecord } from "./trace.ts";
import type { Traced } from "./divergence.ts";

interface Retired {
  /** The actor whose context held it. */
  actor: string;
  /** The top-level context key it lived under. */
  key: string;
  /** That key's value without the retired field; absent, the whole key is retired. */
  without?: (value: unknown) => unknown;
}

/** Each entry of a table keyed by name, without `field`. */
const fromEntries = (field: string) => (value: unknown) =>
  value && typeof value === "object" && !Array.isArray(value)
    ? Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([name, entry]) => {
          if (!entry || typeof entry !== "object" || !(field in entry)) return [name, entry];
          const { [field]: _gone, ...rest } = entry as Record<string, unknown>;
          return [name, rest];
        }),
      )
    : value;

export const RETIRED: readonly Retired[] = [
  // 2026-12-03: the supervisor's copy of each session's busy run; whether a session is busy is the session's own
  // fact (its `activeRunId`), read from it where the supervisor decides.
  { actor: "supervisor", key: "sessions", without: fromEntries("busyRunId") },
  // 2026-12-03: the spare runners are the spare pool's (`spare:pool`, machines/spare-pool.ts, issue 30); the pool
  // keeps them, and the supervisor keeps none of these.
  { actor: "supervisor", key: "spares" },
  { actor: "supervisor", key: "spareTarget" },
  { actor: "supervisor", key: "spareSeq" },
];

interface Renamed {
  from: string;
  to: string;
  /** The actors whose events these are: the same old name may mean another event elsewhere. */
  actor: (id: string) => boolean;
}

const shellActor = (id: string) => isActor(id, "exec");

export const RENAMED: readonly Renamed[] = [
  // 2026-12-03: a shell session's own events are `shell.*`; `session.*` is a named interpreter session's (issue 30).
  { from: "session.stop", to: "shell.stop", actor: shellActor },
  { from: "session.stop_failed", to: "shell.stop_failed", actor: shellActor },
  { from: "session.running", to: "shell.running", actor: shellActor },
  { from: "session.held", to: "shell.held", actor: shellActor },
];

interface Replaced {
  /** The actors started with it. */
  actor: (id: string) => boolean;
  /** The key of their start input that held it. */
  key: string;
  /** That key's value as today's parent gives it; the value itself when it is not the old one. */
  today: (value: unknown) => unknown;
}

export const REPLACED: readonly Replaced[] = [
  // 2026-12-03: a shell session stopped with SIGKILL waits for its group's end (`shell.group_gone`), not 1 s for its
  // stream to close (`confirmMs`); only a member that cannot die has a bound (`unkillableMs`, 30 s). The pool gives
  // these limits from its own defaults (not the log's input) to itself and each session. A log that recorded a
  // SIGKILL still diverges there: today's session waits in `stopping.escalated.emptying`, and fails only when the
  // group is gone with its output still open, or after 30 s.
  {
    actor: shellActor,
    key: "limits",
    today: (value) => {
      if (!value || typeof value !== "object" || !("confirmMs" in value)) return value;
      const { confirmMs: _gone, ...rest } = value as Record<string, unknown>;
      return { ...rest, unkillableMs: 30_000 };
    },
  },
];

interface Restated {
  /** The actor whose state it is. */
  actor: string;
  /** The state value it recorded. */
  from: string;
  /** Its value today, decided by the actor's context as recorded up to and with that snapshot. */
  today: (context: Record<string, unknown>) => unknown;
}

export const RESTATED: readonly Restated[] = [
  // 2026-12-03: the supervisor's `serving` has substates (issue 30): `idle` while no request waits, `preparing` while
  // the request at the queue's head is prepared (the queue is not empty).
  {
    actor: "supervisor",
    from: "serving",
    today: (context) => ({ serving: Array.isArray(context.queue) && context.queue.length ? "preparing" : "idle" }),
  },
];

/** A state value as today's machine records it, or the value itself. */
function valueAsToday(actor: string, value: unknown, context: Record<string, unknown>): unknown {
  const r = RESTATED.find((r) => r.actor === actor && r.from === value);
  return r ? r.today(context) : value;
}

type Snap = Extract<TraceRecord, { k: "snap" }>;
type EventRecord = Extract<TraceRecord, { k: "event" }>;

/** An event type as today's machines name it, for an event between `actors`. */
function renamed(type: string, actors: (string | undefined)[]): string {
  const r = RENAMED.find((r) => r.from === type && actors.some((a) => a !== undefined && r.actor(a)));
  return r ? r.to : type;
}

/** An event record under today's name of its event, and an actor's start with today's input. */
function eventAsToday(t: Traced, e: EventRecord): Traced {
  const event = e.event as { type?: unknown; input?: unknown } | undefined;
  if (typeof event?.type !== "string") return t;
  const type = renamed(event.type, [e.to, e.from]);
  const input = type === "xstate.init" && e.to ? inputAsToday(e.to, event.input) : event.input;
  if (type === event.type && input === event.input) return t;
  const record: EventRecord = { ...e, event: { ...event, type, ...(input === undefined ? {} : { input }) } };
  return { ...t, record, key: canonical(record) };
}

/** `input` of actor `id` as today's parent gives it (the same object when nothing was replaced). */
function inputAsToday(id: string, input: unknown): unknown {
  if (!input || typeof input !== "object") return input;
  let out = input as Record<string, unknown>;
  for (const r of REPLACED) {
    if (!r.actor(id) || !(r.key in out)) continue;
    const value = r.today(out[r.key]);
    if (value !== out[r.key]) out = { ...out, [r.key]: value };
  }
  return out;
}

/** The recorded trace as today's machines would record it: renamed events under their new names; retired fields out
 * of every snapshot of their actor, and a key whose value is then what it was before out of that snapshot's
 * `delta`. */
export function asRecordedToday(expected: Traced[]): Traced[] {
  const last = new Map<string, string>(); // `${actor}\0${key}` -> the value's JSON after the actor's last snapshot
  const contexts = new Map<string, Record<string, unknown>>(); // a restated actor's context as recorded so far
  return expected.map((t) => {
    const recorded = t.record;
    if (recorded.k === "event") return eventAsToday(t, recorded);
    if (recorded.k !== "snap") return t;
    const cause = renamed(recorded.cause, [recorded.id]);
    if (cause !== recorded.cause) {
      const record: Snap = { ...recorded, cause };
      t = { ...t, record, key: canonical(record) };
    }
    t = stateAsToday(t, recorded, contexts);
    t = snapAsToday(t, t.record as Snap);
    const rules = RETIRED.filter((r) => r.actor === recorded.id);
    if (rules.length === 0) return t;
    const snap: Snap = { ...(t.record as Snap) };
    if (snap.context && typeof snap.context === "object") {
      const context = { ...(snap.context as Record<string, unknown>) };
      for (const r of rules) {
        if (!(r.key in context)) continue;
        if (!r.without) {
          delete context[r.key];
          continue;
        }
        context[r.key] = r.without(context[r.key]);
        last.set(`${r.actor}\0${r.key}`, JSON.stringify(context[r.key]));
      }
      snap.context = context;
    }
    if (snap.removed) {
      const removed = snap.removed.filter((k) => !rules.some((r) => r.key === k && !r.without));
      if (removed.length) snap.removed = removed;
      else delete snap.removed;
    }
    if (snap.delta) {
      const delta = { ...snap.delta };
      for (const r of rules) {
        if (!(r.key in delta)) continue;
        if (!r.without) {
          delete delta[r.key];
          continue;
        }
        const value = r.without(delta[r.key]);
        const json = JSON.stringify(value);
        const id = `${r.actor}\0${r.key}`;
        if (last.get(id) === json) delete delta[r.key];
        else delta[r.key] = value;
        last.set(id, json);
      }
      if (Object.keys(delta).length) snap.delta = delta;
      else delete snap.delta;
    }
    for (const r of rules) if (snap.removed?.includes(r.key)) last.delete(`${r.actor}\0${r.key}`);
    return { ...t, record: snap, key: canonical(snap) };
  });
}

/** A snapshot of a restated actor with its value as today's, its context followed through each snapshot (a whole
 * context, or a change to the previous one) in `contexts`. */
function stateAsToday(t: Traced, snap: Snap, contexts: Map<string, Record<string, unknown>>): Traced {
  if (!RESTATED.some((r) => r.actor === snap.id)) return t;
  const whole =
    snap.context && typeof snap.context === "object" ? (snap.context as Record<string, unknown>) : undefined;
  const context = { ...(whole ?? contexts.get(snap.id)), ...snap.delta };
  for (const k of snap.removed ?? []) delete context[k];
  contexts.set(snap.id, context);
  const value = valueAsToday(snap.id, snap.value, context);
  if (value === snap.value) return t;
  const record: Snap = { ...(t.record as Snap), value };
  return { ...t, record, key: canonical(record) };
}

/** A snapshot whose context (whole, or its change) holds a replaced input key, with today's value. */
function snapAsToday(t: Traced, snap: Snap): Traced {
  const context = snap.context && typeof snap.context === "object" ? inputAsToday(snap.id, snap.context) : snap.context;
  const delta = snap.delta ? (inputAsToday(snap.id, snap.delta) as Snap["delta"]) : snap.delta;
  if (context === snap.context && delta === snap.delta) return t;
  const record: Snap = { ...snap, ...(context === undefined ? {} : { context }), ...(delta ? { delta } : {}) };
  return { ...t, record, key: canonical(record) };
}

interface Persisted {
  value?: unknown;
  context?: Record<string, unknown>;
  children?: Record<string, { snapshot?: Persisted } | undefined>;
}

/** A checkpoint's persisted supervisor snapshot without the retired fields and in today's state, and its
 * children's contexts with today's values of replaced inputs, so the restored machines start as today's would have. */
export function checkpointWithoutRetired(snapshot: unknown): unknown {
  const s = snapshot as Persisted | undefined;
  if (!s?.context) return snapshot;
  const value = valueAsToday("supervisor", s.value, s.context);
  const context = { ...s.context };
  for (const r of RETIRED)
    if (r.actor === "supervisor" && r.key in context) {
      if (r.without) context[r.key] = r.without(context[r.key]);
      else delete context[r.key];
    }
  // Spares alive at an older checkpoint were the supervisor's children; today they are the pool's, which such a
  // checkpoint does not hold: they are not restored (a later fact of theirs makes the replay say so).
  const kept = s.children && Object.fromEntries(Object.entries(s.children).filter(([id]) => !isSpareRunner(id)));
  return {
    ...s,
    ...(value === s.value ? {} : { value }),
    context,
    ...(kept ? { children: childrenAsToday(kept) } : {}),
  };
}

function childrenAsToday(children: NonNullable<Persisted["children"]>): Persisted["children"] {
  const out: NonNullable<Persisted["children"]> = {};
  for (const [id, child] of Object.entries(children)) {
    const snap = child?.snapshot;
    if (!snap) {
      out[id] = child;
      continue;
    }
    const context = snap.context ? (inputAsToday(id, snap.context) as Record<string, unknown>) : snap.context;
    const nested = snap.children ? childrenAsToday(snap.children) : snap.children;
    out[id] = {
      ...child,
      snapshot: { ...snap, ...(context ? { context } : {}), ...(nested ? { children: nested } : {}) },
    };
  }
  return out;
}

// ---- moved actors ----

/** Whether an actor name is the spare pool's or one of its spares' (`spare:<n>`, `spare:<n>/runner`). */
const ofSpares = (name: string | undefined) =>
  name !== undefined && (name === SPARE_POOL_ID || isSpareRunner(name.split("/")[0]!));

/** A log recorded while the spare runners were the supervisor's own children (before 2026-12-03). */
const sparesUnderSupervisor = (expected: Traced[]) =>
  expected.some((t) => t.record.k === "actor" && isSpareRunner(t.record.id) && t.record.parent === "supervisor");

/** The spare-runner subsystem's records apart from the rest, in their own order (`spares`), with the supervisor's
 * side of them as today's: a spare's parent, its commands' sender and its end's receiver are the pool. `today`: the
 * pool's own records (created, told of runs and shutdown, its snapshots), which older logs cannot hold, are left out.
 * Older: the supervisor's snapshots after a spare's end that changed nothing today's supervisor keeps are left out. */
function splitSpares(trace: Traced[], today: boolean): { rest: Traced[]; spares: Traced[] } {
  const rest: Traced[] = [];
  const spares: Traced[] = [];
  const moved = (name: string | undefined) => (name === "supervisor" ? SPARE_POOL_ID : name);
  const redo = (t: Traced, record: TraceRecord): Traced => ({ ...t, record, key: canonical(record) });
  for (const t of trace) {
    const r = t.record;
    if (r.k === "actor" && ofSpares(r.id)) {
      if (r.id === SPARE_POOL_ID) continue;
      spares.push(today ? t : redo(t, { ...r, ...(r.parent ? { parent: moved(r.parent) } : {}) }));
    } else if (r.k === "event" && (ofSpares(r.to) || ofSpares(r.from))) {
      if (r.to === SPARE_POOL_ID && !ofSpares(r.from)) continue;
      spares.push(today ? t : redo(t, { ...r, to: moved(r.to)!, ...(r.from ? { from: moved(r.from) } : {}) }));
    } else if (r.k === "snap" && ofSpares(r.id)) {
      if (r.id !== SPARE_POOL_ID) spares.push(t);
    } else if (r.k === "snap" && r.id === "supervisor") {
      const ended = r.cause.startsWith("xstate.done.actor.") && ofSpares(r.cause.slice("xstate.done.actor.".length));
      if (!today && ended && !r.delta && !r.removed && !r.context) continue;
      const children = r.children?.filter((c) => !ofSpares(c));
      const { children: _c, ...record } = r;
      rest.push(redo(t, children?.length ? { ...record, children } : record));
    } else rest.push(t);
  }
  return { rest, spares };
}

/** The recorded and replayed traces as they are compared: as they are, unless the log was recorded while the spare
 * runners were the supervisor's children; then each with the spare runners' records after the rest, read as today's
 * pool would have recorded them (splitSpares): the order of the two among each other differs (the pool starts a
 * replacement before the run that claimed a spare starts; the supervisor started it after), each one's does not. */
export function comparedAsToday(expected: Traced[], actual: Traced[]): { expected: Traced[]; actual: Traced[] } {
  if (!sparesUnderSupervisor(expected)) return { expected, actual };
  const e = splitSpares(expected, false);
  const a = splitSpares(actual, true);
  return { expected: [...e.rest, ...e.spares], actual: [...a.rest, ...a.spares] };
}
