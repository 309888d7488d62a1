// The context hook through a real Pi session: what the scripted model receives. Older completed scripts become
// `{"sourceId": ...}` when that saves at least 64 serialized bytes; the latest script and short ones stay inline;
// Pi's own session keeps every script. Source recovery reads only the current session branch.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { readFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall, type FauxResponseStep } from "@earendil-works/pi-ai";
import { sourceIdOf } from "../../../store/sources.ts";
import {
  MIN_SAVING_BYTES,
  ScriptRedactor,
  referenceArguments,
} from "../../../extension/code-execution/context-hook.ts";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";

let pi: PiHarness;
before(async () => {
  pi = await startPi();
});
after(async () => {
  await pi.dispose();
});

type Seen = { role: string; content?: any[]; toolCallId?: string }[];

/** The code_execution tool-call arguments the model saw, in order. */
function seenCalls(messages: Seen): Record<string, unknown>[] {
  return messages
    .filter((m) => m.role === "assistant" && Array.isArray(m.content))
    .flatMap((m) => m.content!.filter((b) => b.type === "toolCall" && b.name === "code_execution"))
    .map((b) => b.arguments);
}

/** Runs one prompt: the model calls code_execution with each of `calls`, then records what it sees. */
async function converse(calls: Record<string, any>[]): Promise<Seen> {
  let seen: Seen = [];
  const steps: FauxResponseStep[] = calls.map((c) =>
    fauxAssistantMessage([fauxToolCall("code_execution", c)], { stopReason: "toolUse" }),
  );
  steps.push((context) => {
    seen = structuredClone(context.messages) as Seen;
    return fauxAssistantMessage("done");
  });
  pi.faux.setResponses(steps);
  await pi.session.prompt("go");
  return seen;
}

/** A script whose `{"code": ...}` JSON is exactly `bytes` long, using escapes and multibyte characters. */
function scriptOfJsonBytes(bytes: number): string {
  // `{"code":"` + `"}` is 11 bytes; "\n" costs 2 escaped bytes, "é" 2 UTF-8 bytes, "a" 1.
  let body = "x=1\n# é\n";
  while (Buffer.byteLength(JSON.stringify({ code: body })) < bytes) body += "a";
  assert.equal(Buffer.byteLength(JSON.stringify({ code: body })), bytes);
  return body;
}

describe("context redaction seen by the model", () => {
  test("older long scripts become sourceId references; the latest and short ones stay inline", async () => {
    const long = "values = [i * i for i in range(10)]\nprint('sum of squares:', sum(values))\n# " + "é".repeat(40);
    const short = "print(1)";
    const latest = "print('the latest script stays inline, however long it is')\n" + "# padding\n".repeat(20);
    const seen = await converse([{ code: long, session: "ctx" }, { code: short }, { code: latest }]);
    const calls = seenCalls(seen);
    assert.deepEqual(calls[0], { sourceId: sourceIdOf(long), session: "ctx" }, "other arguments are kept");
    assert.deepEqual(calls[1], { code: short }, "a short script stays inline");
    assert.deepEqual(calls[2], { code: latest }, "the latest script stays inline");
    // The reference points at a saved, verified file.
    assert.equal(readFileSync(join(pi.agentDir, "code-execution", `${sourceIdOf(long)}.py`), "utf8"), long);
    // Pi's session still holds the script itself: only the model's view changed.
    const kept = (pi.session.messages as any[])
      .filter((m) => m.role === "assistant")
      .flatMap((m) => m.content.filter((b: any) => b.type === "toolCall"))
      .map((b: any) => b.arguments.code);
    assert.ok(kept.includes(long));
  });

  test("the 64-byte rule counts JSON escapes and UTF-8 bytes", async () => {
    // The reference `{"sourceId":"<12 hex>"}` is 27 bytes: a script is replaced when its JSON is >= 27 + 64.
    const atLimit = scriptOfJsonBytes(27 + MIN_SAVING_BYTES);
    const below = scriptOfJsonBytes(27 + MIN_SAVING_BYTES - 1);
    assert.ok(atLimit.length < 27 + MIN_SAVING_BYTES - 11, "fewer characters than bytes: escapes and é count");
    assert.ok(referenceArguments({ code: atLimit }, sourceIdOf(atLimit)));
    assert.equal(referenceArguments({ code: below }, sourceIdOf(below)), undefined);
    const seen = await converse([{ code: atLimit }, { code: below }, { code: "print('last')" }]);
    const calls = seenCalls(seen).slice(-3);
    assert.deepEqual(calls[0], { sourceId: sourceIdOf(atLimit) });
    assert.deepEqual(calls[1], { code: below });
  });

  test("the model can rerun a redacted script by its sourceId", async () => {
    const script = "total = 0\nfor i in range(1, 101):\n    total += i\nprint('total is', total)\n# a longer script\n";
    const seen = await converse([{ code: script }, { code: "print('next')" }]);
    const [ref] = seenCalls(seen).slice(-2);
    assert.deepEqual(ref, { sourceId: sourceIdOf(script) });
    const before = pi.toolResults().length;
    await converse([ref]);
    const [rerun] = pi.toolResults().slice(before);
    assert.equal(textOf(rerun), "total is 5050\n");
  });
});

