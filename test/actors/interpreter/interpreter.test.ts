// Interpreter discovery and validation against real interpreters and a real `python -m venv`; a PYTHONPATH for
// another interpreter left out; sessions never shared across interpreters or working directories (in the machine
// and with real processes); the python_set_interpreter tool in a real Pi session.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import {
  DEFAULT_VENV_DISCOVERY,
  discoverInterpreter,
  findVenv,
  foreignPythonPath,
  InterpreterResolver,
  runnerEnv,
  validateInterpreter,
} from "../../../actors/interpreter/interpreter.ts";
import { SupervisorHost } from "../../../host/host.ts";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { startSupervisor } from "../../helpers/fake-runner.ts";
import { pidAlive, waitUntil } from "../../helpers/procs.ts";
import { findPython, PYTHON, skipWithout } from "../../helpers/pythons.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

/** The machine's Python 3 (test/helpers/pythons.ts). */
const SYSTEM = PYTHON;
// Other interpreters, found at run time (test/helpers/pythons.ts); the tests that need one skip without it.
const PY312 = findPython("3.12");
const PY38 = findPython("3.8");
const versionOf = (exe: string) =>
  execFileSync(exe, ["-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"], { encoding: "utf8" }).trim();

/** A real virtual environment (no pip: fast). */
function makeVenv(dir: string): string {
  execFileSync(SYSTEM, ["-m", "venv", "--without-pip", dir]);
  return join(dir, "bin", "python");
}

let venvRoot: string;
let venvPython: string;
before(() => {
  venvRoot = tempDir("pcs-venv-");
  venvPython = makeVenv(join(venvRoot, ".venv"));
});

describe("discovery order", () => {
  const base = { env: {} as NodeJS.ProcessEnv, venv: DEFAULT_VENV_DISCOVERY };

  test("tool selection, then --python, then PI_PYTHON, then $VIRTUAL_ENV, then .venv, then python3", async () => {
    const cwd = venvRoot;
    const otherVenv = tempDir("pcs-virtualenv-");
    makeVenv(otherVenv);
    const env = { PI_PYTHON: "/from/env/python", VIRTUAL_ENV: otherVenv };
    const pick = async (input: Partial<Parameters<typeof discoverInterpreter>[0]>) => {
      const r = await discoverInterpreter({ ...base, cwd, ...input });
      return [r.source, r.command];
    };
    assert.deepEqual(await pick({ env, selected: "/sel/python", flag: "/flag/python" }), ["tool", "/sel/python"]);
    assert.deepEqual(await pick({ env, flag: "/flag/python" }), ["flag", "/flag/python"]);
    assert.deepEqual(await pick({ env }), ["PI_PYTHON", "/from/env/python"]);
    assert.deepEqual(await pick({ env: { VIRTUAL_ENV: otherVenv } }), [
      "VIRTUAL_ENV",
      join(otherVenv, "bin", "python"),
    ]);
    assert.deepEqual(await pick({}), ["venv", venvPython]);
    assert.deepEqual(await pick({ cwd: tempDir("pcs-novenv-") }), ["PATH", "python3"]);
    const stale = await discoverInterpreter({
      ...base,
      cwd: tempDir("pcs-novenv-"),
      env: { VIRTUAL_ENV: "/gone/venv" },
    });
    assert.equal(stale.source, "PATH");
    assert.match(stale.notes.join(), /VIRTUAL_ENV is set to \/gone\/venv, but .* does not exist/);
  });

  test(".venv/venv in a parent, up to the repository root and no further", async () => {
    const outer = tempDir("pcs-walk-");
    makeVenv(join(outer, "venv")); // above the repository: never used
    const repo = join(outer, "repo");
    mkdirSync(join(repo, ".git"), { recursive: true });
    const deep = join(repo, "src", "pkg");
    mkdirSync(deep, { recursive: true });
    assert.equal(await findVenv(deep, DEFAULT_VENV_DISCOVERY), undefined, "stops after the repository root");
    const inRepo = makeVenv(join(repo, ".venv"));
    assert.equal(await findVenv(deep, DEFAULT_VENV_DISCOVERY), inRepo, "found in the repository root");
    assert.equal(
      await findVenv(deep, { ...DEFAULT_VENV_DISCOVERY, parentWalk: false }),
      undefined,
      "no walk: cwd only",
    );
    assert.equal(await findVenv(repo, { ...DEFAULT_VENV_DISCOVERY, parentWalk: false }), inRepo);
    assert.equal(await findVenv(deep, { ...DEFAULT_VENV_DISCOVERY, dirNames: ["env"] }), undefined, "other names");
    assert.equal(await findVenv(deep, { ...DEFAULT_VENV_DISCOVERY, enabled: false }), undefined, "disabled");
  });
});

