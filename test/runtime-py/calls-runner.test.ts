// The Python side of nested tool calls (runtime-py/pi_tools.py) against a real runner: the test plays the host, reading
// `tool.call` frames and answering with `tool.result` (docs/protocol.md, "Nested tool calls").
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { RunnerDriver, sleep, type Frame } from "../helpers/runner-driver.ts";

const TOOLS = [
  { name: "echo", python: "echo", signature: "echo(*, x: int)", description: "Returns its arguments as JSON." },
  { name: "my-search", python: "my_search", signature: "my_search(*, query: str, limit: int = None)" },
  { name: "print", python: "print_", signature: "print_()" },
];
const withTools = (tools: unknown = TOOLS) => ({ extra: { tools } });

type Call = Frame & { id: string; run: string; name: string; args: Record<string, unknown> };

let served = 0;

/** Runs `code` with the tools, answering each of its calls with `answer(call)` until the run is done. */
async function runServed(
  driver: RunnerDriver,
  code: string,
  answer: (c: Call) => { status?: string; text: string } | undefined,
  opts: { filename?: string; tools?: unknown } = {},
) {
  const id = `served-${++served}`;
  const mark = driver.startRun(code, {
    id,
    ...(opts.filename ? { filename: opts.filename } : {}),
    ...withTools(opts.tools),
  });
  let finished = false;
  const result = driver.finishRun(mark).finally(() => (finished = true));
  void (async () => {
    while (!finished) {
      const c = (await driver
        .waitFrame((f) => f.type === "tool.call" && f.run === id, 60_000)
        .catch(() => undefined)) as Call | undefined;
      if (!c) return;
      const a = answer(c);
      if (a) driver.send({ type: "tool.result", id: c.id, run: c.run, status: a.status ?? "ok", text: a.text });
    }
  })();
  return result;
}

let d: RunnerDriver;
before(async () => {
  d = await RunnerDriver.start({ mode: "session" });
});
after(async () => {
  await d.close();
});

