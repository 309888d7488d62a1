// A program, not a test: one process that wants the PEP 723 environment of `tinypkg==1.0` under ROOT, as a fresh
// run would (actors/deps/install-targets.ts), with a stand-in installer (test/actors/deps/env-lock.test.ts writes it:
// it creates the environment and logs when it starts and ends). Prints one JSON line: the outcome and how long this
// process took. Gives up at its deadline, as a run would.
//   node env-build-child.ts <root> <uv> <python> <staleMs> <deadlineMs>
import { freshEnvironment } from "../../actors/deps/install-targets.ts";

const [root, uv, python, staleMs, deadlineMs] = process.argv.slice(2);
const started = Date.now();
const deadline = started + Number(deadlineMs);
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
  env: process.env,
  installer: { kind: "uv", uv },
  stopped: () => Date.now() > deadline,
  track: () => {},
  untrack: () => {},
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
