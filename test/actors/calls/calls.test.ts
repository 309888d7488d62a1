// Nested tool calls in a real Pi session driven by the scripted model: Python awaits Pi tools registered by a helper
// extension (test/fixtures/pi-tools.ts), a second extension blocks one call in its tool_call hook
// (test/fixtures/call-blocker.ts), and every nested call goes through Pi's hooked dispatch.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { EXTENSION_PATH, startPi, textOf, type PiHarness, type ToolResultMessage } from "../../helpers/pi-session.ts";
import { probe } from "../../fixtures/pi-tools.ts";
import { waitUntil } from "../../helpers/procs.ts";
import { defaultLogDir } from "../../../record/log-files.ts";
import { PYTHON } from "../../helpers/runner-driver.ts";

const TOOLS_FIXTURE = resolve(import.meta.dirname, "../../fixtures/pi-tools.ts");
const BLOCKER_FIXTURE = resolve(import.meta.dirname, "../../fixtures/call-blocker.ts");
const PROBE = resolve(import.meta.dirname, "../../fixtures/foreign-probe.py");

let pi: PiHarness;
before(async () => {
  pi = await startPi({ extensionPaths: [EXTENSION_PATH, TOOLS_FIXTURE, BLOCKER_FIXTURE] });
});
after(async () => {
  await pi.dispose();
});

async function run(code: string, extra: Record<string, unknown> = {}): Promise<ToolResultMessage> {
  const [r] = await pi.callTools([{ code, ...extra }]);
  return r!;
}

/** Starts a prompt whose model calls code_execution once, without waiting for it. */
function startRun(code: string, extra: Record<string, unknown> = {}): Promise<void> {
  pi.faux.setResponses([
    fauxAssistantMessage([fauxToolCall("code_execution", { code, ...extra })], { stopReason: "toolUse" }),
    fauxAssistantMessage("done"),
  ]);
  return pi.session.prompt("run it");
}

const lastResult = () => pi.toolResults().at(-1)!;

