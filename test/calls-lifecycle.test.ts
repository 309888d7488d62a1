// The nested-call lifecycle of actors/calls/dispatch.ts against a scripted RunTools: no process, no Pi. What Pi's own hooks
// add is covered in test/calls.test.ts; here are the edges that are hard to reach through a session.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { runNestedCall, type RunTool, type RunTools } from "../actors/calls/dispatch.ts";
import { MAX_RESULT_BYTES, PREVIEW_FLOOR, RUN_PREVIEW_BUDGET } from "../actors/calls/tool-results.ts";
import type { DispatchInput } from "../machines/tool-events.ts";

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

  test("observers that throw never change the call", async () => {
    const b = bridge({}, async () => text("fine"));
    b.emit = () => {
      throw new Error("observer bug");
    };
    const { record } = await runNestedCall(b, input(1), new AbortController().signal, () => {});
    assert.equal(record.status, "succeeded");
  });
});
