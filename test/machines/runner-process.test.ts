// The runner process's lifecycle (machines/runner-process.ts), one `describe` per state: the machine alone, its effects
// recorded as the adapter (actors/runner/runner.ts) would carry them out. The adapter's real processes are driven by
// test/host/faults.test.ts, test/actors/runner/ and the host tests.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createActor } from "xstate";
import { runnerLifecycle, type RunnerLifeEvent } from "../../machines/runner-process.ts";
import { undescribedStates } from "../helpers/machine-states.ts";

type Effect = [string, ...unknown[]];

/** The machine with every effect recorded in order, in the state `path` of events leads to. */
function runner(path: RunnerLifeEvent[] = [], spare = false) {
  const effects: Effect[] = [];
  const note =
    (name: string) =>
    (_: unknown, params?: unknown): void => {
      effects.push(params === undefined ? [name] : [name, params]);
    };
  const actor = createActor(
    runnerLifecycle.provide({
      actions: {
        spawnProcess: note("spawnProcess"),
        reportReady: note("reportReady"),
        reportFailure: note("reportFailure"),
        reportExit: note("reportExit"),
        signalGroup: note("signalGroup"),
        askShutdown: note("askShutdown"),
        stopProcess: note("stopProcess"),
        killAdopted: note("killAdopted"),
        handOver: note("handOver"),
        offerNoProcess: note("offerNoProcess"),
      },
    }),
    { input: { spare } },
  ).start();
  for (const e of path) actor.send(e);
  effects.length = 0;
  return {
    actor,
    effects,
    send: (e: RunnerLifeEvent) => actor.send(e),
    value: () => actor.getSnapshot().value,
    done: () => actor.getSnapshot().status === "done",
  };
}

const launched: RunnerLifeEvent = { type: "launch.done" };
const spawned: RunnerLifeEvent = { type: "spawn.done", adopted: false };
const ready: RunnerLifeEvent = { type: "process.ready" };
const exited: RunnerLifeEvent = { type: "process.ended", exit: { code: 0, signal: null } };
const UP = [launched, spawned, ready];

describe("launching", () => {
  test("a launched command is spawned", () => {
    const r = runner();
    assert.equal(r.value(), "launching");
    r.send(launched);
    assert.equal(r.value(), "spawning");
    assert.deepEqual(r.effects, [["spawnProcess"]]);
  });

  test("a launch that fails is reported as the runner's failure, and nothing is spawned", () => {
    const r = runner();
    r.send({ type: "launch.failed", message: "no interpreter" });
    assert.equal(r.value(), "ended");
    assert.deepEqual(r.effects, [["reportFailure", { message: "no interpreter" }]]);
  });

  test("a stop asked for now abandons the runner", () => {
    const r = runner();
    r.send({ type: "stop", how: "terminate" });
    assert.deepEqual(r.value(), { abandoning: "launching" });
    assert.deepEqual(r.effects, []);
  });

  test("released while launching: nothing is reported; a spare's waiter hears it has no process", () => {
    const plain = runner();
    plain.send({ type: "release" });
    assert.equal(plain.done(), true);
    assert.deepEqual(plain.effects, []);
    const spare = runner([], true);
    spare.send({ type: "release" });
    assert.deepEqual(spare.effects, [["offerNoProcess"]]);
    spare.send(launched);
    assert.deepEqual(spare.effects, [["offerNoProcess"]], "a launch settling later starts nothing");
  });
});

describe("spawning", () => {
  test("a started process boots; an adopted spare's is ready at once and says so", () => {
    const r = runner([launched]);
    r.send(spawned);
    assert.deepEqual(r.value(), { up: "booting" });
    assert.deepEqual(r.effects, []);
    const a = runner([launched]);
    a.send({ type: "spawn.done", adopted: true });
    assert.deepEqual(a.value(), { up: "ready" });
    assert.deepEqual(a.effects, [["reportReady"]]);
  });

  test("a spawn that fails is reported with its hint", () => {
    const r = runner([launched]);
    r.send({ type: "spawn.failed", message: "bwrap: no user namespaces", hint: "sandbox_userns" });
    assert.equal(r.value(), "ended");
    assert.deepEqual(r.effects, [["reportFailure", { message: "bwrap: no user namespaces", hint: "sandbox_userns" }]]);
  });

  test("a stop asked for now abandons the runner; released now, it waits to stop what starts", () => {
    const r = runner([launched]);
    r.send({ type: "stop", how: "kill" });
    assert.deepEqual(r.value(), { abandoning: "spawning" });
    const s = runner([launched]);
    s.send({ type: "release" });
    assert.equal(s.value(), "releasing");
  });
});

