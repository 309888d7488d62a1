// runtime-py/runner.py against real Python processes, real pipes and real signals (contract: docs/protocol.md).
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PYTHON, RUNNER_PATH, RunnerDriver, encodeFrame, isAlive, sleep } from "../helpers/runner-driver.ts";
import { waitUntil } from "../helpers/procs.ts";
import type { DoneFrame, RunResult, StartOptions } from "../helpers/runner-driver.ts";
import { findPython, skipWithout } from "../helpers/pythons.ts";
import { tempDir } from "../helpers/temp-dir.ts";

// Other interpreters, found at run time (test/helpers/pythons.ts); their tests skip without them.
const PY39 = findPython("3.9")?.path;
const PY313 = findPython("3.13")?.path;
const DRIVER_PATH = fileURLToPath(new URL("../helpers/runner-driver.ts", import.meta.url));

const drivers: RunnerDriver[] = [];
after(async () => {
  await Promise.all(drivers.map((d) => d.close()));
});

async function start(opts: StartOptions = {}): Promise<RunnerDriver> {
  const d = await RunnerDriver.start(opts);
  drivers.push(d);
  return d;
}

/** A traceback without the caret lines that 3.11+ add (`    ~~~^^^`), so tests hold on every version. */
function tb(stderr: string): string {
  return stderr.replace(/^ +[~^ ]*\^[~^ ]*\n/gm, "");
}

function py(lines: string[]): string {
  return lines.join("\n") + "\n";
}

function assertDone(r: RunResult, expected: Partial<DoneFrame>): void {
  const { error, exitCode, displayedValue } = r.done;
  assert.deepEqual(
    { error, exitCode, displayedValue, ...expected },
    { error, exitCode, displayedValue },
    `done ${JSON.stringify(r.done)}\nstdout: ${r.stdout.slice(0, 2000)}\nstderr: ${r.stderr.slice(0, 2000)}`,
  );
}

function assertOk(r: RunResult, stdout: string, displayedValue = false): void {
  assert.equal(r.stderr, "", `unexpected stderr: ${r.stderr}`);
  assert.equal(r.stdout, stdout);
  assertDone(r, { error: null, exitCode: 0, displayedValue });
}

/** Sends a run, waits until it started plus `delayMs`, sends one SIGINT to the runner's pid. */
async function interrupted(d: RunnerDriver, code: string, delayMs = 100): Promise<RunResult> {
  const mark = d.startRun(code);
  await d.waitFrame((f) => f.type === "started" && f.id === mark.id);
  await sleep(delayMs);
  d.signal("SIGINT");
  return d.finishRun(mark, 5000);
}

function sigIgnMask(pid: number): bigint {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return BigInt("0x" + /^SigIgn:\s*([0-9a-f]+)$/m.exec(status)![1]);
}
const SIGINT_BIT = 1n << 1n;

describe("start-up and process layout", () => {
  it("sends a ready frame describing the runner", async () => {
    const d = await start({ mode: "session" });
    assert.deepEqual(d.ready, {
      type: "ready",
      protocol: 1,
      pid: d.pid,
      python: d.ready!.python,
      executable: PYTHON,
      mode: "session",
    });
    assert.match(String(d.ready!.python), /^3\.\d+\.\d+$/);
  });

  it("moves the control channel to a close-on-exec fd >= 64 and closes fd 3", async () => {
    const d = await start();
    const r = await d.run(
      py([
        "import os, json, stat, subprocess",
        "def info(fd):",
        "    flags = int(open(f'/proc/self/fdinfo/{fd}').read().split('flags:')[1].split()[0], 8)",
        "    return {'fd': fd, 'cloexec': bool(flags & 0o2000000), 'socket': stat.S_ISSOCK(os.fstat(fd).st_mode)}",
        "try:",
        "    os.fstat(3)",
        "    fd3 = True",
        "except OSError:",
        "    fd3 = False",
        "high = [info(int(f)) for f in os.listdir('/proc/self/fd') if int(f) >= 64]",
        "high = [i for i in high if i['socket']]  # the test environment may leak other fds to us",
        "child = subprocess.run(['sh', '-c', 'ls /proc/$$/fd'], close_fds=False, capture_output=True, text=True)",
        "print(json.dumps({'fd3': fd3, 'high': high, 'child': sorted(map(int, child.stdout.split())),",
        "                  'stdin': os.readlink('/proc/self/fd/0')}))",
      ]),
    );
    assertDone(r, { error: null });
    const info = JSON.parse(r.stdout);
    assert.equal(info.fd3, false);
    // The control channel plus the runner's private duplicates of fd 1 and 2 (for the output drain).
    assert.equal(info.high.length, 3);
    for (const h of info.high) {
      assert.deepEqual(h, { fd: h.fd, cloexec: true, socket: true });
      assert.ok(!info.child.includes(h.fd), `child inherited ${info.child}`);
    }
    assert.ok(!info.child.includes(3), `child inherited ${info.child}`);
    assert.equal(info.stdin, "/dev/null");
  });

  it("sets sys.path[0] to the start directory, hides the runner directory, sets sys.argv", async () => {
    const cwd = tempDir("pcs-runner-");
    writeFileSync(join(cwd, "local_helper.py"), 'VALUE = "from cwd"\n');
    writeFileSync(join(cwd, "data.txt"), "relative file\n");
    mkdirSync(join(cwd, "sub"));
    writeFileSync(join(cwd, "sub", "inner.txt"), "inner file\n");
    const d = await start({ cwd });
    const r = await d.run(
      py([
        "import sys, os, local_helper",
        "print(sys.path[0])",
        "print(local_helper.VALUE)",
        "print(open('data.txt').read(), end='')",
        "print(sys.argv)",
        "try:",
        "    import runner",
        "except ImportError as e:",
        "    print('no runner:', e.name)",
        "os.chdir('sub')",
      ]),
      { filename: "<cell-a>" },
    );
    assertOk(r, `${cwd}\nfrom cwd\nrelative file\n['<cell-a>']\nno runner: runner\n`);
    assert.ok(!r.stdout.includes(dirname(RUNNER_PATH)));
    // The session keeps the working directory, and sys.path[0] stays the start directory.
    const r2 = await d.run(
      py(["print(os.getcwd() == os.path.join(sys.path[0], 'sub'))", "print(open('inner.txt').read(), end='')"]),
    );
    assertOk(r2, "True\ninner file\n");
  });

  it("runs user code in a fresh __main__ module, so pickling user classes works", async () => {
    const d = await start();
    const r = await d.run(
      py([
        "import pickle, sys, __main__",
        "class Point:",
        "    def __init__(self, x): self.x = x",
        "p = pickle.loads(pickle.dumps(Point(3)))",
        "print(__name__, type(p) is Point, p.x, __main__.Point is Point, sys.modules['__main__'] is __main__)",
        "print(sorted(k for k in globals() if not k.startswith('__') or k == '__main__'))",
      ]),
    );
    assertOk(r, "__main__ True 3 True True\n['Point', '__main__', 'p', 'pickle', 'sys']\n");
  });
});

