// PEP 723 dependencies, offline: wheels are built locally (test/helpers/wheels.ts; a wheel is a zip with the module, METADATA, WHEEL and
// RECORD) and the installer is pointed at them (PIP_NO_INDEX/PIP_FIND_LINKS, and the UV_ equivalents). Covers the
// block parser (against tomllib), cached environments for fresh runs (shared, built once under concurrency),
// session package directories, failures as setup_error with stable hint ids, the uv path (a stand-in uv that
// delegates to pip, fails on certificates, or hangs past the deadline), run-time hints, and the journal's hint ids.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, readdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { SupervisorHost, type RunRequestInput } from "../../../host/host.ts";
import { SystemObserver } from "../../../record/observe.ts";
import { Recorder } from "../../../record/recorder.ts";
import { formatReport, replayFile } from "../../../record/replay.ts";
import { environmentKey, packageOf } from "../../../actors/deps/dependencies.ts";
import { normalizeDependencies, parseScriptMetadata, satisfiesRequiresPython } from "../../../lib/pep723.ts";
import { startPi, textOf, type PiHarness } from "../../helpers/pi-session.ts";
import { pidAlive, waitUntil } from "../../helpers/procs.ts";
import { buildWheel } from "../../helpers/wheels.ts";
import { tempDir } from "../../helpers/temp-dir.ts";
import { PYTHON } from "../../helpers/pythons.ts";

const Database = createRequire(import.meta.url)("better-sqlite3");
const PY = PYTHON;

let wheels: string;
let offline: NodeJS.ProcessEnv;
before(() => {
  wheels = tempDir("pcs-wheels-");
  buildWheel(wheels, "tinypkg", "1.0");
  buildWheel(wheels, "tinypkg", "2.0");
  buildWheel(wheels, "otherpkg", "0.1");
  offline = {
    PIP_NO_INDEX: "1",
    PIP_FIND_LINKS: wheels,
    UV_NO_INDEX: "1",
    UV_FIND_LINKS: wheels,
    PI_PYTHON: PY,
    VIRTUAL_ENV: "",
  };
});

const block = (...deps: string[]) =>
  `# /// script\n# dependencies = [${deps.map((d) => JSON.stringify(d)).join(", ")}]\n# ///\n`;

