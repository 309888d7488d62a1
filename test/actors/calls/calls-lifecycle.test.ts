// The nested-call lifecycle of actors/calls/dispatch.ts against a scripted RunTools, and what Python receives from
// a tool (actors/calls/tool-results.ts): no process, no Pi. What Pi's own hooks add is covered in
// test/actors/calls/calls.test.ts; here are the edges that are hard to reach through a session.
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { performance } from "node:perf_hooks";
import { describe, test } from "node:test";
import { assign, createActor, sendTo, setup } from "xstate";
import {
  createDispatchLogic,
  runNestedCall,
  type RunTool,
  type RunTools,
} from "../../../actors/calls/dispatch.ts";
import { errorMessage } from "../../../lib/errors.ts";
import {
  MAX_RESULT_BYTES,
  PREVIEW_FLOOR,
  PreviewBudget,
  previewOf,
  resultText,
  structuredText,
  RUN_PREVIEW_BUDGET,
  usageOf,
} from "../../../actors/calls/tool-results.ts";
import type { NestedCallOutcome } from "../../../actors/calls/contract.ts";
import type { DispatchInput } from "../../../machines/tool-events.ts";

const input = (seq: number, args: Record<string, unknown> = { q: "x" }): DispatchInput => ({
  runId: "r",
  callId: `c${seq}`,
  seq,
  childId: `tool:r:${seq}`,
  parentId: "call_1",
  name: "t",
  python: "t",
  args,
  at: Date.UTC(2030, 0, 1),
});

function bridge(tool: Partial<RunTool>, execute: RunTools["execute"], log: string[] = []): RunTools {
  return {
    callerId: "call_1",
    cwd: "/w",
    tools: [
      {
        spec: { name: "t", python: "t", signature: "t(*, q: str)" },
        validate: (args) =>
          typeof args.q === "string" ? { ok: true, value: args } : { ok: false, error: "q must be a string" },
        ...tool,
      },
    ],
    emit: (channel) => log.push(channel.replace("code_execution:", "")),
    execute,
  };
}

const text = (t: string) => ({ result: { content: [{ type: "text", text: t }] }, isError: false });

