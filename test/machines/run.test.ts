// The run machine (machines/run.ts), one `describe` per state: driven through the real supervisor root with the fake
// runner (and a scripted installer or dispatcher where a state needs one) under a SimulatedClock, so nothing is a
// process and nothing sleeps. Runner facts are sent by hand with `at` equal to the simulated now, so deadlines
// computed from `at` agree with the clock. "the graph" replays every path of the machine's graph on a real run.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { SimulatedClock, createActor, fromCallback } from "xstate";
import type { AnyActorScope, AnyMachineSnapshot } from "xstate";
import { getAdjacencyMap, getShortestPaths, getSimplePaths } from "xstate/graph";
import type {
  InstallFact,
  InstallInput,
  InstallSummary,
  RunnerCommand,
  RunnerFact,
  RunOutcome,
  RunRequest,
} from "../../machines/events.ts";
import { runMachine, type RunInput } from "../../machines/run.ts";
import { initialContext, runnerInput, type RunContext } from "../../machines/run-context.ts";
import { exitedOutcome, failedOutcome, finishedOutcome, refusal, requestOutcome } from "../../machines/run-outcome.ts";
import { missingEffectError, undescribedStates } from "../helpers/machine-states.ts";
import { supervisorWith } from "../../machines/system.ts";
import { MAX_OPEN_CALLS } from "../../machines/tool-events.ts";
import { RUNNER_INFO, TEST_LIMITS, createFakeRunner, startSupervisor, stateName } from "../helpers/fake-runner.ts";
import type { FakeRunnerInstance } from "../helpers/fake-runner.ts";
import { CALL, TOOLS, startSystem } from "../helpers/fake-dispatch.ts";
import {
  analysable,
  alphabet,
  byValue,
  describePath,
  handled,
  type Adjacency,
  type Path,
} from "../helpers/machine-graph.ts";
import {
  assertHealthy,
  ctx,
  freshRunning,
  graceMs,
  interruptWindowMs,
  killMs,
  run,
  sessionRunning,
} from "../helpers/machine-scenarios.ts";
import { outcome } from "../helpers/outcomes.ts";

