// The shell sessions' door (host/exec.ts, exec-events.ts, exec-reports.ts) beyond starting and writing, with real
// short-lived shells and no Pi session: set_on_exit's answers, list_sessions reporting an exit once, kills of an exited
// session and of one already stopping, the completion wake delivered once, consumed by a finalized result that
// returned the exit or by a kill that reported it, released by a poll without it, retried at agent_settled after a
// failed delivery, the reports' fields, when a session's bytes are let go, a start the kernel refuses, and what the
// door refuses. The tools' text around these is test/extension/shell/exec-pi.test.ts's.
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { after, describe, test } from "node:test";
import { execDriver, startRequest } from "../helpers/exec-driver.ts";
import { waitUntil } from "../helpers/procs.ts";
import { SupervisorHost } from "../../host/host.ts";
import { ExecHost } from "../../host/exec.ts";
import { execLogDir, stamp, unknownSession } from "../../host/exec-reports.ts";
import type { WakeNotice } from "../../machines/exec-wake-entry.ts";
import type { ExecEmitted } from "../../machines/exec-pool.ts";

const root = mkdtempSync(join(tmpdir(), "pcs-exec-door-"));
const logDir = join(root, "logs");
const hosts: SupervisorHost[] = [];
function newHost(): SupervisorHost {
  const h = new SupervisorHost({ exec: { logDir } });
  hosts.push(h);
  return h;
}
after(async () => {
  for (const h of hosts) await h.shutdown();
});
/** A command as the recorder's tap sees it (the exec commands travel typed as the supervisor's). */
type Sent = { type: string; id?: number };
/** Every command the shared host's door sent (to the root or straight to the pool). */
const commands: Sent[] = [];
const host = new SupervisorHost({ exec: { logDir }, onCommand: (event) => void commands.push(event as Sent) });
hosts.push(host);
/** Every wake prompt this file's shared host delivered, in order. */
const delivered: WakeNotice[][] = [];
host.exec.onWake((notices) => void delivered.push(notices));
const { start, write, callId } = execDriver(() => host, {
  cwd: () => root,
  cols: 80,
  yieldMs: 150,
  durationMs: 30_000,
  callPrefix: "door",
});
const text = (b: Uint8Array) => Buffer.from(b).toString("utf8");
const exited = (h: SupervisorHost, id: number) => () => h.exec.sessions().some((s) => s.id === id && !s.running);
const deliveredIds = () => delivered.flat().map((n) => n.id);

