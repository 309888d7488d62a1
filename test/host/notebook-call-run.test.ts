// The notebook call's adapter (extension/shared/notebook/call.ts): it starts the cells the machine names through the
// tool's runCell, one at a time, reports every change of the statuses, and ends with the machine's final state. The
// tools' real cells, through Pi, are test/extension/python/notebook-*.test.ts's and test/extension/eval/'s.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { runNotebookCall } from "../../host/notebook-call.ts";
import { listenToMarks } from "../../lib/marks.ts";
import type { CellEnd, CellStatus } from "../../machines/notebook-call.ts";

const OK: CellEnd = { ok: true, cancelled: false, timedOut: false, lost: false };

describe("runNotebookCall", () => {
  test("cells run one at a time, in order; every status change is reported; the ending is the final state", async () => {
    const running: number[] = [];
    let overlap = false;
    const seen: CellStatus[][] = [];
    const result = await runNotebookCall({
      cells: 3,
      budget: "cell",
      runCell: async (i) => {
        if (running.length) overlap = true;
        running.push(i);
        await new Promise((r) => setTimeout(r, 5));
        running.pop();
        return i === 1 ? { ...OK, ok: false } : OK;
      },
      onStatuses: (s) => seen.push([...s]),
    });
    assert.equal(overlap, false);
    assert.equal(result.ending, "stopped");
    assert.deepEqual(result.statuses, ["ok", "error", "not_run"]);
    assert.deepEqual(seen, [
      ["running", "not_run", "not_run"],
      ["ok", "running", "not_run"],
      ["ok", "error", "not_run"],
    ]);
  });

  test("it names its start, each cell's start and its end for bench/pi-marks.ts, and nothing after the end", async () => {
    const heard: string[] = [];
    listenToMarks((name) => heard.push(name));
    try {
      await runNotebookCall({
        cells: 2,
        budget: "cell",
        runCell: async () => {
          heard.push("(cell)");
          return OK;
        },
        onStatuses: (s) => heard.push(s.join(",")),
      });
    } finally {
      listenToMarks(undefined);
    }
    assert.deepEqual(heard, [
      "notebook.start",
      "notebook.cell",
      "(cell)",
      "running,not_run",
      "notebook.cell",
      "(cell)",
      "ok,running",
      "ok,ok",
      "notebook.end",
    ]);
  });

  test("the call's deadline is read on the adapter's clock: a cell ending after it leaves the rest not run", async () => {
    const started: number[] = [];
    const result = await runNotebookCall({
      cells: 2,
      budget: "call",
      deadlineAt: Date.now() + 20,
      runCell: async (i) => {
        started.push(i);
        await new Promise((r) => setTimeout(r, 40));
        return OK;
      },
    });
    assert.deepEqual(started, [0]);
    assert.equal(result.ending, "timedOut");
    assert.equal(result.timedOut, true);
    assert.deepEqual(result.statuses, ["ok", "not_run"]);
  });

  test("a cell that throws (synchronously or not) ends the call with its error; no later cell starts", async () => {
    for (const how of ["sync", "async"] as const) {
      const started: number[] = [];
      await assert.rejects(
        runNotebookCall({
          cells: 3,
          budget: "cell",
          runCell: (i) => {
            started.push(i);
            if (i === 1) {
              if (how === "sync") throw new Error("boom");
              return Promise.reject(new Error("boom"));
            }
            return Promise.resolve(OK);
          },
        }),
        /boom/,
      );
      await new Promise((r) => setTimeout(r, 5));
      assert.deepEqual(started, [0, 1], how);
    }
  });

  test("a cell run with the cells after it (a batch) reports them as they end; no cell is started twice", async () => {
    const started: number[] = [];
    const seen: CellStatus[][] = [];
    const result = await runNotebookCall({
      cells: 4,
      budget: "call",
      deadlineAt: Date.now() + 60_000,
      runCell: async (i, continued) => {
        started.push(i);
        if (i === 0) {
          // Cells 0 to 2 in one request; it stops after cell 2 (as a kernel stops after sys.exit()).
          continued(0, OK);
          await new Promise((r) => setTimeout(r, 1));
          continued(1, OK);
          return { ...OK, index: 2 };
        }
        return OK;
      },
      onStatuses: (s) => seen.push([...s]),
    });
    assert.deepEqual(started, [0, 3]);
    assert.equal(result.ending, "completed");
    assert.deepEqual(seen, [
      ["running", "not_run", "not_run", "not_run"],
      ["ok", "running", "not_run", "not_run"],
      ["ok", "ok", "running", "not_run"],
      ["ok", "ok", "ok", "running"],
      ["ok", "ok", "ok", "ok"],
    ]);
  });
});