describe("nested-call lifecycle", () => {
  test("a tool that ignores its signal: cancelling stops waiting at once; after and finish still run", async () => {
    const log: string[] = [];
    let finishTool!: () => void;
    const b = bridge(
      { hooks: { after: (o) => void log.push(`after:${o.status}`) } },
      () => new Promise((resolve) => (finishTool = () => resolve(text("late")))),
      log,
    );
    const controller = new AbortController();
    const done = runNestedCall(b, input(1), controller.signal, () => log.push("validated"));
    await new Promise((r) => setTimeout(r, 20));
    controller.abort();
    const { record, reply } = await done;
    assert.equal(record.status, "cancelled");
    assert.equal(reply.status, "cancelled");
    assert.deepEqual(log, ["nested_tool_start", "validated", "tool_call", "after:cancelled", "nested_tool_finish"]);
    finishTool(); // the tool ends later; nothing changes
  });

  test("an after handler that throws is recorded as hookError; the status stands", async () => {
    const b = bridge({ hooks: { after: () => Promise.reject(new Error("audit log full")) } }, async () => text("ok"));
    const { record, reply } = await runNestedCall(b, input(1), new AbortController().signal, () => {});
    assert.equal(record.status, "succeeded");
    assert.equal(record.hookError, "audit log full");
    assert.deepEqual(reply, { status: "ok", text: "ok" });
  });

  test("`before` may block by returning {block, reason}", async () => {
    const b = bridge({ hooks: { before: () => ({ block: true, reason: "quota" }) } }, async () => text("never"));
    const { record, reply } = await runNestedCall(b, input(1), new AbortController().signal, () => {});
    assert.equal(record.status, "blocked");
    assert.deepEqual(reply, { status: "blocked", text: "t was blocked: quota" });
    assert.equal(record.dispatcher, undefined, "it never ran");
  });

  test("a tool that throws, and a dispatcher returning garbage, are failures with a message", async () => {
    const thrown = await runNestedCall(
      bridge({}, async () => {
        throw new Error("socket closed");
      }),
      input(1),
      new AbortController().signal,
      () => {},
    );
    assert.deepEqual(thrown.reply, { status: "error", text: "socket closed" });
    const garbage = await runNestedCall(
      bridge({ hooks: { dispatch: () => null as never } }, async () => text("unused")),
      input(2),
      new AbortController().signal,
      () => {},
    );
    assert.equal(garbage.record.status, "failed");
    assert.equal(garbage.record.dispatcher, "registration");
  });

  test("a result larger than the bridge passes fails with the size named", async () => {
    const big = "x".repeat(MAX_RESULT_BYTES + 1);
    const { record, reply } = await runNestedCall(
      bridge({}, async () => text(big)),
      input(1),
      new AbortController().signal,
      () => {},
    );
    assert.equal(record.status, "failed");
    assert.equal(reply.status, "error");
    assert.match(
      reply.text,
      new RegExp(`the result is ${MAX_RESULT_BYTES + 1} bytes; the bridge passes at most 32 MiB`),
    );
    const most = await runNestedCall(
      bridge({}, async () => text(big.slice(1))),
      input(2),
      new AbortController().signal,
      () => {},
    );
    assert.equal(most.reply.status, "ok", "exactly the limit passes");
    assert.equal(most.reply.text.length, MAX_RESULT_BYTES);
  });

  test("a run's previews share a budget: after it, each keeps only a short head (byte counts stay exact)", async () => {
    const b = bridge({}, async () => text("y".repeat(10_000)));
    const signal = new AbortController().signal;
    const per = 4096 + Buffer.byteLength(JSON.stringify({ q: "x" }));
    const full = Math.floor(RUN_PREVIEW_BUDGET / per);
    const records = [];
    for (let i = 1; i <= full + 3; i++) records.push((await runNestedCall(b, input(i), signal, () => {})).record);
    assert.equal(records[0]!.result!.text.length, 4096);
    const last = records.at(-1)!;
    assert.equal(last.result!.text.length, PREVIEW_FLOOR);
    assert.equal(last.result!.bytes, 10_000);
    assert.equal(last.result!.truncated, true);
    // Another run has its own budget.
    const other = await runNestedCall(
      bridge({}, async () => text("y".repeat(10_000))),
      input(1),
      signal,
      () => {},
    );
    assert.equal(other.record.result!.text.length, 4096);
  });

  test("the record's duration is the call's own time, in milliseconds", async () => {
    const b = bridge({}, () => new Promise((resolve) => setTimeout(() => resolve(text("slow")), 30)));
    const t0 = performance.now();
    const { record } = await runNestedCall(b, input(1), new AbortController().signal, () => {});
    const took = performance.now() - t0;
    assert.ok(record.durationMs >= 29 && record.durationMs <= took, `${record.durationMs} of ${took}`);
  });

  test("waiting on `before` and the tool leaves no listener on the signal, whatever ended the wait", async () => {
    // A signal may outlive many calls (a caller's own): each wait removes what it added.
    const signal = new AbortController().signal;
    await runNestedCall(bridge({ hooks: { before: async () => undefined } }, async () => text("ok")), input(1), signal, () => {});
    await runNestedCall(
      bridge({ hooks: { before: () => Promise.reject(new Error("no")) } }, async () => text("never")),
      input(2),
      signal,
      () => {},
    );
    await runNestedCall(bridge({}, () => Promise.reject(new Error("tool broke"))), input(3), signal, () => {});
    assert.equal(getEventListeners(signal, "abort").length, 0);
    const ac = new AbortController();
    const waiting = runNestedCall(bridge({}, () => new Promise(() => {})), input(4), ac.signal, () => {});
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(getEventListeners(ac.signal, "abort").length, 1, "one wait on the tool");
    ac.abort();
    assert.equal((await waiting).record.status, "cancelled");
    assert.equal(getEventListeners(ac.signal, "abort").length, 0, "the fired listener is gone too");
  });

  test("a cancel while the legacy event is handled: `before` is not waited for, and its abort error is a cancel", async () => {
    const cancelIn = (before: NonNullable<RunTool["hooks"]>["before"]) => {
      const ac = new AbortController();
      let dispatched = false;
      const b = bridge({ hooks: { before } }, async () => ((dispatched = true), text("no")));
      b.emit = (channel) => {
        if (channel === "code_execution:tool_call") ac.abort();
      };
      return runNestedCall(b, input(1), ac.signal, () => {}).then((r) => ({ ...r, dispatched }));
    };
    const hanging = await cancelIn(() => new Promise(() => {}));
    assert.equal(hanging.record.status, "cancelled");
    assert.equal(hanging.dispatched, false);
    const checking = await cancelIn((c) => c.signal.throwIfAborted());
    assert.equal(checking.record.status, "cancelled", "not blocked by the abort error");
    assert.equal(checking.dispatched, false);
  });

  test("a cancel that arrives just as `before` answers: the tool is not dispatched", async () => {
    const ac = new AbortController();
    let dispatched = false;
    const b = bridge(
      // The abort comes after `before`'s answer was taken, before the lifecycle goes on to dispatch.
      { hooks: { before: () => new Promise<undefined>((r) => setTimeout(() => (r(undefined), queueMicrotask(() => ac.abort())), 5)) } },
      async () => ((dispatched = true), text("no")),
    );
    const { record } = await runNestedCall(b, input(1), ac.signal, () => {});
    assert.equal(record.status, "cancelled");
    assert.equal(dispatched, false);
  });

  test("a tool that sees the cancel while it runs and throws is cancelled, not failed", async () => {
    const ac = new AbortController();
    const b = bridge({}, (_n, _a, s) => {
      ac.abort(); // the cancel arrives while the tool's own code runs
      s.throwIfAborted();
      return Promise.resolve(text("never"));
    });
    const { record, reply } = await runNestedCall(b, input(1), ac.signal, () => {});
    assert.equal(record.status, "cancelled");
    assert.equal(reply.status, "cancelled");
  });

  test("observers that throw never change the call", async () => {
    const b = bridge({}, async () => text("fine"));
    b.emit = () => {
      throw new Error("observer bug");
    };
    const { record } = await runNestedCall(b, input(1), new AbortController().signal, () => {});
    assert.equal(record.status, "succeeded");
  });
});

