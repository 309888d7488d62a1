// The `tools` setting (a list of surface names; unknown ones are warnings), `exec: true`, the log quotas, the
// empty-poll cap with pi-unified-exec's variable for it, and turning the exec surface on and off in a running Pi
// session by editing the user's global settings file.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, test } from "node:test";
import { execEnabled, globalSettingsPath, loadSettings, projectSettingsPath } from "../../../store/settings.ts";
import { startPi } from "../../helpers/pi-session.ts";
import { waitUntil } from "../../helpers/procs.ts";
import { tempDir } from "../../helpers/temp-dir.ts";

function dirs() {
  const root = tempDir("pcs-exec-settings-");
  const cwd = join(root, "project");
  mkdirSync(cwd, { recursive: true });
  // Pi's getAgentDir() reads the process's environment.
  process.env.PI_CODING_AGENT_DIR = join(root, "agent");
  return { cwd, env: { PI_CODING_AGENT_DIR: join(root, "agent") } as NodeJS.ProcessEnv };
}

function write(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify(value));
}

describe("the tools setting", () => {
  test("off by default; `exec` in tools or `exec: true` turns it on", () => {
    const { cwd, env } = dirs();
    const none = loadSettings(cwd, env);
    assert.deepEqual(none.values.tools, ["code_execution"]);
    assert.equal(none.values.exec, false);
    assert.equal(execEnabled(none.values), false);
    assert.deepEqual(none.values.execLogs, { perLogBytes: 64 * 1024 * 1024, totalBytes: 512 * 1024 * 1024 });

    // From the user's global file (a project's never turns it on: test/security/settings-trust.test.ts).
    write(globalSettingsPath(), { exec: true });
    assert.equal(execEnabled(loadSettings(cwd, env).values), true);

    const fromEnv = loadSettings(cwd, { ...env, PI_CODE_EXECUTION_TOOLS: " Exec , code_execution,exec" });
    assert.deepEqual(fromEnv.values.tools, ["exec", "code_execution"]);
    assert.deepEqual(fromEnv.sources.tools, { source: "env", where: "PI_CODE_EXECUTION_TOOLS" });
  });

  test("unknown names are warnings; a value of the wrong shape falls back", () => {
    const { cwd, env } = dirs();
    write(globalSettingsPath(), { tools: ["code_execution", "exec", "shell", "eval"], execLogs: { perLogBytes: 10 } });
    const s = loadSettings(cwd, env);
    assert.deepEqual(s.values.tools, ["code_execution", "exec", "shell", "eval"]);
    assert.equal(execEnabled(s.values), true);
    assert.ok(
      s.warnings.some((w) =>
        /tools: unknown surface "shell" is ignored \(known: code_execution, python, eval, exec\)/.test(w),
      ),
      s.warnings.join("\n"),
    );
    assert.ok(!s.warnings.some((w) => /"eval"/.test(w)), "eval is a surface (issue 14)");
    assert.ok(s.warnings.some((w) => /execLogs\.perLogBytes must be an integer of bytes from 1024/.test(w)));
    assert.equal(s.values.execLogs.perLogBytes, 64 * 1024 * 1024);
    // A trusted project's value is not even parsed: tools is a boundary key.
    write(projectSettingsPath(cwd), { tools: "exec" });
    const fromProject = loadSettings(cwd, env, { trusted: true });
    assert.ok(
      fromProject.warnings.some((w) => /: tools is a boundary setting/.test(w)),
      fromProject.warnings.join("\n"),
    );
    assert.deepEqual(fromProject.values.tools, ["code_execution", "exec", "shell", "eval"], "the global layer's value");
    write(globalSettingsPath(), { tools: "exec" });
    const bad = loadSettings(cwd, env);
    assert.ok(bad.warnings.some((w) => /tools must be a list of tool surface names/.test(w)));
    assert.deepEqual(bad.values.tools, ["code_execution"], "the default");
  });
});

describe("the empty-poll cap (execMaxEmptyPollMs, PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS)", () => {
  const PEER = "PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS";
  test("unset or blank: no cap; pi-unified-exec's variable applies where nothing of ours sets the key", () => {
    const { cwd, env } = dirs();
    assert.equal(loadSettings(cwd, env).values.execMaxEmptyPollMs, undefined);
    assert.equal(loadSettings(cwd, { ...env, [PEER]: "  " }).values.execMaxEmptyPollMs, undefined);
    const peer = loadSettings(cwd, { ...env, [PEER]: "290000" });
    assert.equal(peer.values.execMaxEmptyPollMs, 290_000);
    assert.deepEqual(peer.sources.execMaxEmptyPollMs, { source: "env", where: PEER });
    const ours = loadSettings(cwd, { ...env, [PEER]: "290000", PI_CODE_EXECUTION_EXEC_MAX_EMPTY_POLL_MS: "60000" });
    assert.equal(ours.values.execMaxEmptyPollMs, 60_000, "ours wins when both are set");
    write(globalSettingsPath(), { execMaxEmptyPollMs: 120_000 });
    assert.equal(loadSettings(cwd, { ...env, [PEER]: "290000" }).values.execMaxEmptyPollMs, 120_000);
  });

  test("a malformed value is a warning and is kept as refused (the poll fails rather than lose its cap)", () => {
    const { cwd, env } = dirs();
    for (const raw of ["soon", "0", "-5", "Infinity", "9007199254740993"]) {
      const s = loadSettings(cwd, { ...env, [PEER]: raw });
      assert.equal(s.values.execMaxEmptyPollMs, undefined, raw);
      assert.match(
        s.refused?.execMaxEmptyPollMs ?? "",
        /^PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS: execMaxEmptyPollMs must be a positive number/,
        raw,
      );
      assert.ok(s.warnings.includes(s.refused!.execMaxEmptyPollMs!));
    }
    // A valid value of a later layer overrides a refused one below it.
    write(globalSettingsPath(), { execMaxEmptyPollMs: "soon" });
    const fixed = loadSettings(cwd, { ...env, [PEER]: "7000" });
    assert.equal(fixed.values.execMaxEmptyPollMs, 7000);
    assert.equal(fixed.refused?.execMaxEmptyPollMs, undefined);
    assert.ok(loadSettings(cwd, env).refused?.execMaxEmptyPollMs, "the file's refused value alone");
  });
});

describe("enabling while Pi runs", () => {
  test("editing the global settings file turns the surface on (bash leaves) and off (bash returns)", async () => {
    const pi = await startPi();
    try {
      const active = () => pi.session.getActiveToolNames();
      assert.ok(!active().includes("exec_command"));
      assert.ok(active().includes("bash"));
      const file = globalSettingsPath();
      write(file, { exec: true });
      assert.ok(await waitUntil(() => active().includes("exec_command"), 10_000), "turned on");
      assert.ok(!active().includes("bash"));
      write(file, { exec: false });
      assert.ok(await waitUntil(() => !active().includes("exec_command"), 10_000), "turned off");
      assert.ok(active().includes("bash"));
    } finally {
      await pi.dispose();
    }
  });
});
