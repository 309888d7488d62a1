// What the machines once recorded and no longer do: context fields they stopped keeping, events between actors
// that were renamed, and inputs a machine gives its children from its own constants that changed. A log recorded
// before such a change carries the old; today's machines, replaying the same inputs, record the new. Replay reads an
// older log as today's machines would have recorded it (a retired field taken out, and a snapshot whose only change
// was to it then showing no change to that key; a renamed event under its new name; a child's start input as today's
// parent gives it), so a log from before a deliberate change still replays identical, and any other difference still
// diverges. An entry is added here with the change that made it.
import { isActor } from "../machines/actor-ids.ts";
import { canonical, type TraceRecord } from "./trace.ts";
import type { Traced } from "./divergence.ts";

interface Retired {
  /** The actor whose context held it. */
  actor: string;
  /** The top-level context key it lived under. */
  key: string;
  /** That key's value without the retired field. */
  without: (value: unknown) => unknown;
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
  return expected.map((t) => {
    const recorded = t.record;
    if (recorded.k === "event") return eventAsToday(t, recorded);
    if (recorded.k !== "snap") return t;
    const cause = renamed(recorded.cause, [recorded.id]);
    if (cause !== recorded.cause) {
      const record: Snap = { ...recorded, cause };
      t = { ...t, record, key: canonical(record) };
    }
    t = snapAsToday(t, t.record as Snap);
    const rules = RETIRED.filter((r) => r.actor === recorded.id);
    if (rules.length === 0) return t;
    const snap: Snap = { ...(t.record as Snap) };
    if (snap.context && typeof snap.context === "object") {
      const context = { ...(snap.context as Record<string, unknown>) };
      for (const r of rules)
        if (r.key in context) {
          context[r.key] = r.without(context[r.key]);
          last.set(`${r.actor}\0${r.key}`, JSON.stringify(context[r.key]));
        }
      snap.context = context;
    }
    if (snap.delta) {
      const delta = { ...snap.delta };
      for (const r of rules) {
        if (!(r.key in delta)) continue;
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

/** A snapshot whose context (whole, or its change) holds a replaced input key, with today's value. */
function snapAsToday(t: Traced, snap: Snap): Traced {
  const context = snap.context && typeof snap.context === "object" ? inputAsToday(snap.id, snap.context) : snap.context;
  const delta = snap.delta ? (inputAsToday(snap.id, snap.delta) as Snap["delta"]) : snap.delta;
  if (context === snap.context && delta === snap.delta) return t;
  const record: Snap = { ...snap, ...(context === undefined ? {} : { context }), ...(delta ? { delta } : {}) };
  return { ...t, record, key: canonical(record) };
}

interface Persisted {
  context?: Record<string, unknown>;
  children?: Record<string, { snapshot?: Persisted } | undefined>;
}

/** A checkpoint's persisted supervisor snapshot without the retired fields, and its children's contexts with
 * today's values of replaced inputs, so the restored machines start as today's would have. */
export function checkpointWithoutRetired(snapshot: unknown): unknown {
  const s = snapshot as Persisted | undefined;
  if (!s?.context) return snapshot;
  const context = { ...s.context };
  for (const r of RETIRED) if (r.actor === "supervisor" && r.key in context) context[r.key] = r.without(context[r.key]);
  return { ...s, context, ...(s.children ? { children: childrenAsToday(s.children) } : {}) };
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
