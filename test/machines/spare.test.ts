// The spare-runner machine (machines/spare.ts), one `describe` per state, under the real supervisor root with the fake
// runner and a SimulatedClock: a fresh run with a spare key keeps one spare warming or ready for that key.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { startSupervisor } from "../helpers/fake-runner.ts";
import { assertHealthy, ctx } from "../helpers/machine-scenarios.ts";

const KEY = "k1";
const IDLE_MS = 60_000;

/** A fresh run `runId` with the spare key, finished at once (ready, started, done). */
function freshRun(h: ReturnType<typeof startSupervisor>, runId: string) {
  h.start({ runId, spareKey: KEY });
  const k = h.runner.of(`run:${runId}`);
  k.ready();
  k.started(runId);
  k.done(runId);
  return k;
}

describe("warming", () => {
  test("the first fresh run of a key starts a spare for it: a fresh-mode runner owned by spare:1", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    assert.equal(h.value("spare:1"), "warming");
    assert.deepEqual(h.runner.of("spare:1").input, { mode: "fresh", cwd: "/work", owner: "spare:1" });
    assert.deepEqual(ctx(h).spares, { [KEY]: { id: "spare:1", ready: false } });
    assertHealthy(h);
  });

  test("a run that needs dependencies or names no key starts none", () => {
    const h = startSupervisor();
    h.start({ runId: "d", spareKey: KEY, dependencies: ["x==1"] });
    h.start({ runId: "n" });
    assert.deepEqual(ctx(h).spares, {});
    assert.equal(h.ref("spare:1"), undefined);
  });

  test("a process that dies while warming fails the spare; the key has none until the next run", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    h.runner.of("spare:1").exited({ code: 1 });
    assert.equal(h.ref("spare:1"), undefined);
    assert.deepEqual(ctx(h).spares, {});
    freshRun(h, "r2");
    assert.equal(h.value("spare:2"), "warming");
    assertHealthy(h);
  });
});

describe("ready", () => {
  test("ready is announced to the supervisor; the next fresh run of the key takes its process", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    const spare = h.runner.of("spare:1");
    spare.ready();
    assert.equal(h.value("spare:1"), "ready");
    assert.deepEqual(ctx(h).spares, { [KEY]: { id: "spare:1", ready: true } });
    h.start({ runId: "r2", spareKey: KEY });
    assert.deepEqual(spare.types(), ["runner.handover", "stopped"], "the process is handed over, not stopped");
    assert.equal(h.runner.of("run:r2").input.adopt, "spare:1");
    assert.equal(h.ref("spare:1"), undefined, "claimed: the spare is done");
    assert.deepEqual(ctx(h).spares, {});
    assertHealthy(h);
  });

  test("the claiming run's end starts the replacement spare", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    h.runner.of("spare:1").ready();
    const k = freshRun(h, "r2");
    assert.equal(k.input.adopt, "spare:1");
    assert.equal(h.value("spare:2"), "warming");
    assertHealthy(h);
  });

  test("unused for its idle time, a ready spare retires and its process is stopped", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    const spare = h.runner.of("spare:1");
    spare.ready();
    h.advance(IDLE_MS - 1);
    assert.equal(h.value("spare:1"), "ready");
    h.advance(1);
    assert.equal(h.ref("spare:1"), undefined);
    assert.deepEqual(spare.types(), ["stopped"]);
    assert.deepEqual(ctx(h).spares, {});
    assertHealthy(h);
  });
});

describe("retired at shutdown", () => {
  test("supervisor.shutdown retires every spare and starts no new one", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    h.runner.of("spare:1").ready();
    h.shutdown();
    assert.equal(h.ref("spare:1"), undefined);
    assert.equal(h.runner.of("spare:1").stopped, true);
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });
});
