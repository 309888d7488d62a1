// The unified-exec surface through a real Pi session driven by the scripted faux model: the five tools, their text
// envelopes, details and structuredContent, a dev server across calls, a Python REPL in a PTY, binary input, a
// 5 MiB burst, wakes (once, never, batched), LRU eviction, bash leaving the active set, shutdown with nothing left,
// and the session's event log replaying exactly. One file, past 400 lines: the cases share one Pi session and its
// event log, which the last test replays whole. What pi-unified-exec's description adds is
// test/extension/shell/exec-peer-pi.test.ts.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startPi, textOf, type PiHarness, type ToolResultMessage } from "../../helpers/pi-session.ts";
import { pidAlive, waitUntil } from "../../helpers/procs.ts";
import {
  disposePiWithShells,
  header,
  livePids,
  one,
  startPiWithShells,
  turns,
  type Call,
} from "../../helpers/exec-pi.ts";
import { scriptedUI } from "../../helpers/scripted-ui.ts";
import { replayFile } from "../../../record/replay.ts";
import { PYTHON } from "../../helpers/pythons.ts";

let pi: PiHarness;
before(async () => (pi = await startPiWithShells()));
after(() => disposePiWithShells(pi));

function wakes(h: PiHarness): { content: string; details: any }[] {
  return (h.session.messages as any[])
    .filter((m) => m.role === "custom" && m.customType === "exec-wake")
    .map((m) => ({
      content: typeof m.content === "string" ? m.content : JSON.stringify(m.content),
      details: m.details,
    }));
}

describe("registration", () => {
  test("the five tools are active and bash is not", () => {
    const active = pi.session.getActiveToolNames();
    for (const t of ["exec_command", "write_stdin", "kill_session", "list_sessions", "set_on_exit"])
      assert.ok(active.includes(t), t);
    assert.ok(!active.includes("bash"));
    assert.ok(active.includes("code_execution"));
  });

  test("--keep-builtin-bash keeps bash; without exec the tools are off", async () => {
    const kept = await startPi({ flags: { "keep-builtin-bash": true } });
    try {
      assert.ok(kept.session.getActiveToolNames().includes("bash"));
      assert.ok(kept.session.getActiveToolNames().includes("exec_command"));
    } finally {
      await kept.dispose();
    }
    process.env.PI_CODE_EXECUTION_TOOLS = "code_execution";
    const off = await startPi();
    process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,exec";
    try {
      assert.ok(!off.session.getActiveToolNames().includes("exec_command"));
      assert.ok(off.session.getActiveToolNames().includes("bash"));
    } finally {
      await off.dispose();
      // Each harness points PI_CODING_AGENT_DIR at its own folder: back to the shared session's.
      process.env.PI_CODING_AGENT_DIR = pi.agentDir;
    }
  });
});

describe("exec_command", () => {
  test("exits inside its window: the envelope, details and structuredContent", async () => {
    const r = await one(pi, "exec_command", { cmd: "printf 'a\\033[31mred\\033[0m\\n'; exit 4", yield_time_ms: 5000 });
    assert.equal(r.isError, false);
    const text = textOf(r);
    const lines = header(r).split("\n");
    assert.equal(lines[0], "[exited]");
    assert.equal(lines[1], "exit_code: 4");
    for (const field of [
      "log_path:",
      "cwd:",
      "wall_time_seconds:",
      "chunk_id:",
      "original_token_count:",
      "output_bytes_total: 14",
      "tty: false",
    ])
      assert.ok(
        lines.some((l) => l.startsWith(field)),
        field,
      );
    assert.ok(text.endsWith("\n---\nared\n"), JSON.stringify(text));
    assert.equal(r.details.status, "exited");
    assert.equal(r.details.running, false);
    assert.equal(r.details.exit_code, 4);
    assert.equal(r.details.truncated, false);
    assert.equal(r.details.output, "ared\n");
    assert.equal(readFileSync(r.details.log_path, "utf8"), "a\x1b[31mred\x1b[0m\n", "the log keeps the raw stream");
    assert.ok(r.details.log_path.startsWith(join(pi.agentDir, "pi-code-supervisor", "exec-logs")));
    const sc =
      (r as any).structuredContent ??
      pi.events.find((e) => e.type === "tool_execution_end" && e.toolCallId === r.toolCallId)?.result
        ?.structuredContent;
    assert.deepEqual(
      sc && {
        status: sc.status,
        running: sc.running,
        exit_code: sc.exit_code,
        output: sc.output,
        truncated: sc.truncated,
      },
      {
        status: "exited",
        running: false,
        exit_code: 4,
        output: "ared\n",
        truncated: false,
      },
    );
  });

  test("bad input: errors the model can act on", async () => {
    const [c] = await turns(pi, [[["exec_command", { cmd: "   " }]]]);
    assert.equal(c.isError, true);
    assert.match(textOf(c), /non-empty/);
  });

  test("a long output: the tail, the footer, the complete log", async () => {
    const r = await one(pi, "exec_command", { cmd: "seq 1 100000", yield_time_ms: 10_000 });
    assert.equal(r.details.truncated, true);
    assert.match(textOf(r), /\n\n\[Showing lines 98001-100000 of 100000\. Full output: .*\.log\]$/);
    assert.equal(readFileSync(r.details.log_path, "utf8").split("\n").length, 100001);
  });
});

