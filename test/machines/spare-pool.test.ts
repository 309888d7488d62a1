// The spare pool (machines/spare-pool.ts), one `describe` per state, under the real supervisor root with the fake
// runner and a SimulatedClock: a fresh run with a spare key keeps a small pool of spares warming or ready for that key
// (one, more while runs find them still warming, at most MAX_SPARES_PER_KEY, back down as spares end); the spares'
// own states are test/machines/spare.test.ts's.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createActor, fromCallback } from "xstate";
import { startSupervisor } from "../helpers/fake-runner.ts";
import { assertHealthy, pool } from "../helpers/machine-scenarios.ts";
import { undescribedStates } from "../helpers/machine-states.ts";
import {
  MAX_SPARES_PER_KEY,
  afterEnd,
  afterRun,
  initialPool,
  readySpare,
  sparePoolMachine,
  type SparesRun,
} from "../../machines/spare-pool.ts";
import { spareMachine } from "../../machines/spare.ts";
import { SPARE_POOL_ID } from "../../machines/actor-ids.ts";

const KEY = "k1";
const IDLE_MS = 60_000;

/** A fresh run `runId` of `key`, finished at once (ready, started, done). */
function freshRun(h: ReturnType<typeof startSupervisor>, runId: string, key = KEY) {
  h.start({ runId, spareKey: key });
  const k = h.runner.of(`run:${runId}`);
  k.ready();
  k.started(runId);
  k.done(runId);
}

const run = (claimed?: string, key = KEY): SparesRun => ({
  type: "spares.run",
  at: 0,
  runId: "r",
  key,
  cwd: "/w",
  ...(claimed ? { claimed } : {}),
});

describe("serving", () => {
  test("the first fresh run of a key starts one spare; its input is the run's key, cwd, interpreter and the idle time", () => {
    const h = startSupervisor();
    h.start({ runId: "r1", spareKey: KEY, python: "/py/bin/python3" });
    assert.deepEqual(pool(h), { idleMs: IDLE_MS, spares: { "spare:1": KEY }, target: { [KEY]: 1 }, seq: 1 });
    assert.deepEqual(h.ref("spare:1")?.getSnapshot().context, {
      id: "spare:1",
      idleMs: IDLE_MS,
      key: KEY,
      cwd: "/work",
      python: "/py/bin/python3",
    });
    assertHealthy(h);
  });

  test("a claimed spare is replaced at claim time; a key whose spare is ready keeps one", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    h.runner.of("spare:1").ready();
    h.start({ runId: "r2", spareKey: KEY });
    assert.equal(h.runner.of("run:r2").input.adopt, "spare:1");
    assert.deepEqual(pool(h)?.spares, { "spare:2": KEY });
    assert.deepEqual(pool(h)?.target, { [KEY]: 1 }, "a run that found a spare ready does not grow the pool");
    assertHealthy(h);
  });

  test("runs that find the key's spares still warming grow its pool, up to MAX_SPARES_PER_KEY", () => {
    const h = startSupervisor();
    for (const id of ["r1", "r2", "r3", "r4", "r5"]) h.start({ runId: id, spareKey: KEY });
    assert.deepEqual(Object.keys(pool(h)!.spares), ["spare:1", "spare:2", "spare:3"]);
    assert.equal(pool(h)!.target[KEY], MAX_SPARES_PER_KEY);
    for (const id of ["spare:1", "spare:2", "spare:3"]) assert.equal(h.value(id), "warming");
    for (const id of ["r1", "r2", "r3", "r4", "r5"]) assert.equal(h.runner.of(`run:${id}`).input.adopt, undefined);
    assertHealthy(h);
  });

  test("each key keeps its own pool: a run never takes another key's ready spare", () => {
    const h = startSupervisor();
    h.start({ runId: "a1", spareKey: "ka" });
    h.runner.of("spare:1").ready();
    h.start({ runId: "b1", spareKey: "kb" });
    assert.equal(h.runner.of("run:b1").input.adopt, undefined, "kb has no spare yet");
    assert.equal(h.value("spare:1"), "ready", "ka's spare is still waiting");
    assert.deepEqual(pool(h)?.target, { ka: 1, kb: 1 });
    assert.deepEqual(pool(h)?.spares, { "spare:1": "ka", "spare:2": "kb" });
  });

  test("a run with dependencies uses its installed environment: it neither takes the key's ready spare nor grows its pool", () => {
    // The run installs first (an install that never ends: the run waits in it); the spare is chosen before.
    const h = startSupervisor({ install: fromCallback(() => {}) });
    freshRun(h, "r1");
    h.runner.of("spare:1").ready();
    h.start({ runId: "r2", spareKey: KEY, dependencies: ["rich"] });
    assert.equal(h.ref("run:r2")?.getSnapshot().context.spare, undefined);
    assert.equal(h.value("spare:1"), "ready", "the spare still waits for a run without dependencies");
    assert.deepEqual(pool(h)?.spares, { "spare:1": KEY });
    assert.deepEqual(pool(h)?.target, { [KEY]: 1 });
    h.start({ runId: "r3", spareKey: KEY });
    assert.equal(h.runner.of("run:r3").input.adopt, "spare:1");
  });

  test("a spare that fails leaves its key's pool the size of what is left; only runs are announced", () => {
    const h = startSupervisor();
    for (const id of ["r1", "r2", "r3"]) h.start({ runId: id, spareKey: KEY });
    assert.equal(pool(h)!.target[KEY], 3);
    h.runner.of("spare:2").exited({ code: 1 });
    assert.deepEqual(pool(h)?.target, { [KEY]: 2 });
    assert.deepEqual(Object.keys(pool(h)!.spares), ["spare:1", "spare:3"]);
    assert.deepEqual(h.finished, [], "a spare's end is not a run's outcome");
    assertHealthy(h);
  });

  test("a key whose last spare retired is forgotten; its next run starts one anew", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    h.runner.of("spare:1").ready();
    h.advance(IDLE_MS);
    assert.equal(h.ref("spare:1"), undefined);
    assert.deepEqual(pool(h), { idleMs: IDLE_MS, spares: {}, target: {}, seq: 1 });
    freshRun(h, "r2");
    assert.deepEqual(pool(h)?.spares, { "spare:2": KEY });
    assert.deepEqual(h.children().sort(), [SPARE_POOL_ID], "spares are the pool's children, not the supervisor's");
    assertHealthy(h);
  });

  test("readySpare reads each spare's own state, oldest first; no pool, no spare", () => {
    const h = startSupervisor();
    assert.equal(readySpare(undefined, KEY), undefined);
    for (const id of ["r1", "r2"]) h.start({ runId: id, spareKey: KEY });
    const snapshot = () => h.ref(SPARE_POOL_ID)!.getSnapshot();
    assert.equal(readySpare(snapshot(), KEY), undefined, "both warming");
    h.runner.of("spare:2").ready();
    assert.equal(readySpare(snapshot(), KEY), "spare:2");
    h.runner.of("spare:1").ready();
    assert.equal(readySpare(snapshot(), KEY), "spare:1");
    assert.equal(readySpare(snapshot(), "other"), undefined);
  });
});

