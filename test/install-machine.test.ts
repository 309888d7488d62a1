// The run machine's `installing` state with a scripted kernel and a scripted installer under a simulated clock:
// installation comes before the code (a fresh run's process starts with the environment's interpreter; a session
// run is sent only once its packages are in place), the deadline covers it, cancellation stops it, and failures
// are setup errors with their hint. No process, no real timer.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createActor, fromCallback, SimulatedClock } from "xstate";
import type { InstallFact, InstallInput, InstallSummary, RunOutcome } from "../machines/events.ts";
import { supervisorWith } from "../host/system.ts";
import { createFakeKernel, TEST_LIMITS } from "./helpers/fake-kernel.ts";

function harness() {
  const clock = new SimulatedClock();
  const kernel = createFakeKernel({ now: () => clock.now() });
  const installs: { input: InstallInput; send: (f: InstallFact) => void; stopped: boolean }[] = [];
  const install = fromCallback<{ type: string }, InstallInput>(({ input, sendBack }) => {
    const entry = { input, send: (f: InstallFact) => sendBack(f), stopped: false };
    installs.push(entry);
    return () => {
      entry.stopped = true;
    };
  });
  const actor = createActor(supervisorWith(kernel.logic, { install }), {
    id: "supervisor",
    systemId: "supervisor",
    input: { limits: TEST_LIMITS },
    clock,
  });
  const finished: RunOutcome[] = [];
  actor.on("run.finished", (e) => finished.push(e.outcome));
  actor.start();
  const start = (runId: string, extra: Record<string, unknown> = {}) =>
    actor.send({
      type: "run.start",
      at: clock.now(),
      runId,
      code: "import tinypkg",
      cwd: "/w",
      timeoutMs: 5000,
      python: "/py",
      dependencies: ["tinypkg==1.0"],
      ...extra,
    });
  const runValue = (runId: string) =>
    (actor.system.get(`run:${runId}`)?.getSnapshot() as { value: unknown } | undefined)?.value;
  return { clock, kernel, installs, actor, finished, start, runValue };
}

const FRESH_ENV: InstallSummary = {
  installer: "pip",
  requirements: ["tinypkg==1.0"],
  cached: false,
  python: "/envs/k/bin/python",
  modules: ["tinypkg"],
};

describe("installing before the code runs", () => {
  test("a fresh run starts its process only after installation, with the environment's interpreter", () => {
    const h = harness();
    h.start("f");
    assert.equal(h.runValue("f"), "installing");
    assert.equal(h.kernel.instances.length, 0, "no process yet");
    assert.deepEqual(h.installs[0].input, {
      runId: "f",
      owner: "install:f",
      mode: "fresh",
      dependencies: ["tinypkg==1.0"],
      cwd: "/w",
      python: "/py",
    });
    h.clock.increment(800);
    h.installs[0].send({ type: "install.done", at: h.clock.now(), ...FRESH_ENV });
    assert.equal(h.runValue("f"), "starting");
    assert.ok(h.installs[0].stopped, "the installer actor ends with the state");
    const k = h.kernel.of("run:f");
    assert.equal(k.input.python, "/envs/k/bin/python");
    k.ready();
    assert.deepEqual(k.received[0], { type: "kernel.run", runId: "f", code: "import tinypkg", filename: "script.py" });
    k.started("f");
    k.done("f");
    assert.deepEqual(h.finished[0].install, FRESH_ENV);
    assert.equal(h.finished[0].status, "success");
  });

  test("a session run waits for its packages, then is sent with the package directory and the modules to check", () => {
    const h = harness();
    h.start("s1", { session: "s", dependencies: undefined, code: "x = 1" });
    const k = h.kernel.of("session:s");
    k.ready();
    k.started("s1");
    k.done("s1");
    h.start("s2", { session: "s" });
    assert.equal(h.runValue("s2"), "installing");
    assert.equal(h.installs[0].input.mode, "session");
    assert.deepEqual(h.installs[0].input.session, { name: "s", incarnation: 1 });
    assert.equal(k.received.filter((c) => c.type === "kernel.run").length, 1, "not sent while installing");
    h.installs[0].send({
      type: "install.done",
      at: h.clock.now(),
      installer: "pip",
      requirements: ["tinypkg==1.0"],
      cached: false,
      sysPath: "/pkgs/s-1",
      modules: ["tinypkg"],
    });
    const sent = k.received.filter((c) => c.type === "kernel.run").at(-1);
    assert.deepEqual(sent, {
      type: "kernel.run",
      runId: "s2",
      code: "import tinypkg",
      filename: "script-2.py",
      sysPath: ["/pkgs/s-1"],
      checkLoaded: ["tinypkg"],
    });
    k.started("s2");
    k.send({
      type: "kernel.done",
      at: h.clock.now(),
      runId: "s2",
      exitCode: 0,
      displayedValue: false,
      error: null,
      alreadyLoaded: ["tinypkg"],
    });
    assert.deepEqual(h.finished.at(-1)!.alreadyLoaded, ["tinypkg"]);
  });

  test("a failure is a setup_error with its hint; the code is never sent", () => {
    const h = harness();
    h.start("bad", { session: "s" });
    const k = h.kernel.of("session:s");
    k.ready();
    const hint = { id: "dependency_resolution", text: "no solution" };
    h.installs[0].send({
      type: "install.failed",
      at: h.clock.now(),
      message: "No matching distribution found for tinypkg==1.0",
      hint,
    });
    const o = h.finished[0];
    assert.equal(o.status, "setup_error");
    assert.equal(o.stage, "install");
    assert.deepEqual(o.hints, [hint]);
    assert.equal(o.session?.isLost, false);
    assert.deepEqual(k.types(), [], "the session's process got nothing");
  });

  test("the deadline covers installation; the session keeps its state", () => {
    const h = harness();
    h.start("slow", { session: "s", timeoutMs: 2000 });
    h.kernel.of("session:s").ready();
    h.clock.increment(1999);
    assert.equal(h.finished.length, 0);
    h.clock.increment(1);
    const o = h.finished[0];
    assert.equal(o.status, "timeout");
    assert.equal(o.stage, "install");
    assert.equal(o.durationMs, 2000);
    assert.equal(o.session?.isLost, false);
    assert.ok(h.installs[0].stopped, "the installer is stopped");
    assert.equal(h.actor.getSnapshot().context.sessions.s.status, "alive");
  });

  test("installation time counts against the deadline of the code that follows", () => {
    const h = harness();
    h.start("late", { timeoutMs: 3000 });
    h.clock.increment(2500);
    h.installs[0].send({ type: "install.done", at: h.clock.now(), ...FRESH_ENV });
    const k = h.kernel.of("run:late");
    k.ready();
    k.started("late");
    h.clock.increment(499);
    assert.deepEqual(k.types(), ["kernel.run"]);
    h.clock.increment(1);
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt"], "interrupted at 3 s after the request");
  });

  test("cancellation during installation stops it; nothing runs", () => {
    const h = harness();
    h.start("c");
    h.clock.increment(100);
    h.actor.send({ type: "run.cancel", at: h.clock.now(), runId: "c" });
    const o = h.finished[0];
    assert.equal(o.status, "cancelled");
    assert.equal(o.stage, "install");
    assert.ok(h.installs[0].stopped);
    assert.equal(h.kernel.instances.length, 0);
  });
});
