// The shell-session machine (machines/exec-session.ts), one `describe` per state, under the real supervisor with a
// scripted shell (test/helpers/fake-shell.ts) and a simulated clock: start, run, exit, and stops with escalation.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { startExec } from "../helpers/fake-shell.ts";
import { DEFAULT_EXEC_LIMITS, execSessionMachine } from "../../machines/exec-session.ts";
import { missingEffectError, undescribedStates } from "../helpers/machine-states.ts";

describe("starting", () => {
  test("a failed start ends `failed` with the message", () => {
    const h = startExec();
    h.start(1);
    h.shells.get(1)!.send({ type: "shell.spawn_failed", at: 1, message: "ENOENT" });
    assert.equal(h.records()["1"].status, "failed");
    assert.equal(h.records()["1"].failure, "ENOENT");
  });

  test("a stop asked for while starting happens once the process exists", () => {
    const h = startExec();
    h.start(1);
    h.send({ type: "supervisor.shutdown", at: 0 });
    assert.equal(h.sessionState(1), "starting");
    h.spawned(1);
    assert.deepEqual(h.shells.get(1)!.signals, ["SIGTERM"]);
    h.advance(1000);
    assert.deepEqual(h.shells.get(1)!.signals, ["SIGTERM", "SIGKILL"]);
  });
});

describe("running", () => {
  test("starting, running, exited; the exit stays registered until observed", () => {
    const h = startExec();
    h.start(1);
    assert.equal(h.sessionState(1), "starting");
    assert.equal(h.records()["1"].status, "starting");
    h.spawned(1, 777);
    assert.deepEqual(h.sessionState(1), { running: "attached" });
    assert.equal(h.records()["1"].pid, 777);
    assert.ok(h.emitted.some((e) => e.type === "exec.started" && e.id === 1 && e.pid === 777));
    h.shells.get(1)!.send({ type: "shell.process_exited", at: 5, code: 0, signal: null });
    assert.deepEqual(h.sessionState(1), { running: "held" });
    assert.equal(h.records()["1"].status, "held");
    h.closed(1, 3);
    assert.equal(h.sessionState(1), undefined, "the finished actor is removed");
    assert.equal(
      h.actor.system.get("exec:pool")!.getSnapshot().children["exec:1"],
      undefined,
      "and stopped by its pool",
    );
    assert.equal(h.records()["1"].status, "exited");
    assert.equal(h.records()["1"].exit?.code, 3);
    assert.ok(h.emitted.some((e) => e.type === "exec.ended" && e.id === 1 && e.end === "exited" && e.code === 3));
    h.send({ type: "exec.forget", at: 10, id: 1 });
    assert.equal(h.records()["1"], undefined);
    assert.deepEqual(h.errors, []);
  });
});

describe("stopping", () => {
  test("kill: the signal, SIGKILL after 2 s, then killed; the record leaves", () => {
    const h = startExec();
    h.running(1);
    h.send({ type: "exec.kill", at: h.clock.now(), id: 1, signal: "SIGINT" });
    assert.deepEqual(h.shells.get(1)!.signals, ["SIGINT"]);
    assert.deepEqual(h.sessionState(1), { stopping: "signalled" });
    h.advance(1999);
    assert.deepEqual(h.shells.get(1)!.signals, ["SIGINT"]);
    h.advance(1);
    assert.deepEqual(h.shells.get(1)!.signals, ["SIGINT", "SIGKILL"]);
    h.closed(1, null, "SIGKILL");
    assert.equal(h.records()["1"], undefined);
    assert.ok(h.emitted.some((e) => e.type === "exec.ended" && e.end === "killed" && e.signal === "SIGKILL"));
  });

  test("kill with SIGKILL sends it once", () => {
    const h = startExec();
    h.running(1);
    h.send({ type: "exec.kill", at: 0, id: 1, signal: "SIGKILL" });
    assert.deepEqual(h.shells.get(1)!.signals, ["SIGKILL"]);
    h.closed(1, null, "SIGKILL");
    assert.equal(h.records()["1"], undefined);
  });

  test("a kill that does not land: running again, told, the wake restored", () => {
    const h = startExec();
    h.running(1, "wake");
    h.send({ type: "exec.kill", at: 0, id: 1, signal: "SIGTERM" });
    assert.deepEqual(h.wakeState(1)?.value, { running: "suppressed" });
    h.advance(2000);
    h.advance(1000);
    assert.deepEqual(h.sessionState(1), { running: "attached" });
    assert.equal(h.records()["1"].status, "running");
    assert.ok(h.emitted.some((e) => e.type === "exec.stop_failed" && e.id === 1));
    assert.deepEqual(h.wakeState(1), { value: { running: "watching" }, armed: true });
    // The wake still comes when it exits on its own later.
    h.closed(1, 0);
    h.advance(250);
    assert.equal(h.wakes().length, 1);
  });

  test("a signal that cannot be sent fails the kill at once", () => {
    const h = startExec();
    h.running(1);
    h.send({ type: "exec.kill", at: 0, id: 1, signal: "SIGTERM" });
    h.shells.get(1)!.send({ type: "shell.signal_failed", at: 1, signal: "SIGTERM", message: "EPERM" });
    assert.deepEqual(h.sessionState(1), { running: "attached" });
    assert.ok(h.emitted.some((e) => e.type === "exec.stop_failed" && /EPERM/.test(e.message)));
  });
});

