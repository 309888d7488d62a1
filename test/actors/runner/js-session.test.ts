// JavaScript sessions through the supervisor host: the generic runner actor with the `js` kind, the session and run
// machines, real Node runners (docs/protocol-js.md).
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { SupervisorHost, type RunRequestInput, type RunCallbacks } from "../../../host/host.ts";
import type { RunTools } from "../../../actors/calls/dispatch.ts";
import { fail, ok } from "../../../lib/result.ts";
import { listenToMarks } from "../../../lib/marks.ts";
import { sandboxOperations } from "../../../actors/process/sandbox.ts";
import { JS_RUNNER_PATH, RUNNER_PATH, jsKind } from "../../../actors/runner/kinds.ts";
import type { ProcessOperations } from "../../../actors/process/operations.ts";
import { dirname } from "node:path";
import { pidAlive, waitUntil } from "../../helpers/procs.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

let host: SupervisorHost;
let cwd: string;
const js = (code: string, extra: Partial<RunRequestInput> = {}, callbacks: RunCallbacks = {}) =>
  host.run({ code, cwd, timeoutMs: 20_000, session: "js", language: "js", ...extra }, callbacks);

before(() => {
  cwd = tempDir("pcs-js-session-");
  host = new SupervisorHost({ limits: { interruptWindowMs: 100, graceMs: 300, killMs: 300 } });
});
after(async () => {
  await host.shutdown();
  rmSync(cwd, { recursive: true, force: true });
});

function bridge(blocked: Set<string> = new Set()): RunTools {
  const tool = (name: string) => ({
    spec: { name, python: name, signature: `${name}()` },
    validate: (args: Record<string, unknown>) => ok(args),
  });
  return {
    callerId: "outer-call",
    cwd,
    tools: [tool("echo"), tool("slow")],
    emit: () => {},
    async execute(name, input, signal) {
      if (blocked.has(name))
        return { result: { content: [{ type: "text", text: "refused by policy" }] }, isError: true, blocked: true };
      if (name === "slow") await new Promise((r) => setTimeout(r, 50));
      if (signal.aborted) throw new Error("aborted");
      return { result: { content: [{ type: "text", text: `${name} ${JSON.stringify(input)}` }] }, isError: false };
    },
  };
}