// ---- a scripted installer (the `installing` state) ----
function harness() {
  const clock = new SimulatedClock();
  const runner = createFakeRunner({ now: () => clock.now() });
  const installs: { input: InstallInput; send: (f: InstallFact) => void; stopped: boolean }[] = [];
  const install = fromCallback<{ type: string }, InstallInput>(({ input, sendBack }) => {
    const entry = { input, send: (f: InstallFact) => sendBack(f), stopped: false };
    installs.push(entry);
    return () => {
      entry.stopped = true;
    };
  });
  const actor = createActor(supervisorWith(runner.logic, { install }), {
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
    stateName((actor.system.get(`run:${runId}`)?.getSnapshot() as { value: unknown } | undefined)?.value);
  return { clock, runner, installs, actor, finished, start, runValue };
}

const FRESH_ENV: InstallSummary = {
  installer: "pip",
  requirements: ["tinypkg==1.0"],
  cached: false,
  python: "/envs/k/bin/python",
  modules: ["tinypkg"],
};

// ---- the graph ----
// How paths are replayed. Each path is driven on a real actor: a fresh run `g` spawned by the real supervisor root
// (`startSupervisor`: fake runner, SimulatedClock), so the report through the run's output, the emitted
// `run.finished` and the pruning of the done child are the production ones. `steps[0]` (`xstate.init`) is the run's spawn; runner facts go through
// the fake runner's `sendBack`; `run.cancel` goes through the supervisor; an `xstate.after.<delay>.<state>` edge
// becomes a SimulatedClock move to the due time of that pending timer (recorded from the `xstate.raise` action).
// After every step the real run's state value and its guard-relevant context equal the graph's prediction; at the
// end the emitted outcome equals the predicted `context.outcome` exactly.
const RUN_ID = "g";
const CODE = "print('graph')";
const CWD = "/work";
const TIMEOUT_MS = 1000;
const RUN_INPUT: RunInput = {
  runId: RUN_ID,
  code: CODE,
  filename: "script.py",
  cwd: CWD,
  timeoutMs: TIMEOUT_MS,
  requestedAt: 0,
  limits: TEST_LIMITS,
};

// Runner facts with fixed payloads, and run.cancel as the supervisor forwards it.
const RUN_EVENTS = {
  "runner.ready": [{ type: "runner.ready", at: 10, ...RUNNER_INFO }],
  "runner.started": [{ type: "runner.started", at: 20, runId: RUN_ID }],
  "runner.done": [
    { type: "runner.done", at: 30, runId: RUN_ID, exitCode: 0, displayedValue: true, error: null },
    { type: "runner.done", at: 30, runId: RUN_ID, exitCode: 1, displayedValue: false, error: "exception" },
  ],
  "runner.exited": [{ type: "runner.exited", at: 40, code: 1, signal: null }],
  "runner.failed": [{ type: "runner.failed", at: 40, message: "fatal: bad frame" }],
  "run.cancel": [{ type: "run.cancel", at: 5, runId: RUN_ID }],
  // Nested tool calls spawn children of their own: test/machines/tool-call.test.ts drives them.
  "runner.tool_call": [],
  "runner.tool_cancel": [],
  // A batch cell's start moves only a batch's deadline (this input has none): driven in its own describe above.
  "runner.cell": [],
} satisfies Record<string, Array<RunnerFact | { type: "run.cancel"; at: number; runId: string }>>;

const RUN_STATES = [
  "starting",
  "running",
  "interrupted",
  "grace",
  "killed",
  "success",
  "runtime_error",
  "setup_error",
  "timeout",
  "cancelled",
];

const fake = createFakeRunner();
const runLogic = analysable(runMachine.provide({ actors: { runner: fake.logic } }));

/** The value plus the context the guards and the outcome depend on (still a finite graph with fixed payloads). */
const byValueAndFlags = (s: AnyMachineSnapshot) =>
  JSON.stringify([s.value, s.context.runnerReady, s.context.stopReason ?? null, s.context.killed]);

const runOptions = (serializeState: (s: AnyMachineSnapshot) => string) => ({
  input: RUN_INPUT,
  serializeState,
  events: alphabet(RUN_EVENTS),
  filterEvents: handled,
});

/** What a step predicts and what the replay observes, compared as one object. */
function project(s: AnyMachineSnapshot) {
  return {
    value: s.value,
    status: s.status,
    runnerReady: s.context.runnerReady,
    stopReason: s.context.stopReason,
    killed: s.context.killed,
    outcome: s.context.outcome,
  };
}

/** Replays `path` on a real run `g` under the real supervisor; returns the emitted outcome if the path ends.
 *
 * A path's step states are vertex representatives: with a coarse serialization, two snapshots with the same key
 * are one vertex, and the stored snapshot may come from another route (another `at`, another exit code). So the
 * exact prediction is recomputed along the path with the machine's pure `transition`; each recomputed snapshot
 * must serialize to the graph's vertex for that step, and the real actor must match it exactly (value, status,
 * guard context and outcome). */
function replayRun(path: Path, serialize: (s: AnyMachineSnapshot) => string): RunOutcome | undefined {
  const where = describePath(path);
  const h = startSupervisor();
  h.start({ runId: RUN_ID, code: CODE, cwd: CWD, timeoutMs: TIMEOUT_MS });
  const runner = h.runner.of(`run:${RUN_ID}`);
  const observe = () => {
    const last = h.trace.filter((t) => t.id === `run:${RUN_ID}`).at(-1);
    assert.ok(last, `${where}: the run has a snapshot`);
    return project(last.snapshot as AnyMachineSnapshot);
  };
  assert.equal(path.steps[0]?.event.type, "xstate.init");
  let predicted: AnyMachineSnapshot = runLogic.getInitialSnapshot(undefined as unknown as AnyActorScope, RUN_INPUT);
  assert.equal(serialize(predicted), serialize(path.steps[0]!.state), `${where}: initial vertex`);
  assert.deepEqual(observe(), project(predicted), `${where}: initial state`);
  for (const [i, step] of path.steps.entries()) {
    if (i === 0) continue; // xstate.init: the spawn above
    const event = step.event;
    predicted = runLogic.transition(predicted, event, undefined as unknown as AnyActorScope);
    assert.equal(serialize(predicted), serialize(step.state), `${where}: vertex after step ${i}`);
    if (event.type.startsWith("xstate.after.")) {
      const before = h.eventTypes.length;
      h.fire(event.type);
      assert.ok(h.eventTypes.slice(before).includes(event.type), `${where}: ${event.type} fired`);
    } else if (event.type === "run.cancel") {
      h.send(event as { type: "run.cancel"; at: number; runId: string });
    } else {
      runner.send(event as RunnerFact);
    }
    assert.deepEqual(observe(), project(predicted), `${where}: after step ${i} (${event.type})`);
  }
  assert.equal(serialize(predicted), serialize(path.state), `${where}: final vertex`);
  assert.deepEqual(h.errors, [], where);
  assert.deepEqual(
    h.eventTypes.filter((t) => t.startsWith("xstate.error")),
    [],
    where,
  );
  if (predicted.status === "done") {
    assert.deepEqual(h.finished, [predicted.context.outcome], `${where}: emitted outcome`);
    assert.equal(predicted.context.outcome.status, predicted.value, where);
    const last = h.trace.filter((t) => t.id === `run:${RUN_ID}`).at(-1)!.snapshot as AnyMachineSnapshot;
    assert.deepEqual(last.output, predicted.context.outcome, `${where}: the run's output is its outcome`);
    assert.deepEqual(h.children(), [], `${where}: done run pruned`);
    assert.equal(runner.stopped, true, `${where}: runner stopped`);
    assert.deepEqual(h.actor.getSnapshot().context.active, {}, where);
    return h.finished[0];
  }
  assert.deepEqual(h.finished, [], `${where}: no outcome yet`);
  assert.deepEqual(h.children(), [`run:${RUN_ID}`], where);
  return undefined;
}

// Installation comes before the code (a fresh run's process starts with the environment's interpreter; a session
// run is sent only once its packages are in place), the deadline covers it, cancellation stops it, and failures
// are setup errors with their hint.
describe("installing", () => {
  test("a fresh run starts its process only after installation, with the environment's interpreter", () => {
    const h = harness();
    h.start("f");
    assert.equal(h.runValue("f"), "installing");
    assert.equal(h.runner.instances.length, 0, "no process yet");
    const children = () => Object.keys(h.actor.system.get("run:f")!.getSnapshot().children);
    assert.deepEqual(children(), ["install"], "the installer is the run's `install` child (the inspector names it)");
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
    const k = h.runner.of("run:f");
    assert.equal(k.input.python, "/envs/k/bin/python");
    k.ready();
    assert.deepEqual(k.received[0], { type: "runner.run", runId: "f", code: "import tinypkg", filename: "script.py" });
    k.started("f");
    k.done("f");
    assert.deepEqual(h.finished[0].install, FRESH_ENV);
    assert.equal(h.finished[0].status, "success");
  });

  test("a session run waits for its packages, then is sent with the package directory and the modules to check", () => {
    const h = harness();
    h.start("s1", { session: "s", dependencies: undefined, code: "x = 1" });
    const k = h.runner.of("session:s");
    k.ready();
    k.started("s1");
    k.done("s1");
    h.start("s2", { session: "s" });
    assert.equal(h.runValue("s2"), "installing");
    assert.equal(h.installs[0].input.mode, "session");
    assert.deepEqual(h.installs[0].input.session, { name: "s", incarnation: 1 });
    assert.equal(k.received.filter((c) => c.type === "runner.run").length, 1, "not sent while installing");
    h.installs[0].send({
      type: "install.done",
      at: h.clock.now(),
      installer: "pip",
      requirements: ["tinypkg==1.0"],
      cached: false,
      sysPath: "/pkgs/s-1",
      modules: ["tinypkg"],
    });
    const sent = k.received.filter((c) => c.type === "runner.run").at(-1);
    assert.deepEqual(sent, {
      type: "runner.run",
      runId: "s2",
      code: "import tinypkg",
      filename: "script-2.py",
      sysPath: ["/pkgs/s-1"],
      checkLoaded: ["tinypkg"],
    });
    k.started("s2");
    k.send({
      type: "runner.done",
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
    const k = h.runner.of("session:s");
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
    h.runner.of("session:s").ready();
    h.clock.increment(1999);
    assert.equal(h.finished.length, 0);
    h.clock.increment(1);
    const o = h.finished[0];
    assert.equal(o.status, "timeout");
    assert.equal(o.stage, "install");
    assert.equal(o.stopReason, "timeout");
    assert.equal(o.message, "dependency installation did not finish within the 2 s timeout; the code did not run");
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
    const k = h.runner.of("run:late");
    k.ready();
    k.started("late");
    h.clock.increment(499);
    assert.deepEqual(k.types(), ["runner.run"]);
    h.clock.increment(1);
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt"], "interrupted at 3 s after the request");
  });

  test("a session run uses its session's process through installation: no runner of its own", () => {
    const h = harness();
    h.start("s1", { session: "s" });
    const k = h.runner.of("session:s");
    k.ready();
    const run = h.actor.system.get("run:s1")!;
    assert.equal(run.getSnapshot().children.runner, undefined, "the run spawns no runner");
    h.installs[0].send({ type: "install.done", at: h.clock.now(), ...FRESH_ENV });
    assert.equal(h.runValue("s1"), "starting");
    assert.equal(run.getSnapshot().children.runner, undefined, "nor after installation");
    assert.equal(h.runner.instances.length, 1);
    assert.deepEqual(k.types(), ["runner.run"], "the run command goes straight to the session's process");
  });

  for (const [how, end] of [
    ["fails", (k: FakeRunnerInstance) => k.failed("runner: bad frame")],
    ["exits", (k: FakeRunnerInstance) => k.exited({ code: 1 })],
  ] as const) {
    test(`the session's process ${how} during installation: a setup_error at once, the installer stopped`, () => {
      const h = harness();
      h.start("s1", { session: "s" });
      const k = h.runner.of("session:s");
      k.ready();
      h.clock.increment(40);
      end(k);
      assert.equal(h.runValue("s1"), undefined, "the run has ended");
      const o = h.finished[0]!;
      assert.equal(o.status, "setup_error");
      assert.equal(o.finishedAt, 40);
      assert.equal(o.message, how === "fails" ? "runner: bad frame" : "Python exited during start-up (exit code 1)");
      assert.ok(h.installs[0].stopped, "the installer is stopped with the run");
      assert.equal(k.types().includes("runner.run"), false, "the code was never sent");
    });
  }

  test("cancellation during installation stops it; nothing runs", () => {
    const h = harness();
    h.start("c");
    h.clock.increment(100);
    h.actor.send({ type: "run.cancel", at: h.clock.now(), runId: "c" });
    const o = h.finished[0];
    assert.equal(o.status, "cancelled");
    assert.equal(o.stage, "install");
    assert.equal(o.stopReason, "cancelled");
    assert.equal(o.message, "cancelled during dependency installation; the code did not run");
    assert.equal(o.finishedAt, 100, "it ends when it was cancelled");
    assert.ok(h.installs[0].stopped);
    assert.equal(h.runner.instances.length, 0);
  });
});

describe("starting", () => {
  test("success: starting -> running -> success, runner.run sent once the runner is ready", () => {
    const h = startSupervisor();
    h.start({ runId: "r1", code: "1 + 1", cwd: "/w", timeoutMs: 1000 });
    assert.deepEqual(h.children(), ["run:r1"]);
    assert.equal(h.value("run:r1"), "starting");
    const k = h.runner.of("run:r1");
    assert.deepEqual(k.input, { mode: "fresh", cwd: "/w", owner: "run:r1" });
    assert.deepEqual(k.received, []);

    h.advance(10);
    k.ready();
    assert.equal(h.value("run:r1"), "starting");
    assert.deepEqual(k.received, [run("r1", "1 + 1")]);

    h.advance(5);
    k.started("r1");
    assert.equal(h.value("run:r1"), "running");

    h.advance(20);
    k.done("r1", { displayedValue: true });
    assert.deepEqual(h.finished, [
      outcome({
        runId: "r1",
        status: "success",
        exitCode: 0,
        displayedValue: true,
        finishedAt: 35,
        runner: RUNNER_INFO,
      }),
    ] satisfies RunOutcome[]);
    assert.deepEqual(h.values("run:r1"), ["starting", "running", "success"]);
    assert.deepEqual(k.types(), ["runner.run", "stopped"]);
    assert.deepEqual(h.children(), []);
    assert.deepEqual(ctx(h).active, {});
    assert.deepEqual(h.timers(), []);
    assertHealthy(h);
  });

  test("setup_error: runner.failed before the runner is ready", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    h.advance(7);
    h.runner.of("run:r1").failed("python3: not found");
    assert.deepEqual(h.finished, [
      outcome({
        runId: "r1",
        status: "setup_error",
        finishedAt: 7,
        message: "python3: not found",
      }),
    ]);
    assert.deepEqual(h.values("run:r1"), ["starting", "setup_error"]);
    assert.deepEqual(h.runner.of("run:r1").types(), ["stopped"]);
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("setup_error: runner.exited before runner.started (after ready) names the exit code", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    const k = h.runner.of("run:r1");
    h.advance(10);
    k.ready();
    h.advance(5);
    k.exited({ code: 1 });
    assert.deepEqual(h.finished, [
      outcome({
        runId: "r1",
        status: "setup_error",
        exitCode: 1,
        finishedAt: 15,
        message: "Python exited during start-up (exit code 1)",
        runner: RUNNER_INFO,
      }),
    ]);
    assert.deepEqual(h.values("run:r1"), ["starting", "setup_error"]);
    assertHealthy(h);
  });

  test("setup_error: runner.exited by a signal before ready names the signal", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    h.advance(3);
    h.runner.of("run:r1").exited({ signal: "SIGSEGV" });
    assert.deepEqual(
      h.outcome("r1"),
      outcome({
        runId: "r1",
        status: "setup_error",
        signal: "SIGSEGV",
        finishedAt: 3,
        message: "Python exited during start-up (SIGSEGV)",
      }),
    );
    assertHealthy(h);
  });

  test("deadline in starting before ready: killed at once (terminate, kill after killMs), then timeout", () => {
    const h = startSupervisor();
    h.start({ runId: "r1", timeoutMs: 1000 });
    const k = h.runner.of("run:r1");
    h.advance(999);
    assert.equal(h.value("run:r1"), "starting");
    assert.deepEqual(k.received, []);
    h.advance(1);
    assert.equal(h.value("run:r1"), "killed");
    assert.deepEqual(k.types(), ["runner.terminate"]);
    h.advance(killMs - 1);
    assert.deepEqual(k.types(), ["runner.terminate"]);
    h.advance(1);
    assert.deepEqual(k.types(), ["runner.terminate", "runner.kill"]);
    h.advance(20);
    k.exited({ signal: "SIGKILL" });
    assert.deepEqual(
      h.outcome("r1"),
      outcome({
        runId: "r1",
        status: "timeout",
        stopReason: "timeout",
        signal: "SIGKILL",
        finishedAt: 1520,
        killed: true,
      }),
    );
    assert.deepEqual(h.values("run:r1"), ["starting", "killed", "timeout"]);
    assert.deepEqual(k.types(), ["runner.terminate", "runner.kill", "stopped"]);
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("deadline in starting after ready: interrupted (one runner.interrupt), runner.done -> timeout", () => {
    const h = startSupervisor();
    h.start({ runId: "r1", timeoutMs: 1000 });
    const k = h.runner.of("run:r1");
    h.advance(10);
    k.ready();
    h.advance(990);
    assert.equal(h.value("run:r1"), "interrupted");
    assert.deepEqual(k.received, [run("r1"), { type: "runner.interrupt", runId: "r1" }]);
    // A late runner.started is not handled in interrupted.
    k.started("r1");
    assert.equal(h.value("run:r1"), "interrupted");
    h.advance(30);
    k.done("r1", { exitCode: 130, error: "interrupt" });
    assert.deepEqual(
      h.outcome("r1"),
      outcome({
        runId: "r1",
        status: "timeout",
        stopReason: "timeout",
        exitCode: 130,
        finishedAt: 1030,
        runner: RUNNER_INFO,
      }),
    );
    assert.deepEqual(h.values("run:r1"), ["starting", "interrupted", "timeout"]);
    assertHealthy(h);
  });

  test("cancel in starting before the runner is ready: killed directly, no interrupt", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    const k = h.runner.of("run:r1");
    h.advance(5);
    h.cancel("r1");
    assert.equal(h.value("run:r1"), "killed");
    assert.deepEqual(k.types(), ["runner.terminate"]);
    h.advance(killMs);
    assert.deepEqual(k.types(), ["runner.terminate", "runner.kill"]);
    k.exited({ signal: "SIGKILL" });
    assert.deepEqual(
      h.outcome("r1"),
      outcome({
        runId: "r1",
        status: "cancelled",
        stopReason: "cancelled",
        signal: "SIGKILL",
        finishedAt: 505,
        killed: true,
      }),
    );
    assert.deepEqual(h.values("run:r1"), ["starting", "killed", "cancelled"]);
    assertHealthy(h);
  });

  test("cancel in starting after ready: interrupted, runner.done -> cancelled", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    const k = h.runner.of("run:r1");
    h.advance(10);
    k.ready();
    h.advance(5);
    h.cancel("r1");
    assert.equal(h.value("run:r1"), "interrupted");
    assert.deepEqual(k.received, [run("r1"), { type: "runner.interrupt", runId: "r1" }]);
    k.done("r1", { exitCode: 130, error: "interrupt" });
    assert.deepEqual(
      h.outcome("r1"),
      outcome({
        runId: "r1",
        status: "cancelled",
        stopReason: "cancelled",
        exitCode: 130,
        finishedAt: 15,
        runner: RUNNER_INFO,
      }),
    );
    assert.deepEqual(h.values("run:r1"), ["starting", "interrupted", "cancelled"]);
    assertHealthy(h);
  });

  test("runner.done before runner.started (the code did not compile): the run ends with the runner's verdict", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    const k = h.runner.of("run:r1");
    h.advance(10);
    k.ready();
    h.advance(5);
    k.done("r1", { exitCode: 1, error: "syntax" });
    assert.equal(h.outcome("r1").status, "runtime_error");
    assert.equal(h.outcome("r1").exitCode, 1);
    assert.equal(h.outcome("r1").finishedAt, 15);
    assert.deepEqual(h.values("run:r1"), ["starting", "runtime_error"]);
    assertHealthy(h);
  });

  test("the run command carries the cell's directory and the value result mode; the request's extras stay on the run", () => {
    const h = startSupervisor();
    const cell = { index: 2, count: 3, title: "load" };
    h.start({ runId: "r1", chdir: "/work/nb", result: "value", surface: "eval", cell, budget: "work" });
    const k = h.runner.of("run:r1");
    k.ready();
    assert.deepEqual(k.received, [{ ...run("r1"), chdir: "/work/nb", result: "value" }]);
    const context = h.actor.system.get("run:r1")!.getSnapshot().context as RunContext;
    assert.deepEqual(
      [context.surface, context.cell, context.chdir, context.result, context.budget],
      ["eval", cell, "/work/nb", "value", "work"],
    );
    h.start({ runId: "r2", result: "print" });
    h.runner.of("run:r2").ready();
    assert.deepEqual(h.runner.of("run:r2").received, [run("r2")], "print mode is the runner's default: not sent");
  });

  test("the runner's facts go on the outcome, its language too", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    const k = h.runner.of("run:r1");
    k.ready(0, { ...RUNNER_INFO, language: "js" });
    k.started("r1");
    k.done("r1");
    assert.deepEqual(h.outcome("r1").runner, { ...RUNNER_INFO, language: "js" });
  });

  test("a claimed spare is adopted by the run's runner, unless installed packages bring their own interpreter", () => {
    const context = (extra: Partial<RunContext>): RunContext => ({ ...initialContext(RUN_INPUT), ...extra });
    assert.deepEqual(runnerInput(context({ spare: "spare:3", python: "/py" })), {
      mode: "fresh",
      cwd: CWD,
      owner: `run:${RUN_ID}`,
      python: "/py",
      adopt: "spare:3",
    });
    assert.deepEqual(runnerInput(context({ spare: "spare:3", python: "/py", install: FRESH_ENV })), {
      mode: "fresh",
      cwd: CWD,
      owner: `run:${RUN_ID}`,
      python: "/envs/k/bin/python",
    });
  });
});

// Nested calls start here (their actors: test/machines/tool-call.test.ts).
describe("running", () => {
  test("runtime_error: runner.done with a non-zero exitCode", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.advance(30);
    k.done("r1", { exitCode: 1, error: "exception" });
    assert.deepEqual(h.finished, [
      outcome({
        runId: "r1",
        status: "runtime_error",
        exitCode: 1,
        finishedAt: 50,
        runner: RUNNER_INFO,
      }),
    ]);
    assert.deepEqual(h.values("run:r1"), ["starting", "running", "runtime_error"]);
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("runner.failed while running: a runtime_error with the runner's message; a session's state is lost", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.advance(5);
    k.failed("control channel: bad frame");
    assert.deepEqual(
      h.outcome("r1"),
      outcome({
        runId: "r1",
        status: "runtime_error",
        finishedAt: 25,
        message: "control channel: bad frame",
        runner: RUNNER_INFO,
      }),
    );
    const s = sessionRunning(h, "s", "s1");
    s.failed("control channel: bad frame");
    assert.equal(h.outcome("s1").status, "runtime_error");
    assert.equal(h.outcome("s1").session?.isLost, true);
    assertHealthy(h);
  });

  test("a runner.done for another run id is ignored (isMine)", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    k.done("other");
    assert.equal(h.value("run:r1"), "running");
    assert.deepEqual(h.finished, []);
    k.done("r1");
    assert.equal(h.outcome("r1").status, "success");
    assertHealthy(h);
  });

  test("runner.exited while running (os._exit(3)): runtime_error with the exit code, no session", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.advance(5);
    k.exited({ code: 3 });
    assert.deepEqual(
      h.outcome("r1"),
      outcome({
        runId: "r1",
        status: "runtime_error",
        exitCode: 3,
        finishedAt: 25,
        runner: RUNNER_INFO,
      }),
    );
    assert.deepEqual(h.values("run:r1"), ["starting", "running", "runtime_error"]);
    assertHealthy(h);
  });

  test("runner.exited with code 0 and no signal while running counts as success", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    k.exited({ code: 0 });
    assert.equal(h.outcome("r1").status, "success");
    assert.equal(h.outcome("r1").exitCode, 0);
    assertHealthy(h);
  });

  test("deadline in running fires at requestedAt + timeoutMs, measured from the facts' times", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1", 1000); // started at 20: deadline 980 ms after entering running
    h.advance(979);
    assert.equal(h.value("run:r1"), "running");
    assert.deepEqual(k.types(), ["runner.run"]);
    h.advance(1);
    assert.equal(h.value("run:r1"), "interrupted");
    assert.deepEqual(k.received, [run("r1"), { type: "runner.interrupt", runId: "r1" }]);
    h.advance(40);
    k.done("r1", { exitCode: 130, error: "interrupt" });
    assert.deepEqual(
      h.outcome("r1"),
      outcome({
        runId: "r1",
        status: "timeout",
        stopReason: "timeout",
        exitCode: 130,
        finishedAt: 1040,
        runner: RUNNER_INFO,
      }),
    );
    assert.deepEqual(h.values("run:r1"), ["starting", "running", "interrupted", "timeout"]);
    assertHealthy(h);
  });

  test("cancel in running: interrupted, runner.done -> cancelled; a second cancel is ignored", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.advance(100);
    h.cancel("r1");
    h.cancel("r1");
    assert.equal(h.value("run:r1"), "interrupted");
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt"]);
    k.done("r1", { exitCode: 130, error: "interrupt" });
    assert.equal(h.outcome("r1").status, "cancelled");
    assert.deepEqual(h.values("run:r1"), ["starting", "running", "interrupted", "cancelled"]);
    // Cancelling a finished or unknown run does nothing.
    h.cancel("r1");
    h.cancel("nope");
    assert.equal(h.finished.length, 1);
    assertHealthy(h);
  });

  test("a call spawns tool:<runId>:<seq> (id and systemId); its end answers the runner and is recorded", () => {
    const h = startSystem();
    const k = h.running();
    const run = k.received.find((c) => c.type === "runner.run")!;
    assert.equal(
      (run as { toolSet?: string }).toolSet,
      "t1",
      "the run command names the tool set (the runner sends its specs)",
    );
    h.call(k, "r1", "c1");
    assert.deepEqual(h.spawned, ["tool:r1:1"]);
    const child = h.actor.system.get("tool:r1:1");
    assert.ok(child, "registered under its systemId");
    assert.equal(child.id, "tool:r1:1");
    const d = h.dispatch.of("tool:r1:1");
    assert.deepEqual(d.input, { ...CALL, args: { path: "a" }, at: 10_020 });
    d.validated();
    assert.equal(h.value("tool:r1:1"), "running");
    h.clock.increment(5);
    d.finish("succeeded", { text: "content" });
    assert.deepEqual(h.results(k), [
      { type: "runner.tool_result", runId: "r1", callId: "c1", status: "ok", text: "content" },
    ]);
    assert.equal(h.actor.system.get("tool:r1:1"), undefined, "the ended call is released");
    assert.deepEqual(Object.keys(h.actor.system.get("run:r1")!.getSnapshot().children), ["runner"], "and stopped");
    k.done("r1");
    const o = h.finished[0]!;
    assert.equal(o.status, "success");
    const calls = h.calls("r1");
    assert.equal(calls.length, 1);
    assert.equal(calls[0]!.status, "succeeded");
    assert.equal(calls[0]!.childId, "tool:r1:1");
    assert.equal(calls[0]!.parentId, "call_1");
    assert.equal("nestedCalls" in o, false, "records go out as they end, not in the run's context or outcome");
  });

  test("records stay in start order when calls end out of order; each answer goes to its own call id", () => {
    const h = startSystem();
    const k = h.running();
    h.call(k, "r1", "c1", "read");
    h.call(k, "r1", "c2", "grep", { pattern: "x" });
    h.call(k, "r1", "c3", "read");
    for (const id of ["tool:r1:3", "tool:r1:1", "tool:r1:2"]) h.dispatch.of(id).finish("succeeded", { text: id });
    assert.deepEqual(
      h.results(k).map((r) => [r.callId, r.text]),
      [
        ["c3", "tool:r1:3"],
        ["c1", "tool:r1:1"],
        ["c2", "tool:r1:2"],
      ],
    );
    k.done("r1");
    assert.deepEqual(
      h.calls("r1").map((r) => [r.seq, r.registeredName]),
      [
        [1, "read"],
        [2, "grep"],
        [3, "read"],
      ],
    );
  });

  test("a tool that is not exposed, or a run without a bridge, is refused at once and recorded", () => {
    const h = startSystem();
    const k = h.running("r1");
    h.call(k, "r1", "c1", "write", { path: "x" });
    const k2 = h.running("r2", null);
    h.call(k2, "r2", "c1");
    assert.deepEqual(h.spawned, []);
    assert.equal(h.results(k)[0]!.status, "error");
    assert.match(h.results(k)[0]!.text, /write is not exposed to Python/);
    assert.equal(h.results(k2)[0]!.status, "error");
    k.done("r1");
    k2.done("r2");
    assert.equal(h.calls("r1")[0]!.status, "failed");
    assert.equal(h.calls("r2")[0]!.parentId, "run:r2");
  });

  test("a call names the tool by its Python name, which may differ from Pi's", () => {
    const h = startSystem();
    const tools = [...TOOLS, { name: "web-search", python: "web_search", signature: "web_search(*, q: str)" }];
    const k = h.running("r1", { callerId: "call_1", toolSet: "t1", tools });
    h.call(k, "r1", "c1", "web-search", { q: "x" });
    assert.equal(h.dispatch.of("tool:r1:1").input.name, "web-search");
    assert.equal(h.dispatch.of("tool:r1:1").input.python, "web_search");
    h.call(k, "r1", "c2", "grep", { pattern: "x" });
    assert.equal(h.dispatch.of("tool:r1:2").input.python, "grep");
  });

  test("cancelling the run cancels its open calls at the cancel's time", () => {
    const h = startSystem();
    const k = h.running();
    h.call(k, "r1", "c1");
    h.clock.increment(300);
    h.actor.send({ type: "run.cancel", at: h.clock.now(), runId: "r1" });
    assert.equal(h.value("run:r1"), "interrupted");
    assert.deepEqual(h.dispatch.of("tool:r1:1").received, [{ type: "dispatch.cancel", at: 10_320 }]);
  });

  test("Python stopped waiting (runner.tool_cancel): the call's dispatcher is cancelled", () => {
    const h = startSystem();
    const k = h.running();
    h.call(k, "r1", "c1");
    const d = h.dispatch.of("tool:r1:1");
    d.validated();
    k.send({ type: "runner.tool_cancel", at: h.clock.now(), runId: "r1", callId: "c1" });
    assert.equal(h.value("tool:r1:1"), "cancelling");
    assert.equal(d.received[0]?.type, "dispatch.cancel");
    d.finish("cancelled");
    assert.equal(h.results(k)[0]!.status, "cancelled");
    assert.equal(h.value("run:r1"), "running", "the run goes on");
  });

  test("a run's context keeps only bounded call state: no list of records grows in it", () => {
    const h = startSystem();
    const k = h.running();
    for (let i = 1; i <= 50; i++) {
      h.call(k, "r1", `c${i}`);
      h.dispatch.of(`tool:r1:${i}`).finish("succeeded");
    }
    const context = h.actor.system.get("run:r1")!.getSnapshot().context;
    assert.equal(context.callCount, 50);
    assert.deepEqual(context.open, {});
    assert.equal(JSON.stringify(context).length < 1000, true, JSON.stringify(context));
    k.done("r1");
    assert.equal(h.calls("r1").length, 50);
  });

  test(`at most ${MAX_OPEN_CALLS} calls are open per run; the next is refused`, () => {
    const h = startSystem();
    const k = h.running();
    for (let i = 1; i <= MAX_OPEN_CALLS + 1; i++) h.call(k, "r1", `c${i}`);
    assert.equal(h.spawned.length, MAX_OPEN_CALLS);
    const refused = h.results(k);
    assert.equal(refused.length, 1);
    assert.equal(refused[0]!.callId, `c${MAX_OPEN_CALLS + 1}`);
    assert.match(refused[0]!.text, /already in flight/);
    h.dispatch.of("tool:r1:1").finish("succeeded");
    h.call(k, "r1", "again");
    assert.equal(h.spawned.length, MAX_OPEN_CALLS + 1, "a slot freed up");
  });
});

