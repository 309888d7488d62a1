// The nested tool-call machine (machines/tool-call.ts) and the run's side of it (machines/run-calls.ts), with a
// SimulatedClock, the fake kernel and a scriptable fake dispatch actor: no process, no Pi, no real timer. The
// supervisor is the one the host runs (actors/system.ts `supervisorWith`), so the wiring into fresh runs and
// session runs is the production one.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { SimulatedClock, createActor, fromCallback } from "xstate";
import type { AnyActorRef, InspectionEvent } from "xstate";
import type { KernelCommand, RunOutcome, RunRequest } from "../machines/events.ts";
import { toolCallMachine, type ToolCallInput } from "../machines/tool-call.ts";
import {
  MAX_OPEN_CALLS,
  type DispatchCommand,
  type DispatchInput,
  type NestedCallRecord,
  type NestedCallStatus,
  type ToolReply,
  type ToolSpec,
} from "../machines/tool-events.ts";
import { callRecord, preview } from "../machines/tool-records.ts";
import { supervisorWith } from "../host/system.ts";
import { KERNEL_INFO, TEST_LIMITS, createFakeKernel } from "./helpers/fake-kernel.ts";

// ---- a scriptable dispatch actor ----
interface FakeDispatch {
  input: DispatchInput;
  received: DispatchCommand[];
  stopped: boolean;
  validated(at?: number): void;
  finish(status: NestedCallStatus, opts?: { text?: string; at?: number; durationMs?: number }): void;
}

function createFakeDispatch(now: () => number, options: { throwOnStart?: string } = {}) {
  const instances: FakeDispatch[] = [];
  const logic = fromCallback<DispatchCommand, DispatchInput>(({ input, sendBack, receive }) => {
    if (options.throwOnStart) throw new Error(options.throwOnStart);
    const d: FakeDispatch = {
      input,
      received: [],
      stopped: false,
      validated: (at = now()) => sendBack({ type: "dispatch.validated", at }),
      finish(status, { text = `${status} text`, at = now(), durationMs = 7 } = {}) {
        const record = callRecord(input, {
          status,
          at,
          durationMs,
          ...(status === "succeeded" ? {} : { error: preview(text) }),
        });
        const reply: ToolReply =
          status === "succeeded" ? { status: "ok", text } : { status: status === "failed" ? "error" : status, text };
        sendBack({
          type: "dispatch.finished",
          at,
          record: status === "succeeded" ? { ...record, result: preview(text) } : record,
          reply,
        });
      },
    };
    instances.push(d);
    receive((c) => d.received.push(c));
    return () => {
      d.stopped = true;
    };
  });
  return { logic, instances, of: (childId: string) => instances.find((d) => d.input.childId === childId)! };
}

// ---- the standalone tool-call machine ----
const CALL: ToolCallInput = {
  runId: "r1",
  callId: "c1",
  seq: 1,
  childId: "tool:r1:1",
  parentId: "call_1",
  name: "read",
  python: "read",
  args: { path: "a.txt" },
  at: 1000,
};

function startCall(options: { throwOnStart?: string } = {}) {
  const clock = new SimulatedClock();
  clock.set(1000);
  const dispatch = createFakeDispatch(() => clock.now(), options);
  const values: unknown[] = [];
  const actor = createActor(toolCallMachine.provide({ actors: { dispatch: dispatch.logic } }), { input: CALL, clock });
  actor.subscribe((s) => values.push(s.value));
  actor.start();
  return { actor, clock, dispatch, values };
}

