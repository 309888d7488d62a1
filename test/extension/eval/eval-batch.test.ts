// An `eval` call's consecutive Python cells go to the kernel in one run (one round trip), through a real Pi session:
// each cell keeps its own output, value, display, status events and its own timeout (the run's deadline starts
// again at each cell), the journal has one row per run, and a language change, a reset or a PEP 723 block starts a
// run of its own.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { waitUntil } from "../../helpers/procs.ts";
import { callAs, journalRuns, piWithJournal, pyCell as py } from "../../helpers/notebook.ts";

const session = piWithJournal("eval");
let pi: PiHarness;
let journal: string;
before(async () => ({ pi, journal } = await session));

describe("an eval call's Python cells in one run", () => {
  test("each cell keeps its output, value, display and status events; the three cells are one run", async () => {
    const [r] = await callAs(pi, [
      [
        "eval",
        {
          cells: [
            py("import sys\nv = 20\nprint('one')\nprint('err one', file=sys.stderr)", { title: "first" }),
            py("print('two')\nlog('in two')\ndisplay({'k': 1})\nv * 2 + 2"),
            py("phase('three')\nprint('three')"),
          ],
        },
      ],
    ]);
    assert.equal(r.isError, false, textOf(r));
    assert.equal(textOf(r), '[1/3] first\none\nerr one\n\n[2/3]\ntwo\n{\n  "k": 1\n}\n\n42\n\n[3/3]\nthree');
    const cells = r.details.cells;
    assert.deepEqual(
      cells.map((c: any) => [c.status, c.output, c.exitCode]),
      [
        ["complete", "one\nerr one", 0],
        ["complete", 'two\n{\n  "k": 1\n}\n\n42', 0],
        ["complete", "three", 0],
      ],
    );
    assert.deepEqual(r.details.jsonOutputs, [{ k: 1 }]);
    assert.deepEqual(
      cells.map((c: any) => c.statusEvents.map((e: any) => [e.op, e.cell])),
      [[], [["log", 2]], [["phase", 3]]],
    );
    const rows = await journalRuns(journal, "eval", r.toolCallId, 2);
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.deepEqual([rows[0].status, rows[0].json_outputs], ["success", 1]);
  });

  test("a failing cell stops the batch: the cells after it are not run, the state before it stays", async () => {
    const [r] = await callAs(pi, [["eval", { cells: [py("w = 1"), py("w = 2\n1 / 0"), py("w = 3\nprint('never')")] }]]);
    assert.equal(r.isError, true);
    assert.deepEqual(
      r.details.cells.map((c: any) => c.status),
      ["complete", "error", "pending"],
    );
    assert.match(textOf(r), /ZeroDivisionError/);
    assert.doesNotMatch(textOf(r), /never/);
    const [w] = await callAs(pi, [["eval", { cells: [py("w")] }]]);
    assert.equal(textOf(w), "2");
  });

  test("each cell has its own timeout: the deadline starts again at each cell of the batch", async () => {
    // 0.3 s + 2.5 s is past the first cell's 2 s, within each cell's own budget (1.5 s spare for a loaded machine).
    const [r] = await callAs(pi, [
      [
        "eval",
        {
          cells: [
            py("import time\ntime.sleep(0.3)", { timeout: 2 }),
            py("time.sleep(2.5)\nprint('second done')", { timeout: 4 }),
          ],
        },
      ],
    ]);
    assert.equal(r.isError, false, textOf(r));
    assert.match(textOf(r), /second done/);
    assert.equal((await journalRuns(journal, "eval", r.toolCallId, 2)).length, 1);
  });

  test("a cell past its own timeout is interrupted; one that caught it lets the next run (a run of its own)", async () => {
    const caught = "try:\n    time.sleep(10)\nexcept KeyboardInterrupt:\n    print('caught')";
    const [stopped, went] = await callAs(pi, [
      [
        "eval",
        { cells: [py("import time\nt0 = time.time()", { timeout: 5 }), py("time.sleep(10)", { timeout: 1 }), py("1")] },
      ],
      ["eval", { cells: [py("x = 1"), py(caught, { timeout: 1 }), py("print('after', x)")] }],
    ]);
    assert.equal(stopped.isError, true);
    assert.deepEqual(
      stopped.details.cells.map((c: any) => c.status),
      ["complete", "error", "pending"],
    );
    assert.match(textOf(stopped), /KeyboardInterrupt[\s\S]*timed out after 1 s of work/);
    // Its own second, from its own start (the run's first deadline was 5 s).
    assert.ok(stopped.details.cells[1].durationMs < 4000, String(stopped.details.cells[1].durationMs));
    assert.equal(went.isError, false, textOf(went));
    assert.deepEqual(
      went.details.cells.map((c: any) => c.status),
      ["complete", "complete", "complete"],
    );
    assert.match(textOf(went), /caught\n\n\[timed out after 1 s of work[^\n]*\n\n\[3\/3\]\nafter 1$/);
    const rows = await journalRuns(journal, "eval", went.toolCallId, 2);
    assert.equal(rows.length, 2, "the cell after the interrupted one is a run of its own");
  });

  test("a batch cell's budget pauses while it awaits a tool call", async () => {
    const [r] = await callAs(pi, [
      [
        "eval",
        {
          cells: [
            py("y = 1", { timeout: 1 }),
            py("r = await bash(command='sleep 3; echo slept')\nprint(r.strip())", { timeout: 2 }),
          ],
        },
      ],
    ]);
    assert.equal(r.isError, false, textOf(r));
    assert.match(textOf(r), /slept/);
  });

  test("a language change, a reset and a PEP 723 block each start a run of their own", async () => {
    const pep = "# /// script\n# dependencies = []\n# ///\nprint('pep')";
    const [r] = await callAs(pi, [
      [
        "eval",
        {
          cells: [
            py("q = 1"),
            py("q += 1"),
            { language: "js", code: "1 + 1" },
            py("print(q)"),
            py("print('reset', 'q' in globals())", { reset: true }),
            py(pep),
          ],
        },
      ],
    ]);
    assert.equal(r.isError, false, textOf(r));
    assert.match(textOf(r), /\[4\/6\]\n2\n\n\[5\/6\]\nreset False\n\n\[6\/6\]\npep/);
    // py+py, js, py, py (reset), py (PEP 723)
    assert.equal((await journalRuns(journal, "eval", r.toolCallId, 5)).length, 5);
  });

  test("a cancel during a batch's second cell: its live output is that cell's, the call names it, the kernel lives", async () => {
    const before = pi.toolResults().length;
    pi.faux.setResponses([
      fauxAssistantMessage(
        [
          fauxToolCall("eval", {
            cells: [
              py("print('one')"),
              py("import time\nprint('two', flush=True)\ntime.sleep(60)"),
              py("print('never')"),
            ],
          } as never),
        ],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("done"),
    ] as never);
    const prompt = pi.session.prompt("go");
    const secondPrinted = () =>
      pi.events.some(
        (e) =>
          e.type === "tool_execution_update" &&
          e.partialResult?.details?.cells?.[1]?.output?.trim() === "two" &&
          e.partialResult?.details?.cells?.[0]?.output?.trim() === "one",
      );
    assert.ok(await waitUntil(secondPrinted, 30000), "the second cell's live output, apart from the first's");
    await pi.session.abort();
    await prompt;
    const [r] = pi.toolResults().slice(before);
    assert.ok(r, "the call has its result");
    assert.equal(r.isError, true);
    assert.match(textOf(r), /^\[1\/3\]\none\n\n\[2\/3\]\ntwo/);
    assert.match(textOf(r), /\[cell 2\/3 was cancelled; later cells were skipped\]/);
    assert.doesNotMatch(textOf(r), /never/);
    const [alive] = await callAs(pi, [["eval", { cells: [py("print('alive', time.time() > 0)")] }]]);
    assert.equal(textOf(alive), "alive True", "the cancel interrupted the cell; the kernel and its state stayed");
  });
});
