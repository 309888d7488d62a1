// eval's JavaScript cells in a real Pi session (faux model): one runtime per Pi session, out of Pi's process
// (runtime-js/, docs/protocol-js.md), as the supervisor's `session:js`. Each test is one of issue 15's "done when".
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { EXTENSION_PATH, startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { callAs, jsCell as js, evalCall } from "../../helpers/notebook.ts";
import { pidAlive, waitUntil } from "../../helpers/procs.ts";
import { PI_TOOLS } from "../../../scripts/record-fixtures.ts";

let pi: PiHarness;
const GRACE_MS = 600;

before(async () => {
  process.env.PI_CODE_EXECUTION_TOOLS = "eval,python";
  process.env.PI_CODE_EXECUTION_INTERRUPT_GRACE_MS = String(GRACE_MS);
  pi = await startPi({ extensionPaths: [EXTENSION_PATH, PI_TOOLS] });
});
after(async () => {
  await pi.dispose();
  delete process.env.PI_CODE_EXECUTION_TOOLS;
  delete process.env.PI_CODE_EXECUTION_INTERRUPT_GRACE_MS;
});

const evalCells = (...cells: Record<string, unknown>[]) => evalCall(pi, ...cells);
/** The pid of the JavaScript runtime, from /code-sessions' listing. */
async function runtimePid(): Promise<number | undefined> {
  const printed = await commandOutput("/code-sessions");
  const m = /^\s*js\s+\S+\s+pid (\d+)\s+JavaScript Node \d+\.\d+\.\d+ \(eval\) /m.exec(printed);
  return m ? Number(m[1]) : undefined;
}
async function commandOutput(command: string): Promise<string> {
  const printed: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  const out = process.stdout.write.bind(process.stdout);
  process.stderr.write = ((c: string) => (printed.push(String(c)), true)) as typeof process.stderr.write;
  process.stdout.write = ((c: string) => (printed.push(String(c)), true)) as typeof process.stdout.write;
  try {
    await pi.session.prompt(command);
  } finally {
    process.stderr.write = write;
    process.stdout.write = out;
  }
  return printed.join("");
}

describe("eval js cells", () => {
  test("state lasts across cells and calls; top-level await and return; declarations may be repeated", async () => {
    const r = await evalCells(
      js("const base = 40\nlet seen = []"),
      js("const got = await new Promise((r) => setTimeout(() => r(2), 10))\nseen.push(got)\nbase + got"),
      js("if (seen.length) return `early ${seen.length}`\n'late'"),
    );
    assert.equal(r.isError, false, textOf(r));
    assert.equal(textOf(r), "[1/3]\n\n[2/3]\n42\n\n[3/3]\nearly 1");
    const again = await evalCells(js("const base = 1\nbase + seen[0]"));
    assert.equal(textOf(again), "3");
    assert.deepEqual(again.details.languages, ["js"]);
  });

  test("display kinds: JSON, text, images; a trailing object is JSON, undefined shows nothing", async () => {
    const png = Buffer.from(
      "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
      "base64",
    );
    const r = await evalCells(
      js(
        [
          "console.log('out')",
          "display({ kind: 'json', n: [1, 2] })",
          "display('as text')",
          `display({ type: 'image', mimeType: 'image/png', data: '${png.toString("base64")}' })`,
          ";({ last: true })",
        ].join("\n"),
      ),
      js("undefined"),
    );
    assert.equal(r.isError, false, textOf(r));
    const text = textOf(r);
    assert.match(
      text,
      /^\[1\/2\]\nout\n\{\n {2}"kind": "json",\n {2}"n": \[\n {4}1,\n {4}2\n {2}\]\n\}\nas text\n\{\n {2}"last": true\n\}\n\n\[2\/2\]$/,
    );
    assert.deepEqual(r.details.jsonOutputs, [{ kind: "json", n: [1, 2] }, { last: true }]);
    // The image is a content block of its own; the text does not name it (oh-my-pi's result).
    const images = r.content.filter((c) => c.type === "image");
    assert.equal(images.length, 1);
  });

  test("local modules reload between cells; packages stay cached", async () => {
    writeFileSync(join(pi.cwd, "helper.mjs"), "export const version = 'v1';\n");
    mkdirSync(join(pi.cwd, "node_modules", "counter-pkg"), { recursive: true });
    writeFileSync(
      join(pi.cwd, "node_modules", "counter-pkg", "package.json"),
      JSON.stringify({ name: "counter-pkg", main: "index.js" }),
    );
    writeFileSync(
      join(pi.cwd, "node_modules", "counter-pkg", "index.js"),
      "module.exports = { loadedAt: Math.random() };\n",
    );
    const first = await evalCells(
      js(
        "import { version } from './helper.mjs'\nimport pkg from 'counter-pkg'\nglobalThis.firstLoad = pkg.loadedAt;\nversion",
      ),
    );
    assert.equal(textOf(first), "v1");
    writeFileSync(join(pi.cwd, "helper.mjs"), "export const version = 'v2';\n");
    const second = await evalCells(
      js(
        "import { version } from './helper.mjs'\nimport pkg from 'counter-pkg'\n`${version} ${pkg.loadedAt === firstLoad}`",
      ),
    );
    assert.equal(textOf(second), "v2 true");
  });

  test("tool.<name>(): concurrent calls; a blocked call rejects in the cell and makes the eval call an error", async () => {
    const r = await evalCells(
      js(
        "const [a, b] = await Promise.all([tool.slow_tool({ ms: 150, tag: 'a' }), tool.slow_tool({ ms: 10, tag: 'b' })]);\n`${a} ${b}`",
      ),
    );
    assert.equal(r.isError, false, textOf(r));
    assert.match(textOf(r), /a.*b/);
    const blocked = await evalCells(
      js(
        "try { await tool.lifecycle_tool({ mode: 'before-block' }) } catch (e) { console.log('caught', e.name, e.message) }\n'went on'",
      ),
      js("'never'"),
    );
    assert.equal(blocked.isError, true);
    assert.match(textOf(blocked), /caught ToolBlockedError lifecycle_tool was blocked: before said no/);
    assert.match(textOf(blocked), /went on/);
    assert.match(textOf(blocked), /blocked by a policy/);
    assert.doesNotMatch(textOf(blocked), /never/);
  });

  test("completion(): one stateless model call; with a schema the parsed object; the budget pauses meanwhile", async () => {
    const before = pi.toolResults().length;
    pi.faux.setResponses([
      fauxAssistantMessage(
        [
          fauxToolCall("eval", {
            cells: [
              js(
                "const a = await completion('2+2?', { system: 'Be terse.' })\nconst b = await completion('json', { schema: { type: 'object' } });\n`${a} ${b.answer + 1}`",
                { timeout: 1 },
              ),
            ],
          } as never),
        ],
        { stopReason: "toolUse" },
      ),
      async () => {
        await new Promise((r) => setTimeout(r, 1300));
        return fauxAssistantMessage("four");
      },
      fauxAssistantMessage([fauxToolCall("respond", { answer: 4 })], { stopReason: "toolUse" }),
      fauxAssistantMessage("done"),
    ] as never);
    await pi.session.prompt("go");
    const [r] = pi.toolResults().slice(before);
    assert.equal(r.isError, false, textOf(r));
    assert.equal(textOf(r), "four 5");
    assert.deepEqual(
      r.details.cells[0] && (await evalCells(js("Object.keys(tool).includes('__completion__')"))).content[0].text,
      "false",
    );
  });

  test("while(true) ends at its budget with the state-lost notice; Pi's own timers keep firing meanwhile", async () => {
    await evalCells(js("var before = 'set'"));
    const pid = await runtimePid();
    assert.ok(pid);
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 20);
    const t0 = Date.now();
    const r = await evalCells(js("while (true) {}", { timeout: 1 }), js("'skipped'"));
    const elapsed = Date.now() - t0;
    clearInterval(timer);
    assert.equal(r.isError, true);
    assert.match(
      textOf(r),
      /timed out after 1 s of work; .*the JavaScript runtime was killed: the JavaScript state is gone and the next js cell starts a fresh runtime/,
    );
    assert.ok(elapsed >= 1000 + GRACE_MS, `ended after ${elapsed} ms`);
    assert.ok(ticks >= elapsed / 20 / 3, `Pi's timer fired ${ticks} times in ${elapsed} ms`);
    assert.ok(await waitUntil(() => !pidAlive(pid!), 3000));
    const next = await evalCells(js("typeof before"));
    assert.equal(textOf(next), "undefined");
    assert.notEqual(await runtimePid(), pid);
  });

  test("process.exit(3) ends the runtime, output kept; a timer's throw fails its cell and the runtime stays", async () => {
    const exit = await evalCells(js("var gone = 1\nconsole.log('bye')\nprocess.exit(3)"));
    assert.equal(exit.isError, true);
    assert.match(
      textOf(exit),
      /^bye\n\[the JavaScript runtime exited with code 3 during this cell: the JavaScript state is gone/,
    );
    const thrown = await evalCells(
      js(
        "var kept = typeof gone\nsetTimeout(() => { throw new Error('from a timer') }, 5)\nawait new Promise((r) => setTimeout(r, 100))\n'after'",
      ),
    );
    assert.equal(thrown.isError, true);
    assert.match(textOf(thrown), /Uncaught Error: from a timer\n {4}at Timeout\._onTimeout \(cell-\d+\.js:2:26\)/);
    const still = await evalCells(js("kept"));
    assert.equal(textOf(still), "undefined");
  });

  test("reset is per language: a js reset leaves the Python kernel untouched, and the other way round", async () => {
    const set = await evalCells({ language: "py", code: "py_value = 7" }, js("var jsValue = 8"));
    assert.equal(set.isError, false, textOf(set));
    const jsReset = await evalCells(js("typeof jsValue", { reset: true }), { language: "py", code: "py_value" });
    assert.equal(textOf(jsReset), "[1/2]\nundefined\n\n[2/2]\n7");
    await evalCells(js("var jsValue = 9"));
    const pyReset = await evalCells({ language: "py", reset: true, code: "'py_value' in globals()" }, js("jsValue"));
    assert.equal(textOf(pyReset), "[1/2]\nFalse\n\n[2/2]\n9");
  });

  test("/code-restart js starts the runtime again empty", async () => {
    await evalCells(js("var beforeRestart = 1"));
    const pid = await runtimePid();
    const printed = await commandOutput("/code-restart js");
    assert.match(printed, /Session "js" restarted: Node \d+\.\d+\.\d+, pid \d+/);
    assert.notEqual(await runtimePid(), pid);
    assert.equal(textOf(await evalCells(js("typeof beforeRestart"))), "undefined");
  });

  test("the inspector shows the JavaScript session and its cells", async () => {
    const printed = await commandOutput("/code-inspect");
    const url = /Inspector: (http:\/\/127\.0\.0\.1:\d+\/\S+\/)/.exec(printed)?.[1];
    assert.ok(url, printed);
    const frames: any[] = [];
    const ws = new WebSocket(`${url.replace("http", "ws")}ws`);
    ws.onmessage = (m) => frames.push(JSON.parse(String(m.data)));
    await new Promise((r) => (ws.onopen = r));
    await evalCells(js("'inspected cell'"));
    await new Promise((r) => setTimeout(r, 200));
    ws.close();
    await pi.session.prompt("/code-inspect stop");
    const session = frames.filter((f) => f.sessionId === "session:js");
    assert.ok(session.length > 0, "session:js is in the tree");
    // A session's state value is its top state's name, or `{ running: "active" }` and the like for a nested one.
    const states = session
      .filter((f) => f.type === "@xstate.snapshot")
      .map((f) => (typeof f.snapshot.value === "string" ? f.snapshot.value : Object.keys(f.snapshot.value)[0]));
    assert.ok(states.includes("running") && states.includes("idle"), states.join(" "));
    const runs = frames.filter(
      (f) => f.type === "@xstate.actor" && f.parentId === "session:js" && /^run:/.test(f.sessionId),
    );
    const cell = frames.find(
      (f) =>
        f.type === "@xstate.snapshot" &&
        runs.some((r) => r.sessionId === f.sessionId) &&
        f.snapshot?.context?.code === "'inspected cell'",
    );
    assert.ok(cell, "the cell is a run actor under session:js, its code in its context");
    assert.match(cell.snapshot.context.filename, /^cell-\d+\.js$/);
    assert.equal(cell.snapshot.context.cell?.language, "js");
  });

  test("the runtime's process group is gone after Pi shuts down", async () => {
    const own = await startPi();
    const prev = pi;
    pi = own;
    try {
      const r = await evalCells(js("require('node:child_process').spawn('sleep', ['30'], { stdio: 'ignore' }).pid"));
      const child = Number(textOf(r));
      const pid = (await runtimePid())!;
      assert.ok(pidAlive(child) && pidAlive(pid));
      await own.dispose();
      assert.ok(await waitUntil(() => !pidAlive(child) && !pidAlive(pid), 3000), "runtime and its child are gone");
    } finally {
      pi = prev;
    }
  });
});

describe("eval with its JavaScript backend disabled", () => {
  test("a js cell is a tool error naming JavaScript and the setting; no cell runs", async () => {
    process.env.PI_CODE_EXECUTION_TOOLS = "eval";
    process.env.PI_CODE_EXECUTION_EVAL_JS = "0";
    const off = await startPi();
    delete process.env.PI_CODE_EXECUTION_EVAL_JS;
    try {
      const [r] = await callAs(off, [["eval", { cells: [{ language: "py", code: "open('ran', 'w')" }, js("1")] }]]);
      assert.equal(r.isError, true);
      assert.match(
        textOf(r),
        /JavaScript cells \(language "js"\) cannot run: the JavaScript backend is disabled \(setting eval\.js = false or PI_CODE_EXECUTION_EVAL_JS=0\)\. No cell was run\./,
      );
      const { existsSync } = await import("node:fs");
      assert.equal(existsSync(`${off.cwd}/ran`), false);
    } finally {
      await off.dispose();
      process.env.PI_CODE_EXECUTION_TOOLS = "eval,python";
    }
  });
});
