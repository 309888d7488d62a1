// The shell-session registry (machines/exec-pool.ts), one `describe` per state, under the real supervisor with a
// scripted shell and a simulated clock: LRU eviction at the cap while serving, and Pi's shutdown.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { EXEC_POOL_ID, lruVictim, type ExecRecord } from "../../machines/exec-pool.ts";
import { without } from "../../machines/exec-pool-context.ts";
import { startExec } from "../helpers/fake-shell.ts";
import { execPoolMachine } from "../../machines/exec-pool.ts";
import { undescribedStates } from "../helpers/machine-states.ts";

describe("serving: LRU eviction", () => {
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
    assert.equal(lruVictim(of(rec(1), rec(2, "failed"), rec(3)), [1, 2, 3], 1)?.id, 2, "failed goes first like exited");
    assert.equal(lruVictim(of(rec(1, "starting"), rec(2), rec(3)), [1, 2, 3], 1)?.id, 2, "never one still starting");
    assert.equal(lruVictim(of(rec(1), rec(2)), [9, 1, 2], 1)?.id, 1, "ids no longer in the registry are skipped");
  });

  test("the use order keeps only sessions in the registry", () => {
    assert.deepEqual(without([1, 2, 3], [2]), [1, 3]);
    const lru = [3, 1];
    assert.equal(without(lru, [2]), lru, "unchanged: the same order");
    const h = startExec();
    h.running(1);
    h.send({ type: "exec.observe", at: 0, id: 99, callId: "p" });
    const context = () => h.actor.system.get(EXEC_POOL_ID)!.getSnapshot().context as { lru: number[] };
    assert.deepEqual(context().lru, [1], "observing an unknown id does not enter it");
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
    const victim = h.records()["2"]!;
    assert.deepEqual(
      [victim.id, victim.status, victim.stop],
      [2, "stopping", "evict"],
      "stopping until its process is gone",
    );
    assert.deepEqual(Object.keys(h.records()).sort(), ["1", "2", "3", "4", "5"]);
    h.closed(2, null, "SIGTERM");
    assert.equal(h.records()["2"], undefined);
    assert.ok(h.emitted.some((e) => e.type === "exec.ended" && e.id === 2 && e.end === "evicted"));
    h.advance(1000);
    assert.equal(h.wakes().length, 0, "an evicted live session never wakes");
  });

  test("sessions still starting count: 100 sibling starts never leave more than the cap registered", () => {
    const h = startExec({ maxSessions: 64, protectedCount: 8 });
    for (let id = 1; id <= 100; id++) h.start(id);
    const refused = h.emitted.filter((e) => e.type === "exec.refused").map((e) => e.id);
    assert.equal(Object.keys(h.records()).length, 64, "every one still starting counts");
    assert.deepEqual(
      refused,
      Array.from({ length: 36 }, (_, i) => 65 + i),
      "the rest are refused, none evicted",
    );
    assert.match(
      (h.emitted.find((e) => e.type === "exec.refused") as { reason: string }).reason,
      /cap of 64 shell sessions is reached.*64 still starting.*kill_session/,
    );
    assert.equal(h.shells.size, 64, "no process was asked for beyond the cap");
    assert.ok(!h.emitted.some((e) => e.type === "exec.evicting"));
  });

  test("a refusal at the cap counts only the sessions still starting", () => {
    const h = startExec({ maxSessions: 3, protectedCount: 2 });
    h.start(1);
    h.running(2);
    h.running(3);
    h.start(4);
    assert.match(
      (h.emitted.find((e) => e.type === "exec.refused" && e.id === 4) as { reason: string }).reason,
      /\(1 still starting, the 2 most recently used are protected\)/,
    );
  });

  test("once the first ones run, a start at the cap evicts the least recently used of them instead", () => {
    const h = startExec({ maxSessions: 4, protectedCount: 1 });
    h.running(1);
    for (const id of [2, 3, 4]) h.start(id);
    h.start(5);
    assert.ok(h.emitted.some((e) => e.type === "exec.evicting" && e.id === 1 && e.running));
    assert.deepEqual(h.shells.get(1)!.signals, ["SIGTERM"]);
    assert.deepEqual(
      Object.values(h.records()).map((r) => [r.id, r.status]),
      [
        [1, "stopping"],
        [2, "starting"],
        [3, "starting"],
        [4, "starting"],
        [5, "starting"],
      ],
    );
    h.start(6);
    assert.ok(
      h.emitted.some((e) => e.type === "exec.refused" && e.id === 6),
      "the stopping one does not count, but nothing else can go",
    );
    h.closed(1, null, "SIGTERM");
    assert.equal(h.records()["1"], undefined, "the evicted one leaves once its process is gone");
    h.advance(1000);
    assert.equal(Object.keys(h.records()).length, 4);
  });

  test("a session being stopped does not count: its eviction makes room at once, however long it takes to go", () => {
    const h = startExec({ maxSessions: 3, protectedCount: 1 });
    for (const id of [1, 2, 3]) h.running(id);
    h.send({ type: "exec.kill", at: 0, id: 1, signal: "SIGTERM" });
    h.start(4);
    assert.ok(!h.emitted.some((e) => e.type === "exec.evicting"), "the one being killed made room");
    assert.ok(!h.emitted.some((e) => e.type === "exec.refused"));
    h.start(5);
    assert.ok(h.emitted.some((e) => e.type === "exec.evicting" && e.id === 2));
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

describe("serving: a new session's wake entry", () => {
  test("not armed until its call commits: a start whose call ends without committing never wakes", () => {
    const h = startExec({ debounceMs: 100 });
    h.start(1);
    h.spawned(1);
    h.send({ type: "exec.release", at: 0, id: 1, callId: "start-1" });
    h.closed(1, 0);
    h.advance(1000);
    assert.equal(h.wakes().length, 0);
  });

  test("leased to its starting call: an exit that call reports never wakes, even when armed meanwhile", () => {
    const h = startExec({ debounceMs: 100 });
    h.start(1);
    h.spawned(1);
    assert.equal(h.setOnExit(1, "wake").status, "armed");
    h.closed(1, 0);
    assert.equal(h.wakeState(1)?.value, "held", "the exit waits for the call that watches it");
    h.send({ type: "exec.forget", at: 0, id: 1, callId: "start-1" });
    h.advance(1000);
    assert.equal(h.wakes().length, 0);
  });
});

describe("serving: kill", () => {
  test("killing a session that already exited changes nothing: no signal, its record and its wake stay", () => {
    const h = startExec({ debounceMs: 100 });
    h.running(1, "wake");
    h.closed(1, 0);
    const before = h.records()["1"];
    h.send({ type: "exec.kill", at: 0, id: 1, signal: "SIGKILL" });
    assert.deepEqual(h.shells.get(1)!.signals, []);
    assert.deepEqual(h.records()["1"], before);
    h.advance(1000);
    assert.equal(h.wakes().length, 1, "the exit still wakes");
  });
});

describe("stopping", () => {
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

describe("the definition", () => {
  test("every state is described, under the machine's id", () => {
    assert.equal(execPoolMachine.id, "exec");
    assert.deepEqual(undescribedStates(execPoolMachine), []);
  });
});

describe("serving: starts refused, answers without an entry", () => {
  const refusal = (h: ReturnType<typeof startExec>, id: number) =>
    (h.emitted.find((e) => e.type === "exec.refused" && e.id === id) as { reason?: string } | undefined)?.reason;

  test("a start under an id in use is refused and says so; the running one is untouched", () => {
    const h = startExec();
    h.running(1);
    h.start(1);
    assert.equal(refusal(h, 1), "session id 1 is in use");
    assert.equal(h.records()["1"].status, "running");
  });

  test("after Pi's shutdown a start is refused because Pi is shutting down", () => {
    const h = startExec();
    h.send({ type: "exec.shutdown", at: 0 });
    h.start(2);
    assert.equal(refusal(h, 2), "Pi is shutting down");
  });

  test("an id whose tombstone still waits to wake can start again; the tombstone's wake still arrives", () => {
    const h = startExec({ maxSessions: 2, protectedCount: 1, debounceMs: 1000 });
    h.running(1, "wake");
    h.running(2);
    h.closed(1, 4);
    h.start(3);
    assert.equal(h.records()["1"], undefined, "evicted: only the tombstone is left");
    h.start(1);
    assert.deepEqual(h.errors, []);
    assert.equal(h.records()["1"].status, "starting");
    h.advance(1000);
    assert.deepEqual(
      h.wakes().map((w) => w.notices.map((n) => [n.id, n.code])),
      [[[1, 4]]],
    );
  });

  test("set_on_exit on a registered session whose completion was settled: too late, or already none; never armed", () => {
    const h = startExec();
    h.running(1, "wake");
    h.closed(1, 0);
    h.advance(250);
    h.send({ type: "exec.wake_delivered", at: 0, batch: h.wakes()[0].batch });
    assert.equal(h.wakeState(1), undefined);
    assert.equal(h.records()["1"].status, "exited");
    const wake = h.setOnExit(1, "wake");
    assert.deepEqual([wake.found, wake.status, wake.armed], [true, "too_late", false]);
    const none = h.setOnExit(1, "none");
    assert.deepEqual([none.found, none.status, none.armed], [true, "already_none", false]);
    const unknown = h.setOnExit(9, "wake");
    assert.deepEqual([unknown.found, unknown.status, unknown.armed], [false, undefined, false]);
  });

  test("an id leaves the registry once its exit is observed, listed, or its stop ended it: unknown, startable again", () => {
    const h = startExec();
    h.running(1);
    h.closed(1, 0);
    h.send({ type: "exec.forget", at: 0, id: 1 });
    h.running(2);
    h.send({ type: "exec.kill", at: 0, id: 2, signal: "SIGKILL" });
    h.closed(2, null, "SIGKILL");
    h.running(3);
    h.closed(3, 0);
    h.send({ type: "exec.listed", at: 0, ids: [3], callId: "l1" });
    for (const id of [1, 2, 3]) {
      assert.equal(h.setOnExit(id, "wake").found, false, `session ${id}`);
      assert.equal(h.records()[String(id)], undefined, `session ${id}`);
      h.start(id);
      assert.equal(refusal(h, id), undefined, `session ${id} starts again`);
      assert.equal(h.records()[String(id)]!.status, "starting", `session ${id}'s old record is gone`);
    }
  });

  test("list_sessions naming an id the registry no longer has leases nothing to its call", () => {
    const h = startExec();
    h.send({ type: "exec.listed", at: 0, ids: [5], callId: "l1" });
    const leases = (h.actor.system.get("exec:wake")!.getSnapshot().context as { leases: Record<string, number[]> })
      .leases;
    assert.equal(leases.l1, undefined);
  });
});

describe("stopping: records", () => {
  test("a session killed while starting keeps its SIGKILL through Pi's shutdown (not softened to SIGTERM)", () => {
    const h = startExec();
    h.start(1);
    h.send({ type: "exec.kill", at: 0, id: 1, signal: "SIGKILL" });
    h.send({ type: "exec.shutdown", at: 0 });
    h.spawned(1, 42);
    assert.deepEqual(h.shells.get(1)!.signals, ["SIGKILL"]);
  });

  test("a stop asked for while starting: the record stays stopping when the process appears", () => {
    const h = startExec();
    h.start(1);
    h.send({ type: "exec.shutdown", at: 0 });
    h.spawned(1, 42);
    assert.deepEqual([h.records()["1"].status, h.records()["1"].pid], ["stopping", 42]);
  });

  test("a session being killed goes on being killed through the shutdown: its record says what its actor does", () => {
    const h = startExec();
    h.running(1);
    h.send({ type: "exec.kill", at: 0, id: 1, signal: "SIGINT" });
    h.send({ type: "exec.shutdown", at: 0 });
    assert.deepEqual([h.records()["1"].status, h.records()["1"].stop], ["stopping", "kill"]);
    assert.deepEqual(h.shells.get(1)!.signals, ["SIGINT"], "one stop: the shutdown's SIGTERM is not sent on top");
    h.closed(1, null, "SIGINT");
    const ended = h.emitted.find((e) => e.type === "exec.ended" && e.id === 1) as { end?: string; reason?: string };
    assert.deepEqual([ended?.end, ended?.reason], ["killed", "kill"], "the record agreed with the end");
  });

  test("the pool keeps no copy of a live session's state: its record is read from the session's actor", () => {
    const h = startExec();
    h.start(1);
    const pool = h.actor.system.get(EXEC_POOL_ID)!.getSnapshot().context as Record<string, unknown>;
    assert.deepEqual(
      Object.keys(pool).filter((k) => k === "sessions" || k === "ended"),
      ["ended"],
    );
    assert.deepEqual(pool.ended, {});
    assert.equal(h.records()["1"].status, "starting");
    assert.ok(!("pid" in h.records()["1"]), "no pid before the process exists");
    h.spawned(1, 7);
    assert.deepEqual([h.records()["1"].status, h.records()["1"].pid], ["running", 7]);
    assert.deepEqual(h.sessionState(1), { running: "attached" });
    h.closed(1, 0);
    // Its actor is gone: the exit is what the pool keeps until a call observes it.
    assert.equal(h.sessionState(1), undefined);
    assert.deepEqual((h.actor.system.get(EXEC_POOL_ID)!.getSnapshot().context as { ended: object }).ended, {
      1: h.records()["1"],
    });
    assert.equal(h.records()["1"].status, "exited");
  });
});
