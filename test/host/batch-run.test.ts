// A run with a batch of cells (RunRequestInput's `batch`, host/batch-cells.ts) through the supervisor host, against
// real Python runners: the output split by cell, each cell reported as it ends, the session's count, the refusals.
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SupervisorHost, type RunRequestInput } from "../../host/host.ts";
import type { CellPart } from "../../host/requests.ts";
import { tempDir } from "../helpers/temp-dir.ts";

let host: SupervisorHost;
let cwd: string;
const request = (code: string, batch: string[], extra: Partial<RunRequestInput> = {}): RunRequestInput => ({
  code,
  batch,
  cwd,
  timeoutMs: 20_000,
  session: "nb",
  result: "value",
  ...extra,
});
before(() => {
  cwd = tempDir("pcs-batch-");
  host = new SupervisorHost({ limits: { graceMs: 500 } });
});
after(async () => {
  await host.shutdown();
});

describe("a batch run", () => {
  test("splits stdout, stderr and displays by cell; each completed cell is reported as it ends", async () => {
    const seen: [number, CellPart][] = [];
    const r = await host.run(
      request("import sys\nprint('a1')\nprint('e1', file=sys.stderr)\n1", [
        "print('a2')\ndisplay('shown')\nprint('a2 after')",
        "print('a3', end='')\nsys.stderr.write('e3')\n'last'",
      ]),
      {
        onCell: (i, part) => seen.push([i, part]),
        onDisplay: (item) => `[display ${item.kind}]\n`,
      },
    );
    assert.equal(r.outcome.status, "success");
    assert.deepEqual(
      r.cells!.map((c) => [c.stdout, c.stderr, c.value, c.error, c.exitCode]),
      [
        ["a1\n", "e1\n", "1", null, 0],
        ["a2\n[display text]\na2 after\n", "", undefined, null, 0],
        ["a3", "e3", "'last'", null, 0],
      ],
    );
    assert.deepEqual(
      seen.map(([i, p]) => [i, p.stdout]),
      [
        [0, "a1\n"],
        [1, "a2\n[display text]\na2 after\n"],
      ],
    );
    // The run's whole output is the cells' in order; the last cell's value is the run's.
    assert.equal(r.stdout, r.cells!.map((c) => c.stdout).join(""));
    assert.equal(r.value, "'last'");
    const total = r.cells!.reduce((n, c) => n + c.durationMs, 0);
    assert.ok(Math.abs(total - r.outcome.durationMs) <= 2, `${total} against ${r.outcome.durationMs}`);
  });

  test("a failing cell ends the run with its error; the result's cells stop there", async () => {
    const r = await host.run(request("x = 1", ["x = 2\nraise KeyError('k')", "x = 3"]));
    assert.equal(r.outcome.status, "runtime_error");
    assert.equal(r.cells!.length, 2);
    assert.equal(r.cells![1].error, "runtime_error");
    assert.match(r.cells![1].exception!, /File "cell-\d+\.py", line 2[\s\S]*KeyError: 'k'/);
    assert.equal((await host.run(request("x", []))).value, "2");
  });

  test("each cell counts as a run of the session: the next run's place follows the batch's cells", async () => {
    const first = await host.run(request("1", [], { session: "count" }));
    const batch = await host.run(request("2", ["3", "4"], { session: "count" }));
    const next = await host.run(request("5", [], { session: "count" }));
    assert.deepEqual(
      [first, batch, next].map((r) => r.outcome.session!.ordinal),
      [1, 2, 5],
    );
  });

  test("a timeout's interrupt ends the batch even when the cell catches it; the session keeps its state", async () => {
    const caught = "import time\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    print('caught')";
    const r = await host.run(request("after = False", [caught, "after = True"], { timeoutMs: 500 }));
    assert.equal(r.outcome.stopReason, "timeout");
    assert.equal(r.cells!.length, 2);
    assert.equal(r.cells![1].stdout, "caught\n");
    assert.equal((await host.run(request("after", []))).value, "False");
  });

  test("a cell's first output is never credited to the cell before, even when the host reads both at once", async () => {
    // The race: a cell's output reaching the host in the same read as the `cell` frame before it, and handled first.
    // The host's thread is kept busy in 3 ms spans, so the runner's frame and the next cell's output wait together.
    const busy = setInterval(() => {
      const until = performance.now() + 3;
      while (performance.now() < until);
    }, 1);
    try {
      const cells = Array.from({ length: 150 }, (_, i) => `print(${i + 1})`);
      const r = await host.run(request("print(0)", cells, { session: "race", timeoutMs: 60_000 }));
      assert.equal(r.outcome.status, "success");
      const wrong = r.cells!.flatMap((c, i) =>
        c.stdout === `${i}\n` ? [] : [`cell ${i}: ${JSON.stringify(c.stdout)}`],
      );
      assert.deepEqual(wrong, []);
    } finally {
      clearInterval(busy);
    }
  });

  test("a batch is refused without a session or in a JavaScript session: nothing runs", async () => {
    const fresh = await host.run(request("open('ran', 'w')", ["1"], { session: undefined }));
    const js = await host.run(request("1", ["2"], { session: "js", language: "js" }));
    for (const r of [fresh, js]) {
      assert.equal(r.outcome.status, "setup_error");
      assert.match(r.outcome.message!, /only in a Python session; nothing was run/);
    }
    assert.equal(
      host.sessions().some((s) => s.name === "js"),
      false,
    );
  });
});
