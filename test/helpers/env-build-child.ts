// A program, not a test: one process that wants the PEP 723 environment of `tinypkg==1.0` under ROOT, as a fresh
// run would (actors/deps/install-targets.ts), with a stand-in installer (test/actors/deps/env-lock.test.ts writes it:
// it creates the environment and logs when it starts and ends). Prints one JSON line: the outcome and how long this
// process took. Gives up at its deadline, as a run would: it stops waiting for the lock, and stops its installer's
// process group (the install actor does that at a run's deadline, actors/deps/dependencies.ts), so it ends by then
// even when an installer never would.
// The installer sees this process's pid as ENV_BUILD_CHILD_PID: its own parent may be the spawn server
// (actors/process/spawner.ts) rather than this process, so `$PPID` does not name its builder.
//   node env-build-child.ts <root> <uv> <python> <staleMs> <deadlineMs>
import { freshEnvironment } from "../../actors/deps/install-targets.ts";

const [root, uv, python, staleMs, deadlineMs] = process.argv.slice(2);
const started = Date.now();
const deadline = started + Number(deadlineMs);
const groups = new Set<number>();
setTimeout(() => {
  for (const pid of groups) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
}, Number(deadlineMs)).unref();
const outcome = await freshEnvironment({
  input: {
    runId: `r${process.pid}`,
    owner: `install:r${process.pid}`,
    mode: "fresh",
    python,
    dependencies: ["tinypkg==1.0"],
    cwd: root,
  },
  deps: { hostId: "race", envRoot: root, lockStaleMs: Number(staleMs) },
  env: { ...process.env, ENV_BUILD_CHILD_PID: String(process.pid) },
  installer: { kind: "uv", uv },
  stopped: () => Date.now() > deadline,
  track: (pid) => groups.add(pid),
  untrack: (pid) => groups.delete(pid),
});
process.stdout.write(
  `${JSON.stringify({
    pid: process.pid,
    ok: outcome.ok,
    ...(outcome.ok ? { cached: outcome.value.cached } : { error: outcome.error }),
    ms: Date.now() - started,
  })}\n`,
);
process.exit(0);