describe("calling Pi tools from Python", () => {
  test("the tool set stays the same from call to call: completion() once, and the event log's run requests do not grow", async () => {
    for (let i = 0; i < 4; i++) assert.equal((await run("pass", { session: "toolset" })).isError, false);
    const dir = defaultLogDir(process.env);
    const starts = () =>
      readdirSync(dir)
        .filter((f) => f.endsWith(".jsonl"))
        .flatMap((f) => readFileSync(join(dir, f), "utf8").split("\n"))
        .filter((l) => l.startsWith('{"k":"cmd"') && l.includes('"type":"run.start"') && l.includes('"session":"toolset"'));
    assert.ok(await waitUntil(() => starts().length === 4, 5000), "the event log holds the four requests");
    const requests = starts().map((l) => JSON.parse(l) as { event: { calls: { toolSet: string; tools: unknown[] } } });
    const calls = requests.map((r) => r.event.calls);
    for (const c of calls) {
      assert.deepEqual(c.tools, calls[0]!.tools);
      assert.equal(c.toolSet, calls[0]!.toolSet, "one tool set while the tools stay the same");
      assert.equal(c.tools.filter((t) => (t as { name: string }).name === "__completion__").length, 1);
      assert.ok(!JSON.stringify(c).includes("signature"), "signatures stay with the host");
    }
    // A request settled at the door (the interpreter known) carries its interpreter's path and `prepared`: that is
    // the only difference allowed; the size does not grow with the session.
    const sizes = starts().map((l) => l.length);
    assert.ok(Math.max(...sizes) - Math.min(...sizes) < 160, `run.start records of one size: ${sizes.join(", ")}`);
    assert.ok(Math.abs(sizes[3]! - sizes[2]!) < 16, `run.start records do not grow: ${sizes.join(", ")}`);
  });

  test("available_tools() lists the callable tools by Python name, never code_execution's own", async () => {
    const r = await run("print(available_tools())");
    assert.equal(r.isError, false, textOf(r));
    const lines = textOf(r).trim().split("\n");
    for (const expected of [
      "json_info(*, name: str, count: int = None)",
      "fail_tool()",
      "slow_tool(*, ms: float, tag: str = None)",
      'codemode_helper(*, "max-results": int = None)',
      "lifecycle_tool(*, mode: str, n: int = None)",
      "custom_dispatch(*, x: int)",
      "read(*, path: str, offset: float = None, limit: float = None)",
    ]) {
      assert.ok(lines.includes(expected), `${expected} in\n${lines.join("\n")}`);
    }
    assert.ok(!lines.some((l) => l.startsWith("code_execution")), "code_execution tools are never exposed");
    assert.ok(!lines.some((l) => l.startsWith("not_registered_in_pi")), "a registration must be callable in Pi");
  });

  test("results are strings with json(); an error result raises RuntimeError the script can catch", async () => {
    const r = await run(
      [
        "r = await json_info(name='a', count=2)",
        "print(r, r.json()['count'])",
        "try:",
        "    await fail_tool()",
        "except RuntimeError as e:",
        "    print('caught:', e)",
        "print(await codemode_helper(**{'max-results': 3}))",
      ].join("\n"),
    );
    assert.equal(r.isError, false, textOf(r));
    assert.equal(r.details.status, "success");
    assert.equal(textOf(r), '{"name":"a","count":2} 2\ncaught: it broke: disk on fire\nhelper 3\n');
    const calls = r.details.nestedCalls;
    assert.deepEqual(
      calls.map((c: any) => [c.registeredName, c.status]),
      [
        ["json_info", "succeeded"],
        ["fail_tool", "failed"],
        ["codemode-helper", "succeeded"],
      ],
    );
    assert.equal(calls[2].pythonName, "codemode_helper");
    assert.equal(calls[1].error.text, "it broke: disk on fire");
  });

  test("arguments are validated by the tool's schema before any hook runs (TypeError in Python)", async () => {
    const before = probe().invocations.json_info ?? 0;
    const r = await run(
      "try:\n    await json_info(count='many')\nexcept TypeError as e:\n    print(str(e).splitlines()[0])",
    );
    assert.equal(textOf(r), 'Validation failed for tool "json_info":\n');
    assert.equal(probe().invocations.json_info ?? 0, before);
    assert.equal(r.details.nestedCalls[0].status, "invalid");
  });

  test("images become a short note; the string is the model's text and json() reads the structured content", async () => {
    const r = await run("res = await rich_tool()\nprint(repr(res))\nprint(res.json())");
    assert.match(
      textOf(r),
      /^'Found 2 items\.\\n\[image: image\/png, about \d+ bytes; not shown to Python\]'\n\{'items': \[1, 2\]\}\n$/,
    );
  });

  test("Pi's own read and bash give exactly the model's text (their structuredContent never enters the string)", async () => {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(join(pi.cwd, "a.txt"), "alpha\nbeta\n");
    const r = await run(
      [
        "text = await read(path='a.txt')",
        "print(repr(str(text)))",
        "print((await bash(command=\"printf 'x\\\\ny\\\\n'\")).splitlines())",
      ].join("\n"),
    );
    assert.equal(r.isError, false, textOf(r));
    assert.doesNotMatch(textOf(r), /structuredContent/, textOf(r));
    const [readLine, bashLine] = textOf(r).split("\n");
    assert.match(readLine!, /^'alpha\\nbeta(\\n)?'$/, readLine);
    assert.equal(bashLine, "['x', 'y']");
  });

  test("a call blocked by a tool_call hook raises RuntimeError, and the run is a policy_error even though the script caught it", async () => {
    const r = await run(
      [
        "try:",
        "    await json_info(name='forbidden')",
        "except RuntimeError as e:",
        "    print('caught:', e)",
        "print('went on')",
      ].join("\n"),
    );
    assert.equal(r.isError, true);
    assert.equal(r.details.status, "policy_error");
    assert.match(textOf(r), /^caught: json_info was blocked: json_info may not read forbidden things\nwent on\n/);
    assert.match(
      textOf(r),
      /\n\[policy error: json_info was blocked: json_info may not read forbidden things; the run counts as failed even if the code caught the error\]$/,
    );
    const [call] = r.details.nestedCalls;
    assert.equal(call.status, "blocked");
    assert.equal(call.dispatcher, "pi");
  });

  test("calls passed to asyncio.gather() run concurrently (their executions overlap)", async () => {
    probe().slow.length = 0;
    const r = await run(
      "import asyncio\nrs = await asyncio.gather(slow_tool(ms=400, tag='a'), slow_tool(ms=400, tag='b'))\nprint(rs)",
    );
    assert.equal(textOf(r), "['a', 'b']\n");
    const [a, b] = probe().slow;
    assert.ok(a && b);
    assert.ok(b.start < a.end && a.start < b.end, `overlap: a ${a.start}-${a.end}, b ${b.start}-${b.end}`);
  });

  test("80 concurrent calls all correlate with their callers", async () => {
    probe().slow.length = 0;
    const t0 = performance.now();
    const r = await run(
      [
        "import asyncio",
        "rs = await asyncio.gather(*(slow_tool(ms=300, tag=str(i)) for i in range(80)))",
        "print(rs == [str(i) for i in range(80)], len(rs))",
      ].join("\n"),
    );
    const elapsed = performance.now() - t0;
    assert.equal(textOf(r), "True 80\n");
    assert.equal(r.details.nestedCalls.length, 80);
    assert.deepEqual(
      r.details.nestedCalls.map((c: any) => c.seq),
      Array.from({ length: 80 }, (_, i) => i + 1),
    );
    // Sequential calls would take 24 s; concurrent ones take about 0.3 s plus overhead.
    assert.ok(elapsed < 12_000, `80 calls took ${elapsed.toFixed(0)} ms`);
    const maxStart = Math.max(...probe().slow.map((s) => s.start));
    const minEnd = Math.min(...probe().slow.map((s) => s.end));
    assert.ok(maxStart < minEnd, "all 80 were running at the same time");
  });

  test("cancelling the run mid-call aborts the tool's signal; the call is recorded as cancelled", async () => {
    probe().slow.length = 0;
    const running = startRun("await slow_tool(ms=20000, tag='long')", { session: "cancel-me" });
    assert.ok(await waitUntil(() => probe().slow.length === 1, 10_000), "the slow tool started");
    await pi.session.abort();
    await running;
    assert.ok(await waitUntil(() => probe().slow[0]!.aborted, 5000), "the tool saw its signal abort");
    const r = lastResult();
    assert.equal(r.details.status, "cancelled");
    assert.equal(r.details.session.isLost, false, "the session kept its state");
    const [call] = r.details.nestedCalls;
    assert.equal(call.status, "cancelled");
    assert.match(call.error.text, /cancelled/);
    assert.ok(call.durationMs < 10_000);
  });

  test("the run's deadline covers a bridged call", async () => {
    probe().slow.length = 0;
    const r = await run("await slow_tool(ms=20000, tag='late')", { timeout: 1 });
    assert.equal(r.details.status, "timeout");
    assert.equal(r.details.nestedCalls[0].status, "cancelled");
    assert.equal(probe().slow[0]!.aborted, true);
  });
});