describe("tool functions in the user's globals", () => {
  test("each tool is an async function with its Python name; available_tools() lists signatures", async () => {
    const r = await d.run(
      [
        "import inspect",
        "print(inspect.iscoroutinefunction(echo), echo.__name__, my_search.__name__, print_.__name__)",
        "print(print is __builtins__.print if isinstance(__builtins__, type(inspect)) else True)",
        "print(available_tools())",
        "print(list(available_tools()))",
        "print(echo.__doc__)",
      ].join("\n"),
      withTools(),
    );
    assert.equal(r.done.error, null, r.stderr);
    assert.equal(
      r.stdout,
      [
        "True echo my_search print_",
        "True",
        "echo(*, x: int)",
        "my_search(*, query: str, limit: int = None)",
        "print_()",
        "['echo(*, x: int)', 'my_search(*, query: str, limit: int = None)', 'print_()']",
        "echo(*, x: int)",
        "",
        "Returns its arguments as JSON.",
        "",
      ].join("\n"),
    );
  });

  test("a result is a str with json(); arguments arrive as JSON; the call is bound to the run", async () => {
    const r = await runServed(
      d,
      "r = await echo(x=1, nested={'a': [1, 2.5, None, True]}, s='é')\nprint(type(r).__mro__[1].__name__, isinstance(r, str))\nv = r.json()\nprint(v['got'], v['run'].startswith('served-'))\nprint(r.json() is not v, r.json() == v)",
      (c) => ({ text: JSON.stringify({ got: c.args, run: c.run }) }),
    );
    assert.equal(r.done.error, null, r.stderr);
    assert.equal(r.stdout, "str True\n{'x': 1, 'nested': {'a': [1, 2.5, None, True]}, 's': 'é'} True\nTrue True\n");
  });

  test("json() on non-JSON text raises ValueError naming the tool and showing the start; a structuredContent block parses", async () => {
    const texts = [
      "Hello there, this is not JSON at all " + "x".repeat(300),
      'Found 2 items.\n\nstructuredContent:\n{"items": [1, 2]}',
      'structuredContent: {"only": true}',
      "Summary\nstructuredContent:\n```json\n[3, 4]\n```",
      "text\nstructuredContent:\nnot json either",
    ];
    let i = 0;
    const r = await runServed(
      d,
      [
        "for _ in range(5):",
        "    res = await my_search(query='q')",
        "    try:",
        "        print('ok', res.json())",
        "    except ValueError as e:",
        "        print('ValueError', e)",
      ].join("\n"),
      () => ({ text: texts[i++]! }),
    );
    assert.equal(r.done.error, null, r.stderr);
    const lines = r.stdout.trim().split("\n");
    assert.match(
      lines[0]!,
      /^ValueError my_search returned text that is not JSON: 'Hello there, this is not JSON at all x+'\.\.\.$/,
    );
    assert.ok(lines[0]!.length < 300, "only the start is shown");
    assert.equal(lines[1], "ok {'items': [1, 2]}");
    assert.equal(lines[2], "ok {'only': True}");
    assert.equal(lines[3], "ok [3, 4]");
    assert.match(
      lines[4]!,
      /^ValueError my_search returned text that is not JSON: 'text\\nstructuredContent:\\nnot json either'$/,
    );
  });

  test("keyword arguments only; NaN, Infinity and non-JSON values fail in Python before reaching the host", async () => {
    const before = d.frames.filter((f) => f.type === "tool.call").length;
    const r = await d.run(
      [
        "import math",
        "for bad in (lambda: echo(1), lambda: echo(x=float('nan')), lambda: echo(x=[math.inf]), lambda: echo(x={1, 2}), lambda: echo(x=b'x')):",
        "    try:",
        "        await bad()",
        "    except (TypeError, ValueError) as e:",
        "        print(type(e).__name__, e)",
      ].join("\n"),
      withTools(),
    );
    assert.equal(r.done.error, null, r.stderr);
    assert.equal(d.frames.filter((f) => f.type === "tool.call").length, before, "nothing was sent");
    const lines = r.stdout.trim().split("\n");
    assert.equal(
      lines[0],
      "TypeError echo() takes keyword arguments only (1 positional given); call it as echo(*, x: int)",
    );
    assert.match(lines[1]!, /^ValueError echo\(\): NaN and Infinity are not valid JSON/);
    assert.match(lines[2]!, /^ValueError echo\(\): NaN and Infinity/);
    assert.match(lines[3]!, /^TypeError echo\(\): arguments must be JSON values .*set/);
    assert.match(lines[4]!, /^TypeError echo\(\): arguments must be JSON values .*bytes/);
  });

  test("an error result raises RuntimeError (catchable); invalid raises TypeError; uncaught, the traceback shows only the user's line", async () => {
    const answers = [
      { status: "error", text: "ENOENT: no such file" },
      { status: "invalid", text: 'Validation failed for tool "echo"' },
      { status: "blocked", text: "echo was blocked: not today" },
      { status: "error", text: "second failure" },
    ];
    let i = 0;
    const r = await runServed(
      d,
      [
        "for _ in range(3):",
        "    try:",
        "        await echo(x=1)",
        "    except Exception as e:",
        "        print(type(e).__name__, e)",
        "await echo(x=2)",
      ].join("\n"),
      () => answers[i++],
      { filename: "script.py" },
    );
    assert.equal(r.done.error, "exception");
    assert.equal(
      r.stdout,
      'RuntimeError ENOENT: no such file\nTypeError Validation failed for tool "echo"\nRuntimeError echo was blocked: not today\n',
    );
    assert.equal(
      r.stderr,
      'Traceback (most recent call last):\n  File "script.py", line 6, in <module>\n    await echo(x=2)\nRuntimeError: second failure\n',
    );
  });
});