describe("the PEP 723 block", () => {
  test("valid TOML in the block is read (smol-toml)", () => {
    const docs = [
      'dependencies = ["requests<3", "rich"]\nrequires-python = ">=3.9"',
      "dependencies = [\n  'a',  # first\n  \"b[extra] >= 1.0 ; python_version < '3.12'\",\n]\n",
      '[tool.uv]\nexclude-newer = "2024-01-01T00:00:00Z"\nindex = [{name = "x", url = "https://x"}]\n[tool.other.deep]\nn = 0x1F\nf = 1_000.5\nb = true\nd = 2024-02-29\nt = 1979-05-27T00:32:00-07:00\nbig = 9223372036854775807',
      's = """\nmulti\\\n   line"""\nl = \'\'\'raw \\n\'\'\'\ne = "tab\\tu\\u00e9"\n[[arr]]\na = 1\n[[arr]]\na = 2',
      'a.b.c = 1\na.d = "x"\n"quoted key" = []\nempty = {}\nnested = [[1, 2], ["x"]]',
    ];
    for (const doc of docs) {
      const m = parseScriptMetadata(
        `# /// script\n${doc
          .split("\n")
          .map((l) => (l ? `# ${l}` : "#"))
          .join("\n")}\n# ///\n`,
      );
      assert.ok(m.ok, `${doc}: ${m.ok ? "" : m.error}`);
    }
  });

  test("invalid TOML is refused with the parser's message (each also refused by Python's tomllib)", () => {
    const cases: [string, RegExp, boolean][] = [
      ["a = 01", /leading zero/, true],
      ["a = 1__000", /underscore/, true],
      ["a = 0x_", /underscore/, true],
      ['a = "x\u0001y"', /control characters/, true],
      ["[t]\nx = 1\n[t]\ny = 2", /redefine/, true],
      ["[a]\nb = 1\n[a.b]\nc = 2", /redefine/, true],
      ["d = 2023-02-30", /impossible date 2023-02-30/, true],
      ["d = 2023-04-31T10:00:00Z", /impossible date 2023-04-31/, true],
      ["d = [2021-02-29]", /impossible date 2021-02-29/, true],
      // Python's integers have no limit; TOML's are 64-bit.
      ["n = 9223372036854775808", /9223372036854775808 does not fit in 64 bits/, false],
      ["n = -9223372036854775809", /-9223372036854775809 does not fit in 64 bits/, false],
      ["t = { x = 0xFFFFFFFFFFFFFFFF }", /18446744073709551615 does not fit in 64 bits/, false],
      ['a = "unclosed', /./, true],
      ["a = [1, 2", /./, true],
      ["a = 1\na = 2", /./, true],
      ["a = bare", /./, true],
    ];
    for (const [doc, why, tomllibRefuses] of cases) {
      const lines = doc.split("\n").map((l) => `# ${l}`);
      const m = parseScriptMetadata(`import os\n# /// script\n${lines.join("\n")}\n# ///\nprint(1)\n`);
      assert.equal(m.ok, false, doc);
      const error = m.ok ? "" : m.error;
      assert.match(error, /^the `# \/\/\/ script` block is not valid TOML: /, doc);
      assert.match(error, why, doc);
      assert.match(error, /\(script line \d+/, `${doc}: ${error}`);
      if (tomllibRefuses)
        assert.throws(
          () =>
            execFileSync(PY, ["-c", "import sys, tomllib; tomllib.loads(sys.stdin.read())"], {
              input: doc,
              stdio: "pipe",
            }),
          doc,
        );
    }
  });

  test("the block is read per the specification", () => {
    const code =
      '#!/usr/bin/env python\n# /// script\n# requires-python = ">=3.10"\n# dependencies = [\n#   "tinypkg==1.0",\n# ]\n# [tool.x]\n#\n# ///\nimport tinypkg\n';
    const m = parseScriptMetadata(code);
    assert.ok(m.ok);
    assert.deepEqual(m.value, { dependencies: ["tinypkg==1.0"], requiresPython: ">=3.10", otherKeys: ["tool"] });
    assert.deepEqual(parseScriptMetadata("print(1)"), { ok: true, value: undefined });
    assert.deepEqual(parseScriptMetadata(code.replace(/\n/g, "\r\n")).ok, true, "CRLF");
    const two = parseScriptMetadata(`${block("a")}x = 1\n${block("b")}`);
    assert.match(two.ok ? "" : two.error, /more than one/);
    const open = parseScriptMetadata("# /// script\n# dependencies = []\nprint(1)");
    assert.match(open.ok ? "" : open.error, /never closed/);
    const badToml = parseScriptMetadata("# /// script\n# dependencies = [unquoted]\n# ///\n");
    assert.match(badToml.ok ? "" : badToml.error, /not valid TOML/);
    const notList = parseScriptMetadata('# /// script\n# dependencies = "tinypkg"\n# ///\n');
    assert.match(notList.ok ? "" : notList.error, /must be an array of strings/);
  });

  test("dependency sets written differently normalize alike (one cached environment)", () => {
    assert.deepEqual(
      normalizeDependencies(["Tiny_Pkg >= 1.0", "rich"]),
      normalizeDependencies(["rich", "tiny-pkg>=1.0"]),
    );
    assert.equal(environmentKey(PY, "3.11.2", ["B", "a"]), environmentKey(PY, "3.11.2", ["a", "b"]));
    assert.notEqual(environmentKey(PY, "3.11.2", ["a"]), environmentKey("/other/python", "3.11.2", ["a"]));
    assert.notEqual(environmentKey(PY, "3.11.2", ["a"]), environmentKey(PY, "3.11.2", ["a==1"]));
  });

  test("requires-python", () => {
    assert.equal(satisfiesRequiresPython("3.11.2", ">=3.9"), true);
    assert.equal(satisfiesRequiresPython("3.11.2", ">=3.12"), false);
    assert.equal(satisfiesRequiresPython("3.11.2", ">=3.9,<3.11"), false);
    assert.equal(satisfiesRequiresPython("3.11.2", "==3.11.*"), true);
    assert.equal(satisfiesRequiresPython("3.11.2", "~=3.10"), true);
    assert.equal(satisfiesRequiresPython("3.11.2", "!=3.11.2"), false);
    assert.equal(satisfiesRequiresPython("3.11.2", "weird"), undefined);
  });

  test("progress lines name the package", () => {
    assert.equal(packageOf("Collecting tinypkg==1.0"), "tinypkg==1.0");
    assert.equal(packageOf(" + tinypkg==1.0".trim()), "tinypkg==1.0");
    assert.equal(packageOf("Installing collected packages: a, b"), "a, b");
  });
});

