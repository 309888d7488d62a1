// The published package (issue 29): `npm pack` ships what runs and nothing else, within a size budget, and the
// tarball works on its own: loaded by its manifest into a real Pi session (the faux model), every surface answers one
// call, and its CLI runs without Pi beside it.
//
// "Installed" here means the tarball extracted as node_modules/pi-code-supervisor of a scratch prefix, with only its
// declared `dependencies` and `optionalDependencies` linked beside it from this checkout's node_modules (their own
// dependencies resolve from there, by real path); the Pi packages and typebox, optional peers, are not there: inside Pi
// they resolve to Pi's own copies. A real `npm install --omit=peer --offline <tarball>` installs the same 77 packages
// but takes 2-3 minutes on this machine (unpacking node-pty's prebuilds, better-sqlite3), past this file's budget; the
// extraction checks the same thing that matters, that nothing outside the tarball and its declared dependencies is
// needed.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { dirname, join, posix, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { startPi, textOf, type PiHarness } from "../helpers/pi-session.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const PKG = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));

/** The size budget (also stated in docs/development.md, "The package"): the tarball as npm packs it, and unpacked. */
export const BUDGET = { packedBytes: 512 * 1024, unpackedBytes: 1792 * 1024 };

const scratch = tempDir("pcs-package-");
const installed = join(scratch, "node_modules", PKG.name as string);
let packed: { filename: string; size: number; unpackedSize: number; files: { path: string }[] };
let files: string[];

before(() => {
  const r = spawnSync("npm", ["pack", "--json", "--pack-destination", scratch], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, npm_config_loglevel: "error" },
  });
  assert.equal(r.status, 0, r.stderr);
  [packed] = JSON.parse(r.stdout);
  files = packed.files.map((f) => f.path).sort();
  mkdirSync(installed, { recursive: true });
  const tar = spawnSync("tar", ["-xzf", join(scratch, packed.filename), "-C", installed, "--strip-components=1"], {
    encoding: "utf8",
  });
  assert.equal(tar.status, 0, tar.stderr);
  const deps = { ...PKG.dependencies, ...PKG.optionalDependencies } as Record<string, string>;
  for (const name of Object.keys(deps)) {
    const target = join(ROOT, "node_modules", name);
    if (!existsSync(target)) continue; // an optional dependency that did not install here
    mkdirSync(dirname(join(scratch, "node_modules", name)), { recursive: true });
    symlinkSync(target, join(scratch, "node_modules", name), "dir");
  }
});
after(() => rmSync(scratch, { recursive: true, force: true }));

