// A run frame's `batch` (docs/protocol.md "Notebook cells"): several cells in one run, against real Python runners,
// real pipes and real signals.
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { RunnerDriver, encodeFrame, sleep, type Frame } from "../helpers/runner-driver.ts";

const drivers: RunnerDriver[] = [];
after(async () => {
  await Promise.all(drivers.map((d) => d.close()));
});

async function start(mode: "session" | "fresh" = "session"): Promise<RunnerDriver> {
  const d = await RunnerDriver.start({ mode });
  drivers.push(d);
  return d;
}

const cells = (...codes: string[]) => codes.map((code, i) => ({ code, filename: `cell-${i + 2}.py` }));

/** The run's `cell` frames and its `done`, in order. */
async function ends(d: RunnerDriver, id: string): Promise<Frame[]> {
  const done = await d.waitFrame((f) => f.type === "done" && f.id === id, 10_000);
  return [...d.frames.filter((f) => f.type === "cell" && f.id === id), done];
}

describe("a batch of cells in one run", () => {
  it("runs the cells in order: one started, a cell frame after each but the last, done after the last", async () => {
    const d = await start();
    const mark = d.startRun("x = 1\nprint('one')\nx", {
      extra: { result: "value", batch: cells("x += 1\nprint('two')\nx", "print('three')\nx * 10") },
    });
    const [c1, c2, done] = await ends(d, mark.id);
    assert.deepEqual(
      [c1, c2, done].map((f) => [f.type, f.error, f.exitCode, f.value]),
      [
        ["cell", null, 0, "1"],
        ["cell", null, 0, "2"],
        ["done", null, 0, "20"],
      ],
    );
    assert.equal(d.frames.filter((f) => f.type === "started" && f.id === mark.id).length, 1);
    assert.equal(d.stdoutText().slice(mark.out), "one\ntwo\nthree\n");
    // The frames came after each cell's output: the host splits the output at them (the drain before each).
    const order = d.frames.filter((f) => f.id === mark.id).map((f) => f.type);
    assert.deepEqual(order, ["started", "cell", "cell", "done"]);
  });

  it("stops at a failing cell: its error ends the run, the cells after it do not run", async () => {
    const d = await start();
    const mark = d.startRun("ran = []\nran.append(1)", {
      extra: { result: "value", batch: cells("ran.append(2)\n1 / 0", "ran.append(3)") },
    });
    const frames = await ends(d, mark.id);
    assert.deepEqual(
      frames.map((f) => [f.type, f.error]),
      [
        ["cell", null],
        ["done", "exception"],
      ],
    );
    // The traceback names the failing cell's own file.
    assert.match(String(frames[1].exception), /File "cell-2\.py", line 2/);
    const after = await d.run("ran", { extra: { result: "value" } });
    assert.equal(after.done.value, "[1, 2]");
  });

  it("stops at sys.exit() and at a syntax error, as a run of their own would end", async () => {
    const d = await start();
    for (const [code, error] of [
      ["import sys\nsys.exit(0)", "exit"],
      ["def (", "syntax"],
    ]) {
      const mark = d.startRun("hits = 0", { extra: { batch: cells(code, "hits += 1") } });
      const frames = await ends(d, mark.id);
      assert.deepEqual(
        frames.map((f) => [f.type, f.error]),
        [
          ["cell", null],
          ["done", error],
        ],
      );
      assert.equal((await d.run("hits", { extra: { result: "value" } })).done.value, "0");
    }
  });

  it("an interrupt (as a frame) ends the batch, also when the cell catches it and completes", async () => {
    const d = await start();
    const caught = "import time\ntry:\n    time.sleep(10)\nexcept KeyboardInterrupt:\n    print('caught')";
    const mark = d.startRun("after = False", { extra: { batch: cells(caught, "after = True") } });
    await d.waitFrame((f) => f.type === "cell" && f.id === mark.id);
    await sleep(100); // in the sleep
    d.send({ type: "signal", signal: "SIGINT" });
    const done = await d.waitFrame((f) => f.type === "done" && f.id === mark.id);
    assert.deepEqual([done.error, done.exitCode], [null, 0]);
    assert.match(d.stdoutText().slice(mark.out), /caught\n$/);
    // The cell after the interrupted one never ran; the session goes on.
    assert.equal((await d.run("after", { extra: { result: "value" } })).done.value, "False");
  });

  it("the next cell starts only once the host acknowledged the cell frame before it (cell.ack)", async () => {
    const d = await start();
    d.holdCellAcks();
    const mark = d.startRun("print('one')", { extra: { batch: cells("print('two')") } });
    await d.waitFrame((f) => f.type === "cell" && f.id === mark.id);
    await sleep(200);
    assert.equal(d.stdoutText().slice(mark.out), "one\n");
    assert.equal(d.frames.filter((f) => f.type === "done" && f.id === mark.id).length, 0);
    d.releaseCellAcks();
    await d.waitFrame((f) => f.type === "done" && f.id === mark.id);
    assert.equal(d.stdoutText().slice(mark.out), "one\ntwo\n");
  });

  it("an interrupt while the next cell waits for its ack ends that cell as interrupted, before it runs", async () => {
    const d = await start();
    d.holdCellAcks();
    const mark = d.startRun("ran = []", { extra: { result: "value", batch: cells("ran.append(2)", "ran.append(3)") } });
    await d.waitFrame((f) => f.type === "cell" && f.id === mark.id);
    await sleep(100);
    d.send({ type: "signal", signal: "SIGINT" });
    const done = await d.waitFrame((f) => f.type === "done" && f.id === mark.id);
    assert.deepEqual([done.error, done.exitCode], ["interrupt", 130]);
    assert.match(String(done.exception), /KeyboardInterrupt/);
    // The late ack is of a run that ended: the next batch still waits for its own.
    d.releaseCellAcks();
    assert.equal((await d.run("ran", { extra: { result: "value" } })).done.value, "[]");
    const next = d.startRun("ran.append(4)", { extra: { result: "value", batch: cells("ran.append(5)") } });
    await ends(d, next.id);
    assert.equal((await d.run("ran", { extra: { result: "value" } })).done.value, "[4, 5]");
  });

  it("the control: without an interrupt the same cells all run", async () => {
    const d = await start();
    const quick = "import time\ntry:\n    time.sleep(0.01)\nexcept KeyboardInterrupt:\n    print('caught')";
    const mark = d.startRun("after = False", { extra: { batch: cells(quick, "after = True") } });
    await d.waitFrame((f) => f.type === "done" && f.id === mark.id);
    assert.equal((await d.run("after", { extra: { result: "value" } })).done.value, "True");
  });

  it("an interrupt in the next run is not left over from a batch's", async () => {
    const d = await start();
    const mark = d.startRun("import time\ntime.sleep(10)", { extra: { batch: cells("x = 1") } });
    await d.waitFrame((f) => f.type === "started" && f.id === mark.id);
    await sleep(100);
    d.send({ type: "signal", signal: "SIGINT" });
    const done = await d.waitFrame((f) => f.type === "done" && f.id === mark.id);
    assert.equal(done.error, "interrupt");
    const next = d.startRun("y = 1", { extra: { batch: cells("y += 1") } });
    const frames = await ends(d, next.id);
    assert.deepEqual(
      frames.map((f) => f.type),
      ["cell", "done"],
    );
  });

  it("runs a batch in a fresh runner, which exits after its last cell with that cell's status", async () => {
    const d = await start("fresh");
    const mark = d.startRun("print('a')", { extra: { batch: cells("import sys\nsys.exit(3)", "print('c')") } });
    const frames = await ends(d, mark.id);
    assert.deepEqual(
      frames.map((f) => [f.type, f.error, f.exitCode]),
      [
        ["cell", null, 0],
        ["done", "exit", 3],
      ],
    );
    assert.deepEqual(await d.waitExit(), { code: 3, signal: null });
    assert.equal(d.stdoutText(), "a\n");
  });

  it("refuses a malformed batch as a bad run frame", async () => {
    for (const batch of [
      "print(1)",
      [{ code: 1, filename: "f" }],
      [{ code: "x", filename: "" }],
      [{ code: "x" }],
      ["x"],
    ]) {
      const d = await start();
      d.control.write(encodeFrame({ type: "run", id: "r1", code: "1", filename: "f", batch }));
      const f = await d.waitFrame("fatal");
      assert.match(String(f.message), /bad run frame: batch/);
      assert.deepEqual(await d.waitExit(), { code: 70, signal: null });
    }
  });
});
