// Backends through real Pi sessions: the --sandbox and --ssh flags choose where code runs, /code-status shows the
// backend and its health, and a backend that cannot exist makes runs setup errors (never a silent local run).
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, readFileSync, readlinkSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startPi, textOf, type PiHarness } from "../helpers/pi-session.ts";
import { callAs } from "../helpers/notebook.ts";
import { scriptedUI } from "../helpers/scripted-ui.ts";
import { PYTHON, PYTHON_RE } from "../helpers/pythons.ts";
import { tempDir } from "../helpers/temp-dir.ts";

async function statusOf(pi: Awaited<ReturnType<typeof startPi>>, ui: ReturnType<typeof scriptedUI>) {
  const before = ui.notices.length;
  await pi.session.prompt("/code-status");
  assert.ok(ui.notices.length > before);
  return ui.notices.at(-1)!.text;
}

test("--sandbox: code runs under bwrap (the host's /etc is read-only), /code-status shows the backend healthy", async () => {
  const ui = scriptedUI();
  const pi = await startPi({ uiContext: ui.ui, flags: { sandbox: true } });
  try {
    const [r] = await pi.callTools([
      {
        code: "import os\ntry:\n    open('/etc/pcs-probe', 'w')\nexcept OSError as e:\n    print('denied', e.errno)\nos.getpid()",
      },
    ]);
    assert.match(textOf(r!), /^denied (30|13)\n2\n/, textOf(r!));
    const status = await statusOf(pi, ui);
    assert.match(status, /Backend: sandbox \(bwrap, no network\)\n  healthy: bwrap works/);
    assert.match(status, /backend +"local" +default/);
  } finally {
    await pi.dispose();
  }
});

test("--ssh with a malformed target: every run is a setup_error saying why; nothing runs locally", async () => {
  const ui = scriptedUI();
  const pi = await startPi({ uiContext: ui.ui, flags: { ssh: "not a host@" } });
  try {
    const [r] = await pi.callTools([{ code: "open('ran-locally', 'w')\n'ran'" }]);
    const text = textOf(r!);
    assert.match(text, /setup error: --ssh not a host@: expected user@host/);
    assert.doesNotMatch(text, /\bran\b\n/);
    assert.throws(() => realpathSync(`${pi.cwd}/ran-locally`));
    const status = await statusOf(pi, ui);
    assert.match(status, /Backend: remote \(unusable: --ssh not a host@/);
    assert.match(status, /unhealthy: .*\[remote_unreachable\]/);
  } finally {
    await pi.dispose();
  }
});

// ---- Nothing of the user's runs on the host under the sandbox: interpreter probes, discovered interpreters, PEP 723
// builds. Each hostile action runs in a sandboxed Pi session and, as the control, in a local one.

/** A script that leaves traces of where it ran, then behaves as Python: its pid namespace appended to `./<name>-ns`
 * (in the working directory, writable in both) and a marker in `markers` (a host directory under /tmp, which the
 * sandbox hides). */
function planted(path: string, name: string, markers: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(
    path,
    "#!/bin/sh\n" +
      `readlink /proc/self/ns/pid >> ./${name}-ns\n` +
      `echo "$(id -u) $$" >> ${markers}/${name} 2>/dev/null\n` +
      `exec ${PYTHON} "$@"\n`,
  );
  chmodSync(path, 0o755);
}

/** A project whose in-tree PEP 517 build backend leaves a marker in `markers` and builds a wheel of `evilpkg`. */
function evilProject(dir: string, markers: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "pyproject.toml"),
    '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n\n[project]\nname = "evilpkg"\nversion = "1.0"\n',
  );
  writeFileSync(
    join(dir, "backend.py"),
    [
      "import os, zipfile",
      "def get_requires_for_build_wheel(config_settings=None):",
      "    return []",
      "def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):",
      `    with open(${JSON.stringify(join(markers, "build"))}, "a") as f:`,
      "        f.write('built by %d\\n' % os.getpid())",
      "    name = 'evilpkg-1.0-py3-none-any.whl'",
      "    info = 'evilpkg-1.0.dist-info'",
      "    with zipfile.ZipFile(os.path.join(wheel_directory, name), 'w') as z:",
      "        z.writestr('evilpkg/__init__.py', 'VERSION = \"1.0\"\\n')",
      "        z.writestr(info + '/METADATA', 'Metadata-Version: 2.1\\nName: evilpkg\\nVersion: 1.0\\n')",
      "        z.writestr(info + '/WHEEL', 'Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')",
      "        z.writestr(info + '/RECORD', '')",
      "    return name",
      "",
    ].join("\n"),
  );
}