describe("concurrency and correlation", () => {
  test("asyncio.gather sends every call before any answer; answers in reverse order reach the right callers", async () => {
    const mark = d.startRun(
      "import asyncio\nrs = await asyncio.gather(*(echo(x=i) for i in range(5)))\nprint([r.json()['x'] for r in rs])",
      withTools(),
    );
    const calls: Call[] = [];
    for (let i = 0; i < 5; i++) calls.push((await d.waitFrame("tool.call")) as Call);
    for (const c of calls.reverse())
      d.send({ type: "tool.result", id: c.id, run: c.run, status: "ok", text: JSON.stringify(c.args) });
    const r = await d.finishRun(mark);
    assert.equal(r.stdout, "[0, 1, 2, 3, 4]\n", r.stderr);
  });

  test("200 calls wait at once (more than 128) and each answer correlates", async () => {
    const mark = d.startRun(
      "import asyncio\nrs = await asyncio.gather(*(echo(x=i) for i in range(200)))\nprint(all(r.json()['x'] == i for i, r in enumerate(rs)), len(rs))",
      withTools(),
    );
    const calls: Call[] = [];
    for (let i = 0; i < 200; i++) calls.push((await d.waitFrame("tool.call")) as Call);
    assert.equal(new Set(calls.map((c) => c.id)).size, 200);
    // Shuffled answers.
    for (let i = calls.length - 1; i > 0; i--) {
      const j = (i * 7919) % (i + 1);
      [calls[i], calls[j]] = [calls[j]!, calls[i]!];
    }
    for (const c of calls)
      d.send({ type: "tool.result", id: c.id, run: c.run, status: "ok", text: JSON.stringify(c.args) });
    const r = await d.finishRun(mark);
    assert.equal(r.stdout, "True 200\n", r.stderr);
  });

  test("calls work from another thread's event loop and from a sync script's asyncio.run()", async () => {
    const r = await runServed(
      d,
      [
        "import asyncio, threading",
        "out = []",
        "t = threading.Thread(target=lambda: out.append(asyncio.run(echo(x=7))))",
        "t.start(); t.join()",
        "print(out, asyncio.run(echo(x=8)))",
      ].join("\n"),
      (c) => ({ text: String(c.args.x) }),
    );
    assert.equal(r.stdout, "['7'] 8\n", r.stderr);
  });

  test("a late answer for an unknown call id is ignored", async () => {
    d.send({ type: "tool.result", id: "c999999", run: "nope", status: "ok", text: "late" });
    const r = await d.run("print('still fine')", withTools());
    assert.equal(r.stdout, "still fine\n");
  });
});