describe("the nested-call lifecycle", () => {
  const lifecycle = async (mode: string, extra = "") => {
    probe().log.length = 0;
    const r = await run(
      `try:\n    print(await lifecycle_tool(mode=${JSON.stringify(mode)}${extra}))\nexcept Exception as e:\n    print(type(e).__name__, e)`,
    );
    return { r, log: [...probe().log] };
  };

  test("start, validation, legacy event, before, Pi's hooks and the tool, after, finish", async () => {
    const { r, log } = await lifecycle("plain");
    assert.equal(textOf(r), "ran plain\n");
    assert.deepEqual(log, [
      "start",
      "legacy",
      "before",
      "pi:tool_call:plain",
      "execute",
      "pi:tool_result",
      "after:succeeded",
      "finish:succeeded",
    ]);
  });

  test("a validation failure skips the legacy event, before and dispatch; after and finish still run", async () => {
    const { r, log } = await lifecycle("x", ", n='not a number'");
    assert.match(textOf(r), /^TypeError Validation failed for tool "lifecycle_tool"/);
    assert.deepEqual(log, ["start", "after:invalid", "finish:invalid"]);
  });

  test("a legacy block skips before and dispatch, and is a policy error", async () => {
    const { r, log } = await lifecycle("legacy-block");
    assert.equal(textOf(r).split("\n")[0], "RuntimeError lifecycle_tool was blocked: legacy said no");
    assert.deepEqual(log, ["start", "legacy", "after:blocked", "finish:blocked"]);
    assert.equal(r.details.status, "policy_error");
  });

  test("a `before` that throws blocks the call", async () => {
    const { r, log } = await lifecycle("before-block");
    assert.equal(textOf(r).split("\n")[0], "RuntimeError lifecycle_tool was blocked: before said no");
    assert.deepEqual(log, ["start", "legacy", "before", "after:blocked", "finish:blocked"]);
    assert.equal(r.details.status, "policy_error");
  });

  test("a legacy handler may rewrite the prepared input", async () => {
    const { r, log } = await lifecycle("rewrite");
    assert.equal(textOf(r), "ran rewritten\n");
    assert.ok(log.includes("pi:tool_call:rewritten"));
  });

  test("the legacy event carries stable ids, the registered name, the prepared input, cwd and the signal", async () => {
    probe().legacy.length = 0;
    const r = await run("await lifecycle_tool(mode='ids')");
    const [event] = probe().legacy;
    const [call] = r.details.nestedCalls;
    assert.equal(event!.toolCallId, r.toolCallId);
    assert.equal(event!.parentToolCallId, r.toolCallId);
    assert.equal(event!.childToolCallId, call.childId);
    assert.equal(event!.toolName, "lifecycle_tool");
    assert.equal(event!.registeredName, "lifecycle_tool");
    assert.equal(event!.pythonName, "lifecycle_tool");
    assert.deepEqual(event!.input, { mode: "ids" });
    assert.equal(event!.cwd, pi.cwd);
    assert.equal(event!.signal, true);
  });

  test("start and finish observations are bounded; finish carries the same record the run keeps", async () => {
    probe().starts.length = 0;
    probe().finishes.length = 0;
    const r = await run("await big_tool(n=5000)");
    const [record] = r.details.nestedCalls;
    assert.deepEqual(probe().finishes[0], record);
    const start = probe().starts[0]!;
    assert.equal(start.childId, record.childId);
    assert.deepEqual(start.input, { text: '{"n":5000}', bytes: 10, truncated: false });
  });
});

