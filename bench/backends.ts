// Per-run overhead of a warm session locally, in the sandbox and over ssh on loopback (an established master
// connection), session start over ssh, and output throughput. Starts its own sshd (test/helpers/sshd.ts); needs root
// for that. Usage: node bench/backends.ts [runs=200]
import "../test/helpers/agent-dir.ts";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { SupervisorHost } from "../host/host.ts";
import { localOperations, type ProcessOperations } from "../actors/process/operations.ts";
import { remoteOperations } from "../actors/process/remote.ts";
import { sandboxOperations } from "../actors/process/sandbox.ts";
import { RUNNER_PATH } from "../actors/runner/runner.ts";
import { startSshd } from "../test/helpers/sshd.ts";

const N = Number(process.argv[2] ?? 200);
const cwd = realpathSync(mkdtempSync(join(tmpdir(), "pcs-bench-backends-")));
const sshd = await startSshd();
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function measure(name: string, ops: ProcessOperations) {
  const host = new SupervisorHost({ ops, spareRunners: () => false });
  const run = (code: string, session?: string) => host.run({ code, cwd, timeoutMs: 60_000, ...(session ? { session } : {}) });
  const starts: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    const r = await run("1", `start${i}`);
    if (r.outcome.status !== "success") throw new Error(`${name}: ${r.outcome.message} ${r.stderr}`);
    starts.push(performance.now() - t);
  }
  for (let i = 0; i < 20; i++) await run("x = 1", "warm");
  const times: number[] = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    await run("x += 1", "warm");
    times.push(performance.now() - t);
  }
  const t = performance.now();
  const big = await run("import sys\nsys.stdout.write('y' * (64 << 20));", "warm");
  const secs = (performance.now() - t) / 1000;
  await host.shutdown();
  await ops.close();
  console.log(
    `${name.padEnd(8)} warm run p50 ${pct(times, 50).toFixed(2)} ms p90 ${pct(times, 90).toFixed(2)} ms | ` +
      `session start p50 ${pct(starts, 50).toFixed(1)} ms | 64 MiB output ${(big.stdoutBytes / 2 ** 20 / secs).toFixed(0)} MiB/s`,
  );
}

try {
  await measure("local", localOperations);
  await measure("sandbox", sandboxOperations({ network: false, writable: [], readable: [], support: [dirname(RUNNER_PATH)] }));
  await measure("ssh", remoteOperations({ remote: sshd.remote({ cwd }), localRoot: cwd }));
} finally {
  await sshd.stop();
  rmSync(cwd, { recursive: true, force: true });
}
