// The exec tools' results as pi-unified-exec shapes them (extension/shell/envelope.ts), field by field: what `details`
// holds for each way a session can be found (running, exited, failed, held open, woken, killed, not found), the text
// envelope the model reads, and the structured object codemode scripts get. Through Pi, test/extension/shell/exec-*.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { KillReport, ProcessReport } from "../../../host/index.ts";
import {
  HELD_NOTE,
  killDetails,
  killStructured,
  killText,
  processDetails,
  processStructured,
  processText,
} from "../../../extension/shell/envelope.ts";

const NOW = Date.UTC(2026, 11, 4, 6, 30, 0, 0);
const UTC = "2026-12-04T06:30:00.000Z";
const bytes = (s: string) => new TextEncoder().encode(s);

function report(over: Partial<ProcessReport> = {}): ProcessReport {
  return {
    id: 7,
    running: true,
    held: false,
    output: bytes("hello\n"),
    omittedBytes: 0,
    totalBytes: 6,
    command: "echo hello",
    cwd: "/work",
    tty: false,
    wallMs: 1234.4,
    wait: "deadline",
    armed: false,
    consumedWake: false,
    ...over,
  };
}
const exited = (end: Partial<NonNullable<ProcessReport["end"]>> = {}, over: Partial<ProcessReport> = {}) =>
  report({ running: false, wait: "exit", end: { end: "exited", at: 0, code: 0, signal: null, ...end }, ...over });

/** `details` without its random chunk id, which is checked once to be 6 hex digits. */
function withoutChunk<T extends { chunk_id?: string }>(d: T): Omit<T, "chunk_id"> {
  assert.match(d.chunk_id ?? "", /^[0-9a-f]{6}$/);
  const { chunk_id: _c, ...rest } = d;
  return rest;
}

