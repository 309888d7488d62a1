// The supervisor host: builds the actor system with every effect provided from actors/, and offers the extension
// a small API. The extension sends commands and reads outcomes and snapshots; it never reaches into actors.
import { createHash } from "node:crypto";
import { nanoid } from "nanoid";
import { createActor, type Actor, type InspectionEvent, type Observer } from "xstate";
import {
  DEFAULT_LIMITS,
  type CellRef,
  type Language,
  type Limits,
  type RunOutcome,
  type Surface,
} from "../machines/events.ts";
import type { RunShown } from "../actors/process/display-frames.ts";
import type { CommandEvent } from "../machines/events.ts";
import type { supervisorMachine, SessionEntry } from "../machines/supervisor.ts";
import { createKernelLogic } from "../actors/process/runner.ts";
import { createDispatchLogic, type RunBridge } from "../actors/calls/dispatch.ts";
import type { NestedCallRecord } from "../machines/tool-events.ts";
import { localOperations, type ProcessOperations } from "../actors/process/operations.ts";
import { RunOutput, type CollectedOutput } from "../actors/process/output.ts";
import { liveGroups, stopGroup } from "../actors/process/registry.ts";
import { supervisorWith, tapCommands } from "./system.ts";
import type { Clock } from "../record/observe.ts";
import type { Result } from "../lib/result.ts";
import { createInstallLogic, removeSessionPackages, type InstallProgress } from "../actors/deps/dependencies.ts";
import {
  InterpreterResolver,
  knownInterpreter,
  runnerEnv,
  type Interpreter,
  type Probe,
} from "../actors/interpreter/interpreter.ts";
import { watchModules } from "../actors/process/module-watch.ts";
import { finishOutcome, prepareRun, refusedOutcome, SessionBook, type SessionHistory } from "./prepare.ts";
import { ExecHost, execLogDir, type ExecHostOptions } from "./exec.ts";
import { getAgentDir } from "@earendil-works/pi-coding-agent";
import { operationsFor } from "../actors/process/backends.ts";
import type { BackendInfo } from "../actors/process/operations.ts";
import { loadSettings, type ResourceLimits } from "../store/settings.ts";
import { defaultEnvRoot, defaultSessionRoot } from "../actors/deps/install-targets.ts";
import { limitHints } from "./limit-hints.ts";

export interface HostOptions {
  limits?: Partial<Limits>;
  /** Where runners start (actors/process/backends.ts). Default: local, unless PI_CODE_EXECUTION_BACKEND says
   * otherwise (then the environment's backend settings). The host closes it at shutdown. */
  ops?: ProcessOperations;
  /** Resource limits of new runners (settings `limits`); read when each process starts. */
  resourceLimits?: () => ResourceLimits;
  /** Environment for new processes; read when each process starts. */
  env?: () => NodeJS.ProcessEnv;
  /** The interpreter of every run, instead of discovery (default: discovery from the run's working directory). */
  python?: (cwd: string) => Promise<Result<Probe>>;
  now?: () => number;
  /** A synchronous observer of every inspection event of the actor system. */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  /** The clock of the actor system's timers (the recorder numbers them; see actors/observe.ts). */
  clock?: Clock;
  /** Taps on the machines' inputs from outside, called just before delivery (facts from boundary actors are
   * seen through `inspect`, see actors/observe.ts). */
  onCommand?: (event: CommandEvent) => void;
  onStop?: () => void;
  onOutput?: (runId: string, channel: string, chunk: Uint8Array) => void;
  /** Interpreter discovery and the python_set_interpreter selection (default: discovery with default settings). */
  interpreter?: InterpreterResolver;
  /** Where PEP 723 environments (fresh runs) and session package directories go (defaults: actors/dependencies.ts). */
  packages?: { envRoot?: string; sessionRoot?: string };
  /** Whether sessions watch and reload their local modules (read when each session starts; default on). */
  moduleReload?: () => boolean;
  /** Whether fresh runs use pre-started spare runners (read at each fresh run; default on). */
  spareRunners?: () => boolean;
  /** A spare runner unused this long retires (default 60 s). */
  spareIdleMs?: number;
  /** Shell sessions (host/exec.ts): log folder and quotas, process operations. */
  exec?: Partial<Omit<ExecHostOptions, "hostId" | "env" | "now">>;
}

