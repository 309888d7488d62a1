// The SQLite journal: rows after real runs through a real Pi session, `off`, and every way it can fail
// (unwritable, corrupt, locked, better-sqlite3 missing, a newer schema) without a run noticing more than one line.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { afterEach, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { Journal, journalPath } from "../../store/journal.ts";
import { deferredCount, holdResult, MAX_DEFER_MS } from "../../lib/after-results.ts";
import { MIGRATIONS, SCHEMA_VERSION } from "../../store/journal-migrations.ts";
import { EXTENSION_PATH, startPi, textOf, type PiHarness } from "../helpers/pi-session.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const Database = createRequire(import.meta.url)("better-sqlite3");

/** Captures what is written to stderr (where journal notices go without a UI). */
function captureStderr(): { lines: () => string[]; restore: () => void } {
  const original = process.stderr.write.bind(process.stderr);
  const seen: string[] = [];
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    seen.push(String(chunk));
    return original(chunk as never, ...(rest as []));
  }) as typeof process.stderr.write;
  return {
    lines: () =>
      seen
        .join("")
        .split("\n")
        .filter((l) => l.includes("journal")),
    restore: () => void (process.stderr.write = original),
  };
}

let pi: PiHarness | undefined;
afterEach(async () => {
  await pi?.dispose();
  pi = undefined;
});

async function callTool(h: PiHarness, name: string, args: Record<string, string | number>) {
  h.faux.setResponses([
    fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" }),
    fauxAssistantMessage("done"),
  ]);
  await h.session.prompt("go");
  return h.toolResults().at(-1)!;
}

describe("journal location", () => {
  test("PI_CODE_EXECUTION_JOURNAL, off, XDG_DATA_HOME, ~/.local/share", () => {
    assert.equal(journalPath({ PI_CODE_EXECUTION_JOURNAL: "/x/j.sqlite" }), "/x/j.sqlite");
    assert.equal(journalPath({ PI_CODE_EXECUTION_JOURNAL: "off" }), undefined);
    assert.equal(journalPath({ XDG_DATA_HOME: "/data" }), "/data/pi-code-execution/journal.sqlite");
    assert.match(journalPath({ XDG_DATA_HOME: "relative" })!, /\/\.local\/share\/pi-code-execution\/journal\.sqlite$/);
    assert.match(journalPath({})!, /\/\.local\/share\/pi-code-execution\/journal\.sqlite$/);
  });
});

