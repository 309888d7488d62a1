// Settings: precedence (default < global file < project file < environment) with each value's source (the project
// file of a project Pi trusts; test/security/settings-trust.test.ts covers trust and boundary keys), malformed
// files and values as warnings with fallback, hot reload of files that do not exist yet, and changes reaching a
// running Pi session (the tool's timeout bounds, the host's grace) without restarting it.
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import fs, { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { globalSettingsPath, loadSettings, POLL_MS, projectSettingsPath, SettingsStore } from "../../store/settings.ts";
import { brokenBackend } from "../../host/backend.ts";
import { startPi, textOf, type PiHarness } from "../helpers/pi-session.ts";
import { waitUntil } from "../helpers/procs.ts";
import { tempDir } from "../helpers/temp-dir.ts";

function dirs() {
  const root = tempDir("pcs-settings-");
  const agent = join(root, "agent");
  const cwd = join(root, "project");
  mkdirSync(cwd, { recursive: true });
  // Pi's getAgentDir() reads the process's environment.
  process.env.PI_CODING_AGENT_DIR = agent;
  return { root, cwd, env: { PI_CODING_AGENT_DIR: agent } as NodeJS.ProcessEnv };
}

// These projects are trusted: what is tested here is the layering of the files Pi lets us read.
const trusted = { trusted: true };

function write(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, typeof value === "string" ? value : JSON.stringify(value));
}

describe("precedence and sources", () => {
  test("defaults, then the global file, then the project file, then the environment", () => {
    const { cwd, env } = dirs();
    const none = loadSettings(cwd, env, trusted);
    assert.equal(none.values.defaultTimeout, 60);
    assert.equal(none.values.maxTimeout, 3600);
    assert.equal(none.values.interruptGraceMs, 1000);
    assert.equal(none.values.killGraceMs, 500);
    assert.deepEqual(none.values.venvDiscovery, { enabled: true, parentWalk: true, dirNames: [".venv", "venv"] });
    assert.deepEqual(none.sources.maxTimeout, { source: "default" });
    assert.deepEqual(none.warnings, []);

    write(globalSettingsPath(), { maxTimeout: 600, defaultTimeout: 30, venvDiscovery: { parentWalk: false } });
    write(projectSettingsPath(cwd), { defaultTimeout: 45, interruptGraceMs: 250 });
    const s = loadSettings(cwd, { ...env, PI_CODE_EXECUTION_INTERRUPT_GRACE_MS: "300" }, trusted);
    assert.equal(s.values.maxTimeout, 600);
    assert.deepEqual(s.sources.maxTimeout, { source: "global", where: globalSettingsPath() });
    assert.equal(s.values.defaultTimeout, 45);
    assert.deepEqual(s.sources.defaultTimeout, { source: "project", where: projectSettingsPath(cwd) });
    assert.equal(s.values.interruptGraceMs, 300);
    assert.deepEqual(s.sources.interruptGraceMs, { source: "env", where: "PI_CODE_EXECUTION_INTERRUPT_GRACE_MS" });
    assert.equal(s.values.venvDiscovery.parentWalk, false);
    assert.equal(s.values.venvDiscovery.enabled, true);
    assert.equal(s.sources["venvDiscovery.parentWalk"].source, "global");
    assert.equal(s.sources["venvDiscovery.dirNames"].source, "default");
    assert.deepEqual(s.warnings, []);
  });

  test("environment values are parsed (numbers, booleans, lists)", () => {
    const { cwd, env } = dirs();
    const s = loadSettings(cwd, {
      ...env,
      PI_CODE_EXECUTION_VENV_PARENT_WALK: "off",
      PI_CODE_EXECUTION_VENV_DIRS: "env, .env",
      PI_CODE_EXECUTION_JOURNAL: "off",
      PI_CODE_EXECUTION_SPARE_RUNNERS: "0",
      PI_CODE_EXECUTION_INSPECT_PORT: "8123",
    });
    assert.equal(s.values.venvDiscovery.parentWalk, false);
    assert.deepEqual(s.values.venvDiscovery.dirNames, ["env", ".env"]);
    assert.equal(s.values.journal, "off");
    assert.equal(s.values.spareRunners, false);
    assert.equal(s.values.inspector.port, 8123);
  });
});