describe("driving sessions across calls", () => {
  test("a dev server: started, queried, polled, killed", async () => {
    const port = await freePort();
    const server = `${PYTHON} -u -m http.server ${port} --bind 127.0.0.1`;
    const [s] = await turns(pi, [[["exec_command", { cmd: server, yield_time_ms: 1500 }]]]);
    assert.equal(s.details.running, true, textOf(s));
    assert.match(header(s), /^\[still running\]\nsession_id: \d+/);
    const id = s.details.session_id;
    const [get, poll] = await turns(pi, [
      [
        [
          "exec_command",
          { cmd: `curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:${port}/`, yield_time_ms: 5000 },
        ],
      ],
      [["write_stdin", { session_id: id, yield_time_ms: 1000 }]],
    ]);
    assert.equal(textOf(get).split("\n---\n")[1], "200");
    assert.match(poll.details.output, /GET \/ HTTP\/1\.1" 200/);
    assert.equal(poll.details.wait_mode, "relative");
    assert.equal(poll.details.wait_status, "relative_deadline_reached");
    const [kill] = await turns(pi, [[["kill_session", { session_id: id, signal: "int" }]]]);
    assert.equal(kill.details.killed, true);
    assert.equal(kill.details.status, "killed");
    assert.match(header(kill), /^\[killed\]\nsession_id: \d+\npid: \d+\nrequested_signal: SIGINT/);
    // The kill's result has the pid; the start's may not (a spawn that outlasted its window).
    assert.ok(!pidAlive(kill.details.pid));
  });

  test("a Python REPL in a PTY: \\r submits, ^C interrupts", async () => {
    const [s] = await turns(pi, [[["exec_command", { cmd: `${PYTHON} -q`, tty: true, yield_time_ms: 1500 }]]]);
    assert.equal(s.details.tty, true);
    const id = s.details.session_id;
    const [calc, sleep, ctrlc, bye] = await turns(pi, [
      [["write_stdin", { session_id: id, chars: "print(7*6)\\r", yield_time_ms: 1500 }]],
      [["write_stdin", { session_id: id, chars: "import time; time.sleep(60)\\r", yield_time_ms: 300 }]],
      [["write_stdin", { session_id: id, chars: "\\x03", yield_time_ms: 1500 }]],
      [["write_stdin", { session_id: id, chars: "exit()\\r", yield_time_ms: 3000 }]],
    ]);
    assert.match(calc.details.output, /42\n>>> /);
    assert.equal(sleep.details.running, true);
    assert.match(ctrlc.details.output, /KeyboardInterrupt/);
    assert.equal(bye.details.running, false);
    assert.equal(bye.details.exit_code, 0);
  });

  test("chars_b64 arrives byte for byte; both inputs at once is an error", async () => {
    const file = join(pi.cwd, "bytes.bin");
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => 255 - i));
    const [s] = await turns(pi, [[["exec_command", { cmd: `cat > ${file}`, yield_time_ms: 250 }]]]);
    const id = s.details.session_id;
    const [w, both, eof] = await turns(pi, [
      [["write_stdin", { session_id: id, chars_b64: bytes.toString("base64") }]],
      [["write_stdin", { session_id: id, chars: "x", chars_b64: "eA==" }]],
      [["kill_session", { session_id: id }]],
    ]);
    assert.equal(w.isError, false);
    assert.equal(both.isError, true);
    assert.match(textOf(both), /either chars or chars_b64/);
    assert.equal(eof.details.killed, true);
    assert.deepEqual(readFileSync(file), bytes);
  });

  test("a 5 MiB burst between polls: the omission marker, the complete log", async () => {
    const [s] = await turns(pi, [
      [
        [
          "exec_command",
          { cmd: "sleep 0.5; head -c 5242880 /dev/zero | tr '\\0' x; echo; echo END", yield_time_ms: 250 },
        ],
      ],
    ]);
    const [p] = await turns(pi, [[["write_stdin", { session_id: s.details.session_id, yield_time_ms: 10_000 }]]]);
    assert.equal(p.details.running, false);
    assert.equal(p.details.omitted_bytes, 5242885 - 1048576);
    assert.match(header(p), new RegExp(`\\nomitted_bytes: ${5242885 - 1048576}\\n`));
    assert.ok(p.details.output.endsWith("END"), JSON.stringify(p.details.output.slice(-20)));
    assert.equal(p.details.truncated, true);
    assert.match(textOf(p), /\[Showing .*Full output: .*\.log\]$/);
    // The log has every byte; the window's marker (at the exact cut) is tested in test/actors/shell/exec-host.test.ts.
    assert.equal(statSync(p.details.log_path).size, 5242885);
    assert.match(readFileSync(p.details.log_path, "latin1").slice(-5), /\nEND\n/);
  });

  test("yield_until: strict RFC 3339 UTC, past deadlines poll at once", async () => {
    const [s] = await turns(pi, [[["exec_command", { cmd: "sleep 30", yield_time_ms: 250 }]]]);
    const id = s.details.session_id;
    const [bad, impossible, mixed, past] = await turns(pi, [
      [["write_stdin", { session_id: id, yield_until: "2026-07-21T18:30:00+00:00" }]],
      [["write_stdin", { session_id: id, yield_until: "2026-02-30T00:00:00Z" }]],
      [["write_stdin", { session_id: id, yield_until: "2099-01-01T00:00:00Z", yield_time_ms: 10 }]],
      [["write_stdin", { session_id: id, yield_until: "2020-01-01T00:00:00Z" }]],
    ]);
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), /RFC 3339 UTC.*tool_time_utc: \d{4}-/s);
    assert.match(textOf(impossible), /not a real date/);
    assert.match(textOf(mixed), /either yield_time_ms or yield_until/);
    assert.equal(past.isError, false);
    assert.equal(past.details.wait_mode, "absolute");
    assert.equal(past.details.wait_status, "absolute_deadline_reached");
    assert.equal(past.details.yield_until, "2020-01-01T00:00:00.000Z");
    await one(pi, "kill_session", { session_id: id });
  });

  test("kill_session normalizes signals and rejects unknown ones; unknown ids", async () => {
    const [s] = await turns(pi, [[["exec_command", { cmd: "sleep 30", yield_time_ms: 250 }]]]);
    const [bad, none, term] = await turns(pi, [
      [["kill_session", { session_id: s.details.session_id, signal: "SIGFOO" }]],
      [["kill_session", { session_id: 99999 }]],
      [["kill_session", { session_id: s.details.session_id, signal: "term" }]],
    ]);
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), /Unknown signal "SIGFOO"/);
    assert.equal(none.details.found, false);
    assert.match(textOf(none), /No such session: 99999/);
    assert.equal(term.details.requested_signal, "SIGTERM");
    assert.equal(term.details.signal, "SIGTERM");
  });

  test("list_sessions: live ones, exited ones once, wake_armed, tool_time_utc", async () => {
    const [a, b] = await turns(pi, [
      [["exec_command", { cmd: "sleep 30", yield_time_ms: 250, on_exit: "wake" }]],
      [["exec_command", { cmd: "sleep 0.4", yield_time_ms: 250 }]],
    ]);
    await new Promise((r) => setTimeout(r, 600));
    const [l1, l2] = await turns(pi, [[["list_sessions", {}]], [["list_sessions", {}]]]);
    const e1 = l1.details.sessions.find((s: any) => s.session_id === b.details.session_id);
    assert.equal(e1.running, false);
    assert.equal(e1.exit_code, 0);
    assert.ok(
      !l2.details.sessions.some((s: any) => s.session_id === b.details.session_id),
      "reported once, then pruned",
    );
    const live = l2.details.sessions.find((s: any) => s.session_id === a.details.session_id);
    assert.equal(live.wake_armed, true);
    assert.equal(live.running, true);
    assert.ok(live.pid > 0 && live.log_path && live.cwd === pi.cwd && live.tty === false);
    assert.match(textOf(l2), /\[wake\]/);
    assert.match(textOf(l2), /\ntool_time_utc: \d{4}-\d\d-\d\dT/);
    assert.equal(typeof l2.details.tool_time_utc, "string");
    await one(pi, "kill_session", { session_id: a.details.session_id });
  });
});

