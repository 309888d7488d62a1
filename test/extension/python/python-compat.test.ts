// pi-python's details a user of it relies on, each through a real Pi session (faux model): `interruptGraceMs: 0`
// turns the automatic kill off (a wedged cell waits for /python-restart), the old `~/.pi/pi-python/settings.json`
// moves to its new place (and /python-status warns when it cannot), the project files live in Pi's CONFIG_DIR_NAME,
// a bad `--python` is said at start and discovery goes on, and input() says that interactive input is not supported;
// also pi-python's variables and file keys, the timeout clamp, live output, serialized calls and a dead kernel replaced.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CONFIG_DIR_NAME, getAgentDir } from "@earendil-works/pi-coding-agent";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { callAs } from "../../helpers/notebook.ts";
import { waitUntil } from "../../helpers/procs.ts";
import { useAgentDir } from "../../../store/agent-dir.ts";
import { piPythonSettingsPaths, projectSettingsPath } from "../../../store/settings.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

/** What `fn` printed on stdout and stderr (commands print there in Pi's print mode; start-up warnings too). Every
 * write still goes through: the test runner reports on the same stream. */
async function printed(fn: () => Promise<unknown>): Promise<string> {
  const out: string[] = [];
  const [write, writeErr] = [process.stdout.write.bind(process.stdout), process.stderr.write.bind(process.stderr)];
  const keep = (to: typeof write) =>
    ((chunk: string | Uint8Array, ...rest: unknown[]) => (
      out.push(String(chunk)),
      to(chunk, ...(rest as []))
    )) as never;
  process.stdout.write = keep(write);
  process.stderr.write = keep(writeErr);
  try {
    await fn();
  } finally {
    process.stdout.write = write;
    process.stderr.write = writeErr;
  }
  return out.join("");
}

/** Resolves once `path` exists (the cell writes it): the condition the test waits for, polled. Fails instead of
 * waiting forever when the call it belongs to ended first. */
async function fileAppears(path: string, call: Promise<unknown>): Promise<void> {
  let ended = false;
  void call.finally(() => (ended = true));
  await waitUntil(() => existsSync(path) || ended, Infinity);
  if (!existsSync(path)) throw new Error(`the call ended before ${path} was written`);
}

/** A cell that catches the timeout's KeyboardInterrupt (writing `marker`), then goes on until `release` exists. */
const stubborn = (marker: string, release: string | undefined) =>
  [
    "try:",
    "    import os, time",
    "    while True: time.sleep(0.02)",
    "except KeyboardInterrupt:",
    "    import os, time",
    `    open(${JSON.stringify(marker)}, 'w').write('interrupted')`,
    release
      ? `while not os.path.exists(${JSON.stringify(release)}): time.sleep(0.02)`
      : "while True:\n    try: time.sleep(0.02)\n    except KeyboardInterrupt: pass",
    "kept = 'still here'",
    "print('finished after the interrupt')",
  ].join("\n");

const env = (vars: Record<string, string | undefined>) => {
  const old = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(vars))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  return () => {
    for (const [k, v] of Object.entries(old))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  };
};

