// Files in the working directory named like standard modules (token.py, json.py, ...): user code sees them exactly
// as `python3 script.py` would, while the runner's own work (tracebacks, display, `;`, interrupts, top-level await,
// the tool bridge, reloads, package paths) never picks them up (docs/protocol.md, "The runner's modules").
// The shadowed names are not a fixed list: they are every module the runner process loads, read from a probe
// runner after one run of each kind, per interpreter.
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { SupervisorHost } from "../../host/host.ts";
import {
  PYTHON,
  RunnerDriver,
  sleep,
  type Frame,
  type RunResult,
  type StartOptions,
} from "../helpers/runner-driver.ts";
import { findPython, skipWithout } from "../helpers/pythons.ts";
import { tempDir } from "../helpers/temp-dir.ts";

// The oldest and newest Pythons the runner supports, where this machine has them (test/helpers/pythons.ts).
/** The default Python, then the others where this machine has them (each absent one is a skipped test, saying why). */
const pythons = (minors: string[]) => [
  { python: PYTHON, skip: false as string | false },
  ...minors.map((minor) => ({ python: findPython(minor)?.path ?? `Python ${minor}`, skip: skipWithout(minor) })),
];

const drivers: RunnerDriver[] = [];
after(async () => {
  await Promise.all(drivers.map((d) => d.close()));
});

async function start(opts: StartOptions): Promise<RunnerDriver> {
  const d = await RunnerDriver.start({ timeoutMs: 20_000, ...opts });
  drivers.push(d);
  return d;
}

/** A traceback without the caret lines that 3.11+ add, so expectations hold on every version. */
const tb = (stderr: string) => stderr.replace(/^ +[~^ ]*\^[~^ ]*\n/gm, "");

function outcome(r: RunResult) {
  const { error, exitCode, displayedValue } = r.done;
  return { error, exitCode, displayedValue, stdout: r.stdout, stderr: tb(r.stderr) };
}

const TOOLS = [{ name: "echo", python: "echo", signature: "echo(*, x: int)" }];

/** Runs `code` with the echo tool, answering each call with `answer(call)`, as the host would. */
async function served(d: RunnerDriver, code: string, answer: (args: Record<string, unknown>) => string) {
  const mark = d.startRun(code, { extra: { tools: TOOLS } });
  let finished = false;
  const result = d.finishRun(mark, 20_000).finally(() => (finished = true));
  void (async () => {
    while (!finished) {
      const c = (await d
        .waitFrame((f) => f.type === "tool.call" && f.run === mark.id, 20_000)
        .catch(() => undefined)) as (Frame & { id: string; args: Record<string, unknown> }) | undefined;
      if (!c) return;
      d.send({ type: "tool.result", id: c.id, run: mark.id, status: "ok", text: answer(c.args) });
    }
  })();
  return result;
}

/** Sends a run, waits until it started and a little more, then sends the host's single SIGINT. */
async function interrupted(d: RunnerDriver, code: string): Promise<RunResult> {
  const mark = d.startRun(code);
  await d.waitFrame((f) => f.type === "started" && f.id === mark.id, 20_000);
  await sleep(150);
  d.signal("SIGINT");
  return d.finishRun(mark, 20_000);
}