describe("final expression display", () => {
  it("prints a str as text after the script output, line breaks kept", async () => {
    const d = await start();
    assertOk(await d.run(py(["print('first')", "'second\\nthird'"])), "first\nsecond\nthird\n", true);
    assertOk(await d.run(py(["'ends with newline\\n'"])), "ends with newline\n", true);
  });

  it("pretty-prints other values in insertion order", async () => {
    const d = await start();
    assertOk(await d.run("{'b': 1, 'a': [1, 2], 'c': None}"), "{'b': 1, 'a': [1, 2], 'c': None}\n", true);
    assertOk(await d.run("6 * 7"), "42\n", true);
    const r = await d.run("{f'key{i}': 'v' * 20 for i in range(9, 0, -1)}");
    assertDone(r, { error: null, displayedValue: true });
    const lines = r.stdout.trimEnd().split("\n");
    assert.equal(lines.length, 9, r.stdout);
    assert.equal(lines[0], `{'key9': '${"v".repeat(20)}',`);
    assert.equal(lines[8], ` 'key1': '${"v".repeat(20)}'}`);
    // A recursive value goes through pprint too.
    const rec = await d.run("x = [1]\nx.append(x)\nx");
    assertDone(rec, { error: null, displayedValue: true });
    assert.match(rec.stdout, /^\[1, <Recursion on list with id=\d+>\]\n$/);
  });

  it("shows nothing for None and reports displayedValue", async () => {
    const d = await start();
    assertOk(await d.run("None"), "");
    assertOk(await d.run("print('side effect')"), "side effect\n");
    assertOk(await d.run("x = 1"), "");
    assertOk(await d.run(""), "");
  });

  it("suppresses display after a trailing semicolon, but not one in a comment or string", async () => {
    const d = await start();
    assertOk(await d.run("1 + 1;"), "");
    assertOk(await d.run("x = 5\nx;  # done"), "");
    assertOk(await d.run("x = 5; x;"), "");
    assertOk(await d.run("x = 5; x"), "5\n", true);
    assertOk(await d.run("'a;'  # b;"), "a;\n", true);
    assertOk(await d.run("x  # ;"), "5\n", true);
    assertOk(await d.run("(x +\n 1)\n# ;\n"), "6\n", true);
    assertOk(await d.run('s = """one;\ntwo;"""; s'), "one;\ntwo;\n", true);
  });

  it("displays the value of a final await expression", async () => {
    const d = await start();
    const r = await d.run(
      py(["import asyncio", "async def f():", "    await asyncio.sleep(0)", "    return {'v': 1}", "await f()"]),
    );
    assertOk(r, "{'v': 1}\n", true);
  });
});