export interface RunRequestInput {
  code: string;
  cwd: string;
  timeoutMs: number;
  session?: string;
  reset?: boolean;
  /** The tool surface asking (the inspector and event log show it in the run's input). */
  surface?: Surface;
  /** A notebook cell's place in its call. */
  cell?: CellRef;
  /** Change to this directory before the code runs; it goes first on sys.path (notebook `cwd`). */
  chdir?: string;
  /** `value`: the trailing value's repr and the error text come back as `value` and `exception`, not as output. */
  result?: "print" | "value";
  /** `work`: the timeout pauses while a nested call is open. */
  budget?: "wall" | "work";
  /** This surface's escalation: its grace period, and pi-python's second SIGINT halfway through it. */
  escalation?: { graceMs?: number; secondInterrupt?: boolean };
  /** Absent: Python. JavaScript runs only in a session (`eval`'s js cells, docs/protocol-js.md). */
  language?: Language;
}

export interface RunCallbacks {
  signal?: AbortSignal;
  /** Called (throttled by the caller) whenever the run writes output. */
  onOutput?: (output: RunOutput) => void;
  /** Dependency installation progress (each installer line). */
  onProgress?: (progress: InstallProgress) => void;
  /** The Pi tools the code may call, and how (actors/bridge.ts); without it no tool is exposed. */
  bridge?: RunBridge;
  /** A display (image, markdown, HTML, JSON, text) of this run; the text returned goes into its stdout at that
   * point of the output (the runner drained its output before the display). */
  onDisplay?: (item: Exclude<RunShown, { kind: "value" | "exception" }>) => string | undefined;
}

export interface RunResult extends CollectedOutput {
  outcome: RunOutcome;
  /** `result: "value"`: the trailing expression's repr (absent when there was none, or it was None). */
  value?: string;
  /** `result: "value"`: the traceback or error text of a failed run. */
  exception?: string;
}

export interface SessionInfo extends SessionEntry, Partial<Omit<SessionHistory, "incarnation">> {
  name: string;
  state: string;
  pid?: number;
  /** The interpreter's version, from its runner (Node's for a JavaScript session). */
  pythonVersion?: string;
}

interface PendingRun {
  output: RunOutput;
  /** Settles `run()`; the first call wins (a promise settles once). */
  resolve: (outcome: RunOutcome) => void;
  /** Nested-call records by seq (the supervisor emits each as its call ends). */
  nestedCalls: NestedCallRecord[];
  bridge?: RunBridge;
  onProgress?: (p: InstallProgress) => void;
  onDisplay?: RunCallbacks["onDisplay"];
  value?: string;
  exception?: string;
}

export class SupervisorHost {
  readonly actor: Actor<typeof supervisorMachine>;
  /** The escalation bounds for new runs (settings may change them: `setLimits`). */
  limits: Limits;
  readonly interpreter: InterpreterResolver;
  /** Things a user should know that no single run reports (a PYTHONPATH left out, ...). */
  readonly warnings = new Set<string>();
  private readonly options: HostOptions;
  private readonly initialLimits: Limits;
  private readonly book = new SessionBook();
  /** Requests are prepared (interpreter, metadata) one at a time, so they reach the supervisor in call order. */
  private queue: Promise<unknown> = Promise.resolve();
  /** What the host keeps for each unfinished run, from `run()` until its outcome arrives. */
  private readonly runs = new Map<string, PendingRun>();
  private readonly now: () => number;
  private closed = false;
  readonly id = nanoid(8);
  private readonly baseEnv: () => NodeJS.ProcessEnv;
  private readonly spareRunners: () => boolean;
  /** Shell sessions: the exec tools' door (host/exec.ts). */
  readonly exec: ExecHost;
  /** Where this host's runners start: one backend for the host's whole life. */
  readonly ops: ProcessOperations;

