// Deterministic replay of a recorded event log: the log's inputs go into fresh machines, the runner actor is a
// stub (`.provide()`) through which the recorded runner facts are re-delivered, and a manual clock fires timers by
// their recorded number. The replayed trace is then compared with the recorded one, record by record; the first
// difference is reported with its actor, event, expected and actual state.
import { readFileSync } from "node:fs";
import {
  createActor,
  fromCallback,
  type AnyActorRef,
  type EventObject,
  type InspectionEvent,
  type Snapshot,
} from "xstate";
import type { SupervisorInput } from "../machines/supervisor.ts";
import type { Clock } from "./observe.ts";
import { supervisorWith, type BoundaryActors } from "../machines/system.ts";
import {
  actorName,
  BOUNDARY_IDS,
  BoundaryTracker,
  canonical,
  INPUT_KINDS,
  LOG_FORMAT,
  LOG_VERSION,
  READABLE_VERSIONS,
  TraceEncoder,
  TRACE_KINDS,
  type InputRecord,
  type LogRecord,
  type TraceRecord,
} from "./trace.ts";
import { LogDecoder } from "./log-codec.ts";
import { firstDifference, summarize, type ReplayReport, type Traced } from "./divergence.ts";
import { asRecordedToday, checkpointWithoutRetired, comparedAsToday } from "./retired.ts";

export { formatReport, summarize, type Divergence, type ReplayReport } from "./divergence.ts";

export interface LogLine {
  /** 1-based line number in the file. */
  line: number;
  record: LogRecord;
}

/** The log's records, whole: a v3 record pointing at a value the log already holds gets that value
 * (record/log-codec.ts), so every reader sees the records a v2 log would hold. */
export function parseLog(text: string): { lines: LogLine[]; error?: string } {
  const lines: LogLine[] = [];
  const decoder = new LogDecoder();
  const raw = text.split("\n");
  for (let i = 0; i < raw.length; i++) {
    const s = raw[i].trim();
    if (!s) continue;
    let record: unknown;
    try {
      record = JSON.parse(s);
    } catch {
      // A process killed mid-write leaves a partial last line: tolerated there, an error anywhere else.
      if (raw.slice(i + 1).some((r) => r.trim())) return { lines, error: `line ${i + 1} is not JSON` };
      continue;
    }
    const problem = malformed(record);
    if (problem !== undefined) return { lines, error: `line ${i + 1} is not a log record${problem && `: ${problem}`}` };
    const whole = decoder.decode(record as Record<string, unknown>);
    if (typeof whole === "string") return { lines, error: `line ${i + 1} is not a log record: ${whole}` };
    lines.push({ line: i + 1, record: whole as LogRecord });
  }
  return { lines };
}

/** What is wrong with a parsed line, for the records replay reads (inputs): "" when it is no object at all, undefined
 * when it can be replayed. */
function malformed(record: unknown): string | undefined {
  if (typeof record !== "object" || record === null || Array.isArray(record)) return "";
  const r = record as Record<string, unknown>;
  if (typeof r.k !== "string") return "no kind (`k`)";
  if (r.k !== "cmd" && r.k !== "fact") return undefined;
  const event = r.event as Record<string, unknown> | undefined;
  if (typeof event !== "object" || event === null || typeof event.type !== "string")
    return `a ${r.k} record without an event (an object with a string \`type\`)`;
  if (r.k === "fact" && (typeof r.from !== "string" || typeof r.to !== "string"))
    return "a fact record without its sender and receiver (`from`, `to`)";
  if (r.k === "cmd" && r.to !== undefined && typeof r.to !== "string")
    return "a command record whose `to` is no string";
  return undefined;
}

/** A clock that fires nothing by itself: `fire(n)` runs the n-th timer armed, as the recording says. */
export class ManualClock implements Clock {
  next = 1;
  private readonly pending = new Map<number, () => void>();
  private readonly onTimer: (r: TraceRecord) => void;
  constructor(onTimer: (r: TraceRecord) => void) {
    this.onTimer = onTimer;
  }
  setTimeout(fn: () => void, ms: number): number {
    const n = this.next++;
    this.pending.set(n, fn);
    this.onTimer({ k: "set", n, ms });
    return n;
  }
  clearTimeout(n: number): void {
    if (this.pending.delete(n)) this.onTimer({ k: "clear", n });
  }
  fire(n: number): boolean {
    const fn = this.pending.get(n);
    if (!fn) return false;
    this.pending.delete(n);
    fn();
    return true;
  }
}

