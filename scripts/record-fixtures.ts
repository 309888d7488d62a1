// Re-records the replay fixtures (test/fixtures/replay/*.jsonl, and the injected faults in faults/*.jsonl) from real
// runs against real Python. Run it after a
// deliberate change to a machine, then review the diff and commit:
//   source scripts/env.sh && node scripts/record-fixtures.ts [name...]
// Each scenario checks the outcomes it is meant to show, and each new file must replay identical before it is
// written over the old one.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { SupervisorHost, type RunRequestInput } from "../host/host.ts";
import { SystemObserver } from "../record/observe.ts";
import { Recorder } from "../record/recorder.ts";
import { formatReport, replayFile } from "../record/replay.ts";
import { startRequest } from "../test/helpers/exec-driver.ts";
import { CONTAINMENT_ENV } from "../actors/registry/containment.ts";
import { groupAlive } from "../actors/registry/registry.ts";

export const FIXTURE_DIR = resolve(import.meta.dirname, "../test/fixtures/replay");
/** Pi tools for nested calls (from the nested-call tests); the nested-calls scenario needs them. */
export const PI_TOOLS = resolve(import.meta.dirname, "../test/fixtures/pi-tools.ts");

type Run = (code: string, extra?: Partial<RunRequestInput>, signal?: AbortSignal) => ReturnType<SupervisorHost["run"]>;

const scenarios: Record<string, (run: Run) => Promise<void>> = {
  /** A timeout interrupts a session run; the code stops at KeyboardInterrupt and the session keeps its globals. */
  "interrupt-keeps-state": async (run) => {
    assert.equal((await run("counter = 41", { session: "demo" })).outcome.status, "success");
    const slow = await run("import time\nprint('working', flush=True)\ntime.sleep(60)", {
      session: "demo",
      timeoutMs: 1000,
    });
    assert.equal(slow.outcome.status, "timeout");
    assert.equal(slow.outcome.session?.isLost, false);
    const after = await run("counter + 1", { session: "demo" });
    assert.equal(after.stdout, "42\n");
  },
  /** Code that swallows the interrupt: grace, then the process group is killed and the session is lost. */
  "swallowed-interrupt-lost": async (run) => {
    await run("kept = 1", { session: "stubborn" });
    const r = await run(
      "import time\nwhile True:\n    try:\n        time.sleep(60)\n    except KeyboardInterrupt:\n        print('ignoring', flush=True)",
      { session: "stubborn", timeoutMs: 1000 },
    );
    assert.equal(r.outcome.status, "timeout");
    assert.equal(r.outcome.killed, true);
    assert.equal(r.outcome.session?.isLost, true);
    const next = await run("'kept' in globals()", { session: "stubborn" });
    assert.equal(next.stdout, "False\n");
  },
  /** os._exit ends the process: the run reports it and the session is lost. */
  "os-exit-lost": async (run) => {
    await run("y = 2", { session: "exiting" });
    const r = await run("import os\nos._exit(3)", { session: "exiting" });
    assert.equal(r.outcome.status, "runtime_error");
    assert.equal(r.outcome.exitCode, 3);
    assert.equal(r.outcome.session?.isLost, true);
  },
  /** reset stops the session's process and starts it empty. */
  reset: async (run) => {
    await run("z = 3", { session: "fresh-start" });
    const r = await run("'z' in globals()", { session: "fresh-start", reset: true });
    assert.equal(r.stdout, "False\n");
    assert.equal(r.outcome.session?.incarnation, 2);
    assert.equal(r.outcome.session?.ordinal, 1);
  },
  /** A JavaScript session (eval's js cells): state across runs; a deadline rejects the pending await and the state
   * stays; a synchronous loop is killed at the end of its grace and the session is lost; the next run starts anew. */
  "js-session": async (run) => {
    const js = { session: "js", language: "js" as const };
    assert.equal((await run("var counter = 41", js)).outcome.status, "success");
    const waiting = await run("console.log('waiting')\nawait new Promise((r) => setTimeout(r, 60_000))", {
      ...js,
      timeoutMs: 1000,
    });
    assert.equal(waiting.outcome.status, "timeout");
    assert.equal(waiting.outcome.session?.isLost, false);
    assert.equal((await run("counter + 1", js)).stdout, "42\n");
    const loop = await run("while (true) {}", { ...js, timeoutMs: 1000 });
    assert.equal(loop.outcome.killed, true);
    assert.equal(loop.outcome.session?.isLost, true);
    assert.equal((await run("typeof counter", js)).stdout, "undefined\n");
  },
  /** Fresh processes: a success, an error, and a cancellation (Pi's abort). */
  "fresh-runs": async (run) => {
    assert.equal((await run("print('hello')")).outcome.status, "success");
    assert.equal((await run("1 / 0")).outcome.status, "runtime_error");
    const abort = new AbortController();
    const pending = run("import time\nprint('start', flush=True)\ntime.sleep(60)", {}, abort.signal);
    setTimeout(() => abort.abort(), 400);
    assert.equal((await pending).outcome.status, "cancelled");
  },
};

