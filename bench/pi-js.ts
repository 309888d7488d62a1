// eval's JavaScript cells through a real Pi session (faux model), run on demand: `source scripts/env.sh && node
// bench/pi-js.ts [--quick]`, or with the other Pi figures in one session: `node bench/pi.ts --with js`. Each figure
// is Pi's own view of a tool call, `tool_execution_start` to `tool_execution_end` (bench/pi-spans.ts): a warm `eval`
// call with one trivial js cell (issue 15's goal: at most 0.5 ms p50), and the first js cell of a Pi session (the
// runtime's start) beside a bare `node -e 0` of the same Node in the same run (goal: at most 1.5x). The runner
// itself, without Pi: bench/js.ts. Take figures on a quiet machine only.
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";
import type { PiHarness } from "../test/helpers/pi-session.ts";
import { benchInPi, spans } from "./pi-spans.ts";
import { line } from "./run.ts";

const js = (code: string) => ({ cells: [{ language: "js", code }] });
const times = async (pi: PiHarness, n: number) =>
  (
    await spans(
      pi,
      Array.from({ length: n }, () => ["eval", js("1 + 1")] as [string, Record<string, unknown>]),
    )
  ).ms;

async function nodeStart(): Promise<number> {
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const p = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
    p.once("exit", () => resolve());
    p.once("error", reject);
  });
  return performance.now() - t0;
}

/** The js cases on a Pi session that has the `eval` tool. A first cell is one with `reset: true`: a new runtime. */
export async function jsCases(pi: PiHarness, { quick }: { quick: boolean }) {
  const N = quick ? 40 : 300;
  const bare: number[] = [];
  const first: number[] = [];
  for (let i = 0; i < (quick ? 5 : 20); i++) {
    bare.push(await nodeStart());
    first.push(...(await spans(pi, [["eval", { cells: [{ language: "js", code: "1", reset: true }] }]])).ms);
  }
  const b = line("baseline: node -e 0", bare);
  line("eval: first js cell, runtime start (goal 1.5x)", first, { name: "node -e 0", p50: b.p50 });
  await times(pi, 20);
  line("eval: one trivial js cell, warm (goal 0.5 ms)", await times(pi, N));
}

if (import.meta.main) await benchInPi("eval", jsCases);
