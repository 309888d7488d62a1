// The supervisor machine (machines/supervisor.ts), one `describe` per state, as the root with the fake runner under a
// SimulatedClock. Requests come prepared by their sender (machines/system.ts `preparedBySender`) unless a test
// scripts the `prepare` actor itself.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { fromCallback } from "xstate";
import type { EventObject } from "xstate";
import { getShortestPaths } from "xstate/graph";
import type { PrepareFact, RunOutcome, RunStartEvent } from "../../machines/events.ts";
import { runMachine } from "../../machines/run.ts";
import { sessionMachine } from "../../machines/session.ts";
import { spareMachine } from "../../machines/spare.ts";
import { sparePoolMachine } from "../../machines/spare-pool.ts";
import { SPARE_POOL_ID } from "../../machines/actor-ids.ts";
import { factOfPrepared, supervisorMachine } from "../../machines/supervisor.ts";
import { createActor } from "xstate";
import { undescribedStates } from "../helpers/machine-states.ts";
import { TEST_LIMITS, createFakeRunner, startSupervisor, type FakeRunnerInstance } from "../helpers/fake-runner.ts";
import { DEFAULT_EXEC_POOL } from "../../machines/exec-pool.ts";

const TEST_EXEC_LIMITS = DEFAULT_EXEC_POOL.limits;
import { analysable, alphabet, byValue, describePath, handled } from "../helpers/machine-graph.ts";
import {
  SHUTDOWN,
  assertHealthy,
  ctx,
  freshRunning,
  nextSessionRun,
  sessionRunning,
} from "../helpers/machine-scenarios.ts";
import { outcome, refusedIn, sessionRef } from "../helpers/outcomes.ts";

const CWD = "/work";
const FIRST_RUN: RunStartEvent = {
  type: "run.start",
  at: 0,
  runId: "s1",
  code: "x = 1",
  cwd: CWD,
  timeoutMs: 1000,
  session: "s",
};

/** A `prepare` actor the test answers by hand: each request's instance, its input, and whether it was stopped. */
function scriptedPrepare() {
  const instances: { input: RunStartEvent; send: (fact: PrepareFact) => void; stopped: boolean }[] = [];
  const logic = fromCallback<EventObject, RunStartEvent>(({ input, sendBack }) => {
    const p = { input, send: (fact: PrepareFact) => sendBack(fact), stopped: false };
    instances.push(p);
    return () => {
      p.stopped = true;
    };
  });
  return { logic, instances, last: () => instances[instances.length - 1]! };
}

const IDLE = { serving: "idle" };
const PREPARING = { serving: "preparing" };

describe("serving.idle", () => {
  test("the supervisor starts idle; a request makes it prepare, and it is idle again once done with the last one", () => {
    const prepare = scriptedPrepare();
    const h = startSupervisor({ prepare: prepare.logic });
    assert.deepEqual(h.actor.getSnapshot().value, IDLE);
    h.start({ runId: "r1" });
    assert.deepEqual(h.actor.getSnapshot().value, PREPARING);
    prepare.last().send({ type: "prepare.done", at: h.now(), runId: "r1" });
    assert.deepEqual(h.actor.getSnapshot().value, IDLE);
    assert.deepEqual(ctx(h).queue, []);
    assert.deepEqual(h.values("supervisor"), ["idle", "preparing", "idle"]);
    assertHealthy(h);
  });

  test("a request its sender settled is prepared within the step that brought it: no snapshot shows it preparing", () => {
    const prepare = scriptedPrepare();
    const h = startSupervisor({ prepare: prepare.logic });
    h.start({ runId: "r1", prepared: {} });
    h.start({ runId: "r2", prepared: { failed: { message: "no interpreter" } } });
    assert.equal(prepare.instances.length, 0, "no prepare actor");
    assert.deepEqual(h.children(), ["run:r1"]);
    assert.equal(h.outcome("r2").message, "no interpreter");
    assert.deepEqual(h.values("supervisor"), ["idle"]);
    assertHealthy(h);
  });

  test("a request with the id of a running run is refused, and the supervisor stays idle", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.start({ runId: "r1", code: "again" });
    assert.equal(h.outcome("r1").message, "Run id r1 is already in use.");
    assert.deepEqual(h.actor.getSnapshot().value, IDLE);
    assert.deepEqual(ctx(h).queue, []);
    k.done("r1");
    assert.equal(h.finished.filter((o) => o.runId === "r1").length, 2, "the refusal, then the run's own outcome");
    assertHealthy(h);
  });

  test("a preparation fact with no request being prepared changes nothing; a cancel still reaches its run", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.send({ type: "prepare.done", at: h.now(), runId: "r1" });
    h.send({ type: "prepare.failed", at: h.now(), runId: "zz", message: "stale" });
    assert.deepEqual(h.finished, []);
    assert.deepEqual(h.children(), ["run:r1"]);
    h.cancel("r1");
    assert.deepEqual(k.types(), ["runner.run", "runner.interrupt"]);
    assert.deepEqual(h.actor.getSnapshot().value, IDLE);
    assertHealthy(h);
  });
});