// What each stop reports, and when an unanswered SIGKILL is declared failed (the `at` the session tells its pool).
describe("stopping: what the end and a failed stop report", () => {
  const stopFailures = () => {
    const seen: { at: number; reason: string; escalated: boolean }[] = [];
    const h = startExec({}, (ev) => {
      const e = (ev as { event?: { type?: string } }).event as
        { type: string; at: number; reason: string; escalated: boolean } | undefined;
      if (ev.type === "@xstate.event" && e?.type === "shell.stop_failed") seen.push(e);
    });
    return { h, seen };
  };

  test("the shell input names its owner for the process-group registry", () => {
    const h = startExec();
    h.start(7);
    assert.equal(h.shells.get(7)!.input.owner, "exec:7");
  });

  test("a kill that ends within the grace: reason kill, not escalated", () => {
    const h = startExec();
    h.running(1);
    h.advance(10);
    h.send({ type: "exec.kill", at: h.clock.now(), id: 1, signal: "SIGTERM" });
    assert.deepEqual([h.records()["1"].status, h.records()["1"].stop], ["stopping", "kill"]);
    h.closed(1, null, "SIGTERM");
    const ended = h.emitted.find((e) => e.type === "exec.ended" && e.id === 1);
    assert.deepEqual(ended, {
      type: "exec.ended",
      id: 1,
      end: "killed",
      at: 10,
      code: null,
      signal: "SIGTERM",
      reason: "kill",
    });
  });

  test("a kill that needed SIGKILL says escalated", () => {
    const h = startExec();
    h.running(1);
    h.send({ type: "exec.kill", at: 0, id: 1, signal: "SIGTERM" });
    h.advance(2000);
    h.closed(1, null, "SIGKILL");
    const ended = h.emitted.find((e) => e.type === "exec.ended" && e.id === 1) as {
      reason?: string;
      escalated?: boolean;
    };
    assert.deepEqual([ended.reason, ended.escalated], ["kill", true]);
  });

  test("shutdown: reason shutdown after the stop grace (1 s), escalated", () => {
    const h = startExec();
    h.running(1);
    h.running(2);
    h.closed(2, 0);
    h.send({ type: "exec.shutdown", at: 0 });
    assert.deepEqual([h.records()["1"].status, h.records()["1"].stop], ["stopping", "shutdown"]);
    assert.equal(h.records()["2"].status, "exited", "an exited session is not stopped again");
    assert.deepEqual(h.shells.get(2)!.signals, []);
    h.advance(999);
    assert.deepEqual(h.shells.get(1)!.signals, ["SIGTERM"]);
    h.advance(1);
    assert.deepEqual(h.shells.get(1)!.signals, ["SIGTERM", "SIGKILL"]);
    h.closed(1, null, "SIGKILL");
    const ended = h.emitted.find((e) => e.type === "exec.ended" && e.id === 1) as {
      reason?: string;
      escalated?: boolean;
    };
    assert.deepEqual([ended.reason, ended.escalated], ["shutdown", true]);
  });

  test("an eviction reports reason evict", () => {
    const h = startExec({ maxSessions: 2, protectedCount: 1 });
    h.running(1);
    h.running(2);
    h.start(3);
    h.closed(1, null, "SIGTERM");
    const ended = h.emitted.find((e) => e.type === "exec.ended" && e.id === 1) as {
      reason?: string;
      escalated?: boolean;
    };
    assert.deepEqual([ended.reason, ended.escalated], ["evict", undefined]);
  });

  test("a failed SIGTERM kill: stop_failed at kill + grace + confirm, escalated; a later kill starts clean", () => {
    const { h, seen } = stopFailures();
    h.running(1);
    h.advance(5);
    h.send({ type: "exec.kill", at: h.clock.now(), id: 1, signal: "SIGTERM" });
    h.advance(2000);
    h.advance(1000);
    assert.deepEqual(
      seen.map((e) => [e.at, e.reason, e.escalated]),
      [[3005, "kill", true]],
    );
    const failed = h.emitted.find((e) => e.type === "exec.stop_failed") as { reason: string; escalated: boolean };
    assert.deepEqual([failed.reason, failed.escalated], ["kill", true]);
    assert.equal(h.records()["1"].stop, undefined);
    // The failed stop is forgotten: a second kill that lands in the grace is not reported escalated.
    h.send({ type: "exec.kill", at: h.clock.now(), id: 1, signal: "SIGTERM" });
    h.closed(1, null, "SIGTERM");
    const ended = h.emitted.find((e) => e.type === "exec.ended" && e.id === 1) as {
      reason?: string;
      escalated?: boolean;
    };
    assert.deepEqual([ended.reason, ended.escalated], ["kill", undefined]);
  });

  test("a failed SIGKILL kill: no grace, declared failed after the confirmation window only", () => {
    const { h, seen } = stopFailures();
    h.running(1);
    h.send({ type: "exec.kill", at: 0, id: 1, signal: "SIGKILL" });
    h.advance(999);
    assert.equal(seen.length, 0);
    h.advance(1);
    assert.deepEqual(
      seen.map((e) => [e.at, e.escalated]),
      [[1000, true]],
    );
    assert.deepEqual(h.shells.get(1)!.signals, ["SIGKILL"], "SIGKILL is sent once");
  });

  test("a failed shutdown stop: reason shutdown, at stop + stop grace + confirm", () => {
    const { h, seen } = stopFailures();
    h.running(1);
    h.send({ type: "exec.shutdown", at: 0 });
    h.advance(1000);
    h.advance(1000);
    assert.deepEqual(
      seen.map((e) => [e.at, e.reason, e.escalated]),
      [[2000, "shutdown", true]],
    );
  });

  test("a signal that cannot be sent before escalation: not escalated, reason kept", () => {
    const { h, seen } = stopFailures();
    h.running(1);
    h.send({ type: "exec.shutdown", at: 0 });
    h.shells.get(1)!.send({ type: "shell.signal_failed", at: 3, signal: "SIGTERM", message: "EPERM" });
    assert.deepEqual(
      seen.map((e) => [e.at, e.reason, e.escalated]),
      [[3, "shutdown", false]],
    );
  });

  test("the shell exiting during a stop that fails: back to running, held (the exit is kept)", () => {
    const h = startExec();
    h.running(1);
    h.send({ type: "exec.kill", at: 0, id: 1, signal: "SIGTERM" });
    h.shells.get(1)!.send({ type: "shell.process_exited", at: 50, code: 0, signal: null });
    h.advance(2000);
    h.advance(1000);
    assert.deepEqual(h.sessionState(1), { running: "held" });
  });
});

describe("failed", () => {
  test("a failed start's exit is at the failure's time, with the message on the ended event", () => {
    const h = startExec();
    h.start(1);
    h.shells.get(1)!.send({ type: "shell.spawn_failed", at: 7, message: "ENOENT" });
    assert.equal(h.records()["1"].exit?.at, 7);
    const ended = h.emitted.find((e) => e.type === "exec.ended" && e.id === 1) as { at: number; failure?: string };
    assert.deepEqual([ended.at, ended.failure], [7, "ENOENT"]);
  });
});

describe("the definition", () => {
  test("every state is described, under the machine's id", () => {
    assert.equal(execSessionMachine.id, "exec-session");
    assert.deepEqual(undescribedStates(execSessionMachine), []);
  });

  test("without its shell provided, a session fails at once and names the missing actor", () => {
    const input = {
      id: 1,
      command: "x",
      shell: "/bin/sh",
      cwd: "/",
      tty: false,
      startedAt: 0,
      limits: DEFAULT_EXEC_LIMITS,
    };
    assert.equal(
      missingEffectError(execSessionMachine, input),
      "exec-session: the `shell` actor must be provided (machines/system.ts)",
    );
  });
});
