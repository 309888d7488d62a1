// A `python` call's cells go to the kernel in one run (one round trip; docs/design.md "A notebook call"), through a
// real Pi session: the model sees each cell's own output, value, display and status as when each cell was a run of
// its own, the journal has one row for the call, and a cell the kernel stops at (failure, interrupt) runs nothing
// after it.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { callAs, journalRuns, piWithJournal } from "../../helpers/notebook.ts";

const session = piWithJournal("code_execution,python");
let pi: PiHarness;
let journal: string;
before(async () => ({ pi, journal } = await session));

describe("a python call's cells in one run", () => {
  test("each cell keeps its own output, value and display; the call is one run in the journal", async () => {
    const [r] = await callAs(pi, [
      [
        "python",
        {
          reset: true,
          cells: [
            { code: "import sys\nx = 20\nprint('one')\nprint('err one', file=sys.stderr)" },
            { code: "print('two')\ndisplay({'k': 1})\nx * 2 + 2" },
            { code: "print('three')" },
          ],
        },
      ],
    ]);
    assert.equal(r.isError, false, textOf(r));
    const cells = r.details.cells;
    assert.deepEqual(
      cells.map((c: any) => [c.status, c.stdout, c.stderr, c.value]),
      [
        ["ok", "one\n", "err one\n", undefined],
        ["ok", 'two\n{\n  "k": 1\n}\n', "", "42"],
        ["ok", "three\n", "", undefined],
      ],
    );
    assert.deepEqual(cells[1].json, [{ k: 1 }]);
    assert.equal(cells[0].json, undefined);
    for (const c of cells) assert.ok(c.durationMs >= 0 && c.durationMs < 60_000, String(c.durationMs));
    assert.match(textOf(r), /── cell 2\/3 ──\nstdout:\ntwo\n[\s\S]*=> 42\n\n── cell 3\/3 ──\nstdout: three$/);
    // Wait a moment longer than the one row: a second would be a run per cell.
    assert.deepEqual(await journalRuns(journal, "python", r.toolCallId, 2), [
      { status: "success", images: 0, json_outputs: 1 },
    ]);
  });

  test("a failing cell stops the kernel there: the cells after it never run; its traceback names its file", async () => {
    const [r] = await callAs(pi, [
      [
        "python",
        {
          reset: true,
          cells: [
            { code: "ran = [1]" },
            { code: "ran.append(2)\nraise ValueError('boom')" },
            { code: "ran.append(3)" },
          ],
        },
      ],
    ]);
    assert.deepEqual(
      r.details.cells.map((c: any) => c.status),
      ["ok", "error", "not_run"],
    );
    assert.match(r.details.cells[1].exception, /File "cell-2\.py", line 2[\s\S]*ValueError: boom/);
    const [after] = await callAs(pi, [["python", { cells: [{ code: "ran" }] }]]);
    assert.equal(textOf(after), "── cell 1/1 ──\n=> [1, 2]");
  });

  test("a cell that catches the timeout's interrupt and completes still ends the call: the next cell never runs", async () => {
    const caught = "import time\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    print('caught')";
    const [r] = await callAs(pi, [
      [
        "python",
        { reset: true, timeout: 1, cells: [{ code: "later = False" }, { code: caught }, { code: "later = True" }] },
      ],
    ]);
    assert.equal(r.details.timedOut, true);
    assert.deepEqual(
      r.details.cells.map((c: any) => c.status),
      ["ok", "ok", "not_run"],
    );
    assert.equal(r.details.cells[1].stdout, "caught\n");
    const [after] = await callAs(pi, [["python", { cells: [{ code: "later" }] }]]);
    assert.equal(textOf(after), "── cell 1/1 ──\n=> False");
  });

  test("a cell with a PEP 723 block starts a run of its own; the cells before and after it are batched", async () => {
    const block = "# /// script\n# dependencies = []\n# ///\nprint('inline')";
    const [r] = await callAs(pi, [
      ["python", { cells: [{ code: "a = 1" }, { code: "b = 2" }, { code: block }, { code: "print(a + b)" }] }],
    ]);
    assert.equal(r.isError, false, textOf(r));
    assert.deepEqual(
      r.details.cells.map((c: any) => [c.status, c.stdout]),
      [
        ["ok", ""],
        ["ok", ""],
        ["ok", "inline\n"],
        ["ok", "3\n"],
      ],
    );
    assert.equal((await journalRuns(journal, "python", r.toolCallId, 3)).length, 2);
  });

  test("a cell ending with sys.exit(0) stops the kernel's batch; the call goes on as when each cell was a run", async () => {
    const [r] = await callAs(pi, [
      ["python", { cells: [{ code: "import sys\nsys.exit(0)" }, { code: "print('after')" }, { code: "2 + 2" }] }],
    ]);
    assert.deepEqual(
      r.details.cells.map((c: any) => [c.status, c.stdout]),
      [
        ["ok", ""],
        ["ok", "after\n"],
        ["ok", ""],
      ],
    );
    assert.equal(r.details.cells[2].value, "4");
    // The first run ended at the exit; the machine started the cells after it as a second run.
    assert.equal((await journalRuns(journal, "python", r.toolCallId, 3)).length, 2);
  });
});
