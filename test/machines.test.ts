// Scenario tests of the run, session and supervisor machines, driven through the real supervisor root with the fake
// kernel and a SimulatedClock: no process, no sleeping, no real timer. Kernel facts are sent by hand with `at` equal
// to the simulated now, so deadlines computed from `at` agree with the clock.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { SimulatedClock, createActor } from "xstate";
import type { RunOutcome } from "../machines/events.ts";
import { sessionMachine } from "../machines/session.ts";
import { KERNEL_INFO, TEST_LIMITS, createFakeKernel, startSupervisor } from "./helpers/fake-kernel.ts";
import type { FakeKernelInstance, Harness } from "./helpers/fake-kernel.ts";

const { interruptWindowMs, graceMs, killMs } = TEST_LIMITS;
const BUSY = (name: string) => `Session "${name}" is busy with another run; wait for it to finish.`;
const SHUTDOWN = "Pi is shutting down; the code_execution supervisor accepts no new runs.";

/** Nothing errored anywhere in the tree: no `xstate.error.actor.*` event was delivered, no actor snapshot was ever
 * in status "error", the root is active and reported no error. */
function assertHealthy(h: Harness) {
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

function ctx(h: Harness) {
  return h.actor.getSnapshot().context;
}

/** A fresh run `runId` started at now, ready 10 ms later, started 10 ms after that. */
function freshRunning(h: Harness, runId: string, timeoutMs = 1000): FakeKernelInstance {
  h.start({ runId, timeoutMs });
  const k = h.kernel.of(`run:${runId}`);
  h.advance(10);
  k.ready();
  h.advance(10);
  k.started(runId);
  assert.equal(h.value(`run:${runId}`), "running");
  return k;
}

/** A new session `name` whose first run `runId` is running (ready +10 ms, started +10 ms). */
function sessionRunning(h: Harness, name: string, runId: string, timeoutMs = 1000): FakeKernelInstance {
  h.start({ runId, session: name, timeoutMs });
  const k = h.kernel.of(`session:${name}`);
  h.advance(10);
  k.ready();
  h.advance(10);
  k.started(runId);
  assert.equal(h.value(`run:${runId}`), "running");
  assert.equal(h.value(`session:${name}`), "running");
  return k;
}

/** The next run `runId` in the idle session `name` (same kernel), running after 10 ms. */
function nextSessionRun(h: Harness, name: string, runId: string, timeoutMs = 1000): FakeKernelInstance {
  assert.equal(h.value(`session:${name}`), "idle");
  const k = h.kernel.of(`session:${name}`);
  h.start({ runId, session: name, timeoutMs });
  h.advance(10);
  k.started(runId);
  assert.equal(h.value(`run:${runId}`), "running");
  return k;
}

function run(runId: string, code = `print(${JSON.stringify(runId)})`, filename = "script.py") {
  return { type: "kernel.run", runId, code, filename };
}

describe("run: fresh process", () => {
  test("success: starting -> running -> success, kernel.run sent once the kernel is ready", () => {
    const h = startSupervisor();
    h.start({ runId: "r1", code: "1 + 1", cwd: "/w", timeoutMs: 1000 });
    assert.deepEqual(h.children(), ["run:r1"]);
    assert.equal(h.value("run:r1"), "starting");
    const k = h.kernel.of("run:r1");
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
      {
        runId: "r1",
        status: "success",
        exitCode: 0,
        displayedValue: true,
        requestedAt: 0,
        finishedAt: 35,
        durationMs: 35,
        killed: false,
        kernel: KERNEL_INFO,
      },
    ] satisfies RunOutcome[]);
    assert.deepEqual(h.values("run:r1"), ["starting", "running", "success"]);
    assert.deepEqual(k.types(), ["kernel.run", "stopped"]);
    assert.deepEqual(h.children(), []);
    assert.deepEqual(ctx(h).active, {});
    assert.deepEqual(h.timers(), []);
    assertHealthy(h);
  });

  test("runtime_error: kernel.done with a non-zero exitCode", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.advance(30);
    k.done("r1", { exitCode: 1, error: "exception" });
    assert.deepEqual(h.finished, [
      {
        runId: "r1",
        status: "runtime_error",
        exitCode: 1,
        displayedValue: false,
        requestedAt: 0,
        finishedAt: 50,
        durationMs: 50,
        killed: false,
        kernel: KERNEL_INFO,
      },
    ]);
    assert.deepEqual(h.values("run:r1"), ["starting", "running", "runtime_error"]);
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("a kernel.done for another run id is ignored (isMine)", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    k.done("other");
    assert.equal(h.value("run:r1"), "running");
    assert.deepEqual(h.finished, []);
    k.done("r1");
    assert.equal(h.outcome("r1").status, "success");
    assertHealthy(h);
  });

  test("setup_error: kernel.failed before the kernel is ready", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    h.advance(7);
    h.kernel.of("run:r1").failed("python3: not found");
    assert.deepEqual(h.finished, [
      {
        runId: "r1",
        status: "setup_error",
        displayedValue: false,
        requestedAt: 0,
        finishedAt: 7,
        durationMs: 7,
        killed: false,
        message: "python3: not found",
      },
    ]);
    assert.deepEqual(h.values("run:r1"), ["starting", "setup_error"]);
    assert.deepEqual(h.kernel.of("run:r1").types(), ["stopped"]);
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("setup_error: kernel.exited before kernel.started (after ready) names the exit code", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    const k = h.kernel.of("run:r1");
    h.advance(10);
    k.ready();
    h.advance(5);
    k.exited({ code: 1 });
    assert.deepEqual(h.finished, [
      {
        runId: "r1",
        status: "setup_error",
        exitCode: 1,
        displayedValue: false,
        requestedAt: 0,
        finishedAt: 15,
        durationMs: 15,
        killed: false,
        message: "Python exited during start-up (exit code 1)",
        kernel: KERNEL_INFO,
      },
    ]);
    assert.deepEqual(h.values("run:r1"), ["starting", "setup_error"]);
    assertHealthy(h);
  });

  test("setup_error: kernel.exited by a signal before ready names the signal", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    h.advance(3);
    h.kernel.of("run:r1").exited({ signal: "SIGSEGV" });
    assert.deepEqual(h.outcome("r1"), {
      runId: "r1",
      status: "setup_error",
      signal: "SIGSEGV",
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 3,
      durationMs: 3,
      killed: false,
      message: "Python exited during start-up (SIGSEGV)",
    });
    assertHealthy(h);
  });

  test("kernel.exited while running (os._exit(3)): runtime_error with the exit code, no session", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.advance(5);
    k.exited({ code: 3 });
    assert.deepEqual(h.outcome("r1"), {
      runId: "r1",
      status: "runtime_error",
      exitCode: 3,
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 25,
      durationMs: 25,
      killed: false,
      kernel: KERNEL_INFO,
    });
    assert.deepEqual(h.values("run:r1"), ["starting", "running", "runtime_error"]);
    assertHealthy(h);
  });

  test("kernel.exited with code 0 and no signal while running counts as success", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    k.exited({ code: 0 });
    assert.equal(h.outcome("r1").status, "success");
    assert.equal(h.outcome("r1").exitCode, 0);
    assertHealthy(h);
  });

  test("deadline in starting before ready: killed at once (terminate, kill after killMs), then timeout", () => {
    const h = startSupervisor();
    h.start({ runId: "r1", timeoutMs: 1000 });
    const k = h.kernel.of("run:r1");
    h.advance(999);
    assert.equal(h.value("run:r1"), "starting");
    assert.deepEqual(k.received, []);
    h.advance(1);
    assert.equal(h.value("run:r1"), "killed");
    assert.deepEqual(k.types(), ["kernel.terminate"]);
    h.advance(killMs - 1);
    assert.deepEqual(k.types(), ["kernel.terminate"]);
    h.advance(1);
    assert.deepEqual(k.types(), ["kernel.terminate", "kernel.kill"]);
    h.advance(20);
    k.exited({ signal: "SIGKILL" });
    assert.deepEqual(h.outcome("r1"), {
      runId: "r1",
      status: "timeout",
      stopReason: "timeout",
      signal: "SIGKILL",
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 1520,
      durationMs: 1520,
      killed: true,
    });
    assert.deepEqual(h.values("run:r1"), ["starting", "killed", "timeout"]);
    assert.deepEqual(k.types(), ["kernel.terminate", "kernel.kill", "stopped"]);
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("deadline in starting after ready: interrupted (one kernel.interrupt), kernel.done -> timeout", () => {
    const h = startSupervisor();
    h.start({ runId: "r1", timeoutMs: 1000 });
    const k = h.kernel.of("run:r1");
    h.advance(10);
    k.ready();
    h.advance(990);
    assert.equal(h.value("run:r1"), "interrupted");
    assert.deepEqual(k.received, [run("r1"), { type: "kernel.interrupt", runId: "r1" }]);
    // A late kernel.started is not handled in interrupted.
    k.started("r1");
    assert.equal(h.value("run:r1"), "interrupted");
    h.advance(30);
    k.done("r1", { exitCode: 130, error: "interrupt" });
    assert.deepEqual(h.outcome("r1"), {
      runId: "r1",
      status: "timeout",
      stopReason: "timeout",
      exitCode: 130,
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 1030,
      durationMs: 1030,
      killed: false,
      kernel: KERNEL_INFO,
    });
    assert.deepEqual(h.values("run:r1"), ["starting", "interrupted", "timeout"]);
    assertHealthy(h);
  });

  test("deadline in running fires at requestedAt + timeoutMs, measured from the facts' times", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1", 1000); // started at 20: deadline 980 ms after entering running
    h.advance(979);
    assert.equal(h.value("run:r1"), "running");
    assert.deepEqual(k.types(), ["kernel.run"]);
    h.advance(1);
    assert.equal(h.value("run:r1"), "interrupted");
    assert.deepEqual(k.received, [run("r1"), { type: "kernel.interrupt", runId: "r1" }]);
    h.advance(40);
    k.done("r1", { exitCode: 130, error: "interrupt" });
    assert.deepEqual(h.outcome("r1"), {
      runId: "r1",
      status: "timeout",
      stopReason: "timeout",
      exitCode: 130,
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 1040,
      durationMs: 1040,
      killed: false,
      kernel: KERNEL_INFO,
    });
    assert.deepEqual(h.values("run:r1"), ["starting", "running", "interrupted", "timeout"]);
    assertHealthy(h);
  });

  test("interrupted -> grace -> killed on a fresh run: terminate after grace, kill after killMs, exited -> timeout", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.advance(980); // t = 1000
    assert.equal(h.value("run:r1"), "interrupted");
    h.advance(interruptWindowMs - 1);
    assert.equal(h.value("run:r1"), "interrupted");
    h.advance(1);
    assert.equal(h.value("run:r1"), "grace");
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt"]); // no second interrupt
    h.advance(graceMs - 1);
    assert.equal(h.value("run:r1"), "grace");
    h.advance(1);
    assert.equal(h.value("run:r1"), "killed");
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt", "kernel.terminate"]);
    h.advance(killMs);
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt", "kernel.terminate", "kernel.kill"]);
    h.advance(10);
    k.exited({ signal: "SIGKILL" });
    assert.deepEqual(h.outcome("r1"), {
      runId: "r1",
      status: "timeout",
      stopReason: "timeout",
      signal: "SIGKILL",
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 2610,
      durationMs: 2610,
      killed: true,
      kernel: KERNEL_INFO,
    });
    assert.deepEqual(h.values("run:r1"), ["starting", "running", "interrupted", "grace", "killed", "timeout"]);
    assertHealthy(h);
  });

  test("kernel.done during grace ends the run unkilled", () => {
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

  test("kernel.exited during interrupted keeps the stop reason", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.cancel("r1");
    k.exited({ code: 130 });
    assert.deepEqual(h.outcome("r1"), {
      runId: "r1",
      status: "cancelled",
      stopReason: "cancelled",
      exitCode: 130,
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 20,
      durationMs: 20,
      killed: false,
      kernel: KERNEL_INFO,
    });
    assertHealthy(h);
  });

  test("kernel.failed while killed settles with the stop reason and the message", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    h.cancel("r1");
    assert.equal(h.value("run:r1"), "killed");
    h.kernel.of("run:r1").failed("kill: EPERM");
    assert.deepEqual(h.outcome("r1"), {
      runId: "r1",
      status: "cancelled",
      stopReason: "cancelled",
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 0,
      durationMs: 0,
      killed: true,
      message: "kill: EPERM",
    });
    assertHealthy(h);
  });

  test("cancel in starting before the kernel is ready: killed directly, no interrupt", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    const k = h.kernel.of("run:r1");
    h.advance(5);
    h.cancel("r1");
    assert.equal(h.value("run:r1"), "killed");
    assert.deepEqual(k.types(), ["kernel.terminate"]);
    h.advance(killMs);
    assert.deepEqual(k.types(), ["kernel.terminate", "kernel.kill"]);
    k.exited({ signal: "SIGKILL" });
    assert.deepEqual(h.outcome("r1"), {
      runId: "r1",
      status: "cancelled",
      stopReason: "cancelled",
      signal: "SIGKILL",
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 505,
      durationMs: 505,
      killed: true,
    });
    assert.deepEqual(h.values("run:r1"), ["starting", "killed", "cancelled"]);
    assertHealthy(h);
  });

  test("cancel in starting after ready: interrupted, kernel.done -> cancelled", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    const k = h.kernel.of("run:r1");
    h.advance(10);
    k.ready();
    h.advance(5);
    h.cancel("r1");
    assert.equal(h.value("run:r1"), "interrupted");
    assert.deepEqual(k.received, [run("r1"), { type: "kernel.interrupt", runId: "r1" }]);
    k.done("r1", { exitCode: 130, error: "interrupt" });
    assert.deepEqual(h.outcome("r1"), {
      runId: "r1",
      status: "cancelled",
      stopReason: "cancelled",
      exitCode: 130,
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 15,
      durationMs: 15,
      killed: false,
      kernel: KERNEL_INFO,
    });
    assert.deepEqual(h.values("run:r1"), ["starting", "interrupted", "cancelled"]);
    assertHealthy(h);
  });

  test("cancel in running: interrupted, kernel.done -> cancelled; a second cancel is ignored", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.advance(100);
    h.cancel("r1");
    h.cancel("r1");
    assert.equal(h.value("run:r1"), "interrupted");
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt"]);
    k.done("r1", { exitCode: 130, error: "interrupt" });
    assert.equal(h.outcome("r1").status, "cancelled");
    assert.deepEqual(h.values("run:r1"), ["starting", "running", "interrupted", "cancelled"]);
    // Cancelling a finished or unknown run does nothing.
    h.cancel("r1");
    h.cancel("nope");
    assert.equal(h.finished.length, 1);
    assertHealthy(h);
  });
});