/** A session's control channel, as user code can find it (it runs in the runner's process). */
const FIND_CONTROL =
  "import os, stat\nfd = min(int(f) for f in os.listdir('/proc/self/fd') if int(f) >= 64 and stat.S_ISSOCK(os.fstat(int(f)).st_mode))\n";

/** Injected faults (test/host/faults.test.ts, docs/reliability.md), recorded into `faults/`: each failure mode is a
 * fixture that must replay identical. */
const faultScenarios: Record<string, (run: Run) => Promise<void>> = {
  /** The session's process is SIGKILLed mid-run: runtime_error with the signal, output before it kept, lost. */
  "sigkill-mid-run": async (run) => {
    const pid = Number((await run("import os\nos.getpid()", { session: "victim" })).stdout);
    const pending = run("import time\nprint('before', flush=True)\ntime.sleep(60)", { session: "victim" });
    setTimeout(() => process.kill(pid, "SIGKILL"), 500);
    const r = await pending;
    assert.equal(r.outcome.status, "runtime_error");
    assert.equal(r.outcome.signal, "SIGKILL");
    assert.equal(r.outcome.session?.isLost, true);
    assert.equal(r.stdout, "before\n");
    assert.equal((await run("'back'", { session: "victim" })).stdout, "back\n");
  },
  /** The process stops itself: the deadline's SIGINT and SIGTERM stay pending, SIGKILL ends it; timeout, lost. */
  "sigstop-escalation": async (run) => {
    const r = await run("import os, signal\nprint('stopping', flush=True)\nos.kill(os.getpid(), signal.SIGSTOP)", {
      session: "stopped",
      timeoutMs: 1000,
    });
    assert.equal(r.outcome.status, "timeout");
    assert.equal(r.outcome.killed, true);
    assert.equal(r.outcome.session?.isLost, true);
  },
  /** User code writes garbage to the control channel: the host kills the process tree and says why; lost. */
  "control-channel-garbage": async (run) => {
    await run("kept = 1", { session: "proto" });
    const r = await run(`${FIND_CONTROL}print('wrote', flush=True)\nos.write(fd, b'\\x00\\x00\\x00\\x05nope!')`, {
      session: "proto",
      timeoutMs: 5000,
    });
    assert.equal(r.outcome.status, "runtime_error");
    assert.match(r.outcome.message ?? "", /control protocol/);
    assert.equal(r.outcome.session?.isLost, true);
  },
  /** Cancellation while the run is already in its grace period (after its deadline) changes nothing: the
   * escalation goes on to the kill; and a cancellation that itself leads to grace ends `cancelled`, killed. */
  "cancel-during-grace": async (run) => {
    const stubborn =
      "import time\nprint('armed', flush=True)\nwhile True:\n    try:\n        time.sleep(60)\n    except KeyboardInterrupt:\n        pass";
    await run("kept = 1", { session: "graceful" });
    const late = new AbortController();
    const timedOut = run(stubborn, { session: "graceful", timeoutMs: 500 }, late.signal);
    // The deadline at 500 ms, the interrupt window until 600 ms, then 1000 ms of grace: cancel in the middle.
    setTimeout(() => late.abort(), 1100);
    const r = await timedOut;
    assert.equal(r.outcome.status, "timeout");
    assert.equal(r.outcome.killed, true);
    assert.equal(r.outcome.session?.isLost, true);
    const abort = new AbortController();
    const cancelled = run(stubborn, {}, abort.signal);
    setTimeout(() => abort.abort(), 400);
    const c = await cancelled;
    assert.equal(c.outcome.status, "cancelled");
    assert.equal(c.outcome.killed, true);
  },
  /** A segfault: a fresh run reports the signal; a session is lost. */
  segfault: async (run) => {
    for (const extra of [{}, { session: "crash" }]) {
      const r = await run("import ctypes\nctypes.string_at(0)", extra);
      assert.equal(r.outcome.status, "runtime_error");
      assert.equal(r.outcome.signal, "SIGSEGV");
    }
  },
};