  constructor(options: HostOptions = {}) {
    this.options = options;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.initialLimits = this.limits;
    this.now = options.now ?? Date.now;
    const env = options.env ?? (() => process.env);
    this.baseEnv = env;
    this.spareRunners = options.spareRunners ?? (() => true);
    this.interpreter = options.interpreter ?? new InterpreterResolver({ env });
    const host = this;
    this.ops = options.ops ?? defaultOperations(env(), options.packages);
    const kernel = createKernelLogic({
      ops: this.ops,
      ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}),
      python: options.python ?? ((cwd) => this.interpreter.resolve(cwd)),
      env: (input) => withPlotBackend(this.runnerEnvFor(env(), input.python)),
      watchModules: (cwd) => ((options.moduleReload?.() ?? true) ? watchModules(cwd) : undefined),
      output: (runId, channel, chunk) => {
        options.onOutput?.(runId, channel, chunk);
        this.runs.get(runId)?.output.write(channel, chunk);
      },
      shown: (runId, item) => this.shown(runId, item),
      now: this.now,
      get killMs() {
        return host.limits.killMs;
      },
      hostId: this.id,
    });
    const install = createInstallLogic({
      env,
      now: this.now,
      hostId: this.id,
      killMs: () => this.limits.killMs,
      progress: (runId, p) => this.runs.get(runId)?.onProgress?.(p),
      backend: () => this.ops,
      ...options.packages,
    });
    const dispatch = createDispatchLogic({ bridgeFor: (runId) => this.runs.get(runId)?.bridge, now: this.now });
    this.exec = new ExecHost({
      hostId: this.id,
      env,
      now: this.now,
      logDir: options.exec?.logDir ?? execLogDir(getAgentDir()),
      ...options.exec,
    });
    const machine = supervisorWith(kernel, { dispatch, install, shell: this.exec.shellLogic });
    this.actor = createActor(machine, {
      id: "supervisor",
      systemId: "supervisor",
      input: {
        limits: this.limits,
        ...(options.spareIdleMs !== undefined ? { spareIdleMs: options.spareIdleMs } : {}),
      },
      ...(options.inspect ? { inspect: options.inspect } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
    });
    tapCommands(this.actor, options.onCommand, options.onStop);
    this.exec.attach(this.actor);
    this.actor.on("run.nested_call", ({ runId, record }) => {
      const pending = this.runs.get(runId);
      if (pending) pending.nestedCalls[record.seq - 1] = record;
    });
    this.actor.on("run.finished", ({ outcome }) => {
      this.runs.get(outcome.runId)?.resolve(outcome);
    });
    // An unhandled root error must never crash Pi; the registry still stops every process on shutdown.
    this.actor.subscribe({ error: () => this.killEverything() });
    this.actor.start();
  }

  /** Runs code and resolves with its outcome and output. Never rejects: failures are outcomes. */
  run(request: RunRequestInput, callbacks: RunCallbacks = {}): Promise<RunResult> {
    const runId = nanoid(12);
    if (this.closed) {
      const at = this.now();
      return Promise.resolve({
        outcome: refusedOutcome(runId, request, at, at, undefined),
        ...new RunOutput().collect(),
      });
    }
    const output = new RunOutput();
    if (callbacks.onOutput) output.onWrite(() => callbacks.onOutput!(output));
    const bridge = callbacks.bridge;
    const finished = new Promise<RunOutcome>((resolve) =>
      this.runs.set(runId, {
        output,
        resolve,
        nestedCalls: [],
        ...(bridge ? { bridge } : {}),
        ...(callbacks.onProgress ? { onProgress: callbacks.onProgress } : {}),
        ...(callbacks.onDisplay ? { onDisplay: callbacks.onDisplay } : {}),
      }),
    );
    const cancel = () => this.actor.send({ type: "run.cancel", at: this.now(), runId });
    const requestedAt = this.now();
    // The interpreter and the script's metadata are settled first, one request at a time (call order holds).
    // A JavaScript run needs no interpreter: Node is the one running Pi.
    const interpreter =
      this.options.python || request.language === "js" ? undefined : () => this.interpreter.resolve(request.cwd);
    const prepared = this.queue.then(() => prepareRun(request, interpreter));
    this.queue = prepared;
    let notes: string[] = [];
    void prepared.then((p) => {
      if (this.closed || !p.ok) {
        // Refused before any actor exists: the outcome is the host's own.
        const incarnation = request.session
          ? this.actor.getSnapshot().context.sessions[request.session]?.incarnation
          : undefined;
        const failure = p.ok ? undefined : p.error;
        return this.runs
          .get(runId)
          ?.resolve(refusedOutcome(runId, request, requestedAt, this.now(), failure, incarnation));
      }
      notes = p.value.notes;
      callbacks.signal?.addEventListener("abort", cancel, { once: true });
      this.send(request, runId, requestedAt, p.value, bridge);
      if (callbacks.signal?.aborted) cancel();
    });
    return finished.then((outcome) => {
      callbacks.signal?.removeEventListener("abort", cancel);
      const pending = this.runs.get(runId);
      const nestedCalls = (pending?.nestedCalls ?? []).filter(Boolean);
      this.runs.delete(runId);
      if (nestedCalls.length) outcome = { ...outcome, nestedCalls };
      this.book.record(outcome);
      // Not a spread: that would decode the retained output (up to 64 MiB) whether or not anyone reads it.
      const result: RunResult = Object.assign(output.collect(), { outcome });
      result.outcome = finishOutcome(outcome, result.capture.stderr.tail, notes);
      if (pending?.value !== undefined) result.value = pending.value;
      if (pending?.exception !== undefined) result.exception = pending.exception;
      const limited = limitHints(result.outcome, result.capture.stderr.tail, this.options.resourceLimits?.());
      if (limited.length) result.outcome = { ...result.outcome, hints: [...(result.outcome.hints ?? []), ...limited] };
      return result;
    });
  }

  /** A run's value, error text or display, as the runner reported it. */
  private shown(runId: string, item: RunShown): void {
    const pending = this.runs.get(runId);
    if (!pending) return;
    if (item.kind === "value") pending.value = item.text;
    else if (item.kind === "exception") pending.exception = item.text;
    else {
      let text: string | undefined;
      try {
        text = pending.onDisplay ? pending.onDisplay(item) : plainDisplay(item);
      } catch {
        text = undefined; // a display that cannot be rendered is left out; the run goes on
      }
      if (text) pending.output.write("stdout", Buffer.from(text, "utf8"));
    }
  }

  private send(
    request: RunRequestInput,
    runId: string,
    at: number,
    p: { interpreter?: Interpreter; dependencies?: string[] },
    bridge: RunBridge | undefined,
  ): void {
    const python = p.interpreter?.executable;
    this.actor.send({
      type: "run.start",
      at,
      runId,
      code: request.code,
      cwd: request.cwd,
      timeoutMs: request.timeoutMs,
      ...(request.session !== undefined ? { session: request.session } : {}),
      ...(request.reset ? { reset: true } : {}),
      ...(request.language === "js" ? { language: "js" as const } : {}),
      ...(bridge ? { bridge: { callerId: bridge.callerId, tools: bridge.tools.map((t) => t.spec) } } : {}),
      ...(python ? { python } : {}),
      ...(p.dependencies ? { dependencies: p.dependencies } : {}),
      ...this.limitsFor(request),
      backend: this.ops.backend.label,
      ...(request.surface ? { surface: request.surface } : {}),
      ...(request.cell ? { cell: request.cell } : {}),
      ...(request.chdir ? { chdir: request.chdir } : {}),
      ...(request.result ? { result: request.result } : {}),
      ...(request.budget ? { budget: request.budget } : {}),
      ...(request.session === undefined && this.spareRunners() ? { spareKey: this.spareKey(python, request.cwd) } : {}),
    });
  }

  /** The run's escalation bounds when they differ from the supervisor's: changed settings, or a surface's own
   * escalation (pi-python: SIGINT, a second SIGINT halfway through the grace, the kill at its end). */
  private limitsFor(request: RunRequestInput): { limits?: Limits } {
    const e = request.escalation;
    if (!e) return sameLimits(this.limits, this.initialLimits) ? {} : { limits: this.limits };
    const graceMs = e.graceMs ?? this.limits.graceMs;
    if (!e.secondInterrupt) return { limits: { ...this.limits, graceMs } };
    const half = Math.floor(graceMs / 2);
    return { limits: { ...this.limits, interruptWindowMs: half, graceMs: graceMs - half, secondInterrupt: true } };
  }

  /** What a spare runner must share with a fresh run to serve it: interpreter, cwd and the whole environment. */
  private spareKey(python: string | undefined, cwd: string): string {
    const env = this.baseEnv();
    const h = createHash("sha256")
      .update(JSON.stringify(this.options.resourceLimits?.() ?? {}))
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

  /** Where runs execute. */
  backend(): BackendInfo {
    return this.ops.backend;
  }

  /** Whether the backend can start runners now (never rejects). */
  async backendHealth(): Promise<Result<string, { message: string; hint?: string }>> {
    try {
      return await this.ops.health();
    } catch (e) {
      return { ok: false, error: { message: (e as Error).message } };
    }
  }

  /** New escalation bounds: they apply to runs requested from now on (and to sessions they start). */
  setLimits(limits: Partial<Limits>): void {
    this.limits = { ...this.limits, ...limits };
  }

  /** The runner's environment: a PYTHONPATH built for another interpreter is left out (and said so once), and a
   * virtual environment's interpreter gets its bin/ first on PATH. */
  private runnerEnvFor(base: NodeJS.ProcessEnv, python: string | undefined): NodeJS.ProcessEnv {
    const info = python ? knownInterpreter(python) : undefined;
    if (!info) return base;
    const { env, dropped } = runnerEnv(base, info);
    if (dropped) {
      this.warnings.add(
        `PYTHONPATH is not passed to Python ${info.version} (${python}): its entry ${dropped} belongs to another Python version`,
      );
    }
    return env;
  }

  sessions(): SessionInfo[] {
    const snapshot = this.actor.getSnapshot();
    return Object.entries(snapshot.context.sessions)
      .filter(([, entry]) => entry.status === "alive")
      .map(([name, entry]) => {
        const child = snapshot.children[`session:${name}`];
        const s = child?.getSnapshot() as
          { value?: unknown; context?: { kernel?: { pid: number; python: string } } } | undefined;
        const history = this.book.get(name, entry.incarnation);
        return {
          name,
          ...entry,
          state: String(s?.value ?? "unknown"),
          ...(s?.context?.kernel ? { pid: s.context.kernel.pid, pythonVersion: s.context.kernel.python } : {}),
          ...(history
            ? { startedAt: history.startedAt, ...(history.lastRun ? { lastRun: history.lastRun } : {}) }
            : {}),
        };
      });
  }

  /** Stops a session and starts it again empty: same name and working directory, the current interpreter. */
  async restartSession(name: string, timeoutMs = 60_000): Promise<RunResult | undefined> {
    const entry = this.actor.getSnapshot().context.sessions[name];
    if (!entry || entry.status !== "alive") return undefined;
    return this.run({
      code: "",
      cwd: entry.cwd,
      timeoutMs,
      session: name,
      reset: true,
      ...(entry.language === "js" ? { language: "js" as const } : {}),
    });
  }

  stopSession(name: string): Promise<boolean> {
    const entry = this.actor.getSnapshot().context.sessions[name];
    if (!entry || entry.status !== "alive") return Promise.resolve(false);
    this.actor.send({ type: "session.stop", at: this.now(), name });
    return this.waitFor(() => this.actor.getSnapshot().context.sessions[name]?.status !== "alive", 3000).then(
      () => true,
    );
  }

  /** Closes sessions, cancels runs and makes sure no Python process outlives the host. */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.actor.send({ type: "supervisor.shutdown", at: this.now() });
    const bound = this.limits.interruptWindowMs + this.limits.graceMs + 2 * this.limits.killMs + 200;
    await Promise.all([
      this.waitFor(() => {
        const c = this.actor.getSnapshot().context;
        return Object.keys(c.active).length === 0 && Object.values(c.sessions).every((s) => s.status !== "alive");
      }, bound),
      // Shell sessions: SIGTERM, 1 s, SIGKILL (machines/exec-session.ts), then what is left of their groups.
      this.exec.shutdown(2500),
    ]);
    this.actor.stop();
    await this.killEverything();
    await this.ops.close().catch(() => {});
    await removeSessionPackages(this.id, this.options.packages?.sessionRoot);
    // Runs that did not report within the bound end as cancelled: no caller waits forever.
    for (const [runId, { resolve }] of this.runs) {
      const at = this.now();
      resolve({
        runId,
        status: "cancelled",
        displayedValue: false,
        requestedAt: at,
        finishedAt: at,
        durationMs: 0,
        killed: true,
        stopReason: "cancelled",
        message: "Pi shut down during the run.",
      });
    }
  }

  private async killEverything(): Promise<void> {
    await Promise.all(liveGroups(this.id).map((pgid) => stopGroup(pgid, this.limits.killMs)));
  }

  private waitFor(done: () => boolean, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const started = Date.now();
      const poll = () => (done() || Date.now() - started > timeoutMs ? resolve() : setTimeout(poll, 5));
      poll();
    });
  }
}