describe("serving: the pool's arithmetic", () => {
  test("afterRun: one for a new key; a claim is replaced; a run finding none ready grows the key by one, bounded", () => {
    const empty = initialPool({ idleMs: 5 });
    const first = afterRun(empty, run());
    assert.deepEqual(
      first.start.map((s) => s.id),
      ["spare:1"],
    );
    assert.deepEqual(first.start[0], { id: "spare:1", idleMs: 5, key: KEY, cwd: "/w" });
    const one = { ...empty, ...first.next };
    const claimed = afterRun(one, run("spare:1"));
    assert.deepEqual(claimed.next, { spares: { "spare:2": KEY }, seq: 2, target: { [KEY]: 1 } });
    const grown = afterRun(one, run());
    assert.deepEqual(grown.next, { spares: { "spare:1": KEY, "spare:2": KEY }, seq: 2, target: { [KEY]: 2 } });
    const full = { ...one, target: { [KEY]: MAX_SPARES_PER_KEY } };
    assert.equal(afterRun(full, run()).next.target[KEY], MAX_SPARES_PER_KEY);
  });

  test("afterEnd: an ended spare leaves, its key keeps what is left, and a key with none left is forgotten", () => {
    const c = {
      ...initialPool({ idleMs: 5 }),
      spares: { "spare:1": "a", "spare:2": "b", "spare:3": "a" },
      target: { a: 3, b: 1 },
      seq: 3,
    };
    assert.deepEqual(afterEnd(c, { id: "spare:1", key: "a", end: "retired" }), {
      spares: { "spare:2": "b", "spare:3": "a" },
      target: { a: 1, b: 1 },
    });
    assert.deepEqual(afterEnd(c, { id: "spare:2", key: "b", end: "claimed" }), {
      spares: { "spare:1": "a", "spare:3": "a" },
      target: { a: 3 },
    });
  });
});

describe("stopping", () => {
  test("supervisor.shutdown retires every spare (warming or ready); the pool stays, starting none", () => {
    const h = startSupervisor();
    freshRun(h, "r1");
    h.runner.of("spare:1").ready();
    h.start({ runId: "r2", spareKey: KEY });
    h.start({ runId: "r3", spareKey: KEY });
    h.shutdown();
    assert.equal(h.value(SPARE_POOL_ID), "stopping");
    assert.deepEqual(pool(h)?.spares, {});
    assert.deepEqual(h.children().sort(), [SPARE_POOL_ID, "run:r2", "run:r3"].sort());
    assertHealthy(h);
  });

  test("a run reported to a stopping pool starts no spare", () => {
    const started: string[] = [];
    const logic = sparePoolMachine.provide({
      actors: {
        spare: spareMachine.provide({
          actors: { runner: fromCallback(({ input }) => void started.push((input as { owner: string }).owner)) },
        }),
      },
    });
    const actor = createActor(logic, { input: { idleMs: IDLE_MS } }).start();
    actor.send(run());
    assert.deepEqual(started, ["spare:1"]);
    actor.send({ type: "spares.shutdown", at: 1 });
    assert.equal(actor.getSnapshot().value, "stopping");
    assert.deepEqual(actor.getSnapshot().context.spares, {});
    actor.send(run());
    assert.deepEqual(started, ["spare:1"], "none started");
    assert.deepEqual(Object.keys(actor.getSnapshot().children), []);
    actor.stop();
  });
});

describe("the definition", () => {
  test("every state is described, under the machine's id", () => {
    assert.equal(sparePoolMachine.id, "sparePool");
    assert.deepEqual(undescribedStates(sparePoolMachine), []);
  });
});
