// The shell-session machine (machines/exec-session.ts), one `describe` per state, under the real supervisor with a
// scripted shell (test/helpers/fake-shell.ts) and a simulated clock: start, run, exit, and stops with escalation.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { startExec } from "../helpers/fake-shell.ts";

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
