// Faults on nested tool calls, against real runners and the real host (runner, machines, dispatch actors); the Pi
// side is a RunTools whose tools are plain functions (what Pi adds is covered in test/actors/calls/calls.test.ts,
// including a foreign local process that finds no channel into the runner or the host).
//
// User code runs inside the runner, so it can write any frame to the control channel itself: through the runner's
// own locked writer (`pcs_runner._write_frame`, so frames never interleave) or raw `os.write` on the descriptor.
// Forged, replayed or malformed frames must never be mistaken for the real calls: each real call gets its own
// answer, its record stays, and the supervisor keeps serving. Then 10 000 calls at once, through the runner's cap
// and, forged, past it into the host's.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { RunTool, RunTools } from "../../../actors/calls/contract.ts";
import { SupervisorHost, type RunResult } from "../../../host/host.ts";
import { liveGroups } from "../../../actors/registry/registry.ts";
import { MAX_OPEN_CALLS } from "../../../machines/tool-events.ts";
import { waitUntil } from "../../helpers/procs.ts";
import { RunnerDriver } from "../../helpers/runner-driver.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

interface Probe {
  /** Every execution: `name:arg`. */
  executed: string[];
  running: number;
  maxRunning: number;
  aborted: number;
  /** What `hold` calls wait for; `openGate()` releases them and every later one. */
  gate: () => Promise<void>;
  openGate: () => void;
}

function makeProbe(): Probe {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  return { executed: [], running: 0, maxRunning: 0, aborted: 0, gate: () => gate, openGate: () => release() };
}

const tool = (name: string, signature: string): RunTool => ({
  spec: { name, python: name, signature },
  validate: (args) => ({ ok: true, value: args }),
});

/** Tools: `echo(x)` answers at once; `hold(i)` when the probe's gate opens; `release()` opens it. Frames on the
 * channel are handled in order, so a script that forged a frame and then awaits `release()` knows the host has
 * seen the forgery before any held call ends: no timing is involved. */
function toolsFor(probe: Probe): RunTools {
  return {
    callerId: "outer-call",
    cwd: "/",
    tools: [tool("echo", "echo(*, x: str)"), tool("hold", "hold(*, i: int)"), tool("release", "release()")],
    emit() {},
    async execute(name, input, signal) {
      const arg = String(input.x ?? input.i ?? "");
      probe.executed.push(`${name}:${arg}`);
      if (name === "release") probe.openGate();
      probe.running++;
      probe.maxRunning = Math.max(probe.maxRunning, probe.running);
      const aborted = new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true }));
      if (name === "hold") await Promise.race([probe.gate(), aborted]);
      probe.running--;
      if (signal.aborted) probe.aborted++;
      return { result: { content: [{ type: "text", text: `${name}:${arg}` }] }, isError: false };
    },
  };
}

let host: SupervisorHost;
let cwd: string;
const run = (code: string, probe: Probe, extra: { session?: string; timeoutMs?: number } = {}): Promise<RunResult> =>
  host.run({ code, cwd, timeoutMs: extra.timeoutMs ?? 20_000, ...extra }, { tools: toolsFor(probe) });

/** Helpers the scripts use: the runner module, its current run id and the id of the newest call. */
const PRELUDE = [
  "import asyncio, json, os, sys",
  "_r = sys.modules['pcs_runner']",
  "_r._load_pi_tools()",
  "def forge(**frame):",
  "    _r._write_frame(json.dumps(frame).encode())",
  "def last_id():",
  "    return 'c%d' % _r._pi_tools._seq",
  "",
].join("\n");

const statuses = (r: RunResult) => (r.outcome.nestedCalls ?? []).map((c) => `${c.seq}:${c.registeredName}:${c.status}`);

/** The supervisor still serves: a session run and a fresh run each make a real call that correlates. */
async function stillServing(session: string) {
  const probe = makeProbe();
  for (const extra of [{ session }, {}]) {
    const r = await run("print(await echo(x='again'))", probe, extra);
    assert.equal(r.stdout, "echo:again\n", r.stderr);
    assert.deepEqual(statuses(r), ["1:echo:succeeded"]);
  }
}

before(() => {
  cwd = tempDir("pcs-calls-faults-");
  host = new SupervisorHost({ limits: { graceMs: 300, killMs: 300 } });
});
after(async () => {
  await host.shutdown();
  assert.deepEqual(liveGroups(host.id), [], "no process group left");
});

