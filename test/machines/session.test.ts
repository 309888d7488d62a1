// The session machine (machines/session.ts), one `describe` per state: its runs are real run actors and its process
// the fake runner, driven through the real supervisor root under a SimulatedClock. A session's phase while a run is
// being stopped (interrupted, grace, killed) is read from the run (`sessionPhase`): `h.value`/`h.values` name it so.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { SimulatedClock, createActor, fromCallback } from "xstate";
import type { AnyMachineSnapshot, EventObject } from "xstate";
import { getShortestPaths } from "xstate/graph";
import type { InstallFact, InstallInput, RunOutcome, RunStartEvent } from "../../machines/events.ts";
import { sessionMachine, sessionPhase, type SessionInput } from "../../machines/session.ts";
import { missingEffectError, undescribedStates } from "../helpers/machine-states.ts";
import { RUNNER_INFO, TEST_LIMITS, createFakeRunner, startSupervisor } from "../helpers/fake-runner.ts";
import { TOOLS, startSystem } from "../helpers/fake-dispatch.ts";
import { analysable, alphabet, describePath, handled, type Table } from "../helpers/machine-graph.ts";
import {
  BUSY,
  assertHealthy,
  ctx,
  graceMs,
  interruptWindowMs,
  killMs,
  nextSessionRun,
  run,
  sessionRunning,
} from "../helpers/machine-scenarios.ts";
import { outcome, refusedIn, sessionRef } from "../helpers/outcomes.ts";

const CWD = "/work";

/** The session machine's own successive states (`running.closeRequested`), not its phase: what the inspector's
 * statechart and a replay show. */
function ownValues(h: ReturnType<typeof startSupervisor>, id: string): string[] {
  const label = (v: unknown): string =>
    typeof v === "string"
      ? v
      : Object.entries(v as object)
          .map(([k, sub]) => `${k}.${label(sub)}`)
          .join(",");
  const out: string[] = [];
  for (const t of h.trace) {
    const v = t.id === id && t.value !== undefined ? label(t.value) : undefined;
    if (v !== undefined && out[out.length - 1] !== v) out.push(v);
  }
  return out;
}

/** The run a session is executing, read from the session's own context (the one place that knows it). */
function activeRun(h: ReturnType<typeof startSupervisor>, name: string): string | undefined {
  return (h.ref(`session:${name}`)!.getSnapshot() as { context: { activeRunId?: string } }).context.activeRunId;
}

/** A session started on its own (no supervisor, no first run). */
function startSession() {
  const clock = new SimulatedClock();
  const runner = createFakeRunner({ now: () => clock.now() });
  const session = createActor(sessionMachine.provide({ actors: { runner: runner.logic } }), {
    id: "session:s",
    systemId: "session:s",
    input: { name: "s", incarnation: 3, cwd: "/work", limits: TEST_LIMITS },
    clock,
  });
  const errors: unknown[] = [];
  session.subscribe({ error: (e) => errors.push(e) });
  session.start();
  return { session, clock, runner: runner.of("session:s"), errors };
}

// The graph is analysed only (not replayed): a session's facts also drive its real run child, whose done events are
// independent inputs here.
const FIRST_RUN: RunStartEvent = {
  type: "run.start",
  at: 0,
  runId: "s1",
  code: "x = 1",
  cwd: CWD,
  timeoutMs: 1000,
  session: "s",
};
const SESSION_INPUT: SessionInput = { name: "s", incarnation: 1, cwd: CWD, limits: TEST_LIMITS, firstRun: FIRST_RUN };
const SESSION_EVENTS: Table = {
  "runner.ready": [{ type: "runner.ready", at: 10, ...RUNNER_INFO }],
  "runner.started": [{ type: "runner.started", at: 20, runId: "s1" }],
  "runner.done": [{ type: "runner.done", at: 30, runId: "s1", exitCode: 0, displayedValue: false, error: null }],
  "runner.exited": [{ type: "runner.exited", at: 40, code: 1, signal: null }],
  "runner.failed": [{ type: "runner.failed", at: 40, message: "fatal" }],
  "runner.run": [{ type: "runner.run", runId: "s1", code: "x = 1", filename: "script-1.py" }],
  "runner.interrupt": [{ type: "runner.interrupt", runId: "s1" }],
  "runner.terminate": [{ type: "runner.terminate" }],
  "runner.kill": [{ type: "runner.kill" }],
  "run.start": [{ ...FIRST_RUN, at: 50, runId: "s2" }],
  "session.close": [{ type: "session.close", at: 60 }],
  "xstate.done.actor.*": [{ type: "xstate.done.actor.run:s1", actorId: "run:s1", output: undefined }],
  // Nested tool calls and their records only pass through the session (test/machines/tool-call.test.ts).
  "run.nested_call": [],
  "runner.tool_call": [],
  "runner.tool_cancel": [],
  "runner.tool_result": [],
  // Passed on to the run like its other facts (test/machines/run.test.ts drives it).
  "runner.cell": [],
};

