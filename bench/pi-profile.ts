// One Pi case under the CPU profiler, on demand: `node --cpu-prof --cpu-prof-dir=/tmp/prof bench/pi-profile.ts
// [session|fresh|mib|interrupt|python|python3|evalpy|evalpy3|evaljs|exec|stdin|nested] [n] [gap ms]`. Times each call as bench/pi.ts does (journal and event log on, in
// scratch places) and prints the p50, so a profile and its figure come from the same run. `interrupt` prints the
// overrun past its 1 s timeout; `nested` makes n nested calls of a no-op Pi tool from one run, timed in Python. Each
// case also prints Node's CPU time per call (the whole process: Pi, the extension, the supervisor, the recorder).
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startPi } from "../test/helpers/pi-session.ts";
import { noopExtension, spans, spansFresh, warmCalls } from "./pi-spans.ts";
import { stats } from "./run.ts";

const [kind = "session", count = "400", gap = "0"] = process.argv.slice(2);
/** Model think time before each timed call, in ms (the third argument): the after-a-gap cases of bench/pi.ts. */
const gapMs = Number(gap);
/** Node's CPU time (user + system) since `from`, in ms: less at the mercy of a loaded machine than wall time. */
const cpuMs = (from: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(from);
  return (d.user + d.system) / 1000;
};
const n = Number(count);
const scratch = mkdtempSync(join(tmpdir(), "pcs-bench-prof-"));
process.env.PI_CODE_EXECUTION_JOURNAL ??= join(scratch, "journal.sqlite");
process.env.PI_CODE_EXECUTION_LOG_DIR ??= join(scratch, "logs");
process.env.PI_CODE_EXECUTION_TOOLS ??= "code_execution,python,eval,exec";

const pi = await startPi({ extensionPaths: [resolve(import.meta.dirname, "..")], extensionFactories: [noopExtension] });
// PCS_PROFILE_SPANS=file: each call's span on the profiler's clock (monotonic microseconds), to keep only the samples
// inside the tool calls when reading the profile.
const windows: [number, number][] = [];
const open = new Map<string, number>();
const us = () => Number(process.hrtime.bigint() / 1000n);
pi.session.subscribe((e: any) => {
  if (e.type === "tool_execution_start") open.set(e.toolCallId, us());
  if (e.type === "tool_execution_end") windows.push([open.get(e.toolCallId)!, us()]);
});
try {
  const nested = (k: number) =>
    [
      "import time, json",
      "ts = []",
      `for _ in range(${k}):`,
      "    t = time.perf_counter(); await bench_noop(); ts.append((time.perf_counter() - t) * 1000)",
      "ts = sorted(ts[20:])",
      "print(json.dumps([len(ts), ts[len(ts) // 2], ts[len(ts) * 9 // 10]]))",
    ].join("\n");
  const cases: Record<string, [string, Record<string, unknown>]> = { ...warmCalls };
  if (kind === "nested") {
    await spans(pi, [["code_execution", { code: nested(50), session: "p" }]]);
    const cpu0 = process.cpuUsage();
    const run = await spans(pi, [["code_execution", { code: nested(n), session: "p", timeout: 600 }]]);
    const cpu = cpuMs(cpu0) / n;
    const text = run.results[0]!.content.map((c) => c.text ?? "").join("");
    const [count, p50, p90] = JSON.parse(text.trim().split("\n").at(-1)!) as number[];
    console.log(
      `nested n=${count} p50 ${p50!.toFixed(3)} ms p90 ${p90!.toFixed(3)} ms (timed in Python); Node CPU ${cpu.toFixed(3)} ms a call`,
    );
  } else {
    if (kind === "stdin") {
      // `write_stdin` of a line to a live `cat`, until its echo (bench/pi-peers.ts's case).
      const [r] = (await spans(pi, [["exec_command", { cmd: "cat", yield_time_ms: 250 }]])).results;
      cases.stdin = ["write_stdin", { session_id: r!.details?.session_id, chars: "x\n" }];
    }
    const call = cases[kind];
    if (!call) throw new Error(`unknown case ${kind}; one of ${[...Object.keys(cases), "nested"].join(", ")}`);
    const warm = kind === "interrupt" ? 2 : 20;
    await spans(
      pi,
      Array.from({ length: warm }, () => call),
    );
    // In batches from an empty transcript (bench/pi-spans.ts `spansFresh`).
    const cpu0 = process.cpuUsage();
    const { ms } = await spansFresh(
      pi,
      Array.from({ length: n }, () => call),
      gapMs,
    );
    const cpu = cpuMs(cpu0) / n;
    const st = stats(kind === "interrupt" ? ms.map((m) => m - 1000) : ms);
    console.log(
      `${kind} n=${st.n} p50 ${st.p50.toFixed(3)} ms p90 ${st.p90.toFixed(3)} ms; Node CPU ${cpu.toFixed(3)} ms a call`,
    );
  }
} finally {
  await pi.dispose();
  if (process.env.PCS_PROFILE_SPANS) writeFileSync(process.env.PCS_PROFILE_SPANS, JSON.stringify(windows));
}