// A batch whose cells have their own timeouts (eval's per-cell budget): each further cell starts the deadline again.
describe("running: a batch's cells with their own timeouts", () => {
  const batchRun = (h: ReturnType<typeof startSystem>, runId: string, extra: Partial<RunRequest> = {}) => {
    h.start({
      runId,
      session: "nb",
      timeoutMs: 1000,
      batch: ["b = 1", "c = 1"],
      cellTimeoutsMs: [3000, 500],
      ...extra,
    });
    const k = h.runner.of("session:nb");
    k.ready();
    k.started(runId); // t = 10_000: the first cell's deadline is at 11_000
    return k;
  };

  test("runner.run asks for the cells' starts; each further cell's start moves the deadline to its own", () => {
    const h = startSystem();
    const k = batchRun(h, "b1");
    const sent = k.received.find((c) => c.type === "runner.run") as Extract<RunnerCommand, { type: "runner.run" }>;
    assert.equal(sent.cellStarts, true);
    h.clock.increment(900);
    k.send({ type: "runner.cell", at: h.clock.now(), runId: "b1", cell: 1 }); // t = 10_900: now due at 13_900
    h.clock.increment(2999);
    assert.equal(h.value("run:b1"), "running", "the second cell has its own 3 s");
    k.send({ type: "runner.cell", at: h.clock.now(), runId: "b1", cell: 2 }); // t = 13_899: due at 14_399
    h.clock.increment(499);
    assert.equal(h.value("run:b1"), "running");
    h.clock.increment(1);
    assert.equal(h.value("run:b1"), "interrupted", "the third cell's 500 ms are up");
  });

  test("without cellTimeoutsMs one deadline covers the batch: a cell's start changes nothing", () => {
    const h = startSystem();
    const k = batchRun(h, "b2", { cellTimeoutsMs: undefined });
    const sent = k.received.find((c) => c.type === "runner.run") as Extract<RunnerCommand, { type: "runner.run" }>;
    assert.equal(sent.cellStarts, undefined);
    h.clock.increment(900);
    k.send({ type: "runner.cell", at: h.clock.now(), runId: "b2", cell: 1 });
    h.clock.increment(100);
    assert.equal(h.value("run:b2"), "interrupted");
  });

  test("another run's cell start is ignored (isMine)", () => {
    const h = startSystem();
    const k = batchRun(h, "b3");
    h.clock.increment(900);
    k.send({ type: "runner.cell", at: h.clock.now(), runId: "other", cell: 1 });
    h.clock.increment(100);
    assert.equal(h.value("run:b3"), "interrupted");
  });

  test("a cell that starts while a call is open (waiting) gets its own budget, paused from its start", () => {
    const h = startSystem();
    const k = batchRun(h, "b4", { budget: "work", calls: { callerId: "call_1", toolSet: "t1", tools: TOOLS } });
    h.clock.increment(100);
    h.call(k, "b4", "c1"); // t = 10_100
    assert.equal(h.value("run:b4"), "waiting");
    h.clock.increment(100);
    k.send({ type: "runner.cell", at: h.clock.now(), runId: "b4", cell: 2 }); // t = 10_200: 500 ms, paused
    h.clock.increment(5000);
    assert.equal(h.value("run:b4"), "waiting");
    h.dispatch.of("tool:b4:1").finish("succeeded", { durationMs: 5100 }); // t = 15_200
    assert.equal(h.value("run:b4"), "running");
    h.clock.increment(499);
    assert.equal(h.value("run:b4"), "running", "the cell's whole 500 ms are left");
    h.clock.increment(1);
    assert.equal(h.value("run:b4"), "interrupted");
  });
});

