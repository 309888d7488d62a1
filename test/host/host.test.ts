// Each semantic of the core issue against real Python processes, through the supervisor host (actors + machines).
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { SupervisorHost, type RunRequestInput } from "../../host/host.ts";
import { pidAlive, waitUntil } from "../helpers/procs.ts";
import { PYTHON } from "../helpers/pythons.ts";
import { tempDir } from "../helpers/temp-dir.ts";

let host: SupervisorHost;
let cwd: string;
const run = (code: string, extra: Partial<RunRequestInput> = {}, signal?: AbortSignal) =>
  host.run({ code, cwd, timeoutMs: 20_000, ...extra }, signal ? { signal } : {});

before(() => {
  cwd = tempDir("pcs-host-");
  host = new SupervisorHost({ limits: { graceMs: 500 } });
});
after(async () => {
  await host.shutdown();
});

describe("final expression", () => {
  test("a str prints as text after the script's output, line breaks kept", async () => {
    const r = await run('print("first")\n"a\\nb"');
    assert.equal(r.outcome.status, "success");
    assert.equal(r.stdout, "first\na\nb\n");
    assert.equal(r.outcome.displayedValue, true);
  });
  test("other values are pretty-printed at width 120 in insertion order", async () => {
    const value = "{'zeta': 1, 'alpha': ['x' * 30] * 4, 'mid': {'b': 2, 'a': 1}}";
    const r = await run(value);
    const expected = execFileSync(
      PYTHON,
      ["-c", `import pprint; print(pprint.pformat(${value}, width=120, sort_dicts=False))`],
      { encoding: "utf8" },
    );
    assert.equal(r.stdout, expected);
    assert.match(r.stdout, /^\{'zeta': 1,\n 'alpha'/, "insertion order, wrapped at 120");
  });
  test("None prints nothing; a trailing ; suppresses the value", async () => {
    const none = await run("None");
    assert.equal(none.stdout, "");
    assert.equal(none.outcome.displayedValue, false);
    const quiet = await run("1 + 1;");
    assert.equal(quiet.stdout, "");
    assert.equal(quiet.outcome.displayedValue, false);
  });
});

describe("top-level await", () => {
  test("works in a fresh run", async () => {
    const r = await run("import asyncio\nawait asyncio.sleep(0.01)\nawait asyncio.sleep(0, result=7)");
    assert.equal(r.stdout, "7\n");
  });
  test("a task created in one session run continues in the next run that awaits", async () => {
    await run(
      "import asyncio\nticks = []\nasync def tick():\n    while True:\n        ticks.append(1)\n        await asyncio.sleep(0.01)\nt = asyncio.create_task(tick())\nawait asyncio.sleep(0.05)",
      { session: "aw" },
    );
    const first = await run("len(ticks)", { session: "aw" });
    await new Promise((r) => setTimeout(r, 100));
    const idle = await run("len(ticks)", { session: "aw" });
    assert.equal(idle.stdout, first.stdout, "the loop does not run between runs");
    const later = await run("await asyncio.sleep(0.1)\nlen(ticks) > " + first.stdout.trim(), { session: "aw" });
    assert.equal(later.stdout, "True\n");
  });
  test("threads keep running between runs", async () => {
    await run(
      "import threading, time\nn = [0]\ndef spin():\n    while True:\n        n[0] += 1\n        time.sleep(0.01)\nthreading.Thread(target=spin, daemon=True).start()",
      { session: "th" },
    );
    const a = Number((await run("n[0]", { session: "th" })).stdout);
    await new Promise((r) => setTimeout(r, 150));
    const b = Number((await run("n[0]", { session: "th" })).stdout);
    assert.ok(b > a + 3, `thread advanced between runs (${a} -> ${b})`);
  });
});

describe("paths", () => {
  test("relative paths and local imports resolve from cwd; sys.path[0] is cwd; argv[0] names the script", async () => {
    writeFileSync(join(cwd, "helper_mod.py"), "VALUE = 'from helper'\n");
    writeFileSync(join(cwd, "data.txt"), "payload");
    const r = await run(
      "import sys, helper_mod\nprint(helper_mod.VALUE)\nprint(open('data.txt').read())\nprint(sys.path[0])\nprint(sys.argv[0])",
    );
    assert.equal(r.stdout, `from helper\npayload\n${cwd}\nscript.py\n`);
  });
  test("a session keeps its current directory across runs", async () => {
    await run("import os\nos.makedirs('sub', exist_ok=True)\nos.chdir('sub')", { session: "cd" });
    const r = await run("import os\nos.getcwd()", { session: "cd" });
    assert.equal(r.stdout, `${join(cwd, "sub")}\n`);
  });
});

describe("errors", () => {
  test("tracebacks show the user's lines and source, no runner frames", async () => {
    const r = await run("def f():\n    return 1 / 0\n\nf()");
    assert.equal(r.outcome.status, "runtime_error");
    assert.equal(r.outcome.exitCode, 1);
    assert.match(r.stderr, /File "script\.py", line 4, in <module>\n\s+f\(\)/);
    assert.match(r.stderr, /line 2, in f\n\s+return 1 \/ 0/);
    assert.match(r.stderr, /ZeroDivisionError: division by zero/);
    assert.doesNotMatch(r.stderr, /runner\.py/);
  });
  test("a syntax error shows the caret view", async () => {
    const r = await run("x = (1,\nprint('never')");
    assert.equal(r.outcome.status, "runtime_error");
    assert.match(r.stderr, /SyntaxError/);
    assert.doesNotMatch(r.stderr, /runner\.py|Traceback/);
    assert.equal(r.stdout, "");
  });
  test("sys.exit(n) ends only the run; the session keeps its state", async () => {
    await run("kept = 5", { session: "ex" });
    const r = await run("import sys\nprint('before')\nsys.exit(3)", { session: "ex" });
    assert.equal(r.outcome.status, "runtime_error");
    assert.equal(r.outcome.exitCode, 3);
    assert.equal(r.stdout, "before\n");
    assert.equal(r.outcome.session?.isLost, false);
    const again = await run("kept", { session: "ex" });
    assert.equal(again.stdout, "5\n");
    const zero = await run("import sys\nsys.exit(0)", { session: "ex" });
    assert.equal(zero.outcome.status, "success");
  });
  test("os._exit ends the session: the result says it was lost, and output before it is kept", async () => {
    await run("x = 1", { session: "osx" });
    const r = await run("import os, sys\nprint('last words', flush=True)\nos._exit(7)", { session: "osx" });
    assert.equal(r.outcome.session?.isLost, true);
    assert.equal(r.outcome.exitCode, 7);
    assert.equal(r.outcome.status, "runtime_error");
    assert.equal(r.stdout, "last words\n");
    const next = await run("'x' in globals()", { session: "osx" });
    assert.equal(next.stdout, "False\n");
    assert.equal(next.outcome.session?.incarnation, 2);
    assert.equal(next.outcome.session?.ordinal, 1);
    assert.equal(next.outcome.session?.replacedLost, true);
  });
  test("a segfault loses the session with its signal", async () => {
    const r = await run("import ctypes\nprint('about to crash', flush=True)\nctypes.string_at(0)", { session: "seg" });
    assert.equal(r.outcome.session?.isLost, true);
    assert.equal(r.outcome.signal, "SIGSEGV");
    assert.equal(r.stdout, "about to crash\n");
  });
  test("input() and stdin reads fail promptly with EOFError", async () => {
    const t0 = Date.now();
    const r = await run(
      "try:\n    input('name? ')\nexcept EOFError as e:\n    print('EOF', type(e).__name__)\nimport sys\ntry:\n    sys.stdin.read()\nexcept EOFError:\n    print('read EOF')",
    );
    assert.ok(Date.now() - t0 < 5000);
    assert.match(r.stdout, /EOF EOFError\nread EOF\n$/);
  });
  test("through the real spawn, stdin is /dev/null: a subprocess reading it gets EOF at once", async () => {
    const code =
      "import os, subprocess\nprint(os.readlink('/proc/self/fd/0'))\nc = subprocess.run(['cat'], capture_output=True, timeout=3)\nprint(c.returncode, c.stdout)";
    for (const extra of [{}, { session: "stdin" }]) {
      const t0 = Date.now();
      const r = await run(code, extra);
      assert.equal(r.stdout, "/dev/null\n0 b''\n", `${JSON.stringify(extra)}: ${r.stderr}`);
      assert.ok(Date.now() - t0 < 3000, "cat ended at once");
    }
  });
  test("a missing interpreter is a setup_error", async () => {
    const h = new SupervisorHost({ env: () => ({ ...process.env, PI_PYTHON: "/nonexistent/python3" }) });
    const r = await h.run({ code: "1", cwd, timeoutMs: 5000 });
    assert.equal(r.outcome.status, "setup_error");
    assert.match(r.outcome.message ?? "", /\/nonexistent\/python3/);
    await h.shutdown();
  });
  test("a bad cwd is a setup_error", async () => {
    const r = await run("1", { cwd: join(cwd, "does-not-exist") });
    assert.equal(r.outcome.status, "setup_error");
    assert.match(r.outcome.message ?? "", /does not exist/);
  });
});

describe("output", () => {
  test("raw fd writes, subprocess output and invalid UTF-8 are captured in order", async () => {
    const r = await run(
      "import os, subprocess, sys\nprint('a')\nos.write(1, b'b\\n')\nsubprocess.run(['echo', 'c'])\nos.write(1, b'\\xff\\n')\nos.write(2, b'err\\n');",
    );
    assert.equal(r.stdout, "a\nb\nc\n\ufffd\n");
    assert.equal(r.stderr, "err\n");
    assert.equal(r.stdoutBytes, 8);
  });
  test("large output arrives whole before the result", async () => {
    const r = await run("import sys\nfor i in range(20000):\n    print('x' * 99)");
    assert.equal(r.stdoutBytes, 2_000_000);
    assert.equal(r.stdout.length, 2_000_000);
  });
});

describe("deadline and cancellation", () => {
  test("a timeout interrupts, the session keeps its state", async () => {
    await run("value = 42", { session: "to" });
    const r = await run("import time\nprint('sleeping', flush=True)\ntime.sleep(100)", {
      session: "to",
      timeoutMs: 300,
    });
    assert.equal(r.outcome.status, "timeout");
    assert.equal(r.outcome.killed, false);
    assert.equal(r.outcome.session?.isLost, false);
    assert.match(r.stderr, /KeyboardInterrupt/);
    assert.equal(r.stdout, "sleeping\n");
    assert.equal((await run("value", { session: "to" })).stdout, "42\n");
  });
  test("a swallowed interrupt: grace, then the process tree is killed and the session is lost", async () => {
    const first = await run("import os\nos.getpid()", { session: "sw" });
    const pid = Number(first.stdout);
    const r = await run(
      "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except KeyboardInterrupt:\n        print('caught', flush=True)",
      { session: "sw", timeoutMs: 300 },
    );
    assert.equal(r.outcome.status, "timeout");
    assert.equal(r.outcome.killed, true);
    assert.equal(r.outcome.session?.isLost, true);
    assert.equal(r.stdout, "caught\n");
    assert.ok(await waitUntil(() => !pidAlive(pid)));
  });
  test("cancellation via the abort signal", async () => {
    await run("y = 1", { session: "cx" });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    const r = await run("import time\ntime.sleep(30)", { session: "cx" }, ac.signal);
    assert.equal(r.outcome.status, "cancelled");
    assert.equal(r.outcome.session?.isLost, false);
    assert.equal((await run("y", { session: "cx" })).stdout, "1\n");
  });
  test("a signal aborted before the run starts cancels it without running the code", async () => {
    const ac = new AbortController();
    ac.abort();
    const marker = join(cwd, "should-not-exist");
    const r = await run(`open(${JSON.stringify(marker)}, 'w').write('x')`, {}, ac.signal);
    assert.equal(r.outcome.status, "cancelled");
  });
  test("SIGINT between runs does not kill an idle session", async () => {
    const pid = Number((await run("import os\nos.getpid()", { session: "ig" })).stdout);
    process.kill(pid, "SIGINT");
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(pidAlive(pid));
    assert.equal((await run("1", { session: "ig" })).stdout, "1\n");
  });
});

describe("sessions", () => {
  test("one run at a time: a second run while one is active is a setup_error", async () => {
    const slow = run("import time\ntime.sleep(0.5)\n'slow'", { session: "busy" });
    await new Promise((r) => setTimeout(r, 100));
    const second = await run("1", { session: "busy" });
    assert.equal(second.outcome.status, "setup_error");
    assert.match(second.outcome.message ?? "", /busy/);
    assert.equal((await slow).stdout, "slow\n");
  });
  test("reset starts the session fresh", async () => {
    await run("z = 1", { session: "rs" });
    const r = await run("'z' in globals()", { session: "rs", reset: true });
    assert.equal(r.stdout, "False\n");
    assert.equal(r.outcome.session?.incarnation, 2);
    assert.equal(r.outcome.session?.ordinal, 1);
    assert.equal(r.outcome.session?.started, true);
  });
  test("a fresh run's background children die with it", async () => {
    const r = await run("import subprocess\np = subprocess.Popen(['sleep', '1000'])\np.pid");
    const child = Number(r.stdout);
    assert.ok(child > 0);
    assert.ok(await waitUntil(() => !pidAlive(child)), "background child was stopped");
  });
  test("no Python process remains after shutdown", async () => {
    const h = new SupervisorHost();
    const pids: number[] = [];
    for (const s of ["a", "b"])
      pids.push(Number((await h.run({ code: "import os\nos.getpid()", cwd, timeoutMs: 5000, session: s })).stdout));
    const bg = Number(
      (
        await h.run({
          code: "import subprocess\nsubprocess.Popen(['sleep', '1000']).pid",
          cwd,
          timeoutMs: 5000,
          session: "a",
        })
      ).stdout,
    );
    await h.shutdown();
    assert.ok(await waitUntil(() => [...pids, bg].every((p) => !pidAlive(p))), "all processes gone");
  });
});