describe("run in a session", () => {
  test("first run: session starting -> running -> idle, run started the process", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s", cwd: "/p", code: "x = 1" });
    assert.deepEqual(h.children(), ["session:s"]);
    assert.equal(h.value("session:s"), "starting");
    assert.equal(h.value("run:s1"), "starting");
    const k = h.kernel.of("session:s");
    assert.deepEqual(k.input, { mode: "session", cwd: "/p", owner: "session:s" });
    assert.equal(h.kernel.instances.length, 1); // the run's kernel is the session link, not a process
    h.advance(10);
    k.ready();
    assert.equal(h.value("session:s"), "running");
    assert.deepEqual(k.received, [run("s1", "x = 1", "script-1.py")]);
    h.advance(10);
    k.started("s1");
    h.advance(10);
    k.done("s1");
    assert.deepEqual(h.outcome("s1"), {
      runId: "s1",
      status: "success",
      exitCode: 0,
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 30,
      durationMs: 30,
      killed: false,
      kernel: KERNEL_INFO,
      session: { name: "s", ordinal: 1, incarnation: 1, started: true, isLost: false },
    });
    assert.deepEqual(h.values("session:s"), ["starting", "running", "idle"]);
    assert.deepEqual(h.values("run:s1"), ["starting", "running", "success"]);
    assert.deepEqual(h.children(), ["session:s"]);
    assert.deepEqual(Object.keys(h.ref("session:s")!.getSnapshot().children), ["kernel"]);
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 1, status: "alive", cwd: "/p" } });
    assert.deepEqual(ctx(h).active, {});
    assert.equal(k.stopped, false);
    assertHealthy(h);
  });

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
    assert.deepEqual(h.outcome("s2"), {
      runId: "s2",
      status: "success",
      exitCode: 0,
      displayedValue: true,
      requestedAt: 120,
      finishedAt: 130,
      durationMs: 10,
      killed: false,
      kernel: KERNEL_INFO,
      session: { name: "s", ordinal: 2, incarnation: 1, started: false, isLost: false },
    });
    assert.equal(h.kernel.instances.length, 1);
    assert.deepEqual(h.values("session:s"), ["starting", "running", "idle", "running", "idle"]);
    assertHealthy(h);
  });

  test("timeout answered in time: interrupted -> kernel.done -> timeout, session idle and state kept", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1"); // deadline at t = 1000
    h.advance(980);
    assert.equal(h.value("run:s1"), "interrupted");
    assert.equal(h.value("session:s"), "interrupted");
    assert.deepEqual(k.received, [run("s1", 'print("s1")', "script-1.py"), { type: "kernel.interrupt", runId: "s1" }]);
    h.advance(10);
    k.done("s1", { exitCode: 130, error: "interrupt" });
    assert.deepEqual(h.outcome("s1"), {
      runId: "s1",
      status: "timeout",
      stopReason: "timeout",
      exitCode: 130,
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 1010,
      durationMs: 1010,
      killed: false,
      kernel: KERNEL_INFO,
      session: { name: "s", ordinal: 1, incarnation: 1, started: true, isLost: false },
    });
    assert.deepEqual(h.values("session:s"), ["starting", "running", "interrupted", "idle"]);
    assert.equal(k.stopped, false);
    // Same process (incarnation), the next ordinal: the state survived.
    nextSessionRun(h, "s", "s2");
    k.done("s2");
    assert.deepEqual(h.outcome("s2").session, { name: "s", ordinal: 2, incarnation: 1, started: false, isLost: false });
    assert.equal(h.kernel.all("session:s").length, 1);
    assertHealthy(h);
  });

  test("cancel in a session: interrupted -> kernel.done -> cancelled, session idle", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    h.cancel("s1");
    assert.equal(h.value("session:s"), "interrupted");
    k.done("s1", { exitCode: 130, error: "interrupt" });
    assert.equal(h.outcome("s1").status, "cancelled");
    assert.deepEqual(h.outcome("s1").session, { name: "s", ordinal: 1, incarnation: 1, started: true, isLost: false });
    assert.equal(h.value("session:s"), "idle");
    assertHealthy(h);
  });

  test("interrupted -> grace -> killed -> kernel.exited: session lost, outcome isLost and killed", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    h.advance(980); // t = 1000
    assert.equal(h.value("session:s"), "interrupted");
    assert.equal(h.value("run:s1"), "interrupted");
    h.advance(interruptWindowMs);
    assert.equal(h.value("session:s"), "grace");
    assert.equal(h.value("run:s1"), "grace");
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt"]);
    h.advance(graceMs);
    assert.equal(h.value("session:s"), "killed");
    assert.equal(h.value("run:s1"), "killed");
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt", "kernel.terminate"]);
    h.advance(killMs - 1);
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt", "kernel.terminate"]);
    h.advance(1);
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt", "kernel.terminate", "kernel.kill"]);
    h.advance(10);
    k.exited({ signal: "SIGKILL" });
    assert.deepEqual(h.outcome("s1"), {
      runId: "s1",
      status: "timeout",
      stopReason: "timeout",
      signal: "SIGKILL",
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 2610,
      durationMs: 2610,
      killed: true,
      kernel: KERNEL_INFO,
      session: { name: "s", ordinal: 1, incarnation: 1, started: true, isLost: true },
    });
    assert.deepEqual(h.values("session:s"), ["starting", "running", "interrupted", "grace", "killed", "lost"]);
    assert.deepEqual(h.values("run:s1"), ["starting", "running", "interrupted", "grace", "killed", "timeout"]);
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt", "kernel.terminate", "kernel.kill", "stopped"]);
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 1, status: "lost", cwd: "/work" } });
    assert.deepEqual(ctx(h).active, {});
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("os._exit while running: kernel.exited -> runtime_error, session lost", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    h.advance(5);
    k.exited({ code: 3 });
    assert.deepEqual(h.outcome("s1"), {
      runId: "s1",
      status: "runtime_error",
      exitCode: 3,
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 25,
      durationMs: 25,
      killed: false,
      kernel: KERNEL_INFO,
      session: { name: "s", ordinal: 1, incarnation: 1, started: true, isLost: true },
    });
    assert.deepEqual(h.values("session:s"), ["starting", "running", "lost"]);
    assert.deepEqual(k.types(), ["kernel.run", "stopped"]);
    assert.equal(ctx(h).sessions.s?.status, "lost");
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("a run after a lost session starts a new process: incarnation + 1, replacedLost", () => {
    const h = startSupervisor();
    const k1 = sessionRunning(h, "s", "s1");
    k1.exited({ code: 3 });
    h.advance(100);
    h.start({ runId: "s2", session: "s" });
    const k2 = h.kernel.of("session:s");
    assert.notEqual(k2, k1);
    assert.equal(k2.index, 1);
    assert.equal(h.value("session:s"), "starting");
    k2.ready();
    k2.started("s2");
    k2.done("s2");
    assert.deepEqual(h.outcome("s2").session, { name: "s", ordinal: 1, incarnation: 2, started: true, replacedLost: true, isLost: false });
    assert.deepEqual(k2.received, [run("s2", 'print("s2")', "script-1.py")]);
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 2, status: "alive", cwd: "/work" } });
    // Only the first run of the new incarnation carries replacedLost.
    nextSessionRun(h, "s", "s3");
    k2.done("s3");
    assert.deepEqual(h.outcome("s3").session, { name: "s", ordinal: 2, incarnation: 2, started: false, isLost: false });
    assertHealthy(h);
  });

  test("kernel.exited while the session is idle: lost between runs, next run replaces it", () => {
    const h = startSupervisor();
    const k1 = sessionRunning(h, "s", "s1");
    k1.done("s1");
    k1.exited({ code: 0 });
    assert.deepEqual(h.values("session:s"), ["starting", "running", "idle", "lost"]);
    assert.equal(h.finished.length, 1);
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 1, status: "lost", cwd: "/work" } });
    assert.deepEqual(h.children(), []);
    h.start({ runId: "s2", session: "s" });
    const k2 = h.kernel.of("session:s");
    k2.ready();
    k2.started("s2");
    k2.done("s2");
    assert.deepEqual(h.outcome("s2").session, { name: "s", ordinal: 1, incarnation: 2, started: true, replacedLost: true, isLost: false });
    assertHealthy(h);
  });

  test("kernel.exited while the session starts: the first run is a setup_error and the session is lost", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s" });
    h.advance(4);
    h.kernel.of("session:s").exited({ code: 1 });
    assert.deepEqual(h.outcome("s1"), {
      runId: "s1",
      status: "setup_error",
      exitCode: 1,
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 4,
      durationMs: 4,
      killed: false,
      message: "Python exited during start-up (exit code 1)",
      session: { name: "s", ordinal: 1, incarnation: 1, started: true, isLost: true },
    });
    assert.deepEqual(h.values("session:s"), ["starting", "lost"]);
    assert.equal(ctx(h).sessions.s?.status, "lost");
    assertHealthy(h);
  });

  test("deadline while the session starts: the run is killed through the session link, session lost", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s", timeoutMs: 1000 });
    const k = h.kernel.of("session:s");
    h.advance(1000);
    assert.equal(h.value("run:s1"), "killed");
    assert.deepEqual(k.types(), ["kernel.terminate"]);
    h.advance(killMs);
    assert.deepEqual(k.types(), ["kernel.terminate", "kernel.kill"]);
    k.exited({ signal: "SIGKILL" });
    assert.deepEqual(h.outcome("s1"), {
      runId: "s1",
      status: "timeout",
      stopReason: "timeout",
      signal: "SIGKILL",
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 1500,
      durationMs: 1500,
      killed: true,
      session: { name: "s", ordinal: 1, incarnation: 1, started: true, isLost: true },
    });
    assert.equal(ctx(h).sessions.s?.status, "lost");
    assertHealthy(h);
  });

  test("session busy: a second run is refused with a setup_error, the first goes on", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s" });
    h.advance(3);
    // Busy while starting, too.
    h.start({ runId: "s2", session: "s" });
    assert.deepEqual(h.outcome("s2"), {
      runId: "s2",
      status: "setup_error",
      displayedValue: false,
      requestedAt: 3,
      finishedAt: 3,
      durationMs: 0,
      killed: false,
      message: BUSY("s"),
      session: { name: "s", ordinal: 0, incarnation: 1, started: false, isLost: false },
    } satisfies RunOutcome);
    const k = h.kernel.of("session:s");
    k.ready();
    k.started("s1");
    h.advance(7);
    h.start({ runId: "s3", session: "s", reset: true }); // reset does not override busy
    assert.deepEqual(h.outcome("s3"), {
      runId: "s3",
      status: "setup_error",
      displayedValue: false,
      requestedAt: 10,
      finishedAt: 10,
      durationMs: 0,
      killed: false,
      message: BUSY("s"),
      session: { name: "s", ordinal: 0, incarnation: 1, started: false, isLost: false },
    });
    assert.equal(h.value("run:s1"), "running");
    assert.deepEqual(k.types(), ["kernel.run"]);
    assert.deepEqual(ctx(h).active, { s1: "s" });
    assert.equal(ctx(h).sessions.s?.busyRunId, "s1");
    assert.deepEqual(h.children(), ["session:s"]);
    k.done("s1");
    assert.equal(h.outcome("s1").status, "success");
    assert.equal(ctx(h).sessions.s?.busyRunId, undefined);
    assertHealthy(h);
  });

  test("reset stops the old session actor (its kernel is stopped) and starts incarnation + 1", () => {
    const h = startSupervisor();
    const k1 = sessionRunning(h, "s", "s1");
    k1.done("s1");
    const old = h.ref("session:s")!;
    h.advance(50);
    h.start({ runId: "s2", session: "s", reset: true, cwd: "/elsewhere" });
    assert.deepEqual(k1.types(), ["kernel.run", "stopped"]);
    assert.equal(old.getSnapshot().status, "stopped");
    const fresh = h.ref("session:s")!;
    assert.notEqual(fresh, old);
    assert.equal(h.value("session:s"), "starting");
    const k2 = h.kernel.of("session:s");
    assert.equal(k2.index, 1);
    assert.deepEqual(k2.input, { mode: "session", cwd: "/elsewhere", owner: "session:s" });
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 2, status: "alive", cwd: "/elsewhere", busyRunId: "s2" } });
    k2.ready();
    k2.started("s2");
    k2.done("s2");
    assert.deepEqual(h.outcome("s2").session, { name: "s", ordinal: 1, incarnation: 2, started: true, isLost: false });
    assert.deepEqual(h.values("session:s", 0), ["starting", "running", "idle"]);
    assert.deepEqual(h.values("session:s", 1), ["starting", "running", "idle"]);
    assert.deepEqual(h.children(), ["session:s"]);
    assertHealthy(h);
  });

  test("session.stop on an idle session: closing -> kernel.shutdown, kill after killMs, closed", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    k.done("s1");
    h.stopSession("s");
    assert.equal(h.value("session:s"), "closing");
    assert.deepEqual(k.types(), ["kernel.run", "kernel.shutdown"]);
    h.advance(killMs - 1);
    assert.deepEqual(k.types(), ["kernel.run", "kernel.shutdown"]);
    h.advance(1);
    assert.deepEqual(k.types(), ["kernel.run", "kernel.shutdown", "kernel.kill"]);
    h.stopSession("s"); // ignored while closing
    assert.deepEqual(k.types(), ["kernel.run", "kernel.shutdown", "kernel.kill"]);
    k.exited({ signal: "SIGKILL" });
    assert.deepEqual(h.values("session:s"), ["starting", "running", "idle", "closing", "closed"]);
    assert.deepEqual(k.types(), ["kernel.run", "kernel.shutdown", "kernel.kill", "stopped"]);
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 1, status: "closed", cwd: "/work" } });
    assert.deepEqual(h.children(), []);
    assert.equal(h.finished.length, 1);
    // A closed session starts anew on the next run, without replacedLost.
    h.start({ runId: "s2", session: "s" });
    const k2 = h.kernel.of("session:s");
    k2.ready();
    k2.started("s2");
    k2.done("s2");
    assert.deepEqual(h.outcome("s2").session, { name: "s", ordinal: 1, incarnation: 2, started: true, isLost: false });
    assertHealthy(h);
  });

  test("session.stop: a kernel that exits in time is not killed", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    k.done("s1");
    h.stopSession("s");
    h.advance(20);
    k.exited({ code: 0 });
    assert.deepEqual(k.types(), ["kernel.run", "kernel.shutdown", "stopped"]);
    h.advance(killMs * 2);
    assert.deepEqual(k.types(), ["kernel.run", "kernel.shutdown", "stopped"]);
    assert.equal(ctx(h).sessions.s?.status, "closed");
    assert.deepEqual(h.timers(), []);
    // Unknown sessions are ignored.
    h.stopSession("nope");
    assertHealthy(h);
  });

  test("session.stop while a run is active cancels the run first, then closes", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    h.advance(5);
    h.stopSession("s");
    assert.equal(h.value("run:s1"), "interrupted");
    assert.equal(h.value("session:s"), "interrupted");
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt"]);
    h.advance(5);
    k.done("s1", { exitCode: 130, error: "interrupt" });
    assert.deepEqual(h.outcome("s1"), {
      runId: "s1",
      status: "cancelled",
      stopReason: "cancelled",
      exitCode: 130,
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 30,
      durationMs: 30,
      killed: false,
      kernel: KERNEL_INFO,
      session: { name: "s", ordinal: 1, incarnation: 1, started: true, isLost: false },
    });
    assert.equal(h.value("session:s"), "closing");
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt", "kernel.shutdown"]);
    k.exited({ code: 0 });
    assert.deepEqual(h.values("session:s"), ["starting", "running", "interrupted", "closing", "closed"]);
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 1, status: "closed", cwd: "/work" } });
    assert.deepEqual(ctx(h).active, {});
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("session.stop while the session starts: closing at once, the waiting run is killed and cancelled", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s" });
    const k = h.kernel.of("session:s");
    h.stopSession("s");
    assert.equal(h.value("session:s"), "closing");
    assert.equal(h.value("run:s1"), "killed");
    assert.deepEqual(k.types(), ["kernel.shutdown", "kernel.terminate"]);
    h.advance(killMs);
    // Both the session's closing bound and the run's kill bound send kernel.kill.
    assert.deepEqual(k.types(), ["kernel.shutdown", "kernel.terminate", "kernel.kill", "kernel.kill"]);
    k.exited({ signal: "SIGKILL" });
    assert.deepEqual(h.outcome("s1"), {
      runId: "s1",
      status: "cancelled",
      stopReason: "cancelled",
      signal: "SIGKILL",
      displayedValue: false,
      requestedAt: 0,
      finishedAt: 500,
      durationMs: 500,
      killed: true,
      session: { name: "s", ordinal: 1, incarnation: 1, started: true, isLost: true },
    });
    assert.deepEqual(h.values("session:s"), ["starting", "closing", "closed"]);
    assert.equal(ctx(h).sessions.s?.status, "closed");
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("the session itself refuses a run while busy (behind the supervisor's own check)", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    // Bypass the supervisor's sessionBusy guard: the session refuses on its own and reports to the supervisor.
    h.ref("session:s")!.send({ type: "run.start", at: 21, runId: "x1", code: "", cwd: "/work", timeoutMs: 10, session: "s" });
    assert.deepEqual(h.outcome("x1"), {
      runId: "x1",
      status: "setup_error",
      displayedValue: false,
      requestedAt: 21,
      finishedAt: 21,
      durationMs: 0,
      killed: false,
      message: BUSY("s"),
      session: { name: "s", ordinal: 0, incarnation: 1, started: false, isLost: false },
    });
    assert.equal(h.value("session:s"), "running");
    assert.equal(h.ref("run:x1"), undefined);
    assert.deepEqual(k.types(), ["kernel.run"]);
    assertHealthy(h);
  });

  test("session.stop while the run is already interrupted keeps its stop reason", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    h.advance(980);
    assert.equal(h.value("session:s"), "interrupted");
    h.stopSession("s");
    assert.equal(h.value("session:s"), "interrupted");
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt"]); // no second interrupt
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

  test("run.start for a session that is closing is refused by the session (setup_error)", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    k.done("s1");
    h.stopSession("s");
    h.start({ runId: "s2", session: "s" });
    // The supervisor still sees the session alive and forwards; the closing session refuses. Note the message.
    assert.deepEqual(h.outcome("s2"), {
      runId: "s2",
      status: "setup_error",
      displayedValue: false,
      requestedAt: 20,
      finishedAt: 20,
      durationMs: 0,
      killed: false,
      message: 'Session "s" is closing; run again once it has stopped.',
      session: { name: "s", ordinal: 0, incarnation: 1, started: false, isLost: false },
    });
    assert.deepEqual(ctx(h).active, {});
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 1, status: "alive", cwd: "/work" } });
    assert.deepEqual(k.types(), ["kernel.run", "kernel.shutdown"]);
    assertHealthy(h);
  });
});

