// How a notebook cell's ending reads to the model, for every way a cell can end short of completing, through a real
// Pi session (faux model): a runtime killed by a signal, a kernel killed at the end of its grace, a blocked nested
// tool call (raised or caught), a JavaScript cell that catches its timeout's AbortError, a cancel the cell does not
// answer, and a backend that cannot start anything. The texts are extension/shared/notebook/python-cells.ts's and
// extension/eval/js-backend.ts's; each is what tells the model whether its state survived.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { EXTENSION_PATH, startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { callAs, jsCell as js, pyCell as py, evalCall } from "../../helpers/notebook.ts";
import { waitUntil } from "../../helpers/procs.ts";
import { tempDir } from "../../helpers/temp-dir.ts";
import { PI_TOOLS } from "../../../scripts/record-fixtures.ts";

let pi: PiHarness;
const GRACE_MS = 600;
const FRESH_JS = "the JavaScript state is gone and the next js cell starts a fresh runtime";

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

describe("a runtime killed by a signal", () => {
  test("a JavaScript runtime killed by SIGKILL: named, the state gone, the next cell in a fresh runtime", async () => {
    const r = await evalCells(js("var doomed = 1\nconsole.log('before')\nprocess.kill(process.pid, 'SIGKILL')"));
    assert.equal(r.isError, true);
    assert.equal(
      r.details.cells[0].output,
      `before\n[the JavaScript runtime was killed by SIGKILL during this cell: ${FRESH_JS}]`,
    );
    assert.equal(r.details.cells[0].exitCode, 1);
    assert.equal(textOf(await evalCells(js("typeof doomed"))), "undefined");
  });

  test("a Python kernel killed by SIGKILL: the signal named, the namespace gone", async () => {
    const r = await evalCells(py("doomed = 1\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)"));
    assert.equal(r.isError, true);
    assert.equal(
      r.details.cells[0].output,
      "the kernel died (SIGKILL); its namespace is gone\n[the Python kernel died; its state is gone and the next cell starts empty]",
    );
    const [p] = await callAs(pi, [["python", { cells: [{ code: "doomed = 2\nimport os\nos.kill(os.getpid(), 9)" }] }]]);
    assert.equal(p!.isError, true);
    assert.match(textOf(p!), /the kernel died \(SIGKILL\); its namespace is gone/);
    assert.equal(textOf(await evalCells(py("'doomed' in globals()"))), "False");
  });
});

describe("a timeout", () => {
  test("a Python cell that ignores the interrupts: killed at the end of the grace the setting gives, said so", async () => {
    // The cell notes when the interrupt lands and keeps a heartbeat until the kill, on its own clock: the gap is the
    // escalation's (the setting's 600 ms grace, not eval's 5 s default), whatever Pi's turns cost around it.
    const beats = join(tempDir("pcs-endings-"), "beats");
    const code = [
      "import signal, threading, time",
      "landed = []",
      "signal.signal(signal.SIGINT, lambda *_: landed.append(time.monotonic()))",
      "def beat():",
      "    while True:",
      `        open(${JSON.stringify(beats)}, 'w').write(repr((landed[:1], time.monotonic())))`,
      "        time.sleep(0.02)",
      "threading.Thread(target=beat, daemon=True).start()",
      "while True: time.sleep(0.02)",
    ].join("\n");
    const r = await evalCells(py("kept = 1"), py(code, { timeout: 1 }));
    assert.equal(r.isError, true);
    assert.equal(
      r.details.cells[1].output,
      "the kernel did not stop after the interrupts and was killed; its namespace is gone\n[timed out after 1 s of work; the cell did not stop, so the Python kernel was killed and its state is gone]",
    );
    const m = /^\(\[([\d.]+)\], ([\d.]+)\)$/.exec(readFileSync(beats, "utf8"));
    assert.ok(m, "the interrupt landed before the kill");
    const gap = Number(m[2]) - Number(m[1]);
    assert.ok(
      gap >= 0.5 && gap < 2.8,
      `the kill came ${gap} s after the interrupt (grace ${GRACE_MS} ms; eval's own 5 s)`,
    );
  });

  test("a JavaScript cell that catches its timeout's AbortError ends by itself: complete, the state kept", async () => {
    const r = await evalCells(
      js("var kept = 'here'"),
      js(
        "try { await new Promise((r) => setTimeout(r, 60000)) } catch (e) { console.log('caught', e.name) }\n'after'",
        { timeout: 1 },
      ),
    );
    const cell = r.details.cells[1];
    assert.equal(cell.status, "complete", textOf(r));
    assert.equal(cell.exitCode, 0);
    assert.equal(
      cell.output,
      "caught AbortError\nafter\n[timed out after 1 s of work (time spent awaiting tools and completion() not counted); its pending awaits were rejected with an AbortError; the JavaScript state is kept]",
    );
    assert.equal(textOf(await evalCells(js("kept"))), "here");
  });
});