describe("reports", () => {
  test("a session kept running: its record, the sessions registered with it, its log named by time, host and id", async () => {
    const before = Date.now();
    let started: number | undefined;
    const r = await start("echo up; sleep 30", { onStart: (io) => (started = io.id) });
    assert.equal(r.running, true);
    assert.equal(started, r.id, "onStart hears the session's I/O as it starts");
    assert.equal(r.openSessions, host.exec.sessions().length);
    assert.deepEqual(
      [r.command, r.cwd, r.tty, r.held, r.armed, r.consumedWake],
      ["echo up; sleep 30", root, false, false, false, false],
    );
    assert.equal(r.end, undefined);
    assert.equal(r.totalBytes, r.output.length, "what the window held, drained");
    assert.ok(await waitUntil(() => host.exec.io(r.id)?.totalBytes === 3, 15_000));
    const name = basename(r.logPath!);
    const [time, ...rest] = name.split("-");
    assert.equal(rest.join("-"), `${host.id}-${r.id}.log`);
    assert.ok(time! >= stamp(before - 1000) && time! <= stamp(Date.now()), `${time} is when it started`);
    const info = host.exec.sessions().find((s) => s.id === r.id)!;
    assert.deepEqual(
      {
        running: info.running,
        wakeArmed: info.wakeArmed,
        logPath: info.logPath,
        totalBytes: info.totalBytes,
      },
      { running: true, wakeArmed: false, logPath: r.logPath, totalBytes: 3 },
    );
    // The start reports the pid when the process had started within its window; on a loaded machine the window
    // can close first (the start returns, input is held for the process), and the pid is known from then on.
    assert.equal(typeof info.pid, "number");
    if (r.pid !== undefined) assert.equal(info.pid, r.pid);
    assert.equal(host.exec.io(r.id)?.id, r.id);
    const second = await start("sleep 30");
    assert.equal(second.openSessions, r.openSessions! + 1, "each start counts the sessions registered with it");
    for (const id of [r.id, second.id]) await host.exec.kill(id, "SIGKILL", callId());
  });

  test("the log name's time is UTC, to the second", () => {
    assert.equal(stamp(Date.UTC(2026, 0, 2, 3, 4, 5, 678)), "20260102T030405Z");
    assert.equal(execLogDir("/agent"), join("/agent", "pi-code-supervisor", "exec-logs"));
  });

  test("a workdir that is a file: the start's result says so, nothing started", async () => {
    const file = join(root, "a-file");
    writeFileSync(file, "");
    const r = await start("true", { cwd: file });
    const { end, ...rest } = r;
    assert.deepEqual(end && { ...end, at: 0 }, {
      end: "failed",
      at: 0,
      code: null,
      signal: null,
      failure: `workdir ${file} is not a directory.`,
    });
    assert.deepEqual(rest, {
      id: 0,
      running: false,
      held: false,
      output: new Uint8Array(0),
      omittedBytes: 0,
      totalBytes: 0,
      command: "true",
      cwd: file,
      tty: false,
      wallMs: 0,
      wait: "exit",
      armed: false,
      consumedWake: false,
    });
  });

  test("a start the system refuses (an argument past the kernel's limit): failed, with why, also when a poll returns it", async () => {
    const command = `: ${"x".repeat(200_000)}`;
    const quick = await start(command, { yieldMs: 20_000 });
    const why = /^could not start \/\S*bash: .*E2BIG$/;
    assert.equal(quick.end?.end, "failed");
    assert.match(quick.end?.failure ?? "", why);
    // Returned before the failure came: the session is kept for the poll that reports it.
    const later = await start(command, { yieldMs: 0 });
    assert.equal(later.running, true);
    assert.ok(await waitUntil(exited(host, later.id), 15_000));
    const p = await write(later.id);
    assert.equal(p.end?.end, "failed");
    assert.match(p.end?.failure ?? "", why);
  });

  test("an unknown session: the ids there are, or that none is open; a kill finds nothing", async () => {
    const own = newHost();
    const none = await own.exec.write({ id: 7, until: "full", durationMs: 10, callId: "c1" });
    assert.deepEqual(none, { ok: false, error: unknownSession(7, []) });
    assert.match(unknownSession(7, []), /^Unknown session_id 7 \(no sessions are open\)\. A session that exited/);
    const s = await own.exec.start(startRequest("sleep 30", { cwd: root, yieldMs: 100, callId: "c2" }));
    assert.ok(s.ok && s.value.running);
    const other = await own.exec.write({ id: 7, until: "full", durationMs: 10, callId: "c3" });
    assert.deepEqual(other, { ok: false, error: unknownSession(7, [String(s.value.id)]) });
    assert.match(unknownSession(7, ["1", "2"]), /^Unknown session_id 7 \(sessions: 1, 2\)\./);
    assert.equal(await own.exec.kill(7, "SIGTERM", "c4"), undefined);
  });

  test("a log that cannot be opened: the session runs, the report says why, no log path", async () => {
    const file = join(root, "not-a-dir");
    writeFileSync(file, "");
    const own = new SupervisorHost({ exec: { logDir: join(file, "logs") } });
    hosts.push(own);
    const r = await own.exec.start(startRequest("echo ok", { cwd: root, yieldMs: 30_000, callId: "c" }));
    assert.ok(r.ok);
    assert.equal(text(r.value.output), "ok\n");
    assert.equal(r.value.logPath, undefined);
    assert.match(r.value.logProblem ?? "", /not-a-dir/);
    assert.equal(own.exec.io(r.value.id), undefined, "an exit inside the window lets go of the session's bytes");
  });

  test("session ids count up from 1 in each host", async () => {
    const own = newHost();
    const ids: number[] = [];
    for (const command of ["sleep 30", "sleep 30"]) {
      const r = await own.exec.start(startRequest(command, { cwd: root, yieldMs: 50, callId: `ids-${command}` }));
      assert.ok(r.ok && r.value.running);
      ids.push(r.value.id);
    }
    assert.deepEqual(ids, [1, 2]);
  });

  test("the door sends the pool only what changes something", async () => {
    const sent: Sent[] = [];
    const own = new SupervisorHost({ exec: { logDir }, onCommand: (event) => void sent.push(event as Sent) });
    hosts.push(own);
    // Before any shell: no pool, no session, nothing sent.
    own.exec.agentSettled();
    assert.deepEqual(own.exec.setOnExit(7, "wake"), { found: false, armed: false });
    assert.deepEqual(
      sent.map((c) => c.type),
      [],
    );
    const s = await own.exec.start(startRequest("sleep 30", { cwd: root, yieldMs: 50, callId: "c1" }));
    assert.ok(s.ok && s.value.running);
    // A listing with nothing exited has nothing to report as observed.
    const before = sent.length;
    assert.equal(own.exec.list("c2").exited.length, 0);
    assert.deepEqual(sent.slice(before), []);
    assert.ok(sent.some((c) => c.type === "exec.open"));
  });

  test("a door not attached to a supervisor refuses a start and says why", async () => {
    const door = new ExecHost({ hostId: "h", env: () => process.env, logDir });
    const r = await door.start(startRequest("true", { cwd: root, yieldMs: 100, callId: "c" }));
    assert.deepEqual(r, { ok: false, error: "the supervisor is not running." });
  });

  test("after shutdown no session starts", async () => {
    const own = newHost();
    await own.shutdown();
    const r = await own.exec.start(startRequest("true", { cwd: root, yieldMs: 100, callId: "c" }));
    assert.deepEqual(r, { ok: false, error: "Pi is shutting down; no new shell sessions start." });
  });
});

