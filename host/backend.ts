// Where a host's runners start: one backend (this machine, a bubblewrap sandbox, or a remote transport) for the
// host's whole life, chosen from the settings and Pi's `--ssh`/`--sandbox` flags (actors/process/backends.ts).
import type { BackendSettings } from "../lib/setting-types.ts";
import { failingOperations, operationsFor, parseSshFlag } from "../actors/process/backends.ts";
import { localOperations, type ProcessOperations } from "../actors/process/operations.ts";
import { defaultSessionRoot } from "../actors/deps/install-targets.ts";
import { join } from "node:path";
import { agentDir, configDirName } from "../store/agent-dir.ts";
import { loadSettings, type ResolvedSettings } from "../store/settings.ts";

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
  const context = { localRoot: choice.cwd, support, configDir: configDirName() };
  if (choice.ssh) {
    const parsed = parseSshFlag(choice.ssh, values.remote);
    return parsed.ok
      ? operationsFor({ ...values, backend: "remote", remote: parsed.remote }, context)
      : failingOperations("remote", { message: parsed.error, hint: "remote_unreachable" });
  }
  return operationsFor({ ...values, backend: choice.sandbox ? "sandbox" : values.backend }, context);
}

/** A backend that refuses every start, saying which where-code-runs setting could not be read, when one that
 * matters could not: `flag` is the backend Pi's `--ssh`/`--sandbox` chose, which makes a bad `backend` setting moot.
 * Undefined when the settings say where code runs. Never a fallback to this machine (store/settings.ts `broken`). */
export function brokenBackend(
  settings: Pick<ResolvedSettings, "broken" | "values">,
  flag?: "sandbox" | "remote",
): ProcessOperations | undefined {
  const kind = flag ?? settings.values.backend;
  const matters = settings.broken.filter(
    (b) =>
      b.key === undefined ||
      (b.key === "backend" && !flag) ||
      (b.key.startsWith("sandbox.") && kind === "sandbox") ||
      (b.key.startsWith("remote.") && kind === "remote"),
  );
  if (matters.length === 0) return undefined;
  const what = matters.map((b) => `${b.where}: ${b.why}`).join("; ");
  return failingOperations(kind === "remote" ? "remote" : "sandbox", {
    message: `where code runs is not settled, so nothing runs: ${what}. Fix it and start Pi again (/code-status lists the settings).`,
    hint: "settings_unreadable",
  });
}

/** The backend a host gets without one given: local, or what PI_CODE_EXECUTION_BACKEND and the other backend
 * variables say (so the same tests run against the sandbox or a remote). */
export function defaultOperations(env: NodeJS.ProcessEnv, packages?: BackendChoice["packages"]): ProcessOperations {
  if (!env.PI_CODE_EXECUTION_BACKEND) return localOperations;
  const settings = loadSettings(undefined, env);
  return brokenBackend(settings) ?? chooseOperations(settings.values, {
    cwd: process.cwd(),
    env,
    ...(packages ? { packages } : {}),
  });
}