describe("malformed settings become warnings and fall back", () => {
  test("a file that is not JSON is ignored as a whole, with a warning naming it", () => {
    const { cwd, env } = dirs();
    write(globalSettingsPath(), { maxTimeout: 900 });
    write(projectSettingsPath(cwd), "{ maxTimeout: 5, ");
    const s = loadSettings(cwd, env, trusted);
    assert.equal(s.values.maxTimeout, 900, "falls back to the global value");
    assert.equal(s.warnings.length, 1);
    assert.match(s.warnings[0], /project settings \(.*settings\.json\) are not valid JSON/);
  });

  test("a bad value falls back to the layer below; an unknown key and a bad environment value warn", () => {
    const { cwd, env } = dirs();
    write(globalSettingsPath(), { killGraceMs: 700 });
    write(projectSettingsPath(cwd), {
      killGraceMs: -5,
      maxTimeout: "lots",
      venvDiscovery: { dirNames: ["../x"] },
      colour: "red",
    });
    const s = loadSettings(cwd, { ...env, PI_CODE_EXECUTION_DEFAULT_TIMEOUT: "soon" }, trusted);
    assert.equal(s.values.killGraceMs, 700);
    assert.equal(s.sources.killGraceMs.source, "global");
    assert.equal(s.values.maxTimeout, 3600);
    assert.equal(s.values.defaultTimeout, 60);
    assert.deepEqual(s.values.venvDiscovery.dirNames, [".venv", "venv"]);
    const all = s.warnings.join("\n");
    assert.match(
      all,
      /killGraceMs must be an integer of milliseconds from 0 to 60000 \(got -5\); using 700 from global/,
    );
    assert.match(all, /maxTimeout must be a number of seconds.*\(got "lots"\); using 3600 from default/);
    assert.match(all, /venvDiscovery\.dirNames must be a list of directory names/);
    assert.match(all, /unknown key "colour" is ignored/);
    assert.match(all, /PI_CODE_EXECUTION_DEFAULT_TIMEOUT: defaultTimeout must be a number/);
  });

  test("a where-code-runs value that cannot be read is broken, never a fall back to local: a file, a variable, the file itself", () => {
    const { cwd, env } = dirs();
    for (const backend of [" Sandbox", "Sandbox", "sandbx", 7]) {
      write(globalSettingsPath(), { backend, remote: { transport: "SSH" } });
      const s = loadSettings(cwd, env, trusted);
      assert.deepEqual(
        s.broken.map((b) => b.key),
        ["backend", "remote.transport"],
        JSON.stringify(backend),
      );
      assert.match(
        s.warnings.join("\n"),
        /backend must be one of local, sandbox, remote.*; nothing runs until it is fixed/,
      );
      assert.ok(brokenBackend(s), "the backend refuses");
    }
    // From a variable, the same.
    write(globalSettingsPath(), {});
    const fromEnv = loadSettings(cwd, { ...env, PI_CODE_EXECUTION_SANDBOX_NETWORK: "maybe" }, trusted);
    assert.deepEqual(
      fromEnv.broken.map((b) => [b.key, b.where]),
      [["sandbox.network", "PI_CODE_EXECUTION_SANDBOX_NETWORK"]],
    );
    // A sandbox key matters only to the sandbox, a remote key only to a remote; `backend` not when a flag chose.
    assert.equal(brokenBackend(fromEnv), undefined, "local: the sandbox's network switch is moot");
    assert.ok(brokenBackend(fromEnv, "sandbox"));
    write(globalSettingsPath(), { backend: "sandbx" });
    assert.equal(brokenBackend(loadSettings(cwd, env, trusted), "remote"), undefined, "--ssh chose");
    // A later layer's valid value decides: the variable says where code runs, the file's mistake is only warned of.
    const overridden = loadSettings(cwd, { ...env, PI_CODE_EXECUTION_BACKEND: "sandbox" }, trusted);
    assert.deepEqual(overridden.broken, []);
    assert.equal(overridden.values.backend, "sandbox");
    assert.match(overridden.warnings.join("\n"), /backend must be one of/);
    // A global file that is not JSON may have said where code runs.
    writeFileSync(globalSettingsPath(), '{"backend": "sandbox",');
    const unreadable = loadSettings(cwd, env, trusted);
    assert.deepEqual(
      unreadable.broken.map((b) => b.key),
      [undefined],
    );
    assert.match(unreadable.warnings.join("\n"), /not valid JSON.*nothing runs until it is fixed/);
    assert.ok(brokenBackend(unreadable));
    // Controls: the same settings written right are not broken; another key's bad value still falls back.
    write(globalSettingsPath(), { backend: "sandbox", remote: { transport: "ssh" }, maxTimeout: "lots" });
    const right = loadSettings(cwd, env, trusted);
    assert.deepEqual(right.broken, []);
    assert.equal(right.values.backend, "sandbox");
    assert.equal(brokenBackend(right), undefined);
    assert.match(right.warnings.join("\n"), /maxTimeout must be a number of seconds.*using 3600 from default/);
  });

  test("unknown names (a key, a nested key, a fixed-set value, a surface) name the closest known one and are listed apart", () => {
    const { cwd, env } = dirs();
    write(globalSettingsPath(), {
      maxTimout: 100,
      inspector: { prot: 8123, autoStart: false },
      backend: "remoet",
      tools: ["pyton"],
      remote: { transport: 42 },
    });
    const s = loadSettings(cwd, { ...env, PI_CODE_EXECUTION_REMOTE_TRANSPORT: "dokcer" }, trusted);
    const expected = [
      /unknown key "maxTimout" is ignored; did you mean "maxTimeout"\?$/,
      /unknown key "inspector\.prot" is ignored; did you mean "inspector\.port"\?$/,
      /backend must be one of local, sandbox, remote; did you mean "remote"\? \(got "remoet"\); nothing runs until it is fixed/,
      /PI_CODE_EXECUTION_REMOTE_TRANSPORT: remote\.transport must be one of .*; did you mean "docker"\? \(got "dokcer"\)/,
      /tools: unknown surface "pyton" is ignored \(known: .*\); did you mean "python"\?$/,
    ];
    assert.equal(s.unknown.length, expected.length, s.unknown.join("\n"));
    for (const re of expected)
      assert.ok(
        s.unknown.some((w) => re.test(w)),
        `${re}: ${s.unknown.join("\n")}`,
      );
    // Each is one of the warnings too; a value of the wrong type (remote.transport: 42) is a warning, not a name.
    for (const w of s.unknown) assert.ok(s.warnings.includes(w));
    assert.match(
      s.warnings.join("\n"),
      /remote\.transport must be one of ssh, kubectl, docker, podman, command \(got 42\)/,
    );
    // The known keys beside them apply.
    assert.equal(s.values.inspector.autoStart, false);
    assert.equal(s.sources["inspector.autoStart"].source, "global");
    // Control: the right names say nothing.
    write(globalSettingsPath(), { maxTimeout: 100, inspector: { port: 8123 }, backend: "remote", tools: ["python"] });
    const right = loadSettings(cwd, { ...env, PI_CODE_EXECUTION_REMOTE_TRANSPORT: "docker" }, trusted);
    assert.deepEqual(right.unknown, []);
    assert.deepEqual(right.warnings, []);
  });

  test("a default timeout above the maximum is lowered to it, with a warning", () => {
    const { cwd, env } = dirs();
    write(projectSettingsPath(cwd), { defaultTimeout: 120, maxTimeout: 90 });
    const s = loadSettings(cwd, env, trusted);
    assert.equal(s.values.defaultTimeout, 90);
    assert.match(s.warnings.join("\n"), /defaultTimeout 120 s is above maxTimeout 90 s/);
  });
});