describe("waits", () => {
  test("a cancelled start keeps its output for the next call", async () => {
    const ac = new AbortController();
    // Cancelled once the output is there: the cancelled call saw it and did not take it.
    const onStart = (io: { totalBytes: number; onChange: (fn: () => void) => void }) =>
      io.onChange(() => io.totalBytes > 0 && ac.abort());
    const s = await start("echo before; sleep 30", { yieldMs: 20_000, signal: ac.signal, onStart });
    assert.equal(s.running, true);
    assert.equal(s.wait, "cancelled");
    assert.equal(text(s.output), "", "not drained: the cancelled call's result is not shown");
    const p = await write(s.id, { durationMs: 100 });
    assert.equal(text(p.output), "before\n");
    await host.exec.kill(s.id, "SIGKILL", callId());
  });

  test("input to a session that exited unobserved: the failure reported with the exit, at once", async () => {
    const s = await start("sleep 0.3");
    assert.ok(await waitUntil(exited(host, s.id), 15_000));
    const r = await write(s.id, { bytes: Buffer.from("late\n"), until: "answer", durationMs: 20_000 });
    assert.equal(r.running, false);
    assert.equal(r.end?.code, 0);
    assert.match(r.writeFailure ?? "", /the process has exited/);
    assert.equal(r.wait, "exit");
    assert.equal(host.exec.io(s.id), undefined, "a returned exit lets go of the session's bytes");
    // A poll's empty input is no input: no failure to write it.
    const t = await start("sleep 0.3");
    assert.ok(await waitUntil(exited(host, t.id), 15_000));
    const p = await write(t.id, { bytes: new Uint8Array(0) });
    assert.deepEqual([p.running, p.writeFailure], [false, undefined]);
  });

  test("a write the process cannot take returns at once with the failure, not after its window", async () => {
    const s = await start("exec 0<&-; sleep 30");
    assert.equal(s.running, true);
    // A write may be taken by the pipe before the broken pipe is known: short windows until one is refused. From then
    // on every write is refused at once, so the next one, with a long window, must not wait it out.
    let w = await write(s.id, { bytes: Buffer.from("x\n"), durationMs: 300 });
    for (let i = 0; i < 5 && !w.writeFailure; i++)
      w = await write(s.id, { bytes: Buffer.from("x\n"), durationMs: 300 });
    assert.match(w.writeFailure ?? "", /^stdin write failed: /);
    w = await write(s.id, { bytes: Buffer.from("x\n"), durationMs: 20_000 });
    assert.match(w.writeFailure ?? "", /^stdin write failed: /);
    assert.equal(w.running, true);
    assert.ok(w.wallMs < 10_000, `returned after ${w.wallMs.toFixed(0)} ms of a 20 s window`);
    await host.exec.kill(s.id, "SIGKILL", callId());
  });

  test("a shell that exits during a poll, its output held by a background process: the poll reports it held", async () => {
    const s = await start("sleep 0.4; sleep 30 & exit 0");
    assert.deepEqual([s.running, s.held], [true, false]);
    const p = await write(s.id, { durationMs: 1500 });
    assert.deepEqual([p.running, p.held], [true, true]);
    await host.exec.kill(s.id, "SIGKILL", callId());
  });

  test("a write that waits out its window (`full`) is not ended by the answer", async () => {
    const s = await start("cat");
    // cat answers (it runs, whatever the load); then a line it echoes at once does not end a `full` window.
    await write(s.id, { bytes: Buffer.from("a\n"), until: "answer" });
    const r = await write(s.id, { bytes: Buffer.from("x\n"), until: "full", durationMs: 1000 });
    assert.equal(r.wait, "deadline");
    assert.equal(text(r.output) + text((await write(s.id, { durationMs: 0 })).output), "x\n");
    await host.exec.kill(s.id, "SIGKILL", callId());
  });

  test("a cancelled write keeps its output for the next call", async () => {
    const s = await start("cat");
    const ac = new AbortController();
    const io = host.exec.io(s.id)!;
    const off = io.onChange(() => io.totalBytes > 0 && ac.abort());
    const c = await write(s.id, { bytes: Buffer.from("kept\n"), durationMs: 20_000, signal: ac.signal });
    off();
    assert.deepEqual([c.running, c.wait, text(c.output)], [true, "cancelled", ""]);
    assert.equal(text((await write(s.id, { durationMs: 100 })).output), "kept\n");
    await host.exec.kill(s.id, "SIGKILL", callId());
  });
});