describe("a JavaScript session", () => {
  test("a warm run's frames are named where they are written and read (bench/pi-marks.ts), the run's end after them", async () => {
    // A session of its own: the tests after this one start the `js` session.
    await js("1", { session: "js-marks" });
    const heard: string[] = [];
    listenToMarks((name) => heard.push(name));
    try {
      assert.equal((await js("2", { session: "js-marks" })).outcome.status, "success");
    } finally {
      listenToMarks(undefined);
    }
    const frames = heard.filter((n) => n.startsWith("runner."));
    assert.deepEqual(frames.slice(0, 2), ["runner.write", "runner.written"]);
    // The runtime's `started` and `done` come in one read or two, each handled before the next read.
    assert.match(frames.slice(2).join(" "), /^runner\.read runner\.handled( runner\.read runner\.handled)*$/);
    // Its end comes after the read that brought its `done` (the runtime's output order may hold it a turn).
    assert.ok(heard.indexOf("run.finished") > heard.lastIndexOf("runner.read"), heard.join(" "));
    assert.deepEqual(heard.slice(-2), ["host.outcome", "host.result"]);
  });

  test("keeps its state across runs, its output precedes its value, and says it runs Node", async () => {
    const first = await js("const n = 41\nconsole.log('printed')\nn + 1");
    assert.equal(first.outcome.status, "success");
    assert.equal(first.stdout, "printed\n42\n");
    assert.deepEqual(
      { language: first.outcome.runner?.language, version: first.outcome.runner?.python },
      { language: "js", version: process.versions.node },
    );
    assert.equal(first.outcome.session?.name, "js");
    assert.equal(first.outcome.session?.started, true);
    const second = await js("n * 2");
    assert.equal(second.stdout, "82\n");
    assert.equal(second.outcome.session?.started, false);
    const info = host.sessions().find((s) => s.name === "js");
    assert.equal(info?.language, "js");
    assert.equal(info?.pythonVersion, process.versions.node);
  });

  test("the version reported is the one the runner's ready frame names, and none when it names none", () => {
    // The runner runs under the host's own Node, so through a session the frame's version and the fallback (the
    // host's) are the same text: the kind is asked directly.
    const kind = jsKind({ env: () => ({}) });
    assert.equal(kind.version({ type: "ready", node: "99.1.0" }), "99.1.0");
    assert.equal(kind.version({ type: "ready", python: "3.12.0" }), undefined);
  });

  test("every run's output and value arrive before its outcome", async () => {
    for (let i = 0; i < 40; i++) {
      const r = await js(`console.log('line ${i}'); console.error('err ${i}'); ${i}`);
      assert.equal(r.stdout, `line ${i}\n${i}\n`);
      assert.equal(r.stderr, `err ${i}\n`);
    }
  });

  test("an error fails the run with the trimmed stack; state changed before it stays", async () => {
    const r = await js("var before = 'kept'\nnull.x");
    assert.equal(r.outcome.status, "runtime_error");
    assert.equal(r.outcome.session?.isLost, false);
    assert.match(r.stderr, /^cell-\d+\.js:2\nnull\.x\n {5}\^\n\nTypeError: Cannot read properties of null/);
    assert.equal((await js("before")).stdout, "kept\n");
  });

  test("at its deadline a pending await is rejected: the cell ends cleanly and the state is kept", async () => {
    const r = await js(
      "var phase = 'start'\ntry { await new Promise((r) => setTimeout(r, 60_000)) } finally { phase = 'cleaned'; console.log('cleanup ran') }",
      { timeoutMs: 200 },
    );
    assert.equal(r.outcome.status, "timeout");
    assert.equal(r.outcome.killed, false);
    assert.equal(r.outcome.session?.isLost, false);
    assert.equal(r.stdout, "cleanup ran\n");
    assert.match(r.stderr, /AbortError: the cell was interrupted/);
    assert.equal((await js("phase")).stdout, "cleaned\n");
  });

  test("a synchronous loop is killed at the end of its grace: the state is gone, Pi's event loop never stalls", async () => {
    await js("var survivor = 1");
    const pid = host.sessions().find((s) => s.name === "js")!.pid!;
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 10);
    const t0 = Date.now();
    const r = await js("while (true) {}", { timeoutMs: 300 });
    const elapsed = Date.now() - t0;
    clearInterval(timer);
    assert.equal(r.outcome.status, "timeout");
    assert.equal(r.outcome.killed, true);
    assert.equal(r.outcome.session?.isLost, true);
    assert.ok(ticks >= elapsed / 10 / 3, `Pi's timer fired ${ticks} times in ${elapsed} ms`);
    assert.ok(await waitUntil(() => !pidAlive(pid), 3000));
    const next = await js("typeof survivor");
    assert.equal(next.stdout, "undefined\n");
    assert.equal(next.outcome.session?.started, true);
    assert.equal(next.outcome.session?.replacedLost, true);
    assert.notEqual(host.sessions().find((s) => s.name === "js")?.pid, pid);
  });

  test("process.exit(3) ends the runtime: the run fails with exit code 3, its output is kept, the state is gone", async () => {
    await js("var x = 1");
    const r = await js("console.log('bye'); process.exit(3)");
    assert.equal(r.outcome.status, "runtime_error");
    assert.equal(r.outcome.exitCode, 3);
    assert.equal(r.outcome.session?.isLost, true);
    assert.equal(r.stdout, "bye\n");
    assert.equal((await js("typeof x")).stdout, "undefined\n");
  });

  test("tool calls go through the bridge, concurrently; a blocked call makes the run a policy_error even if caught", async () => {
    const r = await js(
      "const [a, b] = await Promise.all([tool.slow({ n: 1 }), tool.echo({ n: 2 })]);\n`${a} | ${b}`",
      {},
      { tools: bridge() },
    );
    assert.equal(r.outcome.status, "success", r.stderr);
    assert.equal(r.stdout, 'slow {"n":1} | echo {"n":2}\n');
    assert.deepEqual(
      r.outcome.nestedCalls?.map((c) => [c.registeredName, c.status]),
      [
        ["slow", "succeeded"],
        ["echo", "succeeded"],
      ],
    );
    const blocked = await js(
      "try { await tool.echo({}) } catch (e) { console.log('caught', e.name) }\n'went on'",
      {},
      { tools: bridge(new Set(["echo"])) },
    );
    assert.equal(blocked.outcome.status, "policy_error");
    assert.equal(blocked.stdout, "caught ToolBlockedError\nwent on\n");
  });

  test("a reset replaces the JavaScript runtime and leaves a Python session alone", async () => {
    const py = await host.run({ code: "kept = 'python'", cwd, timeoutMs: 20_000, session: "py" });
    assert.equal(py.outcome.status, "success", py.stderr);
    const pyPid = host.sessions().find((s) => s.name === "py")!.pid;
    await js("var gone = 1");
    const jsPid = host.sessions().find((s) => s.name === "js")!.pid!;
    const reset = await js("typeof gone", { reset: true });
    assert.equal(reset.stdout, "undefined\n");
    assert.ok(await waitUntil(() => !pidAlive(jsPid), 3000));
    const still = await host.run({ code: "kept", cwd, timeoutMs: 20_000, session: "py" });
    assert.equal(still.stdout, "python\n");
    assert.equal(host.sessions().find((s) => s.name === "py")!.pid, pyPid);
  });

  test("a session runs one language; JavaScript runs only in sessions", async () => {
    await js("1");
    const py = await host.run({ code: "1", cwd, timeoutMs: 5000, session: "js" });
    assert.equal(py.outcome.status, "setup_error");
    assert.match(py.outcome.message ?? "", /Session "js" runs JavaScript/);
    const fresh = await host.run({ code: "1", cwd, timeoutMs: 5000, language: "js" });
    assert.equal(fresh.outcome.status, "setup_error");
    assert.match(fresh.outcome.message ?? "", /JavaScript runs only in a session/);
  });

  test("shutdown takes the runtime's process group down", async () => {
    const own = new SupervisorHost();
    const r = await own.run({
      code: "require('node:child_process').spawn('sleep', ['30'], { stdio: 'ignore' }).pid",
      cwd,
      timeoutMs: 20_000,
      session: "js",
      language: "js",
    });
    const child = Number(r.stdout.trim());
    const pid = own.sessions().find((s) => s.name === "js")!.pid!;
    assert.ok(pidAlive(child) && pidAlive(pid));
    await own.shutdown();
    assert.ok(await waitUntil(() => !pidAlive(child) && !pidAlive(pid), 3000));
  });
});