describe("installation with pip, offline", () => {
  let host: SupervisorHost;
  let root: string;
  let cwd: string;
  const run = (code: string, extra: Partial<RunRequestInput> = {}) =>
    host.run({ code, cwd, timeoutMs: 60_000, ...extra });
  before(() => {
    root = tempDir("pcs-deps-");
    cwd = tempDir("pcs-deps-cwd-");
    host = new SupervisorHost({
      env: () => ({ ...process.env, ...offline }),
      packages: { envRoot: join(root, "envs"), sessionRoot: join(root, "sessions") },
    });
  });
  after(async () => {
    await host.shutdown();
    assert.equal(existsSync(join(root, "sessions", `host-${host.id}`)), false, "session packages removed at shutdown");
  });

  test("a fresh run installs into a cached environment; the same set reuses it", async () => {
    const progress: string[] = [];
    const code = `${block("tinypkg==1.0")}import sys, tinypkg\nprint(tinypkg.VERSION)\nsys.prefix`;
    const first = await host.run({ code, cwd, timeoutMs: 60_000 }, { onProgress: (p) => progress.push(p.line) });
    assert.equal(first.outcome.status, "success", first.stderr + first.outcome.message);
    const [version, prefix] = first.stdout.trim().split("\n");
    assert.equal(version, "1.0");
    assert.ok(prefix.startsWith(join(root, "envs")), prefix);
    assert.deepEqual(
      { ...first.outcome.install, python: undefined },
      { installer: "pip", requirements: ["tinypkg==1.0"], cached: false, modules: ["tinypkg"], python: undefined },
    );
    assert.ok(
      progress.some((l) => /tinypkg/.test(l)),
      `progress named the package: ${progress.join(" | ")}`,
    );
    const t0 = Date.now();
    const again = await run(`${block("TinyPkg == 1.0")}import sys, tinypkg\nsys.prefix`);
    assert.equal(again.outcome.install?.cached, true);
    assert.equal(again.stdout.trim(), prefix, "the same environment");
    assert.ok(Date.now() - t0 < 5000);
    assert.equal(readdirSync(join(root, "envs")).filter((d) => !d.endsWith(".lock")).length, 1);
  });

  test("concurrent runs with a new set build it once", async () => {
    const code = `${block("otherpkg==0.1")}import sys, otherpkg\nsys.prefix`;
    const before = readdirSync(join(root, "envs")).length;
    const [a, b] = await Promise.all([run(code), run(code)]);
    assert.equal(a.outcome.status, "success", a.stderr + a.outcome.message);
    assert.equal(b.outcome.status, "success", b.stderr + b.outcome.message);
    assert.equal(a.stdout, b.stdout);
    assert.deepEqual([a.outcome.install?.cached, b.outcome.install?.cached].sort(), [false, true]);
    assert.equal(readdirSync(join(root, "envs")).filter((d) => !d.endsWith(".lock")).length, before + 1);
  });

  test("a session installs into its package directory; an imported package keeps its loaded version", async () => {
    const s1 = await run(`${block("tinypkg==1.0")}import tinypkg\ntinypkg.VERSION`, { session: "pkgs" });
    assert.equal(s1.outcome.status, "success", s1.stderr + s1.outcome.message);
    assert.equal(s1.stdout, "1.0\n");
    assert.match(s1.outcome.install?.sysPath ?? "", new RegExp(`^${join(root, "sessions")}/host-.*/pkgs-1$`));
    const s2 = await run("import tinypkg\ntinypkg.VERSION", { session: "pkgs" });
    assert.equal(s2.stdout, "1.0\n", "installed packages stay importable in later runs");
    const s3 = await run(`${block("tinypkg==2.0")}import tinypkg\ntinypkg.VERSION`, { session: "pkgs" });
    assert.equal(s3.outcome.status, "success", s3.stderr + s3.outcome.message);
    assert.deepEqual(s3.outcome.alreadyLoaded, ["tinypkg"]);
    assert.equal(s3.stdout, "1.0\n", "the loaded module stays");
    const same = await run(`${block("tinypkg==2.0")}1`, { session: "pkgs" });
    assert.equal(same.outcome.install?.cached, true, "nothing to install twice");
    const fresh = await run(`${block("tinypkg==2.0")}import tinypkg\ntinypkg.VERSION`, {
      session: "pkgs",
      reset: true,
    });
    assert.equal(fresh.stdout, "2.0\n", "a reset session imports the installed version");
  });

  test("a session on a virtual environment without pip installs with its base interpreter's pip", async () => {
    const project = tempDir("pcs-deps-venv-");
    execFileSync(PY, ["-m", "venv", "--without-pip", join(project, ".venv")]);
    const venvHost = new SupervisorHost({
      env: () => ({ ...process.env, ...offline, PI_PYTHON: "" }),
      packages: { envRoot: join(root, "envs"), sessionRoot: join(root, "sessions") },
    });
    try {
      const code = `${block("tinypkg==1.0")}import sys, tinypkg\nprint(sys.prefix)\ntinypkg.VERSION`;
      const s = await venvHost.run({ code, cwd: project, timeoutMs: 60_000, session: "v" });
      assert.equal(s.outcome.status, "success", s.stderr + s.outcome.message);
      assert.equal(s.stdout, `${join(project, ".venv")}\n1.0\n`);
      const f = await venvHost.run({ code, cwd: project, timeoutMs: 60_000 });
      assert.equal(f.outcome.status, "success", f.stderr + f.outcome.message);
      assert.match(f.stdout, /^\/.*\/envs\/[0-9a-f]+\n1\.0\n$/);
    } finally {
      await venvHost.shutdown();
    }
  });

  test("requires-python: checked for fresh runs, noted as without effect in a session", async () => {
    const code = '# /// script\n# requires-python = ">=3.99"\n# ///\nprint("ran")';
    const refused = await run(code);
    assert.equal(refused.outcome.status, "setup_error");
    assert.match(refused.outcome.message ?? "", /requires Python >=3\.99 .* the code did not run/);
    assert.equal(refused.stdout, "");
    const session = await run(code, { session: "rp" });
    assert.equal(session.stdout, "ran\n");
    assert.match(session.outcome.notes?.join() ?? "", /requires-python \(>=3\.99\) has no effect in a session/);
  });

  test("an unresolvable dependency is a setup_error with the dependency_resolution hint; the code never runs", async () => {
    const marker = join(cwd, "ran.txt");
    const r = await run(`${block("nosuchpkg==3")}open(${JSON.stringify(marker)}, "w").write("x")`);
    assert.equal(r.outcome.status, "setup_error");
    assert.equal(r.outcome.stage, "install");
    assert.match(r.outcome.message ?? "", /No matching distribution found for nosuchpkg==3/);
    assert.deepEqual(
      r.outcome.hints?.map((h) => h.id),
      ["dependency_resolution"],
    );
    assert.equal(existsSync(marker), false);
    const s = await run(`${block("nosuchpkg==3")}x = 1`, { session: "unres" });
    assert.equal(s.outcome.status, "setup_error");
    assert.deepEqual(
      s.outcome.hints?.map((h) => h.id),
      ["dependency_resolution"],
    );
  });

  test("run-time hints: CERTIFICATE_VERIFY_FAILED and ModuleNotFoundError", async () => {
    const cert = await run(
      "import ssl\nraise ssl.SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed')",
    );
    assert.deepEqual(
      cert.outcome.hints?.map((h) => h.id),
      ["certificate_verification"],
    );
    assert.match(cert.outcome.hints![0].text, /SSL_CERT_FILE/);
    const missing = await run("import yaml_is_not_installed_here");
    assert.deepEqual(
      missing.outcome.hints?.map((h) => h.id),
      ["module_not_found"],
    );
    assert.match(
      missing.outcome.hints![0].text,
      /# \/\/\/ script\n# dependencies = \["yaml-is-not-installed-here"\]\n# \/\/\//,
    );
  });
});