describe("serving.preparing", () => {
  test("requests are prepared one at a time, in the order they came; each starts once prepared", () => {
    const prepare = scriptedPrepare();
    const h = startSupervisor({ prepare: prepare.logic });
    h.start({ runId: "r1", code: "1" });
    h.start({ runId: "s1", session: "s", code: "2" });
    assert.deepEqual(h.children(), ["prepare"], "one request is prepared, the other waits");
    assert.deepEqual(h.actor.getSnapshot().value, PREPARING);
    assert.equal(prepare.instances.length, 1);
    assert.equal(prepare.last().input.runId, "r1");
    assert.deepEqual(
      ctx(h).queue.map((r) => r.runId),
      ["r1", "s1"],
    );
    h.advance(30);
    prepare.last().send({ type: "prepare.done", at: h.now(), runId: "r1", python: "/py/bin/python3" });
    assert.ok(prepare.instances[0]!.stopped, "the finished preparation is stopped");
    assert.deepEqual(h.runner.of("run:r1").input, {
      mode: "fresh",
      cwd: "/work",
      owner: "run:r1",
      python: "/py/bin/python3",
    });
    assert.equal(prepare.last().input.runId, "s1", "the next request is prepared");
    assert.deepEqual(h.actor.getSnapshot().value, PREPARING);
    prepare.last().send({ type: "prepare.done", at: h.now(), runId: "s1", notes: ["[a note]"] });
    assert.deepEqual(h.children().sort(), ["run:r1", "session:s"]);
    assert.deepEqual(ctx(h).queue, []);
    assert.deepEqual(h.values("supervisor"), ["idle", "preparing", "idle"], "preparing from one request to the next");
    const k = h.runner.of("session:s");
    k.ready();
    k.started("s1");
    k.done("s1");
    assert.deepEqual(h.outcome("s1").notes, ["[a note]"], "preparation's notices reach the outcome");
    assert.equal(h.outcome("s1").requestedAt, 0, "the request's time, not the preparation's");
    assertHealthy(h);
  });

  test("a request prepared for a busy session is refused at the time its preparation ended, busy read from the session", () => {
    const prepare = scriptedPrepare();
    const h = startSupervisor({ prepare: prepare.logic });
    h.start({ runId: "s1", session: "s", code: "1" });
    prepare.last().send({ type: "prepare.done", at: h.now(), runId: "s1" });
    const k = h.runner.of("session:s");
    k.ready();
    k.started("s1");
    h.advance(10);
    h.start({ runId: "s2", session: "s", code: "2" });
    h.advance(25);
    prepare.last().send({ type: "prepare.done", at: h.now(), runId: "s2" });
    assert.deepEqual(
      h.outcome("s2"),
      outcome({
        runId: "s2",
        status: "setup_error",
        requestedAt: 10,
        finishedAt: 35,
        message: 'Session "s" is busy with another run; wait for it to finish.',
        session: refusedIn("s", 1),
      }),
    );
    assert.deepEqual(ctx(h).active, { s1: "s" }, "the refused run is not active");
    assert.equal("busyRunId" in ctx(h).sessions.s!, false, "whether the session is busy is its own fact alone");
    assert.deepEqual(k.types(), ["runner.run"], "nothing of s2 reached the process");
    k.done("s1");
    assert.equal(h.outcome("s1").status, "success");
    assertHealthy(h);
  });

  test("a request whose preparation fails is refused with the reason and its hints; no actor serves it", () => {
    const prepare = scriptedPrepare();
    const h = startSupervisor({ prepare: prepare.logic });
    h.start({ runId: "bad", session: "s" });
    h.start({ runId: "good" });
    h.advance(25);
    const hints = [{ id: "pep723_syntax", text: "A PEP 723 block looks like ..." }];
    prepare
      .last()
      .send({ type: "prepare.failed", at: h.now(), runId: "bad", message: "invalid PEP 723 metadata", hints });
    assert.deepEqual(
      h.outcome("bad"),
      outcome({
        runId: "bad",
        status: "setup_error",
        finishedAt: 25,
        message: "invalid PEP 723 metadata",
        hints,
        session: refusedIn("s", 0),
      }),
    );
    assert.equal(h.ref("session:s"), undefined);
    assert.equal(prepare.last().input.runId, "good", "the next request is prepared");
    assert.deepEqual(h.actor.getSnapshot().value, PREPARING);
    assertHealthy(h);
  });

  test("a cancelled request ends cancelled before it starts, whether it waits or is being prepared", () => {
    const prepare = scriptedPrepare();
    const h = startSupervisor({ prepare: prepare.logic });
    h.start({ runId: "a" });
    h.start({ runId: "b" });
    h.start({ runId: "c" });
    h.advance(5);
    h.cancel("b");
    assert.equal(h.outcome("b").status, "cancelled");
    assert.equal(h.outcome("b").stopReason, "cancelled");
    assert.equal(h.outcome("b").killed, false);
    assert.match(h.outcome("b").message ?? "", /did not run/);
    h.cancel("a");
    assert.equal(h.outcome("a").status, "cancelled");
    assert.ok(prepare.instances[0]!.stopped, "the preparation under way is stopped");
    assert.equal(prepare.last().input.runId, "c");
    assert.deepEqual(
      ctx(h).queue.map((r) => r.runId),
      ["c"],
    );
    assert.equal(h.runner.instances.length, 0, "nothing ran");
    assert.deepEqual(h.actor.getSnapshot().value, PREPARING);
    h.cancel("c");
    assert.deepEqual(h.actor.getSnapshot().value, IDLE, "the last one cancelled: none waits");
    assert.ok(prepare.instances[1]!.stopped);
    assertHealthy(h);
  });

  test("a fact for another request than the one being prepared changes nothing", () => {
    const prepare = scriptedPrepare();
    const h = startSupervisor({ prepare: prepare.logic });
    h.start({ runId: "r1" });
    prepare.last().send({ type: "prepare.done", at: h.now(), runId: "zz" });
    prepare.last().send({ type: "prepare.failed", at: h.now(), runId: "zz", message: "stale" });
    assert.deepEqual(h.finished, []);
    assert.deepEqual(h.children(), ["prepare"]);
    assert.deepEqual(h.actor.getSnapshot().value, PREPARING);
    prepare.last().send({ type: "prepare.done", at: h.now(), runId: "r1" });
    assert.deepEqual(h.children(), ["run:r1"]);
    assertHealthy(h);
  });

  test("a request its sender settled is not prepared again, also when it waits behind one being prepared", () => {
    const prepare = scriptedPrepare();
    const h = startSupervisor({ prepare: prepare.logic });
    h.start({ runId: "r1" });
    h.start({ runId: "r2", prepared: {} });
    prepare.last().send({ type: "prepare.done", at: h.now(), runId: "r1" });
    assert.equal(prepare.instances.length, 1, "only r1 was prepared");
    assert.deepEqual(h.children().sort(), ["run:r1", "run:r2"], "r2 started as soon as r1 was done");
    assert.deepEqual(h.values("supervisor"), ["idle", "preparing", "idle"], "r2 never waited on its own");
    assertHealthy(h);
  });

  test("the fact a settled request stands for carries what its sender settled, and no key it left unset", () => {
    const base = { type: "run.start", at: 7, runId: "r", code: "1", cwd: CWD, timeoutMs: 1000 } as const;
    assert.deepEqual(factOfPrepared({ ...base, prepared: {} }), { type: "prepare.done", at: 7, runId: "r" });
    const settled = { python: "/py/bin/python3", dependencies: ["rich"], spareKey: "k", notes: ["[a note]"] };
    assert.deepEqual(factOfPrepared({ ...base, ...settled, prepared: {} }), {
      type: "prepare.done",
      at: 7,
      runId: "r",
      ...settled,
    });
    assert.deepEqual(factOfPrepared({ ...base, python: "/py", prepared: { failed: { message: "no" } } }), {
      type: "prepare.failed",
      at: 7,
      runId: "r",
      message: "no",
    });
  });

  test("a request id waiting for preparation is in use", () => {
    const prepare = scriptedPrepare();
    const h = startSupervisor({ prepare: prepare.logic });
    h.start({ runId: "r1" });
    h.start({ runId: "r1", code: "again" });
    assert.equal(h.outcome("r1").message, "Run id r1 is already in use.");
    assert.equal(prepare.instances.length, 1);
    assertHealthy(h);
  });
});