describe("starting", () => {
  test("first run: session starting -> running -> idle, run started the process", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s", cwd: "/p", code: "x = 1" });
    assert.deepEqual(h.children(), ["session:s"]);
    assert.equal(h.value("session:s"), "starting");
    assert.equal(h.value("run:s1"), "starting");
    const k = h.runner.of("session:s");
    assert.deepEqual(k.input, { mode: "session", cwd: "/p", owner: "session:s" });
    assert.equal(h.runner.instances.length, 1); // the run's runner is the session link, not a process
    h.advance(10);
    k.ready();
    assert.equal(h.value("session:s"), "running");
    assert.deepEqual(k.received, [run("s1", "x = 1", "script-1.py")]);
    h.advance(10);
    k.started("s1");
    h.advance(10);
    k.done("s1");
    assert.deepEqual(
      h.outcome("s1"),
      outcome({
        runId: "s1",
        status: "success",
        exitCode: 0,
        finishedAt: 30,
        runner: RUNNER_INFO,
        session: sessionRef(),
      }),
    );
    assert.deepEqual(h.values("session:s"), ["starting", "running", "idle"]);
    assert.deepEqual(h.values("run:s1"), ["starting", "running", "success"]);
    assert.deepEqual(h.children(), ["session:s"]);
    assert.deepEqual(Object.keys(h.ref("session:s")!.getSnapshot().children), ["runner"]);
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 1, status: "alive", cwd: "/p" } });
    assert.deepEqual(ctx(h).active, {});
    assert.equal(k.stopped, false);
    assertHealthy(h);
  });

  test("runner.exited while the session starts: the first run is a setup_error and the session is lost", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s" });
    h.advance(4);
    h.runner.of("session:s").exited({ code: 1 });
    assert.deepEqual(
      h.outcome("s1"),
      outcome({
        runId: "s1",
        status: "setup_error",
        exitCode: 1,
        finishedAt: 4,
        message: "Python exited during start-up (exit code 1)",
        session: sessionRef({ isLost: true }),
      }),
    );
    assert.deepEqual(h.values("session:s"), ["starting", "lost"]);
    assert.equal(ctx(h).sessions.s?.status, "lost");
    assertHealthy(h);
  });

  test("deadline while the session starts: the run is killed through the session link, session lost", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s", timeoutMs: 1000 });
    const k = h.runner.of("session:s");
    h.advance(1000);
    assert.equal(h.value("run:s1"), "killed");
    assert.deepEqual(k.types(), ["runner.terminate"]);
    h.advance(killMs);
    assert.deepEqual(k.types(), ["runner.terminate", "runner.kill"]);
    k.exited({ signal: "SIGKILL" });
    assert.deepEqual(
      h.outcome("s1"),
      outcome({
        runId: "s1",
        status: "timeout",
        stopReason: "timeout",
        signal: "SIGKILL",
        finishedAt: 1500,
        killed: true,
        session: sessionRef({ isLost: true }),
      }),
    );
    assert.equal(ctx(h).sessions.s?.status, "lost");
    assertHealthy(h);
  });

  test("session.stop while the session starts: closing at once, the waiting run is killed and cancelled", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s" });
    const k = h.runner.of("session:s");
    h.stopSession("s");
    assert.equal(h.value("session:s"), "closing");
    assert.equal(h.value("run:s1"), "killed");
    // The run's terminate goes to the process directly, ahead of the session's shutdown (either ends it).
    assert.deepEqual(k.types(), ["runner.terminate", "runner.shutdown"]);
    h.advance(killMs);
    // Both the session's closing bound and the run's kill bound send runner.kill.
    assert.deepEqual(k.types(), ["runner.terminate", "runner.shutdown", "runner.kill", "runner.kill"]);
    k.exited({ signal: "SIGKILL" });
    assert.deepEqual(
      h.outcome("s1"),
      outcome({
        runId: "s1",
        status: "cancelled",
        stopReason: "cancelled",
        signal: "SIGKILL",
        finishedAt: 500,
        killed: true,
        session: sessionRef({ isLost: true }),
      }),
    );
    assert.deepEqual(h.values("session:s"), ["starting", "closing", "closed"]);
    assert.equal(ctx(h).sessions.s?.status, "closed");
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("starting -> runner.ready -> idle, then runner.exited -> lost with its output", () => {
    const { session, runner, errors } = startSession();
    assert.equal(session.getSnapshot().value, "starting");
    runner.ready();
    assert.equal(session.getSnapshot().value, "idle");
    assert.deepEqual(session.getSnapshot().context.runner, RUNNER_INFO);
    runner.exited({ code: 1 });
    assert.equal(session.getSnapshot().value, "lost");
    assert.equal(session.getSnapshot().status, "done");
    assert.deepEqual(session.getSnapshot().output, { name: "s", incarnation: 3, end: "lost" });
    assert.deepEqual(runner.types(), ["stopped"]);
    assert.deepEqual(errors, []);
  });

  test("session.close while starting -> closing; runner.failed while closing -> closed", () => {
    const { session, clock, runner, errors } = startSession();
    session.send({ type: "session.close", at: 0 });
    assert.equal(session.getSnapshot().value, "closing");
    assert.deepEqual(runner.types(), ["runner.shutdown"]);
    clock.increment(killMs);
    assert.deepEqual(runner.types(), ["runner.shutdown", "runner.kill"]);
    runner.failed("kill: ESRCH");
    assert.equal(session.getSnapshot().value, "closed");
    assert.deepEqual(session.getSnapshot().output, { name: "s", incarnation: 3, end: "closed" });
    assert.deepEqual(runner.types(), ["runner.shutdown", "runner.kill", "stopped"]);
    assert.deepEqual(errors, []);
  });

  test("runner.failed while a session starts: setup_error, the session closes without claiming lost state", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s" });
    h.runner.of("session:s").failed("cannot start python");
    assert.equal(ctx(h).sessions.s?.status, "closed");
    assert.equal(h.outcome("s1").status, "setup_error");
    assert.equal(h.outcome("s1").session?.isLost, false);
    h.start({ runId: "s2", session: "s" });
    h.runner.of("session:s").ready();
    h.runner.of("session:s").started("s2");
    h.runner.of("session:s").done("s2");
    assert.equal(h.outcome("s2").session?.replacedLost, undefined);
    assert.equal(h.outcome("s2").session?.incarnation, 2);
    assert.equal(h.outcome("s2").session?.ordinal, 1);
  });

  test("the session's phase is `killed` when its first run is killed before the runner is ready", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s" });
    h.cancel("s1");
    assert.equal(h.value("run:s1"), "killed");
    assert.equal(h.value("session:s"), "killed");
  });

  /** A session whose first run failed (its install) before the interpreter was ready: still `starting`, no run. */
  function firstRunFailedWhileStarting() {
    const installs: ((fact: InstallFact) => void)[] = [];
    const install = fromCallback<EventObject, InstallInput>(({ sendBack }) => void installs.push(sendBack));
    const h = startSupervisor({ install });
    h.start({ runId: "s1", session: "s", dependencies: ["nope==1"] });
    installs[0]!({ type: "install.failed", at: h.now(), message: "no such package" });
    assert.equal(h.outcome("s1").status, "setup_error");
    assert.equal(h.value("session:s"), "starting");
    return h;
  }

  test("a first run that ends before the interpreter is ready leaves the session starting until it is", () => {
    // Fixed: the session went idle without the process's info, so its next run waited for a ready that had gone by.
    const h = firstRunFailedWhileStarting();
    const k = h.runner.of("session:s");
    h.advance(10);
    k.ready();
    assert.equal(h.value("session:s"), "idle");
    h.start({ runId: "s2", session: "s" });
    assert.deepEqual(k.types(), ["runner.run"], "the next run goes out at once: the session knows its process is up");
    k.started("s2");
    k.done("s2");
    assert.equal(h.outcome("s2").status, "success");
    assertHealthy(h);
  });

  test("a run that comes after the first ended, before the interpreter is ready, waits for it in the first's place", () => {
    // Fixed: it was refused as "busy with another run" while no run was active (the session's own check answered
    // for a starting session whatever it held; the supervisor's copy of the busy run had already been cleared).
    const h = firstRunFailedWhileStarting();
    h.advance(5);
    h.start({ runId: "s2", session: "s", code: "y = 2" });
    assert.equal(h.value("session:s"), "starting");
    assert.equal(h.value("run:s2"), "starting", "it waits for the process, not refused");
    assert.equal(activeRun(h, "s"), "s2");
    const k = h.runner.of("session:s");
    assert.deepEqual(k.types(), [], "nothing goes to the process before it is ready");
    h.advance(10);
    k.ready();
    assert.equal(h.value("session:s"), "running");
    assert.deepEqual(k.received, [run("s2", "y = 2", "script-2.py")]);
    k.started("s2");
    k.done("s2");
    assert.equal(h.outcome("s2").status, "success");
    // The second run in this process (the first, refused before it ran, counted), which did not start it.
    assert.deepEqual(h.outcome("s2").session, { name: "s", ordinal: 2, incarnation: 1, started: false, isLost: false });
    assert.equal(h.value("session:s"), "idle");
    assertHealthy(h);
  });
});

