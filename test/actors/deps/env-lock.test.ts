// The PEP 723 environment-build lock (proper-lockfile) with real processes: six Node processes want the same
// environment at once (test/helpers/env-build-child.ts, each running freshEnvironment as a fresh run does), with a
// stand-in installer that logs when each build starts and ends. The first builder is stopped in the middle of its
// build, either killed or frozen (SIGSTOP: its process id stays alive, as a reused one would). Exactly one process
// builds at a time, the stopped builder's lock is taken over once it is stale (not before, and not at the
// waiters' deadline), and every other process ends up with the environment.
// The builder is named by the installer's ENV_BUILD_CHILD_PID, not its `$PPID`: an installer started through the
// spawn server (actors/process/spawner.ts, ready once the builder's first installer command has run) is the server's
// child, and stopping the server instead of the builder left the builder waiting for its frozen installer forever.
// Every wait is bounded: each process ends by its deadline at worst (env-build-child.ts), so one that does not is a
// failure naming it, not the file's timeout.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import { pidAlive, waitUntil } from "../../helpers/procs.ts";
import { PYTHON } from "../../helpers/pythons.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

const CHILD = resolve(import.meta.dirname, "../../helpers/env-build-child.ts");
const PY = PYTHON;
/** A held lock is refreshed every half of this (short for the test; long enough for a loaded machine). */
const STALE_MS = 4000;
/** Each process gives up at this point, as a run at its deadline would. */
const DEADLINE_MS = 60_000;
const BUILD_MS = 2500;
/** How long after its start a process may take to end: its deadline, and a margin for a loaded machine. */
const END_BOUND_MS = DEADLINE_MS + 30_000;

interface Line {
  kind: "begin" | "pip" | "end";
  builder: number;
  uv: number;
  at: number;
}

/** A stand-in for uv: `venv` creates the environment's interpreter, `pip install` takes BUILD_MS; both log. */
function fakeUv(dir: string, log: string): string {
  const path = join(dir, "uv");
  writeFileSync(
    path,
    `#!/bin/bash
set -e
case "$1" in
  venv)
    dir="\${@: -1}"
    echo "begin $ENV_BUILD_CHILD_PID $$ $(date +%s%3N)" >> "${log}"
    mkdir -p "$dir/bin"
    ln -sf "${PY}" "$dir/bin/python" ;;
  pip)
    echo "pip $ENV_BUILD_CHILD_PID $$ $(date +%s%3N)" >> "${log}"
    sleep ${BUILD_MS / 1000}
    echo "end $ENV_BUILD_CHILD_PID $$ $(date +%s%3N)" >> "${log}" ;;
esac
`,
  );
  chmodSync(path, 0o755);
  return path;
}

function readLog(log: string): Line[] {
  return readFileSync(log, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => {
      const [kind, builder, uv, at] = l.split(" ");
      return { kind: kind as Line["kind"], builder: Number(builder), uv: Number(uv), at: Number(at) };
    });
}

/** A process's state letter and kernel wait channel, for a failure message. */
function procState(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const wchan = readFileSync(`/proc/${pid}/wchan`, "utf8");
    return `state ${stat.slice(stat.lastIndexOf(")") + 2)[0]}, waiting in ${wchan || "-"}`;
  } catch {
    return "exited";
  }
}

function outcome(
  child: ChildProcess,
): Promise<{ pid: number; ok: boolean; cached?: boolean; error?: string; ms: number }> {
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  return new Promise((done, reject) => {
    const bound = setTimeout(
      () =>
        reject(
          new Error(
            `process ${child.pid} did not end (or close its stdout) within ${END_BOUND_MS} ms of its start, ` +
              `past its ${DEADLINE_MS} ms deadline: ${procState(child.pid!)}; printed ${JSON.stringify(out)}`,
          ),
        ),
      END_BOUND_MS,
    );
    child.once("close", () => {
      clearTimeout(bound);
      try {
        done(JSON.parse(out.trim()));
      } catch {
        reject(new Error(`process ${child.pid} printed no outcome: ${JSON.stringify(out)}`));
      }
    });
  });
}

