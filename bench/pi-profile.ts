// One Pi case under the CPU profiler, on demand: `node --cpu-prof --cpu-prof-dir=/tmp/prof bench/pi-profile.ts
// [session|fresh|mib] [n]`. Times each call as bench/pi.ts does and prints the p50, so a profile and its figure come
// from the same run.
import { resolve } from "node:path";
import { startPi } from "../test/helpers/pi-session.ts";
import { spans } from "./pi-spans.ts";
import { stats } from "./run.ts";

const [kind = "session", count = "400"] = process.argv.slice(2);
const n = Number(count);
const pi = await startPi({ extensionPaths: [resolve(import.meta.dirname, "..")] });
try {
  const cases: Record<string, Record<string, unknown>> = {
    session: { code: "x = 1", session: "p" },
    fresh: { code: "pass" },
    mib: { code: "import sys\nsys.stdout.buffer.write(b'x' * (1 << 20))\nsys.stdout.flush()", session: "p" },
  };
  const args = cases[kind];
  if (!args) throw new Error(`unknown case ${kind}; one of ${Object.keys(cases).join(", ")}`);
  await spans(pi, Array.from({ length: 20 }, () => ["code_execution", args] as [string, Record<string, unknown>]));
  const run = await spans(pi, Array.from({ length: n }, () => ["code_execution", args] as [string, Record<string, unknown>]));
  const st = stats(run.ms);
  console.log(`${kind} n=${st.n} p50 ${st.p50.toFixed(3)} ms p90 ${st.p90.toFixed(3)} ms`);
} finally {
  await pi.dispose();
}
