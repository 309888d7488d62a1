// A shell session's stdin on the host side (actors/shell/session-io.ts), with a real `cat`: bytes written while the
// process is still being spawned are held and reach it, in order, once it starts (a loaded machine can take longer
// to spawn than a start call's window, and write_stdin then came back with "the process has not started").
import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import { describe, test } from "node:test";
import { SessionIO } from "../../../actors/shell/session-io.ts";
import { spawnLocalChild } from "../../../actors/process/children.ts";
import { fail } from "../../../lib/result.ts";
import { waitUntil } from "../../helpers/procs.ts";

const catHandle = async () => {
  const started = await spawnLocalChild({ file: "cat", args: [], cwd: tmpdir(), env: process.env, purpose: "shell" });
  assert.ok(started.ok, JSON.stringify(started));
  return started.value;
};

describe("stdin before the process started", () => {
  test("is held and delivered in order once it starts; later input goes straight through", async () => {
    const io = new SessionIO(1, fail("no log in this test"));
    assert.deepEqual(io.input(Buffer.from("one\n")), { ok: true, value: undefined });
    assert.deepEqual(io.input(Buffer.from("two\n")), { ok: true, value: undefined });
    const handle = await catHandle();
    const out: Buffer[] = [];
    const closed = new Promise((resolve) => handle.onClose(resolve));
    handle.onData((chunk) => out.push(chunk));
    io.started(handle);
    assert.ok(io.input(Buffer.from("three\n")).ok);
    assert.ok(io.input(Buffer.from([])).ok);
    const text = () => Buffer.concat(out).toString();
    assert.ok(await waitUntil(() => text().includes("three\n"), 30_000), text());
    handle.signalGroup("SIGTERM");
    await closed;
    assert.equal(text(), "one\ntwo\nthree\n");
    assert.equal(io.takeHeldFailure(), undefined);
  });

  test("held input of a process that never started is said to be lost, once, with the reason", () => {
    const io = new SessionIO(3, fail("no log in this test"));
    assert.ok(io.input(Buffer.from("one\n")).ok);
    assert.ok(io.input(Buffer.from("two\n")).ok);
    io.finish({ end: "failed", at: 0, code: null, signal: null, failure: "spawn bash ENOENT" });
    assert.equal(
      io.takeHeldFailure(),
      "8 bytes of input written before the process started were not delivered: it never started (spawn bash ENOENT)",
    );
    assert.equal(io.takeHeldFailure(), undefined, "said once");
  });

  test("control: after the process exited, input is refused with the reason", async () => {
    const io = new SessionIO(2, fail("no log in this test"));
    io.finish({ end: "exited", at: 0, code: 0, signal: null });
    const r = io.input(Buffer.from("late\n"));
    assert.equal(r.ok, false);
    assert.match(!r.ok ? r.error : "", /has exited; the bytes were not delivered/);
  });
});