describe("journal rows after real runs in a Pi session", () => {
  test("tool calls, runs and session transitions are recorded", async () => {
    const dir = tempDir("pcs-journal-");
    const path = join(dir, "journal.sqlite");
    process.env.PI_CODE_EXECUTION_JOURNAL = path;
    pi = await startPi();
    const [fresh, started, failed, lost, replaced, reset, invalid] = await pi.callTools([
      { code: "print('hello')" },
      { code: "x = 1", session: "j" },
      { code: "raise ValueError('no')", session: "j" },
      { code: "import os\nos._exit(3)", session: "j" },
      { code: "print('again')", session: "j" },
      { code: "print('fresh')", session: "j", reset: true },
      { code: "1", reset: true },
    ]);
    const big = (await pi.callTools([{ code: "print('y' * 40000)" }]))[0];
    assert.equal(textOf(fresh), "hello\n");
    assert.equal(lost.details.session.isLost, true);
    const outputId = big.details.output.outputId;
    const page = await callTool(pi, "code_execution_output", { outputId, offset: 0, limit: 100 });
    const source = await callTool(pi, "code_execution_source", { sourceId: fresh.details.sourceId });
    const missing = await callTool(pi, "code_execution_output", { outputId: "0123456789ab" });
    assert.equal(missing.isError, true);
    await pi.dispose();
    pi = undefined;

    const db = new Database(path, { readonly: true });
    try {
      assert.equal(db.pragma("journal_mode", { simple: true }), "wal");
      assert.equal(db.pragma("user_version", { simple: true }), SCHEMA_VERSION);
      const calls = db.prepare("SELECT * FROM tool_calls ORDER BY id").all();
      assert.deepEqual(
        calls.map((c: any) => [c.tool, c.outcome]),
        [
          ["code_execution", "ok"],
          ["code_execution", "ok"],
          ["code_execution", "tool_error"],
          ["code_execution", "tool_error"],
          ["code_execution", "ok"],
          ["code_execution", "ok"],
          ["code_execution", "error"],
          ["code_execution", "ok"],
          ["code_execution_output", "ok"],
          ["code_execution_source", "ok"],
          ["code_execution_output", "error"],
        ],
      );
      assert.match(calls[6].error, /`reset` needs `session`/);
      assert.match(calls[10].error, /missing/);
      assert.equal(calls[0].tool_call_id, fresh.toolCallId);
      assert.deepEqual(JSON.parse(calls[0].arguments), { codeBytes: 14 }, "never the script text");
      assert.deepEqual(JSON.parse(calls[8].arguments), { outputId, offset: 0, limit: 100 });
      assert.ok(calls.every((c: any) => c.duration_ms >= 0 && c.finished_at >= c.started_at && c.pi_session_id));
      assert.equal(page.isError, false);
      assert.equal(source.isError, false);

      const runs = db.prepare("SELECT * FROM runs ORDER BY requested_at").all();
      assert.equal(runs.length, 7, "the invalid call never ran");
      const [r0, r1, r2, r3, r4, r5, r6] = runs as any[];
      assert.equal(r0.status, "success");
      assert.equal(r0.source_id, fresh.details.sourceId);
      assert.equal(r0.output_id, null);
      assert.equal(r0.stdout_bytes, 6);
      assert.equal(r0.session_name, null);
      assert.equal(r0.tool_call_id, fresh.toolCallId);
      assert.equal(calls[0].run_id, r0.run_id);
      assert.match(r0.python_version, /^3\.\d+\.\d+$/);
      assert.ok(r0.python_executable.length > 0);
      assert.equal(r0.hint_ids, "[]");
      assert.ok(r0.event_log && existsSync(r0.event_log), "the run points at the event log that recorded it");
      assert.ok(readFileSync(r0.event_log, "utf8").includes(r0.run_id), "and that log holds the run");
      assert.ok(runs.every((r: any) => r.pi_session_id === calls[0].pi_session_id));
      // `session_ordinal` is the run's ordinal within its session process; `session_incarnation` counts processes.
      const sessionColumns = (r: any) => [r.session_ordinal, r.session_incarnation, r.session_started, r.is_lost];
      assert.deepEqual([r1.session_name, ...sessionColumns(r1)], ["j", 1, 1, 1, 0]);
      assert.deepEqual([r2.status, r2.exit_code, ...sessionColumns(r2)], ["runtime_error", 1, 2, 1, 0, 0]);
      assert.deepEqual([r3.status, r3.exit_code, ...sessionColumns(r3)], ["runtime_error", 3, 3, 1, 0, 1]);
      assert.deepEqual(sessionColumns(r4), [1, 2, 1, 0], "a lost session's next process counts runs from 1");
      assert.deepEqual(sessionColumns(r5), [1, 3, 1, 0], "so does a reset one");
      assert.equal(r6.output_id, outputId);
      assert.equal(r6.stdout_bytes, 40001);
      assert.deepEqual(started.details.session, {
        name: "j",
        ordinal: 1,
        incarnation: 1,
        isLost: false,
        state: "started",
      });
      assert.deepEqual(failed.details.session, {
        name: "j",
        ordinal: 2,
        incarnation: 1,
        isLost: false,
        state: "continued",
      });
      assert.deepEqual(lost.details.session, { name: "j", ordinal: 3, incarnation: 1, isLost: true, state: "lost" });
      assert.deepEqual(replaced.details.session, {
        name: "j",
        ordinal: 1,
        incarnation: 2,
        isLost: false,
        state: "started",
      });
      assert.deepEqual(reset.details.session, {
        name: "j",
        ordinal: 1,
        incarnation: 3,
        isLost: false,
        state: "started",
      });
      assert.equal(invalid.isError, true);

      const events = db
        .prepare("SELECT session_name, incarnation, event, detail FROM session_events ORDER BY id")
        .all();
      assert.deepEqual(
        events.map((e: any) => [e.session_name, e.incarnation, e.event]),
        [
          ["j", 1, "started"],
          ["j", 1, "lost"],
          ["j", 2, "started"],
          ["j", 2, "reset"],
          ["j", 3, "started"],
          ["j", 3, "closed"],
        ],
      );
      assert.match((events[2] as any).detail, /replaces a lost process/);
    } finally {
      db.close();
    }
  });
});