describe("tool-call machine", () => {
  test("validating -> running -> succeeded; its output is the record and the answer; the dispatcher is stopped", () => {
    const { actor, dispatch, values, clock } = startCall();
    assert.equal(actor.getSnapshot().value, "validating");
    const d = dispatch.instances[0]!;
    assert.deepEqual(d.input, CALL);
    clock.increment(3);
    d.validated();
    assert.equal(actor.getSnapshot().value, "running");
    clock.increment(4);
    d.finish("succeeded", { text: '{"ok":true}' });
    const snap = actor.getSnapshot();
    assert.equal(snap.status, "done");
    assert.equal(snap.value, "succeeded");
    assert.deepEqual(snap.output!.reply, { status: "ok", text: '{"ok":true}' });
    assert.equal(snap.output!.callId, "c1");
    assert.equal(snap.output!.record.status, "succeeded");
    assert.equal(snap.output!.record.startedAt, new Date(1000).toISOString());
    assert.deepEqual(snap.output!.record.input, { text: '{"path":"a.txt"}', bytes: 16, truncated: false });
    assert.equal(d.stopped, true);
    assert.deepEqual(values, ["validating", "running", "succeeded"]);
  });

  for (const status of ["invalid", "blocked", "failed", "cancelled"] as const) {
    test(`a dispatcher ending ${status} ends the call in \`${status}\``, () => {
      const { actor, dispatch } = startCall();
      if (status !== "invalid") dispatch.instances[0]!.validated();
      dispatch.instances[0]!.finish(status, { text: "why" });
      assert.equal(actor.getSnapshot().value, status);
      assert.equal(actor.getSnapshot().output!.record.error?.text, "why");
    });
  }

  test("tool.cancel while running: the dispatcher is told, and the call ends with what it reports", () => {
    const { actor, dispatch, clock } = startCall();
    const d = dispatch.instances[0]!;
    d.validated();
    clock.increment(50);
    actor.send({ type: "tool.cancel", at: clock.now() });
    assert.equal(actor.getSnapshot().value, "cancelling");
    assert.deepEqual(d.received, [{ type: "dispatch.cancel", at: 1050 }]);
    actor.send({ type: "tool.cancel", at: clock.now() }); // a second cancel changes nothing
    assert.equal(d.received.length, 1);
    d.finish("cancelled");
    assert.equal(actor.getSnapshot().value, "cancelled");
    assert.equal(actor.getSnapshot().output!.reply.status, "cancelled");
  });

  test("tool.cancel while validating also cancels", () => {
    const { actor, dispatch } = startCall();
    actor.send({ type: "tool.cancel", at: 1000 });
    assert.equal(actor.getSnapshot().value, "cancelling");
    assert.equal(dispatch.instances[0]!.received[0]?.type, "dispatch.cancel");
  });

  test("a dispatcher that throws: the call failed, and Python gets the message", () => {
    const { actor } = startCall({ throwOnStart: "boom" });
    const snap = actor.getSnapshot();
    assert.equal(snap.value, "failed");
    assert.deepEqual(snap.output!.reply, { status: "error", text: "read: boom" });
    assert.equal(snap.output!.record.status, "failed");
    assert.equal(snap.output!.record.error?.text, "read: boom");
  });

  test("without a provided dispatcher every call fails (it never hangs)", () => {
    const actor = createActor(toolCallMachine, { input: CALL }).start();
    assert.equal(actor.getSnapshot().value, "failed");
    assert.match(actor.getSnapshot().output!.reply.text, /no tool dispatcher/);
  });

  test("stopping the call (its run ended) stops the dispatcher, which aborts", () => {
    const { actor, dispatch } = startCall();
    dispatch.instances[0]!.validated();
    actor.stop();
    assert.equal(dispatch.instances[0]!.stopped, true);
  });
});

// ---- calls inside runs ----
const TOOLS: ToolSpec[] = [
  { name: "read", python: "read", signature: "read(*, path: str)" },
  { name: "grep", python: "grep", signature: "grep(*, pattern: str)" },
];

function startSystem() {
  const clock = new SimulatedClock();
  clock.set(10_000);
  const kernel = createFakeKernel({ now: () => clock.now() });
  const dispatch = createFakeDispatch(() => clock.now());
  const finished: RunOutcome[] = [];
  const records: NestedCallRecord[] = [];
  const spawned: string[] = [];
  const inspect = (ev: InspectionEvent) => {
    if (ev.type === "@xstate.actor") {
      const id = (ev.actorRef as AnyActorRef).id;
      if (id.startsWith("tool:")) spawned.push(id);
    }
  };
  const actor = createActor(supervisorWith(kernel.logic, { dispatch: dispatch.logic }), {
    id: "supervisor",
    systemId: "supervisor",
    input: { limits: TEST_LIMITS },
    clock,
    inspect,
  });
  actor.on("run.finished", (e) => finished.push(e.outcome));
  actor.on("run.nested_call", (e) => records.push(e.record));
  actor.start();
  const h = {
    actor,
    clock,
    kernel,
    dispatch,
    finished,
    records,
    /** The records of a run's calls, in start order (the host orders them the same way). */
    calls: (runId: string) => records.filter((r) => r.runId === runId).sort((a, b) => a.seq - b.seq),
    spawned,
    start(req: Partial<RunRequest> & { runId: string }) {
      actor.send({ type: "run.start", at: clock.now(), code: "x", cwd: "/w", timeoutMs: 1000, ...req });
    },
    value: (id: string) => (actor.system.get(id)?.getSnapshot() as { value: unknown } | undefined)?.value,
    /** A fresh run with the bridge (null: without one), running. */
    running(
      runId = "r1",
      bridge: RunRequest["bridge"] | null = { callerId: "call_1", tools: TOOLS },
      timeoutMs = 1000,
    ) {
      h.start({ runId, timeoutMs, ...(bridge ? { bridge } : {}) });
      const k = kernel.of(`run:${runId}`);
      clock.increment(10);
      k.ready();
      clock.increment(10);
      k.started(runId);
      assert.equal(h.value(`run:${runId}`), "running");
      return k;
    },
    call(
      k: ReturnType<typeof kernel.of>,
      runId: string,
      callId: string,
      name = "read",
      args: Record<string, unknown> = { path: "a" },
    ) {
      k.send({ type: "kernel.tool_call", at: clock.now(), runId, callId, name, args });
    },
    results(k: ReturnType<typeof kernel.of>) {
      return k.received.filter(
        (c): c is Extract<KernelCommand, { type: "kernel.tool_result" }> => c.type === "kernel.tool_result",
      );
    },
  };
  return h;
}