describe("processDetails", () => {
  test("a running session: its id, the wait it reached, the timing and the output fields", () => {
    const d = processDetails(
      "exec_command",
      report({ pid: 4242, logPath: "/logs/7.log", omittedBytes: 3, totalBytes: 9 }),
      { waitMode: "relative", yieldTimeMs: 1000, onExit: "none" },
      NOW,
    );
    assert.deepEqual(withoutChunk(d), {
      operation: "exec_command",
      status: "running",
      running: true,
      session_id: 7,
      wait_mode: "relative",
      wait_status: "relative_deadline_reached",
      effective_wait_ms: 1234,
      yield_time_ms: 1000,
      tool_time_utc: UTC,
      log_path: "/logs/7.log",
      cwd: "/work",
      command: "echo hello",
      pid: 4242,
      wall_time_seconds: 1.234,
      original_token_count: 2,
      output_bytes_total: 9,
      omitted_bytes: 3,
      tty: false,
      output: "hello\n",
      truncated: false,
      on_exit: "none",
    });
  });

  test("an exited session: its code and signal, no id, no wait left; a held one says nothing of holding", () => {
    const d = processDetails("write_stdin", exited({ code: 2, signal: "SIGTERM" }, { held: true, tty: true }), {}, NOW);
    assert.deepEqual(withoutChunk(d), {
      operation: "write_stdin",
      status: "exited",
      running: false,
      exit_code: 2,
      signal: "SIGTERM",
      tool_time_utc: UTC,
      cwd: "/work",
      command: "echo hello",
      wall_time_seconds: 1.234,
      original_token_count: 2,
      output_bytes_total: 6,
      tty: true,
      output: "hello\n",
      truncated: false,
    });
  });

  test("a shell that failed to run: exit code -1 and the failure on one line", () => {
    const d = processDetails(
      "exec_command",
      exited({ end: "failed", code: null, failure: "spawn sh\nENOENT" }),
      {},
      NOW,
    );
    assert.equal(d.exit_code, -1);
    assert.equal(d.failure_message, "spawn sh ENOENT");
    assert.equal(d.signal, undefined);
  });

  test("a refused write is the failure when the session has not ended", () => {
    const d = processDetails("write_stdin", report({ writeFailure: "stdin  is\tclosed" }), {}, NOW);
    assert.equal(d.failure_message, "stdin is closed");
    assert.equal(d.exit_code, undefined);
  });

  test("a running shell whose output a background process holds open says so; a log problem joins the note", () => {
    const d = processDetails(
      "exec_command",
      report({ held: true, logProblem: "the log could not be written" }),
      {},
      NOW,
    );
    assert.equal(d.note, `${HELD_NOTE} the log could not be written`);
    assert.equal(processDetails("exec_command", report({ logProblem: "no log" }), {}, NOW).note, "no log");
    assert.equal("note" in processDetails("exec_command", report(), {}, NOW), false);
  });

  test("the wait's status: completed once exited, cancelled, or the deadline of its mode; yield_until only absolute", () => {
    const until = "2026-12-04T06:31:00.000Z";
    const absolute = processDetails("write_stdin", report(), { waitMode: "absolute", yieldUntil: until }, NOW);
    assert.deepEqual(
      [absolute.wait_mode, absolute.wait_status, absolute.yield_until, absolute.effective_wait_ms],
      ["absolute", "absolute_deadline_reached", until, 1234],
    );
    const relative = processDetails("write_stdin", report(), { waitMode: "relative", yieldUntil: until }, NOW);
    assert.equal("yield_until" in relative, false);
    const cancelled = processDetails("write_stdin", report({ wait: "cancelled" }), { waitMode: "relative" }, NOW);
    assert.equal(cancelled.wait_status, "cancelled");
    const done = processDetails("write_stdin", exited(), { waitMode: "absolute", yieldUntil: until }, NOW);
    assert.deepEqual([done.wait_status, "effective_wait_ms" in done], ["completed", false]);
    const none = processDetails("write_stdin", report(), {}, NOW);
    assert.equal("wait_mode" in none || "wait_status" in none || "yield_time_ms" in none, false);
  });

  test("on_exit: armed while running; delivered directly when the exit came back here; else as asked", () => {
    const armed = processDetails("exec_command", report({ armed: true }), { onExit: "wake" }, NOW);
    assert.deepEqual(
      [armed.on_exit, armed.completion_notification, armed.completion_delivery],
      ["wake", "armed", undefined],
    );
    const consumed = processDetails("write_stdin", exited({}, { consumedWake: true }), {}, NOW);
    assert.deepEqual(
      [consumed.on_exit, consumed.completion_delivery, consumed.on_exit_wake, consumed.completion_notification],
      ["wake", "direct", "consumed", undefined],
    );
    const wanted = processDetails("exec_command", exited(), { onExit: "wake", wantedWake: true }, NOW);
    assert.deepEqual([wanted.on_exit, wanted.completion_delivery, "on_exit_wake" in wanted], ["wake", "direct", false]);
    const asked = processDetails("exec_command", exited(), { onExit: "wake" }, NOW);
    assert.deepEqual([asked.on_exit, "completion_delivery" in asked], ["wake", false]);
    const runningAsked = processDetails("exec_command", report({ consumedWake: true }), { onExit: "none" }, NOW);
    assert.deepEqual([runningAsked.on_exit, "completion_delivery" in runningAsked], ["none", false]);
    assert.equal("on_exit" in processDetails("exec_command", report(), {}, NOW), false);
  });

  test("output past the model's window is truncated with a footer naming the log", () => {
    const lines = Array.from({ length: 3000 }, (_, i) => `line ${i + 1}`).join("\n");
    const d = processDetails("exec_command", exited({}, { output: bytes(lines), logPath: "/logs/7.log" }), {}, NOW);
    assert.equal(d.truncated, true);
    assert.match(d.truncation_note ?? "", /^\[Showing lines \d+-3000 of 3000.*Full output: \/logs\/7\.log\]$/);
    assert.equal(d.original_token_count, Math.ceil(lines.length / 4));
  });
});