describe("a blocked nested tool call", () => {
  test("raised in a Python cell: the traceback, then the policy named", async () => {
    const r = await evalCells(py("tool.lifecycle_tool(mode='before-block')"), py("'never'"));
    assert.equal(r.isError, true);
    assert.match(
      r.details.cells[0].output,
      /Traceback[\s\S]*before said no\n\[a nested tool call was blocked by a policy\]$/,
    );
    assert.doesNotMatch(textOf(r), /'never'|\nnever/);
  });

  test("caught in a Python cell: the cell went on, the call is still an error naming the policy", async () => {
    const r = await evalCells(
      py(
        "try:\n    tool.lifecycle_tool(mode='before-block')\nexcept Exception as e:\n    print('caught', type(e).__name__)",
      ),
    );
    assert.equal(r.isError, true);
    assert.equal(r.details.cells[0].output, "caught RuntimeError\n\na nested tool call was blocked by a policy");
  });
});

describe("a cancel the cell does not answer", () => {
  test("a JavaScript busy loop: the runtime is killed at the grace's end, said so", async () => {
    const started = join(tempDir("pcs-endings-"), "started");
    const before = pi.toolResults().length;
    pi.faux.setResponses([
      fauxAssistantMessage(
        [
          fauxToolCall("eval", {
            cells: [
              js(`var gone = 1\nrequire('node:fs').writeFileSync(${JSON.stringify(started)}, '')\nwhile (true) {}`),
            ],
          } as never),
        ],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("done"),
    ] as never);
    const prompt = pi.session.prompt("go");
    assert.ok(await waitUntil(() => existsSync(started), 30000), "the cell started");
    await pi.session.abort();
    await prompt;
    const [r] = pi.toolResults().slice(before);
    assert.ok(r, "the call has its result");
    assert.equal(r.isError, true);
    assert.match(
      textOf(r),
      new RegExp(`\\[cancelled; the cell did not end, so the JavaScript runtime was killed: ${FRESH_JS}\\]`),
    );
    assert.equal(textOf(await evalCells(js("typeof gone"))), "undefined");
  });
});

describe("a backend that cannot start anything (a malformed --ssh)", () => {
  test("Python and JavaScript cells are errors saying why; python's too; nothing runs", async () => {
    const bad = await startPi({ extensionPaths: [EXTENSION_PATH], flags: { ssh: "not a host@" } });
    try {
      const [e] = await callAs(bad, [["eval", { cells: [js("require('fs').writeFileSync('ran-js', '')")] }]]);
      assert.equal(e!.isError, true);
      assert.match(
        e!.details.cells[0].output,
        /^JavaScript cells run on this machine or in the sandbox; the remote \(unusable: --ssh not a host@: expected user@host\S* or \S+\) backend runs Python only$/,
      );
      const [p] = await callAs(bad, [["eval", { cells: [py("open('ran-py', 'w')")] }]]);
      assert.equal(p!.isError, true);
      assert.equal(
        textOf(p!),
        'Python cells (language "py") cannot run: no Python interpreter: --ssh not a host@: expected user@host or user@host:/remote/dir. No cell was run.',
      );
      const [t] = await callAs(bad, [["python", { cells: [{ code: "open('ran-py', 'w')" }] }]]);
      assert.equal(t!.isError, true);
      assert.match(textOf(t!), /--ssh not a host@: expected user@host/);
      assert.ok(!existsSync(join(bad.cwd, "ran-js")) && !existsSync(join(bad.cwd, "ran-py")));
    } finally {
      await bad.dispose();
    }
  });
});
