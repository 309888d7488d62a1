// Recording and deterministic replay: committed fixtures from real runs replay identical, an altered log reports
// its first divergence, fresh recordings (real Python, a real Pi session) replay identical, and logs rotate and
// stay bounded.
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import { SupervisorHost } from "../../host/host.ts";
import { pruneLogDir, DEFAULT_LOG_LIMITS } from "../../record/log-files.ts";
import { SystemObserver } from "../../record/observe.ts";
import { Recorder } from "../../record/recorder.ts";
import { holdResult } from "../../lib/after-results.ts";
import { formatReport, parseLog, replayFile, replayRecords } from "../../record/replay.ts";
import { canonical, eventLine, traceOf, TraceEncoder, type InputRecord } from "../../record/trace.ts";
import { assign, createActor, fromCallback, sendTo, setup } from "xstate";
import { PI_TOOLS, FAULT_FIXTURE_DIR, FIXTURE_DIR, recordScenario } from "../../scripts/record-fixtures.ts";
import { startPi } from "../helpers/pi-session.ts";
import { phasesOf } from "../helpers/fake-runner.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const REQUIRED = [
  "shell-sessions",
  "interrupt-keeps-state",
  "swallowed-interrupt-lost",
  "os-exit-lost",
  "reset",
  "fresh-runs",
  "js-session",
];
const fixture = (name: string) => join(FIXTURE_DIR, `${name}.jsonl`);
/** A log's records whole (a v3 record pointing at a value the log holds gets it back: record/log-codec.ts). */
const records = (path: string): any[] => {
  const parsed = parseLog(readFileSync(path, "utf8"));
  assert.equal(parsed.error, undefined);
  return parsed.lines.map((l) => l.record);
};

/** The distinct consecutive states one actor went through, as recorded (a session's is its phase: `phasesOf`). */
/** A v3 log's header line (record/trace.ts), started at `at`. */
function v3Header(at: number): string {
  return JSON.stringify({
    k: "header",
    format: "pi-code-supervisor.log",
    v: 3,
    segment: 0,
    pid: 1,
    startedAt: at,
    versions: {},
  });
}

function statesOf(path: string, actor: string): string[] {
  let context: Record<string, unknown> = {};
  return phasesOf(
    records(path)
      .filter((r) => r.k === "snap")
      .map((r) => {
        if (r.id === actor) {
          context = r.context ?? { ...context, ...(r.delta ?? {}) };
          for (const k of r.removed ?? []) delete context[k];
        }
        return {
          own: r.id === actor,
          ...(actor.startsWith("session:") && r.id.startsWith("run:") && r.status === "active" ? { run: r.id } : {}),
          // A session's own value may be nested (`running.closeRequested`): `sessionPhase` names it.
          value: r.value !== undefined || r.id !== actor ? r.value : r.status,
          activeRunId: r.id === actor ? (context.activeRunId as string | undefined) : undefined,
        };
      }),
  );
}

function replayText(text: string) {
  const parsed = parseLog(text);
  assert.equal(parsed.error, undefined);
  return replayRecords(parsed.lines);
}

