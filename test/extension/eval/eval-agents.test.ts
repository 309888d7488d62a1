// eval's orchestration helpers in a real Pi session (faux model): agent() in Python and JavaScript (a child Pi agent
// session with the parent's model and tools), parallel() and pipeline() (bounded pools keeping order, failures
// propagated), log(), phase() and budget, the status events they and tool calls leave in the details and the
// renderer, and completion()'s tiers following Pi's model roles.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxProvider, fauxToolCall } from "@earendil-works/pi-ai";
import { startPi, textOf, type PiHarness, type ToolResultMessage } from "../../helpers/pi-session.ts";
import { jsCell as js, pyCell as py } from "../../helpers/notebook.ts";
import { evalRenderers } from "../../../extension/shared/notebook/render.ts";

/** What a model call saw: its system prompt, the last user or tool-result text, its tools and its options. */
interface Seen {
  system: string;
  last: string;
  tools: string[];
  model: string;
  options: any;
}
const textIn = (content: any): string =>
  typeof content === "string" ? content : (content ?? []).map((b: any) => b.text ?? "").join("");
function seenOf(context: any, options: any, model: any): Seen {
  // Pi 1.6's transcript: system messages carry the prompt and add or remove tools in place.
  const system = context.messages.filter((m: any) => m.role === "system");
  const tools = new Set<string>((context.tools ?? []).map((t: any) => t.name));
  for (const m of system) {
    for (const t of m.toolsAdded ?? []) tools.add(t.name);
    for (const t of m.toolsRemoved ?? []) tools.delete(t.name ?? t);
  }
  const last = context.messages.filter((m: any) => m.role !== "system").at(-1);
  return {
    system: [
      context.systemPrompt ?? "",
      ...system.flatMap((m: any) => [textIn(m.content), ...Object.values(m.sections ?? {}).filter((t) => t !== null)]),
    ].join("\n"),
    last: textIn(last?.content),
    tools: [...tools].sort(),
    model: `${model?.provider}/${model?.id}`,
    options,
  };
}

/** One eval call whose nested model calls (subagents' turns) answer with `steps`, then the parent says "done". */
async function evalWith(pi: PiHarness, cells: Record<string, unknown>[], steps: unknown[]): Promise<ToolResultMessage> {
  const before = pi.toolResults().length;
  pi.faux.setResponses([
    fauxAssistantMessage([fauxToolCall("eval", { cells } as never)], { stopReason: "toolUse" }),
    ...steps,
    fauxAssistantMessage("done"),
  ] as never);
  await pi.session.prompt("go");
  const [r] = pi.toolResults().slice(before);
  return r;
}

/** A faux step that records what the model saw, then answers with `reply(seen)`. */
function step(log: Seen[], reply: (seen: Seen) => unknown) {
  return (context: any, options: any, _state: any, model: any) => {
    const seen = seenOf(context, options, model);
    log.push(seen);
    const out = reply(seen);
    return typeof out === "string" ? fauxAssistantMessage(out) : out;
  };
}

const context = () =>
  ({
    state: {},
    executionStarted: true,
    expanded: false,
    invalidate: () => {},
    keyHint: (_k: string, d: string) => d,
    lastComponent: undefined,
  }) as never;
const theme = { fg: (_c: string, t: string) => t, bold: (t: string) => t } as never;