describe("forged and replayed frames from user code", () => {
  // Each script starts a real call (`hold`, waiting), forges a frame about it, releases the call, and prints the
  // answer it gets.
  const waitingCall = "t = asyncio.ensure_future(hold(i=0))\nawait asyncio.sleep(0)\ncid = last_id()\n";
  const releaseAndPrint = "\nawait release()\nprint(await t)";

  test("a forged tool.result sent to the host is not an answer: the real call gets the real one", async () => {
    const probe = makeProbe();
    const r = await run(
      `${PRELUDE}${waitingCall}forge(type='tool.result', id=cid, run=_r._tools_run, status='ok', text='FORGED')${releaseAndPrint}`,
      probe,
      { session: "forge" },
    );
    assert.equal(r.stdout, "hold:0\n", r.stderr);
    assert.deepEqual(statuses(r), ["1:hold:succeeded", "2:release:succeeded"]);
    await stillServing("forge");
  });

  test("a second tool.call under a waiting call's id is dropped: never run, never answered, the record stays", async () => {
    const probe = makeProbe();
    const r = await run(
      `${PRELUDE}${waitingCall}forge(type='tool.call', id=cid, run=_r._tools_run, name='echo', args={'x': 'FORGED'})${releaseAndPrint}`,
      probe,
      { session: "forge" },
    );
    assert.equal(r.stdout, "hold:0\n", r.stderr);
    assert.deepEqual(probe.executed, ["hold:0", "release:"], "the forged call never ran");
    assert.deepEqual(statuses(r), ["1:hold:succeeded", "2:release:succeeded"], "the real call's record is kept");
    await stillServing("forge");
  });

  test("a tool.call naming another run (a past one, or made up) is refused to that run; the real call is untouched", async () => {
    const probe = makeProbe();
    const first = await run(`${PRELUDE}print(await echo(x='first'))\nprev = _r._tools_run`, probe, {
      session: "forge",
    });
    assert.equal(first.stdout, "echo:first\n");
    const r = await run(
      `${PRELUDE}${waitingCall}for other in (prev, 'made-up'):\n    forge(type='tool.call', id=cid, run=other, name='echo', args={'x': 'FORGED'})${releaseAndPrint}`,
      probe,
      { session: "forge" },
    );
    assert.equal(r.stdout, "hold:0\n", r.stderr);
    assert.deepEqual(probe.executed, ["echo:first", "hold:0", "release:"]);
    assert.deepEqual(statuses(r), ["1:hold:succeeded", "2:release:succeeded"]);
  });

  test("a call frame replayed from an earlier run is refused; replayed in its own run after its answer, it is a new call", async () => {
    const probe = makeProbe();
    // Run 1 keeps the exact bytes of its real call frame.
    const capture = [
      PRELUDE,
      "sent = []",
      "_w = _r._write_frame",
      "_r._pi_tools._write = lambda data: (sent.append(data), _w(data))[1]",
      "print(await echo(x='once'))",
      "_r._pi_tools._write = _w",
    ].join("\n");
    const first = await run(capture, probe, { session: "replay" });
    assert.equal(first.stdout, "echo:once\n", first.stderr);
    const replayOld = await run(`${PRELUDE}_r._write_frame(sent[0])\nprint('replayed')`, probe, {
      session: "replay",
    });
    assert.equal(replayOld.stdout, "replayed\n");
    assert.equal(replayOld.outcome.nestedCalls, undefined, "refused before any call started");
    assert.deepEqual(probe.executed, ["echo:once"]);
    // In its own run, a finished call's frame again: user code could make that call itself; it runs and is recorded.
    const again = [
      PRELUDE,
      "sent = []",
      "_w = _r._write_frame",
      "_r._pi_tools._write = lambda data: (sent.append(data), _w(data))[1]",
      "print(await echo(x='twice'))",
      "_r._pi_tools._write = _w",
      "_r._write_frame(sent[0])",
      "await echo(x='after');",
    ].join("\n");
    const r = await run(again, probe, { session: "replay" });
    assert.equal(r.stdout, "echo:twice\n", r.stderr);
    assert.deepEqual(statuses(r), ["1:echo:succeeded", "2:echo:succeeded", "3:echo:succeeded"]);
    assert.deepEqual(probe.executed.slice(-3), ["echo:twice", "echo:twice", "echo:after"]);
    await stillServing("replay");
  });

  test("malformed call and cancel frames are answered or ignored, never started; the run and the session go on", async () => {
    const probe = makeProbe();
    const frames = [
      "dict(type='tool.call', run=_r._tools_run, name='echo', args={'x': 'no id'})",
      "dict(type='tool.call', id=7, run=_r._tools_run, name='echo', args={'x': 'numeric id'})",
      "dict(type='tool.call', id='x' * 65, run=_r._tools_run, name='echo', args={'x': 'long id'})",
      "dict(type='tool.call', id='m1', run=_r._tools_run, name=['echo'], args={'x': 'bad name'})",
      "dict(type='tool.call', id='m2', run=_r._tools_run, name='echo', args=['not', 'an', 'object'])",
      "dict(type='tool.call', id='m3', run=_r._tools_run, name='not_exposed', args={})",
      "dict(type='tool.call', id='m4', run=None, name='echo', args={'x': 'no run'})",
      "dict(type='tool.cancel', id='c999999', run=_r._tools_run)",
      "dict(type='tool.cancel', id='m5', run='made-up')",
    ];
    const code = `${PRELUDE}for f in [${frames.join(", ")}]:\n    forge(**f)\nprint(await echo(x='real'))`;
    const r = await run(code, probe, { session: "malformed" });
    assert.equal(r.stdout, "echo:real\n", r.stderr);
    assert.deepEqual(probe.executed, ["echo:real"], "no malformed frame ran anything");
    // Only a well-formed call of this run reaches the machine: the unexposed tool is recorded as failed.
    assert.deepEqual(statuses(r), ["1:not_exposed:failed", "2:echo:succeeded"]);
    await stillServing("malformed");
  });

  // Before the fix, the session ended in the same step and stopped its run while it waited for these calls: the
  // run never reported and its caller waited forever.
  for (const [fault, write, message] of [
    ["garbage written to the channel", "os.write(_r._CTL, b'\\x00\\x00\\x00\\x05nope!')", /control protocol/],
    ["the process SIGKILLed", "os.kill(os.getpid(), 9)", undefined],
  ] as const) {
    test(`${fault} while calls wait: the run reports, their tools are aborted, the calls recorded, the session lost`, async () => {
      const probe = makeProbe();
      // The fault comes once all five calls are running in their tools (a file says so).
      const flag = join(cwd, `all-running-${fault.length}`);
      const code = [
        PRELUDE,
        "ts = [asyncio.ensure_future(hold(i=i)) for i in range(5)]",
        `while not os.path.exists(${JSON.stringify(flag)}):`,
        "    await asyncio.sleep(0.01)",
        write,
        "await asyncio.sleep(30)",
      ].join("\n");
      const pending = run(code, probe, { session: "dies", timeoutMs: 20_000 });
      assert.ok(await waitUntil(() => probe.running === 5, 15_000), "five calls running");
      writeFileSync(flag, "");
      const r = await pending;
      assert.equal(r.outcome.status, "runtime_error");
      assert.equal(r.outcome.session?.isLost, true);
      if (message) assert.match(r.outcome.message ?? "", message);
      else assert.equal(r.outcome.signal, "SIGKILL");
      assert.ok(await waitUntil(() => probe.aborted === 5, 5000), "each waiting tool saw its signal abort");
      assert.deepEqual(
        statuses(r),
        [1, 2, 3, 4, 5].map((i) => `${i}:hold:cancelled`),
      );
      assert.match(r.outcome.nestedCalls![0].error!.text, /process ended while this call was open/);
      await stillServing("dies");
    });
  }
});

