// Bytes the host allocates per warm session run, on demand: `source scripts/env.sh && node bench/alloc.ts [n]`. The
// host alone (no Pi), a real Python session, the event log off (`REC=1`: on); V8's sampling heap profiler counts
// every allocation, also those collected since. Allocation is what a run costs the garbage collector, and inside
// Pi's large heap that cost grows with the session (docs/design.md); unlike time, it hardly moves with the load.
import "../test/helpers/agent-dir.ts";
import { Session } from "node:inspector/promises";
import { Observability } from "../host/observability.ts";
import { SupervisorHost } from "../host/host.ts";

const n = Number(process.argv[2] ?? 1000);
const obs = new Observability({ record: process.env.REC ? {} : false });
const host = new SupervisorHost(obs.observe({}));
const cwd = process.cwd();
const run = (code: string) => host.run({ code, cwd, timeoutMs: 10_000, session: "alloc" });
for (let i = 0; i < 100; i++) await run("x = 0");
const inspector = new Session();
inspector.connect();
await inspector.post("HeapProfiler.startSampling", {
  samplingInterval: 1024,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
for (let i = 0; i < n; i++) {
  const r = await run("x += 1");
  if (r.outcome.status !== "success") throw new Error(`run ${i}: ${r.outcome.status} ${r.outcome.message ?? ""}`);
}
const { profile } = await inspector.post("HeapProfiler.stopSampling");
let total = 0;
const walk = (node: { selfSize: number; children: unknown[] }) => {
  total += node.selfSize;
  for (const c of node.children) walk(c as typeof node);
};
walk(profile.head as never);
console.log(
  `allocated per warm session run: ${(total / n / 1024).toFixed(1)} KB (n=${n}, event log ${process.env.REC ? "on" : "off"})`,
);
await host.shutdown();
await obs.shutdown();
process.exit(0);