describe("starting: what the process and each run are given", () => {
  const runInput = (h: ReturnType<typeof startSupervisor>, runId: string) =>
    (h.ref(`run:${runId}`)!.getSnapshot() as { context: Record<string, unknown> }).context;
  /** The next run `runId` in the idle session `name`, finished at once. */
  const another = (h: ReturnType<typeof startSupervisor>, name: string, runId: string, extra = {}) => {
    const k = h.runner.of(`session:${name}`);
    h.start({ runId, session: name, ...extra });
    const context = { ...runInput(h, runId) };
    k.started(runId);
    k.done(runId);
    return context;
  };

  test("a JavaScript session: its process and runs are JavaScript, its files cell-N.js", () => {
    const h = startSupervisor();
    h.start({ runId: "j1", session: "js", language: "js" });
    const k = h.runner.of("session:js");
    assert.deepEqual(k.input, { mode: "session", cwd: "/work", owner: "session:js", language: "js" });
    assert.deepEqual([runInput(h, "j1").filename, runInput(h, "j1").language], ["cell-1.js", "js"]);
    k.ready();
    k.started("j1");
    k.done("j1");
    assert.equal(another(h, "js", "j2", { language: "js" }).filename, "cell-2.js");
  });

  test("a Python session's runs are script-N.py, or cell-N.py for notebook cells; the interpreter is named", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s", python: "/py/bin/python3" });
    const k = h.runner.of("session:s");
    assert.deepEqual(k.input, { mode: "session", cwd: "/work", owner: "session:s", python: "/py/bin/python3" });
    assert.deepEqual([runInput(h, "s1").filename, runInput(h, "s1").python], ["script-1.py", "/py/bin/python3"]);
    assert.equal(runInput(h, "s1").language, undefined);
    k.ready();
    k.started("s1");
    k.done("s1");
    const cell = another(h, "s", "s2", { python: "/py/bin/python3", cell: { index: 1, count: 2 } });
    assert.deepEqual([cell.filename, cell.cell], ["cell-2.py", { index: 1, count: 2 }]);
  });

  test("only the first run of an incarnation says what it replaced; the request's extras reach every run", () => {
    const h = startSupervisor();
    sessionRunning(h, "s", "s1").done("s1");
    h.start({ runId: "s2", session: "s", python: "/py/a" });
    assert.deepEqual((runInput(h, "s2").session as { replaced?: unknown }).replaced, {
      reason: "interpreter",
      from: "the default interpreter",
    });
    const k = h.runner.of("session:s");
    k.ready();
    k.started("s2");
    k.done("s2");
    const next = another(h, "s", "s3", {
      python: "/py/a",
      notes: ["a note"],
      surface: "python",
      chdir: "/work/sub",
      result: "value",
      budget: "work",
      backend: "sandbox",
      limits: { ...TEST_LIMITS, graceMs: 9 },
    });
    assert.equal((next.session as { replaced?: unknown }).replaced, undefined);
    assert.deepEqual(
      [next.notes, next.surface, next.chdir, next.result, next.budget, next.backend, next.limits],
      [["a note"], "python", "/work/sub", "value", "work", "sandbox", { ...TEST_LIMITS, graceMs: 9 }],
    );
    const plain = another(h, "s", "s4", { python: "/py/a" });
    assert.deepEqual(
      [plain.notes, plain.surface, plain.chdir, plain.result, plain.budget, plain.backend, plain.limits],
      [undefined, undefined, undefined, undefined, undefined, undefined, TEST_LIMITS],
    );
  });

  test("a Python batch's further cells are named as the runs they stand for; the count goes on after them", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s", code: "a = 1", cell: { index: 0, count: 3 }, batch: ["b = 1", "c = 1"] });
    assert.equal(runInput(h, "s1").filename, "cell-1.py");
    assert.deepEqual(runInput(h, "s1").batch, [
      { code: "b = 1", filename: "cell-2.py" },
      { code: "c = 1", filename: "cell-3.py" },
    ]);
    assert.equal("cellTimeoutsMs" in runInput(h, "s1"), false, "none asked, none given");
    const k = h.runner.of("session:s");
    k.ready();
    k.started("s1");
    k.done("s1");
    const timed = another(h, "s", "s2", { cell: { index: 0, count: 2 }, batch: ["d = 1"], cellTimeoutsMs: [2500] });
    assert.deepEqual(
      [timed.filename, timed.batch, timed.cellTimeoutsMs],
      ["cell-4.py", [{ code: "d = 1", filename: "cell-5.py" }], [2500]],
    );
    const next = another(h, "s", "s3", { cell: { index: 0, count: 1 } });
    assert.equal(next.filename, "cell-6.py");
    assert.equal("batch" in next, false);
  });

  test("a JavaScript session takes no batch: one cell a run, the count one a run", () => {
    const h = startSupervisor();
    h.start({ runId: "j1", session: "js", language: "js", code: "1", batch: ["2", "3"] });
    assert.equal("batch" in runInput(h, "j1"), false);
    const k = h.runner.of("session:js");
    k.ready();
    k.started("j1");
    k.done("j1");
    assert.equal(another(h, "js", "j2", { language: "js" }).filename, "cell-2.js");
  });

  test("a session started on a backend labels every run with it", () => {
    const h = startSupervisor();
    h.start({ runId: "b1", session: "b", backend: "remote" });
    const k = h.runner.of("session:b");
    k.ready();
    k.started("b1");
    k.done("b1");
    assert.equal(another(h, "b", "b2").backend, "remote");
  });
});