// A work budget (eval cells): the deadline pauses while a nested call is open.
describe("waiting", () => {
  test("running -> waiting while a call is open; the deadline moves by the time spent waiting", () => {
    const h = startSystem();
    h.start({
      runId: "w1",
      timeoutMs: 1000,
      budget: "work",
      calls: { callerId: "call_1", toolSet: "t1", tools: TOOLS },
    });
    const k = h.runner.of("run:w1");
    h.clock.increment(10);
    k.ready();
    h.clock.increment(10);
    k.started("w1"); // t = 10_020; the deadline is at 11_000
    h.clock.increment(480); // 480 ms of work
    h.call(k, "w1", "c1"); // t = 10_500
    assert.equal(h.value("run:w1"), "waiting");
    h.clock.increment(5000); // the call takes 5 s: no timeout meanwhile
    assert.equal(h.value("run:w1"), "waiting");
    h.dispatch.of("tool:w1:1").finish("succeeded", { durationMs: 5000 }); // t = 15_500
    assert.equal(h.value("run:w1"), "running");
    h.clock.increment(499);
    assert.equal(h.value("run:w1"), "running", "500 ms of the budget are left");
    h.clock.increment(1);
    assert.equal(h.value("run:w1"), "interrupted");
  });

  test("a wall-clock run (the default) keeps running through an open call and times out on time", () => {
    const h = startSystem();
    const k = h.running("w2");
    h.call(k, "w2", "c1");
    assert.equal(h.value("run:w2"), "running");
    h.clock.increment(980);
    assert.equal(h.value("run:w2"), "interrupted");
  });
});