describe("committed fixtures", () => {
  test("every required scenario has a fixture", () => {
    for (const name of REQUIRED) assert.ok(existsSync(fixture(name)), `${name}.jsonl is committed`);
  });

  // Injected faults (docs/reliability.md) live in faults/: every one of them replays identical too.
  const faults = readdirSync(FAULT_FIXTURE_DIR).filter((f) => f.endsWith(".jsonl"));
  test("every required fault has a fixture", () => {
    for (const name of [
      "sigkill-mid-run",
      "sigstop-escalation",
      "control-channel-garbage",
      "blocked-nested-call",
      "cancel-during-grace",
    ])
      assert.ok(faults.includes(`${name}.jsonl`), `faults/${name}.jsonl is committed`);
  });
  for (const file of [
    ...readdirSync(FIXTURE_DIR).filter((f) => f.endsWith(".jsonl")),
    ...faults.map((f) => `faults/${f}`),
  ]) {
    test(`${file} replays identical`, () => {
      const report = replayFile(join(FIXTURE_DIR, file));
      assert.equal(report.identical, true, formatReport(report, true));
      assert.ok(report.inputs > 5 && report.trace > 50, "a real recording, not an empty one");
    });
  }

  // Logs of format v2 (every trace record whole) replay identical, read as v3 is (recorded before the supervisor's
  // busy copy was retired: record/retired.ts, test/record/retired.test.ts).
  for (const file of readdirSync(join(FIXTURE_DIR, "v2")).filter((f) => f.endsWith(".jsonl"))) {
    test(`v2/${file} (format v2, trace records whole) replays identical`, () => {
      assert.equal(records(join(FIXTURE_DIR, "v2", file))[0].v, 2);
      const report = replayFile(join(FIXTURE_DIR, "v2", file));
      assert.equal(report.identical, true, formatReport(report, true));
      assert.ok(report.inputs > 5 && report.trace > 50, "a real recording, not an empty one");
    });
  }

  // Logs recorded before runs went straight to their sessions (the runner's facts relayed by the session, every
  // command to the root) still replay identical: the machines keep the paths those logs took.
  for (const file of readdirSync(join(FIXTURE_DIR, "before-direct")).filter((f) => f.endsWith(".jsonl"))) {
    test(`before-direct/${file} (an older log) replays identical`, () => {
      const report = replayFile(join(FIXTURE_DIR, "before-direct", file));
      assert.equal(report.identical, true, formatReport(report, true));
      assert.ok(report.inputs > 5 && report.trace > 50, "a real recording, not an empty one");
    });
  }

  test("the fixtures show what they are named for", () => {
    const interrupt = statesOf(fixture("interrupt-keeps-state"), "session:demo");
    assert.deepEqual(interrupt.slice(0, 6), ["starting", "running", "idle", "running", "interrupted", "idle"]);
    const swallowed = statesOf(fixture("swallowed-interrupt-lost"), "session:stubborn");
    const i = swallowed.indexOf("interrupted");
    assert.deepEqual(swallowed.slice(i, i + 4), ["interrupted", "grace", "killed", "lost"]);
    assert.ok(statesOf(fixture("os-exit-lost"), "session:exiting").includes("lost"));
    const timers = records(fixture("swallowed-interrupt-lost")).filter((r) => r.k === "timer");
    assert.ok(timers.length >= 3, "deadline, interrupt window and grace fired as recorded timers");
    const reset = records(fixture("reset")).filter((r) => r.k === "actor" && r.id === "session:fresh-start");
    assert.equal(reset.length, 2, "reset created the session anew under the same explicit id");
    const ids = new Set(records(fixture("fresh-runs")).flatMap((r) => (r.id ? [r.id] : r.to ? [r.to] : [])));
    for (const id of ids)
      assert.match(
        id,
        /^(supervisor(\/prepare)?|spare:pool|(session:[^/]+|run:[^/]+|spare:\d+)(\/runner)?)$/,
        "explicit ids only",
      );
    assert.ok(ids.has("spare:1"), "fresh runs keep a spare runner, visible as an actor");
    const spareParents = records(fixture("fresh-runs")).flatMap((r) =>
      r.k === "actor" && /^spare:\d+$/.test(r.id) ? [r.parent] : [],
    );
    assert.ok(spareParents.length > 1 && spareParents.every((p) => p === "spare:pool"), "spares are the pool's");
    // A JavaScript session: the deadline's interrupt ends the waiting cell (state kept), the loop is killed (lost).
    const js = statesOf(fixture("js-session"), "session:js");
    assert.deepEqual(js.slice(0, 6), ["starting", "running", "idle", "running", "interrupted", "idle"]);
    const k = js.indexOf("grace");
    assert.deepEqual(js.slice(k - 1, k + 3), ["interrupted", "grace", "killed", "lost"]);
    // Shell sessions: one exits within its window, one is killed (its stop escalates no further), one is held past
    // its window and ends by its own exit, one exits by itself just as it is killed (SIGTERM finds no process: killed
    // with its own exit, no failed kill), one whose output a process outside its group holds: SIGKILL, the group's
    // end found with the output open, running again, and the end when the holder goes; the pool stops with the host.
    const shellStates = (id: string) => statesOf(fixture("shell-sessions"), id);
    assert.deepEqual(shellStates("exec:1"), ["starting", "running", "exited"]);
    assert.deepEqual(shellStates("exec:2"), ["starting", "running", "stopping", "killed"]);
    assert.deepEqual(shellStates("exec:3"), ["starting", "running", "exited"]);
    assert.deepEqual(shellStates("exec:4"), ["starting", "running", "stopping", "killed"]);
    const shellFacts = records(fixture("shell-sessions")).filter((r) => r.k === "fact");
    const closed4 = shellFacts.find((r) => r.to === "exec:4" && r.event?.type === "shell.closed");
    assert.deepEqual([closed4?.event.code, closed4?.event.signal], [0, null], "the shell's own exit");
    assert.ok(!shellFacts.some((r) => r.event?.type === "shell.signal_failed"), "no signal failed");
    assert.deepEqual(shellStates("exec:5"), ["starting", "running", "stopping", "running", "exited"]);
    const gone = shellFacts.filter((r) => r.event?.type === "shell.group_gone");
    assert.deepEqual(
      gone.map((r) => [r.to, r.event.outputOpen]),
      [["exec:5", true]],
    );
    assert.deepEqual(shellStates("exec:pool"), ["serving", "stopping"]);
    const ready = records(fixture("js-session")).find((r) => r.k === "fact" && r.event?.type === "runner.ready");
    assert.equal(ready?.event.language, "js");
  });
});

