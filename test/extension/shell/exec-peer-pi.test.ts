// What a pi-unified-exec user meets that its description spells out beyond the tools' shapes (issue 27), through a
// real Pi session driven by the scripted faux model: a start that cannot happen reported in the result, the
// `failure:` line beside `failure_message`, the 5 s minimum of an empty poll, Esc ending a wait but not the process,
// and PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS. The tools' envelopes, wakes and limits are
// test/extension/shell/exec-pi.test.ts's.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { startPi, textOf, type PiHarness, type ToolResultMessage } from "../../helpers/pi-session.ts";
import { pidAlive, waitUntil } from "../../helpers/procs.ts";
import { disposePiWithShells, header, one, startPiWithShells, turns } from "../../helpers/exec-pi.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

let pi: PiHarness;
before(async () => (pi = await startPiWithShells()));
after(() => disposePiWithShells(pi));

describe("a start that cannot happen", () => {
  test("spawn failures: a missing workdir or shell is reported in the result (failure_message), not thrown", async () => {
    const notShell = join(pi.cwd, "not-a-shell");
    writeFileSync(notShell, "plain text\n", { mode: 0o644 });
    const [a, b, c] = await turns(pi, [
      [["exec_command", { cmd: "true", workdir: "/no/such/dir" }]],
      [["exec_command", { cmd: "true", shell: "no-such-shell" }]],
      [["exec_command", { cmd: "true", shell: notShell }]],
    ]);
    for (const r of [a, b, c]) {
      assert.equal(r.isError, false, textOf(r));
      const lines = header(r).split("\n");
      assert.deepEqual(lines.slice(0, 2), ["[exited]", "exit_code: -1"]);
      assert.match(lines[2], /^failure: /);
      assert.equal(r.details.status, "exited");
      assert.equal(r.details.exit_code, -1);
      assert.equal(r.details.session_id, undefined);
      assert.equal(r.details.log_path, undefined, "nothing started, nothing logged");
      assert.ok(textOf(r).endsWith("\n---\n(no output)"));
    }
    assert.equal(header(a).split("\n")[2], "failure: workdir /no/such/dir does not exist.");
    assert.equal(a.details.failure_message, "workdir /no/such/dir does not exist.");
    assert.match(b.details.failure_message, /shell "no-such-shell" was not found on PATH/);
    assert.equal(c.details.failure_message, `shell ${notShell} is not an executable file.`);
    const [l] = await turns(pi, [[["list_sessions", {}]]]);
    assert.ok(!l.details.sessions.some((s: any) => s.command === "true"), "no session was registered");
  });
});

