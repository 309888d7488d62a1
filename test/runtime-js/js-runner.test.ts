// runtime-js/runner.js against real Node processes, real pipes and real signals (contract: docs/protocol-js.md).
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isAlive, sleep, type RunnerDriver } from "../helpers/runner-driver.ts";
import { waitUntil } from "../helpers/procs.ts";
import { runCell, startJs, turn, type CellResult } from "../helpers/js-runner.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const drivers: RunnerDriver[] = [];
after(async () => {
  await Promise.all(drivers.map((d) => d.close()));
});

async function start(cwd = tempDir("pcs-js-")): Promise<RunnerDriver> {
  const d = await startJs({ cwd });
  drivers.push(d);
  return d;
}

function ok(r: CellResult): void {
  assert.equal(r.done.error, null, `cell failed: ${r.stderr}${r.done.exception ?? ""}`);
  assert.equal(r.done.exitCode, 0);
}

const TOOLS = {
  tools: [
    { name: "read", python: "read", signature: "" },
    { name: "bash", python: "bash", signature: "" },
  ],
};

describe("start-up and process layout", () => {
  it("says ready with its pid and Node's version", async () => {
    const d = await start();
    assert.deepEqual(d.ready, {
      type: "ready",
      protocol: 1,
      pid: d.pid,
      node: process.versions.node,
      executable: process.execPath,
      mode: "session",
    });
  });

  it("keeps the control channel from subprocesses of user code", async () => {
    const d = await start();
    const channel = readlinkSync(`/proc/${d.pid}/fd/3`);
    assert.match(channel, /^socket:/);
    const r = await runCell(
      d,
      `require('node:child_process').execFileSync('sh', ['-c', 'ls -l /proc/$$/fd/ || true']).toString()`,
    );
    ok(r);
    assert.ok(!r.stdout.includes(channel), `a subprocess holds the control channel:\n${r.stdout}`);
  });

  it("refuses a start without --mode session", async () => {
    const d = await startJs({
      args: [(await import("../helpers/js-runner.ts")).JS_RUNNER_PATH, "--mode", "fresh"],
      waitReady: false,
    });
    drivers.push(d);
    const f = await d.waitFrame("fatal");
    assert.match(String(f.message), /usage/);
    assert.equal((await d.waitExit()).code, 70);
  });
});