/** Shell sessions (exec_command's host side): one that exits within its window, one kept open, written to and
 * killed, one held past its window then ended by its own exit, and one whose output a process outside its group
 * holds (session tracking: the holder left the session), killed with SIGKILL: the group's end is found with the
 * output still open, the kill fails, and the session ends when the holder does; their pool, sessions and wake-ups are
 * recorded. */
const shellScenarios: Record<string, (host: SupervisorHost, cwd: string) => Promise<void>> = {
  "shell-sessions": async (host, cwd) => {
    const start = (command: string, yieldMs: number, callId: string) =>
      host.exec.start(startRequest(command, { cwd, yieldMs, callId }));
    const quick = await start("echo quick", 5000, "c1");
    assert.ok(quick.ok && !quick.value.running && quick.value.end?.code === 0);
    const cat = await start("cat", 100, "c2");
    assert.ok(cat.ok && cat.value.running, "cat waits for input");
    const bytes = new TextEncoder().encode("hello\n");
    const echoed = await host.exec.write({ id: cat.value.id, bytes, until: "answer", durationMs: 5000, callId: "c3" });
    assert.ok(echoed.ok);
    assert.equal(new TextDecoder().decode(echoed.value.output), "hello\n");
    const killed = await host.exec.kill(cat.value.id, "SIGTERM", "c4");
    assert.ok(killed?.killed, "kill_session stopped cat");
    const later = await start("sleep 0.3; echo done", 50, "c5");
    assert.ok(later.ok && later.value.running);
    const polled = await host.exec.write({ id: later.value.id, until: "full", durationMs: 5000, callId: "c6" });
    assert.ok(polled.ok && !polled.value.running && polled.value.end?.code === 0);
    // A shell that exits by itself just as kill_session comes: its cgroup is empty (the spin below runs in one turn)
    // while Node has read neither the end of its output nor its exit, so SIGTERM finds no process: no failed kill,
    // the group's end is looked for and the close (here read first) ends the session killed with its own exit.
    const fifo = join(cwd, "exits.fifo");
    execFileSync("mkfifo", [fifo]);
    const exiting = await start(`echo ready; read x < '${fifo}'; exit 0`, 300, "e1");
    assert.ok(exiting.ok && exiting.value.running);
    let said = new TextDecoder().decode(exiting.value.output);
    for (let i = 2; !said.includes("ready"); i++) {
      const more = await host.exec.write({ id: exiting.value.id, until: "full", durationMs: 200, callId: `e${i}` });
      assert.ok(more.ok && more.value.running);
      said += new TextDecoder().decode(more.value.output);
    }
    const pid = host.exec.sessions().find((x) => x.id === exiting.value.id)!.pid!;
    writeFileSync(fifo, "go\n");
    const until = Date.now() + 10_000;
    while (groupAlive(pid) && Date.now() < until);
    const gone = await host.exec.kill(exiting.value.id, "SIGTERM", "e0");
    assert.ok(gone?.killed && !gone.failure && gone.end?.code === 0, gone?.failure);
    process.env[CONTAINMENT_ENV] = "session";
    const held = await start("setsid sh -c 'echo outside; exec sleep 3' & sleep 30", 300, "c7").finally(
      () => delete process.env[CONTAINMENT_ENV],
    );
    assert.ok(held.ok && held.value.running);
    let printed = new TextDecoder().decode(held.value.output);
    for (let i = 8; !printed.includes("outside\n"); i++) {
      const more = await host.exec.write({ id: held.value.id, until: "full", durationMs: 200, callId: `c${i}` });
      assert.ok(more.ok && more.value.running);
      printed += new TextDecoder().decode(more.value.output);
    }
    const failed = await host.exec.kill(held.value.id, "SIGKILL", "k1");
    assert.ok(failed && !failed.killed && /outside the group holds it/.test(failed.failure ?? ""), failed?.failure);
    const ended = await host.exec.write({ id: held.value.id, until: "full", durationMs: 10_000, callId: "k2" });
    assert.ok(ended.ok && !ended.value.running, "the session ends with its holder");
  },
};

/** Scenarios that need a real Pi session (nested tool calls go through Pi's hooked tool dispatch). */
const piScenarios: Record<
  string,
  { needs: string; calls: Record<string, unknown>[]; fault?: true; check?: (results: { details: any }[]) => void }
