// Runner kinds: what the runner actor (runner.ts) starts for a language, and the few ways the runtimes differ. The
// actor, the frames, the process group and the machines are shared; a kind only says which process to start, how
// an interrupt reaches it and which version its `ready` frame reports.
import type { RunnerInput, Language } from "../../machines/events.ts";
import { fail, ok, type Result } from "../../lib/result.ts";
import type { ResourceLimits } from "../../lib/setting-types.ts";
import type { Frame } from "../process/framing.ts";
import type { BackendInfo, RunnerHandle, RunnerSpec } from "../process/operations.ts";

import { JS_RUNNER_PATH, RUNNER_PATH } from "../process/runtimes.ts";
import type { Probe } from "../interpreter/interpreter.ts";
import { isActor } from "../../machines/actor-ids.ts";

export { JS_RUNNER_PATH, RUNNER_PATH };

/** The runner's `--limits` argument (the setrlimit part; outputMiB is enforced by the runner actor). */
export function limitArgs(limits: ResourceLimits | undefined): string[] {
  if (!limits) return [];
  const parts = (["memoryMiB", "cpuSeconds", "processes", "fileSizeMiB", "openFiles"] as const)
    .filter((k) => limits[k] !== undefined)
    .map((k) => `${k}=${limits[k]}`);
  return parts.length ? ["--limits", parts.join(",")] : [];
}

export interface RunnerKind {
  /** The process for this input on this backend, and the version to report if its `ready` frame names none. */
  start(
    input: RunnerInput,
    limits: ResourceLimits | undefined,
    backend: BackendInfo,
  ): Promise<Result<{ spec: Omit<RunnerSpec, "cwd" | "killMs">; version: string }>>;
  /** Interrupts the executing run (only after its `started`). `batched`: the run is a batch of cells. */
  interrupt(proc: RunnerHandle, runId: string, batched?: boolean): void;
  /** The runtime's version in a `ready` frame. */
  version(frame: Frame): string | undefined;
  /** Python sessions watch their local modules for reload; the JavaScript runner reloads them itself. */
  watchesModules: boolean;
  language?: "js";
}

export interface KindDeps {
  /** The host's default interpreter, as found from a working directory. */
  python: (cwd: string) => Promise<Result<Probe>>;
  env: (input: RunnerInput) => NodeJS.ProcessEnv;
}

/** `runtime-py/runner.py` under the session's interpreter (validated before the run was requested) or the host's
 * default; one SIGINT to the pid interrupts (docs/protocol.md). */
export function pythonKind(deps: KindDeps): RunnerKind {
  return {
    async start(input, limits) {
      const python = input.python ? ok({ executable: input.python, version: "" }) : await deps.python(input.cwd);
      if (!python.ok) return python;
      return ok({
        spec: {
          executable: python.value.executable,
          args: [RUNNER_PATH, "--mode", input.mode, ...limitArgs(limits)],
          env: deps.env(input),
          ...(input.mode === "fresh" ? { fork: isActor(input.owner, "spare") ? "start" : "use" } : {}),
        },
        version: python.value.version,
      });
    },
    // A batch's interrupt goes as a frame: the runner marks the batch stopped before the signal lands, so a cell that
    // catches the KeyboardInterrupt does not let the next cell run (docs/protocol.md, "Notebook cells").
    interrupt: (proc, _runId, batched) =>
      void (batched ? proc.send({ type: "signal", signal: "SIGINT" }) : proc.signal("SIGINT")),
    version: (frame) => (frame.python === undefined ? undefined : String(frame.python)),
    watchesModules: true,
  };
}

/** `runtime-js/runner.js` under the Node that runs Pi (docs/protocol-js.md), on this machine or in the sandbox
 * (the remote backend ships a Python runtime only). The interrupt is a frame: a signal handler runs no sooner than
 * a frame is read, and user code can neither catch nor ignore a frame. Frames wait for the output they say was
 * written before them (`settleOutput`, the frames' `out`), which is how the runner's output precedes its `done`.
 * Of the resource limits, `memoryMiB` becomes V8's heap limit (Node cannot set rlimits on itself); `outputMiB` is the runner actor's, as for Python. */
export function jsKind(deps: Pick<KindDeps, "env">): RunnerKind {
  return {
    async start(input, limits, backend) {
      if (backend.kind === "remote") {
        return fail(
          `JavaScript cells run on this machine or in the sandbox; the ${backend.label} backend runs Python only`,
        );
      }
      const heap = limits?.memoryMiB !== undefined ? [`--max-old-space-size=${limits.memoryMiB}`] : [];
      return ok({
        spec: {
          executable: process.execPath,
          args: [...heap, JS_RUNNER_PATH, "--mode", "session"],
          env: deps.env(input),
          settleOutput: true,
        },
        version: process.versions.node,
      });
    },
    interrupt: (proc, runId) => void proc.send({ type: "interrupt", id: runId }),
    version: (frame) => (frame.node === undefined ? undefined : String(frame.node)),
    watchesModules: false,
    language: "js",
  };
}

export function kindsFor(deps: KindDeps): Record<Language, RunnerKind> {
  return { python: pythonKind(deps), js: jsKind(deps) };
}
