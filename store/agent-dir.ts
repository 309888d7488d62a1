// Pi's agent directory: every file this extension keeps lives under it (the global settings, saved scripts and
// outputs, dependency environments, event and shell logs). Pi names it, with its own rule (`getAgentDir()`, which
// reads PI_CODING_AGENT_DIR at each call); the top hands that rule down once (extension/index.ts, through the
// composition root host/create.ts, when Pi loads the extension; bin/cli.ts; a test's setup), so no floor below the
// extension imports Pi. The rule, not a path, is
// handed down: the directory is read where it is used, as Pi would read it there.

let rule: (() => string) | undefined;
let configDir: string | undefined;

/** Sets where Pi keeps its agent files: Pi's `getAgentDir` (or, in a test, a rule of its own), and the name of
 * Pi's folder in a project (Pi's `CONFIG_DIR_NAME`), where the project settings files are. */
export function useAgentDir(agentDir: () => string, configDirName?: string): void {
  rule = agentDir;
  if (configDirName) configDir = configDirName;
}

/** Pi's folder in a project (`<project>/.pi`): Pi's `CONFIG_DIR_NAME` as handed down, else Pi's own default. */
export function configDirName(): string {
  return configDir ?? ".pi";
}

/** Pi's agent directory now. Throws when the top never said where it is: a default here would be a guess. */
export function agentDir(): string {
  if (!rule)
    throw new Error(
      "Pi's agent directory was not handed down: call useAgentDir(getAgentDir) (store/agent-dir.ts) before the store is used",
    );
  return rule();
}