describe("an answer re-checked at the door (InterpreterResolver.resolvedNow)", () => {
  test("past its bound: kept while discovery finds the same interpreter, pending once a venv appears", async () => {
    const cwd = tempDir("pcs-door-");
    const resolver = new InterpreterResolver({ env: () => ({ PATH: process.env.PATH ?? "" }), cacheMs: 1 });
    assert.equal(resolver.resolvedNow(cwd), "pending", "nothing resolved yet");
    const first = await resolver.resolveForRun(cwd);
    assert.ok(first.ok);
    await new Promise((r) => setTimeout(r, 5));
    // Older than the bound, nothing changed: the same answer at once (a run after a pause needs no wait).
    const again = resolver.resolvedNow(cwd);
    assert.ok(again !== "pending" && again.ok);
    assert.equal(again.value.executable, first.value.executable);
    // A venv created meanwhile: the door does not guess; the run resolves anew (and finds it).
    const venv = makeVenv(join(cwd, ".venv"));
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(resolver.resolvedNow(cwd), "pending");
    const fresh = await resolver.resolveForRun(cwd);
    assert.ok(fresh.ok);
    assert.equal(fresh.value.requested, venv);
    // A path interpreter that is no longer executable is not kept either (the venv's own link is replaced: a chmod
    // through it would change the system interpreter).
    await new Promise((r) => setTimeout(r, 5));
    assert.ok(resolver.resolvedNow(cwd) !== "pending");
    rmSync(venv);
    writeFileSync(venv, "not an interpreter");
    // Past the bound again: the check just above renewed the answer, and within cacheMs it is kept unchecked.
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(resolver.resolvedNow(cwd), "pending", "no longer executable");
  });
});

describe("validation: resolved once to the real executable", () => {
  test("a bare command on PATH resolves to the interpreter itself, not a shim", async () => {
    const r = await validateInterpreter("python3", "/");
    assert.ok(r.ok, r.ok ? "" : r.error);
    assert.doesNotMatch(r.value.executable, /shims/);
    assert.equal(r.value.version, versionOf(r.value.executable));
  });

  test("a relative path resolves from the working directory; a venv's python stays the venv's", async () => {
    const r = await validateInterpreter(".venv/bin/python", venvRoot);
    assert.ok(r.ok, r.ok ? "" : r.error);
    assert.equal(r.value.executable, venvPython);
    assert.equal(r.value.venv, join(venvRoot, ".venv"));
  });

  test("a directory is refused with a hint naming the interpreter inside it", async () => {
    const r = await validateInterpreter(".venv", venvRoot);
    assert.equal(r.ok, false);
    assert.match(
      r.ok ? "" : r.error,
      /"\.venv" is a directory, not an interpreter; use the interpreter inside it: .*\.venv\/bin\/python3?/,
    );
  });

  test("missing, not executable, not Python, too old", async () => {
    const dir = tempDir("pcs-bad-");
    const missing = await validateInterpreter("./nope/python", dir);
    assert.match(missing.ok ? "" : missing.error, /not found \(.*nope\/python does not exist\)/);
    writeFileSync(join(dir, "plain"), "x");
    const plain = await validateInterpreter(join(dir, "plain"), dir);
    assert.match(plain.ok ? "" : plain.error, /is not executable/);
    writeFileSync(join(dir, "fake"), "#!/bin/sh\necho hello\n");
    chmodSync(join(dir, "fake"), 0o755);
    const fake = await validateInterpreter(join(dir, "fake"), dir);
    assert.match(fake.ok ? "" : fake.error, /did not report itself as a Python interpreter/);
    const none = await validateInterpreter("no-such-python-here", dir);
    assert.match(none.ok ? "" : none.error, /was not found on PATH/);
    if (PY38) {
      const old = await validateInterpreter(PY38.path, dir);
      assert.match(old.ok ? "" : old.error, /Python 3\.8\.\d+ .* is too old/);
    }
  });
});