describe("pi-python's interruptGraceMs: 0 (no automatic kill)", () => {
  let pi: PiHarness;
  let restore: () => void;
  const dir = tempDir("pcs-nokill-");
  before(async () => {
    restore = env({ PI_CODE_EXECUTION_TOOLS: "code_execution,python", PI_PYTHON_INTERRUPT_GRACE_MS: "0" });
    pi = await startPi();
    // The kernel is up before the timed cells: a 1 s deadline must land in their loop, not in its start-up.
    await callAs(pi, [["python", { cells: [{ code: "import os, time" }] }]]);
  });
  after(async () => {
    await pi.dispose();
    restore();
  });

  test("interruptGraceMs 0: a cell that catches the timeout's interrupt is never killed and keeps its namespace", async () => {
    const marker = join(dir, "a.interrupted");
    const release = join(dir, "a.release");
    const done = callAs(pi, [["python", { timeout: 1, cells: [{ code: stubborn(marker, release) }] }]]);
    await fileAppears(marker, done);
    // The old behaviour killed the kernel right after the interrupt: the cell would never see this file.
    writeFileSync(release, "");
    const [r] = await done;
    assert.equal(textOf(r), "[timed out]\n\n── cell 1/1 ──\nstdout: finished after the interrupt");
    assert.equal(r.details.killed, false);
    assert.equal(r.details.timedOut, true);
    const [after] = await callAs(pi, [["python", { cells: [{ code: "kept" }] }]]);
    assert.equal(textOf(after), "── cell 1/1 ──\n=> 'still here'");
  });

  test("interruptGraceMs 0: /python-restart ends a cell that waits without a kill, and starts an empty kernel", async () => {
    const marker = join(dir, "b.interrupted");
    const done = callAs(pi, [["python", { timeout: 1, cells: [{ code: stubborn(marker, undefined) }] }]]);
    await fileAppears(marker, done);
    const said = await printed(() => pi.session.prompt("/python-restart"));
    assert.match(
      said,
      /The python kernel \(session "notebook"\) restarted: Python 3\.\d+\.\d+, pid \d+; its namespace is empty\./,
    );
    const [r] = await done;
    assert.equal(r.isError, true);
    assert.equal(r.details.killed, true);
    assert.match(textOf(r), /^\[timed out\] \[killed\]\n/);
    const [next] = await callAs(pi, [["python", { cells: [{ code: "'kept' in globals()" }] }]]);
    assert.equal(textOf(next), "── cell 1/1 ──\n=> False");
  });

  test("interruptGraceMs 0: /python-restart during a cell that ignores SIGINT and has not timed out still returns", async () => {
    // Fixed: the restart's close only interrupted a run under no-kill limits, so code that ignored SIGINT kept the
    // restart (and the call) waiting for ever.
    const marker = join(dir, "c.started");
    const code = `import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nopen(${JSON.stringify(marker)}, 'w').close()\nwhile True: time.sleep(0.02)`;
    const done = callAs(pi, [["python", { timeout: 600, cells: [{ code: "doomed = 1" }, { code }] }]]);
    await fileAppears(marker, done);
    const said = await printed(() => pi.session.prompt("/python-restart"));
    assert.match(said, /The python kernel \(session "notebook"\) restarted: Python 3\.\d+\.\d+, pid \d+/);
    const [r] = await done;
    assert.equal(r.isError, true);
    assert.equal(r.details.killed, true);
    assert.equal(r.details.timedOut, false);
    assert.match(
      textOf(r),
      /^\[cancelled\] \[killed\]\n[\s\S]*the kernel did not stop after the interrupts and was killed/,
    );
    const [next] = await callAs(pi, [["python", { cells: [{ code: "'doomed' in globals()" }] }]]);
    assert.equal(textOf(next), "── cell 1/1 ──\n=> False");
  });
});