/** What `python` prints for `code` run as a plain script in `cwd` (`python3 script.py`). */
function plain(python: string, cwd: string, code: string): { stdout: string; stderr: string; status: number } {
  writeFileSync(join(cwd, "script.py"), code);
  try {
    const stdout = execFileSync(python, ["script.py"], { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    return { stdout, stderr: "", status: 0 };
  } catch (e) {
    const err = e as { stdout: string; stderr: string; status: number };
    return { stdout: err.stdout, stderr: err.stderr, status: err.status };
  }
}

const BIG = "{f'key{i}': 'v' * 20 for i in range(8)}";
const pformat = (python: string) =>
  execFileSync(python, ["-c", `import pprint; print(pprint.pformat(${BIG}, width=120, sort_dicts=False))`], {
    cwd: tmpdir(),
    encoding: "utf8",
  });

/** Every top-level module name the runner process has loaded, for itself or for the runs, after one run of each
 * kind (fresh run, traceback, `;`, display, syntax error, interrupt, top-level await, tool call, reload, sysPath). */
async function loadedNames(python: string): Promise<string[]> {
  const cwd = tempDir("pcs-shadow-");
  const pkgs = join(cwd, "pkgs");
  mkdirSync(pkgs);
  writeFileSync(join(pkgs, "pkgmod.py"), "V = 1\n");
  writeFileSync(join(cwd, "mymod.py"), "V = 1\n");
  const names = new Set<string>();
  // The runner's modules (pcs_imports.own) as well as sys.modules.
  const list =
    "import sys\nprint('\\n'.join(sorted({n.partition('.')[0] for n in list(sys.modules) + list(getattr(sys.modules.get('pcs_imports'), 'own', ()))})))";
  const fresh = await start({ mode: "fresh", python, cwd });
  const f = await fresh.run(`import atexit\natexit.register(lambda: exec(${JSON.stringify(list)}))\nx = 1\n1/0`);
  for (const n of f.stdout.split("\n")) if (n) names.add(n);

  const d = await start({ mode: "session", python, cwd });
  await d.run("x = 1\n1/0");
  await d.run("x = 5\nx;");
  await d.run(BIG);
  await d.run("def (");
  await d.run("raise SystemExit('bye')");
  await interrupted(d, "while True:\n    pass");
  await d.run("async def f():\n    return 1\nawait f()");
  await served(
    d,
    "r = await echo(x=1)\nr.json()\ntry:\n    (await echo(x=2)).json()\nexcept ValueError:\n    pass",
    (a) => (a.x === 1 ? '{"x": 1}' : '"\\x"'),
  );
  await d.run("import mymod");
  await d.run("1", { extra: { reload: ["mymod"], sysPath: [pkgs], checkLoaded: ["pkgmod"] } });
  const r = await d.run(list);
  for (const n of r.stdout.split("\n")) if (n) names.add(n);
  for (const n of ["__main__", "mymod", "pkgmod"]) names.delete(n);
  return [...names].filter((n) => !/^_?pcs_/.test(n)).sort();
}

const FLAVOURS = {
  /** Stops any import of it. */
  hostile: (name: string) => `raise ImportError('hostile ${name}.py')\n`,
  /** Imports, but has none of the standard module's names. */
  empty: () => "",
  /** Imports, and has every name: all of them None. */
  junk: () => "def __getattr__(name):\n    return None\n",
};

function shadowDir(names: string[], flavour: keyof typeof FLAVOURS): string {
  const cwd = tempDir(`pcs-shadow-${flavour}-`);
  for (const n of names) writeFileSync(join(cwd, `${n}.py`), FLAVOURS[flavour](n));
  return cwd;
}

const BOOM = "x = 1\n1/0";
const boom = (filename: string) => ({
  error: "exception",
  exitCode: 1,
  displayedValue: false,
  stdout: "",
  stderr: `Traceback (most recent call last):\n  File "${filename}", line 2, in <module>\n    1/0\nZeroDivisionError: division by zero\n`,
});
const ok = (stdout: string, displayedValue = stdout !== "") => ({
  error: null,
  exitCode: 0,
  displayedValue,
  stdout,
  stderr: "",
});

/** One run of each kind in a session and two fresh runs, all in `cwd`: each behaves as in a clean directory. */
async function everyKindWorks(python: string, cwd: string): Promise<void> {
  writeFileSync(join(cwd, "mymod.py"), "V = 1\n\ndef boom():\n    return 1 / 0\n");
  const pkgs = join(cwd, "pkgs");
  mkdirSync(pkgs, { recursive: true });
  writeFileSync(join(pkgs, "pkgmod.py"), "V = 'pkg'\n");

  const fresh = await start({ mode: "fresh", python, cwd });
  assert.deepEqual(outcome(await fresh.run(BOOM, { filename: "script.py" })), boom("script.py"));
  const fresh2 = await start({ mode: "fresh", python, cwd });
  assert.deepEqual(outcome(await fresh2.run("x = 5\nx;")), ok(""));

  const d = await start({ mode: "session", python, cwd });
  assert.deepEqual(outcome(await d.run(BOOM, { filename: "<cell-1>" })), boom("<cell-1>"), "traceback");
  assert.deepEqual(outcome(await d.run("x")), ok("1\n"), "the session kept its state");
  assert.deepEqual(outcome(await d.run("x = 5\nx;")), ok(""), "`;` suppresses the display");
  assert.deepEqual(outcome(await d.run("x  # not here;")), ok("5\n"), "`;` in a comment does not");
  assert.deepEqual(outcome(await d.run(BIG)), ok(pformat(python)), "pretty-printed display");
  const syntax = outcome(await d.run("def ("));
  assert.deepEqual([syntax.error, syntax.exitCode], ["syntax", 1]);
  assert.match(syntax.stderr, /SyntaxError: /);
  assert.deepEqual(outcome(await d.run("raise SystemExit('bye')")), {
    ...ok(""),
    error: "exit",
    exitCode: 1,
    stderr: "bye\n",
  });

  const intr = outcome(await interrupted(d, "while True:\n    pass"));
  assert.deepEqual([intr.error, intr.exitCode], ["interrupt", 130]);
  assert.match(intr.stderr, /^Traceback \(most recent call last\):\n[\s\S]*\nKeyboardInterrupt\n$/);

  assert.deepEqual(outcome(await d.run("async def f():\n    return 42\nawait f()")), ok("42\n"), "top-level await");
  const aintr = outcome(await interrupted(d, "async def spin():\n    while True:\n        pass\nawait spin()"));
  assert.deepEqual([aintr.error, aintr.exitCode], ["interrupt", 130]);
  assert.match(aintr.stderr, /KeyboardInterrupt\n$/);

  const bridged = await served(
    d,
    "r = await echo(x=1)\nprint(r, r.json()['x'])\ntry:\n    (await echo(x=2)).json()\nexcept ValueError as e:\n    print('ValueError')\navailable_tools()",
    (a) => (a.x === 1 ? '{"x": 1}' : '"\\x"'),
  );
  assert.deepEqual(outcome(bridged), ok('{"x": 1} 1\nValueError\necho(*, x: int)\n'), "tool calls");

  // A traceback through a module file in the working directory reads its source lines.
  const viaModule = outcome(await d.run("import mymod\nmymod.boom()"));
  assert.equal(viaModule.error, "exception");
  assert.match(viaModule.stderr, /File ".*mymod\.py", line 4, in boom\n {4}return 1 \/ 0\nZeroDivisionError/);
  writeFileSync(join(cwd, "mymod.py"), "V = 2222\n");
  const reloaded = await d.run("mymod.V", { extra: { reload: ["mymod"] } });
  assert.deepEqual(outcome(reloaded), ok("2222\n"), "reload");
  assert.deepEqual(reloaded.done.reloaded, ["mymod"]);
  const installed = await d.run("import pkgmod\npkgmod.V", { extra: { sysPath: [pkgs], checkLoaded: ["pkgmod"] } });
  assert.deepEqual(outcome(installed), ok("pkg\n"), "package directory");
}

describe("a working directory full of files named like the modules the runner loads", () => {
  for (const { python, skip } of pythons(["3.9", "3.13"])) {
    test(`every kind of run works with hostile, empty and junk files (${python})`, { skip }, async () => {
      const names = await loadedNames(python);
      for (const must of ["token", "tokenize", "linecache", "traceback", "asyncio", "json"]) {
        assert.ok(names.includes(must), `${must} is among the loaded modules: ${names.join(" ")}`);
      }
      const flavours = python === PYTHON ? (["hostile", "empty", "junk"] as const) : (["hostile"] as const);
      for (const flavour of flavours) {
        await everyKindWorks(python, shadowDir(names, flavour)).catch((e: Error) => {
          e.message = `[${flavour}] ${e.message}`;
          throw e;
        });
      }
    });
  }
});

for (const { python, skip } of pythons(["3.9"]))
  test(`PEP 723 installs work in such a directory (pip, offline; ${python})`, { skip }, async () => {
    const wheels = tempDir("pcs-wheels-");
    const wheel = [
      "import sys, zipfile",
      "d = sys.argv[1]",
      "info = 'tinypkg-1.0.dist-info'",
      "with zipfile.ZipFile(d + '/tinypkg-1.0-py3-none-any.whl', 'w') as z:",
      "    z.writestr('tinypkg/__init__.py', 'VERSION = \"1.0\"\\n')",
      "    z.writestr(info + '/METADATA', 'Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 1.0\\n')",
      "    z.writestr(info + '/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')",
      "    z.writestr(info + '/RECORD', '')",
    ].join("\n");
    execFileSync(python, ["-c", wheel, wheels], { cwd: tmpdir() });
    const cwd = shadowDir(await loadedNames(python), "hostile");
    const root = tempDir("pcs-shadow-pkgs-");
    const host = new SupervisorHost({
      env: () => ({ ...process.env, PIP_NO_INDEX: "1", PIP_FIND_LINKS: wheels, PI_PYTHON: python, VIRTUAL_ENV: "" }),
      packages: { envRoot: join(root, "envs"), sessionRoot: join(root, "sessions") },
      spareRunners: () => false,
    });
    try {
      const code = '# /// script\n# dependencies = ["tinypkg==1.0"]\n# ///\nimport tinypkg\ntinypkg.VERSION';
      for (const session of [undefined, "s"]) {
        const r = await host.run({ code, cwd, timeoutMs: 120_000, ...(session ? { session } : {}) });
        assert.equal(r.outcome.status, "success", `${session ?? "fresh"}: ${r.stderr}${r.outcome.message ?? ""}`);
        assert.equal(r.stdout, "1.0\n");
      }
      const after = await host.run({ code: BOOM, cwd, timeoutMs: 20_000, session: "s" });
      assert.match(after.stderr, /\n {4}1\/0\n[\s\S]*ZeroDivisionError: division by zero\n$/);
    } finally {
      await host.shutdown();
    }
  });

describe("a user's token.py", () => {
  const TOKEN = 'API_TOKEN = "sk-123"\n';

  test("fresh and session runs show the user's own error, and the session stays", async () => {
    const cwd = tempDir("pcs-shadow-");
    writeFileSync(join(cwd, "token.py"), TOKEN);
    const fresh = await start({ mode: "fresh", cwd });
    assert.deepEqual(outcome(await fresh.run(BOOM, { filename: "script.py" })), boom("script.py"));
    const d = await start({ mode: "session", cwd });
    assert.deepEqual(outcome(await d.run(BOOM, { filename: "<cell-1>" })), boom("<cell-1>"));
    assert.deepEqual(outcome(await d.run("x = 5\nx;")), ok(""));
    assert.deepEqual(outcome(await d.run("x")), ok("5\n"));
  });

  test("the user's imports see it exactly as `python3 script.py` does", async () => {
    const cwd = tempDir("pcs-shadow-");
    writeFileSync(join(cwd, "token.py"), TOKEN);
    const d = await start({ mode: "session", cwd });
    // The runner has loaded the standard token and tokenize for the traceback and the `;` by now.
    await d.run(BOOM);
    await d.run("x;");
    const mine = "import sys\nprint('tokenize' in sys.modules)\nimport token\nprint(token.API_TOKEN, token.__file__)";
    const expected = plain(PYTHON, cwd, mine);
    assert.deepEqual(outcome(await d.run(mine)), ok(expected.stdout, false));
    assert.equal(expected.stdout, `False\nsk-123 ${join(cwd, "token.py")}\n`);
    // A standard module that imports `token` gets the user's file too, and fails the same way.
    const std = "import tokenize";
    const plainStd = plain(PYTHON, cwd, std);
    assert.notEqual(plainStd.status, 0);
    const r = await d.run(std);
    assert.equal(r.done.error, "exception");
    const lastLine = (s: string) => s.trimEnd().split("\n").pop();
    assert.equal(lastLine(r.stderr), lastLine(plainStd.stderr));
    assert.match(r.stderr, /ImportError: cannot import name 'EXACT_TOKEN_TYPES' from 'token'/);
  });
});

test("standard modules the user blocks or replaces in sys.modules stay so for the user, not for the runner", async () => {
  const d = await start({ mode: "session", cwd: tempDir("pcs-shadow-") });
  const names = ["traceback", "linecache", "tokenize", "token", "pprint", "json", "asyncio", "ast", "inspect"];
  const block = `import sys, types\nfor n in ${JSON.stringify(names)}:\n    sys.modules[n] = None\nsys.modules['re'] = types.ModuleType('re')`;
  assert.deepEqual(outcome(await d.run(block)), ok(""));
  assert.deepEqual(outcome(await d.run(BOOM, { filename: "<cell-2>" })), boom("<cell-2>"));
  assert.deepEqual(outcome(await d.run("x;")), ok(""));
  assert.deepEqual(outcome(await d.run(BIG)), ok(pformat(PYTHON)));
  assert.deepEqual(outcome(await d.run("async def f():\n    return x\nawait f()")), ok("1\n"));
  const check = `import sys\nprint([sys.modules[n] for n in ${JSON.stringify(names)}], sys.modules['re'].__dict__.get('compile'))`;
  assert.deepEqual(outcome(await d.run(check)), ok(`[${names.map(() => "None").join(", ")}] None\n`, false));
});

test("an interrupt while the runner loads its modules leaves the user's modules as they were", async () => {
  const cwd = tempDir("pcs-shadow-");
  writeFileSync(join(cwd, "token.py"), 'API_TOKEN = "sk-123"\n');
  const check = [
    "import sys",
    "print(sys.modules['token'].API_TOKEN, 'asyncio' in sys.modules)",
    "print([f.__name__ for f in sys.meta_path if isinstance(f, type) and f.__name__ == '_StdFinder'])",
  ].join("\n");
  // asyncio takes tens of milliseconds to load: each delay lands before, during or after that.
  for (const delayMs of [0, 5, 20]) {
    const d = await start({ mode: "session", cwd });
    await d.run("import token");
    const mark = d.startRun("async def f():\n    return 1\nawait f()");
    await d.waitFrame((f) => f.type === "started" && f.id === mark.id, 20_000);
    await sleep(delayMs);
    d.signal("SIGINT");
    const r = outcome(await d.finishRun(mark, 20_000));
    assert.ok(r.error === "interrupt" || r.error === null, JSON.stringify(r));
    assert.doesNotMatch(r.stderr, /never awaited/);
    assert.deepEqual(outcome(await d.run(check)), ok("sk-123 False\n[]\n", false), `after ${delayMs} ms`);
    assert.deepEqual(outcome(await d.run("async def f():\n    return 2\nawait f()")), ok("2\n"));
  }
});

describe("without shadowing files, the runner's modules and the user's are the same objects", () => {
  test("the runner's own work adds only built-in modules to sys.modules; imports then get the runner's copies", async () => {
    const d = await start({ mode: "session", cwd: tempDir("pcs-shadow-") });
    assert.deepEqual(outcome(await d.run("import sys\nbase = set(sys.modules)")), ok(""));
    await d.run(BOOM);
    await d.run("x;");
    await d.run(BIG);
    await d.run("def (");
    await d.run("async def f():\n    return 1\nawait f()");
    await served(d, "(await echo(x=1)).json()", () => '{"x": 1}');
    const added = "print(sorted(n for n in set(sys.modules) - base if n not in sys.builtin_module_names))";
    assert.deepEqual(outcome(await d.run(added)), ok("[]\n", false));
    // typing (loaded with asyncio) registers typing.io itself on 3.9-3.11: handed over with it.
    const own =
      "import asyncio, typing, pprint, sys\nown = sys.modules['pcs_imports'].own\nprint(asyncio is own['asyncio'], pprint is own['pprint'])";
    assert.deepEqual(outcome(await d.run(own)), ok("True True\n", false));
    const io = "import sys\nif sys.version_info < (3, 12):  # gone since\n    import typing.io\n1";
    assert.deepEqual(outcome(await d.run(io)), ok("1\n"));
  });

  test("a dataclass displays with its fields after the runner loaded pprint first", async (t) => {
    const d = await start({ mode: "session", cwd: tempDir("pcs-shadow-") });
    await d.run(BIG);
    const code =
      "from dataclasses import dataclass\n@dataclass\nclass P:\n    a: str\n    b: str\nP('x' * 70, 'y' * 70)";
    const expected = execFileSync(
      PYTHON,
      [
        "-c",
        `import pprint\n${code.split("\n").slice(0, -1).join("\n")}\nprint(pprint.pformat(P('x' * 70, 'y' * 70), width=120))`,
      ],
      { cwd: tmpdir(), encoding: "utf8" },
    );
    if (!expected.includes("\n  b=")) return t.skip("pprint lays out dataclasses from Python 3.10 on");
    assert.match(expected, /^P\(a='x+',\n {2}b='y+'\)\n$/);
    assert.deepEqual(outcome(await d.run(code)), ok(expected));
  });

  test("user code and the runner's event loop share asyncio (cancellation is caught by the user's class)", async () => {
    const d = await start({ mode: "session", cwd: tempDir("pcs-shadow-") });
    assert.deepEqual(outcome(await d.run("async def f():\n    return 1\nawait f()")), ok("1\n"));
    const code = [
      "import asyncio, sys",
      "async def g():",
      "    await asyncio.sleep(10)",
      "t = asyncio.ensure_future(g())",
      "await asyncio.sleep(0)",
      "t.cancel()",
      "try:",
      "    await t",
      "except asyncio.CancelledError:",
      "    print('cancelled')",
      "asyncio.get_running_loop() is asyncio.get_event_loop()",
    ].join("\n");
    assert.deepEqual(outcome(await d.run(code)), ok("cancelled\nTrue\n"));
  });
});