describe("a PYTHONPATH built for another interpreter is not inherited", () => {
  test("detected by a pythonX.Y path segment of another version", () => {
    assert.equal(
      foreignPythonPath("/opt/lib/python3.8/site-packages:/src", "3.11.2"),
      "/opt/lib/python3.8/site-packages",
    );
    assert.equal(foreignPythonPath("/opt/lib/python3.11/site-packages:/src", "3.11.2"), undefined);
    assert.equal(foreignPythonPath("/src/mypython3.8stuff", "3.11.2"), undefined);
    assert.equal(foreignPythonPath(undefined, "3.11.2"), undefined);
    const { env, dropped } = runnerEnv(
      { PYTHONPATH: "/x/lib/python2.7", PATH: "/usr/bin" },
      { version: "3.11.2", venv: "/v" },
    );
    assert.equal(env.PYTHONPATH, undefined);
    assert.equal(dropped, "/x/lib/python2.7");
    assert.equal(env.VIRTUAL_ENV, "/v");
    assert.equal(env.PATH, "/v/bin:/usr/bin");
  });

  test("a run in a directory with .venv uses it, with its bin first and without the foreign PYTHONPATH", async () => {
    const libs = tempDir("pcs-pp-");
    const host = new SupervisorHost({
      env: () => ({
        ...process.env,
        PI_PYTHON: "",
        VIRTUAL_ENV: "",
        PYTHONPATH: `${libs}/lib/python2.7/site-packages`,
      }),
    });
    try {
      const r = await host.run({
        code: "import os, sys\nprint(sys.prefix)\nprint(os.environ.get('PYTHONPATH'))\nprint(os.environ['VIRTUAL_ENV'])\nprint(os.environ['PATH'].split(':')[0])",
        cwd: venvRoot,
        timeoutMs: 20_000,
      });
      assert.equal(r.outcome.status, "success", r.stderr);
      const venv = join(venvRoot, ".venv");
      assert.equal(r.stdout, `${venv}\nNone\n${venv}\n${venv}/bin\n`);
      assert.equal(r.outcome.runner?.executable, venvPython);
      assert.match([...host.warnings].join(), /PYTHONPATH is not passed to Python 3\.11\.\d+ .*python2\.7/);
    } finally {
      await host.shutdown();
    }
  });
});