describe("serving: routing", () => {
  test("reset stops the old session actor (its runner is stopped) and starts incarnation + 1", () => {
    const h = startSupervisor();
    const k1 = sessionRunning(h, "s", "s1");
    k1.done("s1");
    const old = h.ref("session:s")!;
    h.advance(50);
    h.start({ runId: "s2", session: "s", reset: true, cwd: "/elsewhere" });
    assert.deepEqual(k1.types(), ["runner.run", "stopped"]);
    assert.equal(old.getSnapshot().status, "stopped");
    const fresh = h.ref("session:s")!;
    assert.notEqual(fresh, old);
    assert.equal(h.value("session:s"), "starting");
    const k2 = h.runner.of("session:s");
    assert.equal(k2.index, 1);
    assert.deepEqual(k2.input, { mode: "session", cwd: "/elsewhere", owner: "session:s" });
    assert.deepEqual(ctx(h).sessions, { s: { incarnation: 2, status: "alive", cwd: "/elsewhere" } });
    k2.ready();
    k2.started("s2");
    k2.done("s2");
    assert.deepEqual(h.outcome("s2").session, sessionRef({ incarnation: 2 }));
    assert.deepEqual(h.values("session:s", 0), ["starting", "running", "idle"]);
    assert.deepEqual(h.values("session:s", 1), ["starting", "running", "idle"]);
    assert.deepEqual(h.children(), ["session:s"]);
    assertHealthy(h);
  });

  test("a reset asked for while a direct run is active is refused as busy; the session and its run go on", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    k.done("s1");
    const session = h.ref("session:s")!;
    const direct: RunOutcome[] = [];
    session.on("run.finished", (e: { outcome: RunOutcome }) => direct.push(e.outcome));
    // The host sends a warm run straight to the idle session (host/selectors.ts directSession).
    session.send({
      type: "run.start",
      at: h.now(),
      runId: "d1",
      code: "x",
      cwd: "/work",
      timeoutMs: 1000,
      session: "s",
      direct: true,
    });
    assert.equal(h.value("run:d1"), "starting");
    for (const reset of [{ reset: true }, { cwd: "/elsewhere" }]) {
      h.start({ runId: `r${h.finished.length}`, session: "s", ...reset });
      const refused = h.finished.at(-1)!;
      assert.equal(refused.status, "setup_error");
      assert.equal(refused.message, 'Session "s" is busy with another run; wait for it to finish.');
      assert.equal(refused.session?.incarnation, 1);
    }
    assert.equal(h.ref("session:s"), session);
    assert.deepEqual(k.types(), ["runner.run", "runner.run"]);
    k.done("d1");
    assert.deepEqual(
      direct.map((o) => [o.runId, o.status]),
      [["d1", "success"]],
    );
    // The direct run's outcome went to the host, not through the supervisor.
    assert.ok(!h.finished.some((o) => o.runId === "d1"));
    assertHealthy(h);
  });

  test("a duplicate run id is refused while the first is active, accepted after it finished", () => {
    const h = startSupervisor();
    const k = freshRunning(h, "r1");
    h.start({ runId: "r1", code: "other" });
    assert.deepEqual(h.finished, [
      outcome({
        runId: "r1",
        status: "setup_error",
        requestedAt: 20,
        finishedAt: 20,
        message: "Run id r1 is already in use.",
      }),
    ]);
    // Also when the duplicate asks for a session: nothing is started.
    h.start({ runId: "r1", session: "s" });
    assert.equal(h.finished.length, 2);
    assert.equal(h.finished[1]?.message, "Run id r1 is already in use.");
    assert.deepEqual(h.finished[1]?.session, refusedIn("s", 0));
    assert.deepEqual(h.children(), ["run:r1"]);
    assert.equal(h.runner.instances.length, 1);
    assert.equal(h.value("run:r1"), "running");
    k.done("r1");
    assert.equal(h.finished[2]?.status, "success");
    h.start({ runId: "r1" });
    assert.equal(h.runner.instances.length, 2);
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
    assert.deepEqual(Object.keys(h.ref("session:s")!.getSnapshot().children), ["runner"]);
    assert.equal(h.finished.length, 40);
    assert.deepEqual(ctx(h).active, {});
    h.stopSession("s");
    h.runner.of("session:s").exited({ code: 0 });
    assert.deepEqual(h.children(), []);
    assert.equal(
      h.runner.instances.every((k) => k.stopped),
      true,
    );
    assert.deepEqual(h.timers(), []);
    assertHealthy(h);
  });

  test("a reset run does not claim that the previous session was lost", () => {
    const h = startSupervisor();
    sessionRunning(h, "s", "s1").done("s1");
    h.start({ runId: "s2", session: "s", reset: true });
    const k2 = h.runner.of("session:s");
    k2.ready();
    k2.started("s2");
    k2.done("s2");
    assert.equal(h.outcome("s2").session?.replacedLost, undefined);
    assert.equal(h.outcome("s2").session?.started, true);
    assert.equal(h.outcome("s2").session?.incarnation, 2);
    assert.equal(h.outcome("s2").session?.ordinal, 1);
  });
  test("an incarnation whose end is queued behind the request that replaces it leaves the new one alone", () => {
    // The old process exits while the request for the session's next run is being taken: the old incarnation's
    // done event reaches the supervisor after the prepared request started incarnation 2 under the same id.
    let old: FakeRunnerInstance | undefined;
    const prepare = fromCallback<EventObject, RunStartEvent>(({ input, sendBack }) => {
      sendBack({ type: "prepare.done", at: input.at, runId: input.runId });
      if (input.runId === "s2") old!.exited({ code: 1 });
    });
    const h = startSupervisor({ prepare });
    old = sessionRunning(h, "s", "s1");
    old.done("s1");
    h.start({ runId: "s2", session: "s" });
    assert.equal(old.stopped, true);
    const k2 = h.runner.of("session:s");
    assert.notEqual(k2, old);
    assert.equal(k2.stopped, false, "the new incarnation's process lives");
    assert.deepEqual(h.children(), ["session:s"]);
    assert.deepEqual(ctx(h).sessions.s, { incarnation: 2, status: "alive", cwd: CWD });
    k2.ready();
    k2.started("s2");
    k2.done("s2");
    assert.equal(h.outcome("s2").status, "success");
    assert.equal(h.outcome("s2").session?.incarnation, 2);
    assert.deepEqual(ctx(h).sessions.s, { incarnation: 2, status: "alive", cwd: CWD });
    assertHealthy(h);
  });
});

