// Pi's agent directory is handed down from the top (store/agent-dir.ts), not asked of Pi by the floors. Before the
// top hands it, every folder under it refuses with a clear error instead of guessing one; once Pi's rule is handed,
// the folders users see are the same as when each file asked Pi itself, read at each call (a changed
// PI_CODING_AGENT_DIR moves them). This file does not import test/helpers/agent-dir.ts on purpose.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { getAgentDir } from "@earendil-works/pi-coding-agent";
import { agentDir, useAgentDir } from "../../store/agent-dir.ts";
import { sourceRoot } from "../../store/sources.ts";
import { outputRoot } from "../../store/artifacts.ts";
import { globalSettingsPath, piPythonSettingsPaths } from "../../store/settings.ts";
import { defaultLogDir } from "../../record/log-files.ts";
import { defaultEnvRoot } from "../../host/backend.ts";

const saved = process.env.PI_CODING_AGENT_DIR;
after(() => {
  if (saved === undefined) delete process.env.PI_CODING_AGENT_DIR;
  else process.env.PI_CODING_AGENT_DIR = saved;
});

const folders = () => ({
  scripts: sourceRoot(),
  outputs: outputRoot(),
  settings: globalSettingsPath(),
  piPython: piPythonSettingsPaths(undefined).global,
  logs: defaultLogDir({}),
  environments: defaultEnvRoot(),
});

test("not handed down: each folder under the agent directory is a clear error, not a guess", () => {
  for (const where of [agentDir, sourceRoot, outputRoot, globalSettingsPath, () => defaultLogDir({}), defaultEnvRoot])
    assert.throws(where, /Pi's agent directory was not handed down: call useAgentDir\(getAgentDir\)/);
  // What does not live there still works: an explicit log directory.
  assert.equal(defaultLogDir({ PI_CODE_EXECUTION_LOG_DIR: "/logs" }), "/logs");
});

test("Pi's rule handed down: the same folders as Pi names them, read at each call", () => {
  useAgentDir(getAgentDir);
  process.env.PI_CODING_AGENT_DIR = "/x/agent";
  assert.equal(getAgentDir(), "/x/agent");
  assert.deepEqual(folders(), {
    scripts: "/x/agent/code-execution",
    outputs: "/x/agent/code-execution-output",
    settings: "/x/agent/pi-code-execution/settings.json",
    piPython: "/x/agent/pi-python/settings.json",
    logs: "/x/agent/pi-code-supervisor/logs",
    environments: "/x/agent/pi-code-execution/envs",
  });
  process.env.PI_CODING_AGENT_DIR = "/y/agent";
  assert.equal(folders().scripts, "/y/agent/code-execution", "a changed variable moves them, as with Pi's own call");
});