describe("cancellation and run boundaries", () => {
  test("asyncio.wait_for timing out sends tool.cancel for that call", async () => {
    const mark = d.startRun(
      "import asyncio\ntry:\n    await asyncio.wait_for(echo(x=1), 0.05)\nexcept asyncio.TimeoutError:\n    print('timed out')",
      withTools(),
    );
    const call = (await d.waitFrame("tool.call")) as Call;
    const cancel = await d.waitFrame((f) => f.type === "tool.cancel" && f.id === call.id);
    assert.equal(cancel.run, call.run);
    const r = await d.finishRun(mark);
    assert.equal(r.stdout, "timed out\n", r.stderr);
    d.send({ type: "tool.result", id: call.id, run: call.run, status: "ok", text: "too late" }); // dropped
  });

  test("the run's interrupt stops the wait: KeyboardInterrupt, tool.cancel, and the session lives on", async () => {
    const mark = d.startRun("await echo(x=1)", withTools());
    await d.waitFrame((f) => f.type === "started" && f.id === mark.id);
    const call = (await d.waitFrame("tool.call")) as Call;
    d.signal("SIGINT");
    await d.waitFrame((f) => f.type === "tool.cancel" && f.id === call.id);
    const r = await d.finishRun(mark);
    assert.equal(r.done.error, "interrupt");
    assert.match(r.stderr, /KeyboardInterrupt/);
    const again = await d.run("print('alive')", withTools());
    assert.equal(again.stdout, "alive\n");
  });

  test("a call still waiting when its run ends fails; calls between runs fail at once", async () => {
    const r1 = await d.run(
      [
        "import asyncio, threading, time",
        "pending = asyncio.get_running_loop().create_task(echo(x=1))",
        "await asyncio.sleep(0.05)",
        "def later():",
        "    time.sleep(0.3)",
        "    try:",
        "        asyncio.run(echo(x=2))",
        "    except RuntimeError as e:",
        "        between.append(str(e))",
        "between = []",
        "threading.Thread(target=later).start()",
      ].join("\n"),
      withTools(),
    );
    assert.equal(r1.done.error, null, r1.stderr);
    await sleep(600);
    const r2 = await d.run(
      "try:\n    await pending\nexcept RuntimeError as e:\n    print('pending:', e)\nprint('between:', between)",
      withTools(),
    );
    assert.equal(
      r2.stdout,
      "pending: the run that made this tool call ended before it was answered\n" +
        "between: ['echo(): no code_execution run is active; tool calls work only while a run executes']\n",
      r2.stderr,
    );
  });

  test("a forked child cannot call (it would never get an answer)", async () => {
    const r = await d.run(
      [
        "import os",
        "pid = os.fork()",
        "if pid == 0:",
        "    import asyncio",
        "    try:",
        "        asyncio.run(echo(x=1))",
        "    except RuntimeError as e:",
        "        print('child:', e, flush=True)",
        "    os._exit(0)",
        "os.waitpid(pid, 0)",
      ].join("\n"),
      withTools(),
    );
    assert.match(r.stdout, /child: echo\(\): tool calls work only in the run's own process/);
  });
});

describe("a session refreshes its tools every run", () => {
  test("tools no longer exposed are removed; the user's own bindings are never replaced", async () => {
    const fresh = await RunnerDriver.start({ mode: "session" });
    try {
      let r = await fresh.run("echo_ref = echo\nprint('echo' in globals(), 'my_search' in globals())", withTools());
      assert.equal(r.stdout, "True True\n");
      r = await fresh.run(
        "print('echo' in globals(), 'my_search' in globals(), callable(echo_ref))",
        withTools([TOOLS[0]]),
      );
      assert.equal(r.stdout, "True False True\n");
      r = await fresh.run("echo = 'mine'\nprint(available_tools())", withTools([TOOLS[0]]));
      r = await fresh.run("print(echo)\nprint(available_tools())", withTools([TOOLS[0]]));
      assert.equal(r.stdout, "mine\necho(*, x: int)  # shadowed: echo is bound to another value here\n");
      r = await fresh.run("print('available_tools' in globals(), echo)", {});
      assert.equal(r.stdout, "True mine\n", "a run without tools removes the helper's tools but not the user's");
      r = await fresh.run("print(available_tools())", {});
      assert.equal(r.stdout, "no agent tools are exposed\n");
    } finally {
      await fresh.close();
    }
  });

  test("a run frame with malformed tools is a protocol error (fatal)", async () => {
    const bad = await RunnerDriver.start({ mode: "session" });
    try {
      bad.startRun("1", withTools([{ name: "x", python: "not an identifier", signature: "x()" }]));
      const fatal = await bad.waitFrame("fatal");
      assert.match(String(fatal.message), /bad run frame: tools/);
    } finally {
      await bad.close();
    }
  });

  test("a tool set's specs come once with its tools_id; later frames name the id alone; an unknown id is fatal", async () => {
    const s = await RunnerDriver.start({ mode: "session" });
    try {
      const set = (id: string, tools?: unknown) => ({ extra: { tools_id: id, ...(tools ? { tools } : {}) } });
      let r = await s.run("print(available_tools())", set("t1", TOOLS));
      assert.equal(r.stdout, `${TOOLS.map((t) => t.signature).join("\n")}\n`);
      r = await s.run("del echo\nprint(available_tools())", set("t1"));
      assert.equal(r.stdout, `${TOOLS.map((t) => t.signature).join("\n")}\n`, "the id alone brings the same set");
      r = await s.run("print(callable(echo), available_tools())", set("t1"));
      assert.equal(r.stdout, "True echo(*, x: int)\nmy_search(*, query: str, limit: int = None)\nprint_()\n");
      r = await s.run("print(available_tools())", set("t2", [TOOLS[0]]));
      assert.equal(r.stdout, "echo(*, x: int)\n", "a new set replaces the old one");
      r = await s.run("print(available_tools())", set("t2"));
      assert.equal(r.stdout, "echo(*, x: int)\n");
      s.startRun("1", set("t1"));
      const fatal = await s.waitFrame("fatal");
      assert.match(String(fatal.message), /bad run frame: tools_id 't1' names no tool set this runner received/);
    } finally {
      await s.close();
    }
  });

  test("a ToolResult pickles as a plain str", async () => {
    const r = await runServed(
      d,
      "import pickle\nr = await echo(x=1)\nv = pickle.loads(pickle.dumps(r))\nprint(type(v).__name__, v)",
      () => ({
        text: "abc",
      }),
    );
    assert.equal(r.stdout, "str abc\n", r.stderr);
  });
});