describe("top-level await", () => {
  it("works in fresh mode", async () => {
    const d = await start({ mode: "fresh" });
    const r = await d.run(py(["import asyncio", "await asyncio.sleep(0.01)", "print('slept')"]));
    assertOk(r, "slept\n");
    assert.deepEqual(await d.waitExit(), { code: 0, signal: null });
  });

  it("runs the script body and a final await on the same loop", async () => {
    const d = await start({ mode: "fresh" });
    const r = await d.run(
      py([
        "import asyncio",
        "async def f():",
        "    await asyncio.sleep(0.01)",
        "    return 'from task'",
        "task = asyncio.create_task(f())",
        "await asyncio.sleep(0)",
        "await task",
      ]),
    );
    assertOk(r, "from task\n", true);
  });

  it("keeps one event loop in a session that runs only during runs", async () => {
    const d = await start();
    const r1 = await d.run(
      py([
        "import asyncio",
        "ticks = []",
        "async def ticker():",
        "    while True:",
        "        ticks.append(1)",
        "        await asyncio.sleep(0.01)",
        "task = asyncio.create_task(ticker())",
        "await asyncio.sleep(0)",
        "len(ticks)",
      ]),
    );
    assertOk(r1, "1\n", true);
    await sleep(100);
    assertOk(await d.run("len(ticks), task.done()"), "(1, False)\n", true); // no loop between runs nor in sync runs
    assertOk(await d.run("await asyncio.sleep(0.1)\nlen(ticks) > 3"), "True\n", true);
    // Code without await runs outside any running loop, so asyncio.run() works, and the session loop survives it.
    assertOk(await d.run("async def five():\n    return 5\nasyncio.run(five())"), "5\n", true);
    assertOk(await d.run("n = len(ticks)\nawait asyncio.sleep(0.05)\nlen(ticks) > n"), "True\n", true);
  });

  it("keeps threads running between runs", async () => {
    const d = await start();
    const r = await d.run(
      py([
        "import threading, time",
        "count = 0",
        "def spin():",
        "    global count",
        "    while True:",
        "        count += 1",
        "        time.sleep(0.005)",
        "threading.Thread(target=spin, daemon=True).start()",
      ]),
    );
    assertOk(r, "");
    await sleep(150);
    assertOk(await d.run("count > 5"), "True\n", true);
  });

  it("cancels the user task on KeyboardInterrupt and lets its cleanup run", async () => {
    const d = await start();
    const mark = d.startRun(
      py([
        "import asyncio",
        "async def main():",
        "    try:",
        "        print('waiting', flush=True)",
        "        await asyncio.sleep(100)",
        "    except asyncio.CancelledError:",
        "        print('cancelled')",
        "        raise",
        "    finally:",
        "        print('cleanup ran')",
        "await main()",
      ]),
    );
    // Interrupt only once the task is inside its try block (a loaded machine may take a while to get there).
    // The whole line, then a moment for the task to reach its await (a signal inside print() is not a cancel).
    assert.ok(await waitUntil(() => d.stdoutText().includes("waiting\n"), 5000), "the task starts waiting");
    await sleep(50);
    d.signal("SIGINT");
    const r = await d.finishRun(mark, 5000);
    assertDone(r, { error: "interrupt", exitCode: 130 });
    assert.equal(r.stdout, "waiting\ncancelled\ncleanup ran\n");
    assert.equal(r.stderr, "KeyboardInterrupt\n");
    // The loop is still usable.
    assertOk(await d.run('import asyncio\nawait asyncio.sleep(0)\n"again"'), "again\n", true);
  });
});