describe("malformed records", () => {
  test("an input record without its event, or a fact without its actors: the line and what is missing", () => {
    const lines = readFileSync(join(FIXTURE_DIR, "reset.jsonl"), "utf8").trimEnd().split("\n");
    const at = (k: string) => lines.findIndex((l) => (JSON.parse(l) as { k: string }).k === k);
    const edits: [number, (r: Record<string, unknown>) => void, RegExp][] = [
      [at("cmd"), (r) => delete r.event, /a cmd record without an event/],
      [at("fact"), (r) => (r.event = "runner.ready"), /a fact record without an event/],
      [at("fact"), (r) => delete r.from, /a fact record without its sender and receiver/],
      [at("cmd"), (r) => (r.k = 7), /no kind/],
      [at("cmd"), (r) => (r.event = { type: 1 }), /a cmd record without an event/],
    ];
    for (const [i, edit, message] of edits) {
      const record = JSON.parse(lines[i]!) as Record<string, unknown>;
      edit(record);
      const text = [...lines.slice(0, i), JSON.stringify(record), ...lines.slice(i + 1)].join("\n");
      const { error } = parseLog(text);
      assert.match(error ?? "", new RegExp(`^line ${i + 1} is not a log record: ${message.source}`));
    }
    assert.equal(parseLog(lines.join("\n")).error, undefined);
  });
});

describe("divergence", () => {
  test("an altered input (a timer that never fired) is reported at the first difference", () => {
    const lines = readFileSync(fixture("interrupt-keeps-state"), "utf8").split("\n");
    const timerLine = lines.findIndex((l) => l.includes('"k":"timer"'));
    assert.ok(timerLine > 0);
    const altered = lines.filter((_, i) => i !== timerLine).join("\n");
    const report = replayText(altered);
    assert.equal(report.identical, false);
    const d = report.divergence!;
    assert.match(d.message, /first divergence/);
    assert.ok(d.actor, "names the actor");
    assert.ok(d.expected && d.actual, "shows what was recorded and what replay did");
    assert.match(formatReport(report), /expected: .*\n\s+actual:/);
  });

  test("an altered recorded state names the actor, the event, and both states", () => {
    const text = readFileSync(fixture("os-exit-lost"), "utf8");
    const lines = text.split("\n");
    const lostLine = lines.findIndex((l) => l.includes('"id":"session:exiting"') && l.includes('"value":"lost"'));
    assert.ok(lostLine > 0, "the fixture records the session as lost");
    lines[lostLine] = lines[lostLine]
      .replace('"value":"lost"', '"value":"idle"')
      .replace('"status":"done"', '"status":"active"');
    const report = replayText(lines.join("\n"));
    assert.equal(report.identical, false);
    const d = report.divergence!;
    assert.equal(d.line, lostLine + 1, "the log line of the altered record");
    assert.equal(d.actor, "session:exiting");
    // The session ends lost once its run, which got the process's exit, reported.
    assert.match(d.event ?? "", /^xstate\.done\.actor\.run:/);
    assert.match(d.message, /expected state "idle" \(active\), actual "lost" \(done\)/);
  });

  test("a log that is not an event log, or is cut mid-file, is refused with a reason", () => {
    assert.match(replayText('{"k":"nothing"}').error!, /not a pi-code-supervisor event log/);
    const lines = readFileSync(fixture("reset"), "utf8").split("\n");
    lines[5] = lines[5].slice(0, 10);
    assert.match(parseLog(lines.join("\n")).error!, /line 6 is not JSON/);
    const cut = readFileSync(fixture("reset"), "utf8").slice(0, -40);
    assert.equal(parseLog(cut).error, undefined, "a partial last line (a killed writer) is tolerated");
  });
});