describe("eval agent(), pools and status (pool width 2)", () => {
  let pi: PiHarness;
  /** Pi's model roles: `pi/smol` and `pi/slow` (a reasoning model), registered by another extension. */
  const roles = fauxProvider({
    provider: "pi",
    models: [
      { id: "smol", name: "smol" },
      { id: "slow", name: "slow", reasoning: true },
    ],
  } as never);
  before(async () => {
    process.env.PI_CODE_EXECUTION_TOOLS = "eval,python";
    process.env.PI_CODE_EXECUTION_EVAL_POOL_WIDTH = "2";
    pi = await startPi({
      extensionFactories: [
        (api: any) => {
          api.registerProvider(roles.provider);
          // A policy of another extension: it must hold for a subagent's calls too.
          api.on("tool_call", (e: any) =>
            e.toolName === "bash" && String(e.input?.command).includes("rm ")
              ? { block: true, reason: "no rm" }
              : undefined,
          );
        },
      ],
    });
    writeFileSync(join(pi.cwd, "note.txt"), "the note says 42\n");
  });
  after(async () => {
    await pi.dispose();
    delete process.env.PI_CODE_EXECUTION_TOOLS;
    delete process.env.PI_CODE_EXECUTION_EVAL_POOL_WIDTH;
  });

  test("agent() in Python: a child session with the session's model and the parent's tools returns its final text; its tool calls are status events", async () => {
    const seen: Seen[] = [];
    const r = await evalWith(
      pi,
      [py("r = agent('Read note.txt and tell me the number', label='reader')\nprint(r)")],
      [
        step(seen, () => fauxAssistantMessage([fauxToolCall("read", { path: "note.txt" })], { stopReason: "toolUse" })),
        step(seen, (s) => `child read: ${s.last.trim()}`),
      ],
    );
    assert.equal(r.isError, false, textOf(r));
    assert.equal(textOf(r), "child read: the note says 42");
    assert.equal(seen[0].last, "Read note.txt and tell me the number");
    assert.equal(seen[0].model, "faux/faux-1");
    assert.ok(seen[0].tools.includes("read") && seen[0].tools.includes("bash"), seen[0].tools.join());
    assert.ok(!seen[0].tools.some((t) => t === "eval" || t === "python"), "the notebook tools are left out");
    const events = r.details.cells[0].statusEvents;
    assert.deepEqual(
      events.map((e: any) => [e.op, e.label ?? e.agent, e.state ?? e.name, e.status]),
      [
        ["agent", "reader", "started", undefined],
        ["tool", "reader", "read", "succeeded"],
        ["agent", "reader", "done", undefined],
      ],
    );
    assert.equal(events[2].model, "faux/faux-1");
  });

  test("a subagent's tool calls go through the parent's hooks: another extension's policy blocks them", async () => {
    const seen: Seen[] = [];
    const r = await evalWith(
      pi,
      [py("print(agent('clean up', label='cleaner'))")],
      [
        step(seen, () =>
          fauxAssistantMessage([fauxToolCall("bash", { command: "rm -rf build" })], { stopReason: "toolUse" }),
        ),
        step(seen, (s) => `told: ${s.last.trim()}`),
      ],
    );
    assert.equal(r.isError, false, textOf(r));
    assert.equal(textOf(r), "told: no rm");
    const tool = r.details.cells[0].statusEvents.find((e: any) => e.op === "tool");
    assert.deepEqual([tool.name, tool.status, tool.agent], ["bash", "failed", "cleaner"]);
  });

  test("agent() with a schema returns the parsed object; invalid structured output raises", async () => {
    const schema = "{'type': 'object', 'properties': {'score': {'type': 'number'}}, 'required': ['score']}";
    const seen: Seen[] = [];
    const ok = await evalWith(
      pi,
      [py(`d = agent('rate it', schema=${schema})\nprint(d['score'] + 1)`)],
      [step(seen, () => '```json\n{"score": 7}\n```')],
    );
    assert.equal(ok.isError, false, textOf(ok));
    assert.equal(textOf(ok), "8");
    assert.match(seen[0].system, /only a JSON value[\s\S]*"score"/);
    const bad = await evalWith(
      pi,
      [py(`try:\n    agent('rate it', schema=${schema})\nexcept RuntimeError as e:\n    print('raised:', e)`)],
      [step([], () => '{"grade": "A"}')],
    );
    assert.match(textOf(bad), /^raised: agent\(\): invalid structured output: .*score/);
  });

  test("agent(): an unknown model or agent raises; a defined agent brings its prompt and tool list", async () => {
    const r = await evalWith(
      pi,
      [
        py(
          "for kw in ({'model': 'faux/nope'}, {'agent': 'nobody'}):\n    try:\n        agent('x', **kw)\n    except RuntimeError as e:\n        print('raised:', e)",
        ),
      ],
      [],
    );
    assert.match(textOf(r), /^raised: agent\(\): Pi knows no model "faux\/nope"\nraised: agent\(\): no agent "nobody"/);
    mkdirSync(join(pi.agentDir, "agents"), { recursive: true });
    writeFileSync(join(pi.agentDir, "agents", "reviewer.md"), "---\ntools: read\n---\nYou review code tersely.\n");
    const seen: Seen[] = [];
    const defined = await evalWith(pi, [py("print(agent('review', 'reviewer'))")], [step(seen, () => "lgtm")]);
    assert.equal(textOf(defined), "lgtm");
    assert.match(seen[0].system, /You review code tersely\./);
    assert.deepEqual(seen[0].tools, ["read"]);
  });

  test("agent() in JavaScript: options positionally or as an object; the budget pauses while it waits", async () => {
    const seen: Seen[] = [];
    const r = await evalWith(
      pi,
      [
        js(
          "const a = await agent('first', { model: 'faux/faux-1', label: 'one' })\nconst b = await agent('second', null, null, 'two', { type: 'object' });\n`${a} ${b.n + 1}`",
          { timeout: 1 },
        ),
      ],
      [
        async (c: any, o: any, s: any, m: any) => {
          await new Promise((resolve) => setTimeout(resolve, 1300));
          return step(seen, () => "slow answer")(c, o, s, m);
        },
        step(seen, () => '{"n": 1}'),
      ],
    );
    assert.equal(r.isError, false, textOf(r));
    assert.equal(textOf(r), "slow answer 2");
    assert.deepEqual(
      seen.map((s) => s.last),
      ["first", "second"],
    );
    assert.deepEqual(
      r.details.cells[0].statusEvents.filter((e: any) => e.state === "done").map((e: any) => e.label),
      ["one", "two"],
    );
  });

  test("parallel() and pipeline() in Python: item order kept, at most eval.poolWidth at once, the first failure raised after all settle", async () => {
    const r = await evalWith(
      pi,
      [
        py(
          [
            "import threading",
            "lock = threading.Lock(); active = 0; peak = 0; gate = threading.Barrier(2, timeout=20)",
            "def job(i):",
            "    global active, peak",
            "    with lock:",
            "        active += 1; peak = max(peak, active)",
            "    gate.wait()  # passes only when two run at once",
            "    with lock:",
            "        active -= 1",
            "    return i * 10",
            "print(parallel([lambda i=i: job(i) for i in range(6)]), peak)",
            "print(pipeline([1, 2, 3], lambda x: x + 1, lambda x: x * 100))",
            "done = []",
            "def fail(i):",
            "    if i in (1, 3): raise ValueError('bad %d' % i)",
            "    done.append(i); return i",
            "try:",
            "    parallel([lambda i=i: fail(i) for i in range(5)])",
            "except ValueError as e:",
            "    print('raised', e, sorted(done))",
          ].join("\n"),
        ),
      ],
      [],
    );
    assert.equal(r.isError, false, textOf(r));
    assert.equal(textOf(r), "[0, 10, 20, 30, 40, 50] 2\n[200, 300, 400]\nraised bad 1 [0, 2, 4]");
  });

  test("parallel() of agent() thunks: each a subagent, results in order", async () => {
    const seen: Seen[] = [];
    const answer = step(seen, (s) => `re:${s.last}`);
    const r = await evalWith(
      pi,
      [py("print(parallel([lambda p=p: agent(p) for p in ('a', 'b', 'c')]))")],
      [answer, answer, answer],
    );
    assert.equal(r.isError, false, textOf(r));
    assert.equal(textOf(r), "['re:a', 're:b', 're:c']");
    assert.deepEqual(seen.map((s) => s.last).sort(), ["a", "b", "c"]);
  });

  test("parallel() and pipeline() in JavaScript: order, width and the first rejection", async () => {
    const r = await evalWith(
      pi,
      [
        js(
          [
            "let active = 0, peak = 0",
            "const job = async (i) => { active++; peak = Math.max(peak, active); await new Promise((r) => setImmediate(r)); active--; return i * 10 }",
            "const out = await parallel([0, 1, 2, 3, 4].map((i) => () => job(i)))",
            "const piped = await pipeline([1, 2], async (x) => x + 1, (x) => x * 100)",
            "let err",
            "try { await parallel([() => 1, () => { throw new Error('bad 1') }, async () => { throw new Error('bad 2') }]) } catch (e) { err = e.message }",
            "`${out} ${peak} ${piped} ${err}`",
          ].join("\n"),
        ),
      ],
      [],
    );
    assert.equal(r.isError, false, textOf(r));
    assert.equal(textOf(r), "0,10,20,30,40 2 200,300 bad 1");
  });

  test("log(), phase(), budget and tool calls fill statusEvents per cell and overall, and render under the cell", async () => {
    const r = await evalWith(
      pi,
      [
        py(
          "phase('load')\nlog('hello')\nb = budget\nprint(b.total, b.spent() >= 0, b.remaining() <= b.total, b.hard)",
          { title: "py" },
        ),
        js(
          "phase('scan')\nlog({ n: 1 })\nconst t = await tool.read({ path: 'note.txt' });\nconst s = [await budget.total(), await budget.hard()];\n`${t.trim()} ${s}`",
        ),
      ],
      [],
    );
    assert.equal(r.isError, false, textOf(r));
    const window = pi.faux.getModel().contextWindow;
    assert.equal(textOf(r), `[1/2] py\n${window} True True True\n\n[2/2]\nthe note says 42 ${window},true`);
    assert.deepEqual(r.details.cells[0].statusEvents, [
      { op: "phase", title: "load", cell: 1 },
      { op: "log", message: "hello", cell: 1 },
    ]);
    const second = r.details.cells[1].statusEvents;
    assert.deepEqual(
      second.map((e: any) => [e.op, e.title ?? e.message ?? e.name, e.status]),
      [
        ["phase", "scan", undefined],
        ["log", "[object Object]", undefined],
        ["tool", "read", "succeeded"],
      ],
    );
    assert.equal(typeof second[2].durationMs, "number");
    assert.deepEqual(
      r.details.statusEvents.map((e: any) => [e.op, e.cell]),
      [
        ["phase", 1],
        ["log", 1],
        ["phase", 2],
        ["log", 2],
        ["tool", 2],
      ],
    );
    const drawn = evalRenderers
      .renderResult(r as never, { expanded: false, isPartial: false }, theme, context())
      .render(100)
      .join("\n");
    assert.match(
      drawn,
      /· phase: load\s+· log: hello\s+128000 True True True[\s\S]*· phase: scan\s+· log: \[object Object\]\s+· tool read: succeeded/,
    );
  });

  test("completion() tiers follow Pi's model roles: smol and slow from pi/smol and pi/slow (slow with high reasoning), default the session's model", async () => {
    const seen: Seen[] = [];
    roles.setResponses([
      step(seen, () => "small"),
      step(seen, () => "deep"),
      step(seen, () => fauxAssistantMessage([fauxToolCall("respond", { n: 3 })], { stopReason: "toolUse" })),
    ] as never);
    const r = await evalWith(
      pi,
      [
        py(
          "print(completion('a', model='smol'), completion('b', model='slow'), completion('c'))\nprint(completion('d', model='slow', schema={'type': 'object'})['n'])",
        ),
      ],
      [step(seen, () => "usual")],
    );
    assert.equal(r.isError, false, textOf(r));
    assert.equal(textOf(r), "small deep usual\n3");
    assert.ok(seen[3].tools.includes("respond"), "with a schema the slow tier still offers respond");
    assert.deepEqual(
      seen.map((s) => [s.model, s.last]),
      [
        ["pi/smol", "a"],
        ["pi/slow", "b"],
        ["faux/faux-1", "c"],
        ["pi/slow", "d"],
      ],
    );
    assert.equal(seen[1].options?.reasoning, "high");
    assert.notEqual(seen[0].options?.reasoning, "high");
  });

  test("agent() and the helpers outside eval: the python tool says they work in eval cells only", async () => {
    const before = pi.toolResults().length;
    pi.faux.setResponses([
      fauxAssistantMessage(
        [
          fauxToolCall("python", {
            cells: [{ code: "try:\n    agent('x')\nexcept RuntimeError as e:\n    print(e)" }],
          } as never),
        ],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("done"),
    ] as never);
    await pi.session.prompt("go");
    const [r] = pi.toolResults().slice(before);
    assert.match(textOf(r), /agent\(\) works in eval cells only/);
  });
});

describe("eval agent() and pools under other settings", () => {
  let pi: PiHarness;
  before(async () => {
    process.env.PI_CODE_EXECUTION_TOOLS = "eval";
    process.env.PI_CODE_EXECUTION_EVAL_POOL_WIDTH = "0";
    process.env.PI_CODE_EXECUTION_EVAL_AGENT_DEPTH = "0";
    process.env.PI_CODE_EXECUTION_SMOL_MODEL = "faux/faux-1";
    pi = await startPi();
  });
  after(async () => {
    await pi.dispose();
    for (const k of ["TOOLS", "EVAL_POOL_WIDTH", "EVAL_AGENT_DEPTH", "SMOL_MODEL"])
      delete process.env[`PI_CODE_EXECUTION_${k}`];
  });

  test("eval.poolWidth 0 runs every item at once (beyond the default 32)", async () => {
    const r = await evalWith(
      pi,
      [
        py(
          "import threading\ngate = threading.Barrier(40, timeout=20)\nprint(sum(parallel([lambda i=i: (gate.wait(), i)[1] for i in range(40)])))",
        ),
        js(
          "let n = 0, release\nconst all = new Promise((r) => (release = r))\nconst out = await parallel(Array.from({ length: 40 }, (_, i) => async () => { if (++n === 40) release(); await all; return i }))\nout.length",
        ),
      ],
      [],
    );
    assert.equal(r.isError, false, textOf(r));
    assert.equal(textOf(r), "[1/2]\n780\n\n[2/2]\n40");
  });

  test("the recursion cap: with eval.agentDepth 0 agent() raises in both languages", async () => {
    const r = await evalWith(
      pi,
      [
        py("try:\n    agent('x')\nexcept RuntimeError as e:\n    print(e)"),
        js("let m\ntry { await agent('x') } catch (e) { m = e.message }\nm"),
      ],
      [],
    );
    assert.equal(
      textOf(r),
      "[1/2]\nagent(): subagents are turned off (setting eval.agentDepth = 0)\n\n[2/2]\nagent(): subagents are turned off (setting eval.agentDepth = 0)",
    );
  });

  test("completionModels.smol wins over Pi's model role", async () => {
    const seen: Seen[] = [];
    const r = await evalWith(pi, [py("print(completion('a', model='smol'))")], [step(seen, () => "from setting")]);
    assert.equal(textOf(r), "from setting");
    assert.equal(seen[0].model, "faux/faux-1");
  });
});