describe("serving: languages and replacements", () => {
  const input = (h: ReturnType<typeof startSupervisor>, id: string) =>
    (h.ref(id)!.getSnapshot() as { context: Record<string, unknown> }).context;

  test("JavaScript runs only in a session: a fresh JavaScript run is refused, nothing starts", () => {
    const h = startSupervisor();
    h.start({ runId: "j", language: "js" });
    assert.equal(h.finished.length, 1);
    assert.equal(h.finished[0]!.message, "JavaScript runs only in a session (eval's js cells).");
    assert.deepEqual(h.children(), []);
    assertHealthy(h);
  });

  test("a session runs one language: a run of the other one is refused, naming both", () => {
    const h = startSupervisor();
    h.start({ runId: "j1", session: "js", language: "js" });
    assert.deepEqual(ctx(h).sessions.js, {
      incarnation: 1,
      status: "alive",
      cwd: CWD,
      language: "js",
    });
    assert.equal(input(h, "session:js").language, "js");
    const js = h.runner.of("session:js");
    js.ready();
    js.started("j1");
    js.done("j1");
    h.start({ runId: "p1", session: "js" });
    assert.equal(h.outcome("p1").message, 'Session "js" runs JavaScript; use another session name for Python.');
    sessionRunning(h, "py", "p2").done("p2");
    h.start({ runId: "j2", session: "py", language: "js" });
    assert.equal(h.outcome("j2").message, 'Session "py" runs Python; use another session name for JavaScript.');
    assert.equal(h.outcome("j2").session?.incarnation, 1);
    assert.equal(input(h, "session:py").language, undefined, "a Python session's input names no language");
  });

  test("another interpreter or working directory replaces a live session, saying what it replaced", () => {
    const h = startSupervisor();
    const k1 = sessionRunning(h, "s", "s1");
    k1.done("s1");
    h.start({ runId: "s2", session: "s", python: "/py/a" });
    assert.deepEqual(input(h, "session:s").replaced, { reason: "interpreter", from: "the default interpreter" });
    const k2 = h.runner.of("session:s");
    k2.ready();
    k2.started("s2");
    k2.done("s2");
    h.start({ runId: "s3", session: "s", python: "/py/b" });
    assert.deepEqual(input(h, "session:s").replaced, { reason: "interpreter", from: "/py/a" });
    const k3 = h.runner.of("session:s");
    k3.ready();
    k3.started("s3");
    k3.done("s3");
    h.start({ runId: "s4", session: "s", python: "/py/b", cwd: "/elsewhere" });
    assert.deepEqual(input(h, "session:s").replaced, { reason: "cwd", from: CWD });
    assert.equal(ctx(h).sessions.s?.incarnation, 4);
  });

  test("the backend's label and a request's own limits reach the fresh run and the session", () => {
    const h = startSupervisor();
    const limits = { ...TEST_LIMITS, graceMs: 7 };
    h.start({ runId: "r1", backend: "sandbox", limits });
    assert.equal(input(h, "run:r1").backend, "sandbox");
    assert.deepEqual(input(h, "run:r1").limits, limits);
    h.start({ runId: "s1", session: "s", backend: "remote", limits });
    assert.equal(input(h, "session:s").backend, "remote");
    assert.deepEqual(input(h, "session:s").limits, limits);
    h.start({ runId: "r2" });
    assert.equal(input(h, "run:r2").backend, undefined);
    assert.deepEqual(input(h, "run:r2").limits, TEST_LIMITS);
  });
});