describe("source recovery follows the session branch", () => {
  test("a missing saved file is recovered from this branch, never from another", async () => {
    // A fork point with no script on it.
    pi.faux.setResponses([fauxAssistantMessage("ready")]);
    await pi.session.prompt("hello");
    const forkPoint = pi.session.sessionManager.getLeafId()!;

    const script = "print('only on the first branch')\n# " + "x".repeat(80);
    const id = sourceIdOf(script);
    await converse([{ code: script }]);
    const firstBranchLeaf = pi.session.sessionManager.getLeafId()!;
    unlinkSync(join(pi.agentDir, "code-execution", `${id}.py`));

    await pi.session.navigateTree(forkPoint);
    let before = pi.toolResults().length;
    await converse([{ sourceId: id }]);
    const [elsewhere] = pi.toolResults().slice(before);
    assert.equal(elsewhere.isError, true);
    assert.match(textOf(elsewhere), new RegExp(`Source ${id} is not available.*Do not retry`));

    await pi.session.navigateTree(firstBranchLeaf);
    before = pi.toolResults().length;
    await converse([{ sourceId: id }]);
    const [here] = pi.toolResults().slice(before);
    assert.equal(here.isError, false, textOf(here));
    assert.equal(textOf(here), "only on the first branch\n");
  });
});

describe("the redactor's memory", () => {
  const call = (id: string, code: string) => ({
    role: "assistant" as const,
    content: [{ type: "toolCall", id, name: "code_execution", arguments: { code } }],
  });
  const result = (id: string) => ({ role: "toolResult" as const, toolName: "code_execution", toolCallId: id });
  const long = (n: number) => `print(${n})\n# ${"y".repeat(120)}`;

  test("a decision lasts while its call is in the context; compacted away, it is dropped and its script with it", async () => {
    const saves: string[] = [];
    const redactor = new ScriptRedactor(async (code) => (saves.push(code), "saved"));
    const history = [1, 2, 3, 4].flatMap((n) => [call(`c${n}`, long(n)), result(`c${n}`)]);
    const first = (await redactor.redact(history as never)) as Seen | undefined;
    assert.deepEqual(seenCalls(first!), [
      { sourceId: sourceIdOf(long(1)) },
      { sourceId: sourceIdOf(long(2)) },
      { sourceId: sourceIdOf(long(3)) },
      { code: long(4) },
    ]);
    assert.equal(redactor.decisions, 3, "the three older scripts are decided; the latest stays inline");
    // Compaction keeps only the last two calls: the decisions of the others go.
    const later = history.slice(4);
    await redactor.redact(later as never);
    assert.equal(redactor.decisions, 1);
    // Back in the context (another branch), a call is decided again, without saving its script twice.
    const again = (await redactor.redact(history as never)) as Seen | undefined;
    assert.deepEqual(seenCalls(again!), seenCalls(first!));
    assert.equal(saves.length, 3);
  });
});