describe("the CLI", () => {
  const cli = join(ROOT, "bin/pi-code-supervisor.js");
  test("replay prints identical and exits 0", () => {
    const out = execFileSync(process.execPath, [cli, "replay", fixture("reset")], { encoding: "utf8" });
    assert.match(out, /^identical \(\d+ inputs, \d+ trace records\)/);
  });
  test("a divergent log prints the divergence and exits 1", () => {
    const dir = tempDir("pcs-cli-");
    const path = join(dir, "altered.jsonl");
    writeFileSync(path, readFileSync(fixture("os-exit-lost"), "utf8").replace('"value":"lost"', '"value":"idle"'));
    const r = spawnSync(process.execPath, [cli, "replay", path], { encoding: "utf8" });
    assert.equal(r.status, 1);
    assert.match(r.stdout, /first divergence .*\n\s+actor:\s+session:exiting\n\s+event:\s+xstate.done.actor.run:/);
  });
  test("npx runs the package's bin", () => {
    const r = spawnSync("npx", ["--no-install", "pi-code-supervisor", "replay", fixture("fresh-runs")], {
      cwd: ROOT,
      encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^identical/);
  });
});

describe("recording live systems", () => {
  test("a fresh recording of real runs replays identical (the fixture pipeline end to end)", async () => {
    const dir = tempDir("pcs-rec-");
    const path = await recordScenario("reset", dir);
    const report = replayFile(path);
    assert.equal(report.identical, true, formatReport(report, true));
    assert.equal(records(path)[0].k, "header");
    assert.equal(records(path).at(-1).k, "end");
  });

  test("an event record's line, serialized once per event object, is the line of its trace record", () => {
    const observer = new SystemObserver();
    const lines: [string, string][] = [];
    const machine = setup({ actors: { kid: fromCallback(({ receive }) => receive(() => {})) } }).createMachine({
      initial: "a",
      invoke: { id: "kid", src: "kid" },
      on: { go: { actions: sendTo("kid", ({ event }) => event) } },
      states: { a: {} },
    });
    const { inspect } = observer.hostOptions();
    const actor = createActor(machine, {
      inspect: (ev) => {
        inspect(ev);
        if (ev.type !== "@xstate.event") return;
        const at = 1_700_000_000_123;
        lines.push([eventLine(ev, at), JSON.stringify({ ...traceOf(ev), at })]);
      },
    });
    actor.start();
    const long = "x".repeat(1000);
    actor.send({ type: "go", text: long, n: Infinity, nested: { undef: undefined, list: [1, undefined] } } as never);
    actor.stop();
    const relayed = lines.filter(([line]) => line.includes('"type":"go"'));
    assert.equal(relayed.length, 2, "the event reaches the machine, then its child");
    for (const [line, expected] of lines) assert.equal(line, expected);
    assert.match(relayed[1]![0], /"to":"[^"]+\/kid","from":/);
    assert.match(relayed[1]![0], /…\[1000 chars\]/);
  });

  test("v3 lines point at what the log holds (the input just recorded, a start input, a done output) and read back whole", () => {
    // A run-like child: its context spreads its input, and its output is a context value; the parent gets commands.
    const child = setup({}).createMachine({
      context: ({ input }: { input: Record<string, unknown> }) => ({ ...input, extra: 1 }),
      initial: "busy",
      states: {
        busy: {
          on: { finish: { target: "done", actions: assign({ outcome: ({ event }) => ({ ...event.result }) }) } },
        },
        done: { type: "final" },
      },
      output: ({ context }) => context.outcome,
    });
    const parent = setup({ actors: { child } }).createMachine({
      initial: "a",
      states: {
        a: {
          invoke: {
            id: "job:1",
            src: "child",
            input: { code: "y".repeat(500), list: [1, 2], deep: { a: { b: 1 } } },
            onDone: "b",
          },
          on: { finish: { actions: sendTo("job:1", ({ event }) => event) } },
        },
        b: {},
      },
    });
    const at = 1_700_000_000_123;
    const written: string[] = [];
    const whole: string[] = [];
    const encoder = new TraceEncoder(true);
    const plain = new TraceEncoder();
    const input = (record: InputRecord) => {
      encoder.input(record);
      written.push(JSON.stringify({ ...record, at }));
      whole.push(JSON.stringify({ ...record, at }));
    };
    const actor = createActor(parent, {
      inspect: (ev) => {
        if (ev.type === "@xstate.event") {
          written.push(encoder.eventLine(ev, at));
          whole.push(JSON.stringify({ ...traceOf(ev), at }));
          return;
        }
        const r = encoder.encode(ev);
        if (r) written.push(JSON.stringify({ ...r, at }));
        const p = plain.encode(ev);
        if (p) whole.push(JSON.stringify({ ...p, at }));
      },
    });
    const header = v3Header(at);
    actor.start();
    const finish = { type: "finish", result: { status: "success", text: "z".repeat(300), n: [1, { m: 2 }] } };
    input({ k: "cmd", event: finish as never });
    actor.send(finish as never);
    actor.stop();
    const text = [header, ...written].join("\n");
    assert.match(text, /"same":true/, "the event that is the input just recorded");
    assert.match(text, /"base":"input"/, "the child's first context, on its start input");
    assert.match(text, /"output":"outcome"/, "the child's last context, on its done event's output");
    assert.ok(text.length < [header, ...whole].join("\n").length);
    const parsed = parseLog(text);
    assert.equal(parsed.error, undefined);
    const expected = parseLog([header, ...whole].join("\n"));
    assert.deepEqual(
      parsed.lines.map((l) => canonical(l.record)),
      expected.lines.map((l) => canonical(l.record)),
    );
  });

  test("a v3 record pointing at what its segment lacks is refused, naming its line", () => {
    const header = v3Header(0);
    for (const [line, what] of [
      ['{"k":"event","to":"supervisor","same":true}', /line 2 .*`same`/],
      ['{"k":"snap","id":"run:x","cause":"xstate.init","status":"active","base":"input"}', /line 2 .*run:x.*`base`/],
      ['{"k":"snap","id":"run:x","cause":"e","status":"done","output":"outcome"}', /line 2 .*run:x.*`output`/],
    ] as const) {
      const parsed = parseLog(`${header}\n${line}\n`);
      assert.match(parsed.error ?? "", what);
    }
  });

  test("the recorder holds state for live actors only: it does not grow with the runs, calls and resets there were", async () => {
    const dir = tempDir("pcs-rec-bound-");
    const observer = new SystemObserver();
    const recorder = new Recorder(observer, { dir, piSession: "bounded" });
    const host = new SupervisorHost(observer.hostOptions());
    const held = () => (recorder as unknown as { encoder: { size: number } }).encoder.size;
    const round = async (i: number) => {
      await host.run({ code: `v = ${i}`, cwd: dir, timeoutMs: 10_000, session: "s" });
      await host.run({ code: "pass", cwd: dir, timeoutMs: 10_000 });
      if (i % 5 === 0) await host.run({ code: "v = 0", cwd: dir, timeoutMs: 10_000, session: "s", reset: true });
      await recorder.drained();
    };
    for (let i = 0; i < 5; i++) await round(i);
    const settled = held();
    for (let i = 5; i < 45; i++) await round(i);
    assert.ok(held() <= settled + 2, `${settled} actors held after 5 rounds, ${held()} after 45`);
    await host.shutdown();
    recorder.close("shutdown");
    for (const path of recorder.segments()) assert.equal(replayFile(path).identical, true);
  });

  test("logs rotate at quiescent points, every kept segment replays, old segments are deleted", async () => {
    const dir = tempDir("pcs-rot-");
    const observer = new SystemObserver();
    const recorder = new Recorder(observer, {
      dir,
      piSession: "rotation",
      limits: { segmentBytes: 4000, hardSegmentBytes: 1_000_000, segmentsPerLog: 3 },
    });
    const host = new SupervisorHost(observer.hostOptions());
    for (let i = 0; i < 6; i++) {
      await host.run({ code: `v = ${i}\nv`, cwd: dir, timeoutMs: 10_000, session: "rot" });
      await new Promise((r) => setImmediate(r));
    }
    await host.shutdown();
    recorder.close("shutdown");
    const kept = recorder.segments();
    assert.equal(kept.length, 3, "bounded to segmentsPerLog");
    assert.deepEqual(readdirSync(dir).sort(), kept.map((p) => p.split("/").pop()).sort(), "older segments deleted");
    for (const path of kept) {
      const [header, checkpoint] = records(path);
      assert.ok(header.segment > 0 && header.continues, "a continuation names its predecessor");
      assert.equal(checkpoint.k, "checkpoint");
      assert.equal(checkpoint.quiescent, true);
      const report = replayFile(path);
      assert.equal(report.identical, true, `${path}: ${formatReport(report, true)}`);
    }
  });

  test("lines written soon after a write wait for one batch; drained() writes them at once", async () => {
    const dir = tempDir("pcs-batch-");
    const observer = new SystemObserver();
    const recorder = new Recorder(observer, { dir, writeBatchMs: 60_000 });
    const host = new SupervisorHost(observer.hostOptions());
    await recorder.drained(); // the header: the first write goes at once
    const size = () => readFileSync(recorder.path).length;
    const before = size();
    assert.equal(recorder.writes, 1);
    for (let i = 0; i < 5; i++) await host.run({ code: `v = ${i}`, cwd: dir, timeoutMs: 10_000, session: "s" });
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    assert.equal(size(), before, "five runs' records wait for the batch");
    assert.equal(recorder.writes, 1);
    await recorder.drained();
    assert.equal(recorder.writes, 2, "one write for the batch");
    assert.ok(size() > before);
    await host.shutdown();
    recorder.close("shutdown");
    assert.equal(records(recorder.path).at(-1).k, "end");
    assert.equal(replayFile(recorder.path).identical, true);
  });

  test("a segment forced out mid-run says it cannot be replayed exactly", async () => {
    const dir = tempDir("pcs-hard-");
    const observer = new SystemObserver();
    const recorder = new Recorder(observer, {
      dir,
      limits: { segmentBytes: 500, hardSegmentBytes: 500, segmentsPerLog: 1000 },
    });
    const host = new SupervisorHost(observer.hostOptions());
    await host.run({ code: "import time\ntime.sleep(0.3)", cwd: dir, timeoutMs: 10_000 });
    await host.shutdown();
    recorder.close();
    const midRun = recorder.segments().find((p) => records(p)[1]?.quiescent === false);
    assert.ok(midRun, "some segment started while a timer was pending");
    assert.match(replayFile(midRun).error!, /cannot be replayed exactly/);
  });

  test("a backlog is encoded in slices: the event loop runs between them, and the log is complete and in order", async () => {
    const dir = tempDir("pcs-slices-");
    const observer = new SystemObserver();
    const recorder = new Recorder(observer, { dir, piSession: "slices" });
    const { onCommand } = observer.hostOptions();
    // A result stays pending (a long run): the backlog waits MAX_DEFER_MS, then goes in short slices, a turn each.
    const release = holdResult();
    const alive = setTimeout(() => {}, 10_000);
    // Far more commands than one slice of encoding takes.
    const n = 20_000;
    const payload = "p".repeat(200);
    for (let i = 0; i < n; i++) onCommand!({ type: "run.cancel", at: i, runId: `r${i}`, payload } as never);
    const queued = () => (recorder as unknown as { queue: unknown[] }).queue.length;
    // Turns of the event loop (check phases) that ran while the backlog was still being encoded.
    let turns = 0;
    await new Promise<void>((resolve) => {
      const tick = () => {
        // Counted once the encoding began (before, the backlog waits for the pending result).
        if (queued() < n) turns += 1;
        if (queued() > 0) setImmediate(tick);
        else resolve();
      };
      setImmediate(tick);
    });
    clearTimeout(alive);
    release();
    assert.ok(turns >= 5, `the backlog was encoded within ${turns} turn(s) of the event loop`);
    await recorder.drained();
    recorder.close("done");
    const cmds = records(recorder.segments()[0]!).filter((r) => r.k === "cmd");
    assert.equal(cmds.length, n, "every command is in the log");
    assert.ok(
      cmds.every((r, i) => r.event.runId === `r${i}`),
      "in the order they happened",
    );
  });

  test("the log directory keeps the newest files within its bounds", () => {
    const dir = tempDir("pcs-prune-");
    for (let i = 0; i < 6; i++) {
      const p = join(dir, `log-${i}.jsonl`);
      writeFileSync(p, "x".repeat(100));
      utimesSync(p, 1000 + i, 1000 + i);
    }
    pruneLogDir(dir, { ...DEFAULT_LOG_LIMITS, maxFiles: 4 });
    assert.deepEqual(readdirSync(dir).sort(), ["log-2.jsonl", "log-3.jsonl", "log-4.jsonl", "log-5.jsonl"]);
    pruneLogDir(dir, { ...DEFAULT_LOG_LIMITS, maxTotalBytes: 250 });
    assert.deepEqual(readdirSync(dir).sort(), ["log-4.jsonl", "log-5.jsonl"]);
  });

  test("a recorder that cannot write stops itself; the supervisor runs on", async () => {
    const file = join(tempDir("pcs-bad-"), "not-a-dir");
    writeFileSync(file, "");
    const observer = new SystemObserver();
    const recorder = new Recorder(observer, { dir: file });
    const host = new SupervisorHost(observer.hostOptions());
    const r = await host.run({ code: "print('fine')", cwd: tmpdir(), timeoutMs: 10_000 });
    await host.shutdown();
    recorder.close();
    assert.equal(r.stdout, "fine\n");
    assert.match(recorder.error!, /EEXIST|ENOTDIR/);
  });

  test(
    "nested tool calls (tool:<runId>:<n> and their dispatchers) are recorded and replay identical",
    { skip: !existsSync(PI_TOOLS) && "nested tool calls is not in this tree" },
    async () => {
      const dir = tempDir("pcs-nested-");
      const path = await recordScenario("nested-calls", dir);
      const actors = records(path)
        .filter((r) => r.k === "actor")
        .map((r) => r.id);
      assert.ok(
        actors.some((id: string) => /^tool:[^:]+:\d+$/.test(id)),
        "tool-call actors with explicit ids",
      );
      assert.ok(
        records(path).some((r) => r.k === "fact" && r.during !== undefined),
        "a dispatcher answered synchronously while starting: recorded as part of that event",
      );
      const report = replayFile(path);
      assert.equal(report.identical, true, formatReport(report, true));
    },
  );

  test("a Pi session records its own log under the agent dir, which replays identical", async () => {
    const pi = await startPi();
    const piSession = pi.session.sessionManager.getSessionId();
    await pi.callTools([
      { code: "n = 5", session: "pi" },
      { code: "n * 2", session: "pi" },
      { code: "print('fresh')" },
    ]);
    await pi.dispose();
    const dir = join(pi.agentDir, "pi-code-supervisor", "logs");
    const logs = readdirSync(dir);
    assert.equal(logs.length, 1);
    assert.ok(logs[0].includes(piSession.replace(/[^A-Za-z0-9-]/g, "").slice(0, 36)), "named after the Pi session");
    const path = join(dir, logs[0]);
    assert.equal(records(path)[0].piSession, piSession);
    const report = replayFile(path);
    assert.equal(report.identical, true, formatReport(report, true));
    assert.ok(
      records(path).some((r) => r.k === "stop"),
      "the log ends with the supervisor's stop at shutdown",
    );
  });
});