describe("idle", () => {
  test("next run reuses the process: ready at once, script-2.py, started false", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    k.done("s1");
    h.advance(100);
    h.start({ runId: "s2", session: "s", code: "x" });
    assert.equal(h.value("session:s"), "running");
    assert.equal(h.value("run:s2"), "starting");
    assert.deepEqual(k.received, [run("s1", 'print("s1")', "script-1.py"), run("s2", "x", "script-2.py")]);
    h.advance(5);
    k.started("s2");
    h.advance(5);
    k.done("s2", { displayedValue: true });
    assert.deepEqual(
      h.outcome("s2"),
      outcome({
        runId: "s2",
        status: "success",
        exitCode: 0,
        displayedValue: true,
        requestedAt: 120,
        finishedAt: 130,
        runner: RUNNER_INFO,
        session: sessionRef({ ordinal: 2, started: false }),
      }),
    );
    assert.equal(h.runner.instances.length, 1);
    assert.deepEqual(h.values("session:s"), ["starting", "running", "idle", "running", "idle"]);
    assertHealthy(h);
  });

  test("runner.exited while the session is idle: lost between runs, next run replaces it", () => {
    const h = startSupervisor();
    const k1 = sessionRunning(h, "s", "s1");
    k1.done("s1");
    k1.exited({ code: 0 });
    assert.deepEqual(h.values("session:s"), ["starting", "running", "idle", "lost"]);
    assert.equal(h.finished.length, 1);
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 1, status: "lost", cwd: "/work" } });
    assert.deepEqual(h.children(), []);
    h.start({ runId: "s2", session: "s" });
    const k2 = h.runner.of("session:s");
    k2.ready();
    k2.started("s2");
    k2.done("s2");
    assert.deepEqual(h.outcome("s2").session, {
      name: "s",
      ordinal: 1,
      incarnation: 2,
      started: true,
      replacedLost: true,
      isLost: false,
    });
    assertHealthy(h);
  });

  test("runner.failed while idle -> lost", () => {
    const { session, runner, errors } = startSession();
    runner.ready();
    runner.failed("protocol error");
    assert.equal(session.getSnapshot().value, "lost");
    assert.deepEqual(errors, []);
  });
});

describe("idle: a direct run (the warm path)", () => {
  const direct = (runId: string, code = "x = 1"): RunStartEvent => ({
    type: "run.start",
    at: 0,
    runId,
    code,
    cwd: CWD,
    timeoutMs: 1000,
    session: "s",
    direct: true,
  });

  test("its outcome is emitted to the host, not sent to a parent; the session is idle again", () => {
    const { session, runner, errors } = startSession();
    const emitted: RunOutcome[] = [];
    session.on("run.finished", (e) => emitted.push(e.outcome));
    runner.ready();
    session.send(direct("d1"));
    assert.deepEqual(session.getSnapshot().value, { running: "active" });
    assert.equal(session.getSnapshot().context.direct, true);
    runner.done("d1");
    assert.equal(session.getSnapshot().value, "idle");
    assert.equal(session.getSnapshot().context.direct, undefined);
    assert.deepEqual(
      emitted.map((o) => [o.runId, o.status, o.session?.ordinal]),
      [["d1", "success", 1]],
    );
    // A standalone session has no parent: a `sendParent` would have errored it.
    assert.deepEqual(errors, []);
  });

  test("a direct run that finds the session busy is refused where its outcome would go, with the busy words", () => {
    const { session, runner, errors } = startSession();
    const emitted: RunOutcome[] = [];
    session.on("run.finished", (e) => emitted.push(e.outcome));
    runner.ready();
    session.send(direct("d1"));
    session.send(direct("d2"));
    assert.equal(emitted.length, 1);
    assert.equal(emitted[0]!.runId, "d2");
    assert.equal(emitted[0]!.status, "setup_error");
    assert.equal(emitted[0]!.message, BUSY("s"));
    runner.done("d1");
    assert.deepEqual(
      emitted.map((o) => o.runId),
      ["d2", "d1"],
    );
    assert.deepEqual(errors, []);
  });
});

