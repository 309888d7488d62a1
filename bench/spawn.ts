// The spawn server's effect on exec_command (actors/process/spawner.ts), run on demand:
// `source scripts/env.sh && node bench/spawn.ts [--quick] [--rounds N]`. Interleaved in one process, each iteration
// in a rotating order: exec of `true` through the host (`exec.start` with a 10 s window, then `exec.finalize`, as the
// exec_command tool does) with the spawn server and without it (PI_CODE_EXECUTION_SPAWNER=off, read per spawn), the
// process port's spawn of `bash -c true` to its close both ways, and a bare `spawn("bash", ["-c", "true"])` from
// Node to its close (the floor: no cgroup, no joining shell, no actors).
import "../test/helpers/agent-dir.ts";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { SupervisorHost } from "../host/host.ts";
import { spawnLocalChild } from "../actors/process/children.ts";
import { stopTracked } from "../actors/registry/registry.ts";
import { SHUTDOWN } from "../actors/registry/shutdown.ts";
import { SPAWNER_ENV, spawnerPids } from "../actors/process/spawner.ts";
import { line } from "./run.ts";

const quick = process.argv.includes("--quick");
const roundsAt = process.argv.indexOf("--rounds");
const rounds = roundsAt > 0 ? Number(process.argv[roundsAt + 1]) : 2;
const n = quick ? 40 : 150;
const warm = quick ? 10 : 30;

const scratch = mkdtempSync(join(tmpdir(), "pcs-bench-spawn-"));
const host = new SupervisorHost({ spareRunners: () => false, exec: { logDir: join(scratch, "logs") } });
let calls = 0;

function withServer<T>(on: boolean, fn: () => Promise<T>): Promise<T> {
  if (on) delete process.env[SPAWNER_ENV];
  else process.env[SPAWNER_ENV] = "off";
  return fn().finally(() => delete process.env[SPAWNER_ENV]);
}

async function hostExec(): Promise<number> {
  const callId = `b${++calls}`;
  const t0 = performance.now();
  const r = await host.exec.start({
    command: "true",
    cwd: scratch,
    tty: false,
    cols: 120,
    rows: 30,
    yieldMs: 10_000,
    onExit: "none",
    callId,
  });
  host.exec.finalize(callId, true);
  const ms = performance.now() - t0;
  if (!r.ok || r.value.running || r.value.end?.code !== 0) throw new Error(`exec of true: ${JSON.stringify(r)}`);
  return ms;
}

async function portSpawn(): Promise<number> {
  const t0 = performance.now();
  const r = await spawnLocalChild({
    file: "bash",
    args: ["-c", "true"],
    cwd: scratch,
    env: process.env,
    purpose: "shell",
  });
  if (!r.ok) throw new Error(r.error.message);
  const exit = await new Promise<{ code: number | null }>((resolve) => r.value.onClose(resolve));
  const ms = performance.now() - t0;
  if (exit.code !== 0) throw new Error(`bash -c true exited ${exit.code}`);
  await stopTracked(r.value.pid, SHUTDOWN.shortChild);
  return ms;
}

async function bare(): Promise<number> {
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const p = spawn("bash", ["-c", "true"], { stdio: "pipe", detached: true });
    p.stdout.resume();
    p.stderr.resume();
    p.once("close", () => resolve());
    p.once("error", reject);
  });
  return performance.now() - t0;
}

const cases: [string, () => Promise<number>][] = [
  ["host exec `true`, spawn server", () => withServer(true, hostExec)],
  ["host exec `true`, Node spawn (server off)", () => withServer(false, hostExec)],
  ["port spawn to close, spawn server", () => withServer(true, portSpawn)],
  ["port spawn to close, Node spawn", () => withServer(false, portSpawn)],
  ["bare Node spawn of bash -c true", bare],
];

console.log(`node ${process.version}; ${rounds} interleaved rounds of n=${n} after ${warm} warm-ups\n`);
// The server starts off the path of the first spawn; the warm-ups give it time to be ready.
for (let i = 0; i < warm; i++) for (const [, fn] of cases) await fn();
if (!spawnerPids().some((s) => s.ready)) throw new Error("the spawn server is not ready after the warm-ups");
for (let round = 1; round <= rounds; round++) {
  const times = cases.map(() => [] as number[]);
  for (let i = 0; i < n; i++)
    for (let k = 0; k < cases.length; k++) {
      const j = (i + k) % cases.length;
      times[j]!.push(await cases[j]![1]());
    }
  console.log(`round ${round}`);
  const floor = line(cases[4]![0], times[4]!);
  for (let k = 0; k < 4; k++) line(cases[k]![0], times[k]!, { name: "bare", p50: floor.p50 });
  console.log();
}
await host.shutdown();
rmSync(scratch, { recursive: true, force: true });
