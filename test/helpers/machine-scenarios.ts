// Shared steps of the machine scenario tests (test/machines/*.test.ts): a healthy tree, a fresh run or a session run
// brought to `running`, the runner.run command a run sends. Driven through the real supervisor root with the fake
// runner and a SimulatedClock (test/helpers/fake-runner.ts).
import assert from "node:assert/strict";
import { TEST_LIMITS } from "./fake-runner.ts";
import type { FakeRunnerInstance, Harness } from "./fake-runner.ts";
import type { SparePoolContext } from "../../machines/spare-pool.ts";
import { SPARE_POOL_ID } from "../../machines/actor-ids.ts";

export const { interruptWindowMs, graceMs, killMs } = TEST_LIMITS;
export const BUSY = (name: string) => `Session "${name}" is busy with another run; wait for it to finish.`;
export const SHUTDOWN = "Pi is shutting down; the code_execution supervisor accepts no new runs.";

/** Nothing errored anywhere in the tree: no `xstate.error.actor.*` event was delivered, no actor snapshot was ever
 * in status "error", the root is active and reported no error. */
export function assertHealthy(h: Harness) {
  assert.deepEqual(h.errors, []);
  assert.deepEqual(
    h.eventTypes.filter((t) => t.startsWith("xstate.error")),
    [],
  );
  assert.deepEqual(
    h.trace.filter((t) => t.status === "error").map((t) => t.id),
    [],
  );
  assert.equal(h.actor.getSnapshot().status, "active");
}

export function ctx(h: Harness) {
  return h.actor.getSnapshot().context;
}

/** The spare pool's context (machines/spare-pool.ts), or undefined before a fresh run with a spare key spawned it. */
export function pool(h: Harness): SparePoolContext | undefined {
  return (h.ref(SPARE_POOL_ID)?.getSnapshot() as { context: SparePoolContext } | undefined)?.context;
}

/** A fresh run `runId` started at now, ready 10 ms later, started 10 ms after that. */
export function freshRunning(h: Harness, runId: string, timeoutMs = 1000): FakeRunnerInstance {
  h.start({ runId, timeoutMs });
  const k = h.runner.of(`run:${runId}`);
  h.advance(10);
  k.ready();
  h.advance(10);
  k.started(runId);
  assert.equal(h.value(`run:${runId}`), "running");
  return k;
}

/** A new session `name` whose first run `runId` is running (ready +10 ms, started +10 ms). */
export function sessionRunning(h: Harness, name: string, runId: string, timeoutMs = 1000): FakeRunnerInstance {
  h.start({ runId, session: name, timeoutMs });
  const k = h.runner.of(`session:${name}`);
  h.advance(10);
  k.ready();
  h.advance(10);
  k.started(runId);
  assert.equal(h.value(`run:${runId}`), "running");
  assert.equal(h.value(`session:${name}`), "running");
  return k;
}

/** The next run `runId` in the idle session `name` (same runner), running after 10 ms. */
export function nextSessionRun(h: Harness, name: string, runId: string, timeoutMs = 1000): FakeRunnerInstance {
  assert.equal(h.value(`session:${name}`), "idle");
  const k = h.runner.of(`session:${name}`);
  h.start({ runId, session: name, timeoutMs });
  h.advance(10);
  k.started(runId);
  assert.equal(h.value(`run:${runId}`), "running");
  return k;
}

export function run(runId: string, code = `print(${JSON.stringify(runId)})`, filename = "script.py") {
  return { type: "runner.run", runId, code, filename };
}
