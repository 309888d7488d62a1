// Context fields the machines once kept and no longer do. A log recorded before such a field was retired carries it
// in its snapshots; today's machines, replaying the same inputs, do not. Replay reads an older log with those fields
// taken out, and a snapshot whose only change was to one of them then shows no change to that key, as today's
// machines record it: a log from before a deliberate removal still replays identical, and any other difference
// still diverges. A field is retired here when a machine stops keeping it, with the change that did so.
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

type Snap = Extract<TraceRecord, { k: "snap" }>;

/** The recorded trace as today's machines would record it: retired fields out of every snapshot of their actor,
 * and a key whose value is then what it was before out of that snapshot's `delta`. */
export function withoutRetired(expected: Traced[]): Traced[] {
  const last = new Map<string, string>(); // `${actor}\0${key}` -> the value's JSON after the actor's last snapshot
  return expected.map((t) => {
    const recorded = t.record;
    if (recorded.k !== "snap") return t;
    const rules = RETIRED.filter((r) => r.actor === recorded.id);
    if (rules.length === 0) return t;
    const snap: Snap = { ...recorded };
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

/** A checkpoint's persisted supervisor snapshot without the retired fields, so the restored machine starts as
 * today's would have. */
export function checkpointWithoutRetired(snapshot: unknown): unknown {
  const s = snapshot as { context?: Record<string, unknown> } | undefined;
  if (!s?.context) return snapshot;
  const context = { ...s.context };
  for (const r of RETIRED) if (r.actor === "supervisor" && r.key in context) context[r.key] = r.without(context[r.key]);
  return { ...s, context };
}
