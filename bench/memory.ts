// Memory benchmarks, on demand: `bash bench/memory.sh [runs]`.
// 1. Host memory over many runs (children pruned, buffers released): heap and RSS after warm-up vs after N runs.
// 2. An idle session's cost: the Python process's RSS, and what one more idle session adds to the host's heap.
// 3. 64 live sessions: all responsive, warm-run latency with the others idle.
import "../test/helpers/agent-dir.ts";
import { readFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { SupervisorHost } from "../host/host.ts";

const runs = Number(process.argv[2] ?? 10_000);
const cwd = mkdtempSync(join(tmpdir(), "pcs-mem-"));
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc (bench/memory.sh does)");
const mib = (n: number) => `${(n / 2 ** 20).toFixed(2)} MiB`;
const settle = async () => {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 50));
  }
};
const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;

const host = new SupervisorHost();
try {
  for (let i = 0; i < 200; i++) await host.run({ code: "x = 1\nx", cwd, timeoutMs: 10_000, session: "m" });
  await settle();
  const heap0 = process.memoryUsage().heapUsed;
  const rss0 = process.memoryUsage().rss;
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) {
    await host.run({ code: "print('x' * 100)\nx", cwd, timeoutMs: 10_000, session: "m" });
  }
  const secs = (performance.now() - t0) / 1000;
  await settle();
  const heap1 = process.memoryUsage().heapUsed;
  const rss1 = process.memoryUsage().rss;
  const children = host.stats().children;
  console.log(`${runs} session runs in ${secs.toFixed(1)} s (${(runs / secs).toFixed(0)} runs/s)`);
  console.log(`host heap: ${mib(heap0)} -> ${mib(heap1)} (${mib(heap1 - heap0)} over ${runs} runs)`);
  console.log(`host RSS:  ${mib(rss0)} -> ${mib(rss1)}; live children of the supervisor: ${children}`);

  const pid = Number(
    (await host.run({ code: "import os\nos.getpid()", cwd, timeoutMs: 10_000, session: "idle0" })).stdout,
  );
  await settle();
  const before = process.memoryUsage().heapUsed;
  const pids: number[] = [];
  for (let i = 1; i <= 20; i++) {
    pids.push(
      Number((await host.run({ code: "import os\nos.getpid()", cwd, timeoutMs: 10_000, session: `idle${i}` })).stdout),
    );
  }
  await settle();
  const perSession = (process.memoryUsage().heapUsed - before) / 20;
  console.log(
    `idle session: Python RSS ${mib(rssOf(pid))} (goal <= 12 MiB); host heap per idle session ${mib(perSession)} (goal <= 1 MiB)`,
  );

  for (let i = 21; i < 64; i++) await host.run({ code: "0", cwd, timeoutMs: 10_000, session: `idle${i}` });
  const warm: number[] = [];
  for (let k = 0; k < 10; k++) {
    for (let i = 0; i < 64; i++) {
      const t = performance.now();
      const r = await host.run({ code: "1", cwd, timeoutMs: 10_000, session: `idle${i}` });
      if (r.stdout !== "1\n") throw new Error(`session idle${i} answered ${JSON.stringify(r.stdout)}`);
      warm.push(performance.now() - t);
    }
  }
  warm.sort((a, b) => a - b);
  console.log(
    `64 live sessions: all responsive; warm run p50 ${warm[Math.floor(warm.length / 2)].toFixed(2)} ms, p99 ${warm[Math.floor(warm.length * 0.99)].toFixed(2)} ms (goal p99 <= 5 ms)`,
  );
} finally {
  await host.shutdown();
}
