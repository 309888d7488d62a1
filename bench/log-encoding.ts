// The event log's encoding alone, per warm call: `source scripts/env.sh && node bench/log-encoding.ts [--case
// sessionRun|pyCell|evalPyCell|jsCell|nestedRun] [--runs 50] [--batches 40] [--base <another checkout>]`. What the
// recorder queued for batches of calls on the bench host (bench/host-cost.ts, event log on) is captured, then each
// batch is encoded once as the recorder encodes it (record/trace.ts): CPU per call and bytes per call, min, p25 and
// median over the batches. Timing encoding alone, batch by batch, is what stays readable on a loaded machine, where
// bench/host-cost.ts's "log on" minus "alone" moves by hundreds of microseconds between runs. `--base`: the same
// batches are also encoded by another checkout's record/trace.ts (e.g. a copy of main), alternating with this one.
import "../test/helpers/agent-dir.ts";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import type { InspectionEvent } from "xstate";
import { benchHost, hostCases } from "./host-cost.ts";
import { Recorder } from "../record/recorder.ts";

const { values } = parseArgs({
  options: {
    case: { type: "string", default: "sessionRun" },
    runs: { type: "string", default: "50" },
    batches: { type: "string", default: "40" },
    base: { type: "string" },
  },
});
const runs = Number(values.runs);
const batches = Number(values.batches);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(batches) || batches < 2)
  throw new Error("--runs must be a positive integer and --batches at least 2");

type Queued = { ev: InspectionEvent; at: number } | { record: { k: string; at?: number } };
/** An encoder as a trace module makes it: older ones have no `input` and write events with the module's `eventLine`. */
interface TraceModule {
  TraceEncoder: new (refs?: boolean) => {
    encode(ev: InspectionEvent): object | undefined;
    eventLine?(ev: InspectionEvent, at: number): string;
    input?(record: object): void;
  };
  eventLine(ev: InspectionEvent, at: number): string;
}

// Capture: what the recorder queued, batch by batch (its queue, as it starts encoding it).
const captured: Queued[] = [];
const proto = Recorder.prototype as unknown as { encodeQueued(budget?: number): boolean; queue: Queued[] };
const encodeQueued = proto.encodeQueued;
let capturing = false;
proto.encodeQueued = function (this: typeof proto, budget?: number) {
  if (capturing) captured.push(...this.queue);
  return encodeQueued.call(this, budget);
};
const b = benchHost({ recorder: true });
const cases = hostCases(b) as unknown as Record<string, () => Promise<unknown>>;
const call = cases[values.case!];
if (!call) throw new Error(`--case: one of ${Object.keys(cases).join(", ")}`);
for (let i = 0; i < 50; i++) await call();
await b.settled();
const captures: Queued[][] = [];
for (let k = 0; k < batches; k++) {
  capturing = true;
  for (let i = 0; i < runs; i++) await call();
  await b.settled();
  capturing = false;
  captures.push(captured.splice(0));
}
await b.close();

/** Encodes one batch as the recorder does (its lines, without writing them): microseconds and bytes per call. */
function encodeWith(m: TraceModule, batch: Queued[]): { us: number; bytes: number } {
  const t0 = performance.now();
  const encoder = new m.TraceEncoder(true);
  let bytes = 0;
  for (const q of batch) {
    let line: string | undefined;
    if ("record" in q) {
      encoder.input?.(q.record);
      line = JSON.stringify(q.record);
    } else if (q.ev.type === "@xstate.event")
      line = encoder.eventLine ? encoder.eventLine(q.ev, q.at) : m.eventLine(q.ev, q.at);
    else {
      const r = encoder.encode(q.ev);
      if (r) line = JSON.stringify({ ...r, at: q.at });
    }
    if (line !== undefined) bytes += Buffer.byteLength(line) + 1;
  }
  return { us: ((performance.now() - t0) * 1000) / runs, bytes: bytes / runs };
}

const variants: [string, TraceModule][] = [
  ["this tree", (await import("../record/trace.ts")) as unknown as TraceModule],
];
if (values.base) {
  const path = resolve(values.base, "record/trace.ts");
  variants.push([`base (${values.base})`, (await import(path)) as unknown as TraceModule]);
}
const figures = variants.map(() => ({ us: [] as number[], bytes: 0 }));
// Each batch is encoded once by each variant (a module's cache of event JSON sees each event once, as a recorder
// does), in alternating order.
captures.forEach((batch, i) => {
  const order = i % 2 ? [...variants.keys()].reverse() : [...variants.keys()];
  for (const v of order) {
    const r = encodeWith(variants[v]![1], batch);
    figures[v]!.us.push(r.us);
    figures[v]!.bytes = r.bytes;
  }
});
const at = (xs: number[], q: number) => [...xs].sort((x, y) => x - y)[Math.floor(q * (xs.length - 1))]!;
console.log(
  `${values.case}: ${(captures[0]!.length / runs).toFixed(1)} records and inspection events queued per call; ${batches} batches of ${runs} calls`,
);
variants.forEach(([name], v) => {
  const f = figures[v]!;
  console.log(
    `  ${name.padEnd(28)} encoding cpu per call: min ${at(f.us, 0).toFixed(1)} us, p25 ${at(f.us, 0.25).toFixed(1)}, median ${at(f.us, 0.5).toFixed(1)}; ${f.bytes.toFixed(0)} bytes per call`,
  );
});