describe("hot reload", () => {
  test("a project file created later, then edited, is picked up by the watcher", async () => {
    const { cwd, env } = dirs();
    const store = new SettingsStore(cwd, () => env, trusted);
    const seen: number[] = [];
    store.onChange((s) => seen.push(s.values.maxTimeout));
    await store.watch();
    try {
      // Neither .pi/ nor pi-code-execution/ exists yet.
      write(projectSettingsPath(cwd), { maxTimeout: 111 });
      assert.ok(await waitUntil(() => store.values.maxTimeout === 111, 10_000), "created file seen");
      write(projectSettingsPath(cwd), { maxTimeout: 222 });
      assert.ok(await waitUntil(() => store.values.maxTimeout === 222, 10_000), "edit seen");
      write(globalSettingsPath(), { interruptGraceMs: 50 });
      assert.ok(await waitUntil(() => store.values.interruptGraceMs === 50, 10_000), "global file seen");
      assert.ok(seen.includes(111) && seen.includes(222));
    } finally {
      await store.close();
    }
  });
});

describe("what the watcher watches", () => {
  test("a stat of each settings file, nothing else: a directory missing under a busy folder appears, goes and comes back", async () => {
    const { root, cwd, env } = dirs();
    // The root holds many other entries (as the system's temp directory does); no settings directory exists yet.
    for (let i = 0; i < 300; i++) writeFileSync(join(root, `other-${i}`), "x");
    // Every stat, readdir and watch of this process while the store watches (syncBuiltinESMExports: the store's
    // named imports see the counting functions).
    const calls = { stat: [] as string[], other: [] as string[] };
    const originals = { statSync: fs.statSync, readdirSync: fs.readdirSync, watch: fs.watch };
    const count = (name: "statSync" | "readdirSync" | "watch") =>
      function (this: unknown, path: fs.PathLike, ...rest: unknown[]) {
        (name === "statSync" ? calls.stat : calls.other).push(`${name} ${String(path)}`);
        return (originals[name] as (...a: unknown[]) => unknown).call(this, path, ...rest);
      };
    const mutable = fs as unknown as Record<string, unknown>;
    for (const name of ["statSync", "readdirSync", "watch"] as const) mutable[name] = count(name);
    syncBuiltinESMExports();
    const store = new SettingsStore(cwd, () => env, trusted);
    try {
      await store.watch();
      const files = new Set([globalSettingsPath(), projectSettingsPath(cwd)]);
      calls.stat.length = 0;
      // Changes among the other entries cost nothing more: a second of polls is four stats of each file.
      for (let i = 0; i < 300; i++) writeFileSync(join(root, `other-${i}`), "y");
      await new Promise((r) => setTimeout(r, 1000));
      const polls = Math.round(calls.stat.length / 4);
      assert.ok(polls >= 2 && polls <= 1000 / POLL_MS + 1, `${calls.stat.length} stats in a second`);
      assert.equal(calls.stat.length, polls * 4, "each poll stats the four files once");
      const stated = new Set(calls.stat.map((c) => c.slice("statSync ".length)));
      for (const f of files) assert.ok(stated.has(f), `${f} is stat'ed`);
      assert.equal(stated.size, 4, [...stated].join(", "));
      assert.deepEqual(calls.other, [], "no directory is read or watched");
      // The project's directory appears with its file, goes away, and comes back.
      write(projectSettingsPath(cwd), { maxTimeout: 321 });
      assert.ok(await waitUntil(() => store.values.maxTimeout === 321, 10_000), "the new directory's file is read");
      rmSync(dirname(projectSettingsPath(cwd)), { recursive: true });
      assert.ok(await waitUntil(() => store.values.maxTimeout === 3600, 10_000), "its removal is read");
      write(projectSettingsPath(cwd), { maxTimeout: 77 });
      assert.ok(await waitUntil(() => store.values.maxTimeout === 77, 10_000), "re-created and read");
      // Two quick writes: the second is the one in force (a watcher once missed it while adding the directory).
      write(globalSettingsPath(), { defaultTimeout: 11 });
      write(globalSettingsPath(), { defaultTimeout: 12 });
      assert.ok(await waitUntil(() => store.values.defaultTimeout === 12, 10_000), "the last write wins");
    } finally {
      await store.close();
      Object.assign(fs, originals);
      syncBuiltinESMExports();
    }
  });
});