describe("kill", () => {
  test("a session that exited on its own: reported as already exited, not killed, and it leaves", async () => {
    const t = await start("sleep 0.3; exit 5");
    assert.ok(await waitUntil(exited(host, t.id), 15_000));
    const k = await host.exec.kill(t.id, "SIGTERM", callId());
    assert.deepEqual(
      {
        killed: k?.killed,
        alreadyExited: k?.alreadyExited,
        alreadyStopping: k?.alreadyStopping,
        code: k?.end?.code,
        signal: k?.signal,
        command: k?.command,
      },
      {
        killed: false,
        alreadyExited: true,
        alreadyStopping: false,
        code: 5,
        signal: "SIGTERM",
        command: "sleep 0.3; exit 5",
      },
    );
    assert.equal("wait" in k!, false);
    assert.equal("consumedWake" in k!, false);
    assert.equal(
      host.exec.sessions().some((x) => x.id === t.id),
      false,
    );
    assert.equal(host.exec.io(t.id), undefined);
  });

  test("a kill's report has the output that came after the last call", async () => {
    const s = await start("sleep 0.2; echo late; sleep 30");
    assert.equal(s.running, true);
    assert.ok(await waitUntil(() => (host.exec.io(s.id)?.totalBytes ?? 0) > 0, 15_000));
    const k = await host.exec.kill(s.id, "SIGKILL", callId());
    assert.equal(text(k!.output), "late\n");
  });

  test("a second kill while the first stops it sends nothing and says so; both see it end", async () => {
    // The kill only once the trap is set (a loaded machine can take longer than the start's window to get there).
    const s = await start("trap 'sleep 0.3; exit 9' TERM; echo ready; sleep 30 & wait");
    let printed = text(s.output);
    while (!printed.includes("ready")) printed += text((await write(s.id, { durationMs: 200 })).output);
    const first = host.exec.kill(s.id, "SIGTERM", callId());
    const stopping = host.exec.sessions().find((x) => x.id === s.id);
    assert.deepEqual([stopping?.status, stopping?.running], ["stopping", true], "being stopped, it still runs");
    assert.ok(host.exec.list(callId()).live.some((x) => x.id === s.id));
    const second = host.exec.kill(s.id, "SIGKILL", callId());
    const [a, b] = await Promise.all([first, second]);
    assert.deepEqual([a?.alreadyStopping, a?.killed], [false, true]);
    assert.deepEqual([b?.alreadyStopping, b?.killed], [true, true]);
    assert.equal(a?.end?.code, 9, "the TERM trap ran: no SIGKILL was sent by the second call");
    assert.equal(commands.filter((c) => c.type === "exec.kill" && c.id === s.id).length, 1, "one kill sent");
    assert.equal(host.exec.io(s.id), undefined);
  });
});