describe("installation with uv (a stand-in uv that honours the same command lines)", () => {
  let root: string;
  const uvScript = (body: string) => {
    const path = join(root, `uv-${Math.random().toString(36).slice(2)}`);
    writeFileSync(path, `#!${PY}\nimport os, subprocess, sys, time\nargs = sys.argv[1:]\n${body}\n`);
    chmodSync(path, 0o755);
    return path;
  };
  const hostWith = (uv: string) =>
    new SupervisorHost({
      env: () => ({ ...process.env, ...offline, PI_CODE_EXECUTION_UV: uv }),
      packages: { envRoot: join(root, "envs"), sessionRoot: join(root, "sessions") },
    });
  before(() => {
    root = tempDir("pcs-uv-");
  });

  test("uv creates the environment and installs (fresh run and session)", async () => {
    const log = join(root, "uv.log");
    const uv = uvScript(
      [
        `open(${JSON.stringify(log)}, "a").write(" ".join(args) + "\\n")`,
        "if args[0] == 'venv':",
        "    py = args[args.index('--python') + 1]",
        "    sys.exit(subprocess.call([py, '-m', 'venv', '--without-pip', args[-1]]))",
        "py = args[args.index('--python') + 1]",
        "rest = [a for i, a in enumerate(args[2:]) if a != '--python' and args[2:][i - 1] != '--python']",
        "if '--target' in rest:",
        "    sys.exit(subprocess.call([py, '-m', 'pip', 'install'] + rest))",
        `sys.exit(subprocess.call([${JSON.stringify(PY)}, '-m', 'pip', '--python', py, 'install'] + rest))`,
      ].join("\n"),
    );
    const host = hostWith(uv);
    try {
      const cwd = tempDir("pcs-uv-cwd-");
      const r = await host.run({
        code: `${block("tinypkg==2.0")}import tinypkg\ntinypkg.VERSION`,
        cwd,
        timeoutMs: 60_000,
      });
      assert.equal(r.outcome.status, "success", r.stderr + r.outcome.message);
      assert.equal(r.stdout, "2.0\n");
      assert.equal(r.outcome.install?.installer, "uv");
      const s = await host.run({
        code: `${block("tinypkg==1.0")}import tinypkg\ntinypkg.VERSION`,
        cwd,
        timeoutMs: 60_000,
        session: "u",
      });
      assert.equal(s.stdout, "1.0\n", s.stderr + s.outcome.message);
      const calls = execFileSync("cat", [log], { encoding: "utf8" });
      assert.match(calls, /^venv --quiet --python \S+ \S+\n/);
      assert.match(calls, /\npip install --python \S+\/bin\/python tinypkg==2\.0\n/);
      assert.match(calls, /\npip install --python \S+ --target \S+\/u-1 tinypkg==1\.0\n/);
    } finally {
      await host.shutdown();
    }
  });

  test("an index that cannot be verified is a setup_error with the uv_certificate hint", async () => {
    const uv = uvScript(
      "sys.stderr.write('error: Request failed after 3 retries\\n  Caused by: invalid peer certificate: UnknownIssuer\\n')\nsys.exit(2)",
    );
    const host = hostWith(uv);
    try {
      const r = await host.run({
        code: `${block("tinypkg==9.9")}print(1)`,
        cwd: tempDir("pcs-uv-cwd-"),
        timeoutMs: 60_000,
      });
      assert.equal(r.outcome.status, "setup_error");
      assert.deepEqual(
        r.outcome.hints?.map((h) => h.id),
        ["uv_certificate"],
      );
      assert.match(r.outcome.hints![0].text, /SSL_CERT_FILE/);
    } finally {
      await host.shutdown();
    }
  });

  test("the deadline covers installation: the installer is stopped and the code never runs", async () => {
    const pidFile = join(root, "slow.pid");
    const uv = uvScript(`open(${JSON.stringify(pidFile)}, "w").write(str(os.getpid()))\ntime.sleep(60)`);
    const host = hostWith(uv);
    try {
      const t0 = Date.now();
      const r = await host.run({
        code: `${block("tinypkg==7.7")}print(1)`,
        cwd: tempDir("pcs-uv-cwd-"),
        timeoutMs: 1500,
        session: "slow",
      });
      assert.equal(r.outcome.status, "timeout");
      assert.equal(r.outcome.stage, "install");
      assert.equal(r.outcome.session?.isLost, false, "the session's process ran nothing of this run");
      assert.ok(Date.now() - t0 < 10_000);
      const pid = Number(execFileSync("cat", [pidFile], { encoding: "utf8" }));
      assert.ok(await waitUntil(() => !pidAlive(pid), 5000), "the installer was killed");
      const next = await host.run({
        code: "print('still here')",
        cwd: r.outcome.session ? host.sessions()[0].cwd : "",
        timeoutMs: 20_000,
        session: "slow",
      });
      assert.equal(next.stdout, "still here\n");
    } finally {
      await host.shutdown();
    }
  });
});