> = {
  "nested-calls": {
    needs: PI_TOOLS,
    calls: [
      {
        session: "nest",
        code: [
          "import asyncio",
          "info = await json_info(name='a', count=2)",
          "print(info)",
          "print(await asyncio.gather(slow_tool(ms=120, tag='a'), slow_tool(ms=40, tag='b')))",
          "try:",
          "    await fail_tool()",
          "except Exception as e:",
          "    print(type(e).__name__)",
        ].join("\n"),
      },
    ],
  },
  /** A nested call blocked by its registration's `before`: the script catches the error, the run is a policy_error. */
  "blocked-nested-call": {
    needs: PI_TOOLS,
    fault: true,
    calls: [
      {
        session: "policy",
        code: "try:\n    await lifecycle_tool(mode='before-block')\nexcept RuntimeError as e:\n    print('caught:', e)",
      },
    ],
    check: ([r]) => {
      assert.equal(r.details.status, "policy_error");
      assert.equal(r.details.nestedCalls[0].status, "blocked");
    },
  },
};

export const FAULT_FIXTURE_DIR = join(FIXTURE_DIR, "faults");

const isFault = (name: string) => name in faultScenarios || piScenarios[name]?.fault === true;

export const scenarioNames = (): string[] => [
  ...Object.keys(scenarios),
  ...Object.keys(faultScenarios),
  ...Object.keys(shellScenarios),
  ...Object.entries(piScenarios)
    .filter(([, s]) => existsSync(s.needs))
    .map(([name]) => name),
];

async function recordInPi(name: string, outDir: string): Promise<string> {
  const { EXTENSION_PATH, startPi } = await import("../test/helpers/pi-session.ts");
  const scenario = piScenarios[name];
  const pi = await startPi({ extensionPaths: [EXTENSION_PATH, scenario.needs] });
  try {
    const results = await pi.callTools(scenario.calls);
    scenario.check?.(results);
  } finally {
    await pi.dispose();
  }
  const logs = join(pi.agentDir, "pi-code-supervisor", "logs");
  const files = readdirSync(logs);
  assert.equal(files.length, 1, "one log, one segment");
  const report = replayFile(join(logs, files[0]));
  if (!report.identical) throw new Error(`${name}: the new recording does not replay: ${formatReport(report, true)}`);
  mkdirSync(outDir, { recursive: true });
  const target = join(outDir, `${name}.jsonl`);
  copyFileSync(join(logs, files[0]), target);
  return target;
}

export async function recordScenario(name: string, outDir: string): Promise<string> {
  if (piScenarios[name]) return recordInPi(name, outDir);
  const runScenario = scenarios[name] ?? faultScenarios[name];
  const shellScenario = shellScenarios[name];
  if (!runScenario && !shellScenario) throw new Error(`unknown scenario ${name}; known: ${scenarioNames().join(", ")}`);
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), "pcs-fixture-cwd-")));
  const logs = mkdtempSync(join(tmpdir(), "pcs-fixture-log-"));
  const observer = new SystemObserver();
  const recorder = new Recorder(observer, { dir: logs, piSession: `fixture-${name}` });
  // Shell sessions keep their output logs beside the event log (not in Pi's agent directory: there is none here).
  const host = new SupervisorHost({ ...observer.hostOptions(), exec: { logDir: join(logs, "shell-logs") } });
  try {
    if (shellScenario) await shellScenario(host, cwd);
    else
      await runScenario!((code, extra = {}, signal) =>
        host.run({ code, cwd, timeoutMs: 20_000, ...extra }, signal ? { signal } : {}),
      );
  } finally {
    await host.shutdown();
    recorder.close("shutdown");
    rmSync(cwd, { recursive: true, force: true });
  }
  assert.equal(recorder.segments().length, 1, "a fixture is one segment");
  const report = replayFile(recorder.path);
  if (!report.identical) throw new Error(`${name}: the new recording does not replay: ${formatReport(report, true)}`);
  mkdirSync(outDir, { recursive: true });
  const target = join(outDir, `${name}.jsonl`);
  copyFileSync(recorder.path, target);
  rmSync(logs, { recursive: true, force: true });
  return target;
}

if (import.meta.main) {
  const names = process.argv.slice(2).length ? process.argv.slice(2) : scenarioNames();
  for (const name of names) {
    const path = await recordScenario(name, isFault(name) ? FAULT_FIXTURE_DIR : FIXTURE_DIR);
    console.log(`recorded ${path}: ${formatReport(replayFile(path))}`);
  }
}
