// The spare-runner machine (machines/spare.ts), one `describe` per state, under the real supervisor root (and its spare
// pool, machines/spare-pool.ts, whose own rules are test/machines/spare-pool.test.ts's) with the fake runner and a
// SimulatedClock.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { startSupervisor } from "../helpers/fake-runner.ts";
import { assertHealthy, pool } from "../helpers/machine-scenarios.ts";
import { missingEffectError, undescribedStates } from "../helpers/machine-states.ts";
import { spareMachine } from "../../machines/spare.ts";

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
    assert.deepEqual(pool(h)?.spares, { "spare:1": KEY });
    assertHealthy(h);
  });

  test("a run that needs dependencies or names no key starts none", () => {
    const h = startSupervisor();
    h.start({ runId: "d", spareKey: KEY, dependencies: ["x==1"] });
    h.start({ runId: "n" });
    assert.equal(pool(h), undefined, "no pool either");
    assert.equal(h.ref("spare:1"), undefined);
  });

  test("a process that dies while warming fails the spare; the key has none until the next run", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    h.runner.of("spare:1").exited({ code: 1 });
    assert.equal(h.ref("spare:1"), undefined);
    assert.deepEqual(pool(h)?.spares, {});
    freshRun(h, "r2");
    assert.equal(h.value("spare:2"), "warming");
    assertHealthy(h);
  });
});

describe("warming: the runner's input", () => {
  test("a run's interpreter goes to its spare (and only then is named)", () => {
    const h = startSupervisor();
    h.start({ runId: "r1", spareKey: KEY, python: "/py/bin/python3" });
    assert.deepEqual(h.runner.of("spare:1").input, {
      mode: "fresh",
      cwd: "/work",
      owner: "spare:1",
      python: "/py/bin/python3",
    });
  });

  test("a runner that fails to start fails the spare, warming or ready", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    h.runner.of("spare:1").failed("no such interpreter");
    assert.equal(h.ref("spare:1"), undefined);
    assert.deepEqual(pool(h)?.spares, {});
    freshRun(h, "r2");
    h.runner.of("spare:2").ready();
    h.runner.of("spare:2").failed("lost");
    assert.equal(h.ref("spare:2"), undefined);
    assertHealthy(h);
  });
});

describe("ready", () => {
  test("ready is the spare's own state, read through the pool; the next fresh run of the key takes its process", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    const spare = h.runner.of("spare:1");
    spare.ready();
    assert.equal(h.value("spare:1"), "ready");
    // The pool keeps which spares it started for which key, not a copy of their state.
    assert.deepEqual(pool(h)?.spares, { "spare:1": KEY });
    h.start({ runId: "r2", spareKey: KEY });
    assert.deepEqual(spare.types(), ["runner.handover", "stopped"], "the process is handed over, not stopped");
    assert.equal(h.runner.of("run:r2").input.adopt, "spare:1");
    assert.equal(h.ref("spare:1"), undefined, "claimed: the spare is done");
    assert.deepEqual(Object.keys(pool(h)!.spares), ["spare:2"], "its replacement is the key's only spare");
    assertHealthy(h);
  });

  test("the claim starts the replacement spare at once, while the claiming run still runs", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    h.runner.of("spare:1").ready();
    h.start({ runId: "r2", spareKey: KEY });
    assert.equal(h.runner.of("run:r2").input.adopt, "spare:1");
    assert.equal(h.value("spare:2"), "warming");
    assert.equal(h.value("run:r2"), "starting");
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
    assert.deepEqual(pool(h)?.spares, {});
    assertHealthy(h);
  });
});

describe("retired at shutdown", () => {
  test("supervisor.shutdown retires a warming spare and a ready one; their processes are stopped", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    h.runner.of("spare:1").ready();
    h.start({ runId: "r2", spareKey: KEY });
    h.start({ runId: "r3", spareKey: KEY });
    assert.equal(h.value("spare:2"), "warming");
    assert.equal(h.value("spare:3"), "warming");
    h.shutdown();
    for (const id of ["spare:2", "spare:3"]) {
      assert.equal(h.ref(id), undefined);
      assert.equal(h.runner.of(id).stopped, true);
    }
    assert.ok(h.trace.some((t) => t.id === "spare:2" && t.value === "retired"));
    assertHealthy(h);
  });
});

describe("the definition", () => {
  test("every state is described, under the machine's id", () => {
    assert.equal(spareMachine.id, "spare");
    assert.deepEqual(undescribedStates(spareMachine), []);
  });

  test("without its runner provided, a spare fails at once and names the missing actor", () => {
    const message = missingEffectError(spareMachine, { id: "spare:1", key: KEY, cwd: "/w", idleMs: IDLE_MS });
    assert.equal(message, "spare: the `runner` actor must be provided (machines/system.ts)");
  });
});
