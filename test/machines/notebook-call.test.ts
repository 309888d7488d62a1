// One notebook call (machines/notebook-call.ts), one `describe` per state: the machine alone, the cells it starts
// recorded as its adapter (host/notebook-call.ts) would start them. The cells' real runs, through Pi,
// are test/extension/python/notebook-*.test.ts's and test/extension/eval/notebook-eval.test.ts's; the adapter's own
// test is test/host/notebook-call-run.test.ts.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createActor } from "xstate";
import {
  notebookCallMachine,
  statusOf,
  type CellEnd,
  type NotebookCallInput,
  type NotebookCallOutput,
} from "../../machines/notebook-call.ts";
import { undescribedStates } from "../helpers/machine-states.ts";

const OK: CellEnd = { ok: true, cancelled: false, timedOut: false, lost: false };
const ERROR: CellEnd = { ok: false, cancelled: false, timedOut: false, lost: false };

/** A call of `cells` cells; `started` lists the cells it started, in order. */
function call(input: Partial<NotebookCallInput> & { cells: number }) {
  const started: number[] = [];
  const actor = createActor(
    notebookCallMachine.provide({
      actions: { startCell: (_, { index }: { index: number }) => void started.push(index) },
    }),
    { input: { budget: "cell", ...input } },
  ).start();
  return {
    started,
    /** Cell `index` ended at `at` (the deadline's clock). */
    end: (index: number, end: CellEnd = OK, at = 0) => actor.send({ type: "cell.ended", at, index, ...end }),
    /** Cell `index` ended with the next one already running (a batch). */
    continued: (index: number, at = 0) => actor.send({ type: "cell.ended", at, index, ...OK, continued: true }),
    value: () => actor.getSnapshot().value,
    statuses: () => actor.getSnapshot().context.statuses,
    output: () => actor.getSnapshot().output as NotebookCallOutput | undefined,
    done: () => actor.getSnapshot().status === "done",
  };
}

describe("running", () => {
  test("the first cell starts at once; the others wait, not run", () => {
    const c = call({ cells: 3 });
    assert.equal(c.value(), "running");
    assert.deepEqual(c.started, [0]);
    assert.deepEqual(c.statuses(), ["running", "not_run", "not_run"]);
  });

  test("each cell starts when the one before it completed, in order", () => {
    const c = call({ cells: 3 });
    c.end(0);
    assert.deepEqual(c.started, [0, 1]);
    assert.deepEqual(c.statuses(), ["ok", "running", "not_run"]);
    c.end(1);
    assert.deepEqual(c.started, [0, 1, 2]);
    assert.deepEqual(c.statuses(), ["ok", "ok", "running"]);
  });

  test("an end reported for a cell that is not running is ignored (late or repeated)", () => {
    const c = call({ cells: 3 });
    c.end(1, ERROR);
    c.end(2);
    assert.deepEqual(c.statuses(), ["running", "not_run", "not_run"]);
    c.end(0);
    c.end(0, ERROR);
    assert.deepEqual(c.statuses(), ["ok", "running", "not_run"]);
    assert.deepEqual(c.started, [0, 1]);
  });

  test("with its own budget per cell, a cell that caught its timeout and completed lets the next run", () => {
    const c = call({ cells: 2, budget: "cell" });
    c.end(0, { ...OK, timedOut: true });
    assert.equal(c.value(), "running");
    assert.deepEqual(c.statuses(), ["ok", "running"]);
    c.end(1);
    assert.equal(c.value(), "completed");
    assert.equal(c.output()?.timedOut, true, "the call says one of its cells timed out");
  });

  test("with one deadline for the call, a cell that ends before it lets the next run", () => {
    const c = call({ cells: 2, budget: "call", deadlineAt: 1000 });
    c.end(0, OK, 999);
    assert.equal(c.value(), "running");
    assert.deepEqual(c.started, [0, 1]);
  });
});