describe("nestedCalls records", () => {
  test("ids, names, times, statuses and 4 KiB UTF-8 previews with exact byte counts", async () => {
    const r = await run(
      "x = await big_tool(n=5000)\nprint(len(x))\ntry:\n    await json_info(name='é' * 3000)\nexcept RuntimeError:\n    pass",
    );
    assert.equal(textOf(r).split("\n")[0], "5000");
    const [big, blocked] = r.details.nestedCalls;
    const runId = big.runId;
    assert.equal(big.parentId, r.toolCallId);
    assert.equal(big.childId, `tool:${runId}:1`);
    assert.equal(big.seq, 1);
    assert.equal(big.registeredName, "big_tool");
    assert.equal(big.pythonName, "big_tool");
    assert.equal(big.status, "succeeded");
    assert.equal(big.dispatcher, "pi");
    assert.match(big.toolCallId, new RegExp(`^${r.toolCallId.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/\\d+$`));
    assert.ok(!Number.isNaN(Date.parse(big.startedAt)) && big.startedAt.endsWith("Z"));
    assert.equal(typeof big.durationMs, "number");
    assert.ok(big.durationMs >= 0 && big.durationMs < 10_000);
    assert.deepEqual(big.result.bytes, 10_000);
    assert.equal(big.result.truncated, true);
    assert.equal(Buffer.byteLength(big.result.text, "utf8"), 4096);
    assert.equal(big.result.text, "é".repeat(2048));
    assert.equal(blocked.childId, `tool:${runId}:2`);
    assert.equal(blocked.status, "succeeded", "'é'*3000 is not the forbidden name");
    assert.equal(blocked.input.bytes, Buffer.byteLength(JSON.stringify({ name: "é".repeat(3000) }), "utf8"));
    assert.equal(blocked.input.truncated, true);
    assert.ok(Buffer.byteLength(blocked.input.text, "utf8") <= 4096);
  });

  test("every attempted call is recorded even when the script then fails", async () => {
    const r = await run("await json_info(name='a')\nraise ValueError('later')");
    assert.equal(r.details.status, "runtime_error");
    assert.equal(r.details.nestedCalls.length, 1);
    assert.equal(r.details.nestedCalls[0].status, "succeeded");
  });

  test("usage: each record keeps its own; the outer result sums them once", async () => {
    const r = await run("await json_info(name='u')\nawait custom_dispatch(x=4)\nprint(await custom_dispatch(x=5))");
    assert.equal(textOf(r), "custom 5\n");
    const calls = r.details.nestedCalls;
    assert.deepEqual(
      calls.map((c: any) => [c.dispatcher, c.usage?.input]),
      [
        ["pi", 1],
        ["registration", 10],
        ["registration", 10],
      ],
    );
    const message = (pi.session.messages as any[]).filter((m) => m.role === "toolResult").at(-1);
    assert.equal(message.usage.input, 21, "1 + 10 + 10, each counted once");
    assert.equal(message.usage.output, 42);
    assert.equal(message.usage.totalTokens, 63);
  });

  test("a named session refreshes its tools each run", async () => {
    const [a, b] = await pi.callTools([
      { code: "f = json_info\nprint((await f(name='s')).json()['name'])", session: "bridge-s" },
      {
        code: "print((await json_info(name='t')).json()['name'], (await f(name='u')).json()['name'])",
        session: "bridge-s",
      },
    ]);
    assert.equal(textOf(a).split("\n")[0], "s");
    assert.equal(textOf(b), "t u\n");
  });
});