describe("running", () => {
  test("timeout answered in time: interrupted -> runner.done -> timeout, session idle and state kept", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1"); // deadline at t = 1000
    h.advance(980);
    assert.equal(h.value("run:s1"), "interrupted");
    assert.equal(h.value("session:s"), "interrupted");
    assert.deepEqual(k.received, [run("s1", 'print("s1")', "script-1.py"), { type: "runner.interrupt", runId: "s1" }]);
    h.advance(10);
    k.done("s1", { exitCode: 130, error: "interrupt" });
    assert.deepEqual(
      h.outcome("s1"),
      outcome({
        runId: "s1",
        status: "timeout",
        stopReason: "timeout",
        exitCode: 130,
        finishedAt: 1010,
        runner: RUNNER_INFO,
        session: sessionRef(),
      }),
    );
    assert.deepEqual(h.values("session:s"), ["starting", "running", "interrupted", "idle"]);
    assert.equal(k.stopped, false);
    // Same process (incarnation), the next ordinal: the state survived.
    nextSessionRun(h, "s", "s2");
    k.done("s2");
    assert.deepEqual(h.outcome("s2").session, sessionRef({ ordinal: 2, started: false }));
    assert.equal(h.runner.all("session:s").length, 1);
    assertHealthy(h);
  });

  test("cancel in a session: interrupted -> runner.done -> cancelled, session idle", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    h.cancel("s1");
    assert.equal(h.value("session:s"), "interrupted");
    k.done("s1", { exitCode: 130, error: "interrupt" });
    assert.equal(h.outcome("s1").status, "cancelled");
    assert.deepEqual(h.outcome("s1").session, sessionRef());
    assert.equal(h.value("session:s"), "idle");
    assertHealthy(h);
  });

  test("interrupted -> grace -> killed -> runner.exited: session lost, outcome isLost and killed", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    h.advance(980); // t = 1000
    assert.equal(h.value("session:s"), "interrupted");
    assert.equal(h.value("run:s1"), "interrupted");
    h.advance(interruptWindowMs);
    assert.equal(h.value("session:s"), "grace");
    assert.equal(h.value("run:s1"), "grace");
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt"]);
    h.advance(graceMs);
    assert.equal(h.value("session:s"), "killed");
    assert.equal(h.value("run:s1"), "killed");
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt", "runner.terminate"]);
    h.advance(killMs - 1);
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt", "runner.terminate"]);
    h.advance(1);
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt", "runner.terminate", "runner.kill"]);
    h.advance(10);
    k.exited({ signal: "SIGKILL" });
    assert.deepEqual(
      h.outcome("s1"),
      outcome({
        runId: "s1",
        status: "timeout",
        stopReason: "timeout",
        signal: "SIGKILL",
        finishedAt: 2610,
        killed: true,
        runner: RUNNER_INFO,
        session: sessionRef({ isLost: true }),
      }),
    );
    assert.deepEqual(h.values("session:s"), ["starting", "running", "interrupted", "grace", "killed", "lost"]);
    assert.deepEqual(h.values("run:s1"), ["starting", "running", "interrupted", "grace", "killed", "timeout"]);
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt", "runner.terminate", "runner.kill", "stopped"]);
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 1, status: "lost", cwd: "/work" } });
    assert.deepEqual(ctx(h).active, {});
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("os._exit while running: runner.exited -> runtime_error, session lost", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    h.advance(5);
    k.exited({ code: 3 });
    assert.deepEqual(
      h.outcome("s1"),
      outcome({
        runId: "s1",
        status: "runtime_error",
        exitCode: 3,
        finishedAt: 25,
        runner: RUNNER_INFO,
        session: sessionRef({ isLost: true }),
      }),
    );
    assert.deepEqual(h.values("session:s"), ["starting", "running", "lost"]);
    // Its own states: the process gone, it was `ending.lost` until the run reported.
    assert.deepEqual(ownValues(h, "session:s"), ["starting", "running.active", "ending.lost", "lost"]);
    assert.deepEqual(k.types(), ["runner.run", "stopped"]);
    assert.equal(ctx(h).sessions.s?.status, "lost");
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("session busy: a second run is refused with a setup_error, the first goes on", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s" });
    h.advance(3);
    // Busy while starting, too.
    h.start({ runId: "s2", session: "s" });
    assert.deepEqual(
      h.outcome("s2"),
      outcome({
        runId: "s2",
        status: "setup_error",
        requestedAt: 3,
        finishedAt: 3,
        message: BUSY("s"),
        session: refusedIn("s", 1),
      }),
    );
    const k = h.runner.of("session:s");
    k.ready();
    k.started("s1");
    h.advance(7);
    h.start({ runId: "s3", session: "s", reset: true }); // reset does not override busy
    assert.deepEqual(
      h.outcome("s3"),
      outcome({
        runId: "s3",
        status: "setup_error",
        requestedAt: 10,
        finishedAt: 10,
        message: BUSY("s"),
        session: refusedIn("s", 1),
      }),
    );
    assert.equal(h.value("run:s1"), "running");
    assert.deepEqual(k.types(), ["runner.run"]);
    assert.deepEqual(ctx(h).active, { s1: "s" });
    assert.equal(activeRun(h, "s"), "s1", "busy is the session's own fact");
    assert.equal("busyRunId" in ctx(h).sessions.s!, false, "the supervisor keeps no copy of it");
    assert.deepEqual(h.children(), ["session:s"]);
    k.done("s1");
    assert.equal(h.outcome("s1").status, "success");
    assert.equal(activeRun(h, "s"), undefined);
    assertHealthy(h);
  });

  test("the session itself refuses a run while busy (behind the supervisor's own check)", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    // Past the supervisor's check (which reads the session): the session refuses on its own and reports to the supervisor.
    h.ref("session:s")!.send({
      type: "run.start",
      at: 21,
      runId: "x1",
      code: "",
      cwd: "/work",
      timeoutMs: 10,
      session: "s",
    });
    assert.deepEqual(
      h.outcome("x1"),
      outcome({
        runId: "x1",
        status: "setup_error",
        requestedAt: 21,
        finishedAt: 21,
        message: BUSY("s"),
        session: refusedIn("s", 1),
      }),
    );
    assert.equal(h.value("session:s"), "running");
    assert.equal(h.ref("run:x1"), undefined);
    assert.deepEqual(k.types(), ["runner.run"]);
    assertHealthy(h);
  });

  test("session.stop while a run is active cancels the run first, then closes", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    h.advance(5);
    h.stopSession("s");
    assert.equal(h.value("run:s1"), "interrupted");
    assert.equal(h.value("session:s"), "interrupted");
    assert.deepEqual(h.ref("session:s")!.getSnapshot().value, { running: "closeRequested" });
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt"]);
    h.advance(5);
    k.done("s1", { exitCode: 130, error: "interrupt" });
    assert.deepEqual(
      h.outcome("s1"),
      outcome({
        runId: "s1",
        status: "cancelled",
        stopReason: "cancelled",
        exitCode: 130,
        finishedAt: 30,
        runner: RUNNER_INFO,
        session: sessionRef(),
      }),
    );
    assert.equal(h.value("session:s"), "closing");
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt", "runner.shutdown"]);
    k.exited({ code: 0 });
    assert.deepEqual(h.values("session:s"), ["starting", "running", "interrupted", "closing", "closed"]);
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 1, status: "closed", cwd: "/work" } });
    assert.deepEqual(ctx(h).active, {});
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("session.stop while the run is already interrupted keeps its stop reason", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    h.advance(980);
    assert.equal(h.value("session:s"), "interrupted");
    h.stopSession("s");
    assert.equal(h.value("session:s"), "interrupted");
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt"]); // no second interrupt
    h.advance(interruptWindowMs);
    assert.equal(h.value("session:s"), "grace");
    k.done("s1", { exitCode: 130, error: "interrupt" });
    assert.equal(h.outcome("s1").status, "timeout");
    assert.equal(h.outcome("s1").stopReason, "timeout");
    assert.equal(h.value("session:s"), "closing");
    k.exited({ code: 0 });
    assert.deepEqual(h.values("session:s"), ["starting", "running", "interrupted", "grace", "closing", "closed"]);
    assertHealthy(h);
  });

  test("limits.noKill: a session stopped while its run still runs escalates like any close (interrupt, grace, kill)", () => {
    // Fixed: the run took the close's cancel as Pi's abort (one interrupt, then no kill), so a cell that ignored
    // SIGINT kept the session in `running.closeRequested` for ever: /python-restart under pi-python's
    // `interruptGraceMs: 0` never returned.
    const h = startSupervisor({ limits: { ...TEST_LIMITS, noKill: true } });
    const k = sessionRunning(h, "s", "s1");
    h.advance(5);
    h.stopSession("s");
    assert.equal(h.value("run:s1"), "interrupted");
    h.advance(interruptWindowMs);
    assert.equal(h.value("run:s1"), "grace");
    h.advance(graceMs);
    assert.equal(h.value("run:s1"), "killed");
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt", "runner.terminate"]);
    k.exited({ signal: "SIGTERM" });
    assert.equal(h.outcome("s1").status, "cancelled");
    assert.equal(h.outcome("s1").killed, true);
    assert.equal(ctx(h).sessions.s?.status, "lost");
    assertHealthy(h);
  });

  test("limits.noKill: Pi's abort of a session run interrupts it once and then waits, as for a timeout", () => {
    const h = startSupervisor({ limits: { ...TEST_LIMITS, noKill: true } });
    const k = sessionRunning(h, "s", "s1");
    h.cancel("s1");
    for (let i = 0; i < 5; i++) h.advance(interruptWindowMs + graceMs + killMs);
    assert.equal(h.value("run:s1"), "interrupted");
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt"]);
    k.done("s1", { exitCode: 130, error: "interrupt" });
    assert.equal(h.outcome("s1").status, "cancelled");
    assert.equal(h.value("session:s"), "idle");
    assertHealthy(h);
  });

  test("a batch's further cell started: the fact reaches the run, whose deadline starts again from it", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s", code: "a = 1", batch: ["b = 1"], cellTimeoutsMs: [3000], timeoutMs: 1000 });
    const k = h.runner.of("session:s");
    k.ready();
    k.started("s1");
    h.advance(800);
    k.send({ type: "runner.cell", at: h.now(), runId: "s1", cell: 1 });
    h.advance(1500); // past the first cell's deadline
    assert.equal(h.value("run:s1"), "running");
    h.advance(1500); // past the second cell's own
    assert.equal(h.value("run:s1"), "interrupted");
    k.done("s1", { exitCode: 130, error: "interrupt" });
    assert.equal(h.outcome("s1").status, "timeout");
    assertHealthy(h);
  });

  test("limits.noKill: a second stop while the close waits for its run kills the run at once", () => {
    const h = startSupervisor({ limits: { ...TEST_LIMITS, noKill: true } });
    const k = sessionRunning(h, "s", "s1");
    h.stopSession("s");
    assert.equal(h.value("run:s1"), "interrupted");
    h.ref("session:s")!.send({ type: "session.close", at: h.now() });
    assert.equal(h.value("run:s1"), "killed");
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt", "runner.terminate"]);
    k.exited({ signal: "SIGTERM" });
    assert.equal(h.outcome("s1").killed, true);
    assertHealthy(h);
  });

  test("runner.failed while a session run is running still finishes the run, and the session is lost", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    k.failed("protocol error: bad frame");
    assert.equal(ctx(h).sessions.s?.status, "lost");
    assert.equal(h.finished.length, 1, "the run got an outcome");
    assert.equal(h.finished[0]?.status, "runtime_error");
    assert.equal(h.finished[0]?.session?.isLost, true);
    assert.deepEqual(ctx(h).active, {});
    assertHealthy(h);
  });

  test("in a session: calls reach the active run through the session, answers reach the session's runner", () => {
    const h = startSystem();
    h.start({ runId: "s1", session: "s", calls: { callerId: "call_9", toolSet: "t1", tools: TOOLS } });
    const k = h.runner.of("session:s");
    h.clock.increment(10);
    k.ready();
    k.started("s1");
    h.call(k, "s1", "c1");
    assert.deepEqual(h.spawned, ["tool:s1:1"]);
    h.dispatch.of("tool:s1:1").finish("succeeded", { text: "hi" });
    assert.deepEqual(h.results(k), [
      { type: "runner.tool_result", runId: "s1", callId: "c1", status: "ok", text: "hi" },
    ]);
    k.done("s1");
    assert.equal(h.calls("s1")[0]!.parentId, "call_9");
    // The next run of the session brings its own tools (here none): the run frame says so.
    h.start({ runId: "s2", session: "s" });
    const runs = k.received.filter((c) => c.type === "runner.run") as { toolSet?: string }[];
    assert.equal(runs[0]!.toolSet, "t1");
    assert.equal(runs[1]!.toolSet, undefined);
    assert.equal(RUNNER_INFO.pid > 0, true);
  });
  test("in a session: Python's cancel of a call (runner.tool_cancel) reaches the active run and cancels the call", () => {
    const h = startSystem();
    h.start({ runId: "s1", session: "s", calls: { callerId: "call_9", toolSet: "t1", tools: TOOLS } });
    const k = h.runner.of("session:s");
    h.clock.increment(10);
    k.ready();
    k.started("s1");
    h.call(k, "s1", "c1");
    const d = h.dispatch.of("tool:s1:1");
    d.validated();
    h.clock.increment(5);
    k.send({ type: "runner.tool_cancel", at: h.clock.now(), runId: "s1", callId: "c1" });
    assert.equal(h.value("tool:s1:1"), "cancelling");
    assert.deepEqual(d.received, [{ type: "dispatch.cancel", at: 10_015 }]);
    d.finish("cancelled");
    assert.equal(h.results(k)[0]!.status, "cancelled");
    assert.equal(h.value("run:s1"), "running", "the run goes on");
  });
});