describe("stopping", () => {
  test("interrupted -> grace -> killed on a fresh run: terminate after grace, kill after killMs, exited -> timeout", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.advance(980); // t = 1000
    assert.equal(h.value("run:r1"), "interrupted");
    h.advance(interruptWindowMs - 1);
    assert.equal(h.value("run:r1"), "interrupted");
    h.advance(1);
    assert.equal(h.value("run:r1"), "grace");
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt"]); // no second interrupt
    h.advance(graceMs - 1);
    assert.equal(h.value("run:r1"), "grace");
    h.advance(1);
    assert.equal(h.value("run:r1"), "killed");
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt", "runner.terminate"]);
    h.advance(killMs);
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt", "runner.terminate", "runner.kill"]);
    h.advance(10);
    k.exited({ signal: "SIGKILL" });
    assert.deepEqual(
      h.outcome("r1"),
      outcome({
        runId: "r1",
        status: "timeout",
        stopReason: "timeout",
        signal: "SIGKILL",
        finishedAt: 2610,
        killed: true,
        runner: RUNNER_INFO,
      }),
    );
    assert.deepEqual(h.values("run:r1"), ["starting", "running", "interrupted", "grace", "killed", "timeout"]);
    assertHealthy(h);
  });
});

describe("stopping.interrupted", () => {
  test("runner.exited during interrupted keeps the stop reason", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.cancel("r1");
    k.exited({ code: 130 });
    assert.deepEqual(
      h.outcome("r1"),
      outcome({
        runId: "r1",
        status: "cancelled",
        stopReason: "cancelled",
        exitCode: 130,
        finishedAt: 20,
        runner: RUNNER_INFO,
      }),
    );
    assertHealthy(h);
  });

  test("the deadline covers calls: interrupting the run cancels open calls; it ends once they report", () => {
    const h = startSystem();
    const k = h.running("r1", { callerId: "call_1", toolSet: "t1", tools: TOOLS }, 1000);
    h.call(k, "r1", "c1");
    const d = h.dispatch.of("tool:r1:1");
    d.validated();
    h.clock.increment(1000); // the deadline
    assert.equal(h.value("run:r1"), "interrupted");
    assert.deepEqual(
      d.received.map((c) => c.type),
      ["dispatch.cancel"],
    );
    // The deadline's timer event has no time of its own: the cancel carries the run's latest known time.
    assert.equal(typeof d.received[0]!.at, "number");
    h.call(k, "r1", "c2"); // a call from cleanup code after the interrupt: never started
    assert.equal(h.results(k)[0]!.status, "cancelled");
    assert.match(
      h.results(k)[0]!.text,
      /^\S.*: the run is being stopped \(timeout or cancellation\); no new tool calls start\.$/,
    );
    k.done("r1", { exitCode: 130, error: "interrupt" });
    assert.equal(h.value("run:r1"), "draining", "waits for the open call's after handler");
    h.call(k, "r1", "c3"); // a call that arrives after the run's code ended: never started either
    assert.equal(h.results(k)[1]!.status, "cancelled");
    assert.match(h.results(k)[1]!.text, /^\S.*: the run has ended; no new tool calls start\.$/);
    assert.equal(h.spawned.length, 1, "neither refused call was started");
    assert.equal(h.finished.length, 0);
    h.clock.increment(20);
    d.finish("cancelled", { durationMs: 1012 });
    const o = h.finished[0]!;
    assert.equal(o.status, "timeout");
    assert.deepEqual(
      h.calls("r1").map((r) => [r.seq, r.status]),
      [
        [1, "cancelled"],
        [2, "cancelled"],
        [3, "cancelled"],
      ],
    );
    assert.equal(h.calls("r1")[0]!.durationMs, 1012);
  });
});