describe("session machine standalone (no supervisor, no first run)", () => {
  function startSession() {
    const clock = new SimulatedClock();
    const kernel = createFakeKernel({ now: () => clock.now() });
    const session = createActor(sessionMachine.provide({ actors: { kernel: kernel.logic } }), {
      id: "session:s",
      systemId: "session:s",
      input: { name: "s", incarnation: 3, cwd: "/work", limits: TEST_LIMITS },
      clock,
    });
    const errors: unknown[] = [];
    session.subscribe({ error: (e) => errors.push(e) });
    session.start();
    return { session, clock, kernel: kernel.of("session:s"), errors };
  }

  test("starting -> kernel.ready -> idle, then kernel.exited -> lost with its output", () => {
    const { session, kernel, errors } = startSession();
    assert.equal(session.getSnapshot().value, "starting");
    kernel.ready();
    assert.equal(session.getSnapshot().value, "idle");
    assert.deepEqual(session.getSnapshot().context.kernel, KERNEL_INFO);
    kernel.exited({ code: 1 });
    assert.equal(session.getSnapshot().value, "lost");
    assert.equal(session.getSnapshot().status, "done");
    assert.deepEqual(session.getSnapshot().output, { name: "s", incarnation: 3, end: "lost" });
    assert.deepEqual(kernel.types(), ["stopped"]);
    assert.deepEqual(errors, []);
  });

  test("session.close while starting -> closing; kernel.failed while closing -> closed", () => {
    const { session, clock, kernel, errors } = startSession();
    session.send({ type: "session.close", at: 0 });
    assert.equal(session.getSnapshot().value, "closing");
    assert.deepEqual(kernel.types(), ["kernel.shutdown"]);
    clock.increment(killMs);
    assert.deepEqual(kernel.types(), ["kernel.shutdown", "kernel.kill"]);
    kernel.failed("kill: ESRCH");
    assert.equal(session.getSnapshot().value, "closed");
    assert.deepEqual(session.getSnapshot().output, { name: "s", incarnation: 3, end: "closed" });
    assert.deepEqual(kernel.types(), ["kernel.shutdown", "kernel.kill", "stopped"]);
    assert.deepEqual(errors, []);
  });

  test("kernel.failed while idle -> lost", () => {
    const { session, kernel, errors } = startSession();
    kernel.ready();
    kernel.failed("protocol error");
    assert.equal(session.getSnapshot().value, "lost");
    assert.deepEqual(errors, []);
  });
});

