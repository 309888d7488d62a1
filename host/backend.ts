// Where a host's runners start: one backend (this machine, a bubblewrap sandbox, or a remote transport) for the
// host's whole life, chosen from the settings and Pi's `--ssh`/`--sandbox` flags (actors/process/backends.ts).
import type { BackendSettings } from "../lib/setting-types.ts";
import { failingOperations, operationsFor, parseSshFlag } from "../actors/process/backends.ts";
import { localOperations, type ProcessOperations } from "../actors/process/operations.ts";
import { defaultSessionRoot } from "../actors/deps/install-targets.ts";
import { join } from "node:path";
import { agentDir } from "../store/agent-dir.ts";
import { loadSettings } from "../store/settings.ts";

export interface BackendChoice {
  /** Pi's working directory (the remote backend maps it to `remote.cwd`). */
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** `--ssh user@host[:remote-cwd]`, if given. */
  ssh?: string;
  /** `--sandbox`. */
  sandbox?: boolean;
  /** Where PEP 723 environments and session packages go (a sandboxed runner must read them). */
  packages?: { envRoot?: string; sessionRoot?: string };
}

/** Where fresh runs' dependency environments are cached: in Pi's agent directory (store/agent-dir.ts). */
export function defaultEnvRoot(): string {
  return join(agentDir(), "pi-code-execution", "envs");
}

/** The backend for these settings and flags: `--ssh` over `--sandbox` over the `backend` setting. A malformed
 * `--ssh` gives a backend whose every run is a setup_error saying why (never a silent local one). */
export function chooseOperations(values: BackendSettings, choice: BackendChoice): ProcessOperations {
  const support = [
    choice.packages?.envRoot ?? defaultEnvRoot(),
    choice.packages?.sessionRoot ?? defaultSessionRoot(),
  ];
  const context = { localRoot: choice.cwd, support };
  if (choice.ssh) {
    const parsed = parseSshFlag(choice.ssh, values.remote);
    return parsed.ok
      ? operationsFor({ ...values, backend: "remote", remote: parsed.remote }, context)
      : failingOperations("remote", { message: parsed.error, hint: "remote_unreachable" });
  }
  return operationsFor({ ...values, backend: choice.sandbox ? "sandbox" : values.backend }, context);
}

/** The backend a host gets without one given: local, or what PI_CODE_EXECUTION_BACKEND and the other backend
 * variables say (so the same tests run against the sandbox or a remote). */
export function defaultOperations(env: NodeJS.ProcessEnv, packages?: BackendChoice["packages"]): ProcessOperations {
  if (!env.PI_CODE_EXECUTION_BACKEND) return localOperations;
  return chooseOperations(loadSettings(undefined, env).values, {
    cwd: process.cwd(),
    env,
    ...(packages ? { packages } : {}),
  });
}
