// The `eval` tool (oh-my-pi compatible) with Python cells in a real Pi session: order and skipping, state shared
// with the python tool, per-language reset, an unavailable language, and the per-cell work budget that pauses while
// a cell awaits a bridged tool call.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { callAs } from "../../helpers/notebook.ts";

let pi: PiHarness;
before(async () => {
  process.env.PI_CODE_EXECUTION_TOOLS = "eval,python";
  pi = await startPi();
});
after(async () => {
  await pi.dispose();
  delete process.env.PI_CODE_EXECUTION_TOOLS;
});

describe("eval tool", () => {
  test("cells run in order; text prefixed [i/n] title; after an error the rest are skipped", async () => {
    const [r] = await callAs(pi, [
      [
        "eval",
        {
          cells: [
            { language: "py", title: "setup", code: "a = 40\nprint('ready')" },
            { language: "py", code: "a + 2" },
            { language: "py", title: "boom", code: "a = 1\n1 / 0" },
            { language: "py", code: "print('never')" },
          ],
        },
      ],
    ]);
    assert.equal(r.isError, true);
    const text = textOf(r);
    assert.match(text, /^\[1\/4\] setup\nready\n\n\[2\/4\]\n42\n\n\[3\/4\] boom\nTraceback[\s\S]*ZeroDivisionError/);
    assert.doesNotMatch(text, /never|\[4\/4\]/);
    assert.match(text, /\[cell 3\/4 \(boom\) failed; later cells were skipped/);
    const d = r.details;
    assert.deepEqual(
      d.cells.map((c: any) => c.status),
      ["complete", "complete", "error", "pending"],
    );
    assert.equal(d.language, "py");
    assert.deepEqual(d.languages, ["py"]);
    assert.equal(d.isError, true);
    assert.equal(d.cells[1].output, "42");
    assert.equal(d.cells[2].exitCode, 1);
    assert.equal(d.cells[0].code, "a = 40\nprint('ready')");
    assert.deepEqual(d.jsonOutputs, []);
    const [one] = await callAs(pi, [["eval", { cells: [{ language: "py", code: "a" }] }]]);
    assert.equal(textOf(one), "1", "state changed before the error stays");
  });

  test("(no output) when nothing shows; a single cell has no prefix", async () => {
    const [r] = await callAs(pi, [["eval", { cells: [{ language: "py", code: "x = 5" }] }]]);
    assert.equal(textOf(r), "(no output)");
    assert.equal(r.isError, false);
  });

  test("eval's Python cells and the python tool share one namespace", async () => {
    const [a, b] = await callAs(pi, [
      ["python", { cells: [{ code: "from_python = 'yes'" }] }],
      ["eval", { cells: [{ language: "py", code: "from_eval = from_python + '!'\nfrom_eval" }] }],
    ]);
    assert.equal(a.isError, false);
    assert.equal(textOf(b), "'yes!'");
  });

  test("reset is per language: a py reset wipes Python state; a js reset in the same call leaves it", async () => {
    const [r] = await callAs(pi, [
      ["eval", { cells: [{ language: "py", reset: true, code: "'from_eval' in globals()" }] }],
    ]);
    assert.equal(textOf(r), "False");
    const [js] = await callAs(pi, [
      [
        "eval",
        {
          cells: [
            { language: "py", code: "ran = True" },
            { language: "js", reset: true, code: "1 + 1" },
          ],
        },
      ],
    ]);
    assert.equal(js.isError, false, textOf(js));
    assert.equal(textOf(js), "[1/2]\n\n[2/2]\n2");
    const [check] = await callAs(pi, [["eval", { cells: [{ language: "py", code: "'ran' in globals()" }] }]]);
    assert.equal(textOf(check), "True", "the js reset left Python alone");
  });

  test("the timeout is a work budget: it pauses while the cell awaits a bridged tool call", async () => {
    // 3 s awaiting bash plus 0.4 s of work fits a 2 s budget; 3 s of work does not. (The budget leaves 1.6 s for the
    // cell's own overhead around the await: with 1 s, a machine under stress-ng spent the rest before the sleep.)
    const awaiting = "r = await bash(command='sleep 3; echo slept')\nimport time\ntime.sleep(0.4)\nprint(r.strip())";
    const [paused, working] = await callAs(pi, [
      ["eval", { cells: [{ language: "py", timeout: 2, code: awaiting }] }],
      ["eval", { cells: [{ language: "py", timeout: 2, code: "import time\ntime.sleep(3)\nprint('finished')" }] }],
    ]);
    assert.equal(paused.isError, false, textOf(paused));
    assert.match(textOf(paused), /slept/);
    assert.ok(paused.details.cells[0].durationMs >= 3300);
    assert.equal(working.isError, true);
    assert.match(textOf(working), /KeyboardInterrupt/);
    assert.match(textOf(working), /timed out after 2 s of work/);
    assert.doesNotMatch(textOf(working), /finished/);
  });

  test("live updates stream per-cell status", async () => {
    const before = pi.events.length;
    await callAs(pi, [
      [
        "eval",
        {
          cells: [
            { language: "py", code: "import time\nprint('one', flush=True)\ntime.sleep(0.3)" },
            { language: "py", code: "print('two')" },
          ],
        },
      ],
    ]);
    const updates = pi.events.slice(before).filter((e) => e.type === "tool_execution_update");
    const statuses = updates.map((u) => u.partialResult.details.cells.map((c: any) => c.status).join(","));
    assert.ok(statuses.includes("running,pending"), statuses.join(" | "));
    assert.ok(
      statuses.some((s) => s === "complete,running"),
      statuses.join(" | "),
    );
  });
});

describe("eval with its Python backend disabled", () => {
  test("a py cell is a tool error naming Python and the setting; nothing runs", async () => {
    process.env.PI_CODE_EXECUTION_TOOLS = "eval";
    process.env.PI_CODE_EXECUTION_EVAL_PY = "0";
    const off = await startPi();
    delete process.env.PI_CODE_EXECUTION_EVAL_PY;
    try {
      const [r] = await callAs(off, [["eval", { cells: [{ language: "py", code: "open('ran', 'w')" }] }]]);
      assert.equal(r.isError, true);
      assert.match(
        textOf(r),
        /Python cells \(language "py"\) cannot run: the Python backend is disabled \(setting eval\.py = false/,
      );
      const { existsSync } = await import("node:fs");
      assert.equal(existsSync(`${off.cwd}/ran`), false);
    } finally {
      await off.dispose();
      delete process.env.PI_CODE_EXECUTION_TOOLS;
    }
  });
});