describe("closing", () => {
  test("session.stop on an idle session: closing -> runner.shutdown, kill after killMs, closed", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    k.done("s1");
    h.stopSession("s");
    assert.equal(h.value("session:s"), "closing");
    assert.deepEqual(k.types(), ["runner.run", "runner.shutdown"]);
    h.advance(killMs - 1);
    assert.deepEqual(k.types(), ["runner.run", "runner.shutdown"]);
    h.advance(1);
    assert.deepEqual(k.types(), ["runner.run", "runner.shutdown", "runner.kill"]);
    h.stopSession("s"); // ignored while closing
    assert.deepEqual(k.types(), ["runner.run", "runner.shutdown", "runner.kill"]);
    k.exited({ signal: "SIGKILL" });
    assert.deepEqual(h.values("session:s"), ["starting", "running", "idle", "closing", "closed"]);
    assert.deepEqual(k.types(), ["runner.run", "runner.shutdown", "runner.kill", "stopped"]);
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 1, status: "closed", cwd: "/work" } });
    assert.deepEqual(h.children(), []);
    assert.equal(h.finished.length, 1);
    // A closed session starts anew on the next run, without replacedLost.
    h.start({ runId: "s2", session: "s" });
    const k2 = h.runner.of("session:s");
    k2.ready();
    k2.started("s2");
    k2.done("s2");
    assert.deepEqual(h.outcome("s2").session, sessionRef({ incarnation: 2 }));
    assertHealthy(h);
  });

  test("session.stop: a runner that exits in time is not killed", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    k.done("s1");
    h.stopSession("s");
    h.advance(20);
    k.exited({ code: 0 });
    assert.deepEqual(k.types(), ["runner.run", "runner.shutdown", "stopped"]);
    h.advance(killMs * 2);
    assert.deepEqual(k.types(), ["runner.run", "runner.shutdown", "stopped"]);
    assert.equal(ctx(h).sessions.s?.status, "closed");
    assert.deepEqual(h.timers(), []);
    // Unknown sessions are ignored.
    h.stopSession("nope");
    assertHealthy(h);
  });

  test("a first run still installing when the session closes: cancelled at the close, reported; closed once the process exits", () => {
    const install = fromCallback<EventObject, InstallInput>(() => {});
    const h = startSupervisor({ install });
    h.start({ runId: "s1", session: "s", dependencies: ["slow==1"] });
    assert.equal(h.value("run:s1"), "installing");
    h.advance(50);
    h.stopSession("s");
    assert.equal(h.outcome("s1").status, "cancelled");
    assert.equal(h.outcome("s1").finishedAt, 50, "the close's time");
    assert.equal(h.value("session:s"), "closing");
    const k = h.runner.of("session:s");
    assert.deepEqual(k.types(), ["runner.shutdown"]);
    k.exited({ code: 0 });
    assert.equal(ctx(h).sessions.s?.status, "closed");
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("run.start for a session that is closing is refused by the session (setup_error)", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    k.done("s1");
    h.stopSession("s");
    h.start({ runId: "s2", session: "s" });
    // The supervisor still sees the session alive and forwards; the closing session refuses. Note the message.
    assert.deepEqual(
      h.outcome("s2"),
      outcome({
        runId: "s2",
        status: "setup_error",
        requestedAt: 20,
        finishedAt: 20,
        message: 'Session "s" is closing; run again once it has stopped.',
        session: refusedIn("s", 1),
      }),
    );
    assert.deepEqual(ctx(h).active, {});
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 1, status: "alive", cwd: "/work" } });
    assert.deepEqual(k.types(), ["runner.run", "runner.shutdown"]);
    assertHealthy(h);
  });
});

