// The wake coordinator (machines/exec-wake.ts), one `describe` per state, under the real supervisor with a scripted
// shell and a simulated clock: due completions are collected for a debounce, delivered as one prompt, and a failed
// delivery is retried when Pi's agent settles.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { startExec } from "../helpers/fake-shell.ts";
import { wakeMachine } from "../../machines/exec-wake.ts";
import { undescribedStates } from "../helpers/machine-states.ts";

describe("collecting", () => {
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
      {
        id: 1,
        command: "cmd 1",
        cwd: "/w",
        startedAt: 0,
        logPath: "/logs/1.log",
        exitedAt: 100,
        code: 2,
        signal: null,
      },
    ]);
    h.send({ type: "exec.wake_delivered", at: 0, batch: w.batch });
    assert.equal(h.wakeState(1), undefined, "the entry is done");
    assert.equal(h.coordinator(), "idle");
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
});

describe("delivering", () => {
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
});

describe("retrying", () => {
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
});

describe("the definition", () => {
  test("every state is described, under the machine's id", () => {
    assert.equal(wakeMachine.id, "wake");
    assert.deepEqual(undescribedStates(wakeMachine), []);
  });
});

describe("delivering: stale answers and withdrawals", () => {
  const wakeContext = (h: ReturnType<typeof startExec>) =>
    h.actor.system.get("exec:wake")!.getSnapshot().context as { entries: number[]; leases: Record<string, number[]> };

  test("an answer for an earlier batch does not settle the current one", () => {
    const h = startExec();
    h.running(1, "wake");
    h.closed(1, 0);
    h.advance(250);
    const first = h.wakes()[0].batch;
    h.send({ type: "exec.wake_failed", at: 0, batch: first, message: "busy" });
    h.send({ type: "exec.agent_settled", at: 0 });
    assert.equal(h.coordinator(), "delivering");
    h.send({ type: "exec.wake_delivered", at: 0, batch: first });
    assert.equal(h.coordinator(), "delivering", "the stale answer is ignored");
    assert.equal(h.wakeState(1)?.value, "delivering");
    h.send({ type: "exec.wake_delivered", at: 0, batch: h.wakes()[1].batch });
    assert.equal(h.coordinator(), "idle");
  });

  test("a completion observed while another prompt is on its way is withdrawn from the next", () => {
    const h = startExec();
    h.running(1, "wake");
    h.running(2, "wake");
    h.closed(1, 0);
    h.advance(250);
    h.closed(2, 0);
    h.send({ type: "exec.observe", at: 0, id: 2, callId: "w2" });
    h.send({ type: "exec.wake_delivered", at: 0, batch: h.wakes()[0].batch });
    assert.equal(h.coordinator(), "idle");
    h.advance(1000);
    assert.equal(h.wakes().length, 1);
  });

  test("withdrawing one of two due completions keeps the other's prompt", () => {
    const h = startExec();
    h.running(1, "wake");
    h.running(2, "wake");
    h.closed(1, 0);
    h.closed(2, 0);
    h.send({ type: "exec.observe", at: 0, id: 1, callId: "w1" });
    assert.equal(h.coordinator(), "collecting");
    h.advance(250);
    assert.deepEqual(
      h.wakes().map((w) => w.notices.map((n) => n.id)),
      [[2]],
    );
  });

  test("a withdrawal while retrying: the last one out leaves nothing to retry", () => {
    const h = startExec();
    h.running(1, "wake");
    h.closed(1, 0);
    h.advance(250);
    h.send({ type: "exec.wake_failed", at: 0, batch: h.wakes()[0].batch, message: "busy" });
    h.send({ type: "exec.observe", at: 0, id: 1, callId: "w1" });
    assert.equal(h.coordinator(), "idle");
    h.send({ type: "exec.agent_settled", at: 0 });
    assert.equal(h.wakes().length, 1);
  });

  test("finished entries and finalized calls leave the coordinator's books", () => {
    const h = startExec();
    h.running(1, "wake");
    assert.deepEqual(wakeContext(h).leases["start-1"], [1], "its starting call's lease");
    h.send({ type: "exec.observe", at: 0, id: 1, callId: "w1" });
    assert.deepEqual(wakeContext(h).leases.w1, [1]);
    h.closed(1, 0);
    h.send({ type: "exec.forget", at: 0, id: 1, callId: "w1" });
    h.send({ type: "exec.finalize", at: 0, callId: "w1", ok: true });
    assert.equal(wakeContext(h).leases.w1, undefined);
    assert.deepEqual(wakeContext(h).entries, []);
    assert.equal(h.actor.system.get("exec:wake")!.getSnapshot().children["wake:1"], undefined);
  });
});

describe("stopped", () => {
  test("Pi's shutdown: every entry ends, a due completion is dropped, nothing is sent", () => {
    const h = startExec();
    h.running(1, "wake");
    h.running(2, "wake");
    h.closed(1, 0);
    h.send({ type: "exec.shutdown", at: 0 });
    assert.equal(h.coordinator(), "stopped");
    assert.deepEqual([h.wakeState(1), h.wakeState(2)], [undefined, undefined]);
    h.closed(2, null, "SIGTERM");
    h.advance(5000);
    assert.equal(h.wakes().length, 0);
  });
});
