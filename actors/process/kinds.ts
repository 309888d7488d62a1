// Runner kinds: what the runner actor (runner.ts) starts for a language, and the few ways the runtimes differ. The
// actor, the frames, the process group and the machines are shared; a kind only says which process to start, how
// an interrupt reaches it and which version its `ready` frame reports.
import { fileURLToPath } from "node:url";
import type { KernelInput, Language } from "../../machines/events.ts";
import type { PythonInfo } from "../interpreter/probe.ts";
import { ok, type Result } from "../../lib/result.ts";
import type { Frame } from "./frames.ts";
import type { RunnerHandle, RunnerSpec } from "./operations.ts";

export const RUNNER_PATH = fileURLToPath(new URL("../../runtime-py/runner.py", import.meta.url));
export const JS_RUNNER_PATH = fileURLToPath(new URL("../../runtime-js/runner.js", import.meta.url));

export interface RunnerKind {
  /** The process for this input, and the version to report if its `ready` frame names none. */
  start(input: KernelInput): Promise<Result<{ spec: Omit<RunnerSpec, "cwd">; version: string }>>;
  /** Interrupts the executing run (only after its `started`). */
  interrupt(proc: RunnerHandle, runId: string): void;
  /** The runtime's version in a `ready` frame. */
  version(frame: Frame): string | undefined;
  /** Python sessions watch their local modules for reload; the JavaScript runner reloads them itself. */
  watchesModules: boolean;
  language?: "js";
}

export interface KindDeps {
  python: () => Promise<Result<PythonInfo>>;
  env: (input: KernelInput) => NodeJS.ProcessEnv;
}

/** `runtime-py/runner.py` under the session's interpreter (validated before the run was requested) or the host's
 * default; one SIGINT to the pid interrupts (docs/protocol.md). */
export function pythonKind(deps: KindDeps): RunnerKind {
  return {
    async start(input) {
      const python = input.python ? ok({ executable: input.python, version: "" }) : await deps.python();
      if (!python.ok) return python;
      return ok({
        spec: { executable: python.value.executable, args: [RUNNER_PATH, "--mode", input.mode], env: deps.env(input) },
        version: python.value.version,
      });
    },
    interrupt: (proc) => void proc.signal("SIGINT"),
    version: (frame) => (frame.python === undefined ? undefined : String(frame.python)),
    watchesModules: true,
  };
}

/** `runtime-js/runner.js` under the Node that runs Pi (docs/protocol-js.md). The interrupt is a frame: a signal
 * handler runs no sooner than a frame is read, and user code can neither catch nor ignore a frame. Frames wait for
 * the output already readable (`settleOutput`), which is how the runner's output precedes its `done`. */
export function jsKind(deps: Pick<KindDeps, "env">): RunnerKind {
  return {
    async start(input) {
      return ok({
        spec: {
          executable: process.execPath,
          args: [JS_RUNNER_PATH, "--mode", "session"],
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