describe("in a Pi session: notices, live progress, journal hint ids", () => {
  let pi: PiHarness;
  let journal: string;
  let saved: NodeJS.ProcessEnv;
  before(async () => {
    saved = { ...process.env };
    journal = join(tempDir("pcs-deps-journal-"), "journal.sqlite");
    Object.assign(process.env, offline, { PI_CODE_EXECUTION_JOURNAL: journal });
    pi = await startPi();
  });
  after(async () => {
    await pi.dispose();
    for (const k of Object.keys(offline)) delete process.env[k];
    Object.assign(process.env, saved);
  });

  test("the model is told what was installed, and the UI saw installation progress", async () => {
    const [r] = await pi.callTools([{ code: `${block("tinypkg==1.0")}import tinypkg\ntinypkg.VERSION` }]);
    assert.equal(r.isError, false, textOf(r));
    assert.equal(textOf(r), "1.0\n[installed tinypkg==1.0 with pip into a new cached environment]");
    assert.deepEqual(r.details.install, { installer: "pip", requirements: ["tinypkg==1.0"], cached: false });
    const updates = pi.events.filter((e) => e.type === "tool_execution_update").map((e) => e.partialResult?.details);
    assert.ok(
      updates.some((d) => d?.status === "installing" && d.installer === "pip"),
      JSON.stringify(updates),
    );
    const [s] = await pi.callTools([{ code: `${block("tinypkg==1.0")}import tinypkg`, session: "w" }]);
    assert.match(textOf(s), /\[installed tinypkg==1\.0 with pip into session "w"'s package directory\]/);
    const [s2] = await pi.callTools([
      { code: `${block("tinypkg==2.0")}import tinypkg\ntinypkg.VERSION`, session: "w" },
    ]);
    assert.match(
      textOf(s2),
      /\[session "w" had already imported tinypkg: the loaded version stays in use until the session is reset\]/,
    );
  });

  test("a missing module gets the PEP 723 hint, and the journal records which hints fired", async () => {
    const [r] = await pi.callTools([{ code: "import not_installed_anywhere" }]);
    assert.equal(r.isError, true);
    assert.match(
      textOf(r),
      /\[hint module_not_found: `not_installed_anywhere` is not installed .*\n# \/\/\/ script\n# dependencies = \["not-installed-anywhere"\]\n# \/\/\/\]/,
    );
    assert.deepEqual(
      r.details.hints.map((h: { id: string }) => h.id),
      ["module_not_found"],
    );
    await (pi.session as any).extensionRunner?.emit?.({ type: "session_shutdown", reason: "quit" });
    const db = new Database(journal, { readonly: true });
    try {
      const rows = db.prepare("SELECT hint_ids FROM runs WHERE hint_ids != '[]'").all() as { hint_ids: string }[];
      assert.deepEqual(
        rows.map((x) => JSON.parse(x.hint_ids)),
        [["module_not_found"]],
      );
    } finally {
      db.close();
    }
  });
});

describe("replay", () => {
  test("a recorded log with installations (done, failed, session) replays identically", async () => {
    const root = tempDir("pcs-deps-replay-");
    const observer = new SystemObserver();
    const recorder = new Recorder(observer, { dir: join(root, "logs"), piSession: "deps-replay" });
    const host = new SupervisorHost({
      ...observer.hostOptions(),
      env: () => ({ ...process.env, ...offline }),
      packages: { envRoot: join(root, "envs"), sessionRoot: join(root, "sessions") },
    });
    const cwd = tempDir("pcs-deps-replay-cwd-");
    try {
      const run = (code: string, extra: Partial<RunRequestInput> = {}) =>
        host.run({ code, cwd, timeoutMs: 60_000, ...extra });
      assert.equal((await run(`${block("tinypkg==1.0")}import tinypkg`)).outcome.status, "success");
      assert.equal((await run(`${block("tinypkg==1.0")}import tinypkg`, { session: "r" })).outcome.status, "success");
      assert.equal((await run(`${block("nosuchpkg==1")}1`)).outcome.status, "setup_error");
    } finally {
      await host.shutdown();
      recorder.close("shutdown");
    }
    const report = replayFile(recorder.path);
    assert.ok(report.identical, formatReport(report, true));
    assert.ok(report.inputs > 10);
  });
});

describe("under the sandbox: what may be installed, and how", () => {
  test("local paths, archives, file:// and VCS requirements are refused; names and remote URLs are not", async () => {
    const { sandboxRequirementProblem, sandboxRefusal, wheelsOnly } =
      await import("../../../actors/deps/sandbox-policy.ts");
    for (const [req, why] of [
      ["evil @ file:///work/evil", "file URL"],
      ["evil@file:./x", "file URL"],
      ["evil @ git+https://example.org/evil.git", "git+https URL"],
      ["evil @ hg+ssh://h/r", "hg+ssh URL"],
      ["./evil", "a local path"],
      ["evil/sub", "a local path"],
      ["~/evil", "a local path"],
      ["evil-1.0.tar.gz", "a local archive"],
      ["evil-1.0-py3-none-any.whl", "a local archive"],
      ["evil @ ./local", "a local path"],
    ] as const)
      assert.equal(sandboxRequirementProblem(req), why, req);
    for (const req of [
      "requests",
      "rich>=13,<14",
      "a[extra]==1.0 ; python_version >= '3.9'",
      "pkg @ https://example.org/pkg-1.0-py3-none-any.whl",
    ])
      assert.equal(sandboxRequirementProblem(req), undefined, req);
    const refusal = sandboxRefusal(["ok", "evil @ file:///x"]);
    assert.equal(refusal?.hint.id, "sandbox_local_requirement");
    assert.match(refusal?.message ?? "", /"evil @ file:\/\/\/x" \(file URL\)/);
    assert.equal(sandboxRefusal(["ok"]), undefined);
    assert.deepEqual(wheelsOnly({ kind: "pip" }, true), ["--only-binary", ":all:"]);
    assert.deepEqual(wheelsOnly({ kind: "uv", uv: "uv" }, true), ["--no-build"]);
    assert.deepEqual(wheelsOnly({ kind: "pip" }, false), []);
  });
});

describe("under the sandbox: a wheel installs inside bwrap, writing only its environment", () => {
  let host: SupervisorHost;
  let root: string;
  let cwd: string;
  let wheelDir: string;
  before(async () => {
    const { chooseOperations } = await import("../../../host/backend.ts");
    const { loadSettings } = await import("../../../store/settings.ts");
    root = tempDir("pcs-deps-sbx-");
    cwd = tempDir("pcs-deps-sbx-cwd-");
    // Outside $HOME and the temporary directory (both hidden in the sandbox): the find-links folder stays readable.
    wheelDir = tempDir("pcs-wheels-", "/var/tmp");
    buildWheel(wheelDir, "tinypkg", "1.0");
    const packages = { envRoot: join(root, "envs"), sessionRoot: join(root, "sessions") };
    const env = () => ({ ...process.env, ...offline, PIP_FIND_LINKS: wheelDir, UV_FIND_LINKS: wheelDir });
    host = new SupervisorHost({
      env,
      packages,
      ops: chooseOperations(loadSettings(undefined, env()).values, { cwd, env: env(), sandbox: true, packages }),
    });
  });
  after(async () => {
    await host?.shutdown();
    const { rmSync } = await import("node:fs");
    rmSync(wheelDir, { recursive: true, force: true });
  });

  test("the install runs in the sandbox (another pid namespace) and the run imports the package", async () => {
    const code = `${block("tinypkg==1.0")}import os, sys, tinypkg\nprint(tinypkg.VERSION, os.getpid())\nsys.prefix`;
    const r = await host.run({ code, cwd, timeoutMs: 120_000 });
    assert.equal(r.outcome.status, "success", r.stderr + r.outcome.message);
    const [line, prefix] = r.stdout.trim().split("\n");
    assert.match(line!, /^1\.0 \d$/, "a small pid: the sandbox's own pid namespace");
    assert.ok(prefix!.startsWith(join(root, "envs")), prefix);
    assert.equal(r.outcome.install?.installer, "pip");
  });
});
