// eval's prelude and cell results in a real Pi session (faux model), as an oh-my-pi user knows them (issue 27): the
// synchronous Python helpers read/write/env/output and `tool.<name>(...)`, the async JavaScript ones, local:// paths,
// image-only and empty cells, console order, truncated output saved as an artifact, PI_PY/PI_JS and a missing
// interpreter refused up front, and an out-of-range timeout refused.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { initTheme } from "@earendil-works/pi-coding-agent";
import { stripTerminalSequences } from "@earendil-works/pi-tui";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { waitUntil } from "../../helpers/procs.ts";
import { callAs, jsCell as js, pyCell as py, evalCall } from "../../helpers/notebook.ts";
import { evalRenderers } from "../../../extension/shared/notebook/render.ts";

let pi: PiHarness;
before(async () => {
  process.env.PI_CODE_EXECUTION_TOOLS = "eval,python,code_execution";
  pi = await startPi();
  writeFileSync(join(pi.cwd, "package.json"), JSON.stringify({ name: "demo-pkg", version: "1.2.3" }));
  writeFileSync(join(pi.cwd, "lines.txt"), "one\ntwo\nthree\nfour\n");
  mkdirSync(join(pi.cwd, "adir"));
});
after(async () => {
  await pi.dispose();
  delete process.env.PI_CODE_EXECUTION_TOOLS;
});

const evalCells = (...cells: Record<string, unknown>[]) => evalCall(pi, ...cells);
const sessionDir = () => join(pi.agentDir, "code-execution-eval", pi.session.sessionManager.getSessionId());