describe("the runner's side of correlation (the test plays the host)", () => {
  test("an answer under a waiting call's id but naming another run is dropped; the right one is delivered", async () => {
    const d = await RunnerDriver.start({ mode: "session" });
    try {
      const tools = [{ name: "echo", python: "echo", signature: "echo(*, x: str)" }];
      const mark = d.startRun("print(await echo(x='real'))", { extra: { tools } });
      const call = await d.waitFrame("tool.call");
      // What the host sends when it refuses a forged call for another run that reused this id.
      d.send({ type: "tool.result", id: call.id, run: "another-run", status: "error", text: "WRONG" });
      d.send({ type: "tool.result", id: call.id, run: call.run, status: "ok", text: "right" });
      const r = await d.finishRun(mark);
      assert.equal(r.stdout, "right\n", r.stderr);
    } finally {
      await d.close();
    }
  });
});

describe("10 000 calls at once", () => {
  test("through the runner: 1024 wait, the rest fail at once with a clear error; every answer correlates", async () => {
    const probe = makeProbe();
    const t0 = performance.now();
    // Every call is issued (each task's first step: wait or fail) before any answer: the script says `issued` once
    // all 10 000 first steps ran, and the gate opens only then. Opened earlier, answers freed places while later
    // calls were still being issued (a blocked frame write paused them) and more than 1024 succeeded (1029 once,
    // under load): right by the cap (it bounds calls waiting at once), wrong for this test's count.
    let issued = false;
    const pending = host.run(
      {
        code: [
          "import asyncio, sys",
          "tasks = [asyncio.ensure_future(hold(i=i)) for i in range(10_000)]",
          "await asyncio.sleep(0)  # after every task's first step",
          "sys.stdout.write('issued\\n'); sys.stdout.flush()",
          "rs = await asyncio.gather(*tasks, return_exceptions=True)",
          "ok = [(i, r) for i, r in enumerate(rs) if not isinstance(r, BaseException)]",
          "print(len(ok), all(r == f'hold:{i}' for i, r in ok))",
          "print(sorted({str(e) for e in rs if isinstance(e, BaseException)}))",
        ].join("\n"),
        cwd,
        timeoutMs: 200_000,
        session: "ten-k",
      },
      { tools: toolsFor(probe), onOutput: (o) => (issued ||= o.preview().stdout.includes("issued")) },
    );
    await waitUntil(() => issued && probe.running >= MAX_OPEN_CALLS, 200_000 - (performance.now() - t0));
    probe.openGate();
    const r = await pending;
    const seconds = (performance.now() - t0) / 1000;
    assert.equal(r.outcome.status, "success", r.stderr);
    assert.equal(
      r.stdout,
      `issued\n1024 True\n['hold(): 1024 tool calls are already waiting; limit the concurrency (e.g. asyncio.Semaphore)']\n`,
    );
    assert.equal(probe.maxRunning, MAX_OPEN_CALLS, "1024 ran at the same time");
    assert.equal(r.outcome.nestedCalls?.length, MAX_OPEN_CALLS, "refused in Python: never sent");
    assert.ok(seconds < 240, `${seconds.toFixed(1)} s`); // a hang guard: 65 s once under CI load; speed is bench/calls.ts's
    await stillServing("ten-k");
  });

  test("forged past the runner's cap: the host holds 1024, refuses the rest, cancels the held ones when the run ends", async () => {
    const probe = makeProbe();
    const t0 = performance.now();
    const r = await run(
      [
        PRELUDE,
        "run = _r._tools_run",
        "for i in range(10_000):",
        "    forge(type='tool.call', id='f%d' % i, run=run, name='hold', args={'i': i})",
        "print('sent')",
      ].join("\n"),
      probe,
      { session: "ten-k-forged", timeoutMs: 200_000 },
    );
    const seconds = (performance.now() - t0) / 1000;
    assert.equal(r.stdout, "sent\n", r.stderr);
    assert.equal(r.outcome.status, "success");
    assert.equal(probe.maxRunning, MAX_OPEN_CALLS, "never more than 1024 in flight");
    assert.equal(probe.aborted, MAX_OPEN_CALLS, "the held calls were cancelled when the run ended");
    const records = r.outcome.nestedCalls ?? [];
    assert.equal(records.length, 10_000, "every attempt recorded");
    const count = (s: string) => records.filter((c) => c.status === s).length;
    assert.equal(count("cancelled"), MAX_OPEN_CALLS);
    assert.equal(count("failed"), 10_000 - MAX_OPEN_CALLS);
    assert.match(records.find((c) => c.status === "failed")!.error!.text, /1024 tool calls are already in flight/);
    assert.ok(seconds < 240, `${seconds.toFixed(1)} s`); // a hang guard: 65 s once under CI load; speed is bench/calls.ts's
    await stillServing("ten-k-forged");
  });
});