/** Delivers a recorded fact to the actor it went to. */
type Deliver = (fact: EventObject, to: string) => void;

/** A boundary actor on replay (runner, installer, tool dispatcher): no process, no effect. It registers, under its
 * own explicit name, a way to deliver the recorded facts where the live actor sent them: to its parent with
 * `sendBack`, or (a session's runner) straight to the run by its system id; facts the live actor sent synchronously
 * while starting or handling an event are sent at that same point. */
function stubBoundary(senders: Map<string, Deliver>, handling: (self: AnyActorRef, deliver: Deliver) => void) {
  return fromCallback<EventObject, unknown>(({ self, sendBack, receive, system }) => {
    const name = actorName(self);
    const parent = self._parent ? actorName(self._parent) : undefined;
    const deliver: Deliver = (fact, to) => {
      if (to === parent) return sendBack(fact);
      const target = system.get(to) as AnyActorRef | undefined;
      if (!target) throw new Error(`no actor ${to} exists to receive ${fact.type} from ${name}`);
      target.send(fact);
    };
    senders.set(name, deliver);
    handling(self, deliver);
    receive(() => {
      // Commands to the boundary appear in the trace as events; what the world did is in the recorded facts.
      handling(self, deliver);
    });
    return () => {
      if (senders.get(name) === deliver) senders.delete(name);
    };
  });
}