describe("cells", () => {
  it("keeps state across cells; declarations may be repeated", async () => {
    const d = await start();
    ok(await runCell(d, "const x = 41\nlet y = 1\nclass A { v() { return 1 } }\nfunction f() { return 'f' }"));
    const r = await runCell(d, "x + y + new A().v()");
    ok(r);
    assert.equal(r.stdout, "43\n");
    ok(await runCell(d, "const x = 1; class A { v() { return 2 } }"));
    const again = await runCell(d, "[x, new A().v(), f()]");
    assert.deepEqual(JSON.parse(String(again.displays[0]?.text)), [1, 2, "f"]);
  });

  it("runs top-level await and return; an async cell's declarations persist", async () => {
    const d = await start();
    const r = await runCell(
      d,
      "const a = await Promise.resolve(20)\nconst { b, c: [d] } = { b: 1, c: [1] }\nasync function g() { return 1 }\na + b + d + await g()",
    );
    ok(r);
    assert.equal(r.stdout, "23\n");
    const later = await runCell(d, "a + b + d + (await g())");
    assert.equal(later.stdout, "23\n");
    const ret = await runCell(d, "if (a > 1) return 'early'\n'late'");
    assert.equal(ret.stdout, "early\n");
    const inBlock = await runCell(d, "for (const x of [1, 2]) {\n  if (x > 1) { return `early ${x}` }\n}\n'late'");
    assert.equal(inBlock.stdout, "early 2\n");
    const bare = await runCell(d, "console.log('before'); return\nconsole.log('never')");
    ok(bare);
    assert.equal(bare.stdout, "before\n");
    assert.equal(bare.done.displayedValue, false);
  });

  it("shows values: strings as text, objects as JSON, undefined not at all; thenables are awaited", async () => {
    const d = await start();
    const text = await runCell(d, "'hello'");
    assert.equal(text.stdout, "hello\n");
    assert.equal(text.done.displayedValue, true);
    const json = await runCell(d, "({ a: [1, 2], b: 'c' })");
    assert.equal(json.stdout, "");
    assert.deepEqual(
      json.displays.map((f) => [f.kind, f.text]),
      [["json", '{"a":[1,2],"b":"c"}']],
    );
    const none = await runCell(d, "undefined");
    assert.equal(none.done.displayedValue, false);
    assert.equal(none.stdout, "");
    const promised = await runCell(d, "Promise.resolve(5)");
    assert.equal(promised.stdout, "5\n");
    const map = await runCell(d, "new Map([[1, 'one']])");
    assert.equal(map.stdout, "Map(1) { 1 => 'one' }\n");
  });

  it("display(): JSON, text, images; a bad image says why", async () => {
    const d = await start();
    const png = Buffer.from("89504e470d0a1a0a", "hex");
    const r = await runCell(
      d,
      [
        "console.log('first')",
        "display({ n: 1 })",
        "display('words')",
        "display(7)",
        `display({ type: 'image', mimeType: 'image/png', data: Buffer.from('${png.toString("hex")}', 'hex') })`,
        "display({ type: 'image', mimeType: 'image/png', data: 'not base64!' })",
        "display({ type: 'image', mimeType: 'image/svg+xml', data: '<svg/>' })",
        "display(undefined)",
      ].join("\n"),
    );
    ok(r);
    assert.equal(r.stdout, "first\n");
    assert.deepEqual(
      r.displays.map(({ kind, text, mime, data }) => ({ kind, text, mime, data })),
      [
        { kind: "json", text: '{"n":1}', mime: undefined, data: undefined },
        { kind: "text", text: "words", mime: undefined, data: undefined },
        { kind: "text", text: "7", mime: undefined, data: undefined },
        { kind: "image", text: undefined, mime: "image/png", data: png.toString("base64") },
        {
          kind: "text",
          text: "[display: image not shown: `data` is not valid base64]",
          mime: undefined,
          data: undefined,
        },
        { kind: "image", text: undefined, mime: "image/svg+xml", data: "<svg/>" },
      ],
    );
  });

  it("value mode: the value and the error text come back in done", async () => {
    const d = await start();
    const v = await runCell(d, "'text value'", { extra: { result: "value" } });
    assert.equal(v.done.value, "text value");
    assert.equal(v.stdout, "");
    const e = await runCell(d, "null.x", { extra: { result: "value" } });
    assert.equal(e.done.error, "exception");
    assert.match(String(e.done.exception), /TypeError: Cannot read properties of null/);
    assert.equal(e.stderr, "");
  });

  it("console, print and raw writes are captured in order per channel", async () => {
    const d = await start();
    const r = await runCell(
      d,
      "console.log('a'); print('b', 1, { c: 2 }); process.stdout.write('c\\n'); console.error('e'); console.warn('w')",
    );
    ok(r);
    assert.equal(r.stdout, "a\nb 1 { c: 2 }\nc\n");
    assert.equal(r.stderr, "e\nw\n");
  });
});

