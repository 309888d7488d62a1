// The remote backend through real Pi sessions over a loopback sshd, with `remote.cwd` a directory other than Pi's:
// every surface runs in the mapped directory (code_execution, the python tool with and without its `cwd`, eval's
// Python cells); interpreters are probed on the remote side and nothing planted in Pi's directory runs here (a
// `.venv/bin/python` and a selected script that exist only locally); the command transport starts in Pi's working
// directory and its failure reports its real exit code.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, relative } from "node:path";
import { after, before, describe, test } from "node:test";
import { remoteOperations } from "../../../actors/process/remote.ts";
import { SupervisorHost } from "../../../host/host.ts";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { callAs } from "../../helpers/notebook.ts";
import { startSshd, type TestSshd } from "../../helpers/sshd.ts";
import { remoteBackendEnv, savedBackendEnv } from "../../helpers/backend-env.ts";
import { tempDir } from "../../helpers/temp-dir.ts";
import { PYTHON, PYTHON_RE } from "../../helpers/pythons.ts";

/** A script that writes `marker` when it runs, then behaves as Python (so a probe of it would succeed). */
function plantedPython(path: string, marker: string): void {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, `#!/bin/sh\necho "ran as $(id -u) in $(pwd)" >> ${marker}\nexec ${PYTHON} "$@"\n`);
  chmodSync(path, 0o755);
}

const restoreEnv = savedBackendEnv();

