// One host case in a long loop, for a CPU profile or an A/B of one change: `source scripts/env.sh && N=4000 node
// [--cpu-prof --cpu-prof-interval 100] bench/host-loop.ts [case] [rec]`. The case is one of bench/host-cost.ts's
// (`sessionRun` by default: a warm session run on the scripted port, no processes); `rec` builds the host as the
// extension does, with the event log on. Prints CPU and wall clock per call over N calls after 200 warm-up calls:
// run it alternately with a checkout from before the change, as host-cost.ts's figures are read.
import { benchHost, hostCases, measure } from "./host-cost.ts";

const which = process.argv[2] ?? "sessionRun";
const b = benchHost({ recorder: process.argv[3] === "rec" });
const cases = hostCases(b) as Record<string, () => Promise<unknown>>;
const run = cases[which];
if (!run) {
  await b.close();
  console.error(`unknown case ${which}: one of ${Object.keys(cases).join(", ")}`);
  process.exit(2);
}
for (let i = 0; i < 200; i++) await run();
const c = await measure(Number(process.env.N ?? 3000), run);
await b.settled();
console.log(
  `${which}${process.argv[3] === "rec" ? " (event log on)" : ""}: cpu ${c.cpuUs.toFixed(0)} us, wall ${c.wallUs.toFixed(0)} us a call`,
);
await b.close();
