// The dependency installer actor: installs a script's PEP 723 dependencies with uv or pip (actors/installer.ts)
// into a cached environment (fresh runs) or the session's package directory (actors/install-targets.ts), then
// reports `install.done` (the environment) or `install.failed` (why, with a hint id) to its run. Installers run on
// the host's backend (its `spawn`; a remote installs on its side, `ops.remote`, remote-install.ts); under the sandbox, requirements
// built from local files are refused first (sandbox-policy.ts). The installer's process group is stopped with the
// actor (deadline, cancellation).
import { fromCallback } from "xstate";
import type { Hint, InstallFact, InstallInput } from "../../machines/events.ts";
import { HINT_IDS } from "./hints.ts";
import { freshEnvironment, sessionPackages } from "./install-targets.ts";
import { findInstaller, installerEnv, type InstallProgress, type Job } from "./installer.ts";
import { localOperations, type ProcessOperations } from "../process/operations.ts";
import { sandboxRefusal } from "./sandbox-policy.ts";
import { remoteInstall } from "./remote-install.ts";
import { registerGroup, stopGroup } from "../registry/registry.ts";
import { SHUTDOWN } from "../registry/shutdown.ts";

export type { InstallProgress } from "./installer.ts";
export { packageOf } from "./installer.ts";
export { defaultSessionRoot, environmentKey, removeSessionPackages, topLevelModules } from "./install-targets.ts";

export interface InstallDeps {
  env: () => NodeJS.ProcessEnv;
  now: () => number;
  hostId: string;
  killMs: () => number;
  /** Live progress for the user (not a machine input). */
  progress?: (runId: string, progress: InstallProgress) => void;
  /** Cached fresh-run environments (the host's default: `<agent dir>/pi-code-execution/envs`, host/backend.ts). */
  envRoot: string;
  /** Session package directories (default `<tmp>/pi-code-execution-<uid>`). */
  sessionRoot?: string;
  /** The process backend: one that installs where it runs (remote) gets the job. */
  backend?: () => ProcessOperations;
}

export function createInstallLogic(deps: InstallDeps) {
  return fromCallback<{ type: string }, InstallInput>(({ input, sendBack }) => {
    let stopped = false;
    const groups = new Set<number>();
    const send = (fact: InstallFact) => {
      if (!stopped) sendBack(fact);
    };
    const fail = (message: string, hint?: Hint) =>
      send({ type: "install.failed", at: deps.now(), message, ...(hint ? { hint } : {}) });
    const ctx: Job = {
      input,
      deps,
      env: installerEnv(deps.env()),
      stopped: () => stopped,
      track: (pid) => {
        groups.add(pid);
        registerGroup(pid, { host: deps.hostId, owner: input.owner });
      },
      // The installer exited: whatever it left running (a build helper, a daemon) goes too.
      untrack: (pid) => {
        groups.delete(pid);
        void stopGroup(pid, SHUTDOWN.installer(deps.killMs()));
      },
    };
    void (async () => {
      const backend = deps.backend?.() ?? localOperations;
      ctx.ops = backend;
      if (backend.backend.kind === "sandbox") {
        // Nothing from a place sandboxed code can write is built (sandbox-policy.ts).
        const refused = sandboxRefusal(input.dependencies);
        if (refused) return fail(refused.message, refused.hint);
      }
      if (backend.remote) {
        ctx.installer = { kind: "pip" };
        const result = await remoteInstall(backend.remote, ctx);
        if (stopped) return;
        if (!result.ok) return fail(result.error, result.hint);
        return send({ type: "install.done", at: deps.now(), ...result.value });
      }
      const found = await findInstaller(ctx.env);
      if (!found.ok) return fail(found.error, { id: HINT_IDS.installerUnavailable, text: found.error });
      ctx.installer = found.value;
      const result = input.mode === "fresh" ? await freshEnvironment(ctx) : await sessionPackages(ctx);
      if (stopped) return;
      if (!result.ok) return fail(result.error, result.hint);
      send({ type: "install.done", at: deps.now(), ...result.value });
    })().catch((e: Error) => fail(`dependency installation failed: ${e.message}`));
    return () => {
      stopped = true;
      for (const pid of groups) void stopGroup(pid, SHUTDOWN.installer(deps.killMs()));
    };
  });
}
