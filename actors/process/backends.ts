// Chooses the process backend from the settings (`backend`, `sandbox`, `remote`): one per Pi session, behind the
// operations slot, so machines and tool surfaces never know where their processes run.
import { dirname } from "node:path";
import type { BackendSettings, RemoteSettings } from "../../lib/setting-types.ts";
import { fail } from "../../lib/result.ts";
import { localOperations, type ProcessOperations, type StartFailure } from "./operations.ts";
import { remoteOperations } from "./remote.ts";
import { JS_RUNNER_PATH, RUNNER_PATH } from "./runtimes.ts";
import { sandboxOperations } from "./sandbox.ts";

export interface BackendContext {
  /** Pi's working directory (the remote backend maps it to `remote.cwd`). */
  localRoot: string;
  /** Folders a sandboxed runner must read (PEP 723 environments, session packages); the runner's own is added. */
  support?: string[];
  /** Pi's project folder name (CONFIG_DIR_NAME), which the sandbox keeps read-only. */
  configDir?: string;
}

export function operationsFor(
  values: BackendSettings,
  context: BackendContext,
): ProcessOperations {
  switch (values.backend) {
    case "sandbox":
      return sandboxOperations({
        ...values.sandbox,
        support: [dirname(RUNNER_PATH), dirname(JS_RUNNER_PATH), ...(context.support ?? [])],
        ...(context.configDir ? { configDir: context.configDir } : {}),
      });
    case "remote":
      return remoteOperations({ remote: values.remote, localRoot: context.localRoot });
    default:
      return localOperations;
  }
}

/** `--ssh user@host[:remote-cwd]` (as Pi's own ssh example): the remote settings it stands for, or an error. */
export function parseSshFlag(
  value: string,
  base: RemoteSettings,
): { ok: true; remote: RemoteSettings } | { ok: false; error: string } {
  const m = /^(?:([^@\s:/]+)@)?([^@\s:/]+|\[[0-9a-fA-F:]+\])(?::(.*))?$/.exec(value.trim());
  if (!m) return { ok: false, error: `--ssh ${value}: expected user@host or user@host:/remote/dir` };
  const [, user, host, cwd] = m;
  return {
    ok: true,
    remote: {
      ...base,
      transport: "ssh",
      host: host!.replace(/^\[|\]$/g, ""),
      ...(user ? { user } : {}),
      ...(cwd ? { cwd } : {}),
    },
  };
}

/** A backend that cannot exist (a malformed --ssh, say): every run is a setup_error saying why; never local. */
export function failingOperations(kind: "sandbox" | "remote", failure: StartFailure): ProcessOperations {
  return {
    backend: { kind, label: `${kind} (unusable: ${failure.message})` },
    start: async () => fail(failure),
    spawn: async () => fail(failure),
    health: async () => fail(failure),
    close: async () => {},
  };
}