describe("in a running Pi session", () => {
  let pi: PiHarness;
  after(async () => {
    await pi?.dispose();
  });

  test("new timeout bounds and grace apply without restarting Pi", async () => {
    pi = await startPi();
    const [ok] = await pi.callTools([{ code: "print('fine')", timeout: 30 }]);
    assert.equal(ok.isError, false);
    write(projectSettingsPath(pi.cwd), { maxTimeout: 5, interruptGraceMs: 200 });
    // The tool is registered again with the new bound: Pi's own validation refuses a larger timeout.
    const ceiling = () => {
      const timeout = (pi.session.getToolDefinition("code_execution")?.parameters as any)?.properties?.timeout;
      return timeout?.maximum === 5 && /1\.\.5\)/.test(timeout.description);
    };
    assert.ok(await waitUntil(ceiling, 10_000), "code_execution was registered again with the new ceiling");
    const [refused] = await pi.callTools([{ code: "print('too long')", timeout: 30 }]);
    assert.equal(refused.isError, true);
    assert.match(textOf(refused), /timeout/);
    // The host's grace followed the setting: the kill notice names it.
    const [stubborn] = await pi.callTools([
      {
        code: "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except KeyboardInterrupt:\n        pass",
        timeout: 1,
      },
    ]);
    assert.equal(stubborn.details.status, "timeout");
    assert.equal(stubborn.details.killed, true);
    assert.match(textOf(stubborn), /within the 0\.2 s grace/);
  });
});