describe("lost", () => {
  test("a run after a lost session starts a new process: incarnation + 1, replacedLost", () => {
    const h = startSupervisor();
    const k1 = sessionRunning(h, "s", "s1");
    k1.exited({ code: 3 });
    h.advance(100);
    h.start({ runId: "s2", session: "s" });
    const k2 = h.runner.of("session:s");
    assert.notEqual(k2, k1);
    assert.equal(k2.index, 1);
    assert.equal(h.value("session:s"), "starting");
    k2.ready();
    k2.started("s2");
    k2.done("s2");
    assert.deepEqual(h.outcome("s2").session, {
      name: "s",
      ordinal: 1,
      incarnation: 2,
      started: true,
      replacedLost: true,
      isLost: false,
    });
    assert.deepEqual(k2.received, [run("s2", 'print("s2")', "script-1.py")]);
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 2, status: "alive", cwd: "/work" } });
    // Only the first run of the new incarnation carries replacedLost.
    nextSessionRun(h, "s", "s3");
    k2.done("s3");
    assert.deepEqual(h.outcome("s3").session, sessionRef({ ordinal: 2, incarnation: 2, started: false }));
    assertHealthy(h);
  });
});

describe("sessionPhase", () => {
  test("a session's own state, its top state's name for a nested one", () => {
    assert.equal(sessionPhase("idle", undefined), "idle");
    assert.equal(sessionPhase({ running: "active" }, undefined), "running");
    assert.equal(sessionPhase({ running: "closeRequested" }, "running"), "running");
    assert.equal(sessionPhase({ ending: "closed" }, undefined), "closed");
    assert.equal(sessionPhase("closing", null), "closing");
  });

  test("a run being stopped shows through while the session runs, starts, or ends lost, not while it closes", () => {
    const stopping = (step: string) => ({ stopping: step });
    assert.equal(sessionPhase({ running: "active" }, stopping("grace")), "grace");
    assert.equal(sessionPhase("starting", stopping("killed")), "killed");
    assert.equal(sessionPhase({ ending: "lost" }, stopping("killed")), "killed");
    assert.equal(sessionPhase({ ending: "closed" }, stopping("killed")), "closed");
    assert.equal(sessionPhase("closing", stopping("killed")), "closing");
    assert.equal(sessionPhase("idle", stopping("interrupted")), "idle");
  });

  test("a value no session has is shown as it is", () => {
    assert.equal(sessionPhase(null, undefined), "null");
    assert.equal(sessionPhase(7, undefined), "7");
  });
});