describe("sessions never mix interpreters or working directories", () => {
  test("the supervisor replaces a live session whose interpreter or cwd differs (machine, fake runner)", () => {
    const h = startSupervisor();
    h.start({ runId: "a", session: "s", python: "/py/a", cwd: "/w" });
    const k1 = h.runner.of("session:s");
    assert.deepEqual(k1.input, { mode: "session", cwd: "/w", owner: "session:s", python: "/py/a" });
    k1.ready();
    k1.started("a");
    k1.done("a");
    h.start({ runId: "b", session: "s", python: "/py/a", cwd: "/w" });
    assert.equal(h.runner.all("session:s").length, 1, "same interpreter and cwd: same process");
    k1.started("b");
    k1.done("b");
    h.start({ runId: "c", session: "s", python: "/py/b", cwd: "/w" });
    assert.ok(k1.stopped, "the old process is stopped");
    const k2 = h.runner.of("session:s");
    assert.equal(k2.input.python, "/py/b");
    k2.ready();
    k2.started("c");
    k2.done("c");
    const c = h.outcome("c");
    assert.deepEqual(c.session, {
      name: "s",
      ordinal: 1,
      incarnation: 2,
      started: true,
      isLost: false,
      replaced: { reason: "interpreter", from: "/py/a" },
    });
    h.start({ runId: "d", session: "s", python: "/py/b", cwd: "/elsewhere" });
    const k3 = h.runner.of("session:s");
    assert.notEqual(k3, k2);
    assert.equal(k3.input.cwd, "/elsewhere");
    k3.ready();
    k3.started("d");
    k3.done("d");
    assert.deepEqual(h.outcome("d").session?.replaced, { reason: "cwd", from: "/w" });
    assert.deepEqual(h.actor.getSnapshot().context.sessions.s, {
      incarnation: 3,
      status: "alive",
      cwd: "/elsewhere",
      python: "/py/b",
    });
  });

  test(
    "with real processes: another interpreter or cwd starts a new process and says so",
    { skip: skipWithout("3.12") },
    async () => {
      const resolver = new InterpreterResolver({ env: () => ({ ...process.env, PI_PYTHON: SYSTEM, VIRTUAL_ENV: "" }) });
      const host = new SupervisorHost({ interpreter: resolver });
      const cwd = tempDir("pcs-mix-");
      const other = tempDir("pcs-mix-other-");
      try {
        const a = await host.run({ code: "import os\nx = 1\nos.getpid()", cwd, timeoutMs: 20_000, session: "s" });
        assert.equal(a.outcome.runner?.executable, SYSTEM);
        const pidA = Number(a.stdout.trim());
        resolver.select(PY312!.path);
        const b = await host.run({
          code: "import os, sys\nprint('x' in globals(), sys.version_info[:2] >= (3, 12))\nos.getpid()",
          cwd,
          timeoutMs: 20_000,
          session: "s",
        });
        assert.equal(b.outcome.status, "success", b.stderr);
        assert.match(b.stdout, /^False True\n/);
        assert.deepEqual(b.outcome.session?.replaced, { reason: "interpreter", from: SYSTEM });
        assert.ok(await waitUntil(() => !pidAlive(pidA)), "the old process is gone");
        const c = await host.run({ code: "import os\nos.getcwd()", cwd: other, timeoutMs: 20_000, session: "s" });
        assert.equal(c.stdout, `${other}\n`);
        assert.equal(c.outcome.session?.replaced?.reason, "cwd");
        assert.equal(c.outcome.session?.incarnation, 3);
        assert.equal(c.outcome.session?.ordinal, 1);
      } finally {
        await host.shutdown();
      }
    },
  );
});

/** One python_set_interpreter call by the scripted model; its tool result. */
async function callSetInterpreter(pi: PiHarness, args: Record<string, string>) {
  pi.faux.setResponses([
    fauxAssistantMessage([fauxToolCall("python_set_interpreter", args)], { stopReason: "toolUse" }),
    fauxAssistantMessage("done"),
  ]);
  await pi.session.prompt("switch");
  return pi.toolResults().at(-1)!;
}

