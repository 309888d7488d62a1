// Benchmarks, run on demand (not in CI): `bash bench/run.sh [--quick]`.
// Each figure is printed beside a physical baseline measured in the same run, as a ratio.
import "../test/helpers/agent-dir.ts";
import { spawn, type ChildProcessByStdio } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { Readable, Writable } from "node:stream";
import { SupervisorHost } from "../host/host.ts";
import { validateInterpreter } from "../actors/interpreter/interpreter.ts";

const quick = process.argv.includes("--quick");
const N = (full: number) => (quick ? Math.max(5, Math.floor(full / 5)) : full);

export function stats(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { n: s.length, min: s[0], p50: q(0.5), p90: q(0.9), p99: q(0.99), max: s[s.length - 1] };
}
/** Least-squares slope of ys against xs (0 when the xs do not vary): a trend a max/min rule may not yet call growth. */
export function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, x) => a + x, 0) / n;
  const my = ys.reduce((a, y) => a + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
  }
  return sxx === 0 ? 0 : sxy / sxx;
}
export const fmt = (ms: number) => (ms < 1 ? `${(ms * 1000).toFixed(0)} us` : `${ms.toFixed(2)} ms`);
export function line(name: string, xs: number[], baseline?: { name: string; p50: number }) {
  const st = stats(xs);
  const ratio = baseline ? `  = ${(st.p50 / baseline.p50).toFixed(2)}x ${baseline.name}` : "";
  console.log(
    `${name.padEnd(44)} n=${String(st.n).padStart(4)} p50 ${fmt(st.p50).padStart(9)}  p90 ${fmt(st.p90).padStart(9)}  p99 ${fmt(st.p99).padStart(9)}${ratio}`,
  );
  return st;
}

async function timeSpawn(exe: string, args: string[]): Promise<number> {
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const p = spawn(exe, args, { stdio: "ignore" });
    p.once("exit", () => resolve());
    p.once("error", reject);
  });
  return performance.now() - t0;
}

/** `n` round trips of one line written to a child that echoes it (after 20 unmeasured warm-up ones), in ms. */
export async function echoTimes(p: ChildProcessByStdio<Writable, Readable, null>, n: number): Promise<number[]> {
  const times: number[] = [];
  let pending: (() => void) | undefined;
  p.stdout.on("data", () => pending?.());
  for (let i = 0; i < n + 20; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve) => {
      pending = resolve;
      p.stdin.write("x\n");
    });
    if (i >= 20) times.push(performance.now() - t0);
  }
  return times;
}

/** Round trip of one small message over a raw Node<->Python pipe (the floor for any protocol). */
export async function pipeEcho(exe: string, n: number): Promise<number[]> {
  const code =
    "import sys\nr=sys.stdin.buffer\nw=sys.stdout.buffer\nwhile True:\n    l=r.readline()\n    if not l: break\n    w.write(l); w.flush()";
  const p = spawn(exe, ["-S", "-c", code], { stdio: ["pipe", "pipe", "inherit"] });
  const times = await echoTimes(p, n);
  p.stdin.end();
  return times;
}

/** MiB/s of a raw pipe from Python to Node, reading everything. */
async function pipeThroughput(exe: string, mib: number): Promise<number> {
  const code = `import os\nb=b'x'*(1<<20)\nfor _ in range(${mib}): os.write(1, b)`;
  const t0 = performance.now();
  let got = 0;
  await new Promise<void>((resolve) => {
    const p = spawn(exe, ["-S", "-c", code], { stdio: ["ignore", "pipe", "inherit"] });
    p.stdout.on("data", (c: Buffer) => (got += c.length));
    p.once("close", () => resolve());
  });
  return got / (1 << 20) / ((performance.now() - t0) / 1000);
}