describe("wake exactly once", () => {
  test("an unobserved exit: one follow-up prompt with metadata, never output", async () => {
    const before = wakes(pi).length;
    // It exits when the test says so, once the call has returned (`sleep 0.4` could end inside a loaded window).
    const go = join(pi.cwd, "unobserved-exit");
    const cmd = `printf 'SEC%sRET\\n' X; while [ ! -e ${go} ]; do sleep 0.02; done; exit 3`;
    const [s] = await turns(pi, [[["exec_command", { cmd, yield_time_ms: 250, on_exit: "wake" }]]], 1);
    assert.match(header(s), /completion_notification: armed/);
    writeFileSync(go, "");
    assert.ok(await waitUntil(() => wakes(pi).length === before + 1, 5000));
    await idle(pi);
    const w = wakes(pi)[before];
    assert.match(w.content, new RegExp(`session_id=${s.details.session_id} \\| exit_code=3`));
    assert.match(w.content, /log_path: /);
    assert.doesNotMatch(w.content, /SECXRET/);
    await new Promise((r) => setTimeout(r, 700));
    assert.equal(wakes(pi).length, before + 1);
  });

  test("observed by write_stdin: no prompt; after the poll's deadline: one", async () => {
    const before = wakes(pi).length;
    // It exits on the line the poll writes, so the poll is attached when it exits (a `sleep 0.4` could end inside a
    // loaded window or between the two calls).
    const [s] = await turns(pi, [[["exec_command", { cmd: "read -r _", yield_time_ms: 250, on_exit: "wake" }]]]);
    assert.equal(s.details.running, true);
    const [p] = await turns(pi, [
      [["write_stdin", { session_id: s.details.session_id, chars: "\\n", yield_time_ms: 5000 }]],
    ]);
    assert.equal(p.details.running, false);
    assert.equal(p.details.on_exit_wake, "consumed");
    await new Promise((r) => setTimeout(r, 800));
    assert.equal(wakes(pi).length, before);

    // An empty poll waits at least 5 s: the process outlives that wait.
    const [t] = await turns(pi, [[["exec_command", { cmd: "sleep 7", yield_time_ms: 250, on_exit: "wake" }]]]);
    const [q] = await turns(pi, [[["write_stdin", { session_id: t.details.session_id, yield_time_ms: 250 }]]], 1);
    assert.equal(q.details.running, true);
    assert.equal(q.details.completion_notification, "armed");
    assert.ok(await waitUntil(() => wakes(pi).length === before + 1, 15_000));
    await idle(pi);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(wakes(pi).length, before + 1);
  });

  test("none after kill_session or set_on_exit none", async () => {
    const before = wakes(pi).length;
    // b exits when the test says so, after it was disarmed (`sleep 0.5` could end before the set_on_exit turns).
    const go = join(pi.cwd, "disarmed-exit");
    const [a, b] = await turns(pi, [
      [["exec_command", { cmd: "sleep 30", yield_time_ms: 250, on_exit: "wake" }]],
      [["exec_command", { cmd: `while [ ! -e ${go} ]; do sleep 0.02; done`, yield_time_ms: 250, on_exit: "wake" }]],
    ]);
    const [k, off, again] = await turns(pi, [
      [["kill_session", { session_id: a.details.session_id }]],
      [["set_on_exit", { session_id: b.details.session_id, on_exit: "none" }]],
      [["set_on_exit", { session_id: b.details.session_id, on_exit: "none" }]],
    ]);
    assert.equal(k.details.killed, true);
    assert.equal(off.details.status, "disarmed");
    assert.match(textOf(off), /→ disarmed \(process still running\); wake not armed/);
    assert.equal(again.details.status, "already_none");
    const [bPid] = await livePids(pi, [b.details.session_id]);
    writeFileSync(go, "");
    assert.ok(await waitUntil(() => !pidAlive(bPid), 5000), "b exited");
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal(wakes(pi).length, before);
    const [unknown] = await turns(pi, [[["set_on_exit", { session_id: 424242, on_exit: "wake" }]]]);
    assert.equal(unknown.details.found, false);
  });

  test("three simultaneous exits: one batched prompt", async () => {
    const before = wakes(pi).length;
    const started = await turns(pi, [
      [
        ["exec_command", { cmd: "sleep 600", yield_time_ms: 250, on_exit: "wake" }],
        ["exec_command", { cmd: "sleep 600", yield_time_ms: 250, on_exit: "wake" }],
        ["exec_command", { cmd: "sleep 600", yield_time_ms: 250, on_exit: "wake" }],
      ],
    ]);
    assert.ok(started.every((r) => r.details.running));
    // Ended together by the test (three signals in one step), not by three shells each polling a file: on a loaded
    // machine those woke more than the 250 ms debounce apart, which is two prompts by design.
    const pids = await livePids(
      pi,
      started.map((r) => r.details.session_id),
    );
    for (const pid of pids) process.kill(pid, "SIGKILL");
    assert.ok(await waitUntil(() => wakes(pi).length > before, 5000));
    await idle(pi);
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(wakes(pi).length, before + 1);
    const ids = wakes(pi)
      [before].details.sessions.map((s: any) => s.id)
      .sort();
    assert.deepEqual(ids, started.map((r) => r.details.session_id).sort());
  });
});

