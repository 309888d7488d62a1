// Work put off while a tool result is pending (lib/after-results.ts): the scheduler itself with real timers, the
// event-log recorder under a pending result, and the extension in a real Pi session (loaded as a factory, so it
// shares this module's scheduler), where Pi starts the next call of a turn without an event-loop turn in between.
import "../helpers/agent-dir.ts";
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import {
  afterResults,
  deferredCount,
  holdResult,
  MAX_DEFER_MS,
  resultsPending,
  runDeferred,
  whenResultsDone,
} from "../../lib/after-results.ts";
import { Recorder } from "../../record/recorder.ts";
import { SystemObserver } from "../../record/observe.ts";
import { SupervisorHost } from "../../host/index.ts";
import { createCodeExecutionExtension } from "../../extension/index.ts";
import { startPi } from "../helpers/pi-session.ts";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { tempDir } from "../helpers/temp-dir.ts";

const turn = () => new Promise((r) => setImmediate(r));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("after-results scheduler", () => {
  test("a task waits while a result is pending and runs on a later turn after its release", async () => {
    const release = holdResult();
    let ran = 0;
    try {
      const t0 = performance.now();
      afterResults(() => (ran += 1));
      for (let i = 0; i < 5; i++) await turn();
      // Unless the turns themselves outlasted the bound (a loaded machine), when it rightly runs anyway.
      if (performance.now() - t0 < MAX_DEFER_MS) assert.equal(ran, 0, "not while the result is pending");
    } finally {
      release();
    }
    if (ran === 0) {
      assert.equal(ran, 0, "not inside the release");
      await turn();
    }
    assert.equal(ran, 1);
    assert.equal(deferredCount(), 0);
  });

  test("runDeferred runs what waits at once once nothing is pending, and nothing while a result is", () => {
    const release = holdResult();
    let ran = 0;
    afterResults(() => (ran += 1));
    runDeferred();
    assert.equal(ran, 0, "a result is still pending");
    release();
    runDeferred();
    assert.equal(ran, 1, "run synchronously");
  });

  test("no task waits much longer than MAX_DEFER_MS for a result that stays pending; later ones follow turn by turn", async () => {
    const release = holdResult();
    // The scheduler's timer does not keep a process alive (Pi's exit is not held up by it); this test's does.
    const alive = setTimeout(() => {}, 10_000);
    const t0 = performance.now();
    let next = false;
    const ran = await new Promise<number>((resolve) =>
      afterResults(() => {
        resolve(performance.now() - t0);
        // Overdue: a task queued by a task (a slice of a long encoding) runs on the next turn, pending or not.
        afterResults(() => (next = true));
      }),
    );
    clearTimeout(alive);
    assert.ok(ran >= MAX_DEFER_MS - 10, `ran after ${ran.toFixed(1)} ms`);
    assert.ok(ran < MAX_DEFER_MS + 500, `ran after ${ran.toFixed(1)} ms`);
    await turn();
    await turn();
    assert.equal(next, true);
    release();
    // Once nothing waits, the wait is bounded again.
    let late = false;
    const again = holdResult();
    const t1 = performance.now();
    afterResults(() => (late = true));
    await turn();
    await turn();
    // (Unless two turns outlasted the bound on a loaded machine: then it rightly ran.)
    if (performance.now() - t1 < MAX_DEFER_MS) assert.equal(late, false, "a new wait starts after the queue emptied");
    again();
    await turn();
    assert.equal(late, true);
  });

  test("a task queued while nothing was pending still runs within MAX_DEFER_MS when a result becomes pending before its turn", async () => {
    const alive = setTimeout(() => {}, 10_000);
    const t0 = performance.now();
    const ran = new Promise<number>((resolve) => afterResults(() => resolve(performance.now() - t0)));
    const release = holdResult(); // before the task's turn: the task must not wait for this release
    const after = await ran;
    clearTimeout(alive);
    release();
    assert.ok(after < MAX_DEFER_MS + 500, `ran after ${after.toFixed(1)} ms`);
  });

  test("a task that throws does not stop the others; a release called twice releases once", async () => {
    const a = holdResult();
    const b = holdResult();
    const order: string[] = [];
    afterResults(() => order.push("first"));
    afterResults(() => {
      throw new Error("broken task");
    });
    afterResults(() => order.push("third"));
    a();
    a();
    assert.equal(resultsPending(), true, "b still holds");
    await turn();
    assert.deepEqual(order, []);
    b();
    assert.equal(resultsPending(), false);
    await turn();
    assert.deepEqual(order, ["first", "third"]);
  });

  test("whenResultsDone settles once no result is pending", async () => {
    const release = holdResult();
    let done = false;
    const p = whenResultsDone().then(() => (done = true));
    await sleep(5);
    assert.equal(done, false);
    release();
    await p;
    assert.equal(done, true);
  });
});

