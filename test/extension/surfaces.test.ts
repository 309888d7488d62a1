// The `tools` setting: which surfaces register (settings files, PI_CODE_EXECUTION_TOOLS, --code-tools); unknown
// names are warnings in /code-status, never a crash; /code-status lists the active surfaces. Unknown names (a surface,
// a setting key, a backend) are also said once at start-up in Pi's UI, with the closest known name (issue 29).
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { piPrint } from "../helpers/pi-cli.ts";
import { startPi } from "../helpers/pi-session.ts";
import { scriptedUI } from "../helpers/scripted-ui.ts";
import { waitUntil } from "../helpers/procs.ts";
import { tempDir } from "../helpers/temp-dir.ts";

async function printed(run: () => Promise<void>): Promise<string> {
  const out: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string) => (out.push(String(chunk)), true)) as never;
  try {
    await run();
  } finally {
    process.stdout.write = write;
  }
  return out.join("");
}

describe("tool surfaces", () => {
  test("default: code_execution and python_set_interpreter only", async () => {
    const pi = await startPi();
    try {
      const names = pi.session.getActiveToolNames();
      assert.ok(names.includes("code_execution") && names.includes("python_set_interpreter"));
      assert.ok(!names.includes("python") && !names.includes("eval"));
      const text = await printed(() => pi.session.prompt("/code-status"));
      assert.match(text, /^Tool surfaces: code_execution \(default\)/m);
    } finally {
      await pi.dispose();
    }
  });

  test("PI_CODE_EXECUTION_TOOLS with an unknown name: a warning, the known ones register", async () => {
    process.env.PI_CODE_EXECUTION_TOOLS = "python, nonsense";
    const pi = await startPi();
    delete process.env.PI_CODE_EXECUTION_TOOLS;
    try {
      const names = pi.session.getActiveToolNames();
      assert.ok(names.includes("python") && names.includes("python_set_interpreter"));
      assert.ok(!names.includes("code_execution"));
      const text = await printed(() => pi.session.prompt("/code-status"));
      assert.match(text, /^Tool surfaces: python \(env PI_CODE_EXECUTION_TOOLS\)/m);
      assert.match(text, /PI_CODE_EXECUTION_TOOLS: tools: unknown surface "nonsense" is ignored/);
      const alias = await printed(() => pi.session.prompt("/python-status"));
      assert.match(alias, /^Tool surfaces: python/m);
    } finally {
      await pi.dispose();
    }
  });

  test("the global settings file chooses surfaces, and an edit applies while Pi runs (dropped tools are hidden)", async () => {
    // The user's file: a project's `tools` is never read (a boundary key: test/security/settings-trust.test.ts).
    const agentDir = tempDir("pcs-surfaces-agent-");
    const file = join(agentDir, "pi-code-execution", "settings.json");
    mkdirSync(join(file, ".."), { recursive: true });
    writeFileSync(file, JSON.stringify({ tools: ["code_execution", "python"] }));
    const pi = await startPi({ agentDirEnv: agentDir });
    try {
      assert.ok(await waitUntil(() => pi.session.getActiveToolNames().includes("python"), 5000));
      assert.ok(pi.session.getActiveToolNames().includes("code_execution"));
      writeFileSync(file, JSON.stringify({ tools: ["python"] }));
      assert.ok(await waitUntil(() => !pi.session.getActiveToolNames().includes("code_execution"), 5000));
      assert.ok(pi.session.getActiveToolNames().includes("python"));
    } finally {
      await pi.dispose();
    }
  });

  test("--code-tools wins over the settings; /code-status lists the surfaces and warns about unknown names", () => {
    const r = piPrint("extension/index.ts", ["--code-tools", "python,code_execution,exec,bogus", "/code-status"], {
      PI_CODING_AGENT_DIR: tempDir("pcs-flag-"),
      PI_CODE_EXECUTION_TOOLS: "code_execution",
      PI_CODE_EXECUTION_JOURNAL: "off",
    });
    assert.equal(r.status, 0, r.stderr);
    // Print mode sends what commands print to stderr (stdout carries only the model's answer).
    const out = r.stdout + r.stderr;
    assert.match(out, /^Tool surfaces: python, code_execution, exec \(--code-tools\)/m);
    assert.match(out, /"bogus" is not a surface/);
  });
});