/** A display as plain output, for callers that render none themselves: text as is, an image as a line. */
function plainDisplay(item: Exclude<RunShown, { kind: "value" | "exception" }>): string {
  if (item.kind === "image") return `[image: ${item.mime}]\n`;
  return item.text.endsWith("\n") ? item.text : `${item.text}\n`;
}

/** matplotlib draws off-screen (Agg) unless the user chose a backend: figures are shown as images, never in windows
 * that would block a run. */
function withPlotBackend(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return env.MPLBACKEND ? env : { ...env, MPLBACKEND: "Agg" };
}

/** The backend a host gets without one given: local, or what PI_CODE_EXECUTION_BACKEND and the other backend
 * variables say (so the same tests run against the sandbox or a remote). */
function defaultOperations(env: NodeJS.ProcessEnv, packages: HostOptions["packages"]): ProcessOperations {
  if (!env.PI_CODE_EXECUTION_BACKEND) return localOperations;
  const values = loadSettings(undefined, env).values;
  return operationsFor(values, {
    localRoot: process.cwd(),
    support: [packages?.envRoot ?? defaultEnvRoot(), packages?.sessionRoot ?? defaultSessionRoot()],
  });
}

function sameLimits(a: Limits, b: Limits): boolean {
  return a.interruptWindowMs === b.interruptWindowMs && a.graceMs === b.graceMs && a.killMs === b.killMs;
}