describe("the journal of stopped runs", () => {
  test("timeout, then SIGTERM or SIGKILL: status, stop_reason, signal, killed and message", async () => {
    const path = join(tempDir("pcs-journal-"), "journal.sqlite");
    process.env.PI_CODE_EXECUTION_JOURNAL = path;
    pi = await startPi();
    const ignoreInt = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n";
    // 3 s: the code must have ignored SIGINT before the deadline's interrupt comes, and a fresh interpreter's start
    // counts against the timeout (on a loaded machine a 1 s timeout ran out before the first line: exit 130).
    const [term, kill, lost] = await pi.callTools([
      // Ignores the interrupt: the grace runs out and SIGTERM ends it.
      { code: `${ignoreInt}time.sleep(60)`, timeout: 3 },
      // Ignores SIGTERM too: SIGKILL after the kill grace.
      { code: `${ignoreInt}signal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)`, timeout: 3 },
      // A session stopped the same way is lost.
      { code: `${ignoreInt}time.sleep(60)`, timeout: 3, session: "stopped" },
    ]);
    for (const r of [term, kill, lost]) assert.equal(r.isError, true);
    await pi.dispose();
    pi = undefined;
    const db = new Database(path, { readonly: true });
    try {
      const rows = db
        .prepare(
          "SELECT status, stop_reason, signal, killed, message, exit_code, is_lost FROM runs ORDER BY requested_at",
        )
        .all();
      assert.deepEqual(rows, [
        {
          status: "timeout",
          stop_reason: "timeout",
          signal: "SIGTERM",
          killed: 1,
          message: null,
          exit_code: null,
          is_lost: null,
        },
        {
          status: "timeout",
          stop_reason: "timeout",
          signal: "SIGKILL",
          killed: 1,
          message: null,
          exit_code: null,
          is_lost: null,
        },
        {
          status: "timeout",
          stop_reason: "timeout",
          signal: "SIGTERM",
          killed: 1,
          message: null,
          exit_code: null,
          is_lost: 1,
        },
      ]);
    } finally {
      db.close();
    }
  });
});