describe("python_set_interpreter in a Pi session", { skip: skipWithout("3.12") }, () => {
  let pi: PiHarness;
  before(async () => {
    pi = await startPi();
  });
  after(async () => {
    await pi.dispose();
  });
  const setInterpreter = (args: Record<string, string>) => callSetInterpreter(pi, args);

  test("selects, stops sessions on another interpreter (saying so), refuses directories, clears", async () => {
    assert.ok(pi.session.getActiveToolNames().includes("python_set_interpreter"));
    const [first] = await pi.callTools([{ code: "import sys\nkeep = 1\nsys.executable", session: "work" }]);
    const before = textOf(first).split("\n")[0];
    const dir = await setInterpreter({ path: dirname312() });
    assert.equal(dir.isError, true);
    assert.match(textOf(dir), /is a directory, not an interpreter; use the interpreter inside it: .*bin\/python3/);
    const set = await setInterpreter({ path: PY312!.path });
    assert.equal(set.isError, false, textOf(set));
    const v312 = PY312!.version.replaceAll(".", "\\.");
    assert.match(textOf(set), new RegExp(`code_execution now uses Python ${v312}`));
    assert.match(textOf(set), /Stopped session "work": its namespace is gone/);
    assert.deepEqual(set.details.stoppedSessions, ["work"]);
    const [after] = await pi.callTools([
      { code: "import sys\nprint('keep' in globals())\nsys.version_info[:2]", session: "work" },
    ]);
    assert.match(textOf(after), new RegExp(`^False\\n\\(3, 12\\)\\n\\[session "work" started \\(Python ${v312}\\)\\]`));
    const [fresh] = await pi.callTools([{ code: "import sys\nsys.version_info[:2]" }]);
    assert.match(textOf(fresh), /^\(3, 12\)/);
    // The selection follows the conversation: back before the selection, discovery applies again; forward, it is
    // restored from the tool result's details.
    const branchTip = pi.session.sessionManager.getLeafId()!;
    const firstUser = pi.session.sessionManager
      .getEntries()
      .find((e: any) => e.type === "message" && e.message.role === "user")!;
    await pi.session.navigateTree(firstUser.id);
    const [rewound] = await pi.callTools([{ code: "import sys\nsys.executable" }]);
    assert.equal(textOf(rewound).split("\n")[0], before);
    await pi.session.navigateTree(branchTip);
    const [restored] = await pi.callTools([{ code: "import sys\nsys.version_info[:2]" }]);
    assert.match(textOf(restored), /^\(3, 12\)/);
    const cleared = await setInterpreter({});
    assert.match(textOf(cleared), /Selection cleared: code_execution uses Python/);
    const [back] = await pi.callTools([{ code: "import sys\nsys.executable" }]);
    assert.equal(textOf(back).split("\n")[0], before);
  });
});

describe("one interpreter probe", () => {
  test("only actors/interpreter/interpreter.ts starts Python to learn what an interpreter is", () => {
    const root = join(import.meta.dirname, "../../..");
    const probes: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        if (["node_modules", ".tools", ".git", "test"].includes(entry.name)) continue;
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.name.endsWith(".ts") && /print\(sys\.executable\)/.test(readFileSync(path, "utf8")))
          probes.push(path.slice(root.length + 1));
      }
    };
    walk(root);
    assert.deepEqual(probes, ["actors/interpreter/interpreter.ts"]);
  });
});

describe("python_set_interpreter takes pi-python's `path`", () => {
  let pi: PiHarness;
  before(async () => {
    pi = await startPi();
  });
  after(async () => {
    await pi.dispose();
  });
  const setInterpreter = (args: Record<string, string>) => callSetInterpreter(pi, args);
  const executable = async () => textOf((await pi.callTools([{ code: "import sys\nsys.executable" }]))[0]).trim();

  test("the schema is pi-python's: one `path` parameter", () => {
    const schema = pi.session.getToolDefinition("python_set_interpreter")!.parameters as any;
    assert.deepEqual(Object.keys(schema.properties), ["path"]);
    assert.equal(schema.properties.path.type, "string");
  });

  test("an absolute path, a path relative to the working directory, a bare command on PATH", async () => {
    const abs = await setInterpreter({ path: SYSTEM });
    assert.equal(abs.isError, false, textOf(abs));
    assert.equal(abs.details.selected, await executable());
    mkdirSync(join(pi.cwd, "tools"));
    symlinkSync(SYSTEM, join(pi.cwd, "tools", "py"));
    const rel = await setInterpreter({ path: "tools/py" });
    assert.equal(rel.isError, false, textOf(rel));
    assert.match(textOf(rel), /code_execution now uses Python 3\.\d+\.\d+ at /);
    const bare = await setInterpreter({ path: "python3.11" });
    assert.equal(bare.isError, false, textOf(bare));
    assert.equal(await executable(), onPath("python3.11"));
    assert.equal(bare.details.selected, onPath("python3.11"));
  });

  test("a directory is refused with the interpreter inside it named; nothing else changes", async () => {
    const selected = await executable();
    const venv = join(pi.cwd, "env");
    mkdirSync(join(venv, "bin"), { recursive: true });
    symlinkSync(SYSTEM, join(venv, "bin", "python3"));
    for (const path of ["env", venv, "env/"]) {
      const r = await setInterpreter({ path });
      assert.equal(r.isError, true, path);
      assert.match(
        textOf(r),
        new RegExp(`is a directory, not an interpreter; use the interpreter inside it: ${venv}/bin/python3`),
      );
      assert.match(textOf(r), /The selection is unchanged/);
    }
    assert.equal(await executable(), selected);
    const missing = await setInterpreter({ path: "no-such-python" });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /"no-such-python" was not found on PATH/);
  });

  test("`interpreter`, our earlier name, is still read as `path` (prompts written for the previous version)", async () => {
    const r = await setInterpreter({ interpreter: "python3.11" });
    assert.equal(r.isError, false, textOf(r));
    assert.equal(r.details.selected, onPath("python3.11"));
    const both = await setInterpreter({ path: SYSTEM, interpreter: "python3.11" });
    assert.equal(both.isError, true);
    assert.match(textOf(both), /give `path` only/);
    const cleared = await setInterpreter({});
    assert.match(textOf(cleared), /Selection cleared/);
  });
});