describe("serving: the shell-session pool", () => {
  const pool = (h: ReturnType<typeof startSupervisor>) =>
    h.ref("exec:pool")?.getSnapshot() as { value: string; context: { maxSessions: number } } | undefined;

  test("exec.open creates the pool once, with the supervisor's bounds (else the defaults); commands reach it", () => {
    const h = startSupervisor();
    assert.equal(pool(h), undefined, "no pool before the first use");
    h.send({ type: "exec.open", at: h.now() });
    const first = h.ref("exec:pool");
    assert.equal(pool(h)?.value, "serving");
    assert.equal(pool(h)?.context.maxSessions, 64);
    h.send({ type: "exec.open", at: h.now() });
    assert.equal(h.ref("exec:pool"), first, "opened again: the same pool");
    h.send({ type: "exec.shutdown", at: h.now() });
    assert.equal(pool(h)?.value, "stopping", "an exec command is forwarded to the pool");
    const own = startSupervisor({
      exec: { maxSessions: 2, protectedCount: 1, limits: TEST_EXEC_LIMITS, debounceMs: 5 },
    });
    own.send({ type: "exec.open", at: own.now() });
    assert.equal(pool(own)?.context.maxSessions, 2);
  });

  test("an exec command before the pool exists is dropped, not an error", () => {
    const h = startSupervisor();
    h.send({ type: "exec.shutdown", at: h.now() });
    assert.equal(pool(h), undefined);
    assertHealthy(h);
  });

  test("shutdown stops the pool; a pool opened during shutdown starts stopping", () => {
    const h = startSupervisor();
    h.send({ type: "exec.open", at: h.now() });
    h.shutdown();
    assert.equal(pool(h)?.value, "stopping");
    const late = startSupervisor();
    late.shutdown();
    late.send({ type: "exec.open", at: late.now() });
    assert.equal(pool(late)?.value, "stopping");
  });
});

