// What containment costs (issue 19), on demand: `node bench/containment.ts [--quick]`.
// - one /proc scan (session tracking), with the machine's current process count;
// - creating a runner's cgroup and moving a process into it, and removing it;
// - a fresh run's result latency (`1`, spare runner claimed) with cgroup tracking and with session tracking,
//   and the time until the run's leftovers (a `process_group=0` child) are gone after its result.
import "../test/helpers/agent-dir.ts";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { SupervisorHost } from "../host/host.ts";
import { CONTAINMENT_ENV, contain, containmentMode, scanSessions } from "../actors/registry/containment.ts";
import { line } from "./run.ts";
import { pidAlive } from "../test/helpers/procs.ts";

const quick = process.argv.includes("--quick");
const N = (full: number) => (quick ? Math.max(5, Math.floor(full / 5)) : full);
const cwd = mkdtempSync(join(tmpdir(), "pcs-bench-contain-"));

console.log(
  `containment here: ${JSON.stringify(containmentMode())}; ${readdirSync("/proc").filter((e) => /^\d+$/.test(e)).length} processes`,
);

const scans: number[] = [];
for (let i = 0; i < N(200); i++) {
  const t0 = performance.now();
  scanSessions([process.pid]);
  scans.push(performance.now() - t0);
}
line("one /proc scan (session tracking)", scans);

if (containmentMode().kind === "cgroup") {
  const moves: number[] = [];
  const removals: number[] = [];
  for (let i = 0; i < N(50); i++) {
    const child = spawn("sleep", ["60"], { stdio: "ignore", detached: true });
    const t0 = performance.now();
    const box = (await contain(child.pid!))!;
    moves.push(performance.now() - t0);
    box.signal("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    const t1 = performance.now();
    while (!box.release()) await new Promise((r) => setTimeout(r, 1));
    removals.push(performance.now() - t1);
  }
  line("create a cgroup and move a process into it (async)", moves);
  line("remove an emptied cgroup", removals);
}

for (const mode of ["cgroup", "session"] as const) {
  if (mode === "session") process.env[CONTAINMENT_ENV] = "session";
  else if (containmentMode().kind !== "cgroup") continue;
  const host = new SupervisorHost();
  await host.run({ code: "1", cwd, timeoutMs: 30_000 });
  const results: number[] = [];
  for (let i = 0; i < N(40); i++) {
    const t0 = performance.now();
    await host.run({ code: "1", cwd, timeoutMs: 30_000 });
    results.push(performance.now() - t0);
  }
  line(`fresh run \`1\`, ${mode} tracking`, results);
  const gone: number[] = [];
  for (let i = 0; i < N(20); i++) {
    const r = await host.run({
      code: "import subprocess\nsubprocess.Popen(['sleep', '600'], process_group=0).pid",
      cwd,
      timeoutMs: 30_000,
    });
    const t0 = performance.now();
    const pid = Number(r.stdout);
    while (pidAlive(pid)) await new Promise((r) => setTimeout(r, 1));
    gone.push(performance.now() - t0);
  }
  line(`result to leftover gone, ${mode} tracking`, gone);
  await host.shutdown();
}
