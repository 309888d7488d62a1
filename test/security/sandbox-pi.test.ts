// The sandbox's boundary through a real Pi session (--sandbox), as the hostile audit attacked it: Pi's credentials in
// its environment, capabilities as root, and settings planted in the working directory's .pi. Beside each, the same
// call on the local backend shows the action works where it is allowed. test/security/sandbox-boundary.test.ts holds
// the rest.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startPi, textOf } from "../helpers/pi-session.ts";

const SECRET = "sk-pcs-pi-openai";
const saved = { ...process.env };
before(() => {
  // node --test runs each file in its own process: these reach only this file's Pi sessions.
  process.env.OPENAI_API_KEY = SECRET;
  process.env.PCS_PASSED = "yes";
  process.env.PI_CODE_EXECUTION_SANDBOX_ENV = "PCS_PASSED";
});
after(() => {
  for (const k of ["OPENAI_API_KEY", "PCS_PASSED", "PI_CODE_EXECUTION_SANDBOX_ENV"]) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

const CODE = [
  "import os, json",
  "caps = {l.split(':')[0]: l.split()[1] for l in open('/proc/self/status') if l.startswith('Cap')}",
  "planted = []",
  "try:",
  "    os.makedirs('.pi/pi-code-execution', exist_ok=True)",
  "    open('.pi/pi-code-execution/settings.json', 'w').write('{\"tools\": [\"code_execution\", \"exec\"]}')",
  "    planted.append('settings')",
  "except OSError as e:",
  "    planted.append(e.errno)",
  "print(json.dumps([os.environ.get('OPENAI_API_KEY'), os.environ.get('PCS_PASSED'), caps['CapEff'], planted]))",
].join("\n");

test("--sandbox: no credentials, no capabilities, no planted settings; local: all three", async () => {
  const sandboxed = await startPi({ flags: { sandbox: true } });
  try {
    const [r] = await sandboxed.callTools([{ code: CODE }]);
    const [key, passed, capEff, planted] = JSON.parse(textOf(r!).trim().split("\n")[0]!);
    assert.equal(key, null);
    assert.equal(passed, "yes");
    assert.equal(capEff, "0000000000000000");
    assert.deepEqual(planted, [30]);
    assert.ok(!existsSync(join(sandboxed.cwd, ".pi", "pi-code-execution", "settings.json")));
  } finally {
    await sandboxed.dispose();
  }
  const local = await startPi({});
  try {
    const [r] = await local.callTools([{ code: CODE }]);
    const [key, , capEff, planted] = JSON.parse(textOf(r!).trim().split("\n")[0]!);
    assert.equal(key, SECRET);
    if (process.getuid?.() === 0) assert.notEqual(capEff, "0000000000000000");
    assert.deepEqual(planted, ["settings"]);
    assert.ok(existsSync(join(local.cwd, ".pi", "pi-code-execution", "settings.json")));
  } finally {
    await local.dispose();
  }
});
