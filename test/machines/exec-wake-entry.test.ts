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

// The `armed` each answer reports, and the flag it leaves behind, state by state.
describe("set_on_exit answers: the armed flag they report and leave", () => {
  const answer = (h: ReturnType<typeof startExec>, id: number, onExit: "none" | "wake") => {
    const a = h.setOnExit(id, onExit);
    return [a.status, a.armed];
  };

  test("running: armed true after wake, false after none", () => {
    const h = startExec();
    h.running(1);
    assert.deepEqual(answer(h, 1, "wake"), ["armed", true]);
    assert.deepEqual(answer(h, 1, "none"), ["disarmed", false]);
  });

  test("held: wake is too late (not armed); none disarms, and the exit then passes quietly", () => {
    const h = startExec();
    h.running(1, "wake");
    h.send({ type: "exec.observe", at: 0, id: 1, callId: "w1" });
    h.closed(1, 0);
    assert.equal(h.wakeState(1)?.value, "held");
    assert.deepEqual(answer(h, 1, "wake"), ["too_late", false]);
    assert.deepEqual(answer(h, 1, "none"), ["disarmed", false]);
    assert.equal(h.wakeState(1)?.armed, false);
    h.send({ type: "exec.release", at: 0, id: 1, callId: "w1" });
    h.advance(1000);
    assert.equal(h.wakes().length, 0, "disarmed while held: no prompt when the observer leaves");
  });

  test("due: wake is already armed; none disarms, withdraws it and ends the entry", () => {
    const h = startExec();
    h.running(1, "wake");
    h.closed(1, 0);
    assert.equal(h.wakeState(1)?.value, "due");
    assert.deepEqual(answer(h, 1, "wake"), ["already_armed", true]);
    assert.deepEqual(answer(h, 1, "none"), ["disarmed", false]);
    assert.equal(h.wakeState(1), undefined, "quiet: the entry is done");
    assert.equal(h.coordinator(), "idle", "the last due completion withdrawn: nothing waits");
    h.advance(1000);
    assert.equal(h.wakes().length, 0);
  });

  test("delivering: both answers say it stays armed", () => {
    const h = startExec();
    h.running(1, "wake");
    h.closed(1, 0);
    h.advance(250);
    assert.deepEqual(answer(h, 1, "wake"), ["already_armed", true]);
    assert.deepEqual(answer(h, 1, "none"), ["too_late", true]);
  });
});

describe("held: leases", () => {
  test("two observers: the exit waits for the last one to leave, then wakes", () => {
    const h = startExec();
    h.running(1, "wake");
    h.send({ type: "exec.observe", at: 0, id: 1, callId: "w1" });
    h.closed(1, 0);
    h.send({ type: "exec.observe", at: 0, id: 1, callId: "w2" });
    h.send({ type: "exec.release", at: 0, id: 1, callId: "w1" });
    assert.equal(h.wakeState(1)?.value, "held", "w2 still observes");
    h.send({ type: "exec.release", at: 0, id: 1, callId: "w2" });
    assert.equal(h.wakeState(1)?.value, "due");
    h.advance(250);
    assert.equal(h.wakes().length, 1);
  });

  test("a call finalized while the process runs holds no lease: the later exit wakes", () => {
    const h = startExec();
    h.running(1, "wake");
    h.send({ type: "exec.observe", at: 0, id: 1, callId: "w1" });
    h.send({ type: "exec.finalize", at: 0, callId: "w1", ok: true });
    h.closed(1, 0);
    assert.equal(h.wakeState(1)?.value, "due");
  });
});

describe("due", () => {
  test("observed while due: held by that call, withdrawn from the prompt", () => {
    const h = startExec();
    h.running(1, "wake");
    h.closed(1, 0);
    h.send({ type: "exec.observe", at: 0, id: 1, callId: "w1" });
    assert.equal(h.wakeState(1)?.value, "held");
    assert.equal(h.coordinator(), "idle");
    h.advance(1000);
    assert.equal(h.wakes().length, 0);
  });

  test("a failed start's wake carries the failure", () => {
    const h = startExec();
    h.start(1);
    h.setOnExit(1, "wake");
    h.send({ type: "exec.release", at: 0, id: 1, callId: "start-1" });
    h.shells.get(1)!.send({ type: "shell.spawn_failed", at: 0, message: "ENOENT" });
    h.advance(250);
    assert.equal(h.wakes()[0]?.notices[0]?.failure, "ENOENT");
  });
});

describe("ended", () => {
  test("a killed session's entry ends with its exit; Pi's shutdown ends every entry", () => {
    const h = startExec();
    h.running(1, "wake");
    h.running(2, "wake");
    h.send({ type: "exec.kill", at: 0, id: 1, signal: "SIGTERM" });
    h.closed(1, null, "SIGTERM");
    assert.equal(h.wakeState(1), undefined);
    h.send({ type: "exec.shutdown", at: 0 });
    assert.equal(h.wakeState(2), undefined);
    assert.equal(h.coordinator(), "stopped");
  });
});