describe("the exposed-tools status message", () => {
  const statusMessages = () =>
    (pi.session.messages as any[]).filter((m) => m.role === "custom" && m.customType === "code_execution:exposed_tools");

  test("is in the model's context (hidden in the transcript) and lists the signatures", () => {
    const messages = statusMessages();
    assert.ok(messages.length >= 1);
    const m = messages[0];
    assert.equal(m.display, false);
    assert.match(m.content, /Python code can await these agent tools/);
    assert.match(m.content, /\njson_info\(\*, name: str, count: int = None\)/);
    assert.ok(m.details.tools.includes("custom_dispatch(*, x: int)"));
  });

  test("an unchanged set adds nothing; a changed set is announced before the next prompt and after a turn with tools", async () => {
    const before = statusMessages().length;
    await run("1");
    assert.equal(statusMessages().length, before, "unchanged: nothing added");

    // The model's context as the scripted model saw it on its next call.
    pi.session.setActiveToolsByName(pi.session.getActiveToolNames().filter((n) => n !== "fail_tool"));
    await run("print('fail_tool' in globals())");
    const after = statusMessages();
    assert.equal(after.length, before + 1);
    assert.ok(!after.at(-1).details.tools.includes("fail_tool()"));
    assert.equal(textOf(lastResult()), "False\n");

    // A turn that ran tools and changed the set: announced before the model's next call in the same prompt.
    let seen: string[] = [];
    pi.faux.setResponses([
      fauxAssistantMessage([fauxToolCall("code_execution", { code: "1" })], { stopReason: "toolUse" }),
      (context: any) => {
        seen = context.messages
          .filter((m: any) => m.role === "user" && typeof m.content !== "string")
          .flatMap((m: any) => m.content.map((c: any) => c.text ?? ""));
        return fauxAssistantMessage("done");
      },
    ]);
    const activate = pi.session.subscribe((e: any) => {
      if (e.type === "tool_execution_end" && !e.parentToolCallId)
        pi.session.setActiveToolsByName([...pi.session.getActiveToolNames(), "fail_tool"]);
    });
    await pi.session.prompt("again");
    activate();
    assert.ok(statusMessages().at(-1).details.tools.includes("fail_tool()"));
    assert.ok(
      seen.some((t) => t.includes("fail_tool()")),
      "the model saw the new set after the turn",
    );
  });

  test("after a compaction drops it, it is sent once again", async () => {
    const entries = () =>
      pi.session.sessionManager
        .getEntries()
        .filter((e: any) => e.type === "custom_message" && e.customType === "code_execution:exposed_tools");
    const inContext = () =>
      (pi.session.sessionManager.buildSessionProjection().messages as any[]).filter(
        (m) => m.role === "custom" && m.customType === "code_execution:exposed_tools",
      ).length;
    const before = entries().length;
    assert.ok(inContext() >= 1);
    probe().compactAtTurnEnd = true; // the next turn ends with a compaction that keeps nothing before it
    await run("1");
    assert.equal(inContext(), 0, "compacted away");
    assert.equal(entries().length, before, "nothing new yet");
    await run("2");
    assert.equal(entries().length, before + 1, "sent again before the next prompt");
    assert.equal(inContext(), 1);
    await run("3");
    assert.equal(entries().length, before + 1, "once");
  });

  test("a resumed session whose last status has the old type code_execution_tools is not sent it again", async () => {
    const statuses = () =>
      (pi.session.sessionManager.getEntries() as any[]).filter(
        (e) =>
          e.type === "custom_message" &&
          (e.customType === "code_execution:exposed_tools" || e.customType === "code_execution_tools"),
      );
    const tools = statuses().at(-1).details.tools;
    // An older status with another set, then what an earlier version wrote last, with the set in force: only if the
    // old type is read does the session know the model has the current set.
    pi.session.sessionManager.appendCustomMessageEntry("code_execution:exposed_tools", "[code_execution] ...", false, {
      tools: ["gone_tool()"],
    });
    pi.session.sessionManager.appendCustomMessageEntry("code_execution_tools", "[code_execution] ...", false, { tools });
    const before = statuses().length;
    await run("4");
    assert.equal(statuses().length, before, "the old status counts: nothing resent");
  });
});

