// The python tool's timeout, as pi-python escalates it: SIGINT at the deadline, a second SIGINT halfway through
// interruptGraceMs, the kill at its end; here the grace comes from pi-python's own project settings file. Also
// interpreter switching with python_set_interpreter {path}.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { callAs } from "../../helpers/notebook.ts";
import { PYTHON, PYTHON_RE } from "../../helpers/pythons.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

let pi: PiHarness;
before(async () => {
  process.env.PI_CODE_EXECUTION_TOOLS = "python";
  const cwd = tempDir("pcs-nb-timeout-");
  mkdirSync(join(cwd, ".pi", "pi-python"), { recursive: true });
  writeFileSync(join(cwd, ".pi", "pi-python", "settings.json"), JSON.stringify({ interruptGraceMs: 2000 }));
  pi = await startPi({ cwd });
  // The kernel is up before the timing tests (its start must not eat their one-second budgets on a loaded machine).
  await callAs(pi, [["python", { cells: [{ code: "1" }] }]]);
});
after(async () => {
  await pi.dispose();
  delete process.env.PI_CODE_EXECUTION_TOOLS;
});

describe("python timeouts", () => {
  test("only the python surface is registered (with python_set_interpreter)", () => {
    const names = pi.session.getActiveToolNames();
    assert.ok(names.includes("python") && names.includes("python_set_interpreter"));
    assert.ok(!names.includes("code_execution"));
  });

  test("the first SIGINT: KeyboardInterrupt in the cell, the namespace survives, later cells do not run", async () => {
    const [r] = await callAs(pi, [
      ["python", { timeout: 1, cells: [{ code: "kept = 1" }, { code: "import time\ntime.sleep(60)" }, { code: "2" }] }],
    ]);
    assert.equal(r.isError, true);
    assert.equal(r.details.timedOut, true);
    assert.equal(r.details.killed, false);
    assert.match(
      textOf(r),
      /^\[timed out\]\n\n── cell 1\/3 ──\n\n── cell 2\/3 ──\nTraceback[\s\S]*KeyboardInterrupt\n\n── cell 3\/3 ──\n\[not run\]$/,
    );
    assert.deepEqual(
      r.details.cells.map((c: any) => c.status),
      ["ok", "error", "not_run"],
    );
    const [next] = await callAs(pi, [["python", { cells: [{ code: "kept" }] }]]);
    assert.equal(textOf(next), "── cell 1/1 ──\n=> 1");
  });

  test("a cell that catches the interrupt and finishes is a success with timedOut set", async () => {
    const code = "import time\ntry:\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    print('caught')\n'finished'";
    const [r] = await callAs(pi, [["python", { timeout: 1, cells: [{ code }] }]]);
    assert.equal(r.isError, false);
    assert.equal(r.details.timedOut, true);
    assert.equal(r.details.cells[0].status, "ok");
    assert.equal(textOf(r), "[timed out]\n\n── cell 1/1 ──\nstdout: caught\n=> 'finished'");
  });

  test("the second SIGINT comes halfway through the grace and stops code that swallowed the first", async () => {
    // Python notes when each interrupt lands, on its own clock: the gap is the escalation's, whatever Pi and the
    // host's result path cost around it on a loaded machine.
    const code = [
      "import time",
      "stage = 0",
      "landed = []",
      "try:",
      "    time.sleep(60)",
      "except KeyboardInterrupt:",
      "    stage = 1",
      "    landed.append(time.monotonic())",
      "    try:",
      "        time.sleep(60)",
      "    except KeyboardInterrupt:",
      "        landed.append(time.monotonic())",
      "        raise",
    ].join("\n");
    const t0 = Date.now();
    const [r] = await callAs(pi, [["python", { timeout: 1, cells: [{ code }] }]]);
    const took = Date.now() - t0;
    assert.equal(r.details.killed, false, textOf(r));
    assert.equal(r.details.timedOut, true);
    assert.match(textOf(r), /KeyboardInterrupt/);
    assert.ok(took >= 1900, `took ${took} ms`);
    const [next] = await callAs(pi, [["python", { cells: [{ code: "stage, round(landed[1] - landed[0], 3)" }] }]]);
    const m = /^── cell 1\/1 ──\n=> \(1, ([\d.]+)\)$/.exec(textOf(next));
    assert.ok(m, textOf(next));
    // The second SIGINT 1 s after the first (half of pi-python's 2 s grace here), well before the kill 2 s after it.
    const gap = Number(m[1]);
    assert.ok(gap >= 0.95 && gap < 1.9, `the second interrupt came ${gap} s after the first`);
  });

  test("code that ignores SIGINT is killed at the end of the grace: said plainly, output kept, namespace gone", async () => {
    const code =
      "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('before the kill', flush=True)\ntime.sleep(60)";
    const t0 = Date.now();
    const [r] = await callAs(pi, [["python", { timeout: 1, cells: [{ code: "doomed = 1" }, { code }] }]]);
    const took = Date.now() - t0;
    assert.equal(r.isError, true);
    assert.equal(r.details.killed, true);
    assert.equal(r.details.session.isLost, true);
    assert.ok(took >= 2900, `took ${took} ms`);
    const text = textOf(r);
    assert.match(text, /^\[timed out\] \[killed\]\n/);
    assert.match(text, /stdout: before the kill/);
    assert.match(text, /namespace is gone/);
    const [next] = await callAs(pi, [["python", { cells: [{ code: "'doomed' in globals()" }] }]]);
    assert.equal(textOf(next), "── cell 1/1 ──\n=> False");
  });

  test("python_set_interpreter {path} replaces the kernel: empty namespace, said so, the new interpreter runs", async () => {
    await callAs(pi, [["python", { cells: [{ code: "before_switch = 1" }] }]]);
    const [set, run] = await callAs(pi, [
      ["python_set_interpreter", { path: PYTHON }],
      ["python", { cells: [{ code: "import sys\n(sys.executable, 'before_switch' in globals())" }] }],
    ]);
    assert.equal(set.isError, false, textOf(set));
    assert.match(textOf(set), /python kernel \(session "notebook"\) was replaced: its namespace is empty/);
    assert.match(textOf(run), new RegExp(`=> \\('${PYTHON_RE}(\\.\\d+)?', False\\)`));
    assert.equal(run.details.python.executable.startsWith(PYTHON), true);
  });
});