async function main() {
  const py = await validateInterpreter(process.env.PI_PYTHON ?? "python3", process.cwd());
  if (!py.ok) throw new Error(py.error);
  const exe = py.value.executable;
  const cwd = mkdtempSync(join(tmpdir(), "pcs-bench-"));
  console.log(`python ${py.value.version} at ${exe}; node ${process.version}; ${quick ? "quick" : "full"} run\n`);

  // Baselines.
  const bareS: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < N(30); i++) bareS.push(await timeSpawn(exe, ["-S", "-c", "pass"]));
  for (let i = 0; i < N(30); i++) bare.push(await timeSpawn(exe, ["-c", "pass"]));
  line("baseline: python -S -c pass", bareS);
  const b = line("baseline: python -c pass", bare);
  const echo = line("baseline: raw pipe echo round trip", await pipeEcho(exe, N(2000)));
  const rawMiB = await pipeThroughput(exe, quick ? 256 : 1024);
  console.log(`${"baseline: raw pipe throughput".padEnd(44)} ${rawMiB.toFixed(0)} MiB/s\n`);

  const host = new SupervisorHost();
  const cold = new SupervisorHost({ spareRunners: () => false });
  try {
    const fresh: number[] = [];
    for (let i = 0; i < N(30); i++) {
      const t0 = performance.now();
      const r = await cold.run({ code: "1", cwd, timeoutMs: 30_000 });
      if (r.outcome.status !== "success") throw new Error(JSON.stringify(r.outcome));
      fresh.push(performance.now() - t0);
    }
    line("fresh run, no spare (goal <= 1.1x)", fresh, { name: "python -c pass", p50: b.p50 });

    const spared: number[] = [];
    await host.run({ code: "0", cwd, timeoutMs: 30_000 });
    for (let i = 0; i < N(30); i++) {
      // Model calls come seconds apart: the replacement spare is ready by then.
      while (host.stats().readySpares === 0) {
        await new Promise((r) => setTimeout(r, 5));
      }
      const t0 = performance.now();
      const r = await host.run({ code: "1", cwd, timeoutMs: 30_000 });
      if (r.outcome.status !== "success") throw new Error(JSON.stringify(r.outcome));
      spared.push(performance.now() - t0);
    }
    line("fresh run with a spare (goal p50 <= 5 ms)", spared, { name: "python -c pass", p50: b.p50 });

    await host.run({ code: "0", cwd, timeoutMs: 30_000, session: "bench" });
    const warm: number[] = [];
    for (let i = 0; i < N(1000); i++) {
      const t0 = performance.now();
      await host.run({ code: "1", cwd, timeoutMs: 30_000, session: "bench" });
      warm.push(performance.now() - t0);
    }
    line("warm session trivial run (goal 0.25/2 ms)", warm, { name: "raw pipe echo", p50: echo.p50 });

    const interrupt: number[] = [];
    for (let i = 0; i < N(30); i++) {
      const ac = new AbortController();
      let t0 = 0;
      const done = host.run(
        {
          code: "import sys\nsys.stdout.write('go\\n'); sys.stdout.flush()\nwhile True: pass",
          cwd,
          timeoutMs: 30_000,
          session: "bench",
        },
        {
          signal: ac.signal,
          onOutput: () => {
            if (!t0) {
              t0 = performance.now();
              ac.abort();
            }
          },
        },
      );
      const r = await done;
      interrupt.push(performance.now() - t0);
      if (r.outcome.status !== "cancelled" || r.outcome.session?.isLost) throw new Error(JSON.stringify(r.outcome));
    }
    line("interrupt busy loop -> result (goal 1 ms)", interrupt);

    const mib = quick ? 256 : 1024;
    const t0 = performance.now();
    const big = await host.run({
      code: `import sys\nb=b'x'*(1<<20)\nfor _ in range(${mib}): sys.stdout.buffer.write(b)\nsys.stdout.flush()`,
      cwd,
      timeoutMs: 120_000,
      session: "bench",
    });
    const mibs = big.stdoutBytes / (1 << 20) / ((performance.now() - t0) / 1000);
    console.log(
      `${"output throughput (retention on)".padEnd(44)} ${mibs.toFixed(0)} MiB/s  = ${((100 * mibs) / rawMiB).toFixed(0)}% of raw pipe`,
    );
  } finally {
    await host.shutdown();
    await cold.shutdown();
  }
}

// Other benchmarks import the helpers above; only running this file runs these benchmarks.
if (import.meta.main) await main();