describe("pi-python's settings files", () => {
  test("the old ~/.pi/pi-python/settings.json moves under Pi's agent directory and applies", async () => {
    const home = tempDir("pcs-home-");
    const legacy = join(home, ".pi", "pi-python", "settings.json");
    mkdirSync(join(home, ".pi", "pi-python"), { recursive: true });
    writeFileSync(legacy, JSON.stringify({ maxTimeoutSeconds: 77 }));
    const restore = env({ HOME: home, PI_CODE_EXECUTION_TOOLS: "code_execution,python" });
    let pi: PiHarness | undefined;
    try {
      let status = "";
      const start = await printed(async () => {
        pi = await startPi();
        status = await printed(() => pi!.session.prompt("/python-status"));
      });
      const moved = join(pi!.agentDir, "pi-python", "settings.json");
      assert.equal(existsSync(legacy), false);
      assert.deepEqual(JSON.parse(readFileSync(moved, "utf8")), { maxTimeoutSeconds: 77 });
      assert.match(
        start,
        /pi-python's settings moved: .*\.pi\/pi-python\/settings\.json -> .*pi-python\/settings\.json/,
      );
      assert.match(status, /maxTimeout\s+77/);
      assert.doesNotMatch(status, /old place/);
    } finally {
      await pi?.dispose();
      restore();
    }
  });

  test("a migration that fails keeps reading the old file and /python-status warns", async () => {
    const home = tempDir("pcs-home-");
    const legacy = join(home, ".pi", "pi-python", "settings.json");
    mkdirSync(join(home, ".pi", "pi-python"), { recursive: true });
    writeFileSync(legacy, JSON.stringify({ maxTimeoutSeconds: 66 }));
    const agentRoot = tempDir("pcs-agent-");
    // The new place cannot be made: a file stands where pi-python's folder would go.
    writeFileSync(join(agentRoot, "pi-python"), "in the way");
    const restore = env({ HOME: home, PI_CODE_EXECUTION_TOOLS: "code_execution,python" });
    let pi: PiHarness | undefined;
    try {
      let status = "";
      const start = await printed(async () => {
        pi = await startPi({ agentDirEnv: agentRoot });
        status = await printed(() => pi!.session.prompt("/python-status"));
      });
      assert.equal(existsSync(legacy), true);
      assert.match(start, /pi-python's settings could not be moved from .*\.pi\/pi-python\/settings\.json/);
      assert.match(status, /maxTimeout\s+66/);
      assert.match(status, /pi-python's settings are still at their old place \(.*\.pi\/pi-python\/settings\.json\)/);
    } finally {
      await pi?.dispose();
      restore();
    }
  });

  test("pi-python's variables apply, each named as the source in /python-status; a timeout over the maximum is clamped", async () => {
    const restore = env({
      PI_CODE_EXECUTION_TOOLS: "code_execution,python",
      PI_PYTHON_MAX_TIMEOUT_SECONDS: "2",
      PI_PYTHON_VENV_PARENT_WALK: "off",
      PI_PYTHON_VENV_DIR_NAMES: "",
      PI_PYTHON_INTERRUPT_GRACE_MS: "4000",
    });
    const pi = await startPi();
    try {
      const status = await printed(() => pi.session.prompt("/python-status"));
      assert.match(status, /maxTimeout\s+2\s+env PI_PYTHON_MAX_TIMEOUT_SECONDS/);
      assert.match(status, /interruptGraceMs\s+4000\s+env PI_PYTHON_INTERRUPT_GRACE_MS/);
      assert.match(status, /venvDiscovery\.parentWalk\s+false\s+env PI_PYTHON_VENV_PARENT_WALK/);
      assert.match(status, /venvDiscovery\.dirNames\s+\[\]\s+env PI_PYTHON_VENV_DIR_NAMES/);
      // timeout 100 is clamped to the maximum of 2 s: the 30 s sleep is interrupted.
      const [r] = await callAs(pi, [["python", { timeout: 100, cells: [{ code: "import time\ntime.sleep(30)" }] }]]);
      assert.match(textOf(r), /^\[timed out\]\n\n── cell 1\/1 ──\nTraceback[\s\S]*KeyboardInterrupt/);
    } finally {
      await pi.dispose();
      restore();
    }
  });

  test("pi-python's global file: its keys apply; a malformed value is a warning in /python-status", async () => {
    const agentRoot = tempDir("pcs-agent-");
    mkdirSync(join(agentRoot, "pi-python"));
    writeFileSync(
      join(agentRoot, "pi-python", "settings.json"),
      JSON.stringify({ venvParentWalk: false, venvDirNames: ["myenv"], interruptGraceMs: -5 }),
    );
    const restore = env({ PI_CODE_EXECUTION_TOOLS: "code_execution,python" });
    const pi = await startPi({ agentDirEnv: agentRoot });
    try {
      const status = await printed(() => pi.session.prompt("/python-status"));
      assert.match(status, /venvDiscovery\.parentWalk\s+false\s+global .*pi-python\/settings\.json/);
      assert.match(status, /venvDiscovery\.dirNames\s+\["myenv"\]\s+global .*pi-python\/settings\.json/);
      assert.match(status, /pi-python global settings \(.*\): interruptGraceMs .*\(got -5\); ignored/);
    } finally {
      await pi.dispose();
      restore();
    }
  });

  test("the project files are under Pi's CONFIG_DIR_NAME", async () => {
    const cwd = tempDir("pcs-proj-");
    mkdirSync(join(cwd, CONFIG_DIR_NAME, "pi-python"), { recursive: true });
    writeFileSync(join(cwd, CONFIG_DIR_NAME, "pi-python", "settings.json"), JSON.stringify({ maxTimeoutSeconds: 55 }));
    const restore = env({ PI_CODE_EXECUTION_TOOLS: "code_execution,python" });
    const pi = await startPi({ cwd });
    try {
      const status = await printed(() => pi.session.prompt("/python-status"));
      assert.match(status, /maxTimeout\s+55/);
      // Another folder name handed down moves both project files with it.
      useAgentDir(getAgentDir, ".elsewhere");
      assert.equal(projectSettingsPath(cwd), join(cwd, ".elsewhere", "pi-code-execution", "settings.json"));
      assert.equal(piPythonSettingsPaths(cwd).project, join(cwd, ".elsewhere", "pi-python", "settings.json"));
    } finally {
      useAgentDir(getAgentDir, CONFIG_DIR_NAME);
      await pi.dispose();
      restore();
    }
  });
});

describe("pi-python's --python check, live output, serialized calls, a dead kernel and input()", () => {
  let pi: PiHarness;
  let start = "";
  let restore: () => void;
  before(async () => {
    restore = env({ PI_CODE_EXECUTION_TOOLS: "code_execution,python" });
    start = await printed(async () => {
      pi = await startPi({ flags: { python: "/nowhere/bin/python3" } });
    });
  });
  after(async () => {
    await pi.dispose();
    restore();
  });

  test("a bad --python path is said at start and the usual discovery is used", async () => {
    assert.match(
      start,
      /--python \/nowhere\/bin\/python3 cannot be used: .*The usual interpreter discovery is used instead\./,
    );
    const [r] = await callAs(pi, [["python", { cells: [{ code: "import sys\nsys.version_info[0]" }] }]]);
    assert.equal(textOf(r), "── cell 1/1 ──\n=> 3");
    const status = await printed(() => pi.session.prompt("/python-status"));
    assert.match(status, /--python \/nowhere\/bin\/python3 cannot be used/);
  });

  test("stdout streams back while the cell runs", async () => {
    const release = join(tempDir("pcs-stream-"), "release");
    const code = `import os, time\nprint('first line', flush=True)\nwhile not os.path.exists(${JSON.stringify(release)}): time.sleep(0.02)\nprint('second line')`;
    const done = callAs(pi, [["python", { cells: [{ code }] }]]);
    const seen = () =>
      pi.events.some(
        (e) =>
          e.type === "tool_execution_update" &&
          e.toolName === "python" &&
          JSON.stringify(e.partialResult?.content ?? "").includes("first line"),
      );
    let ended = false;
    void done.finally(() => (ended = true));
    await waitUntil(() => seen() || ended, Infinity);
    if (!seen()) assert.fail(`the call ended before any update showed its first line: ${textOf((await done)[0]!)}`);
    // The update came while the cell was still waiting: the file it waits for did not exist yet.
    writeFileSync(release, "");
    const [r] = await done;
    assert.equal(textOf(r), "── cell 1/1 ──\nstdout:\nfirst line\nsecond line");
  });

  test("two python calls in one batch run one after another, never at once", async () => {
    const log = join(tempDir("pcs-serial-"), "log");
    const cell = (n: number) =>
      `import time\nopen(${JSON.stringify(log)}, 'a').write('${n} start\\n')\ntime.sleep(0.3)\nopen(${JSON.stringify(log)}, 'a').write('${n} end\\n')`;
    const [a, b] = await callAs(
      pi,
      [
        ["python", { cells: [{ code: cell(1) }] }],
        ["python", { cells: [{ code: cell(2) }] }],
      ],
      { batch: true },
    );
    assert.equal(a.isError, false);
    assert.equal(b.isError, false);
    assert.equal(readFileSync(log, "utf8"), "1 start\n1 end\n2 start\n2 end\n");
  });

  test("a kernel that died is replaced by the next call, with an empty namespace", async () => {
    const [dead, next] = await callAs(pi, [
      ["python", { cells: [{ code: "before_death = 1\nimport os\nos._exit(3)" }] }],
      ["python", { cells: [{ code: "'before_death' in globals()" }] }],
    ]);
    assert.equal(dead.isError, true);
    assert.equal(dead.details.killed, true);
    assert.match(textOf(dead), /the kernel died \(exit code 3\); its namespace is gone/);
    assert.equal(textOf(next), "── cell 1/1 ──\n=> False");
  });

  test("input() fails at once saying interactive input is not supported", async () => {
    const [r] = await callAs(pi, [["python", { cells: [{ code: "input('name? ')" }] }]]);
    assert.equal(r.isError, true);
    assert.match(textOf(r), /EOFError: interactive input is not supported/);
  });
});