describe("nested calls in a run", () => {
  test("a call spawns tool:<runId>:<seq> (id and systemId); its end answers the runner and is recorded", () => {
    const h = startSystem();
    const k = h.running();
    const run = k.received.find((c) => c.type === "kernel.run")!;
    assert.deepEqual((run as { tools?: ToolSpec[] }).tools, TOOLS, "the run frame carries the tools");
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
      { type: "kernel.tool_result", runId: "r1", callId: "c1", status: "ok", text: "content" },
    ]);
    assert.equal(h.actor.system.get("tool:r1:1"), undefined, "the ended call is released");
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

  test("Python stopped waiting (kernel.tool_cancel): the call's dispatcher is cancelled", () => {
    const h = startSystem();
    const k = h.running();
    h.call(k, "r1", "c1");
    const d = h.dispatch.of("tool:r1:1");
    d.validated();
    k.send({ type: "kernel.tool_cancel", at: h.clock.now(), runId: "r1", callId: "c1" });
    assert.equal(h.value("tool:r1:1"), "cancelling");
    assert.equal(d.received[0]?.type, "dispatch.cancel");
    d.finish("cancelled");
    assert.equal(h.results(k)[0]!.status, "cancelled");
    assert.equal(h.value("run:r1"), "running", "the run goes on");
  });

  test("the deadline covers calls: interrupting the run cancels open calls; it ends once they report", () => {
    const h = startSystem();
    const k = h.running("r1", { callerId: "call_1", tools: TOOLS }, 1000);
    h.call(k, "r1", "c1");
    const d = h.dispatch.of("tool:r1:1");
    d.validated();
    h.clock.increment(1000); // the deadline
    assert.equal(h.value("run:r1"), "interrupted");
    assert.deepEqual(
      d.received.map((c) => c.type),
      ["dispatch.cancel"],
    );
    h.call(k, "r1", "c2"); // a call from cleanup code after the interrupt: never started
    assert.equal(h.results(k)[0]!.status, "cancelled");
    assert.match(h.results(k)[0]!.text, /being stopped/);
    k.done("r1", { exitCode: 130, error: "interrupt" });
    assert.equal(h.value("run:r1"), "draining", "waits for the open call's after handler");
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
      ],
    );
    assert.equal(h.calls("r1")[0]!.durationMs, 1012);
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

  test("in a session: calls reach the active run through the session, answers reach the session's kernel", () => {
    const h = startSystem();
    h.start({ runId: "s1", session: "s", bridge: { callerId: "call_9", tools: TOOLS } });
    const k = h.kernel.of("session:s");
    h.clock.increment(10);
    k.ready();
    k.started("s1");
    h.call(k, "s1", "c1");
    assert.deepEqual(h.spawned, ["tool:s1:1"]);
    h.dispatch.of("tool:s1:1").finish("succeeded", { text: "hi" });
    assert.deepEqual(h.results(k), [
      { type: "kernel.tool_result", runId: "s1", callId: "c1", status: "ok", text: "hi" },
    ]);
    k.done("s1");
    assert.equal(h.calls("s1")[0]!.parentId, "call_9");
    // The next run of the session brings its own tools (here none): the run frame says so.
    h.start({ runId: "s2", session: "s" });
    const runs = k.received.filter((c) => c.type === "kernel.run") as { tools?: ToolSpec[] }[];
    assert.deepEqual(runs[0]!.tools, TOOLS);
    assert.equal(runs[1]!.tools, undefined);
    assert.equal(KERNEL_INFO.pid > 0, true);
  });
});

describe("a work budget (eval cells): the deadline pauses while a nested call is open", () => {
  test("running -> waiting while a call is open; the deadline moves by the time spent waiting", () => {
    const h = startSystem();
    h.start({ runId: "w1", timeoutMs: 1000, budget: "work", bridge: { callerId: "call_1", tools: TOOLS } });
    const k = h.kernel.of("run:w1");
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