describe("the event-log recorder under a pending result", () => {
  test("nothing is encoded while a result is pending; drained() writes what was recorded before it, not after", async () => {
    const dir = tempDir("pcs-after-");
    const observer = new SystemObserver();
    const recorder = new Recorder(observer, { dir, piSession: "after" });
    const host = new SupervisorHost(observer.hostOptions());
    const queued = () => (recorder as unknown as { queue: unknown[] }).queue.length;
    await host.run({ code: "v = 0", cwd: dir, timeoutMs: 10_000, session: "s" });
    await recorder.drained();
    assert.equal(queued(), 0);
    // The wait is bounded (MAX_DEFER_MS): on a loaded machine a run can outlast it, and its records are then
    // encoded, rightly. An attempt counts only when the run and the turns after it fit in the wait.
    let release = () => {};
    for (let attempt = 0; ; attempt++) {
      release = holdResult();
      const held = performance.now();
      await host.run({ code: "v = 1", cwd: dir, timeoutMs: 10_000, session: "s" });
      for (let i = 0; i < 5; i++) await turn();
      const n = queued();
      if (performance.now() - held < MAX_DEFER_MS - 5 || attempt === 20) {
        if (n <= 10) release();
        assert.ok(n > 10, `the run's records wait unencoded (${n} queued, attempt ${attempt})`);
        break;
      }
      release();
      await recorder.drained();
    }
    // Asked for explicitly (the journal does, before its rows), what was recorded so far is written whole...
    const drained = recorder.drained();
    // ...and what is recorded after the call is neither waited for nor encoded ahead of its turn.
    const second = host.run({ code: "v = 2", cwd: dir, timeoutMs: 10_000, session: "s" });
    await drained;
    const text = readFileSync(recorder.path, "utf8");
    assert.match(text, /"code":"v = 1"/);
    await second;
    assert.ok(queued() > 0, "the second run's records still wait");
    release();
    await turn();
    await recorder.drained();
    assert.match(readFileSync(recorder.path, "utf8"), /"code":"v = 2"/);
    await host.shutdown();
    recorder.close("shutdown");
  });
});

describe("through a real Pi session", () => {
  test("work put off during a call runs after Pi's tool_execution_end and before the next call starts", async () => {
    const scratch = tempDir("pcs-after-pi-");
    process.env.PI_CODE_EXECUTION_LOG_DIR = join(scratch, "logs");
    const ran: boolean[] = [];
    /** When each task ran, and when each observed call started. */
    const ranAt: number[] = [];
    const startedAt: number[] = [];
    // A Pi tool the script awaits mid-run, while code_execution's result is pending: it puts work off.
    const probe = (pi: ExtensionAPI) =>
      pi.registerTool({
        name: "defer_probe",
        label: "probe",
        description: "Puts work off until no result is pending.",
        parameters: Type.Object({}),
        async execute() {
          const i = ran.push(false) - 1;
          afterResults(() => {
            ran[i] = true;
            ranAt[i] = performance.now();
          });
          return { content: [{ type: "text" as const, text: String(i) }], details: undefined };
        },
      });
    const pi = await startPi({ extensionPaths: [], extensionFactories: [createCodeExecutionExtension(), probe] });
    try {
      const seen: { atEnd: boolean | undefined; atNextStart?: boolean }[] = [];
      let observing = false;
      pi.session.subscribe((e: any) => {
        if (e.toolName !== "code_execution" || e.parentToolCallId || !observing) return;
        if (e.type === "tool_execution_start") startedAt.push(performance.now());
        if (e.type === "tool_execution_start" && seen.length) seen.at(-1)!.atNextStart = ran[seen.length - 1];
        if (e.type === "tool_execution_end") seen.push({ atEnd: ran[seen.length] });
      });
      const code = "x = await defer_probe()\nimport time; time.sleep(0.01)\nprint(x)";
      await pi.callTools([{ code: "import time", session: "p" }]); // the session's start is not observed
      observing = true;
      const results = await pi.callTools([0, 1, 2, 3].map(() => ({ code, session: "p" })));
      assert.deepEqual(
        results.map(
          (r) =>
            r.content
              .map((c) => c.text)
              .join("")
              .split("\n")[0],
        ),
        ["0", "1", "2", "3"],
      );
      assert.equal(seen.length, 4);
      for (const [i, s] of seen.entries()) {
        // Inside the call only once the bounded wait ran out (a loaded machine), never on the next turn.
        const into = (ranAt[i] ?? 0) - startedAt[i]!;
        if (s.atEnd)
          assert.ok(into >= MAX_DEFER_MS - 10, `call ${i}: ran inside the call, ${into.toFixed(1)} ms into it`);
        if (i < 3) assert.equal(s.atNextStart, true, `call ${i}: it ran before the next call started`);
      }
      assert.equal(resultsPending(), false);
    } finally {
      await pi.dispose();
      delete process.env.PI_CODE_EXECUTION_LOG_DIR;
    }
  });
});