describe("limits and shutdown", () => {
  test("LRU eviction at 64: exited first, then the least recently used; the 8 most recent are protected", async () => {
    const ui = scriptedUI();
    const h = await startPi({ uiContext: ui.ui });
    try {
      // Session 39 exits when the test says so (a file appears), not after a time the machine may not keep.
      const go = join(h.cwd, "lru-exit");
      const calls: Call[] = Array.from({ length: 64 }, (_, i) => [
        "exec_command",
        { cmd: i === 39 ? `while [ ! -e ${go} ]; do sleep 0.02; done` : "sleep 60", yield_time_ms: 250 },
      ]);
      const first = await turns(h, [calls]);
      assert.equal(first.length, 64);
      assert.ok(
        first.every((r) => r.details.running),
        "all backgrounded",
      );
      const ids = first.map((r) => r.details.session_id as number);
      // Every process spawned (a session still starting is never evicted), with its pid; nothing has exited yet.
      const pids = await livePids(h, ids);
      writeFileSync(go, "");
      // The footer counts live sessions: 63 once the pool saw session 39 end (no call observed it).
      const footer = () =>
        ui.statuses
          .get("code-execution")
          ?.split(" │ ")
          .find((p) => p.startsWith("unified-exec: "));
      assert.ok(
        await waitUntil(() => footer() === "unified-exec: 63 sessions running", 60_000),
        `session 39 exited: ${footer()}`,
      );
      const exitedId = ids[39];
      // Use the oldest one again: it becomes the most recently used.
      const [touch, s65] = await turns(h, [
        [["write_stdin", { session_id: ids[0], chars: "\\n" }]],
        [["exec_command", { cmd: "sleep 60", yield_time_ms: 250 }]],
      ]);
      assert.equal(touch.details.running, true);
      const [list1] = await turns(h, [[["list_sessions", {}]]]);
      const present = (l: ToolResultMessage) => new Set(l.details.sessions.map((s: any) => s.session_id));
      assert.ok(!present(list1).has(exitedId), "the exited session went first");
      assert.ok(present(list1).has(ids[0]) && present(list1).has(ids[1]));
      const [s66] = await turns(h, [[["exec_command", { cmd: "sleep 60", yield_time_ms: 250 }]]]);
      // The evicted session is stopping, and listed and counted as running, until its process is gone (a loaded
      // machine can take longer than the next call, and the stop has a grace before SIGKILL): the footer counting it
      // out is that fact, then its process is gone too (no clock of the test's own decides how long a stop may take).
      assert.ok(
        await waitUntil(() => footer() === "unified-exec: 64 sessions running", 60_000),
        `the evicted session left: ${footer()}`,
      );
      assert.ok(await waitUntil(() => !pidAlive(pids[1]), 60_000), "the evicted process is stopped");
      const [list2] = await turns(h, [[["list_sessions", {}]]]);
      assert.ok(present(list2).has(ids[0]), "recently used: protected");
      assert.ok(!present(list2).has(ids[1]), "the least recently used live session was evicted");
      assert.deepEqual(
        ui.notices.filter((n) => n.text.includes("evicted")).map((n) => n.text),
        [exitedId, ids[1]].map((id) => `unified-exec: evicted session ${id} (LRU, over cap 64)`),
      );
      assert.ok(present(list2).has(s65.details.session_id) && present(list2).has(s66.details.session_id));
      assert.equal(list2.details.active_count, 64);
    } finally {
      await h.dispose();
    }
  });

  test("shutdown leaves no process behind", async () => {
    const h = await startPi();
    const rs = await turns(h, [
      [
        ["exec_command", { cmd: "sleep 60", yield_time_ms: 250 }],
        ["exec_command", { cmd: "trap '' TERM; sleep 60 & wait", yield_time_ms: 250 }],
        ["exec_command", { cmd: `${PYTHON} -q`, tty: true, yield_time_ms: 500 }],
      ],
    ]);
    // A session whose process has not been spawned yet when its window ends (a loaded machine: 250 ms is short)
    // has no pid in its result: livePids waits for list_sessions to show each.
    const pgids = await livePids(
      h,
      rs.map((r) => r.details.session_id as number),
    );
    assert.ok(
      pgids.every((p) => pidAlive(p)),
      `pids ${pgids.join(", ")}`,
    );
    await h.dispose();
    assert.ok(await waitUntil(() => pgids.every((g) => groupMembers(g).length === 0), 3000), "groups left");
  });

  test("the Pi session's event log replays exactly", async () => {
    const h = await startPi();
    const [s] = await turns(h, [
      [["exec_command", { cmd: "echo one; sleep 0.3; echo two", yield_time_ms: 250, on_exit: "wake" }]],
    ]);
    await turns(h, [[["write_stdin", { session_id: s.details.session_id, yield_time_ms: 3000 }]]]);
    await turns(h, [
      [["exec_command", { cmd: "sleep 30", yield_time_ms: 250 }]],
      [["kill_session", { session_id: s.details.session_id + 1 }]],
    ]);
    await h.dispose();
    const dir = join(h.agentDir, "pi-code-supervisor", "logs");
    const logs = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".jsonl")) : [];
    assert.equal(logs.length, 1, `logs: ${logs.join(", ")}`);
    const text = readFileSync(join(dir, logs[0]), "utf8");
    assert.match(text, /"exec:1"/);
    assert.match(text, /"exec.start"/);
    const report = replayFile(join(dir, logs[0]));
    assert.equal(report.identical, true, JSON.stringify(report.divergence ?? report.error));
  });
});