describe("start-up warnings: unknown names said once in Pi's UI, with the closest known name", () => {
  const warningsOf = (notices: { text: string; level?: string }[]) => notices.filter((n) => n.level === "warning");

  test("--code-tools pyhton: one warning naming python; the control, --code-tools python, says nothing", async () => {
    const typo = scriptedUI();
    const pi = await startPi({ uiContext: typo.ui, flags: { "code-tools": "pyhton" } });
    try {
      // Without the notice nothing would tell: no surface registered.
      assert.ok(!pi.session.getActiveToolNames().some((n) => n === "python" || n === "code_execution"));
      const [notice, ...more] = warningsOf(typo.notices);
      assert.deepEqual(more, []);
      assert.match(notice.text, /"pyhton" is not a surface .*; did you mean "python"\?/);
      assert.match(notice.text, /no usable surface is chosen/);
      // Once: a new Pi session in the same process (session_start again) does not say it again.
      await (pi.session as any).extensionRunner.emit({ type: "session_start", reason: "new" });
      assert.equal(warningsOf(typo.notices).length, 1);
    } finally {
      await pi.dispose();
    }
    const right = scriptedUI();
    const control = await startPi({ uiContext: right.ui, flags: { "code-tools": "python" } });
    try {
      assert.ok(control.session.getActiveToolNames().includes("python"));
      assert.deepEqual(warningsOf(right.notices), []);
    } finally {
      await control.dispose();
    }
  });

  test("the settings file: an unknown key, nested key, backend and surface each named with its guess", async () => {
    const agentDir = tempDir("pcs-startup-agent-");
    const file = join(agentDir, "pi-code-execution", "settings.json");
    mkdirSync(join(file, ".."), { recursive: true });
    writeFileSync(
      file,
      JSON.stringify({
        defaultTimout: 30,
        sandbox: { netwrok: false },
        backend: "sandbx",
        tools: ["code_execution", "evall"],
        colour: "blue",
      }),
    );
    const ui = scriptedUI();
    const pi = await startPi({ agentDirEnv: agentDir, uiContext: ui.ui });
    try {
      const [notice, ...more] = warningsOf(ui.notices);
      assert.deepEqual(more, []);
      assert.match(notice.text, /unknown key "defaultTimout" is ignored; did you mean "defaultTimeout"\?/);
      assert.match(notice.text, /unknown key "sandbox\.netwrok" is ignored; did you mean "sandbox\.network"\?/);
      assert.match(notice.text, /backend must be one of local, sandbox, remote; did you mean "sandbox"\?/);
      assert.match(notice.text, /unknown surface "evall" is ignored .*; did you mean "eval"\?/);
      // A name near nothing known is still said, without a guess.
      assert.match(notice.text, /unknown key "colour" is ignored$/m);
      // The known names took effect: code_execution registered, the backend stayed local.
      assert.ok(pi.session.getActiveToolNames().includes("code_execution"));
    } finally {
      await pi.dispose();
    }
    writeFileSync(file, JSON.stringify({ defaultTimeout: 30, sandbox: { network: false }, tools: ["eval"] }));
    const clean = scriptedUI();
    const control = await startPi({ agentDirEnv: agentDir, uiContext: clean.ui });
    try {
      assert.ok(control.session.getActiveToolNames().includes("eval"));
      assert.deepEqual(warningsOf(clean.notices), []);
    } finally {
      await control.dispose();
    }
  });

  test("pi -p (no UI): the warning goes to stderr at start-up, before any command", () => {
    const r = piPrint("extension/index.ts", ["--code-tools", "code_execution,pyhton", "hello"], {
      PI_CODING_AGENT_DIR: tempDir("pcs-startup-print-"),
      PI_CODE_EXECUTION_JOURNAL: "off",
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(
      r.stderr,
      /^pi-code-supervisor: tools \(--code-tools\): "pyhton" is not a surface .*did you mean "python"\?$/m,
    );
  });
});