describe("the lifecycle's order and outcomes", () => {
  const signal = () => new AbortController().signal;

  test("a call that succeeds: observations, the legacy event, the hooks and the record, in order", async () => {
    const log: string[] = [];
    const seen: Record<string, unknown>[] = [];
    const b = bridge(
      {
        hooks: {
          before: (c) => void log.push(`before:${JSON.stringify(c.input)}`),
          after: (o) => void log.push(`after:${o.status}:${o.durationMs >= 0}:${o.record.status}:${o.error ?? "-"}`),
        },
      },
      async (name, args) => {
        log.push(`execute:${name}:${JSON.stringify(args)}`);
        return {
          ...text("fine"),
          toolCallId: "call_1/1",
          result: { content: [{ type: "text", text: "fine" }], usage: { input: 3 } },
        };
      },
      log,
    );
    b.emit = (channel, payload) => {
      log.push(channel.replace("code_execution:", ""));
      seen.push(payload as Record<string, unknown>);
    };
    const { record, reply } = await runNestedCall(b, input(3, { q: "é" }), signal(), () => log.push("validated"));
    assert.deepEqual(log, [
      "nested_tool_start",
      "validated",
      "tool_call",
      'before:{"q":"é"}',
      'execute:t:{"q":"é"}',
      "after:succeeded:true:succeeded:-",
      "nested_tool_finish",
    ]);
    assert.deepEqual(reply, { status: "ok", text: "fine" });
    assert.deepEqual(
      { ...record, durationMs: 0 },
      {
        parentId: "call_1",
        childId: "tool:r:3",
        runId: "r",
        seq: 3,
        registeredName: "t",
        pythonName: "t",
        startedAt: "2030-01-01T00:00:00.000Z",
        input: { text: '{"q":"é"}', bytes: 10, truncated: false },
        durationMs: 0,
        status: "succeeded",
        dispatcher: "pi",
        toolCallId: "call_1/1",
        result: { text: "fine", bytes: 4, truncated: false },
        usage: { input: 3 },
      },
    );
    assert.ok(record.durationMs >= 0);
    assert.deepEqual(seen[0], {
      parentId: "call_1",
      childId: "tool:r:3",
      runId: "r",
      seq: 3,
      registeredName: "t",
      pythonName: "t",
      toolName: "t",
      startedAt: "2030-01-01T00:00:00.000Z",
      input: { text: '{"q":"é"}', bytes: 10, truncated: false },
    });
    const legacy = seen[1] as Record<string, unknown>;
    assert.deepEqual(
      { ...legacy, signal: undefined },
      {
        toolCallId: "call_1",
        parentToolCallId: "call_1",
        childToolCallId: "tool:r:3",
        runId: "r",
        toolName: "t",
        registeredName: "t",
        pythonName: "t",
        input: { q: "é" },
        cwd: "/w",
        signal: undefined,
      },
    );
    assert.deepEqual(seen[2], record, "the finish observation carries the terminal record");
  });

  test("invalid arguments: no legacy event, no dispatch; Python gets the validation error", async () => {
    const log: string[] = [];
    let ran = false;
    const b = bridge({}, async () => ((ran = true), text("no")), log);
    const { record, reply } = await runNestedCall(b, input(1, { q: 5 }), signal(), () => log.push("validated"));
    assert.deepEqual(reply, { status: "invalid", text: "q must be a string" });
    assert.equal(record.status, "invalid");
    assert.deepEqual(record.error, { text: "q must be a string", bytes: 18, truncated: false });
    assert.equal(record.result, undefined);
    assert.deepEqual(log, ["nested_tool_start", "nested_tool_finish"]);
    assert.equal(ran, false);
  });

  test("a tool not exposed in this run, or no bridge at all, is invalid", async () => {
    const b = bridge({}, async () => text("no"));
    const other = { ...input(1), name: "nope", python: "nope" };
    assert.deepEqual((await runNestedCall(b, other, signal(), () => {})).reply, {
      status: "invalid",
      text: "nope is not exposed to Python in this run",
    });
    const none = await runNestedCall(undefined, input(2), signal(), () => {});
    assert.deepEqual(none.reply, { status: "invalid", text: "t is not exposed to Python in this run" });
    assert.equal(none.record.parentId, "call_1");
  });

  test("the legacy event may block, replace the input, or break it", async () => {
    const executed: unknown[] = [];
    const run = (handler: (e: Record<string, unknown>) => void) => {
      const b = bridge({}, async (_n, args) => (executed.push(args), text("ran")));
      b.emit = (channel, payload) => {
        if (channel === "code_execution:tool_call") handler(payload as Record<string, unknown>);
      };
      return runNestedCall(b, input(1), signal(), () => {});
    };
    const blocked = await run((e) => Object.assign(e, { block: true, reason: "read-only mode" }));
    assert.deepEqual(blocked.reply, { status: "blocked", text: "t was blocked: read-only mode" });
    assert.equal(blocked.record.status, "blocked");
    const bare = await run((e) => void (e.block = true));
    assert.deepEqual(bare.reply, { status: "blocked", text: "t was blocked" });
    const replaced = await run((e) => void (e.input = { q: "changed" }));
    assert.deepEqual(replaced.reply, { status: "ok", text: "ran" });
    assert.deepEqual(executed, [{ q: "changed" }]);
    const broken = await run((e) => void (e.input = "not an object"));
    assert.deepEqual(broken.reply, {
      status: "invalid",
      text: "a code_execution:tool_call handler replaced the input with a non-object",
    });
    const thrown = await run(() => {
      throw new Error("bus down");
    });
    assert.deepEqual(thrown.reply, { status: "ok", text: "ran" }, "a failing bus intercepts nothing");
  });

  test("`before`: throwing blocks with its message; other answers let the call go on", async () => {
    const thrown = await runNestedCall(
      bridge({ hooks: { before: () => Promise.reject(new Error("not in this repo")) } }, async () => text("never")),
      input(1),
      signal(),
      () => {},
    );
    assert.deepEqual(thrown.reply, { status: "blocked", text: "t was blocked: not in this repo" });
    for (const answer of [undefined, { block: false }, { block: "yes" }, "block", null]) {
      const r = await runNestedCall(
        bridge({ hooks: { before: () => answer } }, async () => text("went")),
        input(1),
        signal(),
        () => {},
      );
      assert.deepEqual(r.reply, { status: "ok", text: "went" }, JSON.stringify(answer));
    }
    const noReason = await runNestedCall(
      bridge({ hooks: { before: () => ({ block: true, reason: 7 }) } }, async () => text("never")),
      input(1),
      signal(),
      () => {},
    );
    assert.deepEqual(noReason.reply, { status: "blocked", text: "t was blocked" });
  });

  test("a registration's dispatcher runs instead of Pi's; its isError fails the call", async () => {
    let piRan = false;
    const ok = await runNestedCall(
      bridge(
        { hooks: { dispatch: (c) => ({ content: [{ type: "text", text: `own ${c.pythonName} ${c.cwd}` }] }) } },
        async () => {
          piRan = true;
          return text("pi");
        },
      ),
      input(1),
      signal(),
      () => {},
    );
    assert.deepEqual(ok.reply, { status: "ok", text: "own t /w" });
    assert.equal(ok.record.dispatcher, "registration");
    assert.equal(piRan, false);
    const failed = await runNestedCall(
      bridge(
        { hooks: { dispatch: () => ({ content: [{ type: "text", text: "quota exceeded" }], isError: true }) } },
        async () => text("pi"),
      ),
      input(2),
      signal(),
      () => {},
    );
    assert.deepEqual(failed.reply, { status: "error", text: "quota exceeded" });
    assert.equal(failed.record.status, "failed");
    assert.deepEqual(failed.record.error, { text: "quota exceeded", bytes: 14, truncated: false });
  });

  test("Pi's dispatch: blocked, invalid, failed (or cancelled when the call was aborted), each with its text", async () => {
    const with_ = (out: Record<string, unknown>, ac = new AbortController()) =>
      runNestedCall(
        bridge({}, async () => out as never),
        input(1),
        ac.signal,
        () => {},
      );
    const content = (t: string) => ({ content: [{ type: "text", text: t }] });
    const blocked = await with_({ result: content("by policy"), isError: true, blocked: true });
    assert.deepEqual(blocked.reply, { status: "blocked", text: "t was blocked: by policy" });
    const invalid = await with_({ result: content("bad path"), isError: true, invalid: true });
    assert.deepEqual(invalid.reply, { status: "invalid", text: "bad path" });
    const wordless = await with_({ result: {}, isError: true, invalid: true });
    assert.deepEqual(wordless.reply, { status: "invalid", text: "t failed" }, "never an empty message");
    const failed = await with_({ result: content("disk full"), isError: true });
    assert.deepEqual(failed.reply, { status: "error", text: "disk full" });
    const silent = await with_({ result: {}, isError: true });
    assert.deepEqual(silent.reply, { status: "error", text: "t failed" });
    // The tool saw the abort and ended with an error: the call was cancelled, not failed.
    const ac = new AbortController();
    const b = bridge({}, async () => {
      ac.abort();
      return { result: content("aborted"), isError: true };
    });
    const cancelled = await runNestedCall(b, input(1), ac.signal, () => {});
    assert.equal(cancelled.record.status, "cancelled");
    assert.deepEqual(cancelled.reply, {
      status: "cancelled",
      text: "t: cancelled (the run is stopping or the call was cancelled); effects that already happened stay",
    });
    assert.equal(cancelled.record.result, undefined);
  });

  test("a call cancelled before it starts, while `before` waits, and before dispatch: never dispatched", async () => {
    const aborted = new AbortController();
    aborted.abort();
    let ran = 0;
    const b = bridge({}, async () => (ran++, text("no")));
    const early = await runNestedCall(b, input(1), aborted.signal, () => {});
    assert.equal(early.record.status, "cancelled");
    const ac = new AbortController();
    const waiting = runNestedCall(
      bridge({ hooks: { before: () => new Promise(() => {}) } }, async () => (ran++, text("no"))),
      input(2),
      ac.signal,
      () => {},
    );
    setTimeout(() => ac.abort(), 10);
    assert.equal((await waiting).record.status, "cancelled");
    const late = new AbortController();
    const afterBefore = await runNestedCall(
      bridge({ hooks: { before: () => void late.abort() } }, async () => (ran++, text("no"))),
      input(3),
      late.signal,
      () => {},
    );
    assert.equal(afterBefore.record.status, "cancelled");
    const validatedThenAborted = new AbortController();
    const log: string[] = [];
    const afterValidation = await runNestedCall(
      bridge({}, async () => (ran++, text("no")), log),
      input(4),
      validatedThenAborted.signal,
      () => validatedThenAborted.abort(),
    );
    assert.equal(afterValidation.record.status, "cancelled");
    assert.deepEqual(log, ["nested_tool_start", "nested_tool_finish"], "interceptors never hear of it");
    assert.equal(ran, 0);
  });

  test("the after handler gets the outcome: result or error, never both", async () => {
    const outcomes: NestedCallOutcome[] = [];
    const after = (o: NestedCallOutcome) => void outcomes.push(o);
    await runNestedCall(
      bridge({ hooks: { after } }, async () => text("r")),
      input(1),
      signal(),
      () => {},
    );
    await runNestedCall(
      bridge({ hooks: { after } }, async () => text("r")),
      input(2, { q: 1 }),
      signal(),
      () => {},
    );
    assert.deepEqual(outcomes[0].result, { content: [{ type: "text", text: "r" }] });
    assert.equal("error" in outcomes[0], false);
    assert.equal(outcomes[0].status, "succeeded");
    assert.equal(outcomes[1].result, undefined);
    assert.equal(outcomes[1].error, "q must be a string");
    assert.equal(outcomes[1].record.status, "invalid");
  });
});

