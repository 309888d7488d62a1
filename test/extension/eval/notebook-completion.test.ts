// completion() in Python, through a real Pi session whose model is Pi's faux provider: a stateless call (no
// history, no tools) with and without a schema (a forced `respond` tool), errors as RuntimeError, a nested-call
// record with its usage, and eval's work budget paused while it waits.
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";

let pi: PiHarness;
before(async () => {
  process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,eval";
  pi = await startPi();
});
after(async () => {
  await pi.dispose();
  delete process.env.PI_CODE_EXECUTION_TOOLS;
});

/** One turn: the model calls `tool` with `args`; `answers` serve the completion() calls in between. */
async function turn(tool: string, args: Record<string, unknown>, answers: unknown[]) {
  const before = pi.toolResults().length;
  pi.faux.setResponses([
    fauxAssistantMessage([fauxToolCall(tool, args as never)], { stopReason: "toolUse" }),
    ...(answers as never[]),
    fauxAssistantMessage("done"),
  ]);
  await pi.session.prompt("go");
  return pi.toolResults().slice(before)[0];
}

describe("completion()", () => {
  test("without a schema: the text of one stateless call (no history, no tools), awaitable too", async () => {
    let seen: any;
    const r = await turn(
      "eval",
      {
        cells: [
          {
            language: "py",
            code: "a = completion('What is 2+2?', system='Be terse.')\nb = await completion('again')\nprint(a, '|', b, type(a).__mro__[1].__name__)",
          },
        ],
      },
      [
        (context: any) => {
          seen = context;
          return fauxAssistantMessage("four");
        },
        fauxAssistantMessage("4"),
      ],
    );
    assert.equal(r.isError, false, textOf(r));
    assert.equal(textOf(r), "four | 4 str");
    // pi-ai folds the system prompt and tools into a leading system message.
    const system = seen.messages.filter((m: any) => m.role === "system");
    const others = seen.messages.filter((m: any) => m.role !== "system");
    assert.equal(system.length, 1);
    assert.equal(system[0].content, "Be terse.");
    assert.ok(!system[0].toolsAdded?.length, "no tools");
    assert.deepEqual(
      others.map((m: any) => [m.role, m.content]),
      [["user", "What is 2+2?"]],
      "no history",
    );
  });

  test("with a schema: the model is given one `respond` tool with it, and the parsed object comes back", async () => {
    let seen: any;
    const schema = { type: "object", properties: { answer: { type: "integer" } }, required: ["answer"] };
    const r = await turn(
      "eval",
      {
        cells: [
          {
            language: "py",
            code: `v = completion('2+2?', schema=${JSON.stringify(schema)})\nprint(v['answer'] + 1, type(v).__mro__[1].__name__)`,
          },
        ],
      },
      [
        (context: any) => {
          seen = context;
          return fauxAssistantMessage([fauxToolCall("respond", { answer: 4 })], { stopReason: "toolUse" });
        },
      ],
    );
    assert.equal(textOf(r), "5 dict");
    const system = seen.messages.find((m: any) => m.role === "system");
    assert.deepEqual(
      system.toolsAdded.map((t: any) => [t.name, t.parameters]),
      [["respond", schema]],
    );
  });

  test("errors raise RuntimeError (unknown model; an empty answer)", async () => {
    const code = [
      "for kw in ({'model': 'nope/none'}, {}):",
      "    try:",
      "        completion('x', **kw)",
      "    except RuntimeError as e:",
      "        print('RuntimeError:', e)",
    ].join("\n");
    const r = await turn("eval", { cells: [{ language: "py", code }] }, [fauxAssistantMessage("")]);
    assert.match(
      textOf(r),
      /RuntimeError: completion\(\): Pi knows no model "nope\/none"\nRuntimeError: completion\(\): the model returned an empty answer/,
    );
  });

  test("each call is a nested call with its record and usage (code_execution shows the records)", async () => {
    const r = await turn("code_execution", { code: "print(completion('hi'))" }, [fauxAssistantMessage("hello there")]);
    assert.equal(textOf(r), "hello there\n");
    const [rec] = r.details.nestedCalls;
    assert.equal(rec.registeredName, "__completion__");
    assert.equal(rec.pythonName, "completion");
    assert.equal(rec.status, "succeeded");
    assert.equal(rec.dispatcher, "registration");
    assert.ok(rec.usage, "the record keeps the model's usage");
    assert.match(rec.childId, /^tool:[\w-]+:1$/);
    assert.deepEqual((r as any).usage, rec.usage, "the outer result counts it once");
  });

  test("a wall-clock deadline covers it: the waiting code gets KeyboardInterrupt and the call is cancelled", async () => {
    const r = await turn("code_execution", { timeout: 1, code: "print(completion('never mind'))" }, [
      async () => {
        await sleep(3000);
        return fauxAssistantMessage("too late");
      },
    ]);
    assert.equal(r.details.status, "timeout");
    assert.match(textOf(r), /KeyboardInterrupt/);
    assert.equal(r.details.nestedCalls[0].status, "cancelled");
  });

  test("eval's work budget pauses while completion() waits for the model", async () => {
    const r = await turn("eval", { cells: [{ language: "py", timeout: 1, code: "print(completion('slow?'))" }] }, [
      async () => {
        await sleep(1600);
        return fauxAssistantMessage("worth the wait");
      },
    ]);
    assert.equal(r.isError, false, textOf(r));
    assert.equal(textOf(r), "worth the wait");
  });
});