describe("supervisor", () => {
  test("supervisor.shutdown: cancels fresh runs, closes sessions, refuses new runs", () => {
    const h = startSupervisor();
    const kf = freshRunning(h, "r1");
    const ks = sessionRunning(h, "s", "s1");
    ks.done("s1");
    const kt = sessionRunning(h, "t", "t1");
    assert.equal(h.actor.getSnapshot().value, "serving");

    h.shutdown();
    assert.equal(h.actor.getSnapshot().value, "stopping");
    assert.deepEqual(kf.types(), ["kernel.run", "kernel.interrupt"]);
    assert.deepEqual(ks.types(), ["kernel.run", "kernel.shutdown"]);
    assert.deepEqual(kt.types(), ["kernel.run", "kernel.interrupt"]);
    assert.equal(h.value("session:s"), "closing");
    assert.equal(h.value("session:t"), "interrupted");

    const at = h.now();
    h.start({ runId: "r9" });
    h.start({ runId: "s9", session: "s" });
    assert.deepEqual(h.outcome("r9"), {
      runId: "r9",
      status: "setup_error",
      displayedValue: false,
      requestedAt: at,
      finishedAt: at,
      durationMs: 0,
      killed: false,
      message: SHUTDOWN,
    });
    assert.deepEqual(h.outcome("s9"), {
      runId: "s9",
      status: "setup_error",
      displayedValue: false,
      requestedAt: at,
      finishedAt: at,
      durationMs: 0,
      killed: false,
      message: SHUTDOWN,
      session: { name: "s", ordinal: 0, incarnation: 0, started: false, isLost: false },
    });
    assert.deepEqual(Object.keys(ctx(h).active).sort(), ["r1", "t1"]);

    kf.done("r1", { exitCode: 130, error: "interrupt" });
    kt.done("t1", { exitCode: 130, error: "interrupt" });
    assert.equal(h.outcome("r1").status, "cancelled");
    assert.equal(h.outcome("t1").status, "cancelled");
    assert.equal(h.value("session:t"), "closing");
    assert.deepEqual(kt.types(), ["kernel.run", "kernel.interrupt", "kernel.shutdown"]);
    ks.exited({ code: 0 });
    kt.exited({ code: 0 });
    assert.deepEqual(h.children(), []);
    assert.deepEqual(ctx(h).active, {});
    assert.deepEqual(ctx(h).sessions, {
      s: { incarnation: 1, status: "closed", cwd: "/work" },
      t: { incarnation: 1, status: "closed", cwd: "/work" },
    });
    assert.equal(h.actor.getSnapshot().value, "stopping");
    assertHealthy(h);
  });

  test("supervisor.shutdown kills a fresh run that has no kernel yet", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    h.shutdown();
    assert.equal(h.value("run:r1"), "killed");
    h.kernel.of("run:r1").exited({ signal: "SIGTERM" });
    assert.equal(h.outcome("r1").status, "cancelled");
    assert.equal(h.outcome("r1").killed, true);
    assertHealthy(h);
  });

  test("a duplicate run id is refused while the first is active, accepted after it finished", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.start({ runId: "r1", code: "other" });
    assert.deepEqual(h.finished, [
      {
        runId: "r1",
        status: "setup_error",
        displayedValue: false,
        requestedAt: 20,
        finishedAt: 20,
        durationMs: 0,
        killed: false,
        message: "Run id r1 is already in use.",
      },
    ]);
    // Also when the duplicate asks for a session: nothing is started.
    h.start({ runId: "r1", session: "s" });
    assert.equal(h.finished.length, 2);
    assert.equal(h.finished[1]?.message, "Run id r1 is already in use.");
    assert.deepEqual(h.finished[1]?.session, { name: "s", ordinal: 0, incarnation: 0, started: false, isLost: false });
    assert.deepEqual(h.children(), ["run:r1"]);
    assert.equal(h.kernel.instances.length, 1);
    assert.equal(h.value("run:r1"), "running");
    k.done("r1");
    assert.equal(h.finished[2]?.status, "success");
    h.start({ runId: "r1" });
    assert.equal(h.kernel.instances.length, 2);
    assert.equal(h.value("run:r1"), "starting");
    assertHealthy(h);
  });

  test("done children are pruned: many runs leave no children behind and nothing errors", () => {
    const h = startSupervisor();
    for (let i = 0; i < 25; i++) {
      const k = freshRunning(h, `f${i}`);
      if (i % 3 === 0) k.done(`f${i}`, { exitCode: 1 });
      else if (i % 3 === 1) {
        h.cancel(`f${i}`);
        k.done(`f${i}`, { exitCode: 130 });
      } else k.exited({ code: 2 });
    }
    assert.deepEqual(h.children(), []);
    sessionRunning(h, "s", "s0").done("s0");
    for (let i = 1; i < 15; i++) nextSessionRun(h, "s", `s${i}`).done(`s${i}`);
    assert.deepEqual(h.children(), ["session:s"]);
    assert.deepEqual(Object.keys(h.ref("session:s")!.getSnapshot().children), ["kernel"]);
    assert.equal(h.finished.length, 40);
    assert.deepEqual(ctx(h).active, {});
    h.stopSession("s");
    h.kernel.of("session:s").exited({ code: 0 });
    assert.deepEqual(h.children(), []);
    assert.equal(
      h.kernel.instances.every((k) => k.stopped),
      true,
    );
    assert.deepEqual(h.timers(), []);
    assertHealthy(h);
  });
});