describe("the dispatch actor", () => {
  test("reports validated, then finished; a cancel aborts the call; stopped, it reports nothing more", async () => {
    const events: string[] = [];
    let release!: () => void;
    const reasons: string[] = [];
    const b = bridge(
      {},
      (_n, _a, s) =>
        new Promise((resolve) => {
          release = () => resolve(text("done"));
          s.addEventListener("abort", () => {
            reasons.push((s.reason as Error).message);
            resolve({ result: {}, isError: true });
          });
        }),
    );
    const logic = createDispatchLogic({ toolsFor: (id) => (id === "r" ? b : undefined), now: () => 42 });
    const parent = setup({
      types: { context: {} as { finished?: unknown } },
      actors: { dispatch: logic },
    }).createMachine({
      invoke: { id: "d", src: "dispatch", input: input(1) },
      on: {
        "dispatch.validated": { actions: () => void events.push("validated") },
        "dispatch.finished": {
          actions: [assign({ finished: ({ event }) => event }), () => void events.push("finished")],
        },
        cancel: { actions: sendTo("d", { type: "dispatch.cancel", at: 1 }) },
      },
    });
    const actor = createActor(parent).start();
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(events, ["validated"]);
    actor.send({ type: "cancel" } as never);
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(events, ["validated", "finished"]);
    const finished = actor.getSnapshot().context.finished as { at: number; reply: { status: string } };
    assert.equal(finished.at, 42);
    assert.equal(finished.reply.status, "cancelled");
    actor.stop();
    // A second actor stopped while its call runs: the call is aborted and nothing is reported after the stop.
    const second = createActor(parent).start();
    await new Promise((r) => setTimeout(r, 20));
    const before = events.length;
    second.stop();
    release();
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(events.length, before);
    assert.deepEqual(reasons, ["cancelled", "the run ended"], "the tool's signal says why");
  });
});