export function replayRecords(lines: LogLine[]): ReplayReport {
  const header = lines[0]?.record;
  if (!header || header.k !== "header" || header.format !== LOG_FORMAT) {
    return { identical: false, inputs: 0, trace: 0, error: "not a pi-code-supervisor event log (no header)" };
  }
  if (!READABLE_VERSIONS.includes(header.v)) {
    const which = header.v > LOG_VERSION ? "newer" : "older";
    return {
      identical: false,
      inputs: 0,
      trace: 0,
      error: `log format v${header.v} is ${which} than this replay (v${LOG_VERSION}): it was recorded by other machines`,
    };
  }
  const start = lines.find((l) => l.record.k === "start" || l.record.k === "checkpoint");
  if (!start) return { identical: false, inputs: 0, trace: 0, error: "the log has no start or checkpoint record" };
  const origin = start.record as Extract<LogRecord, { k: "start" | "checkpoint" }>;
  if (origin.k === "checkpoint" && !origin.quiescent) {
    return {
      identical: false,
      inputs: 0,
      trace: 0,
      error:
        "this segment was rotated while timers were pending, so it cannot be replayed exactly; replay the previous segment",
    };
  }

  const inputs: { line: number; record: InputRecord }[] = [];
  const recorded: Traced[] = [];
  for (const { line, record } of lines) {
    if (origin.k === "checkpoint" && line <= start.line) continue;
    if (INPUT_KINDS.has(record.k)) inputs.push({ line, record: record as InputRecord });
    else if (TRACE_KINDS.has(record.k)) {
      const r = record as TraceRecord;
      recorded.push({ record: r, key: canonical(r), line, input: inputs.length - 1 });
    }
  }
  // A log from before a field was retired or an event renamed (record/retired.ts) is compared as today's machines
  // record it.
  const expected = asRecordedToday(recorded);

  const actual: Traced[] = [];
  let recording = origin.k === "start";
  let current = -1;
  const push = (r: TraceRecord) => {
    if (!recording) return;
    // Compared as the recorder wrote it: through JSON.
    const record = JSON.parse(JSON.stringify(r)) as TraceRecord;
    actual.push({ record, key: canonical(record), input: current });
  };
  const senders = new Map<string, Deliver>();
  const clock = new ManualClock(push);
  let encoder = new TraceEncoder();
  const tracker = new BoundaryTracker();
  const inspect = (ev: InspectionEvent) => {
    tracker.observe(ev);
    const r = encoder.encode(ev);
    if (r) push(r);
  };
  // Facts sent inside a boundary actor's start or event handling, per actor name, in recorded order.
  const nested = new Map<string, number[]>();
  inputs.forEach(({ record }, i) => {
    if (record.k === "fact" && record.during !== undefined)
      nested.set(record.from, [...(nested.get(record.from) ?? []), i]);
  });
  const delivered = new Set<number>();
  const stub = stubBoundary(senders, (self, deliver) => {
    const queue = nested.get(actorName(self));
    const n = tracker.during(self);
    while (queue?.length && (inputs[queue[0]].record as { during?: number }).during === n) {
      const i = queue.shift()!;
      const outer = current;
      current = i;
      delivered.add(i);
      const fact = inputs[i].record as { event: EventObject; to: string };
      deliver(fact.event, fact.to);
      current = outer;
    }
  });
  const others = Object.fromEntries(BOUNDARY_IDS.filter((id) => id !== "runner").map((id) => [id, stub]));
  const machine = supervisorWith(stub, others as BoundaryActors);
  let problem: string | undefined;
  try {
    const actor = createActor(machine, {
      id: "supervisor",
      systemId: "supervisor",
      ...(origin.k === "start"
        ? { input: origin.input as SupervisorInput }
        : { input: undefined as never, snapshot: checkpointWithoutRetired(origin.snapshot) as Snapshot<unknown> }),
      inspect,
      clock,
    });
    if (origin.k === "checkpoint") clock.next = origin.nextTimer;
    actor.subscribe({ error: (e) => (problem ??= `the supervisor errored: ${String(e)}`) });
    actor.start();
    // A checkpoint starts a fresh encoder in the recorder too (the first snapshots after it carry full contexts),
    // and boundary actors count received events from there.
    if (!recording) {
      encoder = new TraceEncoder();
      tracker.reset();
    }
    recording = true;
    for (let i = 0; i < inputs.length && !problem; i++) {
      current = i;
      const { record } = inputs[i];
      if (record.k === "fact" && record.during !== undefined) {
        // Delivered by its stub while handling the recorded event; if that never happened, the traces differ.
        if (!delivered.has(i)) problem = `${record.from} never handled its event #${record.during} in replay`;
      } else if (record.k === "cmd") {
        const to = record.to === undefined ? actor : (actor.system.get(record.to) as AnyActorRef | undefined);
        if (!to) problem = `no actor ${record.to} exists to receive ${record.event.type}`;
        else to.send(record.event);
      } else if (record.k === "fact") {
        const deliver = senders.get(record.from);
        if (!deliver) problem = `no actor ${record.from} exists to deliver ${record.event.type}`;
        else deliver(record.event, record.to);
      } else if (record.k === "stop") actor.stop();
      else if (!clock.fire(record.n)) problem = `timer #${record.n} is not pending`;
      if (problem) problem = `at line ${inputs[i].line} (${summarize(record)}): ${problem}`;
    }
    // A log that ends without the host stopping the supervisor (a rotated segment, a live log): stop unobserved.
    recording = false;
    actor.stop();
  } catch (e) {
    problem = `replay threw: ${e instanceof Error ? e.message : String(e)}`;
  }

  const compared = comparedAsToday(expected, actual);
  const divergence = firstDifference(compared.expected, compared.actual, inputs);
  if (divergence) return { identical: false, inputs: inputs.length, trace: expected.length, divergence };
  if (problem) {
    return {
      identical: false,
      inputs: inputs.length,
      trace: expected.length,
      divergence: { index: actual.length, message: problem },
    };
  }
  return { identical: true, inputs: inputs.length, trace: expected.length };
}

export function replayFile(path: string): ReplayReport {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    return { identical: false, inputs: 0, trace: 0, error: `cannot read ${path}: ${(e as Error).message}` };
  }
  const parsed = parseLog(text);
  if (parsed.error) return { identical: false, inputs: 0, trace: 0, error: parsed.error };
  return replayRecords(parsed.lines);
}