describe("running: cells sent together (a batch)", () => {
  test("a cell ending with the next already running marks it running without starting it again", () => {
    const c = call({ cells: 3 });
    c.continued(0);
    assert.deepEqual(c.started, [0]);
    assert.equal(c.value(), "running");
    assert.deepEqual(c.statuses(), ["ok", "running", "not_run"]);
    c.continued(1);
    assert.deepEqual(c.statuses(), ["ok", "ok", "running"]);
    c.end(2);
    assert.deepEqual(c.started, [0]);
    assert.equal(c.value(), "completed");
  });

  test("past the call's deadline the next cell already runs: its run's deadline decides, not a skip", () => {
    const c = call({ cells: 2, budget: "call", deadlineAt: 100 });
    c.continued(0, 150);
    assert.equal(c.value(), "running");
    assert.deepEqual(c.statuses(), ["ok", "running"]);
    c.end(1, { ...OK, ok: false, timedOut: true }, 160);
    assert.equal(c.value(), "stopped");
    assert.equal(c.output()!.timedOut, true);
  });

  test("a batch that stopped early (its last cell ended without the next): the machine starts the next itself", () => {
    const c = call({ cells: 3 });
    c.continued(0);
    c.end(1);
    assert.deepEqual(c.started, [0, 2]);
    assert.deepEqual(c.statuses(), ["ok", "ok", "running"]);
  });

  test("a continued end of a cell that is not running is ignored", () => {
    const c = call({ cells: 3 });
    c.continued(1);
    assert.deepEqual(c.statuses(), ["running", "not_run", "not_run"]);
  });
});

describe("completed", () => {
  test("every cell completed: final, nothing left running, no flag set", () => {
    const c = call({ cells: 2, budget: "call", deadlineAt: 10 });
    c.end(0, OK, 5);
    c.end(1, OK, 50); // the last cell: the deadline passing as it ends does not matter
    assert.equal(c.value(), "completed");
    assert.ok(c.done());
    assert.deepEqual(c.output(), { statuses: ["ok", "ok"], timedOut: false, cancelled: false, lost: false });
  });

  test("a one-cell call completes with its only cell", () => {
    const c = call({ cells: 1 });
    c.end(0);
    assert.equal(c.value(), "completed");
    assert.deepEqual(c.started, [0]);
  });
});

describe("stopped", () => {
  test("a failing cell stops the call: the cells after it are not run", () => {
    const c = call({ cells: 3 });
    c.end(0);
    c.end(1, ERROR);
    assert.equal(c.value(), "stopped");
    assert.ok(c.done());
    assert.deepEqual(c.started, [0, 1]);
    assert.deepEqual(c.output(), {
      statuses: ["ok", "error", "not_run"],
      timedOut: false,
      cancelled: false,
      lost: false,
    });
  });

  test("a cell whose kernel was lost is an error and the call says the kernel was lost", () => {
    const c = call({ cells: 2 });
    c.end(0, { ...ERROR, lost: true });
    assert.equal(c.value(), "stopped");
    assert.deepEqual(c.output()?.statuses, ["error", "not_run"]);
    assert.equal(c.output()?.lost, true);
  });

  test("with its own budget per cell, a cell that did not stop at its timeout is an error that stops the call", () => {
    const c = call({ cells: 2, budget: "cell" });
    c.end(0, { ...ERROR, timedOut: true, lost: true });
    assert.equal(c.value(), "stopped");
    assert.equal(c.output()?.timedOut, true);
  });

  test("the last cell failing ends the call stopped, not completed", () => {
    const c = call({ cells: 2 });
    c.end(0);
    c.end(1, ERROR);
    assert.equal(c.value(), "stopped");
  });
});

