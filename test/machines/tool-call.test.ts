// The nested tool-call machine (machines/tool-call.ts) on its own, one `describe` per state, with a scripted dispatch
// actor and a SimulatedClock. Calls inside runs (the run's side, machines/run-calls.ts) are in
// test/machines/run.test.ts ("running", "finished and draining") and test/machines/session.test.ts ("running").
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { SimulatedClock, createActor } from "xstate";
import { toolCallMachine } from "../../machines/tool-call.ts";
import { undescribedStates } from "../helpers/machine-states.ts";
import { CALL, createFakeDispatch } from "../helpers/fake-dispatch.ts";

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

describe("validating", () => {
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
});

describe("running", () => {
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
});

describe("stopped with its run", () => {
  test("stopping the call (its run ended) stops the dispatcher, which aborts", () => {
    const { actor, dispatch } = startCall();
    dispatch.instances[0]!.validated();
    actor.stop();
    assert.equal(dispatch.instances[0]!.stopped, true);
  });
});

describe("the definition", () => {
  test("every state is described, under the machine's id", () => {
    assert.equal(toolCallMachine.id, "toolCall");
    assert.deepEqual(undescribedStates(toolCallMachine), []);
  });
});
