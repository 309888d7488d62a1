// The spare-runner machine (machines/spare.ts), one `describe` per state, under the real supervisor root with the fake
// runner and a SimulatedClock: a fresh run with a spare key keeps a small pool of spares warming or ready for that
// key (one, more while runs find them still warming, at most MAX_SPARES_PER_KEY).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { startSupervisor } from "../helpers/fake-runner.ts";
import { assertHealthy, ctx } from "../helpers/machine-scenarios.ts";
import { missingEffectError, undescribedStates } from "../helpers/machine-states.ts";
import { MAX_SPARES_PER_KEY } from "../../machines/supervisor.ts";
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
    assert.deepEqual(ctx(h).spares, { "spare:1": { id: "spare:1", key: KEY } });
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
    assert.deepEqual(ctx(h).spares, {});
    freshRun(h, "r2");
    h.runner.of("spare:2").ready();
    h.runner.of("spare:2").failed("lost");
    assert.equal(h.ref("spare:2"), undefined);
    assertHealthy(h);
  });
});

describe("ready", () => {
  test("ready is the spare's own state, read by the supervisor; the next fresh run of the key takes its process", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    const spare = h.runner.of("spare:1");
    spare.ready();
    assert.equal(h.value("spare:1"), "ready");
    // The supervisor keeps which spares it started for which key, not a copy of their state.
    assert.deepEqual(ctx(h).spares, { "spare:1": { id: "spare:1", key: KEY } });
    h.start({ runId: "r2", spareKey: KEY });
    assert.deepEqual(spare.types(), ["runner.handover", "stopped"], "the process is handed over, not stopped");
    assert.equal(h.runner.of("run:r2").input.adopt, "spare:1");
    assert.equal(h.ref("spare:1"), undefined, "claimed: the spare is done");
    assert.deepEqual(Object.keys(ctx(h).spares), ["spare:2"], "its replacement is the key's only spare");
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

  test("runs that find the key's spares still warming grow its pool, up to MAX_SPARES_PER_KEY", () => {
    const h = startSupervisor();
    for (const id of ["r1", "r2", "r3", "r4", "r5"]) h.start({ runId: id, spareKey: KEY });
    assert.deepEqual(Object.keys(ctx(h).spares), ["spare:1", "spare:2", "spare:3"]);
    assert.equal(ctx(h).spareTarget[KEY], MAX_SPARES_PER_KEY);
    for (const id of ["spare:1", "spare:2", "spare:3"]) assert.equal(h.value(id), "warming");
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
    assert.deepEqual(ctx(h).spareTarget, {}, "the key's pool is forgotten with its last spare");
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