describe("set_on_exit", () => {
  test("arms and disarms a running session, answers each change, and finds no unknown one", async () => {
    const s = await start("sleep 30");
    const set = (onExit: "none" | "wake") => host.exec.setOnExit(s.id, onExit);
    const armed = set("wake");
    assert.deepEqual(
      { ...armed, session: armed.session?.id },
      { found: true, status: "armed", armed: true, session: s.id },
    );
    assert.equal(armed.session?.wakeArmed, true);
    assert.deepEqual([set("wake").status, set("wake").armed], ["already_armed", true]);
    assert.deepEqual([set("none").status, set("none").status], ["disarmed", "already_none"]);
    assert.equal(host.exec.sessions().find((x) => x.id === s.id)?.wakeArmed, false);
    assert.deepEqual(host.exec.setOnExit(999_999, "wake"), { found: false, armed: false });
    await host.exec.kill(s.id, "SIGKILL", callId());
  });
});

describe("list_sessions", () => {
  test("an exited session is listed once, then leaves; live ones stay", async () => {
    const live = await start("sleep 30");
    const done = await start("sleep 0.3; exit 2");
    assert.ok(await waitUntil(exited(host, done.id), 15_000));
    const first = host.exec.list(callId());
    assert.ok(first.live.some((x) => x.id === live.id && x.running));
    assert.deepEqual(
      first.exited.filter((x) => x.id === done.id).map((x) => [x.running, x.status, x.exit?.code]),
      [[false, "exited", 2]],
    );
    assert.equal(
      first.live.some((x) => x.id === done.id),
      false,
    );
    assert.equal(host.exec.io(done.id), undefined);
    const second = host.exec.list(callId());
    assert.equal(
      second.exited.some((x) => x.id === done.id),
      false,
    );
    assert.ok(second.live.some((x) => x.id === live.id));
    await host.exec.kill(live.id, "SIGKILL", callId());
  });
});