describe("abandoning", () => {
  test("the launch settling: nothing starts, the owner hears the runner exited with nothing to tell", () => {
    const r = runner([{ type: "stop", how: "shutdown" }]);
    r.send(launched);
    assert.equal(r.value(), "ended");
    assert.deepEqual(r.effects, [["reportExit", { code: null, signal: null }]]);
  });

  test("the launch failing is still reported as a failure", () => {
    const r = runner([{ type: "stop", how: "terminate" }]);
    r.send({ type: "launch.failed", message: "no interpreter" });
    assert.equal(r.value(), "ended");
    assert.deepEqual(r.effects, [["reportFailure", { message: "no interpreter" }]]);
  });

  test("the process starting: it is stopped at once (an adopted spare's killed first), reported exited", () => {
    const r = runner([launched, { type: "stop", how: "terminate" }]);
    r.send(spawned);
    assert.equal(r.value(), "ended");
    assert.deepEqual(r.effects, [["stopProcess"], ["reportExit", { code: null, signal: null }]]);
    const a = runner([launched, { type: "stop", how: "terminate" }]);
    a.send({ type: "spawn.done", adopted: true });
    assert.deepEqual(a.effects, [["killAdopted"], ["stopProcess"], ["reportExit", { code: null, signal: null }]]);
  });

  test("a spawn that started nothing, or failed, is reported", () => {
    const r = runner([launched, { type: "stop", how: "kill" }]);
    r.send({ type: "spawn.cancelled" });
    assert.equal(r.value(), "ended");
    assert.deepEqual(r.effects, [["reportExit", { code: null, signal: null }]]);
    const f = runner([launched, { type: "stop", how: "kill" }]);
    f.send({ type: "spawn.failed", message: "no such file" });
    assert.equal(f.value(), "ended");
    assert.deepEqual(f.effects, [["reportFailure", { message: "no such file" }]]);
  });

  test("further stops change nothing; a release waits for the spawn", () => {
    const r = runner([launched, { type: "stop", how: "kill" }]);
    r.send({ type: "stop", how: "terminate" });
    assert.deepEqual(r.value(), { abandoning: "spawning" });
    r.send({ type: "release" });
    assert.equal(r.value(), "releasing");
    assert.deepEqual(r.effects, []);
  });
});

describe("up", () => {
  test("booting: the `ready` frame is reported; a handover before it is refused (nothing to hand)", () => {
    const r = runner([launched, spawned], true);
    r.send({ type: "handover" });
    assert.deepEqual(r.value(), { up: "booting" });
    r.send(ready);
    assert.deepEqual(r.value(), { up: "ready" });
    assert.deepEqual(r.effects, [["reportReady"]]);
  });

  test("ready: a spare's process is handed over", () => {
    const r = runner(UP, true);
    r.send({ type: "handover" });
    assert.equal(r.value(), "handedOver");
    assert.deepEqual(r.effects, [["handOver"]]);
  });

  test("the owner's terminate and kill signal the group; shutdown asks the runner", () => {
    const r = runner(UP);
    r.send({ type: "stop", how: "terminate" });
    r.send({ type: "stop", how: "kill" });
    r.send({ type: "stop", how: "shutdown" });
    assert.deepEqual(r.value(), { up: "ready" });
    assert.deepEqual(r.effects, [
      ["signalGroup", { signal: "SIGTERM" }],
      ["signalGroup", { signal: "SIGKILL" }],
      ["askShutdown"],
    ]);
  });

  test("the process exiting is reported with its code and signal; a lost connection as a failure", () => {
    const r = runner(UP);
    r.send({ type: "process.ended", exit: { code: null, signal: "SIGKILL" } });
    assert.equal(r.value(), "ended");
    assert.deepEqual(r.effects, [["reportExit", { code: null, signal: "SIGKILL" }]]);
    const l = runner([launched, spawned]);
    l.send({ type: "process.ended", exit: { code: null, signal: null, lost: { message: "ssh: gone", hint: "ssh" } } });
    assert.equal(l.value(), "ended");
    assert.deepEqual(l.effects, [["reportFailure", { message: "ssh: gone", hint: "ssh" }]]);
  });

  test("a broken control channel kills the process tree", () => {
    const r = runner(UP);
    r.send({ type: "process.broke", why: "the runner broke the control protocol (bad frame)" });
    assert.equal(r.value(), "broken");
    assert.deepEqual(r.effects, [["signalGroup", { signal: "SIGKILL" }]]);
  });

  test("released: the process tree is stopped", () => {
    const r = runner(UP);
    r.send({ type: "release" });
    assert.equal(r.done(), true);
    assert.deepEqual(r.effects, [["stopProcess"]]);
  });
});