describe("errors", () => {
  it("trims the stack to the cells, with cell line numbers and the line that threw", async () => {
    const d = await start();
    ok(await runCell(d, "function outer() {\n  return inner()\n}\nfunction inner() {\n  return null.x\n}"));
    const r = await runCell(d, "const before = 1\nouter()");
    assert.equal(r.done.error, "exception");
    assert.equal(r.done.exitCode, 1);
    const cellA = r.stderr.match(/^(cell-\d+\.js):5$/m)?.[1];
    assert.ok(cellA, r.stderr);
    assert.match(r.stderr, /^  return null\.x\n {14}\^\n\nTypeError: Cannot read properties of null \(reading 'x'\)$/m);
    assert.match(
      r.stderr,
      new RegExp(`at inner \\(${cellA}:5:15\\)\\n    at outer \\(${cellA}:2:10\\)\\n    at cell-\\d+\\.js:2:1\\n$`),
    );
    assert.doesNotMatch(r.stderr, /runner\.js|node:vm|runtime-js/);
    const state = await runCell(d, "before");
    assert.equal(state.stdout, "1\n", "state changed before the error stays");
  });

  it("gives an async cell's errors their own line numbers", async () => {
    const d = await start();
    const r = await runCell(d, "const a = 1\nawait null\n\nthrow new RangeError('deep')");
    assert.equal(r.done.error, "exception");
    assert.match(
      r.stderr,
      /^cell-\d+\.js:4\nthrow new RangeError\('deep'\)\n {6}\^\n\nRangeError: deep\n    at cell-\d+\.js:4:7\n$/,
    );
  });

  it("reports a syntax error against the user's own line", async () => {
    const d = await start();
    const r = await runCell(d, "const ok = 1\nconst bad = (1 +\n");
    assert.equal(r.done.error, "syntax");
    assert.match(r.stderr, /^cell-\d+\.js:\d\n.*\n.*\n\nSyntaxError: Unexpected end of input\n$/);
    const r2 = await runCell(d, "let a = 1\nfoo(\nbar baz)");
    assert.match(r2.stderr, /^cell-\d+\.js:3\nbar baz\)\n\^+\n\nSyntaxError: missing \) after argument list\n$/);
  });

  it("shows a thrown non-error value", async () => {
    const d = await start();
    const r = await runCell(d, "throw { code: 7 }");
    assert.equal(r.done.error, "exception");
    assert.equal(r.stderr, "{ code: 7 }\n");
  });

  it("a timer's throw during a cell fails it; the runtime and its state stay", async () => {
    const d = await start();
    const r = await runCell(
      d,
      "var kept = 'yes'\nsetTimeout(() => { throw new Error('from a timer') }, 5)\nawait new Promise((r) => setTimeout(r, 50))\n'after'",
    );
    assert.equal(r.done.error, "exception");
    assert.equal(r.stdout, "after\n");
    assert.match(r.stderr, /Uncaught Error: from a timer\n    at Timeout\._onTimeout \(cell-\d+\.js:2:26\)/);
    assert.ok(isAlive(d.pid));
    assert.equal((await runCell(d, "kept")).stdout, "yes\n");
  });

  it("an error after its cell ended is reported by the next cell, which still succeeds", async () => {
    const d = await start();
    ok(
      await runCell(
        d,
        "setTimeout(() => { throw new Error('late') }, 5); Promise.reject(new Error('unseen')).catch(() => {}); 'quick'",
      ),
    );
    await sleep(60);
    const r = await runCell(d, "'next'");
    ok(r);
    assert.equal(r.stdout, "next\n");
    assert.match(
      r.stderr,
      /^\[errors after an earlier cell ended\]\ncell-\d+\.js:1\n.*\n +\^\n\nUncaught Error: late\n/,
    );
  });

  it("a rejection left floating fails its cell", async () => {
    const d = await start();
    const r = await runCell(d, "Promise.reject(new Error('floating')); 1");
    assert.equal(r.done.error, "exception");
    assert.match(r.stderr, /Uncaught \(in promise\) Error: floating/);
  });
});