describe("wakes", () => {
  test("an armed session exiting unobserved prompts once, with its exit", async () => {
    const s = await start("sleep 0.3; exit 3", { onExit: "wake" });
    assert.equal(s.armed, true);
    assert.ok(await waitUntil(() => deliveredIds().includes(s.id), 15_000));
    const notice = delivered.flat().find((n) => n.id === s.id)!;
    assert.deepEqual(
      [notice.code, notice.command, notice.cwd, notice.logPath],
      [3, "sleep 0.3; exit 3", root, s.logPath],
    );
    assert.equal(host.exec.sessions().find((x) => x.id === s.id)?.wakeArmed, false);
  });

  test("an exit returned by a result Pi finalized is consumed; one whose result failed still prompts", async () => {
    const consumed = await start("sleep 0.3", { onExit: "wake" });
    const w = callId();
    const p = await host.exec.write({ id: consumed.id, until: "full", durationMs: 30_000, callId: w });
    assert.ok(p.ok);
    assert.equal(p.value.running, false);
    assert.equal(p.value.consumedWake, true);
    assert.equal(p.value.armed, false, "an exit has no wake armed after it");
    assert.equal(host.exec.finalize(w, true), true);
    assert.equal(host.exec.finalize(w, true), false, "a call is finalized once");
    assert.equal(host.exec.finalize("not-a-shell-call", true), false);
    // A later armed exit, delivered: the consumed one, due first had it not been consumed, never came.
    const failed = await start("sleep 0.3", { onExit: "wake" });
    const f = callId();
    const q = await host.exec.write({ id: failed.id, until: "full", durationMs: 30_000, callId: f });
    assert.ok(q.ok && q.value.consumedWake);
    assert.equal(host.exec.finalize(f, false), true);
    assert.ok(await waitUntil(() => deliveredIds().includes(failed.id), 15_000));
    assert.equal(deliveredIds().includes(consumed.id), false);
  });

  test("a write whose tool result was not produced lets go of the exit it returned: it prompts", async () => {
    const s = await start("sleep 0.3", { onExit: "wake" });
    const w = callId();
    const p = await host.exec.write({ id: s.id, until: "full", durationMs: 30_000, callId: w });
    assert.ok(p.ok && p.value.consumedWake);
    host.exec.release(s.id, w);
    assert.ok(await waitUntil(() => deliveredIds().includes(s.id), 15_000));
  });

  test("a poll that returned without the exit lets go of its lease: the later exit prompts, before any finalization", async () => {
    const flag = join(root, `go-${callId()}`);
    const s = await start(`while [ ! -e '${flag}' ]; do sleep 0.05; done; exit 4`, { onExit: "wake" });
    const p = await write(s.id, { durationMs: 10 });
    assert.deepEqual([p.running, p.armed], [true, true]);
    writeFileSync(flag, "");
    assert.ok(await waitUntil(() => deliveredIds().includes(s.id), 15_000));
  });

  test("a kill that reports an armed exit waiting for its prompt takes it: finalized, it never prompts", async () => {
    const own = newHost();
    const events: string[] = [];
    own.exec.onChange((e: ExecEmitted) => events.push(e.type));
    const go = (command: string) =>
      own.exec.start(startRequest(command, { cwd: root, yieldMs: 100, callId: `k-${command}`, onExit: "wake" }));
    const s = await go("sleep 0.2; exit 6");
    assert.ok(s.ok);
    // No deliverer yet: the prompt failed and waits for the agent to settle.
    assert.ok(await waitUntil(() => events.includes("exec.wake"), 15_000));
    const k = await own.exec.kill(s.value.id, "SIGTERM", "k-kill");
    assert.deepEqual([k?.alreadyExited, k?.end?.code], [true, 6]);
    assert.equal(own.exec.finalize("k-kill", true), true);
    const got: number[][] = [];
    own.exec.onWake((notices) => void got.push(notices.map((n) => n.id)));
    const t = await go("sleep 0.2");
    assert.ok(t.ok);
    own.exec.agentSettled();
    assert.ok(await waitUntil(() => got.length === 1, 15_000));
    assert.deepEqual(got, [[t.value.id]], "only the exit nobody reported");
  });

  test("a delivery that fails (or finds no way to Pi) is tried again at agent_settled, once", async () => {
    const own = newHost();
    const events: string[] = [];
    let thrown = 0;
    const off = own.exec.onChange(() => {
      thrown += 1;
      throw new Error("a listener's failure is its own");
    });
    own.exec.onChange((e: ExecEmitted) => events.push(e.type));
    const go = (command: string, yieldMs = 100) =>
      own.exec.start({
        command,
        cwd: root,
        tty: false,
        cols: 80,
        rows: 24,
        yieldMs,
        onExit: "wake",
        callId: `w-${command}`,
      });
    const s = await go("sleep 0.2");
    assert.ok(s.ok);
    // No deliverer yet: the wake is due, its delivery fails, and it waits for the agent to settle.
    assert.ok(await waitUntil(() => events.includes("exec.wake"), 15_000));
    const got: number[][] = [];
    let failures = 1;
    own.exec.onWake((notices) => {
      if (failures-- > 0) throw new Error("Pi is busy");
      got.push(notices.map((n) => n.id));
    });
    own.exec.agentSettled();
    assert.ok(await waitUntil(() => events.filter((e) => e === "exec.wake").length === 2, 15_000));
    assert.deepEqual(got, [], "the second attempt failed too");
    own.exec.agentSettled();
    assert.ok(await waitUntil(() => got.length === 1, 15_000));
    assert.deepEqual(got, [[s.value.id]]);
    own.exec.agentSettled();
    const t = await go("sleep 0.2; echo");
    assert.ok(t.ok);
    assert.ok(await waitUntil(() => got.length === 2, 15_000));
    assert.deepEqual(got, [[s.value.id], [t.value.id]], "a delivered wake is not sent again");
    assert.equal(thrown, events.length, "a listener that throws hears every event, and the next one too");
    off();
    const quick = await go("true", 20_000);
    assert.ok(quick.ok && !quick.value.running);
    assert.ok(events.includes("exec.started") && events.includes("exec.ended"));
    assert.ok(thrown < events.length, "an unsubscribed listener hears nothing more");
  });
});
