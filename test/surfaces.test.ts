// The `tools` setting: which surfaces register (settings files, PI_CODE_EXECUTION_TOOLS, --code-tools); unknown
// names are warnings in /code-status, never a crash; /code-status lists the active surfaces.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { piPrint } from "./helpers/pi-cli.ts";
import { startPi } from "./helpers/pi-session.ts";
import { waitUntil } from "./helpers/procs.ts";

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

  test("a project settings file chooses surfaces, and an edit applies while Pi runs (dropped tools are hidden)", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "pcs-surfaces-"));
    const file = join(cwd, ".pi", "pi-code-execution", "settings.json");
    mkdirSync(join(file, ".."), { recursive: true });
    writeFileSync(file, JSON.stringify({ tools: ["code_execution", "python"] }));
    const pi = await startPi({ cwd });
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
      PI_CODING_AGENT_DIR: mkdtempSync(join(tmpdir(), "pcs-flag-")),
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
