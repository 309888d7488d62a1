// One session's completion wake (machines/exec-wake-entry.ts), one `describe` per state, under the real supervisor
// with a scripted shell and a simulated clock: a completion reaches the model through a finalized result or one
// prompt, never both, never twice; set_on_exit's answers in each state.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { startExec } from "../helpers/fake-shell.ts";
import { wakeEntryMachine } from "../../machines/exec-wake-entry.ts";
import { undescribedStates } from "../helpers/machine-states.ts";

describe("running", () => {
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
});

describe("held", () => {
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

describe("set_on_exit answers (running, held, delivering)", () => {
  test("armed, already_armed, disarmed, already_none, too_late, not found", () => {
    const h = startExec();
    h.running(1);
    assert.deepEqual(
      [h.setOnExit(1, "wake"), h.setOnExit(1, "wake"), h.setOnExit(1, "none"), h.setOnExit(1, "none")].map(
        (a) => a.status,
      ),
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

describe("the definition", () => {
  test("every state is described, under the machine's id", () => {
    assert.equal(wakeEntryMachine.id, "wake-entry");
    assert.deepEqual(undescribedStates(wakeEntryMachine), []);
  });
});