describe("resource limits", () => {
  test("memoryMiB becomes V8's heap limit (Node cannot set rlimits on itself); without it, Node's default", async () => {
    const heapMiB = "require('v8').getHeapStatistics().heap_size_limit / 2 ** 20";
    const own = new SupervisorHost({ resourceLimits: () => ({ memoryMiB: 100 }) });
    try {
      const limited = await own.run({ code: heapMiB, cwd, timeoutMs: 20_000, session: "js", language: "js" });
      const unlimited = await js(heapMiB);
      assert.equal(limited.outcome.status, "success", limited.stderr);
      // The old space is the limit given; V8 adds the young generation's semi-spaces to it.
      const [mine, default_] = [Number(limited.stdout), Number(unlimited.stdout)];
      assert.ok(mine >= 100 && mine < 200, `${mine} MiB`);
      assert.ok(default_ > mine, `Node's default ${default_} MiB`);
    } finally {
      await own.shutdown();
    }
  });
});

describe("JavaScript sessions and the process backends", () => {
  test("in the sandbox: state kept, the interrupt reaches the cell, a loop is killed with its sandbox", async () => {
    const own = new SupervisorHost({
      ops: sandboxOperations({
        network: false,
        writable: [],
        readable: [],
        support: [dirname(RUNNER_PATH), dirname(JS_RUNNER_PATH)],
      }),
      limits: { interruptWindowMs: 100, graceMs: 300, killMs: 300 },
    });
    const run = (code: string, timeoutMs = 20_000) => own.run({ code, cwd, timeoutMs, session: "js", language: "js" });
    try {
      const first = await run("var n = 1\nrequire('node:fs').readdirSync(require('node:os').homedir()).length");
      assert.equal(first.outcome.status, "success", first.stderr);
      assert.equal(first.stdout, "0\n", "the home directory is hidden in the sandbox");
      const waited = await run("await new Promise((r) => setTimeout(r, 60_000))", 300);
      assert.equal(waited.outcome.status, "timeout");
      assert.equal(waited.outcome.session?.isLost, false);
      assert.equal((await run("n + 1")).stdout, "2\n");
      const loop = await run("while (true) {}", 300);
      assert.equal(loop.outcome.killed, true);
      assert.equal(loop.outcome.session?.isLost, true);
    } finally {
      await own.shutdown();
    }
  });

  test("the remote backend runs Python only: a JavaScript cell says so and starts nothing", async () => {
    let started = 0;
    const remote: ProcessOperations = {
      backend: { kind: "remote", label: "remote ssh user@example:/srv" },
      start: async () => {
        started += 1;
        return fail({ message: "not reached" });
      },
      spawn: async () => {
        started += 1;
        return fail({ message: "not reached" });
      },
      health: async () => ok("stub"),
      close: async () => {},
    };
    const own = new SupervisorHost({ ops: remote });
    try {
      const r = await own.run({ code: "1", cwd, timeoutMs: 5000, session: "js", language: "js" });
      assert.equal(r.outcome.status, "setup_error");
      assert.match(r.outcome.message ?? "", /JavaScript cells run on this machine or in the sandbox; the remote ssh/);
      assert.equal(started, 0);
    } finally {
      await own.shutdown();
    }
  });
});