describe("stopping.grace", () => {
  test("runner.done during grace ends the run unkilled", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.advance(980); // one increment does not walk a chain of timers: step through it
    h.advance(interruptWindowMs);
    assert.equal(h.value("run:r1"), "grace");
    h.advance(50);
    k.done("r1", { exitCode: 130, error: "interrupt" });
    assert.equal(h.outcome("r1").status, "timeout");
    assert.equal(h.outcome("r1").killed, false);
    assert.deepEqual(h.values("run:r1"), ["starting", "running", "interrupted", "grace", "timeout"]);
    assertHealthy(h);
  });

  test("pi-python's escalation (limits.secondInterrupt): interrupted -> grace sends a second SIGINT; the kill comes at the end of the grace", () => {
    const h = startSupervisor({ limits: { ...TEST_LIMITS, secondInterrupt: true } });
    const k = freshRunning(h, "r1");
    h.advance(980); // t = 1000: the first interrupt
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt"]);
    h.advance(interruptWindowMs);
    assert.equal(h.value("run:r1"), "grace");
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt", "runner.interrupt"]);
    h.advance(graceMs);
    assert.equal(h.value("run:r1"), "killed");
    assertHealthy(h);
  });

  test("pi-python's interruptGraceMs 0 (limits.noKill): one interrupt, then no grace and no kill, however long the code takes", () => {
    const h = startSupervisor({ limits: { ...TEST_LIMITS, noKill: true } });
    const k = freshRunning(h, "r1");
    h.advance(980); // t = 1000: the interrupt
    for (let i = 0; i < 10; i++) h.advance(interruptWindowMs + graceMs + killMs);
    assert.equal(h.value("run:r1"), "interrupted");
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt"]);
    h.cancel("r1"); // Pi's abort: not a session closing, so it changes nothing
    assert.equal(h.value("run:r1"), "interrupted");
    k.done("r1", { exitCode: 0, error: null });
    assert.equal(h.outcome("r1").status, "timeout");
    assert.equal(h.outcome("r1").killed, false);
    assertHealthy(h);
  });

  test("limits.noKill: its session being stopped ends the waiting run by force (killed)", () => {
    const h = startSupervisor({ limits: { ...TEST_LIMITS, noKill: true } });
    const k = sessionRunning(h, "s", "s1");
    h.advance(980); // the interrupt
    h.advance(interruptWindowMs + graceMs);
    assert.equal(h.value("run:s1"), "interrupted");
    h.stopSession("s");
    assert.equal(h.value("run:s1"), "killed");
    assert.ok(k.types().includes("runner.terminate"));
    k.exited({ signal: "SIGTERM" });
    assert.equal(h.outcome("s1").killed, true);
    assert.equal(h.outcome("s1").stopReason, "timeout");
    assertHealthy(h);
  });

  test("limits.noKill: a session stopped while its run still runs escalates like any close (interrupt, grace, kill)", () => {
    const h = startSupervisor({ limits: { ...TEST_LIMITS, noKill: true } });
    const k = sessionRunning(h, "s", "s1");
    h.advance(100); // inside its timeout
    h.stopSession("s");
    assert.equal(h.value("run:s1"), "interrupted");
    h.advance(interruptWindowMs);
    assert.equal(h.value("run:s1"), "grace", "the no-kill wait does not hold for a closing session");
    h.advance(graceMs);
    assert.equal(h.value("run:s1"), "killed");
    assert.deepEqual(k.types().slice(-2), ["runner.interrupt", "runner.terminate"]);
    k.exited({ signal: "SIGTERM" });
    assert.deepEqual([h.outcome("s1").stopReason, h.outcome("s1").killed], ["cancelled", true]);
    assertHealthy(h);
  });

  test("with a kill (no noKill), a session stopped during the escalation keeps its steps: no kill before the grace ends", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    h.advance(980); // the timeout's interrupt
    assert.equal(h.value("run:s1"), "interrupted");
    h.stopSession("s");
    assert.equal(h.value("run:s1"), "interrupted");
    assert.equal(k.types().includes("runner.terminate"), false);
    h.advance(interruptWindowMs);
    assert.equal(h.value("run:s1"), "grace");
    h.advance(graceMs);
    assert.equal(h.value("run:s1"), "killed");
    assertHealthy(h);
  });

  test("limits.noKill: a second abort of Pi's (not a close) leaves the waiting run waiting", () => {
    const h = startSupervisor({ limits: { ...TEST_LIMITS, noKill: true } });
    const k = sessionRunning(h, "s", "s1");
    h.cancel("s1");
    h.advance(interruptWindowMs + graceMs + killMs);
    h.cancel("s1");
    h.advance(interruptWindowMs + graceMs + killMs);
    assert.equal(h.value("run:s1"), "interrupted");
    assert.equal(k.types().includes("runner.terminate"), false);
    k.done("s1", { exitCode: 0, error: null });
    assert.equal(h.outcome("s1").stopReason, "cancelled");
    assertHealthy(h);
  });
});

describe("stopping.killed", () => {
  test("runner.failed while killed settles with the stop reason and the message", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    h.cancel("r1");
    assert.equal(h.value("run:r1"), "killed");
    h.runner.of("run:r1").failed("kill: EPERM");
    assert.deepEqual(
      h.outcome("r1"),
      outcome({
        runId: "r1",
        status: "cancelled",
        stopReason: "cancelled",
        finishedAt: 0,
        killed: true,
        message: "kill: EPERM",
      }),
    );
    assertHealthy(h);
  });
});