describe("serving: what a request becomes", () => {
  const context = (h: ReturnType<typeof startSupervisor>, id: string) =>
    (h.ref(id)!.getSnapshot() as { context: Record<string, unknown> }).context;

  test("a fresh run is script.py with the request's dependencies, tools and notes (none when it has none)", () => {
    const h = startSupervisor({ install: fromCallback(() => {}) });
    const calls = { callerId: "call_1", toolSet: "t1", tools: [] };
    h.start({ runId: "r1", dependencies: ["x==1"], calls, notes: ["a note"] });
    const c = context(h, "run:r1");
    assert.deepEqual([c.filename, c.dependencies, c.calls, c.notes], ["script.py", ["x==1"], calls, ["a note"]]);
    h.start({ runId: "r2", dependencies: [], notes: [] });
    const bare = context(h, "run:r2");
    assert.ok(!("dependencies" in bare) && !("calls" in bare) && !("notes" in bare), JSON.stringify(bare));
  });

  test("a session's process gets the interpreter; a Python session names no language", () => {
    const h = startSupervisor();
    h.start({ runId: "s1", session: "s", python: "/py/bin/python3" });
    const c = context(h, "session:s");
    assert.equal(c.python, "/py/bin/python3");
    assert.ok(!("language" in c) && !("replacedLost" in c), JSON.stringify(c));
  });

  test("a session lost while idle: its next run starts a new incarnation that says so", () => {
    const h = startSupervisor();
    const k = sessionRunning(h, "s", "s1");
    k.done("s1");
    k.exited({ code: null, signal: "SIGKILL" });
    assert.equal(ctx(h).sessions.s?.status, "lost");
    h.start({ runId: "s2", session: "s" });
    assert.equal(context(h, "session:s").replacedLost, true);
    assert.equal(ctx(h).sessions.s?.incarnation, 2);
  });

  test("a lost JavaScript session's name may start a Python session: only a live session keeps its language", () => {
    const h = startSupervisor();
    h.start({ runId: "j1", session: "s", language: "js" });
    const k = h.runner.of("session:s");
    k.ready();
    k.started("j1");
    k.done("j1");
    k.exited({ code: 1 });
    h.start({ runId: "p1", session: "s" });
    assert.equal(h.finished.filter((o) => o.runId === "p1").length, 0, "not refused");
    assert.equal(context(h, "session:s").language, undefined);
  });

  test("a fresh run with a spare key spawns the spare pool once and tells it which spare the run took", () => {
    const h = startSupervisor();
    h.start({ runId: "n1" });
    assert.equal(h.ref(SPARE_POOL_ID), undefined, "a run with no key needs no pool");
    h.start({ runId: "a1", spareKey: "k" });
    const first = h.ref(SPARE_POOL_ID);
    assert.ok(first, "the first run with a key spawned it");
    h.runner.of("spare:1").ready();
    h.start({ runId: "a2", spareKey: "k" });
    assert.equal(h.ref(SPARE_POOL_ID), first, "the same pool");
    assert.equal(h.runner.of("run:a2").input.adopt, "spare:1", "the ready spare, chosen as the run started");
    assert.deepEqual(
      h.trace.filter((t) => t.id === SPARE_POOL_ID).map((t) => t.event),
      ["xstate.init", "spares.run", "spares.run", "xstate.done.actor.spare:1"],
      "the pool hears of each fresh run with a key; the claimed spare reports to the pool, not the supervisor",
    );
    assert.ok(!h.trace.some((t) => t.id === "supervisor" && t.event.startsWith("xstate.done.actor.spare")));
    assertHealthy(h);
  });
});