describe("processText", () => {
  test("every field in pi-unified-exec's order, then `---` and the output", () => {
    const d = processDetails(
      "exec_command",
      report({ held: true, armed: true, logPath: "/logs/7.log", omittedBytes: 5, totalBytes: 11, tty: true }),
      { waitMode: "absolute", yieldUntil: "2026-12-04T06:31:00.000Z", onExit: "wake" },
      NOW,
    );
    assert.equal(
      processText({ ...d, chunk_id: "abc123" }),
      [
        "[still running]",
        "session_id: 7",
        `note: ${HELD_NOTE}`,
        "wait_mode: absolute",
        "wait_status: absolute_deadline_reached",
        "yield_until: 2026-12-04T06:31:00.000Z",
        "effective_wait_ms: 1234",
        "on_exit: wake",
        "completion_notification: armed",
        `tool_time_utc: ${UTC}`,
        "log_path: /logs/7.log",
        "cwd: /work",
        "wall_time_seconds: 1.234",
        "chunk_id: abc123",
        "original_token_count: 2",
        "output_bytes_total: 11",
        "omitted_bytes: 5",
        "tty: true",
        "---",
        "hello\n",
      ].join("\n"),
    );
  });

  test("a session ended by a signal alone has no exit code; one without on_exit has no on_exit line", () => {
    const d = processDetails("exec_command", exited({ code: null, signal: "SIGKILL" }), {}, NOW);
    assert.equal("exit_code" in d, false);
    assert.equal(d.signal, "SIGKILL");
    const text = processText(d);
    assert.match(text, /^\[exited\]\nsignal: SIGKILL\ntool_time_utc: /);
    assert.doesNotMatch(text, /exit_code|on_exit/);
  });

  test("the held note, word for word (it tells the model how to detach a job)", () => {
    assert.equal(
      HELD_NOTE,
      "the shell has exited, but a background process it started still holds the output open, so the session stays " +
        "open until that process exits. To detach such a job, redirect it: `(cd dir && cmd >log 2>&1 </dev/null) &` or " +
        "`setsid cmd >log 2>&1 </dev/null &`; or end the session with kill_session.",
    );
  });

  test("an exited session's code, signal, failure and direct delivery; no output is said so", () => {
    const d = processDetails(
      "write_stdin",
      exited({ code: 1, signal: "SIGHUP", failure: "gone" }, { output: bytes(""), consumedWake: true }),
      {},
      NOW,
    );
    assert.equal(
      processText({ ...d, chunk_id: "abc123", wall_time_seconds: 2 }),
      [
        "[exited]",
        "exit_code: 1",
        "signal: SIGHUP",
        "failure: gone",
        "on_exit: wake",
        "completion_delivery: direct",
        "on_exit_wake: consumed",
        `tool_time_utc: ${UTC}`,
        "cwd: /work",
        "wall_time_seconds: 2.000",
        "chunk_id: abc123",
        "original_token_count: 0",
        "output_bytes_total: 6",
        "tty: false",
        "---",
        "(no output)",
      ].join("\n"),
    );
  });

  test("a truncated output ends with its footer after a blank line; a multi-line note is one line", () => {
    const d = processDetails("exec_command", report(), {}, NOW);
    const text = processText({ ...d, note: "a\nb", truncation_note: "[Showing lines 2-3 of 3]" });
    assert.match(text, /\nnote: a b\n/);
    assert.ok(text.endsWith("---\nhello\n\n\n[Showing lines 2-3 of 3]"), text);
  });
});

describe("processStructured", () => {
  test("what codemode gets: the status and output, and each optional field only when set", () => {
    const running = processDetails(
      "exec_command",
      report({ held: true }),
      { waitMode: "relative", onExit: "none" },
      NOW,
    );
    assert.deepEqual(processStructured(running), {
      status: "running",
      running: true,
      output: "hello\n",
      truncated: false,
      session_id: 7,
      wall_time_seconds: 1.234,
      note: HELD_NOTE,
      wait_status: "relative_deadline_reached",
      on_exit: "none",
      tool_time_utc: UTC,
    });
    const ended = processDetails(
      "exec_command",
      exited({ code: 3, signal: "SIGINT", failure: "broken" }, { logPath: "/l" }),
      {},
      NOW,
    );
    assert.deepEqual(processStructured(ended), {
      status: "exited",
      running: false,
      output: "hello\n",
      truncated: false,
      exit_code: 3,
      signal: "SIGINT",
      failure_message: "broken",
      log_path: "/l",
      wall_time_seconds: 1.234,
      tool_time_utc: UTC,
    });
  });
});