describe("tracebacks", () => {
  it("shows user frames with source lines and no runner frames", async () => {
    const d = await start();
    const r = await d.run(py(["def f():", "    raise ValueError('boom')", "f()"]));
    assertDone(r, { error: "exception", exitCode: 1, displayedValue: false });
    assert.equal(
      tb(r.stderr),
      "Traceback (most recent call last):\n" +
        '  File "<run-1>", line 3, in <module>\n    f()\n' +
        "  File \"<run-1>\", line 2, in f\n    raise ValueError('boom')\n" +
        "ValueError: boom\n",
    );
  });

  it("shows no asyncio or runner frames for an exception in awaited code", async () => {
    const d = await start();
    const r = await d.run(py(["import asyncio", "async def g():", "    raise KeyError('k')", "await g()"]));
    assertDone(r, { error: "exception", exitCode: 1 });
    assert.equal(
      tb(r.stderr),
      "Traceback (most recent call last):\n" +
        '  File "<run-1>", line 4, in <module>\n    await g()\n' +
        "  File \"<run-1>\", line 3, in g\n    raise KeyError('k')\n" +
        "KeyError: 'k'\n",
    );
  });

  it("shows the source line of a function defined in an earlier run", async () => {
    const d = await start();
    assertOk(await d.run(py(["def explode():", "    return 1 / 0  # line from cell 1"]), { filename: "<cell-1>" }), "");
    assertOk(await d.run("import linecache\nlinecache.checkcache()", { filename: "<cell-2>" }), "");
    const r = await d.run("explode()", { filename: "<cell-3>" });
    assertDone(r, { error: "exception", exitCode: 1 });
    assert.match(r.stderr, /File "<cell-3>", line 1, in <module>\n {4}explode\(\)\n/);
    assert.match(r.stderr, /File "<cell-1>", line 2, in explode\n {4}return 1 \/ 0 {2}# line from cell 1\n/);
    assert.doesNotMatch(r.stderr, /runner\.py/);
  });

  it("keeps the source of recent runs, not of every run: past 32 MiB the oldest runs' go", async () => {
    const d = await start();
    assertOk(
      await d.run(py(["def old():", "    return 1 / 0  # line from the first run"]), { filename: "<first>" }),
      "",
    );
    const before = await d.run("old()", { filename: "<control>" });
    assert.match(before.stderr, /File "<first>", line 2, in old\n {4}return 1 \/ 0 {2}# line from the first run\n/);
    // 40 runs of 1 MiB of source each (a comment): 40 MiB sent, more than the runner keeps.
    const filler = `x = 1\n#${"-".repeat(1 << 20)}\n`;
    for (let i = 0; i < 40; i++) assertOk(await d.run(filler, { filename: `<filler-${i}>` }), "");
    assertOk(
      await d.run(py(["def recent():", "    return old()  # line from a recent run"]), { filename: "<recent>" }),
      "",
    );
    const after = await d.run("recent()", { filename: "<last>" });
    assertDone(after, { error: "exception", exitCode: 1 });
    assert.match(after.stderr, /File "<last>", line 1, in <module>\n {4}recent\(\)\n/);
    assert.match(after.stderr, /File "<recent>", line 2, in recent\n {4}return old\(\) {2}# line from a recent run\n/);
    // The first run's file and line are still named; its text went with the oldest sources.
    assert.match(after.stderr, /File "<first>", line 2, in old\nZeroDivisionError/);
    const kept = await d.run("import linecache\nsum(1 for k in linecache.cache if k.startswith('<filler-'))", {
      filename: "<count>",
    });
    const n = Number(kept.stdout.trim());
    assert.ok(n >= 28 && n < 40, `filler sources kept: ${n} of 40`);
  });

  it("prints chained exceptions normally", async () => {
    const d = await start();
    const r = await d.run(
      py([
        "try:",
        "    {}['missing']",
        "except KeyError as e:",
        "    try:",
        "        raise RuntimeError('wrapped') from e",
        "    except RuntimeError:",
        "        raise TypeError('during handling')",
      ]),
    );
    assertDone(r, { error: "exception", exitCode: 1 });
    const parts = r.stderr.split(/\n\n/);
    assert.equal(parts.length, 5, r.stderr);
    assert.match(parts[0], /line 2, in <module>\n {4}\{\}\['missing'\]\n(.*\n)?KeyError: 'missing'$/);
    assert.equal(parts[1], "The above exception was the direct cause of the following exception:");
    assert.match(parts[2], /line 5, in <module>\n.*\nRuntimeError: wrapped$/);
    assert.equal(parts[3], "During handling of the above exception, another exception occurred:");
    assert.match(parts[4], /line 7, in <module>\n.*\nTypeError: during handling\n$/);
    assert.doesNotMatch(r.stderr, /runner\.py/);
  });

  it("shows only the caret view for a syntax error, and runs nothing", async () => {
    const d = await start();
    const r = await d.run(py(["print('never printed')", "x = (1,", "y = 2"]));
    assertDone(r, { error: "syntax", exitCode: 1, displayedValue: false });
    assert.equal(r.stdout, "");
    assert.doesNotMatch(r.stderr, /Traceback/);
    assert.match(r.stderr, /^ {2}File "<run-1>", line \d\n {4}.*\n +\^+\nSyntaxError: [^\n]+\n$/);
    // Compile-stage errors that are not SyntaxError are syntax errors too.
    const r2 = await d.run('x = "\0"');
    assertDone(r2, { error: "syntax", exitCode: 1 });
    assert.doesNotMatch(r2.stderr, /Traceback/);
    // A SyntaxError raised while running is an ordinary exception.
    const r3 = await d.run("compile('(', 'inner', 'exec')");
    assertDone(r3, { error: "exception", exitCode: 1 });
    assert.match(r3.stderr, /^Traceback/);
  });

  it("gives traceback.print_exc() in user code the source lines, also in fresh mode", async () => {
    const d = await start({ mode: "fresh" });
    const r = await d.run(
      py([
        "import traceback",
        "try:",
        "    1 / 0",
        "except ZeroDivisionError:",
        "    traceback.print_exc()",
        "print('survived')",
      ]),
    );
    assertDone(r, { error: null, exitCode: 0 });
    assert.equal(r.stdout, "survived\n");
    assert.match(r.stderr, /File "<run-1>", line 3, in <module>\n {4}1 \/ 0\n/);
  });
});

describe("stdin", () => {
  it("raises EOFError at once on every read; fileno() is 0 (/dev/null) for subprocesses", async () => {
    const d = await start();
    const r = await d.run(
      py([
        "import sys, subprocess",
        'for name, read in [("input", input), ("read", sys.stdin.read), ("readline", sys.stdin.readline),',
        '                   ("readlines", sys.stdin.readlines), ("iterate", lambda: next(iter(sys.stdin))),',
        '                   ("for", lambda: [l for l in sys.stdin]), ("buffer", sys.stdin.buffer.read)]:',
        "    try:",
        "        read()",
        "        print(name, 'returned')",
        "    except EOFError as e:",
        "        print(name, '->', e)",
        "print(sys.stdin.fileno(), subprocess.run(['cat'], capture_output=True, timeout=5).stdout)",
      ]),
    );
    const msg = "interactive input is not supported (code has no stdin); pass data in the code, a file or a tool call";
    const names = ["input", "read", "readline", "readlines", "iterate", "for", "buffer"];
    assertOk(r, names.map((n) => `${n} -> ${msg}\n`).join("") + "0 b''\n");
  });

  it("reports an uncaught EOFError from input() without runner frames", async () => {
    const d = await start();
    const r = await d.run("input('prompt> ')");
    assertDone(r, { error: "exception", exitCode: 1 });
    assert.equal(r.stdout, "prompt> ");
    assert.equal(
      tb(r.stderr),
      "Traceback (most recent call last):\n  File \"<run-1>\", line 1, in <module>\n    input('prompt> ')\n" +
        "EOFError: interactive input is not supported (code has no stdin); pass data in the code, a file or a tool call\n",
    );
  });
});

describe("sys.exit", () => {
  it("ends only the run in a session, which keeps its globals", async () => {
    const d = await start();
    assertOk(await d.run('kept = "still here"'), "");
    const r1 = await d.run("import sys\nprint('before')\nsys.exit(3)\nprint('after')");
    assert.equal(r1.stdout, "before\n");
    assert.equal(r1.stderr, "");
    assertDone(r1, { error: "exit", exitCode: 3, displayedValue: false });
    assertDone(await d.run("sys.exit()"), { error: "exit", exitCode: 0 });
    assertDone(await d.run("raise SystemExit(None)"), { error: "exit", exitCode: 0 });
    const r2 = await d.run("sys.exit('goodbye')");
    assertDone(r2, { error: "exit", exitCode: 1 });
    assert.equal(r2.stderr, "goodbye\n");
    assertOk(await d.run("kept"), "still here\n", true);
    assert.ok(isAlive(d.pid));
    assert.equal(d.exit, null);
  });

  it("sets the process exit status in fresh mode", async () => {
    const d = await start({ mode: "fresh" });
    assertDone(await d.run("import sys\nsys.exit(4)"), { error: "exit", exitCode: 4 });
    assert.deepEqual(await d.waitExit(), { code: 4, signal: null });
    const e = await start({ mode: "fresh" });
    assertDone(await e.run("1 / 0"), { error: "exception", exitCode: 1 });
    assert.deepEqual(await e.waitExit(), { code: 1, signal: null });
  });
});

describe("process death", () => {
  it("os._exit(): no done frame, and output written just before is delivered", async () => {
    const d = await start();
    const mark = d.startRun(
      py([
        "import os, sys",
        "print('printed line')",
        "sys.stderr.write('stderr line\\n')",
        "os.write(1, b'raw bytes')",
        "os._exit(7)",
      ]),
    );
    assert.deepEqual(await d.waitExit(), { code: 7, signal: null });
    await d.outputEnded;
    assert.equal(d.stdoutBytes().subarray(mark.out).toString(), "printed line\nraw bytes");
    assert.equal(d.stderrBytes().subarray(mark.err).toString(), "stderr line\n");
    assert.deepEqual(
      d.frames.map((f) => f.type),
      ["ready", "started"],
    );
  });

  it("segfault: no done frame, the host sees the signal, earlier output arrives", async () => {
    const d = await start();
    d.startRun(py(["import ctypes", "print('before the crash')", "ctypes.string_at(0)"]));
    assert.deepEqual(await d.waitExit(), { code: null, signal: "SIGSEGV" });
    await d.outputEnded;
    assert.equal(d.stdoutText(), "before the crash\n");
    assert.ok(!d.frames.some((f) => f.type === "done"));
  });
});

describe("fork", () => {
  it("a forked child that runs off the end of the script exits without speaking for the runner", async () => {
    const d = await start();
    const r = await d.run(
      py([
        "import os, warnings",
        "# Python 3.12+ warns that fork() in a multi-threaded process (the runner has a reader thread) is risky.",
        "warnings.filterwarnings('ignore', 'This process .* is multi-threaded', DeprecationWarning)",
        "pid = os.fork()",
        "if pid == 0:",
        "    print('child')",
        "else:",
        "    _, status = os.waitpid(pid, 0)",
        "    print('parent; child exit status', os.waitstatus_to_exitcode(status))",
      ]),
    );
    assertOk(r, "child\nparent; child exit status 0\n");
    await sleep(50);
    assert.deepEqual(
      d.frames.map((f) => f.type),
      ["ready", "started", "done"],
    );
    assertOk(await d.run("pid != 0"), "True\n", true);
  });
});

describe("control channel", () => {
  it("EOF on the control channel kills the runner and its process group", async () => {
    const d = await start();
    const r = await d.run("import subprocess\nsubprocess.Popen(['sleep', '30']).pid");
    const child = Number(r.stdout);
    assert.ok(isAlive(child));
    d.control.end();
    assert.deepEqual(await d.waitExit(), { code: null, signal: "SIGKILL" });
    assert.ok(await waitUntil(() => !isAlive(child), 3000), "the background child dies");
  });

  it("a runner never outlives a killed host", async () => {
    const script = [
      `import { RunnerDriver } from ${JSON.stringify(DRIVER_PATH)};`,
      "const d = await RunnerDriver.start({ mode: 'session' });",
      "const r = await d.run(\"import subprocess\\nsubprocess.Popen(['sleep', '30']).pid\");",
      "console.log(JSON.stringify({ runner: d.pid, child: Number(r.stdout) }));",
      "setInterval(() => {}, 1000);",
    ].join("\n");
    const host = spawn(process.execPath, ["--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const line = await new Promise<string>((resolve, reject) => {
      let out = "";
      host.stdout!.on("data", (c: Buffer) => {
        out += c.toString();
        if (out.includes("\n")) resolve(out.split("\n")[0]);
      });
      host.on("exit", () => reject(new Error(`host exited early: ${out}`)));
    });
    const { runner, child } = JSON.parse(line) as { runner: number; child: number };
    assert.ok(isAlive(runner) && isAlive(child));
    host.kill("SIGKILL");
    assert.ok(await waitUntil(() => !isAlive(runner) && !isAlive(child), 3000), "runner and its child die");
  });

  it("answers a malformed frame with fatal and exits", async () => {
    const cases: [Buffer, RegExp][] = [
      [Buffer.concat([Buffer.from([0, 0, 0, 5]), Buffer.from("{oops")]), /bad frame/],
      [encodeFrame({ type: "bogus" }), /unknown frame type 'bogus'/],
      [encodeFrame({ type: "run", id: 1, code: "x", filename: "f" }), /bad run frame/],
      [Buffer.from([0x04, 0, 0, 1]), /exceeds the 64 MiB limit/],
    ];
    await Promise.all(
      cases.map(async ([bytes, message]) => {
        const d = await start();
        d.control.write(bytes);
        const f = await d.waitFrame("fatal");
        assert.match(String(f.message), message);
        assert.deepEqual(await d.waitExit(), { code: 70, signal: null });
      }),
    );
  });

  it("sends fatal, not a user exception, when the runner itself fails", async () => {
    const d = await start();
    // Sabotage the runner's own error reporting: its own failure must not look like the user's. (Standard modules
    // in sys.modules are not the runner's: test/runtime-py/shadowed-modules.test.ts.)
    assertOk(await d.run("import sys\nsys.modules['pcs_runner']._print_exception = None"), "");
    d.startRun("1 / 0");
    const f = await d.waitFrame("fatal");
    assert.match(String(f.message), /^runner internal error/);
    assert.deepEqual(await d.waitExit(), { code: 70, signal: null });
    assert.ok(!d.frames.some((x) => x.type === "done" && x.id === "r2"));
  });

  it("exits with status 0 on shutdown", async () => {
    const d = await start();
    d.send({ type: "shutdown" });
    assert.deepEqual(await d.waitExit(), { code: 0, signal: null });
  });

  it("a fresh runner takes exactly one run", async () => {
    const d = await start({ mode: "fresh" });
    d.startRun("import time\ntime.sleep(5)");
    d.startRun("1");
    const f = await d.waitFrame("fatal");
    assert.match(String(f.message), /exactly one run/);
    assert.deepEqual(await d.waitExit(), { code: 70, signal: null });
  });
});

describe("SIGINT", () => {
  it("interrupts a busy loop; the session keeps its globals and pid", async () => {
    const d = await start();
    assertOk(await d.run("x = 41"), "");
    const r = await interrupted(d, "while True:\n    pass");
    assertDone(r, { error: "interrupt", exitCode: 130, displayedValue: false });
    // 3.9-3.10 may name the `pass` line, newer versions the `while` line.
    assert.match(
      tb(r.stderr),
      /^Traceback \(most recent call last\):\n {2}File "<run-2>", line [12], in <module>\n.*\nKeyboardInterrupt\n$/,
    );
    assertOk(await d.run("import os\nx + 1, os.getpid()"), `(42, ${d.pid})\n`, true);
  });

  it("interrupts time.sleep at once", async () => {
    const d = await start();
    const t0 = Date.now();
    const r = await interrupted(d, "import time\ntime.sleep(100)");
    assertDone(r, { error: "interrupt", exitCode: 130 });
    assert.ok(Date.now() - t0 < 2000);
    assert.match(tb(r.stderr), /time\.sleep\(100\)\nKeyboardInterrupt\n$/);
    assertOk(await d.run('"alive"'), "alive\n", true);
  });

  it("a script that catches KeyboardInterrupt ends normally", async () => {
    const d = await start();
    const r = await interrupted(
      d,
      py(["import time", "try:", "    time.sleep(100)", "except KeyboardInterrupt:", "    print('caught')", "'fine'"]),
    );
    assertOk(r, "caught\nfine\n", true);
  });

  it("is ignored by an idle session", async () => {
    const d = await start();
    assert.equal(sigIgnMask(d.pid) & SIGINT_BIT, SIGINT_BIT);
    assertOk(await d.run("y = 1"), "");
    assert.equal(sigIgnMask(d.pid) & SIGINT_BIT, SIGINT_BIT);
    d.signal("SIGINT");
    d.signalGroup("SIGINT");
    await sleep(100);
    assert.equal(d.exit, null);
    assertOk(await d.run("y"), "1\n", true);
  });

  it("installs the handler for a run even when SIGINT was inherited as ignored", async () => {
    const d = await start({
      command: "/bin/sh",
      args: ["-c", 'trap "" INT; exec "$0" "$@"', PYTHON, RUNNER_PATH, "--mode", "session"],
    });
    assert.equal(d.ready!.pid, d.pid); // exec kept the pid
    const r = await interrupted(
      d,
      "import signal, time\nprint(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\ntime.sleep(100)",
    );
    assertDone(r, { error: "interrupt", exitCode: 130 });
    assert.equal(r.stdout, "True\n");
    assertOk(await d.run('"still alive"'), "still alive\n", true);
  });

  it("survives interrupts that land around the end of runs", async () => {
    const d = await start();
    await d.run("import os, threading, time");
    const seen = new Set<string | null>();
    for (let i = 0; i < 100; i++) {
      // The SIGINT arrives while the run ends: in user code, in the runner's own code, or after it.
      const delay = 0.0005 + (i % 50) * 0.00003;
      const r = await d.run(
        py([
          "t0 = time.perf_counter()",
          `threading.Thread(target=lambda: (time.sleep(${delay}), os.kill(os.getpid(), 2))).start()`,
          "while time.perf_counter() < t0 + 0.001: pass",
          i % 2 ? "x = 1" : '"v"',
        ]),
      );
      assert.ok(r.done.error === null || r.done.error === "interrupt", JSON.stringify(r.done));
      seen.add(r.done.error);
      await sleep(2);
    }
    assert.ok(seen.has(null));
    assert.ok(!d.frames.some((f) => f.type === "fatal"));
    assertOk(await d.run('"alive"'), "alive\n", true);
  });

  it("writes the interrupt's traceback in one piece, so the host wakes once for it", async () => {
    const d = await start();
    // A stderr of the user's that counts the runner's writes to it (the runner prints to sys.stderr).
    const setup = py([
      "import sys",
      "class Counting:",
      "    def __init__(self, inner): self.inner, self.writes = inner, []",
      "    def write(self, s): self.writes.append(s); return self.inner.write(s)",
      "    def flush(self): self.inner.flush()",
      "sys.stderr = Counting(sys.stderr)",
    ]);
    assertOk(await d.run(setup), "");
    const r = await interrupted(d, "while True:\n    pass", 20);
    assertDone(r, { error: "interrupt", exitCode: 130 });
    assert.match(tb(r.stderr), /^Traceback \(most recent call last\):\n[^]*\nKeyboardInterrupt\n$/);
    const writes = await d.run("w = sys.stderr.writes; sys.stderr = sys.stderr.inner; len(w), ''.join(w) == w[0]");
    assertOk(writes, "(1, True)\n", true);
  });

  it("interrupts a fresh run, which exits with 130", async () => {
    const d = await start({ mode: "fresh" });
    const r = await interrupted(d, "import time\ntime.sleep(100)");
    assertDone(r, { error: "interrupt", exitCode: 130 });
    assert.deepEqual(await d.waitExit(), { code: 130, signal: null });
  });
});

describe("output and done ordering", () => {
  it("delivers every byte of print, os.write and subprocess output before done", async () => {
    const d = await start();
    const r = await d.run(
      py([
        "import os, subprocess, sys",
        "line = 'p' * 1023 + '\\n'",
        "for _ in range(2560):",
        "    print(line, end='')",
        "view = memoryview(b'w' * 2_500_000)",
        "while view:",
        "    view = view[os.write(1, view):]",
        "subprocess.run(['echo', 'hi from echo'])",
        "sys.stderr.write('e' * 300_000 + '\\n')",
        "os.write(2, b'raw stderr\\n');",
      ]),
    );
    assertDone(r, { error: null, exitCode: 0 });
    assert.equal(r.stdoutBytes.length, 2560 * 1024 + 2_500_000 + "hi from echo\n".length);
    assert.ok(r.stdout.endsWith("w".repeat(100) + "hi from echo\n"));
    assert.equal(r.stderr, "e".repeat(300_000) + "\nraw stderr\n");
  });

  // Node reads up to its 64 KiB high-water mark into a paused stream; the rest stays in the kernel, unread.
  it("waits for a host that reads slowly before sending done", async () => {
    const d = await start();
    d.pauseOutput();
    const mark = d.startRun(
      py([
        "import subprocess, sys",
        "print('o' * 100_000)",
        "sys.stderr.write('e' * 100_000 + '\\n')",
        "subprocess.run(['echo', 'from echo']);",
      ]),
    );
    await d.waitFrame("started");
    await sleep(150);
    assert.ok(!d.frames.some((f) => f.type === "done"), "done was sent while output was unread");
    d.resumeOutput();
    const r = await d.finishRun(mark);
    assertDone(r, { error: null, exitCode: 0 });
    assert.equal(r.stdout, "o".repeat(100_000) + "\nfrom echo\n");
    assert.equal(r.stderr, "e".repeat(100_000) + "\n");
  });

  it("keeps waiting for a stalled host: giving up would hand the output to the next run", async () => {
    const d = await start();
    d.pauseOutput();
    const mark = d.startRun("print('x' * 100_000)");
    await d.waitFrame("started");
    await sleep(800);
    assert.ok(!d.frames.some((f) => f.type === "done"), "done went out while the host had not read the output");
    d.resumeOutput();
    const r = await d.finishRun(mark);
    assert.equal(r.stdoutBytes.length, 100_001, "all output arrived before done");
  });

  it("bounds the wait at about 250 ms when a subprocess keeps writing", async () => {
    const d = await start();
    const mark = d.startRun(
      "import subprocess\nsubprocess.Popen(['sh', '-c', 'while :; do printf %0999d 0; done'], stderr=subprocess.DEVNULL);",
    );
    await d.waitFrame("started");
    const t0 = Date.now();
    const done = await d.waitFrame((f) => f.type === "done" && f.id === mark.id);
    const elapsed = Date.now() - t0;
    assert.equal(done.error, null);
    assert.ok(elapsed < 2000, `done after ${elapsed} ms`);
    d.signalGroup("SIGKILL");
  });

  it("watches the queue closely for 2 ms, then sleeps a tenth of the wait so far (at most 2 ms)", async () => {
    // The host is often busy for a millisecond before it reads: `done` must not wait for a long sleep to end then.
    const d = await start();
    const r = await d.run(
      "import sys\nr = sys.modules['pcs_runner']\n[r._drain_pause(t) for t in (0, 0.0015, 0.002, 0.005, 0.02, 1)]",
    );
    assertOk(r, "[None, None, 0.0002, 0.0005, 0.002, 0.002]\n", true);
  });

  it("passes invalid UTF-8 from os.write through untouched", async () => {
    const d = await start();
    const r = await d.run("import os\nos.write(1, b'ok \\xff\\xfe end\\n');");
    assertDone(r, { error: null });
    assert.deepEqual(r.stdoutBytes, Buffer.from([...Buffer.from("ok "), 0xff, 0xfe, ...Buffer.from(" end\n")]));
  });

  it("prints lone surrogates with backslash escapes instead of failing", async () => {
    const d = await start();
    const r = await d.run("import sys\nprint('lone \\ud800 here')\nprint('err \\udcff', file=sys.stderr)");
    assertDone(r, { error: null, exitCode: 0 });
    assert.equal(r.stdout, "lone \\ud800 here\n");
    assert.equal(r.stderr, "err \\udcff\n");
  });
});

describe("fresh mode shutdown", () => {
  it("waits for non-daemon threads and runs atexit handlers before done", async () => {
    const d = await start({ mode: "fresh" });
    const r = await d.run(
      py([
        "import atexit, threading, time",
        "def work():",
        "    time.sleep(0.2)",
        "    print('thread finished')",
        "threading.Thread(target=work).start()",
        "atexit.register(print, 'atexit ran')",
        "print('main done')",
      ]),
    );
    assertOk(r, "main done\nthread finished\natexit ran\n");
    assert.deepEqual(await d.waitExit(), { code: 0, signal: null });
  });

  it("the wait for threads is interruptible", async () => {
    const d = await start({ mode: "fresh" });
    const r = await interrupted(
      d,
      "import threading, time\nthreading.Thread(target=time.sleep, args=(100,)).start()",
      200,
    );
    assertDone(r, { error: "interrupt", exitCode: 130 });
    assert.match(r.stderr, /KeyboardInterrupt\n$/);
    assert.deepEqual(await d.waitExit(), { code: 130, signal: null });
  });
});

describe("other interpreters", () => {
  it("fresh mode on Python 3.9", { skip: skipWithout("3.9") }, async () => {
    const d = await start({ mode: "fresh", python: PY39 });
    assert.match(String(d.ready!.python), /^3\.9\./);
    const r = await d.run(py(["import asyncio", "await asyncio.sleep(0)", 'print("py39")', '{"b": 1, "a": 2}']));
    assertOk(r, "py39\n{'b': 1, 'a': 2}\n", true);
    assert.deepEqual(await d.waitExit(), { code: 0, signal: null });
    const e = await start({ mode: "fresh", python: PY39 });
    const r2 = await e.run("def f():\n    return 1 / 0\nf()");
    assertDone(r2, { error: "exception", exitCode: 1 });
    assert.match(r2.stderr, /line 2, in f\n {4}return 1 \/ 0\nZeroDivisionError/);
    assert.doesNotMatch(r2.stderr, /runner\.py/);
  });

  it("a session on Python 3.13", { skip: skipWithout("3.13") }, async () => {
    const d = await start({ mode: "session", python: PY313 });
    assert.match(String(d.ready!.python), /^3\.13\./);
    assertOk(await d.run("import asyncio\nn = 0\nasync def inc():\n    global n\n    n += 1\nawait inc()"), "");
    assertOk(await d.run("await inc()\nn"), "2\n", true);
    const r = await d.run('def g():\n    raise ValueError("x")\ng()');
    assertDone(r, { error: "exception", exitCode: 1 });
    assert.match(r.stderr, /line 2, in g\n {4}raise ValueError\("x"\)\n.*ValueError: x\n$/s);
    const ri = await interrupted(d, "import time\ntime.sleep(100)");
    assertDone(ri, { error: "interrupt", exitCode: 130 });
    assertDone(await d.run("import sys\nsys.exit(5)"), { error: "exit", exitCode: 5 });
    assertOk(await d.run("n;"), "");
    assertOk(await d.run("n"), "2\n", true);
  });
});