describe("under the sandbox, the user's interpreters and builds never run on the host (control: local)", () => {
  const saved = { ...process.env };
  const hostNs = readlinkSync("/proc/self/ns/pid");
  const sides: Record<"sandbox" | "local", { pi: PiHarness; markers: string }> = {} as never;
  before(async () => {
    delete process.env.PI_PYTHON;
    delete process.env.VIRTUAL_ENV;
    delete process.env.PI_CODE_EXECUTION_BACKEND;
    process.env.PIP_NO_INDEX = "1";
    for (const side of ["sandbox", "local"] as const) {
      const cwd = tempDir(`pcs-hostile-${side}-`);
      const markers = tempDir(`pcs-markers-${side}-`);
      planted(join(cwd, ".venv", "bin", "python"), "venv", markers);
      planted(join(cwd, "tools", "py.sh"), "selected", markers);
      evilProject(join(cwd, "evilpkg"), markers);
      sides[side] = {
        pi: await startPi({ cwd, ...(side === "sandbox" ? { flags: { sandbox: true } } : {}) }),
        markers,
      };
    }
  });
  after(async () => {
    for (const s of Object.values(sides)) await s.pi.dispose();
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  });
  const nsOf = (pi: PiHarness, name: string) =>
    existsSync(join(pi.cwd, `${name}-ns`))
      ? readFileSync(join(pi.cwd, `${name}-ns`), "utf8")
          .trim()
          .split("\n")
      : [];

  test("a planted .venv/bin/python is probed inside the sandbox (not on the host); locally, on the host", async () => {
    for (const side of ["sandbox", "local"] as const) {
      const { pi, markers } = sides[side];
      const [r] = await pi.callTools([{ code: "import sys\nsys.executable" }]);
      // The sandbox starts the interpreter by its real path (actors/process/sandbox.ts): python3.11 for Debian's.
      assert.match(textOf(r!), new RegExp(`^${PYTHON_RE}(\\.\\d+)?\n$`), `${side}: ${textOf(r!)}`);
      const ns = nsOf(pi, "venv");
      assert.ok(ns.length > 0, `${side}: the planted interpreter was probed`);
      if (side === "sandbox") {
        assert.ok(
          ns.every((n) => n !== hostNs),
          `${side}: probed in another pid namespace: ${ns} vs ${hostNs}`,
        );
        assert.equal(existsSync(join(markers, "venv")), false, "no trace on the host");
      } else {
        assert.deepEqual(ns, [hostNs], "control: the local probe runs on the host");
        assert.ok(existsSync(join(markers, "venv")), "control: the marker is written on the host");
      }
    }
  });

  test("python_set_interpreter to a script in the cwd: probed inside the sandbox; locally, on the host", async () => {
    for (const side of ["sandbox", "local"] as const) {
      const { pi, markers } = sides[side];
      const [set] = await callAs(pi, [["python_set_interpreter", { path: "tools/py.sh" }]]);
      assert.equal(set!.isError, false, `${side}: ${textOf(set!)}`);
      assert.match(textOf(set!), new RegExp(`now uses Python 3\\.\\d+\\.\\d+ at ${PYTHON_RE}`));
      const ns = nsOf(pi, "selected");
      assert.equal(ns.length, 1, `${side}: probed once`);
      if (side === "sandbox") {
        assert.notEqual(ns[0], hostNs);
        assert.equal(existsSync(join(markers, "selected")), false, "no trace on the host");
      } else {
        assert.equal(ns[0], hostNs);
        assert.ok(existsSync(join(markers, "selected")), "control: the marker is written on the host");
      }
      await callAs(pi, [["python_set_interpreter", {}]]);
    }
  });

  test("a PEP 723 file:// dependency is refused under the sandbox (no build backend ran); locally it builds", async () => {
    for (const side of ["sandbox", "local"] as const) {
      const { pi, markers } = sides[side];
      const dep = `evilpkg @ file://${pi.cwd}/evilpkg`;
      const code = `# /// script\n# dependencies = [${JSON.stringify(dep)}]\n# ///\nimport evilpkg\nprint('imported', evilpkg.VERSION)`;
      const [r] = await pi.callTools([{ code, timeout: 120 }]);
      const text = textOf(r!);
      if (side === "sandbox") {
        assert.equal(r!.isError, true, text);
        assert.match(text, /the sandbox does not install "evilpkg @ file:\/\/.*" \(file URL\)/);
        assert.match(text, /sandbox_local_requirement/);
        assert.doesNotMatch(text, /imported/);
        assert.equal(existsSync(join(markers, "build")), false, "no build backend ran on the host");
      } else {
        assert.equal(r!.isError, false, text);
        assert.match(text, /^imported 1\.0\n/);
        assert.match(readFileSync(join(markers, "build"), "utf8"), /^built by \d+/, "control: the backend ran");
      }
    }
  });
});