describe("kill_session", () => {
  const kill = (over: Partial<KillReport> = {}): KillReport => {
    const { wait: _w, consumedWake: _c, ...base } = report({ running: false });
    return {
      ...base,
      signal: "SIGTERM",
      killed: true,
      escalated: false,
      alreadyExited: false,
      alreadyStopping: false,
      ...over,
    };
  };

  test("no such session: not found, said in two lines", () => {
    const d = killDetails(9, "SIGINT", undefined, NOW);
    assert.deepEqual(d, {
      operation: "kill_session",
      status: "not_found",
      found: false,
      running: false,
      killed: false,
      escalated: false,
      session_id: 9,
      requested_signal: "SIGINT",
      wall_time_seconds: 0,
      output: "",
      truncated: false,
      tool_time_utc: UTC,
    });
    assert.equal(killText(d), `No such session: 9\ntool_time_utc: ${UTC}`);
  });

  test("killed: its end, and every field of the envelope", () => {
    const d = killDetails(
      7,
      "SIGTERM",
      kill({ pid: 4242, logPath: "/logs/7.log", end: { end: "killed", at: 0, code: null, signal: "SIGTERM" } }),
      NOW,
    );
    assert.deepEqual(withoutChunk(d), {
      operation: "kill_session",
      status: "killed",
      found: true,
      running: false,
      killed: true,
      escalated: false,
      session_id: 7,
      requested_signal: "SIGTERM",
      pid: 4242,
      signal: "SIGTERM",
      log_path: "/logs/7.log",
      cwd: "/work",
      command: "echo hello",
      wall_time_seconds: 1.234,
      original_token_count: 2,
      output_bytes_total: 6,
      tty: false,
      output: "hello\n",
      truncated: false,
      tool_time_utc: UTC,
    });
    assert.equal(
      killText({ ...d, chunk_id: "abc123" }),
      [
        "[killed]",
        "session_id: 7",
        "pid: 4242",
        "requested_signal: SIGTERM",
        "killed: true",
        "running: false",
        "escalated: false",
        "signal: SIGTERM",
        `tool_time_utc: ${UTC}`,
        "log_path: /logs/7.log",
        "cwd: /work",
        "wall_time_seconds: 1.234",
        "chunk_id: abc123",
        "original_token_count: 2",
        "output_bytes_total: 6",
        "tty: false",
        "---",
        "hello\n",
      ].join("\n"),
    );
    assert.deepEqual(killStructured(d), {
      status: "killed",
      found: true,
      running: false,
      killed: true,
      escalated: false,
      session_id: 7,
      requested_signal: "SIGTERM",
      pid: 4242,
      signal: "SIGTERM",
      log_path: "/logs/7.log",
      wall_time_seconds: 1.234,
      output_bytes_total: 6,
      tty: false,
      output: "hello\n",
      truncated: false,
      tool_time_utc: UTC,
    });
  });

  test("already exited: its exit code and its own failure, if any", () => {
    const d = killDetails(
      7,
      "SIGTERM",
      kill({
        killed: false,
        alreadyExited: true,
        omittedBytes: 4,
        end: { end: "exited", at: 0, code: 0, signal: null, failure: "x" },
      }),
      NOW,
    );
    assert.deepEqual([d.status, d.exit_code, d.failure_message, d.omitted_bytes], ["already_exited", 0, "x", 4]);
    const text = killText(d);
    assert.match(text, /^\[exited\]\n/);
    assert.match(text, /\nexit_code: 0\nfailure: x\n/);
    assert.match(text, /\nomitted_bytes: 4\n/);
  });

  test("a kill that failed: still running, after the signal (and SIGKILL when it escalated), why, and what to do", () => {
    const d = killDetails(7, "SIGTERM", kill({ killed: false, running: true, escalated: true, failure: "EPERM" }), NOW);
    assert.equal(d.status, "kill_failed");
    assert.equal(
      d.failure_message,
      "the process is still running after SIGTERM and SIGKILL: EPERM; the session stays open (retry kill_session, or check what holds its output)",
    );
    assert.match(killText(d), /^\[kill failed\]\n[\s\S]*\nrunning: true\nescalated: true\nfailure: the process/);
    const plain = killDetails(7, "SIGINT", kill({ killed: false, running: true }), NOW);
    assert.match(plain.failure_message ?? "", /^the process is still running after SIGINT: it did not exit; /);
  });

  test("a session whose pid was never known has no pid field", () => {
    const { pid: _p, ...noPid } = kill({ pid: 99 });
    assert.equal(killDetails(7, "SIGTERM", kill({ pid: 99 }), NOW).pid, 99);
    assert.equal("pid" in killDetails(7, "SIGTERM", noPid as KillReport, NOW), false);
  });

  test("a killed session's envelope leaves out what it lacks", () => {
    const { cwd: _cwd, tty: _tty, ...lean } = killDetails(7, "SIGKILL", kill(), NOW);
    const text = killText({
      ...lean,
      chunk_id: undefined,
      original_token_count: undefined,
      output_bytes_total: undefined,
    } as never);
    assert.doesNotMatch(
      text,
      /\n(cwd|tty|chunk_id|original_token_count|output_bytes_total|pid|exit_code|signal|failure|log_path):/,
    );
  });
});