describe("only the run's own process can call the bridge", () => {
  test("a foreign local process finds no channel into the runner or the host; the bridge still works", async () => {
    const [r] = await pi.callTools([{ code: "import os\nos.getpid()", session: "probe" }]);
    const runnerPid = Number(textOf(r!).split("\n")[0]);
    probe().slow.length = 0;
    const invocations = probe().invocations.json_info ?? 0;
    const running = startRun("await slow_tool(ms=1500, tag='busy')\nprint('done')", { session: "probe" });
    assert.ok(await waitUntil(() => probe().slow.length === 1, 10_000));
    // While a call is in flight, a separate process tries every descriptor and listening socket it can find.
    const report = await new Promise<any>((resolvePromise, reject) =>
      execFile(PYTHON, [PROBE, String(runnerPid), String(process.pid)], { timeout: 20_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolvePromise(JSON.parse(stdout)),
      ),
    );
    await running;
    assert.ok(report.descriptors >= 3, `it saw the sockets (${JSON.stringify(report)})`);
    assert.deepEqual(report.opened, [], "no socket descriptor can be opened through /proc");
    assert.deepEqual(report.connected, [], "nothing listens");
    assert.equal(probe().invocations.json_info ?? 0, invocations, "no forged call ran");
    assert.equal(textOf(lastResult()), "done\n");
    assert.equal(lastResult().details.nestedCalls.length, 1);
  });
});