describe("what Python receives from a tool", () => {
  test("text blocks joined by newlines; images and other content as notes; junk skipped", async () => {
    assert.equal(resultText(undefined), "");
    assert.equal(resultText({ content: "not a list" }), "");
    assert.equal(
      resultText({
        content: [
          { type: "text", text: "a" },
          null,
          "str",
          { text: "no type" },
          { type: "text", text: 5 },
          { type: "image", mimeType: "image/png", data: "AAAA" },
          { type: "image", data: 7 },
          { type: "audio" },
          { type: "text", text: "b" },
        ],
      }),
      [
        "a",
        "",
        "[image: image/png, about 3 bytes; not shown to Python]",
        "[image: unknown type, about 0 bytes; not shown to Python]",
        "[audio content; not shown to Python]",
        "b",
      ].join("\n"),
    );
  });

  test("the text is the model's text; structured content goes beside it when the text is not JSON already", async () => {
    const content = (t: string) => [{ type: "text", text: t }];
    assert.equal(resultText({ content: content("found 2"), structuredContent: { n: 2 } }), "found 2");
    assert.equal(structuredText({ content: content("found 2"), structuredContent: { n: 2 } }, "found 2"), '{"n":2}');
    assert.equal(resultText({ content: [], structuredContent: [1] }), "");
    assert.equal(structuredText({ content: [], structuredContent: [1] }, ""), "[1]");
    for (const json of ['{"n": 2}', " [1, 2] ", "-3", "0.5", "true", "false", "null", '"s"'])
      assert.equal(structuredText({ content: content(json), structuredContent: { n: 2 } }, json), undefined, json);
    for (const notJson of ["{broken", "nope", "t", "12abc", "  "])
      assert.equal(structuredText({ content: content(notJson), structuredContent: 1 }, notJson), "1", notJson);
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    assert.equal(structuredText({ content: content("x"), structuredContent: circular }, "x"), undefined, "unserializable");
    assert.equal(structuredText({ content: content("x"), structuredContent: () => 1 }, "x"), undefined, "no JSON");
    assert.equal(structuredText({ content: content("x") }, "x"), undefined);
  });

  test("usage only as a plain object; error messages; previews within a budget", async () => {
    assert.deepEqual(usageOf({ usage: { input: 1 } }), { input: 1 });
    for (const usage of [undefined, null, 5, "x", [1]]) assert.equal(usageOf({ usage }), undefined);
    assert.equal(usageOf(undefined), undefined);
    assert.equal(errorMessage(new Error("boom")), "boom");
    assert.equal(errorMessage("plain"), "plain");
    assert.equal(errorMessage(42), "42");
    assert.deepEqual(previewOf("é".repeat(3000)), { text: "é".repeat(2048), bytes: 6000, truncated: true });
    assert.deepEqual(previewOf("abc", 2), { text: "ab", bytes: 3, truncated: true });
    const budget = new PreviewBudget();
    const big = "z".repeat(RUN_PREVIEW_BUDGET);
    let taken = 0;
    while (taken + 4096 <= RUN_PREVIEW_BUDGET) {
      assert.equal(budget.take(big).text.length, 4096);
      taken += 4096;
    }
    assert.equal(taken, RUN_PREVIEW_BUDGET);
    assert.equal(budget.take(big).text.length, PREVIEW_FLOOR, "spent: the floor");
    assert.equal(budget.take("short").text, "short");
    // Part of the budget left (less than a full preview, more than the floor): that much.
    const partial = new PreviewBudget();
    for (let i = 0; i < RUN_PREVIEW_BUDGET / 4096 - 1; i++) partial.take(big);
    partial.take("y".repeat(3000));
    assert.equal(partial.take(big).text.length, 1096);
  });
});