describe("remote over a loopback sshd, remote.cwd apart from Pi's directory", () => {
  let sshd: TestSshd;
  let pi: PiHarness;
  let remoteDir: string;
  let marker: string;
  before(async () => {
    sshd = await startSshd();
    remoteDir = tempDir("pcs-remote-surfaces-");
    const cwd = tempDir("pcs-remote-surfaces-local-");
    marker = join(tempDir("pcs-remote-marker-"), "ran");
    mkdirSync(join(cwd, "sub"));
    mkdirSync(join(remoteDir, "sub"));
    // Only in Pi's directory: neither may run (they name this machine's files).
    plantedPython(join(cwd, ".venv", "bin", "python"), marker);
    plantedPython(join(cwd, "tools", "local-py.sh"), marker);
    // Only on the remote side: the selection names it relative to the remote working directory.
    mkdirSync(join(remoteDir, "tools"));
    writeFileSync(join(remoteDir, "tools", "py.sh"), `#!/bin/sh\nexec ${PYTHON} "$@"\n`);
    chmodSync(join(remoteDir, "tools", "py.sh"), 0o755);
    const r = sshd.remote({ cwd: remoteDir });
    Object.assign(process.env, {
      ...remoteBackendEnv(r, remoteDir),
      PI_CODE_EXECUTION_TOOLS: "code_execution,python,eval",
    });
    pi = await startPi({ cwd });
  });
  after(async () => {
    await pi?.dispose();
    restoreEnv();
    await sshd?.stop();
    rmSync(remoteDir, { recursive: true, force: true });
  });

  test("code_execution, the python tool (with and without cwd) and an eval Python cell run in remote.cwd", async () => {
    assert.notEqual(pi.cwd, remoteDir);
    const [ce] = await pi.callTools([{ code: "import os\nos.getcwd()" }]);
    assert.equal(textOf(ce), `${remoteDir}\n`, textOf(ce));
    const [py, pySub, ev] = await callAs(pi, [
      ["python", { cells: [{ code: "import os\nprint(os.getcwd())" }] }],
      ["python", { cells: [{ code: "import os\nprint(os.getcwd())" }], cwd: "sub" }],
      ["eval", { cells: [{ language: "py", code: "import os\nos.getcwd()" }] }],
    ]);
    assert.equal(py!.isError, false, textOf(py!));
    assert.match(textOf(py!), new RegExp(`\\nstdout: ${remoteDir}\\n?$`), textOf(py!));
    assert.match(textOf(pySub!), new RegExp(`\\nstdout: ${join(remoteDir, "sub")}\\n?$`), textOf(pySub!));
    assert.equal(ev!.isError, false, textOf(ev!));
    assert.match(textOf(ev!), new RegExp(`^'${remoteDir}'$`), textOf(ev!));
    // A directory outside Pi's maps to nothing there: refused, nothing ran.
    const [outside] = await callAs(pi, [["python", { cells: [{ code: "print('ran')" }], cwd: tmpdir() }]]);
    assert.equal(outside!.isError, true);
    assert.match(textOf(outside!), /outside Pi's working directory/);
    assert.doesNotMatch(textOf(outside!), /^ran/m);
  });

  test("a python call's cells run as one batch over the relay, each with its own output and value", async () => {
    // The runner starts each next cell on the host's `cell.ack`, which crosses the relay like any control frame.
    const [r] = await callAs(pi, [
      [
        "python",
        {
          cells: [
            { code: "n = 1\nprint('one')" },
            { code: "n += 1\nprint('two')\nn" },
            { code: "print('three')\nn * 10" },
          ],
        },
      ],
    ]);
    assert.equal(r!.isError, false, textOf(r!));
    assert.deepEqual(
      r!.details.cells.map((c: any) => [c.status, c.stdout, c.value]),
      [
        ["ok", "one\n", undefined],
        ["ok", "two\n", "2"],
        ["ok", "three\n", "20"],
      ],
    );
  });

  test("interpreters: the planted .venv is not used, selections are probed on the remote side only", async () => {
    const [r] = await pi.callTools([{ code: "import sys\nsys.executable" }]);
    assert.match(textOf(r!), /python3/);
    const local = await callAs(pi, [["python_set_interpreter", { path: "tools/local-py.sh" }]]);
    assert.equal(local[0]!.isError, true, textOf(local[0]!));
    assert.match(textOf(local[0]!), /not found on the remote/);
    const [set] = await callAs(pi, [["python_set_interpreter", { path: "tools/py.sh" }]]);
    assert.equal(set!.isError, false, textOf(set!));
    assert.match(textOf(set!), new RegExp(`code_execution now uses Python 3\\.\\d+\\.\\d+ at ${PYTHON_RE}`));
    // `~/...` is the remote home, expanded there.
    const home = tempDir("pcs-remote-tilde-", join(homedir(), ".cache"));
    try {
      writeFileSync(join(home, "py.sh"), `#!/bin/sh\nexec ${PYTHON} "$@"\n`);
      chmodSync(join(home, "py.sh"), 0o755);
      const rel = `~/${relative(homedir(), home)}/py.sh`;
      const [tilde] = await callAs(pi, [["python_set_interpreter", { path: rel }]]);
      assert.equal(tilde!.isError, false, textOf(tilde!));
      assert.match(textOf(tilde!), new RegExp(`now uses Python 3\\.\\d+\\.\\d+ at ${PYTHON_RE}`));
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
    const [after] = await pi.callTools([{ code: "import os\nos.getcwd()" }]);
    assert.equal(textOf(after!), `${remoteDir}\n`);
    assert.equal(existsSync(marker), false, existsSync(marker) ? readFileSync(marker, "utf8") : "");
    // Control: the planted script does leave its marker when it runs (here, started by hand).
    assert.equal(spawnSync(join(pi.cwd, ".venv", "bin", "python"), ["-c", "1"]).status, 0);
    assert.match(readFileSync(marker, "utf8"), /^ran as/);
  });
});

describe("the command transport", () => {
  test("starts in Pi's working directory and its failure reports the real exit code (runner and probe)", async () => {
    const root = tempDir("pcs-command-root-");
    const out = join(tempDir("pcs-command-out-"), "pwd");
    const argv = ["sh", "-c", `pwd > ${out}; echo 'transport says no' >&2; exit 7`, "transport"];
    const ops = remoteOperations({ remote: { transport: "command", argv, options: [] }, localRoot: root });
    const started = await ops.start({ executable: "python3", args: [], cwd: root, env: process.env, killMs: 200 });
    assert.equal(started.ok, false);
    if (!started.ok) assert.match(started.error.message, /\(exit code 7\): transport says no/);
    assert.equal(readFileSync(out, "utf8").trim(), root);
    rmSync(out);
    // Through a host (the interpreter is probed through the same transport first): a setup_error with exit code 7.
    const host = new SupervisorHost({ ops, spareRunners: () => false });
    try {
      const r = await host.run({ code: "1", cwd: root, timeoutMs: 20_000 });
      assert.equal(r.outcome.status, "setup_error");
      assert.match(r.outcome.message ?? "", /exit code 7\): transport says no/);
      assert.doesNotMatch(r.outcome.message ?? "", /exit code null/);
      assert.equal(readFileSync(out, "utf8").trim(), root);
    } finally {
      await host.shutdown();
    }
  });
});