describe("cancelled", () => {
  test("a cancelled cell ends the call; its kernel kept, its status is cancelled; later cells not run", () => {
    const c = call({ cells: 3 });
    c.end(0, { ...ERROR, cancelled: true });
    assert.equal(c.value(), "cancelled");
    assert.ok(c.done());
    assert.deepEqual(c.output(), {
      statuses: ["cancelled", "not_run", "not_run"],
      timedOut: false,
      cancelled: true,
      lost: false,
    });
  });

  test("a cancelled cell that caught the cancellation and completed is ok, but the call still ends", () => {
    const c = call({ cells: 2 });
    c.end(0, { ...OK, cancelled: true });
    assert.equal(c.value(), "cancelled");
    assert.deepEqual(c.output()?.statuses, ["ok", "not_run"]);
  });

  test("a cancelled cell whose kernel was killed is an error", () => {
    const c = call({ cells: 2 });
    c.end(0, { ...ERROR, cancelled: true, lost: true });
    assert.equal(c.value(), "cancelled");
    assert.deepEqual(c.output()?.statuses, ["error", "not_run"]);
    assert.equal(c.output()?.lost, true);
  });

  test("cancellation wins over a timeout in the same end", () => {
    const c = call({ cells: 2, budget: "call", deadlineAt: 10 });
    c.end(0, { ...ERROR, cancelled: true, timedOut: true }, 20);
    assert.equal(c.value(), "cancelled");
  });
});

describe("timedOut", () => {
  test("with one deadline for the call, a cell that timed out ends it even when the cell caught the interrupt", () => {
    const c = call({ cells: 3, budget: "call", deadlineAt: 1000 });
    c.end(0, OK, 10);
    // Reported a little before the deadline on the call's clock (the run counts its own, rounded): still the end.
    c.end(1, { ...OK, timedOut: true }, 999);
    assert.equal(c.value(), "timedOut");
    assert.ok(c.done());
    assert.deepEqual(c.started, [0, 1]);
    assert.deepEqual(c.output(), { statuses: ["ok", "ok", "not_run"], timedOut: true, cancelled: false, lost: false });
  });

  test("the call's deadline passing as a cell ends: no cell starts after it, and the call timed out", () => {
    const c = call({ cells: 3, budget: "call", deadlineAt: 1000 });
    c.end(0, OK, 1000);
    assert.equal(c.value(), "timedOut");
    assert.deepEqual(c.started, [0]);
    assert.deepEqual(c.output(), {
      statuses: ["ok", "not_run", "not_run"],
      timedOut: true,
      cancelled: false,
      lost: false,
    });
  });

  test("a cell that timed out and failed is an error, and the call is stopped by the failure", () => {
    const c = call({ cells: 2, budget: "call", deadlineAt: 1000 });
    c.end(0, { ...ERROR, timedOut: true, lost: true }, 1000);
    assert.equal(c.value(), "stopped");
    assert.deepEqual(c.output(), { statuses: ["error", "not_run"], timedOut: true, cancelled: false, lost: true });
  });

  test("with its own budget per cell, there is no call deadline: a late end lets the next cell run", () => {
    const c = call({ cells: 2, budget: "cell", deadlineAt: 1000 });
    c.end(0, OK, 5000);
    assert.equal(c.value(), "running");
  });
});

describe("the definition", () => {
  test("every state is described, under the machine's id", () => {
    assert.equal(notebookCallMachine.id, "notebookCall");
    assert.deepEqual(undescribedStates(notebookCallMachine), []);
  });

  test("a cell's status from its end", () => {
    assert.equal(statusOf(OK), "ok");
    assert.equal(statusOf({ ...OK, cancelled: true, timedOut: true }), "ok");
    assert.equal(statusOf(ERROR), "error");
    assert.equal(statusOf({ ...ERROR, cancelled: true }), "cancelled");
    assert.equal(statusOf({ ...ERROR, cancelled: true, lost: true }), "error");
    assert.equal(statusOf({ ...ERROR, timedOut: true }), "error");
  });

  test("the effect left unprovided fails loudly, naming itself and who provides it", () => {
    const actor = createActor(notebookCallMachine, { input: { cells: 1, budget: "cell" } });
    let error: unknown;
    actor.subscribe({ error: (e) => (error = e) });
    actor.start();
    assert.match(
      String(error),
      /machines\/notebook-call\.ts: the `startCell` action must be provided \(host\/notebook-call\.ts\)/,
    );
  });
});