// The final state is named by the outcome; open calls are drained (or abandoned) first.
describe("finished and draining", () => {
  test("a blocked call makes the run a policy_error even when the script caught it and succeeded", () => {
    const h = startSystem();
    const k = h.running();
    h.call(k, "r1", "c1");
    h.dispatch.of("tool:r1:1").validated();
    h.dispatch.of("tool:r1:1").finish("blocked", { text: "no reading" });
    assert.equal(h.results(k)[0]!.status, "blocked");
    k.done("r1", { exitCode: 0 });
    assert.equal(h.finished[0]!.status, "policy_error");
    assert.equal(h.finished[0]!.exitCode, 0);
    assert.equal(h.calls("r1")[0]!.status, "blocked");
  });

  test("failed and invalid calls do not change the run's status", () => {
    const h = startSystem();
    const k = h.running();
    h.call(k, "r1", "c1");
    h.call(k, "r1", "c2");
    h.dispatch.of("tool:r1:1").finish("invalid");
    h.dispatch.of("tool:r1:2").finish("failed");
    k.done("r1", { exitCode: 0 });
    assert.equal(h.finished[0]!.status, "success");
    assert.deepEqual(
      h.calls("r1").map((r) => r.status),
      ["invalid", "failed"],
    );
  });

  test("a call still open when the run ends is cancelled; one that never reports is abandoned after the grace", () => {
    const h = startSystem();
    const k = h.running();
    h.call(k, "r1", "c1");
    const d = h.dispatch.of("tool:r1:1");
    h.clock.increment(30);
    k.done("r1", { exitCode: 0 }); // e.g. a session's background task was still waiting
    assert.equal(h.value("run:r1"), "draining");
    assert.equal(d.received[0]?.type, "dispatch.cancel");
    h.clock.increment(TEST_LIMITS.graceMs);
    const o = h.finished[0]!;
    assert.equal(o.status, "success");
    const r = h.calls("r1")[0]!;
    assert.equal(r.status, "cancelled");
    assert.equal(r.durationMs, 30 + TEST_LIMITS.graceMs);
    assert.match(r.error!.text, /did not finish within 1000 ms/);
    assert.equal(d.stopped, true, "the call died with its run");
  });

  const sessionRunWithCall = () => {
    const h = startSystem();
    h.start({ runId: "s1", session: "s", calls: { callerId: "call_1", toolSet: "t1", tools: TOOLS } });
    const k = h.runner.of("session:s");
    h.clock.increment(10);
    k.ready();
    h.clock.increment(10);
    k.started("s1");
    h.call(k, "s1", "c1"); // t = 10_020
    const d = h.dispatch.of("tool:s1:1");
    d.validated();
    h.clock.increment(30);
    return { h, k, d };
  };

  for (const how of ["exits", "fails"] as const) {
    test(`a session's process that ${how} with a call open: the call is recorded cancelled at once, the run reports`, () => {
      const { h, k, d } = sessionRunWithCall();
      if (how === "exits") k.exited({ code: 1 });
      else k.failed("runner: bad frame");
      const o = h.finished[0]!;
      assert.equal(o.status, "runtime_error");
      assert.equal(o.session?.isLost, true);
      const r = h.calls("s1")[0]!;
      assert.equal(r.status, "cancelled");
      assert.equal(r.durationMs, 30, "it ends with the process, no grace");
      assert.equal(r.error!.text, "The run's process ended while this call was open; the call was cancelled with it.");
      assert.equal(d.stopped, true, "the call died with its run");
    });
  }

  test("a session run whose code ended with a call open drains it like a fresh run (its process lives on)", () => {
    const { h, k, d } = sessionRunWithCall();
    k.done("s1");
    assert.equal(h.value("run:s1"), "draining");
    assert.equal(h.finished.length, 0);
    assert.deepEqual(
      d.received.map((c) => c.type),
      ["dispatch.cancel"],
    );
    d.finish("cancelled");
    assert.equal(h.finished[0]!.status, "success");
    assert.equal(h.finished[0]!.session?.isLost, false);
    assert.equal(h.calls("s1")[0]!.durationMs, 7, "the call's own record, not an abandoned one");
  });

  test("a fresh run's process that exits with a call open: the call drains (only a session's loss ends it at once)", () => {
    const h = startSystem();
    const k = h.running();
    h.call(k, "r1", "c1");
    const d = h.dispatch.of("tool:r1:1");
    k.exited({ code: 1 });
    assert.equal(h.value("run:r1"), "draining");
    assert.deepEqual(
      d.received.map((c) => c.type),
      ["dispatch.cancel"],
    );
    d.finish("cancelled");
    assert.equal(h.finished[0]!.status, "runtime_error");
    assert.equal(h.calls("r1")[0]!.durationMs, 7);
  });

  test("abandoned calls are recorded in start order, whatever the runner's call ids", () => {
    const h = startSystem();
    const k = h.running();
    for (const id of ["30", "20", "10", "b", "a"]) h.call(k, "r1", id);
    k.done("r1");
    h.clock.increment(TEST_LIMITS.graceMs);
    // Runner ids that read as integers would come out of an object's keys in numeric order.
    assert.deepEqual(
      h.records.map((r) => r.seq),
      [1, 2, 3, 4, 5],
    );
  });

  test("a run with a blocked call that then times out still reports policy_error", () => {
    const h = startSystem();
    const k = h.running();
    h.call(k, "r1", "c1");
    h.dispatch.of("tool:r1:1").finish("blocked");
    h.clock.increment(1000);
    k.done("r1", { exitCode: 130, error: "interrupt" });
    assert.equal(h.finished[0]!.status, "policy_error");
    assert.equal(h.finished[0]!.stopReason, "timeout");
  });
});

// Paths generated from the machine's graph (xstate/graph), each replayed on a real run `g` under the real supervisor.
describe("finished: what the outcome says (machines/run-outcome.ts)", () => {
  const base: RunInput = {
    runId: "r1",
    code: "1",
    filename: "script.py",
    cwd: "/w",
    timeoutMs: 1000,
    requestedAt: 100,
    limits: TEST_LIMITS,
  };
  const context = (extra: Partial<RunContext> = {}): RunContext => ({ ...initialContext(base), ...extra });
  const exited = (code: number | null, signal: string | null) =>
    ({ type: "runner.exited", at: 150, code, signal }) satisfies RunnerFact;

  test("a process that exits before user code: which runtime, and the signal or the exit code", () => {
    assert.equal(
      exitedOutcome(context(), exited(3, null), false).message,
      "Python exited during start-up (exit code 3)",
    );
    const js = exitedOutcome(context({ language: "js" }), exited(null, "SIGKILL"), false);
    assert.deepEqual(
      [js.status, js.message, js.signal, js.exitCode],
      ["setup_error", "The JavaScript runtime exited during start-up (SIGKILL)", "SIGKILL", undefined],
    );
    const told = exitedOutcome(context({ message: "already said" }), exited(1, null), false);
    assert.equal(told.message, "already said", "a message the run already has is kept");
  });

  test("after user code: exit 0 without a signal is success, anything else a runtime error; a session is lost", () => {
    assert.equal(exitedOutcome(context(), exited(0, null)).status, "success");
    assert.equal(exitedOutcome(context(), exited(0, "SIGTERM")).status, "runtime_error");
    assert.equal(exitedOutcome(context(), exited(2, null)).status, "runtime_error");
    assert.equal(exitedOutcome(context({ stopReason: "timeout" }), exited(0, null)).status, "timeout");
    const session = { name: "s", ordinal: 2, incarnation: 1, started: false };
    const lost = exitedOutcome(context({ session }), exited(1, null));
    assert.deepEqual(lost.session, { ...session, isLost: true });
    assert.equal(lost.message, undefined, "no start-up message after user code started");
  });

  test("a runner failure: setup or runtime error, its hint, and a session lost only after user code started", () => {
    const session = { name: "s", ordinal: 1, incarnation: 1, started: true };
    const failed = {
      type: "runner.failed",
      at: 120,
      message: "gone",
      hint: { id: "h", text: "try" },
    } satisfies RunnerFact;
    const before = failedOutcome(context({ session }), failed, false);
    assert.deepEqual(
      [before.status, before.message, before.hints, before.session?.isLost],
      ["setup_error", "gone", [{ id: "h", text: "try" }], false],
    );
    const after = failedOutcome(context({ session }), { ...failed, hint: undefined }, true);
    assert.deepEqual([after.status, after.hints, after.session?.isLost], ["runtime_error", undefined, true]);
  });

  test("a finished run: its exit code, reloaded and already loaded modules (only when there are any)", () => {
    const done = {
      type: "runner.done",
      at: 130,
      runId: "r1",
      exitCode: 0,
      displayedValue: true,
      error: null,
      reloaded: ["mod"],
      alreadyLoaded: ["pkg"],
    } satisfies RunnerFact;
    const o = finishedOutcome(context({ notes: ["n"] }), done);
    assert.deepEqual(
      [o.status, o.exitCode, o.displayedValue, o.reloaded, o.alreadyLoaded, o.notes, o.durationMs],
      ["success", 0, true, ["mod"], ["pkg"], ["n"], 30],
    );
    const bare = finishedOutcome(context(), { ...done, exitCode: 1, reloaded: [], alreadyLoaded: [] });
    assert.deepEqual(
      [bare.status, bare.reloaded, bare.alreadyLoaded, bare.notes],
      ["runtime_error", undefined, undefined, undefined],
    );
  });

  test("a request no run served: ordinal 0 in its session, never a negative duration, empty notes left out", () => {
    const o = requestOutcome({ runId: "q", at: 50, session: "s", notes: [] }, "setup_error", {
      at: 40,
      incarnation: 2,
    });
    assert.deepEqual(o.session, { name: "s", ordinal: 0, incarnation: 2, started: false, isLost: false });
    assert.equal(o.durationMs, 0);
    assert.equal(o.notes, undefined);
    assert.equal(o.finishedAt, 40);
    assert.equal(o.killed, false);
    assert.deepEqual(requestOutcome({ runId: "q", at: 50, notes: ["n"] }, "cancelled").notes, ["n"]);
  });

  test("a refusal: a setup_error with its message, the request's notes and the given extras", () => {
    const o = refusal({ runId: "q", at: 50, notes: ["n"] }, "busy", { at: 60, hints: [{ id: "h", text: "wait" }] });
    // The defaults are what this test checks: spelled out, not built (test/helpers/outcomes.ts).
    assert.deepEqual(o, {
      runId: "q",
      status: "setup_error",
      displayedValue: false,
      requestedAt: 50,
      finishedAt: 60,
      durationMs: 10,
      killed: false,
      notes: ["n"],
      hints: [{ id: "h", text: "wait" }],
      message: "busy",
    });
  });
});