describe("imports", () => {
  it("reloads local modules in each cell and keeps packages and node: modules", async () => {
    const cwd = tempDir("pcs-js-");
    writeFileSync(join(cwd, "dep.mjs"), "export const dep = 'dep v1';\n");
    writeFileSync(
      join(cwd, "local.mjs"),
      "import { dep } from './dep.mjs';\nexport const v = 'v1 ' + dep;\nexport const id = Math.random();\n",
    );
    writeFileSync(join(cwd, "old.cjs"), "module.exports = { v: 'cjs v1' };\n");
    mkdirSync(join(cwd, "node_modules", "pkg"), { recursive: true });
    writeFileSync(
      join(cwd, "node_modules", "pkg", "package.json"),
      JSON.stringify({ name: "pkg", exports: { import: "./i.mjs" } }),
    );
    writeFileSync(join(cwd, "node_modules", "pkg", "i.mjs"), "export const id = Math.random();\n");
    const d = await start(cwd);
    const first = await runCell(
      d,
      "import { v, id } from './local.mjs'\nimport * as pkg from 'pkg'\nimport { readFileSync } from 'node:fs'\nconst old = await import('./old.cjs')\nglobalThis.firstPkg = pkg;\n[v, old.default.v, typeof readFileSync]",
    );
    ok(first);
    assert.deepEqual(JSON.parse(String(first.displays[0]?.text)), ["v1 dep v1", "cjs v1", "function"]);
    writeFileSync(join(cwd, "dep.mjs"), "export const dep = 'dep v2';\n");
    writeFileSync(
      join(cwd, "local.mjs"),
      "import { dep } from './dep.mjs';\nexport const v = 'v2 ' + dep;\nexport const id = Math.random();\n",
    );
    writeFileSync(join(cwd, "old.cjs"), "module.exports = { v: 'cjs v2' };\n");
    const second = await runCell(
      d,
      `import { v } from './local.mjs'\nimport * as pkg from 'pkg'\nconst old = await import('${join(cwd, "old.cjs")}');\n[v, old.default.v, pkg === firstPkg]`,
    );
    ok(second);
    assert.deepEqual(JSON.parse(String(second.displays[0]?.text)), ["v2 dep v2", "cjs v2", true]);
  });

  it("says where an import failed", async () => {
    const d = await start();
    const r = await runCell(d, "import x from './missing.mjs'");
    assert.equal(r.done.error, "exception");
    assert.match(r.stderr, /Cannot find module '.*missing\.mjs'/);
  });

  it("gives require() relative to the working directory", async () => {
    const cwd = tempDir("pcs-js-");
    writeFileSync(join(cwd, "data.json"), '{"k": 3}');
    const d = await start(cwd);
    const r = await runCell(d, "require('./data.json').k + path.basename(process.cwd()).length * 0");
    assert.equal(r.stdout, "3\n");
  });
});

describe("helpers", () => {
  it("read, write and env", async () => {
    const cwd = tempDir("pcs-js-");
    writeFileSync(join(cwd, "lines.txt"), "one\ntwo\nthree\nfour\n");
    const d = await start(cwd);
    const r = await runCell(
      d,
      "await write('sub/dir/out.txt', 'hello')\nconst all = await read('sub/dir/out.txt')\nconst part = await read('lines.txt', 2, 2)\nconst opt = await read('lines.txt', { offset: 3 })\nenv('PCS_JS_TEST', 'set');\n[all, part, opt, env('PCS_JS_TEST'), typeof env().PATH]",
    );
    ok(r);
    assert.deepEqual(JSON.parse(String(r.displays[0]?.text)), [
      "hello",
      "two\nthree\n",
      "three\nfour\n",
      "set",
      "string",
    ]);
    assert.equal(readFileSync(join(cwd, "sub/dir/out.txt"), "utf8"), "hello");
    const dir = await runCell(d, "await read('sub')");
    assert.equal(dir.done.error, "exception");
    assert.match(dir.stderr, /read\(\): \S+\/sub is a directory, not a file/);
    const bad = await runCell(d, "await write('x.json', { a: 1 })");
    assert.match(bad.stderr, /TypeError: write\(\): the content must be a string or bytes/);
  });
});