describe("the graph", () => {
  test("every state of the session machine is reachable", () => {
    const sessionFake = createFakeRunner();
    const logic = analysable(sessionMachine.provide({ actors: { runner: sessionFake.logic } }));
    // A process that ends while a run is active ends the session once that run reported: `ending.*` says so.
    const bySessionState = (s: AnyMachineSnapshot) => JSON.stringify([s.value, s.context.activeRunId !== undefined]);
    const paths = getShortestPaths(logic, {
      input: SESSION_INPUT,
      serializeState: bySessionState,
      events: alphabet(SESSION_EVENTS),
      filterEvents: handled,
    });
    const label = (v: unknown): string =>
      typeof v === "string"
        ? v
        : Object.entries(v as object)
            .map(([k, sub]) => `${k}.${label(sub)}`)
            .join(",");
    const byState = new Map<string, string>();
    for (const p of [...paths].sort((a, b) => a.steps.length - b.steps.length))
      if (!byState.has(label(p.state.value))) byState.set(label(p.state.value), describePath(p));
    assert.deepEqual(
      [...byState.keys()].sort(),
      [
        "starting",
        "idle",
        "running.active",
        "running.closeRequested",
        "closing",
        "ending.lost",
        "ending.closed",
        "lost",
        "closed",
      ].sort(),
    );
    // The flags these states replaced (closeRequested, ending) are each reached by the event that decides them.
    assert.equal(byState.get("running.closeRequested"), "xstate.init > runner.ready > session.close");
    assert.equal(byState.get("ending.lost"), "xstate.init > runner.exited");
    assert.equal(byState.get("ending.closed"), "xstate.init > runner.failed");
    // A first run that ends before the interpreter is ready leaves the session waiting for it (fixed: it went idle
    // with no process info, and its next run waited for a ready that had already gone by).
    const waiting = paths.find((p) => p.state.value === "starting" && p.state.context.activeRunId === undefined);
    assert.equal(waiting && describePath(waiting), "xstate.init > xstate.done.actor.run:s1");
    assert.equal(byState.get("closing"), "xstate.init > session.close");
    assert.equal(sessionFake.instances.length, 0);
  });
});

describe("the definition", () => {
  test("every state is described, under the machine's id", () => {
    assert.equal(sessionMachine.id, "session");
    assert.deepEqual(undescribedStates(sessionMachine), []);
  });

  test("without its runner provided, a session fails at once and names the missing actor", () => {
    const input: SessionInput = { name: "s", incarnation: 1, cwd: "/w", limits: TEST_LIMITS };
    assert.equal(
      missingEffectError(sessionMachine, input),
      "session: the `runner` actor must be provided (machines/system.ts)",
    );
  });
});