// Regressions: each of these was a machine bug found by this suite.
describe("fixed machine bugs", () => {
  test("kernel.failed while a session run is running still finishes the run, and the session is lost", () => {
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

  test("kernel.failed while a session starts: setup_error, the session closes without claiming lost state", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s" });
    h.kernel.of("session:s").failed("cannot start python");
    assert.equal(ctx(h).sessions.s?.status, "closed");
    assert.equal(h.outcome("s1").status, "setup_error");
    assert.equal(h.outcome("s1").session?.isLost, false);
    h.start({ runId: "s2", session: "s" });
    h.kernel.of("session:s").ready();
    h.kernel.of("session:s").started("s2");
    h.kernel.of("session:s").done("s2");
    assert.equal(h.outcome("s2").session?.replacedLost, undefined);
    assert.equal(h.outcome("s2").session?.incarnation, 2);
    assert.equal(h.outcome("s2").session?.ordinal, 1);
  });

  test("the session mirrors `killed` when its first run is killed before the kernel is ready", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s" });
    h.cancel("s1");
    assert.equal(h.value("run:s1"), "killed");
    assert.equal(h.value("session:s"), "killed");
  });

  test("a reset run does not claim that the previous session was lost", () => {
    const h = startSupervisor();
    sessionRunning(h, "s", "s1").done("s1");
    h.start({ runId: "s2", session: "s", reset: true });
    const k2 = h.kernel.of("session:s");
    k2.ready();
    k2.started("s2");
    k2.done("s2");
    assert.equal(h.outcome("s2").session?.replacedLost, undefined);
    assert.equal(h.outcome("s2").session?.started, true);
    assert.equal(h.outcome("s2").session?.incarnation, 2);
    assert.equal(h.outcome("s2").session?.ordinal, 1);
  });
});

describe("pi-python's escalation (limits.secondInterrupt)", () => {
  test("interrupted -> grace sends a second SIGINT; the kill comes at the end of the grace", () => {
    const h = startSupervisor({ limits: { ...TEST_LIMITS, secondInterrupt: true } });
    const k = freshRunning(h, "r1");
    h.advance(980); // t = 1000: the first interrupt
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt"]);
    h.advance(interruptWindowMs);
    assert.equal(h.value("run:r1"), "grace");
    assert.deepEqual(k.types(), ["kernel.run", "kernel.interrupt", "kernel.interrupt"]);
    h.advance(graceMs);
    assert.equal(h.value("run:r1"), "killed");
    assertHealthy(h);
  });
});