describe("interrupts", () => {
  it("rejects the pending await with an AbortError; cleanup runs and state stays", async () => {
    const d = await start();
    const mark = d.startRun(
      "var cleaned = false\ntry {\n  await new Promise((r) => setTimeout(r, 1e6))\n} finally {\n  cleaned = true\n  console.log('cleanup')\n}",
      { filename: "cell-int.js" },
    );
    await d.waitFrame((f) => f.type === "started" && f.id === mark.id);
    await sleep(30);
    d.send({ type: "interrupt", id: mark.id });
    const done = await d.waitFrame((f) => f.type === "done" && f.id === mark.id);
    await turn();
    assert.equal(done.error, "interrupt");
    assert.equal(done.exitCode, 130);
    assert.equal(d.stdoutBytes().subarray(mark.out).toString(), "cleanup\n");
    assert.equal(
      d.stderrBytes().subarray(mark.err).toString(),
      "AbortError: the cell was interrupted (its time ran out, or it was cancelled)\n",
    );
    assert.equal((await runCell(d, "cleaned")).stdout, "true\n");
  });

  it("a cell that catches the AbortError ends normally", async () => {
    const d = await start();
    const mark = d.startRun(
      "let seen\ntry { await Promise.all([new Promise(() => {}), read('/dev/zero')]) } catch (e) { seen = [e.name, e instanceof Error] }\nseen",
      { filename: "cell-catch.js" },
    );
    await d.waitFrame((f) => f.type === "started" && f.id === mark.id);
    await sleep(30);
    d.send({ type: "interrupt", id: mark.id });
    const done = await d.waitFrame((f) => f.type === "done" && f.id === mark.id);
    await turn();
    assert.equal(done.error, null);
    assert.deepEqual(JSON.parse(String(d.frames.find((f) => f.type === "display" && f.id === mark.id)?.text)), [
      "AbortError",
      true,
    ]);
  });

  it("a synchronous loop cannot be interrupted: the runner stays busy until it is killed", async () => {
    const d = await start();
    const mark = d.startRun("while (true) {}", { filename: "cell-loop.js" });
    await d.waitFrame((f) => f.type === "started" && f.id === mark.id);
    d.send({ type: "interrupt", id: mark.id });
    await assert.rejects(d.waitFrame((f) => f.type === "done", 300));
    d.signalGroup("SIGKILL");
    assert.equal((await d.waitExit()).signal, "SIGKILL");
  });

  it("a signal frame (from a backend that cannot signal the pid) interrupts like an interrupt frame", async () => {
    const d = await start();
    const mark = d.startRun("await new Promise((r) => setTimeout(r, 1e6))", { filename: "cell-sig.js" });
    await d.waitFrame((f) => f.type === "started" && f.id === mark.id);
    d.send({ type: "signal", signal: "SIGINT" });
    const done = await d.waitFrame((f) => f.type === "done" && f.id === mark.id);
    assert.equal(done.error, "interrupt");
    d.send({ type: "signal", signal: "SIGTERM" });
    assert.equal((await d.waitExit()).signal, "SIGTERM");
  });

  it("ignores SIGINT", async () => {
    const d = await start();
    d.signal("SIGINT");
    await sleep(50);
    ok(await runCell(d, "1"));
  });
});