async function race(stop: "SIGKILL" | "SIGSTOP") {
  const dir = tempDir("pcs-envlock-");
  const log = join(dir, "log");
  writeFileSync(log, "");
  const uv = fakeUv(dir, log);
  const root = join(dir, "envs");
  const children = Array.from({ length: 6 }, () =>
    spawn(process.execPath, [CHILD, root, uv, PY, String(STALE_MS), String(DEADLINE_MS)], {
      stdio: ["ignore", "pipe", "inherit"],
    }),
  );
  const outcomes = new Map(children.map((c) => [c.pid!, outcome(c)]));
  // Each is awaited below (but the stopped builder's: it prints no outcome, or never ends); none goes unhandled.
  for (const o of outcomes.values()) o.catch(() => {});
  let first: Line | undefined;
  try {
    // The first builder, in the middle of its build (its installer running), is stopped with its installer.
    // Six Node processes start at once: on a loaded machine that alone can take a while.
    assert.ok(await waitUntil(() => readLog(log).some((l) => l.kind === "pip"), 120_000), "a build started");
    first = readLog(log).find((l) => l.kind === "pip")!;
    assert.ok(outcomes.has(first.builder), `the builder ${first.builder} is one of ${[...outcomes.keys()].join(", ")}`);
    const lockDir = readdirSync(root).find((f) => f.endsWith(".build.lock"));
    assert.ok(lockDir, `the build lock is held: ${readdirSync(root).join(", ")}`);
    const lockPath = join(root, lockDir);
    const seen = statSync(lockPath);
    process.kill(first.uv, stop);
    process.kill(first.builder, stop);
    const stoppedAt = Date.now();
    // Where staleness counts from is the lock's last refresh, not this moment: proper-lockfile re-arms its refresh
    // timer only once the previous stat and utimes have answered, so on a loaded machine the last refresh can lie
    // well over STALE_MS / 2 before the stop. Read it once the builder can no longer refresh (stopped, or gone).
    const halted = (pid: number) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        return "TtZ".includes(stat.slice(stat.lastIndexOf(")") + 2)[0]!);
      } catch {
        return true;
      }
    };
    assert.ok(await waitUntil(() => halted(first!.builder), 60_000), "the builder stopped");
    // A lock already taken over (another directory) was stale by then: its last refresh is the one seen before.
    const now = statSync(lockPath, { throwIfNoEntry: false });
    const same = now?.ino === seen.ino && now.birthtimeMs === seen.birthtimeMs;
    const refreshedAt = same ? now.mtimeMs : seen.mtimeMs;
    const builder = first.builder;
    const others = await Promise.all([...outcomes].filter(([pid]) => pid !== builder).map(([, o]) => o));
    return { lines: readLog(log), first, stoppedAt, refreshedAt, others };
  } finally {
    // The stopped builder and its installer (and after a failure, whatever else is left) go.
    for (const pid of [...(first ? [first.uv] : []), ...outcomes.keys()])
      if (pidAlive(pid)) process.kill(pid, "SIGKILL");
  }
}

function check(r: Awaited<ReturnType<typeof race>>) {
  // Every other process got the environment: one built it, the others reused it.
  assert.equal(r.others.length, 5);
  for (const o of r.others) assert.equal(o.ok, true, JSON.stringify(o));
  assert.deepEqual(r.others.map((o) => o.cached).sort(), [false, true, true, true, true], JSON.stringify(r.others));
  // Exactly one builds at a time: the stopped builder until it was stopped, then the one that took over.
  const begins = r.lines.filter((l) => l.kind === "begin");
  assert.equal(begins.length, 2, `two builds, one after the other: ${JSON.stringify(r.lines)}`);
  assert.equal(begins[0].builder, r.first.builder);
  const taker = begins[1];
  const end = r.lines.find((l) => l.kind === "end" && l.builder === taker.builder);
  assert.ok(end, "the second build finished");
  assert.equal(r.lines.filter((l) => l.kind === "end").length, 1, "the stopped builder never finished its build");
  // Taken over once the stopped builder's lock was stale (STALE_MS after its last refresh: the taker saw the lock
  // older than that, then began), and soon after: not at the waiters' deadline.
  const sinceRefresh = taker.at - r.refreshedAt;
  assert.ok(
    sinceRefresh >= STALE_MS,
    `taken over ${sinceRefresh.toFixed(0)} ms after the lock's last refresh ` +
      `(${(r.stoppedAt - r.refreshedAt).toFixed(0)} ms before the stop): before it was stale`,
  );
  const waited = taker.at - r.stoppedAt;
  assert.ok(waited < STALE_MS + 8000, `taken over ${waited} ms after the builder stopped`);
  for (const o of r.others) assert.ok(o.ms < DEADLINE_MS / 2, `a process waited ${o.ms} ms`);
}

describe("the environment-build lock, raced by six processes", { timeout: 400_000 }, () => {
  test("a builder killed mid-build: its lock is taken over once stale, by one process", async () => {
    check(await race("SIGKILL"));
  });

  test("a builder frozen mid-build (its pid alive, as a reused one): taken over once stale, not at the deadline", async () => {
    check(await race("SIGSTOP"));
  });
});
