// One agent directory: with PI_CODING_AGENT_DIR="~/.pi/agent" (as a user may write it), every file the extension
// keeps there (event logs, the global settings, dependency environments, saved scripts, saved outputs) lands under
// $HOME/.pi/agent, where Pi itself puts its own, and no folder named `~` appears anywhere. Through a real Pi session.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { getAgentDir } from "@earendil-works/pi-coding-agent";
import { startPi, textOf, type PiHarness } from "../helpers/pi-session.ts";
import { waitUntil } from "../helpers/procs.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const saved = { HOME: process.env.HOME, cwd: process.cwd() };
let home: string;
let work: string;
let pi: PiHarness;

before(async () => {
  home = tempDir("pcs-home-");
  // The process's own directory: a relative `~/.pi/agent` taken literally would be created here.
  work = tempDir("pcs-procdir-");
  process.chdir(work);
  process.env.HOME = home;
  // The global settings file, where Pi's agent directory is: a 1 s default timeout shows it was read.
  const settings = join(home, ".pi", "agent", "pi-code-execution");
  mkdirSync(settings, { recursive: true });
  writeFileSync(join(settings, "settings.json"), JSON.stringify({ defaultTimeout: 1 }));
  Object.assign(process.env, { PIP_NO_INDEX: "1", UV_OFFLINE: "1", UV_NO_INDEX: "1" });
  pi = await startPi({ agentDirEnv: "~/.pi/agent" });
});

after(async () => {
  await pi?.dispose();
  process.chdir(saved.cwd);
  process.env.HOME = saved.HOME;
});

test('PI_CODING_AGENT_DIR="~/.pi/agent": logs, settings, environments, scripts and outputs under $HOME/.pi/agent', async () => {
  const agent = join(home, ".pi", "agent");
  assert.equal(getAgentDir(), agent, "Pi expands ~ itself");
  // Only the second run takes the settings' 1 s default.
  const [big, slow, deps] = await pi.callTools([
    { code: "print('y' * 40000)", timeout: 60 },
    { code: "import time\ntime.sleep(5)" },
    { code: "# /// script\n# dependencies = ['surely-not-a-real-package-pcs']\n# ///\nprint(1)", timeout: 60 },
  ]);
  assert.equal(big.isError, false, textOf(big));
  assert.equal(slow.details.status, "timeout", "the global settings file was read from $HOME/.pi/agent");
  assert.match(textOf(slow), /timed out after 1 s/);
  assert.equal(deps.details.status, "setup_error");

  const scripts = join(agent, "code-execution");
  assert.ok(existsSync(join(scripts, `${big.details.sourceId}.py`)), "the script is saved there");
  const outputs = join(agent, "code-execution-output");
  // The output is written just after its result.
  assert.ok(
    await waitUntil(() => existsSync(join(outputs, `${big.details.output.outputId}.json`)), 10_000),
    "the output is saved there",
  );
  assert.ok(existsSync(join(outputs, `${big.details.output.outputId}.out`)), "the output is saved there");
  assert.ok(existsSync(join(agent, "pi-code-execution", "envs")), "dependency environments are built there");
  const logs = join(agent, "pi-code-supervisor", "logs");
  assert.ok(
    readdirSync(logs).some((f) => f.endsWith(".jsonl")),
    "the event log is written there",
  );
  for (const dir of [work, pi.cwd, home]) assert.ok(!existsSync(join(dir, "~")), `no literal ~ folder in ${dir}`);
});
