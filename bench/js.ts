// JavaScript cells (issue 15), run on demand: `source scripts/env.sh && node bench/js.ts [--quick]`. The first cell
// of a session (the runtime's start) beside a bare `node -e 0` spawn of the same Node in the same run, and a warm
// trivial cell, both through the supervisor host; the warm figure through Pi's `eval` tool is in bench/pi.ts.
import "../test/helpers/agent-dir.ts";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { SupervisorHost } from "../host/host.ts";
import { line } from "./run.ts";

const quick = process.argv.includes("--quick");
const N = (full: number) => (quick ? Math.max(5, Math.floor(full / 5)) : full);

async function timeSpawn(args: string[]): Promise<number> {
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const p = spawn(process.execPath, args, { stdio: "ignore" });
    p.once("exit", () => resolve());
    p.once("error", reject);
  });
  return performance.now() - t0;
}

async function main() {
  const cwd = mkdtempSync(join(tmpdir(), "pcs-bench-js-"));
  console.log(`node ${process.version} at ${process.execPath}; ${quick ? "quick" : "full"} run\n`);
  const bare: number[] = [];
  const first: number[] = [];
  // Interleaved, so that both see the same load.
  for (let i = 0; i < N(30); i++) {
    bare.push(await timeSpawn(["-e", "0"]));
    const host = new SupervisorHost();
    const t0 = performance.now();
    const r = await host.run({ code: "1", cwd, timeoutMs: 30_000, session: "js", language: "js" });
    first.push(performance.now() - t0);
    if (r.outcome.status !== "success") throw new Error(JSON.stringify(r.outcome));
    await host.shutdown();
  }
  const b = line("baseline: node -e 0", bare);
  line("first js cell, runtime start (goal <= 1.5x)", first, { name: "node -e 0", p50: b.p50 });

  const host = new SupervisorHost();
  try {
    await host.run({ code: "0", cwd, timeoutMs: 30_000, session: "js", language: "js" });
    const warm: number[] = [];
    for (let i = 0; i < N(2000); i++) {
      const t0 = performance.now();
      await host.run({ code: "1", cwd, timeoutMs: 30_000, session: "js", language: "js" });
      warm.push(performance.now() - t0);
    }
    line("warm trivial js cell through the host", warm);
  } finally {
    await host.shutdown();
    rmSync(cwd, { recursive: true, force: true });
  }
}

await main();