describe("pi-unified-exec's waits, failures and variables", () => {
  test("an empty poll waits at least 5 s (yield_time_ms 0 included); an exit still ends it early", async () => {
    const [s, q] = await turns(pi, [
      [
        ["exec_command", { cmd: "sleep 30", yield_time_ms: 250 }],
        ["exec_command", { cmd: "sleep 1", yield_time_ms: 250 }],
      ],
    ]);
    const [p, e] = await turns(pi, [
      [
        ["write_stdin", { session_id: s.details.session_id, yield_time_ms: 0 }],
        ["write_stdin", { session_id: q.details.session_id, yield_time_ms: 0 }],
      ],
    ]);
    assert.equal(p.details.running, true);
    assert.equal(p.details.yield_time_ms, 5000);
    assert.equal(p.details.wait_status, "relative_deadline_reached");
    assert.ok(p.details.effective_wait_ms >= 5000, String(p.details.effective_wait_ms));
    assert.equal(e.details.running, false, "the exit ends the wait");
    assert.equal(e.details.wait_status, "completed");
    assert.ok(e.details.wall_time_seconds < p.details.wall_time_seconds);
    await one(pi, "kill_session", { session_id: s.details.session_id });
  });

  test("Esc during an empty poll: wait_status cancelled, the process lives on, its output waits for the next call", async () => {
    const [s] = await turns(pi, [[["exec_command", { cmd: "sleep 0.3; echo LATER; sleep 30", yield_time_ms: 250 }]]]);
    const id = s.details.session_id;
    const before = pi.toolResults().length;
    pi.faux.setResponses([
      fauxAssistantMessage([fauxToolCall("write_stdin", { session_id: id, yield_time_ms: 20_000 } as never)], {
        stopReason: "toolUse",
      }),
      fauxAssistantMessage("done"),
    ]);
    const started = pi.events.length;
    const run = pi.session.prompt("go");
    // Esc once the poll is attached and the output it would return has arrived.
    assert.ok(
      await waitUntil(
        () =>
          pi.events.slice(started).some((e) => e.type === "tool_execution_update" && /LATER/.test(JSON.stringify(e))),
        10_000,
      ),
    );
    await pi.session.abort();
    await run;
    const cancelled = pi.toolResults()[before];
    assert.ok(cancelled, "the cancelled call has a result");
    assert.equal(cancelled.details?.wait_status, "cancelled", textOf(cancelled));
    assert.equal(cancelled.details.running, true);
    // Its output arrived, so its pid is known here (the start's window may have ended before the spawn).
    assert.ok(pidAlive(cancelled.details.pid), "Esc does not kill the process");
    const [next] = await turns(pi, [[["write_stdin", { session_id: id, chars: "\\n" }]]]);
    assert.match(next.details.output, /LATER/, "the output the cancelled call did not show");
    await one(pi, "kill_session", { session_id: id });
  });

  test("a write the process cannot take: the text says failure:, details say failure_message", async () => {
    const [s] = await turns(pi, [[["exec_command", { cmd: "exec 0<&-; echo closed; sleep 30", yield_time_ms: 500 }]]]);
    assert.equal(s.details.running, true, textOf(s));
    let w: ToolResultMessage | undefined;
    // The first write may be taken by the pipe before the broken pipe is known: write until one is refused.
    for (let i = 0; i < 5 && !w?.details.failure_message; i++)
      [w] = await turns(pi, [[["write_stdin", { session_id: s.details.session_id, chars: "x\\n" }]]]);
    assert.match(w!.details.failure_message, /^stdin write failed: /);
    assert.equal(w!.isError, false);
    const lines = header(w!).split("\n");
    assert.deepEqual(lines.slice(0, 2), ["[still running]", `session_id: ${s.details.session_id}`]);
    assert.equal(lines[2], `failure: ${w!.details.failure_message}`);
    assert.ok(!lines.some((l) => l.startsWith("failure_message:")));
    await one(pi, "kill_session", { session_id: s.details.session_id });
  });

  test("PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS caps relative empty polls (below 5 s it is 5 s); yield_until is not capped", async () => {
    process.env.PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS = "6000.7";
    const h = await startPi();
    try {
      const [s] = await turns(h, [[["exec_command", { cmd: "sleep 30", yield_time_ms: 250 }]]]);
      const id = s.details.session_id;
      const [over, under, until] = await turns(h, [
        [["write_stdin", { session_id: id, yield_time_ms: 6001 }]],
        [["write_stdin", { session_id: id }]],
        [["write_stdin", { session_id: id, yield_until: "2020-01-01T00:00:00Z" }]],
      ]);
      assert.equal(over.isError, true);
      assert.match(
        textOf(over),
        /yield_time_ms 6001 exceeds the configured empty-poll cap of 6000 ms .*tool_time_utc: \d{4}-/,
      );
      assert.equal(under.isError, false);
      assert.equal(under.details.yield_time_ms, 5000);
      assert.equal(until.isError, false);
    } finally {
      await h.dispose();
      process.env.PI_CODING_AGENT_DIR = pi.agentDir;
    }
    process.env.PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS = "1";
    const low = await startPi();
    try {
      const [s] = await turns(low, [[["exec_command", { cmd: "sleep 30", yield_time_ms: 250 }]]]);
      const [over] = await turns(low, [[["write_stdin", { session_id: s.details.session_id, yield_time_ms: 5001 }]]]);
      assert.match(textOf(over), /exceeds the configured empty-poll cap of 5000 ms/);
    } finally {
      await low.dispose();
      process.env.PI_CODING_AGENT_DIR = pi.agentDir;
    }
    process.env.PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS = "soon";
    const bad = await startPi();
    try {
      const [s] = await turns(bad, [[["exec_command", { cmd: "sleep 30", yield_time_ms: 250 }]]]);
      const id = s.details.session_id;
      const [relative, until] = await turns(bad, [
        [["write_stdin", { session_id: id }]],
        [["write_stdin", { session_id: id, yield_until: "2020-01-01T00:00:00Z" }]],
      ]);
      assert.equal(relative.isError, true, "a malformed cap fails the poll rather than silently lifting it");
      assert.match(
        textOf(relative),
        /empty-poll cap is misconfigured.*PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS: execMaxEmptyPollMs must be a positive number/s,
      );
      assert.equal(until.isError, false);
    } finally {
      await bad.dispose();
      process.env.PI_CODING_AGENT_DIR = pi.agentDir;
    }
    // A malformed variable over a cap the global settings file gives: that cap holds, nothing fails.
    const agent = tempDir("pcs-agent-");
    mkdirSync(join(agent, "pi-code-execution"), { recursive: true });
    writeFileSync(join(agent, "pi-code-execution", "settings.json"), JSON.stringify({ execMaxEmptyPollMs: 6000 }));
    const held = await startPi({ agentDirEnv: agent });
    try {
      const [s] = await turns(held, [[["exec_command", { cmd: "sleep 30", yield_time_ms: 250 }]]]);
      const [over] = await turns(held, [[["write_stdin", { session_id: s.details.session_id, yield_time_ms: 6001 }]]]);
      assert.match(textOf(over), /exceeds the configured empty-poll cap of 6000 ms/);
    } finally {
      await held.dispose();
      delete process.env.PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS;
      process.env.PI_CODING_AGENT_DIR = pi.agentDir;
    }
  });
});