describe("the graph", () => {
  test("the analysis has no side effects: no runner started", () => {
    getShortestPaths(runLogic, runOptions(byValueAndFlags));
    assert.equal(fake.instances.length, 0);
  });

  test("value-only serialization: shortest paths reach every state but `timeout`, and all replay", () => {
    const paths = getShortestPaths(runLogic, runOptions(byValue));
    const reached = paths.map((p) => stateName(p.state.value) as string);
    // The stop reason lives in context: with the value alone, `killed`/`interrupted` are first reached by
    // run.cancel, and the deadline edges into them are merged away, so `timeout` has no representative.
    assert.deepEqual([...reached].sort(), RUN_STATES.filter((s) => s !== "timeout").sort());
    assert.ok(!reached.includes("finished"), "`finished` is transient");
    for (const path of paths) replayRun(path, byValue);
  });

  test("value + guard context: shortest paths reach every state of the run machine, and all replay", () => {
    const paths = getShortestPaths(runLogic, runOptions(byValueAndFlags));
    const reached = new Set(paths.map((p) => stateName(p.state.value) as string));
    assert.deepEqual([...reached].sort(), [...RUN_STATES].sort());
    const statuses = new Map<string, Set<string>>();
    for (const path of paths) {
      const outcome = replayRun(path, byValueAndFlags);
      if (outcome) {
        const set = statuses.get(outcome.status) ?? new Set<string>();
        set.add(`${outcome.stopReason ?? "-"}/${outcome.killed ? "killed" : "not killed"}`);
        statuses.set(outcome.status, set);
      }
    }
    // Both stop reasons end killed and unkilled.
    assert.deepEqual([...(statuses.get("timeout") ?? [])].sort(), ["timeout/killed", "timeout/not killed"]);
    assert.deepEqual([...(statuses.get("cancelled") ?? [])].sort(), ["cancelled/killed", "cancelled/not killed"]);
  });

  test("the guarded branches of `starting` exist as predicted", () => {
    const adjacency = getAdjacencyMap(runLogic, runOptions(byValueAndFlags)) as Adjacency;
    const from = (ready: boolean) => adjacency[JSON.stringify(["starting", ready, null, false])]!.transitions;
    const target = (ready: boolean, type: string) =>
      stateName(Object.values(from(ready)).find((t) => t.event.type === type)?.state.value);
    assert.equal(target(false, "xstate.after.deadline.run.starting"), "killed");
    assert.equal(target(true, "xstate.after.deadline.run.starting"), "interrupted");
    assert.equal(target(false, "run.cancel"), "killed");
    assert.equal(target(true, "run.cancel"), "interrupted");
    assert.equal(target(false, "runner.ready"), "starting");
  });

  test("every edge of the graph (value + guard context) replays: shortest path to its source, then the edge", () => {
    const options = runOptions(byValueAndFlags);
    const adjacency = getAdjacencyMap(runLogic, options) as Adjacency;
    const toSource = new Map(getShortestPaths(runLogic, options).map((p) => [byValueAndFlags(p.state), p]));
    let edges = 0;
    const afterEdges = new Set<string>();
    for (const [source, { transitions }] of Object.entries(adjacency)) {
      const head = toSource.get(source);
      assert.ok(head, `a path to ${source}`);
      for (const { event, state } of Object.values(transitions)) {
        edges++;
        if (event.type.startsWith("xstate.after.")) afterEdges.add(event.type);
        replayRun({ state, weight: head.weight + 1, steps: [...head.steps, { event, state }] }, byValueAndFlags);
      }
    }
    assert.ok(edges >= 60, `edges: ${edges}`);
    // Every delay of the machine, including the target-less kill bound in `killed`, was driven by the clock.
    assert.deepEqual([...afterEdges].sort(), [
      "xstate.after.deadline.run.running",
      "xstate.after.deadline.run.starting",
      "xstate.after.grace.run.stopping.grace",
      "xstate.after.interruptWindow.run.stopping.interrupted",
      "xstate.after.killBound.run.stopping.killed",
    ]);
  });

  test("simple paths (value + guard context) to every final state replay", () => {
    const paths = getSimplePaths(runLogic, runOptions(byValueAndFlags));
    assert.ok(paths.length > 30, `simple paths: ${paths.length}`);
    const finals = new Set<string>();
    for (const path of paths) {
      replayRun(path, byValueAndFlags);
      if (path.state.status === "done") finals.add(path.state.value as string);
    }
    assert.deepEqual([...finals].sort(), ["cancelled", "runtime_error", "setup_error", "success", "timeout"]);
  });

  test("value-only serialization is unsound here: some simple paths predict the wrong final state", () => {
    // The final state is chosen from `context.stopReason`; merging snapshots by value keeps one representative per
    // vertex (stopReason "cancelled" for `interrupted`), so a deadline path is predicted to end `cancelled`.
    const wrong = getSimplePaths(runLogic, runOptions(byValue)).filter((path) => {
      let s: AnyMachineSnapshot = runLogic.getInitialSnapshot(undefined as unknown as AnyActorScope, RUN_INPUT);
      for (const step of path.steps.slice(1))
        s = runLogic.transition(s, step.event, undefined as unknown as AnyActorScope);
      return byValue(s) !== byValue(path.state);
    });
    assert.ok(wrong.length > 0);
    assert.ok(
      wrong.some(
        (p) =>
          describePath(p) === "xstate.init > runner.started > after(deadline) > runner.done" &&
          p.state.value === "cancelled",
      ),
      wrong.map(describePath).join("\n"),
    );
  });
});

describe("the definition", () => {
  test("every state is described, under the machine's id", () => {
    assert.equal(runMachine.id, "run");
    assert.deepEqual(undescribedStates(runMachine), []);
  });

  test("without its effects provided, a run fails at once and names the missing actor", () => {
    const input: RunInput = {
      runId: "r1",
      code: "1",
      filename: "<r1>",
      cwd: "/w",
      timeoutMs: 1000,
      requestedAt: 0,
      limits: TEST_LIMITS,
    };
    assert.equal(
      missingEffectError(runMachine, input),
      "run: the `runner` actor must be provided (machines/system.ts)",
    );
    assert.equal(
      missingEffectError(runMachine, { ...input, dependencies: ["x==1"] }),
      "run: the `install` actor must be provided (machines/system.ts)",
    );
  });
});