describe("journal off and journal failures never break a run", () => {
  test("a run's language: python for Python cells and scripts, js for JavaScript cells (with Node's version)", async () => {
    const path = join(tempDir("pcs-journal-lang-"), "journal.sqlite");
    process.env.PI_CODE_EXECUTION_JOURNAL = path;
    process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,eval";
    try {
      pi = await startPi();
    } finally {
      delete process.env.PI_CODE_EXECUTION_TOOLS;
    }
    await pi.callTools([{ code: "1" }]);
    pi.faux.setResponses([
      fauxAssistantMessage(
        [
          fauxToolCall("eval", {
            cells: [
              { language: "js", code: "1 + 1" },
              { language: "py", code: "2 + 2" },
            ],
          }),
        ],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("done"),
    ]);
    await pi.session.prompt("go");
    await pi.dispose();
    pi = undefined;
    const db = new Database(path, { readonly: true });
    try {
      const rows = db
        .prepare("SELECT surface, language, python_version FROM runs ORDER BY requested_at, rowid")
        .all() as { surface: string; language: string; python_version: string }[];
      assert.deepEqual(
        rows.map((r) => [r.surface, r.language]),
        [
          ["code_execution", "python"],
          ["eval", "js"],
          ["eval", "python"],
        ],
      );
      assert.equal(rows[1]!.python_version, process.versions.node, "a js run names the Node runtime's version");
    } finally {
      db.close();
    }
  });

  test("off: nothing is recorded anywhere", async () => {
    const data = tempDir("pcs-xdg-");
    process.env.XDG_DATA_HOME = data;
    process.env.PI_CODE_EXECUTION_JOURNAL = "off";
    const stderr = captureStderr();
    try {
      pi = await startPi();
      const [r] = await pi.callTools([{ code: "print('unrecorded')" }]);
      assert.equal(textOf(r), "unrecorded\n");
      await pi.dispose();
      pi = undefined;
    } finally {
      stderr.restore();
      delete process.env.XDG_DATA_HOME;
    }
    assert.deepEqual(readdirSync(data), []);
    assert.deepEqual(stderr.lines(), []);
  });

  test("unwritable: runs succeed and the user is told once", async () => {
    const blocker = join(tempDir("pcs-journal-"), "a-file");
    writeFileSync(blocker, "not a directory");
    process.env.PI_CODE_EXECUTION_JOURNAL = join(blocker, "journal.sqlite");
    const stderr = captureStderr();
    try {
      pi = await startPi();
      const results = await pi.callTools([{ code: "print(1)" }, { code: "print(2)" }, { code: "print(3)" }]);
      assert.deepEqual(results.map(textOf), ["1\n", "2\n", "3\n"]);
      assert.ok(results.every((r) => !r.isError && !textOf(r).includes("journal")));
      await pi.dispose();
      pi = undefined;
    } finally {
      stderr.restore();
    }
    const notices = stderr.lines();
    assert.equal(notices.length, 1, JSON.stringify(notices));
    assert.match(notices[0], /code_execution journal: .*cannot be used .*runs go on, but are no longer recorded/);
  });

  test("corrupt: one notice, runs succeed", async () => {
    const path = join(tempDir("pcs-journal-"), "journal.sqlite");
    writeFileSync(path, "this is not a database".repeat(400));
    process.env.PI_CODE_EXECUTION_JOURNAL = path;
    const stderr = captureStderr();
    try {
      pi = await startPi();
      const results = await pi.callTools([{ code: "print('a')" }, { code: "print('b')" }]);
      assert.deepEqual(results.map(textOf), ["a\n", "b\n"]);
      await pi.dispose();
      pi = undefined;
    } finally {
      stderr.restore();
    }
    assert.equal(stderr.lines().length, 1);
    assert.match(stderr.lines()[0], /not a database|SQLITE_NOTADB/);
  });
});

describe("the Journal itself", () => {
  const row = (i: number) => ({
    tool: "code_execution",
    startedAt: i,
    finishedAt: i + 1,
    outcome: "ok" as const,
    arguments: { i },
  });

  test("records are written after the current turn, in one batch, and survive reopening", async () => {
    const path = join(tempDir("pcs-journal-"), "sub", "journal.sqlite");
    const j = new Journal(path);
    for (let i = 0; i < 100; i++) j.toolCall(row(i));
    assert.equal(existsSync(path), false, "nothing is written while the caller is still on its turn");
    await j.flush();
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(statSync(join(path, "..")).mode & 0o777, 0o700);
    await j.close();
    const again = new Journal(path);
    again.toolCall(row(100));
    await again.close();
    const db = new Database(path, { readonly: true });
    assert.equal(db.prepare("SELECT count(*) n FROM tool_calls").get().n, 101);
    assert.equal(db.pragma("user_version", { simple: true }), SCHEMA_VERSION);
    db.close();
  });

  test("rows wait while a tool result is pending, after the event log holds them; close() writes them at once", async () => {
    // The wait is bounded (MAX_DEFER_MS): a machine that stalls this process past it has rightly written the row
    // (under stress-ng, five turns once took longer), so an attempt counts only if it ran within the bound.
    let checked = false;
    for (let attempt = 0; attempt < 10 && !checked; attempt++) {
      const path = join(tempDir("pcs-journal-"), "j.sqlite");
      let logWrites = 0;
      const j = new Journal(path, { beforeBatch: async () => void (logWrites += 1) });
      j.toolCall(row(0));
      await j.flush(); // opened: later batches take a millisecond
      const count = () => {
        const db = new Database(path, { readonly: true });
        const n = db.prepare("SELECT count(*) n FROM tool_calls").get().n as number;
        db.close();
        return n;
      };
      const release = holdResult();
      const keep = setTimeout(() => {}, 10_000);
      try {
        const t0 = performance.now();
        j.toolCall(row(1));
        for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
        const waiting = count();
        if (performance.now() - t0 >= MAX_DEFER_MS) continue;
        assert.equal(waiting, 1, "the row waits for the pending result");
        await j.close();
        // The bounded wait would have run every waiting task by now: close() did not wait for it.
        assert.ok(deferredCount() > 0, "close() did not wait for the pending result");
        assert.equal(count(), 2);
        assert.ok(logWrites >= 2, "the event log was asked to hold the rows' runs first");
        checked = true;
      } finally {
        clearTimeout(keep);
        release();
        if (!checked) await j.close();
      }
    }
    assert.ok(checked, `no attempt of ten ran within MAX_DEFER_MS (${MAX_DEFER_MS} ms)`);
  });

  test("a version 2 journal is migrated: its session ordinals were incarnations, and are kept as such", async () => {
    const path = join(tempDir("pcs-journal-"), "j.sqlite");
    const old = new Database(path);
    for (const m of MIGRATIONS.filter((m) => m.version <= 2)) old.exec(m.sql);
    old.pragma("user_version = 2");
    old
      .prepare(
        `INSERT INTO runs (run_id, status, requested_at, finished_at, duration_ms, killed, stdout_bytes, stderr_bytes,
         stdout_truncated, stderr_truncated, session_name, session_ordinal, session_started, is_lost)
       VALUES ('old', 'success', 1, 2, 1, 0, 0, 0, 0, 0, 's', 4, 0, 0), ('fresh', 'success', 1, 2, 1, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL)`,
      )
      .run();
    old.prepare("INSERT INTO session_events (at, session_name, ordinal, event) VALUES (1, 's', 4, 'started')").run();
    old.close();

    const j = new Journal(path);
    j.sessionEvent({ at: 2, sessionName: "s", incarnation: 5, event: "started" });
    await j.close();
    const db = new Database(path, { readonly: true });
    try {
      assert.equal(db.pragma("user_version", { simple: true }), SCHEMA_VERSION);
      const runs = db.prepare("SELECT run_id, session_ordinal, session_incarnation FROM runs ORDER BY run_id").all();
      assert.deepEqual(
        runs.map((r: any) => [r.run_id, r.session_ordinal, r.session_incarnation]),
        [
          ["fresh", null, null],
          ["old", null, 4],
        ],
        "an old row's run ordinal is unknown; its incarnation is what it recorded",
      );
      const events = db.prepare("SELECT incarnation, event FROM session_events ORDER BY id").all();
      assert.deepEqual(
        events.map((e: any) => [e.incarnation, e.event]),
        [
          [4, "started"],
          [5, "started"],
        ],
      );
    } finally {
      db.close();
    }
  });

  test("better-sqlite3 not loadable: one notice, records dropped, nothing throws", async () => {
    const notices: string[] = [];
    const j = new Journal(join(tempDir("pcs-journal-"), "j.sqlite"), {
      onNotice: (m) => notices.push(m),
      load: () => Promise.reject(new Error("Cannot find module 'better-sqlite3'")),
    });
    j.toolCall(row(1));
    await j.flush();
    j.toolCall(row(2));
    await j.flush();
    assert.equal(j.enabled, false);
    assert.equal(notices.length, 1);
    assert.match(notices[0], /better-sqlite3 cannot be loaded \(Cannot find module/);
  });

  test("locked by another process's transaction: the batch is dropped with one notice, later writes succeed", async () => {
    const path = join(tempDir("pcs-journal-"), "j.sqlite");
    const setup = new Journal(path);
    setup.toolCall(row(0));
    await setup.close();
    const holder = new Database(path);
    holder.exec("BEGIN EXCLUSIVE");
    const notices: string[] = [];
    const j = new Journal(path, { onNotice: (m) => notices.push(m) });
    j.toolCall(row(1));
    const t0 = performance.now();
    await j.flush();
    const waited = performance.now() - t0;
    j.toolCall(row(2));
    await j.flush();
    holder.exec("COMMIT");
    holder.close();
    j.toolCall(row(3));
    await j.close();
    assert.equal(notices.length, 1, JSON.stringify(notices));
    assert.match(notices[0], /a write failed \(.*(locked|busy).*\); 1 record\(s\) were dropped/i);
    assert.ok(waited < 2000, `a locked journal waits briefly (${waited.toFixed(0)} ms)`);
    const db = new Database(path, { readonly: true });
    const ids = db
      .prepare("SELECT started_at FROM tool_calls ORDER BY id")
      .all()
      .map((r: any) => r.started_at);
    db.close();
    assert.deepEqual(ids, [0, 3]);
  });

  test("a journal from a newer version is left alone", async () => {
    const path = join(tempDir("pcs-journal-"), "j.sqlite");
    const db = new Database(path);
    db.pragma("user_version = 99");
    db.close();
    const notices: string[] = [];
    const j = new Journal(path, { onNotice: (m) => notices.push(m) });
    j.toolCall(row(1));
    await j.close();
    assert.equal(notices.length, 1);
    assert.match(notices[0], /schema version 99 is newer/);
    const check = new Database(path, { readonly: true });
    assert.equal(check.prepare("SELECT count(*) n FROM sqlite_master WHERE name = 'tool_calls'").get().n, 0);
    check.close();
  });
});

describe("nested calls in the journal", () => {
  test("each nested tool call of a run is a row, in start order, with its status", async () => {
    const dir = tempDir("pcs-journal-nested-");
    const path = join(dir, "journal.sqlite");
    process.env.PI_CODE_EXECUTION_JOURNAL = path;
    pi = await startPi({ extensionPaths: [EXTENSION_PATH, resolve(import.meta.dirname, "../fixtures/pi-tools.ts")] });
    const [r] = await pi.callTools([
      {
        code: "a = await json_info(name='x')\ntry:\n    await fail_tool()\nexcept RuntimeError:\n    pass\na.json()['name']",
      },
    ]);
    assert.equal(textOf(r), "x\n");
    await pi.dispose();
    pi = undefined;
    const db = new Database(path, { readonly: true });
    try {
      const rows = db.prepare("SELECT * FROM nested_calls ORDER BY started_at, id").all() as any[];
      assert.deepEqual(
        rows.map((row) => [row.tool, row.status, row.run_id]),
        [
          ["json_info", "succeeded", r.details.nestedCalls[0].runId],
          ["fail_tool", "failed", r.details.nestedCalls[0].runId],
        ],
      );
      assert.ok(rows.every((row) => row.duration_ms >= 0 && row.finished_at >= row.started_at));
    } finally {
      db.close();
    }
  });
});