describe("serving: refusals carry the request's place", () => {
  test("a session request whose preparation fails names the session's current incarnation", () => {
    const prepare = scriptedPrepare();
    const h = startSupervisor({ prepare: prepare.logic });
    h.start({ runId: "s1", session: "s" });
    prepare.last().send({ type: "prepare.done", at: h.now(), runId: "s1" });
    h.start({ runId: "s2", session: "s" });
    prepare.last().send({ type: "prepare.failed", at: h.now(), runId: "s2", message: "bad metadata" });
    assert.equal(h.outcome("s2").session?.incarnation, 1);
  });

  test("a fresh JavaScript request is refused when its preparation ends, not when it was made", () => {
    const prepare = scriptedPrepare();
    const h = startSupervisor({ prepare: prepare.logic });
    h.start({ runId: "j", language: "js" });
    h.advance(30);
    prepare.last().send({ type: "prepare.done", at: h.now(), runId: "j" });
    assert.deepEqual([h.outcome("j").finishedAt, h.outcome("j").durationMs], [30, 30]);
  });

  test("a waiting request cancelled is never prepared: the next one after the head is", () => {
    const prepare = scriptedPrepare();
    const h = startSupervisor({ prepare: prepare.logic });
    h.start({ runId: "a" });
    h.start({ runId: "b" });
    h.start({ runId: "c" });
    h.cancel("b");
    prepare.last().send({ type: "prepare.done", at: h.now(), runId: "a" });
    assert.equal(prepare.last().input.runId, "c");
    assert.equal(h.finished.filter((o) => o.runId === "b").length, 1, "b ends once");
  });

  test("shutdown refuses the waiting requests once: a later cancel of one of them ends nothing again", () => {
    const prepare = scriptedPrepare();
    const h = startSupervisor({ prepare: prepare.logic });
    h.start({ runId: "a" });
    h.start({ runId: "b" });
    h.shutdown();
    assert.deepEqual(
      h.finished.map((o) => [o.runId, o.message]),
      [
        ["a", SHUTDOWN],
        ["b", SHUTDOWN],
      ],
    );
    assert.ok(prepare.instances[0]!.stopped);
    h.cancel("b");
    assert.equal(h.finished.length, 2);
    assert.deepEqual(ctx(h).queue, []);
  });
});

