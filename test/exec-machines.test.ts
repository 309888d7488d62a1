// The shell-session machines under the real supervisor, with a scripted shell and a simulated clock: session
// lifecycle and stops, the registry's LRU eviction, shutdown, and the wake coordinator's exactly-once delivery.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { lruVictim, type ExecRecord } from "../machines/exec-pool.ts";
import { startExec } from "./helpers/fake-shell.ts";

describe("a shell session", () => {
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

  test("a failed start ends `failed` with the message", () => {
    const h = startExec();
    h.start(1);
    h.shells.get(1)!.send({ type: "shell.spawn_failed", at: 1, message: "ENOENT" });
    assert.equal(h.records()["1"].status, "failed");
    assert.equal(h.records()["1"].failure, "ENOENT");
  });

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

describe("shutdown", () => {
  test("every live group gets SIGTERM, then SIGKILL after 1 s; no start afterwards; no wake", () => {
    const h = startExec();
    h.running(1, "wake");
    h.running(2);
    h.send({ type: "supervisor.shutdown", at: 0 });
    assert.deepEqual(h.shells.get(1)!.signals, ["SIGTERM"]);
    assert.deepEqual(h.shells.get(2)!.signals, ["SIGTERM"]);
    h.closed(2, null, "SIGTERM");
    h.advance(1000);
    assert.deepEqual(h.shells.get(1)!.signals, ["SIGTERM", "SIGKILL"]);
    h.closed(1, null, "SIGKILL");
    h.advance(1000);
    assert.equal(h.wakes().length, 0);
    h.start(3);
    assert.ok(h.emitted.some((e) => e.type === "exec.refused" && e.id === 3));
    assert.equal(h.shells.get(3), undefined);
  });
});

describe("LRU eviction", () => {
  const rec = (id: number, status: ExecRecord["status"] = "running"): ExecRecord => ({
    id,
    status,
    command: "",
    shell: "",
    cwd: "",
    tty: false,
    startedAt: 0,
  });
  const of = (...rs: ExecRecord[]) => Object.fromEntries(rs.map((r) => [r.id, r]));
  test("exited first, then the least recently used live one; the most recent are protected", () => {
    assert.equal(lruVictim(of(rec(1), rec(2), rec(3, "exited"), rec(4)), [1, 2, 3, 4], 1)?.id, 3);
    assert.equal(lruVictim(of(rec(1), rec(2), rec(3), rec(4)), [1, 2, 3, 4], 1)?.id, 1);
    assert.equal(lruVictim(of(rec(1), rec(2), rec(3), rec(4)), [2, 3, 4, 1], 1)?.id, 2, "use order, not ids");
    assert.equal(lruVictim(of(rec(1), rec(2, "exited"), rec(3)), [1, 2, 3], 2)?.id, 1, "the exited one is protected");
    assert.equal(lruVictim(of(rec(1, "stopping"), rec(2), rec(3)), [1, 2, 3], 1)?.id, 2);
    assert.equal(lruVictim(of(rec(1), rec(2)), [1, 2], 2), undefined);
  });

  test("at the cap the pool evicts: the live victim is stopped and its wake suppressed", () => {
    const h = startExec({ maxSessions: 4, protectedCount: 2 });
    for (const id of [1, 2, 3, 4]) h.running(id, "wake");
    // Use 1 again: 2 is now the least recently used.
    h.send({ type: "exec.observe", at: 0, id: 1, callId: "p" });
    h.send({ type: "exec.release", at: 0, id: 1, callId: "p" });
    h.start(5);
    assert.ok(h.emitted.some((e) => e.type === "exec.evicting" && e.id === 2 && e.running));
    assert.deepEqual(h.shells.get(2)!.signals, ["SIGTERM"]);
    h.closed(2, null, "SIGTERM");
    assert.equal(h.records()["2"], undefined);
    assert.ok(h.emitted.some((e) => e.type === "exec.ended" && e.id === 2 && e.end === "evicted"));
    h.advance(1000);
    assert.equal(h.wakes().length, 0, "an evicted live session never wakes");
  });

  test("an exited session goes first and keeps a tombstone: its one wake still arrives", () => {
    const h = startExec({ maxSessions: 3, protectedCount: 1 });
    for (const id of [1, 2, 3]) h.running(id, id === 2 ? "wake" : "none");
    h.closed(2, 0);
    h.start(4);
    assert.ok(h.emitted.some((e) => e.type === "exec.evicting" && e.id === 2 && !e.running));
    assert.equal(h.records()["2"], undefined);
    assert.deepEqual(h.shells.get(1)!.signals, [], "live sessions are left alone");
    h.advance(250);
    const [w] = h.wakes();
    assert.deepEqual(
      w.notices.map((n) => [n.id, n.code, n.logPath]),
      [[2, 0, "/logs/2.log"]],
    );
  });

  test("a tombstone can be disarmed by id", () => {
    const h = startExec({ maxSessions: 2, protectedCount: 1, debounceMs: 1000 });
    h.running(1, "wake");
    h.running(2);
    h.closed(1, 0);
    h.start(3);
    assert.equal(h.records()["1"], undefined);
    const a = h.setOnExit(1, "none");
    assert.equal(a.found, true);
    assert.equal(a.status, "disarmed");
    h.advance(2000);
    assert.equal(h.wakes().length, 0);
  });
});

describe("wake exactly once", () => {
  test("an unobserved exit: one prompt with bounded metadata after the debounce", () => {
    const h = startExec();
    h.running(1, "wake");
    assert.deepEqual(h.wakeState(1), { value: { running: "watching" }, armed: true });
    h.advance(100);
    h.closed(1, 2);
    assert.equal(h.wakeState(1)?.value, "due");
    assert.equal(h.coordinator(), "collecting");
    h.advance(249);
    assert.equal(h.wakes().length, 0);
    h.advance(1);
    const [w] = h.wakes();
    assert.deepEqual(w.notices, [
      { id: 1, command: "cmd 1", cwd: "/w", startedAt: 0, logPath: "/logs/1.log", exitedAt: 100, code: 2, signal: null },
    ]);
    h.send({ type: "exec.wake_delivered", at: 0, batch: w.batch });
    assert.equal(h.wakeState(1), undefined, "the entry is done");
    assert.equal(h.coordinator(), "idle");
  });

  test("an exit observed by a call that returns it and is finalized: no prompt", () => {
    const h = startExec();
    h.running(1, "wake");
    h.send({ type: "exec.observe", at: 0, id: 1, callId: "w1" });
    h.closed(1, 0);
    assert.equal(h.wakeState(1)?.value, "held");
    h.send({ type: "exec.forget", at: 0, id: 1, callId: "w1" });
    h.send({ type: "exec.finalize", at: 0, callId: "w1", ok: true });
    h.advance(5000);
    assert.equal(h.wakes().length, 0);
    assert.equal(h.wakeState(1), undefined);
  });

  test("the same exit in a result finalized as an error: the wake stays and is delivered", () => {
    const h = startExec();
    h.running(1, "wake");
    h.send({ type: "exec.observe", at: 0, id: 1, callId: "w1" });
    h.closed(1, 0);
    h.send({ type: "exec.forget", at: 0, id: 1, callId: "w1" });
    h.send({ type: "exec.finalize", at: 0, callId: "w1", ok: false });
    h.advance(250);
    assert.equal(h.wakes().length, 1);
  });

  test("a poll whose deadline passed: the later exit wakes once", () => {
    const h = startExec();
    h.running(1, "wake");
    h.send({ type: "exec.observe", at: 0, id: 1, callId: "w1" });
    h.send({ type: "exec.release", at: 0, id: 1, callId: "w1" });
    h.send({ type: "exec.finalize", at: 0, callId: "w1", ok: true });
    h.closed(1, 0);
    h.advance(250);
    assert.equal(h.wakes().length, 1);
    h.send({ type: "exec.wake_delivered", at: 0, batch: h.wakes()[0].batch });
    // Draining the exited session afterwards brings no second wake.
    h.send({ type: "exec.observe", at: 0, id: 1, callId: "w2" });
    h.send({ type: "exec.forget", at: 0, id: 1, callId: "w2" });
    h.send({ type: "exec.finalize", at: 0, callId: "w2", ok: true });
    h.advance(1000);
    assert.equal(h.wakes().length, 1);
  });

  test("none after kill_session, none after set_on_exit none", () => {
    const h = startExec();
    h.running(1, "wake");
    h.running(2, "wake");
    h.send({ type: "exec.kill", at: 0, id: 1, signal: "SIGTERM" });
    h.closed(1, null, "SIGTERM");
    assert.equal(h.setOnExit(2, "none").status, "disarmed");
    h.closed(2, 0);
    h.advance(5000);
    assert.equal(h.wakes().length, 0);
  });

  test("three simultaneous exits: one batched prompt", () => {
    const h = startExec();
    for (const id of [1, 2, 3]) h.running(id, "wake");
    h.closed(2, 0);
    h.advance(50);
    h.closed(1, 1);
    h.closed(3, null, "SIGSEGV");
    h.advance(250);
    const wakes = h.wakes();
    assert.equal(wakes.length, 1);
    assert.deepEqual(
      wakes[0].notices.map((n) => n.id),
      [1, 2, 3],
    );
  });

  test("a failed delivery is retried at agent_settled, once", () => {
    const h = startExec();
    h.running(1, "wake");
    h.closed(1, 0);
    h.advance(250);
    h.send({ type: "exec.wake_failed", at: 0, batch: h.wakes()[0].batch, message: "not ready" });
    assert.equal(h.coordinator(), "retrying");
    assert.equal(h.wakeState(1)?.value, "due");
    h.advance(10_000);
    assert.equal(h.wakes().length, 1, "no retry before the agent settles");
    h.send({ type: "exec.agent_settled", at: 0 });
    assert.equal(h.wakes().length, 2);
    h.send({ type: "exec.wake_delivered", at: 0, batch: h.wakes()[1].batch });
    h.send({ type: "exec.agent_settled", at: 0 });
    assert.equal(h.wakes().length, 2);
    assert.equal(h.coordinator(), "idle");
  });

  test("exits during a delivery make the next prompt", () => {
    const h = startExec();
    h.running(1, "wake");
    h.running(2, "wake");
    h.closed(1, 0);
    h.advance(250);
    h.closed(2, 0);
    h.send({ type: "exec.wake_delivered", at: 0, batch: h.wakes()[0].batch });
    assert.equal(h.coordinator(), "collecting");
    h.advance(250);
    assert.deepEqual(
      h.wakes().map((w) => w.notices.map((n) => n.id)),
      [[1], [2]],
    );
  });

  test("list_sessions reporting an exit first observes it", () => {
    const h = startExec({ debounceMs: 1000 });
    h.running(1, "wake");
    h.closed(1, 0);
    h.send({ type: "exec.listed", at: 0, ids: [1], callId: "l1" });
    assert.equal(h.records()["1"], undefined);
    h.send({ type: "exec.finalize", at: 0, callId: "l1", ok: true });
    h.advance(5000);
    assert.equal(h.wakes().length, 0);
  });

  test("exec_command's own window observes: an exit inside it is never a wake", () => {
    const h = startExec();
    h.start(1, "c1");
    h.spawned(1);
    h.closed(1, 0);
    h.send({ type: "exec.forget", at: 0, id: 1, callId: "c1" });
    h.send({ type: "exec.finalize", at: 0, callId: "c1", ok: true });
    h.advance(1000);
    assert.equal(h.wakes().length, 0);
    assert.equal(h.wakeState(1), undefined);
  });
});

describe("set_on_exit answers", () => {
  test("armed, already_armed, disarmed, already_none, too_late, not found", () => {
    const h = startExec();
    h.running(1);
    assert.deepEqual(
      [h.setOnExit(1, "wake"), h.setOnExit(1, "wake"), h.setOnExit(1, "none"), h.setOnExit(1, "none")].map((a) => a.status),
      ["armed", "already_armed", "disarmed", "already_none"],
    );
    h.closed(1, 0);
    const late = h.setOnExit(1, "wake");
    assert.equal(late.found, true);
    assert.equal(late.status, "too_late");
    const unknown = h.setOnExit(99, "none");
    assert.equal(unknown.found, false);
    assert.equal(unknown.status, undefined);
    // A wake already handed to Pi cannot be recalled.
    h.running(2, "wake");
    h.closed(2, 0);
    h.advance(250);
    assert.equal(h.setOnExit(2, "none").status, "too_late");
  });
});
