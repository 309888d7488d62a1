// The supervisor host: builds the actor system with every effect provided from actors/, and offers the extension
// a small API. The extension sends commands and reads outcomes and snapshots; it never reaches into actors.
import { createHash } from "node:crypto";
import { nanoid } from "nanoid";
import { createActor, type Actor, type InspectionEvent, type Observer } from "xstate";
import { DEFAULT_LIMITS, type Limits, type RunOutcome } from "../machines/events.ts";
import type { CommandEvent } from "../machines/events.ts";
import type { supervisorMachine, SessionEntry } from "../machines/supervisor.ts";
import { createKernelLogic } from "../actors/process/runner.ts";
import { createDispatchLogic, type RunBridge } from "../actors/calls/dispatch.ts";
import type { NestedCallRecord } from "../machines/tool-events.ts";
import { localOperations, type ProcessOperations } from "../actors/process/operations.ts";
import { RunOutput, type CollectedOutput } from "../actors/process/output.ts";
import { pythonCommand, resolvePython, type PythonInfo } from "../actors/interpreter/probe.ts";
import { liveGroups, stopGroup } from "../actors/process/registry.ts";
import { supervisorWith, tapCommands } from "./system.ts";
import type { Clock } from "../record/observe.ts";
import type { Result } from "../lib/result.ts";
import { createInstallLogic, removeSessionPackages, type InstallProgress } from "../actors/deps/dependencies.ts";
import { InterpreterResolver, knownInterpreter, runnerEnv, type Interpreter } from "../actors/interpreter/interpreter.ts";
import { watchModules } from "../actors/process/module-watch.ts";
import { finishOutcome, prepareRun, refusedOutcome, SessionBook, type SessionHistory } from "./prepare.ts";
import { ExecHost, execLogDir, type ExecHostOptions } from "./exec.ts";
import { agentDir } from "../record/log-files.ts";

export interface HostOptions {
  limits?: Partial<Limits>;
  ops?: ProcessOperations;
  /** Environment for new processes; read when each process starts. */
  env?: () => NodeJS.ProcessEnv;
  python?: () => Promise<Result<PythonInfo>>;
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
}

export interface RunCallbacks {
  signal?: AbortSignal;
  /** Called (throttled by the caller) whenever the run writes output. */
  onOutput?: (output: RunOutput) => void;
  /** Dependency installation progress (each installer line). */
  onProgress?: (progress: InstallProgress) => void;
  /** The Pi tools the code may call, and how (actors/bridge.ts); without it no tool is exposed. */
  bridge?: RunBridge;
}

export interface RunResult extends CollectedOutput {
  outcome: RunOutcome;
}

export interface SessionInfo extends SessionEntry, Partial<Omit<SessionHistory, "ordinal">> {
  name: string;
  state: string;
  pid?: number;
  /** The interpreter's version, from its runner. */
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
    const kernel = createKernelLogic({
      ops: options.ops ?? localOperations,
      python: options.python ?? (() => resolvePython(pythonCommand(env()), env())),
      env: (input) => this.runnerEnvFor(env(), input.python),
      watchModules: (cwd) => ((options.moduleReload?.() ?? true) ? watchModules(cwd) : undefined),
      output: (runId, channel, chunk) => {
        options.onOutput?.(runId, channel, chunk);
        this.runs.get(runId)?.output.write(channel, chunk);
      },
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
      ...options.packages,
    });
    const dispatch = createDispatchLogic({ bridgeFor: (runId) => this.runs.get(runId)?.bridge, now: this.now });
    this.exec = new ExecHost({
      hostId: this.id,
      env,
      now: this.now,
      logDir: options.exec?.logDir ?? execLogDir(agentDir(env())),
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
      }),
    );
    const cancel = () => this.actor.send({ type: "run.cancel", at: this.now(), runId });
    const requestedAt = this.now();
    // The interpreter and the script's metadata are settled first, one request at a time (call order holds).
    const prepared = this.queue.then(() =>
      prepareRun(request, this.options.python ? undefined : () => this.interpreter.resolve(request.cwd)),
    );
    this.queue = prepared;
    let notes: string[] = [];
    void prepared.then((p) => {
      if (this.closed || !p.ok) {
        // Refused before any actor exists: the outcome is the host's own.
        return this.runs
          .get(runId)
          ?.resolve(refusedOutcome(runId, request, requestedAt, this.now(), p.ok ? undefined : p.error));
      }
      notes = p.value.notes;
      callbacks.signal?.addEventListener("abort", cancel, { once: true });
      this.send(request, runId, requestedAt, p.value, bridge);
      if (callbacks.signal?.aborted) cancel();
    });
    return finished.then((outcome) => {
      callbacks.signal?.removeEventListener("abort", cancel);
      const nestedCalls = (this.runs.get(runId)?.nestedCalls ?? []).filter(Boolean);
      this.runs.delete(runId);
      if (nestedCalls.length) outcome = { ...outcome, nestedCalls };
      this.book.record(outcome);
      // Not a spread: that would decode the retained output (up to 64 MiB) whether or not anyone reads it.
      const result = Object.assign(output.collect(), { outcome });
      result.outcome = finishOutcome(outcome, result.capture.stderr.tail, notes);
      return result;
    });
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
      ...(bridge ? { bridge: { callerId: bridge.callerId, tools: bridge.tools.map((t) => t.spec) } } : {}),
      ...(python ? { python } : {}),
      ...(p.dependencies ? { dependencies: p.dependencies } : {}),
      ...(sameLimits(this.limits, this.initialLimits) ? {} : { limits: this.limits }),
      ...(request.session === undefined && this.spareRunners() ? { spareKey: this.spareKey(python, request.cwd) } : {}),
    });
  }

  /** What a spare runner must share with a fresh run to serve it: interpreter, cwd and the whole environment. */
  private spareKey(python: string | undefined, cwd: string): string {
    const env = this.baseEnv();
    const h = createHash("sha256")
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
        const history = this.book.get(name, entry.ordinal);
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
    return this.run({ code: "", cwd: entry.cwd, timeoutMs, session: name, reset: true });
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

function sameLimits(a: Limits, b: Limits): boolean {
  return a.interruptWindowMs === b.interruptWindowMs && a.graceMs === b.graceMs && a.killMs === b.killMs;
}