describe("stopping", () => {
  test("what belongs to serving stops with it: a session.stop is not sent on, a cancel still reaches its run", () => {
    const h = startSupervisor();
    const kf = freshRunning(h, "r1");
    const ks = sessionRunning(h, "s", "s1");
    h.shutdown();
    assert.deepEqual(h.ref("session:s")!.getSnapshot().value, { running: "closeRequested" });
    const closes = () => h.eventTypes.filter((t) => t === "session.close").length;
    const before = closes();
    h.stopSession("s");
    assert.equal(closes(), before, "the shutdown already closed every session");
    const cancels = () => h.eventTypes.filter((t) => t === "run.cancel").length;
    const sent = cancels();
    h.cancel("r1");
    assert.equal(cancels() - sent, 2, "the supervisor got it and passed it to the run");
    assert.deepEqual(kf.types(), ["runner.run", "runner.interrupt"]);
    assert.deepEqual(ks.types(), ["runner.run", "runner.interrupt"]);
    assertHealthy(h);
  });

  test("supervisor.shutdown: cancels fresh runs, closes sessions, refuses new runs", () => {
    const h = startSupervisor();
    const kf = freshRunning(h, "r1");
    const ks = sessionRunning(h, "s", "s1");
    ks.done("s1");
    const kt = sessionRunning(h, "t", "t1");
    assert.deepEqual(h.actor.getSnapshot().value, IDLE);

    h.shutdown();
    assert.equal(h.actor.getSnapshot().value, "stopping");
    assert.deepEqual(kf.types(), ["runner.run", "runner.interrupt"]);
    assert.deepEqual(ks.types(), ["runner.run", "runner.shutdown"]);
    assert.deepEqual(kt.types(), ["runner.run", "runner.interrupt"]);
    assert.equal(h.value("session:s"), "closing");
    assert.equal(h.value("session:t"), "interrupted");

    const at = h.now();
    h.start({ runId: "r9" });
    h.start({ runId: "s9", session: "s" });
    assert.deepEqual(
      h.outcome("r9"),
      outcome({
        runId: "r9",
        status: "setup_error",
        requestedAt: at,
        finishedAt: at,
        message: SHUTDOWN,
      }),
    );
    assert.deepEqual(
      h.outcome("s9"),
      outcome({
        runId: "s9",
        status: "setup_error",
        requestedAt: at,
        finishedAt: at,
        message: SHUTDOWN,
        session: refusedIn("s", 0),
      }),
    );
    assert.deepEqual(Object.keys(ctx(h).active).sort(), ["r1", "t1"]);

    kf.done("r1", { exitCode: 130, error: "interrupt" });
    kt.done("t1", { exitCode: 130, error: "interrupt" });
    assert.equal(h.outcome("r1").status, "cancelled");
    assert.equal(h.outcome("t1").status, "cancelled");
    assert.equal(h.value("session:t"), "closing");
    assert.deepEqual(kt.types(), ["runner.run", "runner.interrupt", "runner.shutdown"]);
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

  test("supervisor.shutdown kills a fresh run that has no runner yet", () => {
    const h = startSupervisor();
    h.start({ runId: "r1" });
    h.shutdown();
    assert.equal(h.value("run:r1"), "killed");
    h.runner.of("run:r1").exited({ signal: "SIGTERM" });
    assert.equal(h.outcome("r1").status, "cancelled");
    assert.equal(h.outcome("r1").killed, true);
    assertHealthy(h);
  });

  test("requests still waiting for preparation at shutdown are refused; the preparation under way is stopped", () => {
    const prepare = scriptedPrepare();
    const h = startSupervisor({ prepare: prepare.logic });
    h.start({ runId: "p1" });
    h.start({ runId: "p2", session: "s" });
    h.advance(7);
    h.shutdown();
    assert.deepEqual(
      h.finished.map((o) => [o.runId, o.status, o.message, o.finishedAt]),
      [
        ["p1", "setup_error", SHUTDOWN, 7],
        ["p2", "setup_error", SHUTDOWN, 7],
      ],
    );
    assert.ok(prepare.instances[0]!.stopped);
    assert.deepEqual(h.children(), []);
    assert.equal(h.actor.getSnapshot().value, "stopping");
    assertHealthy(h);
  });
});

describe("the graph", () => {
  test("every state of the supervisor machine is reachable", () => {
    const supFake = createFakeRunner();
    const logic = analysable(
      supervisorMachine.provide({
        actors: {
          run: runMachine.provide({ actors: { runner: supFake.logic } }),
          session: sessionMachine.provide({ actors: { runner: supFake.logic } }),
          sparePool: sparePoolMachine.provide({
            actors: { spare: spareMachine.provide({ actors: { runner: supFake.logic } }) },
          }),
        },
      }),
    );
    const paths = getShortestPaths(logic, {
      input: { limits: TEST_LIMITS },
      serializeState: byValue,
      events: alphabet({
        "run.start": [{ ...FIRST_RUN, session: undefined }, FIRST_RUN],
        "prepare.done": [{ type: "prepare.done", at: 0, runId: "s1" }],
        "prepare.failed": [{ type: "prepare.failed", at: 0, runId: "s1", message: "no interpreter" }],
        "run.cancel": [{ type: "run.cancel", at: 1, runId: "s1" }],
        "run.finished": [],
        "run.nested_call": [],
        "session.stop": [{ type: "session.stop", at: 1, name: "s" }],
        "supervisor.shutdown": [{ type: "supervisor.shutdown", at: 2 }],
        // Opens the shell-session pool (a child of its own; test/machines/exec-pool.test.ts drives it).
        "exec.open": [],
      }),
      filterEvents: handled,
    });
    assert.deepEqual(
      paths.map((p) => [p.state.value, describePath(p)]),
      [
        [IDLE, "xstate.init"],
        ["stopping", "xstate.init > supervisor.shutdown"],
        [PREPARING, "xstate.init > run.start"],
      ],
    );
  });
});

describe("the definition", () => {
  test("every state is described, under the machine's id", () => {
    assert.equal(supervisorMachine.id, "supervisor");
    assert.deepEqual(undescribedStates(supervisorMachine), []);
  });

  test("without its preparation provided, the first request fails the supervisor, naming the missing actor", () => {
    const actor = createActor(supervisorMachine, { input: { limits: TEST_LIMITS } });
    let message = "";
    actor.subscribe({ error: (e) => (message = (e as Error).message) });
    actor.start();
    actor.send({ type: "run.start", at: 0, runId: "r1", code: "1", cwd: "/w", timeoutMs: 1000 } as RunStartEvent);
    assert.equal(message, "supervisor: the `prepare` actor must be provided (machines/system.ts)");
    actor.stop();
  });
});
