// What replay reports: whether a replayed trace equals the recorded one, and if not, the first difference as a
// person reads it (the input after which it happened, the actor, the event, the expected and actual states).
import { stateLabel, type InputRecord, type TraceRecord } from "./trace.ts";

export interface Divergence {
  /** Position in the trace (0-based) and the log line of the expected record, if any. */
  index: number;
  line?: number;
  /** The input after which the traces differ (undefined: during start-up). */
  input?: { line: number; summary: string };
  actor?: string;
  event?: string;
  expected?: TraceRecord;
  actual?: TraceRecord;
  message: string;
}

export interface ReplayReport {
  identical: boolean;
  inputs: number;
  trace: number;
  divergence?: Divergence;
  /** The log could not be replayed at all (unknown format, no start, corrupt line). */
  error?: string;
}

export interface Traced {
  record: TraceRecord;
  key: string;
  line?: number;
  input?: number;
}

/** One input, as a person reads it. */
export function summarize(record: InputRecord): string {
  switch (record.k) {
    case "cmd": {
      const e = record.event as { type: string; runId?: string; session?: string; name?: string };
      const target = e.session ? ` session ${e.session}` : e.name ? ` ${e.name}` : "";
      return `command ${e.type}${e.runId ? ` run:${e.runId}` : ""}${target}${record.to ? ` -> ${record.to}` : ""}`;
    }
    case "fact":
      return `fact ${record.event.type} ${record.from} -> ${record.to}`;
    case "timer":
      return `timer #${record.n} fired`;
    case "stop":
      return "supervisor stopped";
  }
}

function describe(r: TraceRecord | undefined): string {
  if (!r) return "nothing";
  switch (r.k) {
    case "actor":
      return `actor ${r.id} created`;
    case "event":
      return `event ${(r.event as { type?: string })?.type} to ${r.to}${r.from ? ` from ${r.from}` : ""}`;
    case "snap":
      return `${r.id} in state "${stateLabel(r.value) || r.status}" (${r.status}) after ${r.cause}`;
    case "set":
      return `timer #${r.n} armed for ${r.ms} ms`;
    case "clear":
      return `timer #${r.n} cancelled`;
  }
}

function actorOf(r: TraceRecord | undefined): string | undefined {
  if (!r) return undefined;
  return r.k === "actor" || r.k === "snap" ? r.id : r.k === "event" ? r.to : undefined;
}

function eventOf(r: TraceRecord | undefined): string | undefined {
  if (!r) return undefined;
  return r.k === "snap" ? r.cause : r.k === "event" ? (r.event as { type?: string })?.type : undefined;
}

export function firstDifference(
  expected: Traced[],
  actual: Traced[],
  inputs: { line: number; record: InputRecord }[],
): Divergence | undefined {
  const n = Math.max(expected.length, actual.length);
  for (let i = 0; i < n; i++) {
    const e = expected[i];
    const a = actual[i];
    if (e && a && e.key === a.key) continue;
    const at = e?.input ?? a?.input ?? -1;
    const input = at >= 0 ? { line: inputs[at].line, summary: summarize(inputs[at].record) } : undefined;
    const actor = actorOf(e?.record) ?? actorOf(a?.record);
    const event = eventOf(e?.record) ?? eventOf(a?.record);
    const where = input ? `after input at line ${input.line} (${input.summary})` : "during start-up";
    const sameSubject = e && a && e.record.k === a.record.k && actorOf(e.record) === actorOf(a.record);
    const detail =
      sameSubject && e.record.k === "snap" && a.record.k === "snap"
        ? `${a.record.id} on ${e.record.cause}: expected state "${stateLabel(e.record.value) || e.record.status}" (${e.record.status}), actual "${stateLabel(a.record.value) || a.record.status}" (${a.record.status})` +
          (stateLabel(e.record.value) === stateLabel(a.record.value) && e.record.status === a.record.status
            ? " (same state, different context or children)"
            : "")
        : `expected ${describe(e?.record)}, actual ${describe(a?.record)}`;
    return {
      index: i,
      ...(e?.line !== undefined ? { line: e.line } : {}),
      ...(input ? { input } : {}),
      ...(actor ? { actor } : {}),
      ...(event ? { event } : {}),
      ...(e ? { expected: e.record } : {}),
      ...(a ? { actual: a.record } : {}),
      message: `first divergence at trace record ${i + 1}${e?.line ? ` (log line ${e.line})` : ""}, ${where}: ${detail}`,
    };
  }
  return undefined;
}

/** The report as the CLI prints it. */
export function formatReport(report: ReplayReport, verbose = false): string {
  if (report.error) return `error: ${report.error}`;
  if (report.identical) return `identical (${report.inputs} inputs, ${report.trace} trace records)`;
  const d = report.divergence!;
  const out = [d.message];
  if (d.actor) out.push(`  actor:    ${d.actor}`);
  if (d.event) out.push(`  event:    ${d.event}`);
  out.push(`  expected: ${d.expected ? describe(d.expected) : "nothing (the replay did more)"}`);
  out.push(`  actual:   ${d.actual ? describe(d.actual) : "nothing (the replay stopped short)"}`);
  if (verbose) {
    out.push(`  expected record: ${d.expected ? JSON.stringify(d.expected) : "-"}`);
    out.push(`  actual record:   ${d.actual ? JSON.stringify(d.actual) : "-"}`);
  }
  return out.join("\n");
}