async function idle(h: PiHarness): Promise<void> {
  await waitUntil(() => !(h.session as any).isStreaming, 5000);
}

function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid && fields[0] !== "Z") out.push(Number(e));
    } catch {
      // gone
    }
  }
  return out;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe("codemode scripts", () => {
  test("every exec tool resolves to its structuredContent object", async () => {
    const { createCodemodeExtension } = await import("@earendil-works/pi-coding-agent");
    const h = await startPi({ extensionFactories: [createCodemodeExtension()] });
    try {
      h.session.setActiveToolsByName([...h.session.getActiveToolNames(), "codemode"]);
      const code = [
        "const r = await tools.exec_command({ cmd: 'echo hi; exit 2' });",
        "const s = await tools.exec_command({ cmd: 'sleep 30', yield_time_ms: 250 });",
        "const w = await tools.write_stdin({ session_id: s.session_id, chars: '\\\\n' });",
        "const o = await tools.set_on_exit({ session_id: s.session_id, on_exit: 'wake' });",
        "const l = await tools.list_sessions({});",
        "const k = await tools.kill_session({ session_id: s.session_id });",
        "text(JSON.stringify({ r, running: s.running, id: s.session_id, w: w.status, o: o.status, n: l.sessions.length, k: k.status }));",
      ].join("\n");
      const [res] = await turns(h, [[["codemode", { code }]]]);
      const json = /\{"r":.*\}/.exec(textOf(res))?.[0];
      assert.ok(json, textOf(res));
      const got = JSON.parse(json!);
      assert.equal(got.r.status, "exited");
      assert.equal(got.r.exit_code, 2);
      assert.equal(got.r.output, "hi\n");
      assert.equal(got.r.running, false);
      assert.equal(typeof got.r.wall_time_seconds, "number");
      assert.equal(got.running, true);
      assert.equal(got.w, "running");
      assert.equal(got.o, "armed");
      assert.equal(got.n, 1);
      assert.equal(got.k, "killed");
    } finally {
      await h.dispose();
    }
  });
});