describe("broken", () => {
  const BROKEN: RunnerLifeEvent[] = [...UP, { type: "process.broke", why: "output past 1 MiB", hint: "limit_output" }];

  test("the exit is reported as a failure saying why, with the first break's hint", () => {
    const r = runner(BROKEN);
    r.send({ type: "process.broke", why: "a later break" });
    r.send(exited);
    assert.equal(r.value(), "ended");
    assert.deepEqual(r.effects, [
      ["reportFailure", { message: "output past 1 MiB; its process was killed", hint: "limit_output" }],
    ]);
  });

  test("a ready frame, a handover or a stop now does nothing", () => {
    const r = runner(BROKEN, true);
    r.send(ready);
    r.send({ type: "handover" });
    r.send({ type: "stop", how: "terminate" });
    assert.equal(r.value(), "broken");
    assert.deepEqual(r.effects, []);
  });

  test("released before the exit: the tree is stopped", () => {
    const r = runner(BROKEN);
    r.send({ type: "release" });
    assert.equal(r.done(), true);
    assert.deepEqual(r.effects, [["stopProcess"]]);
  });
});

describe("ended", () => {
  test("nothing more is reported or signalled; a release stops nothing", () => {
    const r = runner([...UP, exited]);
    r.send(exited);
    r.send({ type: "stop", how: "kill" });
    r.send({ type: "release" });
    assert.equal(r.done(), true);
    assert.deepEqual(r.effects, []);
  });

  test("a spare that ended tells its waiter it has no process when released", () => {
    const r = runner([...UP, exited], true);
    r.send({ type: "release" });
    assert.deepEqual(r.effects, [["offerNoProcess"]]);
  });
});

describe("handedOver", () => {
  test("the process is the run's now: stops and the release touch nothing", () => {
    const r = runner([...UP, { type: "handover" }], true);
    r.send({ type: "stop", how: "kill" });
    r.send(exited);
    r.send({ type: "release" });
    assert.equal(r.done(), true);
    assert.deepEqual(r.effects, []);
  });
});

describe("releasing", () => {
  test("a spare's waiter hears at once; the process, once it exists, is stopped (an adopted one killed)", () => {
    const r = runner([launched], true);
    r.send({ type: "release" });
    assert.deepEqual(r.effects, [["offerNoProcess"]]);
    r.send({ type: "spawn.done", adopted: true });
    assert.equal(r.done(), true);
    assert.deepEqual(r.effects, [["offerNoProcess"], ["killAdopted"], ["stopProcess"]]);
  });

  test("a spawn that failed or started nothing leaves nothing to stop, and reports nothing", () => {
    for (const end of [{ type: "spawn.failed", message: "x" }, { type: "spawn.cancelled" }] as RunnerLifeEvent[]) {
      const r = runner([launched]);
      r.send({ type: "release" });
      r.send(end);
      assert.equal(r.done(), true);
      assert.deepEqual(r.effects, []);
    }
  });
});

describe("released", () => {
  test("final: nothing after it is reported", () => {
    const r = runner(UP);
    r.send({ type: "release" });
    r.effects.length = 0;
    r.send(exited);
    r.send({ type: "process.broke", why: "x" });
    assert.deepEqual(r.effects, []);
  });
});

describe("the definition", () => {
  test("every state is described, under the machine's id", () => {
    assert.equal(runnerLifecycle.id, "runner");
    assert.deepEqual(undescribedStates(runnerLifecycle), []);
  });

  test("an effect left unprovided fails loudly, naming itself and who provides it", () => {
    const actor = createActor(runnerLifecycle, { input: { spare: false } });
    let error: unknown;
    actor.subscribe({ error: (e) => (error = e) });
    actor.start();
    actor.send({ type: "launch.done" });
    assert.match(String(error), /`spawnProcess` action must be provided \(actors\/runner\/runner\.ts\)/);
  });

  test("each effect names itself when unprovided", () => {
    const actions = runnerLifecycle.implementations.actions as Record<string, (...a: unknown[]) => unknown>;
    const effects = ["spawnProcess", "reportReady", "reportFailure", "reportExit", "signalGroup", "askShutdown"];
    effects.push("stopProcess", "killAdopted", "handOver", "offerNoProcess");
    for (const name of effects) {
      assert.throws(
        () => actions[name]!({}, {}),
        new Error(`machines/runner-process.ts: the \`${name}\` action must be provided (actors/runner/runner.ts)`),
      );
    }
  });
});