/** The executable a command on PATH reports for itself. */
function onPath(command: string): string {
  return execFileSync(command, ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).trim();
}

function dirname312(): string {
  return PY312!.prefix ?? dirname(dirname(PY312!.path));
}

describe("probes per backend", () => {
  test("a probe on this machine never validates the same path in the sandbox, nor the other way round", async () => {
    const { sandboxOperations } = await import("../../../actors/process/sandbox.ts");
    const { localOperations } = await import("../../../actors/process/operations.ts");
    const { knownVersion } = await import("../../../actors/interpreter/interpreter.ts");
    const dir = tempDir("pcs-probe-backend-");
    const script = join(dir, "bin", "py");
    mkdirSync(join(dir, "bin"));
    // Answers as a Python only in this machine's pid namespace; in any other it fails.
    const hostNs = execFileSync("readlink", ["/proc/self/ns/pid"], { encoding: "utf8" }).trim();
    writeFileSync(
      script,
      `#!/bin/sh\nif [ "$(readlink /proc/self/ns/pid)" = "${hostNs}" ]; then printf '${dir}/host-python\\n3.11.0\\n\\n'; ` +
        `else echo "inside another namespace" >&2; exit 3; fi\n`,
    );
    chmodSync(script, 0o755);
    const sandbox = sandboxOperations({ network: false, writable: [], readable: [], support: [] });
    const local = await validateInterpreter(script, dir, process.env, localOperations);
    assert.equal(local.ok, true, JSON.stringify(local));
    assert.equal(knownVersion(`${dir}/host-python`), "3.11.0");
    const inside = await validateInterpreter(script, dir, process.env, sandbox);
    assert.equal(inside.ok, false, "the local result did not validate the sandboxed one");
    if (!inside.ok)
      assert.match(
        inside.error,
        /failed on the sandbox \(bwrap, no network\) backend \(exit code 3\): inside another namespace/,
      );
    assert.equal(knownVersion(`${dir}/host-python`, sandbox), undefined);
    // The other way round: a resolver on the sandbox, then one on this machine, each probes for itself.
    const other = join(dir, "bin", "py2");
    writeFileSync(other, `#!/bin/sh\nreadlink /proc/self/ns/pid >> ${dir}/ns\nexec ${SYSTEM} "$@"\n`);
    chmodSync(other, 0o755);
    const onSandbox = new InterpreterResolver({
      ops: () => sandbox,
      env: () => ({ ...process.env, PI_PYTHON: other }),
    });
    const onLocal = new InterpreterResolver({
      ops: () => localOperations,
      env: () => ({ ...process.env, PI_PYTHON: other }),
    });
    assert.equal((await onSandbox.resolve(dir)).ok, true);
    assert.equal((await onLocal.resolve(dir)).ok, true);
    const seen = readFileSync(join(dir, "ns"), "utf8").trim().split("\n");
    assert.equal(seen.length, 2, "probed once on each backend");
    assert.notEqual(seen[0], hostNs);
    assert.equal(seen[1], hostNs);
  });
});