describe("eval's Python prelude", () => {
  test("read is synchronous: json.loads(read('package.json')) works; offset/limit; a directory is refused", async () => {
    const r = await evalCells(
      py("import json\nprint(json.loads(read('package.json'))['name'])"),
      py("print(repr(read('lines.txt', 2, 2)), repr(read('lines.txt', offset=4)), repr(read('lines.txt', limit=1)))"),
      py(
        "try:\n    read('adir')\nexcept IsADirectoryError as e:\n    print('refused:', e)\nprint((await read(path='lines.txt')).split()[0])",
      ),
    );
    assert.equal(r.isError, false, textOf(r));
    const text = textOf(r);
    assert.match(text, /\[1\/3\]\ndemo-pkg\n/);
    assert.match(text, /'two\\nthree\\n' 'four\\n' 'one\\n'/);
    assert.match(text, /refused: read\(\): \S+\/adir is a directory, not a file \(list it with os\.listdir\)\none$/);
    assert.doesNotMatch(text, /never awaited|coroutine/);
  });

  test("write returns its Path; local:// maps under the session's root; other scheme:// paths are refused", async () => {
    const r = await evalCells(
      py("p = write('out/new.txt', 'hello')\nprint(type(p).__name__, p.read_text())"),
      py("write('local://notes/a.md', 'shared background')\nprint(read('local://notes/a.md'))"),
      py(
        "for bad in ('https://example.com/x', 'agent://1', 'local://../up'):\n    try:\n        write(bad, 'x')\n    except ValueError as e:\n        print('refused:', e)\ntry:\n    read('artifact://nope-py')\nexcept RuntimeError as e:\n    print('delegated:', e)",
      ),
    );
    assert.equal(r.isError, false, textOf(r));
    const text = textOf(r);
    assert.match(text, /PosixPath hello/);
    assert.match(text, /\[2\/3\]\nshared background/);
    assert.match(text, /refused: write\(\): https:\/\/ paths are not supported/);
    assert.match(text, /refused: write\(\): agent:\/\/ paths are not supported/);
    assert.match(text, /refused: write\(\): local:\/\/\.\.\/up escapes local:\/\//);
    assert.match(text, /delegated: .*artifact:\/+nope-py/);
    assert.equal(readFileSync(join(pi.cwd, "out/new.txt"), "utf8"), "hello");
    assert.equal(readFileSync(join(sessionDir(), "local", "notes", "a.md"), "utf8"), "shared background");
    for (const dir of [join(sessionDir(), ".."), sessionDir(), join(sessionDir(), "local")])
      assert.equal(statSync(dir).mode & 0o777, 0o700, `${dir} is private`);
  });

  test("env gets, sets and lists (sorted)", async () => {
    const r = await evalCells(
      py(
        "print(env('PCS_PRELUDE_X'), env('PCS_PRELUDE_X', 'v1'), env('PCS_PRELUDE_X'))\nall_ = env()\nprint(type(all_).__name__, list(all_) == sorted(all_), all_['PCS_PRELUDE_X'])",
      ),
    );
    assert.equal(textOf(r), "None v1 v1\ndict True v1");
  });

  test("tool.<name>(...) reaches Pi's tools (read and write too), sync or awaited; bare names still await", async () => {
    const r = await evalCells(
      py(
        [
          "a = tool.read(path='lines.txt')",
          "b = await tool.bash({'command': 'echo via-bash'})",
          "c = await bash(command='echo bare')",
          "print(a.splitlines()[0], b.strip(), c.strip(), 'read' in dir(tool))",
          "try:\n    tool.no_such_tool()\nexcept AttributeError as e:\n    print('missing:', e)",
        ].join("\n"),
      ),
    );
    assert.equal(r.isError, false, textOf(r));
    assert.match(textOf(r), /^one via-bash bare True\nmissing: tool\.no_such_tool: no such tool in this cell/);
  });

  test("a helper's name the user binds to something else stays theirs", async () => {
    const r = await evalCells(
      py("def output(*a):\n    return 'mine'"),
      py("print(output('x'), callable(read))\nprint([l for l in available_tools() if 'read' in l or 'output' in l])"),
      py("del output"),
    );
    assert.equal(r.isError, false, textOf(r));
    assert.match(
      textOf(r),
      /\[2\/3\]\nmine True\n\["tool\.read\(\.\.\.\) {2}# `read` is eval's helper in this cell", 'output {2}# shadowed: bound to another value here'\]/,
    );
    const back = await evalCells(py("print(output.__doc__.split('.')[0])"));
    assert.equal(textOf(back), "Saved outputs of this Pi session by id (a truncated eval output names its id)");
  });

  test("another surface in the same notebook session keeps Pi's read tool under its name", async () => {
    const [e, c] = await callAs(pi, [
      ["eval", { cells: [py("print(callable(read), type(tool).__name__)")] }],
      ["code_execution", { session: "notebook", code: "r = await read(path='lines.txt')\nprint(r.splitlines()[1])" }],
    ]);
    assert.equal(textOf(e), "True _ToolNamespace");
    assert.equal(c.isError, false, textOf(c));
    assert.match(textOf(c), /two/);
  });
});

describe("eval's JavaScript prelude", () => {
  test("async read/write/output and a synchronous env; options positional or as an object", async () => {
    const r = await evalCells(
      js(
        [
          "const pkg = JSON.parse(await read('package.json'))",
          "const a = await read('lines.txt', 2, 1)",
          "const b = await read('lines.txt', { offset: 3, limit: 1 })",
          "const c = await read('lines.txt', null, 1)",
          "const set = env('PCS_PRELUDE_JS', 'j1')",
          "console.log(pkg.name, JSON.stringify([a, b, c]), set, env('PCS_PRELUDE_JS'), typeof env().PATH)",
        ].join("\n"),
      ),
      js(
        "await write('local://from-js.txt', 'js wrote this')\ntry { await read('adir') } catch (e) { console.log('dir:', e.message) }\ntry { await write('https://example.com/x', 'x') } catch (e) { console.log('scheme:', e.message) }\ntry { await read('artifact://nope-js') } catch (e) { console.log('delegated:', e.message) }",
      ),
      py("print(read('local://from-js.txt'))"),
    );
    assert.equal(r.isError, false, textOf(r));
    const text = textOf(r);
    assert.match(text, /demo-pkg \["two\\n","three\\n","one\\n"\] j1 j1 string/);
    assert.match(text, /dir: read\(\): \S+\/adir is a directory, not a file/);
    assert.match(text, /scheme: write\(\): https:\/\/ paths are not supported/);
    // Another scheme is Pi's read tool's business: its own error comes back.
    assert.match(text, /delegated: .*artifact:\/+nope-js/);
    assert.match(text, /\[3\/3\]\njs wrote this/);
  });

  test("Node's globals are there: process, require, Buffer, fetch, timers", async () => {
    const r = await evalCells(
      js(
        "[typeof process.pid, typeof require('node:path').join, typeof Buffer.from, typeof fetch, typeof setTimeout].join(' ')",
      ),
    );
    assert.equal(textOf(r), "number function function function function");
  });

  test("console.log, console.error and console.warn keep their call order", async () => {
    const r = await evalCells(
      js("console.log('A'); console.error('B'); console.log('C'); console.warn('D'); console.log('E')"),
    );
    assert.equal(textOf(r), "A\nB\nC\nD\nE");
  });
});

describe("eval results", () => {
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

  test("an image-only cell says (displayed N image(s); no text output); images are content blocks", async () => {
    const r = await evalCells(
      py(
        `import base64\nclass Img:\n    def _repr_png_(self):\n        return base64.b64decode('${png}')\ndisplay(Img())\ndisplay(Img())`,
      ),
    );
    assert.equal(r.isError, false, textOf(r));
    assert.equal(r.content[0].text, "(displayed 2 image(s); no text output)");
    assert.deepEqual(
      r.content.map((c) => c.type),
      ["text", "image", "image"],
    );
    const none = await evalCells(js("let quiet = 1"));
    assert.equal(textOf(none), "(no output)");
  });

  test("truncated output keeps the last 3000 lines, is saved as an artifact (details.meta) and output() reads it", async () => {
    const r = await evalCells(py("for i in range(5000):\n    print('line', i)"));
    assert.equal(r.isError, false);
    const text = textOf(r);
    const [head, ...kept] = text.split("\n");
    assert.equal(kept.length, 3000);
    assert.equal(kept[0], "line 2000");
    assert.equal(kept.at(-1), "line 4999");
    const t = r.details.meta?.truncation;
    assert.ok(t, JSON.stringify(r.details.meta));
    assert.equal(t.truncatedBy, "lines");
    assert.equal(t.totalLines, 5000);
    assert.equal(t.outputLines, 3000);
    assert.match(t.artifactId, /^eval-[0-9a-f]{12}$/);
    assert.match(
      head,
      new RegExp(`^\\[output truncated: kept the last 3000 of 5000 lines, .*artifact://${t.artifactId}`),
    );
    assert.ok(existsSync(t.path));
    const back = await evalCells(
      py(`whole = output('${t.artifactId}')\nprint(len(whole.splitlines()), whole.splitlines()[0])`),
      py(
        `info = output('${t.artifactId}', format='json', offset=2, limit=2)\nprint(info['range'], repr(info['content']))`,
      ),
      js(`const w = await output('${t.artifactId}', { offset: 5000 })\nconsole.log(w)`),
      py("try:\n    output('eval-000000000000')\nexcept FileNotFoundError as e:\n    print(e)"),
    );
    assert.equal(back.isError, false, textOf(back));
    const b = textOf(back);
    assert.match(b, /\[1\/4\]\n5000 line 0\n/);
    assert.match(b, /\{'start_line': 2, 'end_line': 3, 'total_lines': 5000\} 'line 1\\nline 2'/);
    assert.match(b, /\[3\/4\]\nline 4999\n/);
    assert.match(b, new RegExp(`no saved output eval-000000000000; saved: .*${t.artifactId}`));
  });

  test("input() fails the cell: interactive input is not supported", async () => {
    const r = await evalCells(py("name = input('who? ')"), py("print('never')"));
    assert.equal(r.isError, true);
    assert.match(textOf(r), /stdin|interactive input is not supported/);
    assert.doesNotMatch(textOf(r), /never/);
  });

  test("a cancelled call is an error naming the cancelled cell; later cells are skipped", async () => {
    const before = pi.toolResults().length;
    pi.faux.setResponses([
      fauxAssistantMessage(
        [
          fauxToolCall("eval", {
            cells: [js("console.log('started')\nawait new Promise((r) => setTimeout(r, 60000))"), py("print('never')")],
          } as never),
        ],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("done"),
    ] as never);
    const prompt = pi.session.prompt("go");
    const started = () =>
      pi.events.some(
        (e) => e.type === "tool_execution_update" && /started/.test(e.partialResult?.details?.cells?.[0]?.output ?? ""),
      );
    assert.ok(await waitUntil(started, 30000), "the cell printed before the abort");
    await pi.session.abort();
    await prompt;
    const [r] = pi.toolResults().slice(before);
    assert.ok(r, "the call has its result");
    assert.equal(r.isError, true);
    assert.match(textOf(r), /started/);
    assert.match(textOf(r), /\[cell 1\/2 was cancelled; later cells were skipped\]/);
    assert.doesNotMatch(textOf(r), /never/);
  });

  test("malformed calls are refused before anything runs: no cells, a cell without its language", async () => {
    for (const cells of [[], [{ code: "open('ran-malformed', 'w')" }]]) {
      const r = await evalCells(...(cells as Record<string, unknown>[]));
      assert.equal(r.isError, true, JSON.stringify(cells));
      assert.match(textOf(r), /Validation failed for tool "eval"/);
    }
    assert.equal(existsSync(join(pi.cwd, "ran-malformed")), false);
  });

  test("an out-of-range timeout is refused, not clamped; no cell runs", async () => {
    for (const timeout of [0, 3601, 1.5]) {
      const r = await evalCells(py("open('ran-timeout', 'w')", { timeout }));
      assert.equal(r.isError, true, `timeout ${timeout}`);
      assert.match(
        textOf(r),
        timeout === 1.5
          ? /timeout 1\.5 is out of range: it must be a whole number of seconds from 1 to 3600\. No cell was run\./
          : /Validation failed for tool "eval"[\s\S]*timeout/,
      );
    }
    assert.equal(existsSync(join(pi.cwd, "ran-timeout")), false);
  });

  test("the renderer: each cell's code by language, its last 10 output lines, JSON as a tree, the truncation", async () => {
    initTheme("dark", false);
    const cells = [py("for i in range(30):\n    print('row', i)", { title: "rows" }), js("({ tree: { leaf: 1 } })")];
    const r = await evalCells(...cells);
    const theme = { fg: (_c: string, t: string) => t, bold: (t: string) => t } as never;
    const ctx = () => ({
      state: {},
      executionStarted: true,
      expanded: false,
      invalidate: () => {},
      lastComponent: undefined,
      keyHint: (_k: string, d: string) => d,
    });
    const render = (c: { render(w: number): readonly string[] }) =>
      c.render(100).map((l) => stripTerminalSequences(l).trimEnd());
    const call = render(evalRenderers.renderCall({ cells }, theme, ctx()));
    assert.deepEqual(call.slice(0, 2), ["eval 2 cells", "── [1/2] py rows ──"]);
    assert.ok(call.includes("── [2/2] js ──"), call.join("\n"));
    const lines = render(evalRenderers.renderResult(r as never, { expanded: false, isPartial: false }, theme, ctx()));
    const rows = lines.filter((l) => /^ row \d+$/.test(l));
    assert.equal(rows.length, 10, lines.join("\n"));
    assert.equal(rows[0], " row 20");
    assert.ok(
      lines.some((l) => /20 earlier lines/.test(l)),
      lines.join("\n"),
    );
    assert.ok(
      lines.some((l) => /^ +tree: \{…\} 1 key$/.test(l)),
      lines.join("\n"),
    );
    const big = await evalCells(py("for i in range(3100):\n    print(i)"));
    const cut = render(evalRenderers.renderResult(big as never, { expanded: false, isPartial: false }, theme, ctx()));
    assert.match(
      cut.at(-1)!,
      /^model's copy truncated: last 3000 of 3100 lines · whole output artifact:\/\/eval-[0-9a-f]{12}$/,
    );
  });
});

describe("eval's backends checked before any cell", () => {
  async function withEnv(env: Record<string, string>, cells: Record<string, unknown>[]) {
    for (const [k, v] of Object.entries(env)) process.env[k] = v;
    const own = await startPi();
    try {
      const [r] = await callAs(own, [["eval", { cells }]]);
      return { r, cwd: own.cwd };
    } finally {
      for (const k of Object.keys(env)) delete process.env[k];
      await own.dispose();
    }
  }

  test("PI_PY=0 and PI_JS=0 disable a language; a value that is not a boolean is refused", async () => {
    const off = await withEnv({ PI_PY: "0" }, [js("require('fs').writeFileSync('ran-js', '')"), py("1")]);
    assert.equal(off.r.isError, true);
    assert.match(
      textOf(off.r),
      /Python cells \(language "py"\) cannot run: the Python backend is disabled \(PI_PY=0\)\. No cell was run\./,
    );
    assert.equal(existsSync(join(off.cwd, "ran-js")), false);
    const jsOff = await withEnv({ PI_JS: "false" }, [js("1")]);
    assert.match(
      textOf(jsOff.r),
      /JavaScript cells \(language "js"\) cannot run: the JavaScript backend is disabled \(PI_JS=false\)/,
    );
    const on = await withEnv({ PI_JS: "1", PI_CODE_EXECUTION_EVAL_JS: "0" }, [js("'on'")]);
    assert.equal(textOf(on.r), "on");
    const bad = await withEnv({ PI_PY: "maybe" }, [py("1")]);
    assert.match(textOf(bad.r), /PI_PY="maybe" is not a boolean \(use 1 or 0\)/);
  });

  test("a missing Python interpreter is a tool error up front, not a cell's setup error", async () => {
    const r = await withEnv({ PI_PYTHON: "/nonexistent/python3" }, [
      js("require('fs').writeFileSync('ran-js', '')"),
      py("1"),
    ]);
    assert.equal(r.r.isError, true);
    assert.match(
      textOf(r.r),
      /^Python cells \(language "py"\) cannot run: no Python interpreter: .*\/nonexistent\/python3.*No cell was run\.$/s,
    );
    assert.equal(existsSync(join(r.cwd, "ran-js")), false);
  });
});