describe("the tarball's contents", () => {
  test("no tests, benches, scripts, CI, docs or developer configuration", () => {
    const dev = files.filter((f) =>
      /^(test|bench|scripts|docs|\.ci|\.tools|node_modules|test-artifacts|reports)\/|^(stryker|tsconfig|\.prettier|\.gitignore|package-lock)|__pycache__|\.stryker-tmp/.test(
        f,
      ),
    );
    assert.deepEqual(dev, []);
  });

  test("everything the runtime reads is there: the entries, both runners, the inspector page, the CLI", () => {
    const needed = [
      "package.json",
      "README.md",
      "LICENSE",
      "CHANGELOG.md",
      ...(PKG.pi.extensions as string[]),
      ...Object.values(PKG.exports as Record<string, string>),
      ...Object.values(PKG.bin as Record<string, string>),
      "runtime-py/runner.py",
      "runtime-js/runner.js",
      "runtime-js/package.json",
      "inspector/page/index.html",
      "inspector/stately-relay.js",
      "bin/pi-agent-dir.js",
      "schema.json",
      "schema.project.json",
    ].map((p) => posix.normalize(p));
    for (const p of needed) assert.ok(files.includes(p), `${p} is in the tarball`);
  });

  test("every relative import and every file a module reads beside itself resolves inside the tarball", () => {
    const missing: string[] = [];
    for (const file of files.filter((f) => /\.(ts|js)$/.test(f))) {
      const text = readFileSync(join(installed, file), "utf8");
      const specs = [
        ...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g),
        ...text.matchAll(/require\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g),
        ...text.matchAll(/new URL\(\s*["'`](\.{1,2}\/[^"'`$]+)["'`],\s*import\.meta\.url\)/g),
      ].map((m) => m[1]);
      for (const spec of specs) {
        const target = posix.normalize(posix.join(posix.dirname(file), spec));
        // A folder (`new URL("../../runtime-py/", ...)`) resolves when some file lies under it.
        const found = spec.endsWith("/")
          ? files.some((f) => f.startsWith(target))
          : [target, `${target}.js`, `${target}/index.js`].some((t) => files.includes(t));
        if (!found && !target.startsWith("test-artifacts/")) missing.push(`${file}: ${spec}`);
      }
    }
    // inspector/charts.ts reads test-artifacts/state-tests/ when it exists (a checkout that ran the tests) and says
    // so when it does not: the one path left out on purpose.
    assert.deepEqual(missing, []);
  });

  test(`within the size budget: ${BUDGET.packedBytes / 1024} KiB packed, ${BUDGET.unpackedBytes / 1024} KiB unpacked`, () => {
    assert.ok(packed.size <= BUDGET.packedBytes, `packed ${packed.size} bytes`);
    assert.ok(packed.unpackedSize <= BUDGET.unpackedBytes, `unpacked ${packed.unpackedSize} bytes`);
  });

  test("package.json: optional Pi peers, repository, a description naming the five surfaces", () => {
    for (const peer of Object.keys(PKG.peerDependencies))
      assert.equal(PKG.peerDependenciesMeta?.[peer]?.optional, true);
    assert.match(PKG.repository.url, /github\.com\/pi-code-supervisor\/pi-code-supervisor/);
    for (const surface of ["code_execution", "python", "eval", "exec_command", "write_stdin", "backend"])
      assert.ok(PKG.description.includes(surface), surface);
  });
});

describe("the tarball in a Pi session", () => {
  let pi: PiHarness;
  before(async () => {
    process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,python,eval,exec";
    try {
      // A directory: Pi reads its package.json manifest (`pi.extensions`), as `pi install` would.
      pi = await startPi({ extensionPaths: [installed] });
    } finally {
      delete process.env.PI_CODE_EXECUTION_TOOLS;
    }
  });
  after(async () => pi?.dispose());

  async function call(name: string, args: Record<string, unknown>) {
    const before = pi.toolResults().length;
    pi.faux.setResponses([
      fauxAssistantMessage([fauxToolCall(name, args as never)], { stopReason: "toolUse" }),
      fauxAssistantMessage("done"),
    ]);
    await pi.session.prompt("go");
    const [result] = pi.toolResults().slice(before);
    assert.ok(result, `${name} answered`);
    assert.equal(result.isError, false, `${name}: ${textOf(result)}`);
    return textOf(result);
  }

  test("its tools come from the extracted tarball, not from this checkout", () => {
    const tools = pi.session.getAllTools().filter((t) => t.name === "code_execution" || t.name === "exec_command");
    assert.equal(tools.length, 2);
    for (const t of tools) assert.ok(t.sourceInfo.path.startsWith(installed), t.sourceInfo.path);
  });

  test("code_execution", async () => {
    assert.match(
      await call("code_execution", { code: "import sys\nprint(6 * 7, sys.version_info >= (3, 9))" }),
      /^42 True/,
    );
  });

  test("python", async () => {
    assert.match(await call("python", { cells: [{ code: "x = 20\nx + 1" }] }), /=> 21/);
  });

  test("eval: a Python cell and a JavaScript cell", async () => {
    const text = await call("eval", {
      cells: [
        { language: "py", code: "print('py', x * 2)" },
        { language: "js", code: "console.log('js', [1, 2, 3].length)" },
      ],
    });
    assert.match(text, /py 40/);
    assert.match(text, /js 3/);
  });

  test("exec_command", async () => {
    assert.match(await call("exec_command", { cmd: "echo shell-$((20 + 22))", yield_time_ms: 5000 }), /shell-42/);
  });

  test("its CLI runs without Pi beside it and finds this session's event log", () => {
    assert.ok(!existsSync(join(scratch, "node_modules", "@earendil-works")), "no Pi package in the prefix");
    const r = spawnSync(process.execPath, [join(installed, "bin", "pi-code-supervisor.js"), "logs"], {
      encoding: "utf8",
      env: { ...process.env, PI_CODING_AGENT_DIR: pi.agentDir },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /\.jsonl/);
  });
});
