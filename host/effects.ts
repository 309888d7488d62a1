// The effects the host provides to the machines (machines/system.ts): the runner process, the dependency installer,
// the nested-call dispatcher and request preparation, each built from the host's options and its live state
// (output sinks, progress callbacks and Pi tools of unfinished runs, current limits, warnings).
import { createHash } from "node:crypto";
import type { AnyActorLogic } from "xstate";
import type { BoundaryActors } from "../machines/system.ts";
import { createRunnerLogic, type RunnerDeps } from "../actors/runner/runner.ts";
import { localOperations, type ProcessOperations } from "../actors/process/operations.ts";
import type { Channel } from "../lib/run-output.ts";
import { watchModules } from "../actors/runner/module-watch.ts";
import {
  knownInterpreter,
  runnerEnv,
  type InterpreterResolver,
  type Probe,
} from "../actors/interpreter/interpreter.ts";
import { createInstallLogic, type InstallProgress } from "../actors/deps/dependencies.ts";
import { createDispatchLogic } from "../actors/calls/dispatch.ts";
import type { RunTools } from "../actors/calls/contract.ts";
import { createPrepareLogic, prepareAtDoor, type PrepareDeps } from "../actors/prepare/prepare.ts";
import type { Result } from "../lib/result.ts";
import type { RunShown } from "../actors/runner/display-frames.ts";
import { withPlotBackend } from "./run-extras.ts";
import { defaultEnvRoot } from "./backend.ts";
import type { ResourceLimits } from "../lib/setting-types.ts";

export interface EffectOptions {
  ops?: ProcessOperations;
  /** Resource limits of new runners; read when each process starts (and part of a spare's key). */
  resourceLimits?: () => ResourceLimits;
  /** Environment for new processes; read when each process starts. */
  env: () => NodeJS.ProcessEnv;
  /** The interpreter of every run (when given, requests are not resolved per working directory). */
  python?: (cwd: string) => Promise<Result<Probe>>;
  interpreter: InterpreterResolver;
  now: () => number;
  hostId: string;
  killMs: () => number;
  packages?: { envRoot?: string; sessionRoot?: string };
  moduleReload?: () => boolean;
  spareRunners: () => boolean;
  /** Where a run's output goes (the recorder's tap, then the run's own collector). */
  output: (runId: string, channel: Channel, chunk: Buffer) => void;
  progress: (runId: string, progress: InstallProgress) => void;
  /** A run's value, error text or display, as the runner reported it. */
  shown: (runId: string, item: RunShown) => void;
  tools: (runId: string) => RunTools | undefined;
  /** Things a user should know that no single run reports. */
  warn: (warning: string) => void;
  /** Runner starts in flight, so shutdown can wait for them and stop what they started. */
  starts?: Set<Promise<unknown>>;
  /** Told of each fact a session's runner sends straight to a run (the recorder's input; see RunnerDeps). */
  onFact?: RunnerDeps["onFact"];
}

/** `ops` whose runner starts are added to `starts` until they settle. */
function trackingStarts(ops: ProcessOperations, starts: Set<Promise<unknown>>): ProcessOperations {
  const tracked: ProcessOperations = Object.create(ops);
  tracked.start = (spec) => {
    const p = ops.start(spec);
    starts.add(p);
    void p.finally(() => starts.delete(p));
    return p;
  };
  return tracked;
}

export function hostEffects(o: EffectOptions): {
  runner: AnyActorLogic;
  boundary: BoundaryActors;
  /** Settles a request at once when nothing needs waiting for (actors/prepare/ `prepareAtDoor`). */
  prepareAtDoor: (request: Parameters<typeof prepareAtDoor>[1]) => ReturnType<typeof prepareAtDoor>;
} {
  const ops = o.ops ?? localOperations;
  const runner = createRunnerLogic({
    ops: o.starts ? trackingStarts(ops, o.starts) : ops,
    ...(o.resourceLimits ? { resourceLimits: o.resourceLimits } : {}),
    python: o.python ?? ((cwd) => o.interpreter.resolve(cwd)),
    env: (input) => withPlotBackend(envFor(o.env(), input.python, o.warn, o.ops ?? localOperations)),
    watchModules: (cwd) => ((o.moduleReload?.() ?? true) ? watchModules(cwd) : undefined),
    output: o.output,
    shown: o.shown,
    now: o.now,
    get killMs() {
      return o.killMs();
    },
    hostId: o.hostId,
    toolSpecs: (runId) => o.tools(runId)?.tools.map((t) => t.spec),
    ...(o.onFact ? { onFact: o.onFact } : {}),
  });
  const install = createInstallLogic({
    env: o.env,
    now: o.now,
    hostId: o.hostId,
    killMs: o.killMs,
    progress: o.progress,
    ...(o.ops ? { backend: () => o.ops! } : {}),
    ...o.packages,
    // Read at each install, so a host that never installs never needs Pi's agent directory.
    get envRoot() {
      return o.packages?.envRoot ?? defaultEnvRoot();
    },
  });
  const dispatch = createDispatchLogic({ toolsFor: o.tools, now: o.now });
  const prepareDeps: PrepareDeps = {
    ...(o.python
      ? {}
      : {
          interpreter: (cwd: string) => o.interpreter.resolveForRun(cwd),
          interpreterNow: (cwd: string) => o.interpreter.resolvedNow(cwd),
        }),
    spareKey: (python, cwd) =>
      o.spareRunners() ? spareKey(o.env(), python, cwd, o.resourceLimits?.() ?? {}) : undefined,
    now: o.now,
  };
  const prepare = createPrepareLogic(prepareDeps);
  return {
    runner,
    boundary: { install, dispatch, prepare },
    prepareAtDoor: (request) => prepareAtDoor(prepareDeps, request),
  };
}

/** What a spare runner must share with a fresh run to serve it: resource limits, interpreter, cwd and the whole
 * environment. */
function spareKey(env: NodeJS.ProcessEnv, python: string | undefined, cwd: string, limits: ResourceLimits): string {
  const h = createHash("sha256")
    .update(JSON.stringify(limits))
    .update("\0")
    .update(python ?? "")
    .update("\0")
    .update(cwd);
  for (const k of Object.keys(env).sort())
    h.update("\0")
      .update(k)
      .update("=")
      .update(env[k] ?? "");
  return h.digest("hex").slice(0, 16);
}

/** The runner's environment: a PYTHONPATH built for another interpreter is left out (and said so), and a virtual
 * environment's interpreter gets its bin/ first on PATH. */
function envFor(
  base: NodeJS.ProcessEnv,
  python: string | undefined,
  warn: (w: string) => void,
  ops: ProcessOperations,
): NodeJS.ProcessEnv {
  const info = python ? knownInterpreter(python, ops) : undefined;
  if (!info) return base;
  const { env, dropped } = runnerEnv(base, info);
  if (dropped) {
    warn(
      `PYTHONPATH is not passed to Python ${info.version} (${python}): its entry ${dropped} belongs to another Python version`,
    );
  }
  return env;
}