describe("tool calls", () => {
  it("calls tools, concurrently, answered in any order", async () => {
    const d = await start();
    const r = await runCell(
      d,
      "const [a, b] = await Promise.all([tool.read({ path: 'a' }), tool.bash({ command: 'b' })]);\n[a, b, Object.keys(tool)]",
      {
        extra: TOOLS,
        answer: async (c) => {
          await sleep(c.name === "read" ? 40 : 0);
          return { status: "ok", text: `${c.name}:${JSON.stringify(c.args)}` };
        },
      },
    );
    ok(r);
    assert.deepEqual(JSON.parse(String(r.displays[0]?.text)), [
      'read:{"path":"a"}',
      'bash:{"command":"b"}',
      ["read", "bash"],
    ]);
    const calls = d.frames.filter((f) => f.type === "tool.call" && f.run === r.done.id);
    assert.equal(calls.length, 2);
    assert.notEqual(calls[0]!.id, calls[1]!.id);
  });

  it("a blocked call rejects in the cell; invalid arguments are a TypeError", async () => {
    const d = await start();
    const r = await runCell(
      d,
      "const out = []\ntry { await tool.bash({ command: 'rm -rf /' }) } catch (e) { out.push([e.name, e.message, e.status]) }\ntry { await tool.read({}) } catch (e) { out.push([e.name, e instanceof TypeError]) }\nout",
      {
        extra: TOOLS,
        answer: (c) =>
          c.name === "bash"
            ? { status: "blocked", text: "bash was blocked: no" }
            : { status: "invalid", text: "path is required" },
      },
    );
    ok(r);
    assert.deepEqual(JSON.parse(String(r.displays[0]?.text)), [
      ["ToolBlockedError", "bash was blocked: no", "blocked"],
      ["TypeError", true],
    ]);
  });

  it("refuses what cannot be sent, and unknown tools", async () => {
    const d = await start();
    const nan = await runCell(d, "await tool.read({ n: NaN })", { extra: TOOLS });
    assert.match(nan.stderr, /TypeError: read: NaN is not valid JSON/);
    const unknown = await runCell(d, "await tool.nope({})", { extra: TOOLS });
    assert.match(unknown.stderr, /Error: tool\.nope: no such tool in this cell \(available: read, bash\)/);
    const none = await runCell(d, "await tool.read({ path: 'x' })");
    assert.match(none.stderr, /no tools are available/);
    assert.equal(d.frames.filter((f) => f.type === "tool.call").length, 0);
  });

  it("a tool set's specs come once with its tools_id; later frames name the id alone; an unknown id is fatal", async () => {
    const d = await start();
    const keys = "JSON.stringify(Object.keys(tool))";
    ok(await runCell(d, keys, { extra: { ...TOOLS, tools_id: "t1" } }));
    const again = await runCell(d, keys, { extra: { tools_id: "t1" } });
    ok(again);
    assert.equal(again.stdout, '["read","bash"]\n', "the id alone brings the same set");
    const other = await runCell(d, keys, { extra: { tools: [TOOLS.tools[0]], tools_id: "t2" } });
    assert.equal(other.stdout, '["read"]\n');
    d.startRun("1", { filename: "cell-stale.js", extra: { tools_id: "t1" } });
    const fatal = await d.waitFrame("fatal");
    assert.match(String(fatal.message), /bad run frame: tools_id "t1" names no tool set this runner received/);
  });

  it("a call still waiting when its cell ends is rejected; a late answer is dropped", async () => {
    const d = await start();
    const r = await runCell(d, "globalThis.late = tool.read({ path: 'slow' }).catch((e) => e.message); 'ended'", {
      extra: TOOLS,
    });
    ok(r);
    const call = d.frames.find((f) => f.type === "tool.call" && f.run === r.done.id)!;
    d.send({ type: "tool.result", id: call.id, run: call.run, status: "ok", text: "too late" });
    const after = await runCell(d, "await late");
    assert.equal(after.stdout, "the cell ended before this tool call was answered\n");
  });

  it("completion() is a nested call; a schema parses the answer", async () => {
    const d = await start();
    const r = await runCell(
      d,
      "[await completion('hi'), await completion('json please', { schema: { type: 'object' } })]",
      {
        answer: (c) => ({ status: "ok", text: (c.args as { schema?: unknown }).schema ? '{"k":1}' : "plain answer" }),
      },
    );
    ok(r);
    assert.deepEqual(JSON.parse(String(r.displays[0]?.text)), ["plain answer", { k: 1 }]);
    const calls = d.frames.filter((f) => f.type === "tool.call" && f.run === r.done.id);
    assert.deepEqual(
      calls.map((c) => [c.name, c.args]),
      [
        ["__completion__", { prompt: "hi" }],
        ["__completion__", { prompt: "json please", schema: { type: "object" } }],
      ],
    );
  });
});

describe("process deaths", () => {
  it("process.exit(3) ends the runner with status 3; output written before it is kept", async () => {
    const d = await start();
    d.startRun("console.log('before exit'); process.exit(3)", { filename: "cell-exit.js" });
    assert.deepEqual(await d.waitExit(), { code: 3, signal: null });
    await d.outputEnded;
    assert.equal(d.stdoutText(), "before exit\n");
  });

  it("output written right before a SIGKILL is kept", async () => {
    const d = await start();
    d.startRun("process.stdout.write('x'.repeat(1 << 20)); process.kill(process.pid, 'SIGKILL')", {
      filename: "cell-kill.js",
    });
    assert.equal((await d.waitExit()).signal, "SIGKILL");
    await d.outputEnded;
    assert.equal(d.stdoutBytes().length, 1 << 20);
  });

  it("exits and takes its process group along when the control channel closes", async () => {
    const d = await start();
    ok(
      await runCell(
        d,
        "globalThis.child = require('node:child_process').spawn('sleep', ['30'], { stdio: 'ignore' }); child.pid",
      ),
    );
    const childPid = Number(d.stdoutText().trim());
    assert.ok(isAlive(childPid));
    d.control.end();
    await d.waitExit();
    assert.ok(await waitUntil(() => !isAlive(childPid), 3000), "the subprocess dies with its group");
  });

  it("a malformed frame is fatal", async () => {
    const d = await start();
    d.control.write(Buffer.from([0, 0, 0, 3, 0x7b, 0x7b, 0x7b]));
    const f = await d.waitFrame("fatal");
    assert.match(String(f.message), /not valid JSON/);
    assert.equal((await d.waitExit()).code, 70);
  });
});
