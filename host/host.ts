// The supervisor host: builds the actor system with every effect provided (host/effects.ts), and is the extension's
// one door (exported through host/index.ts): commands in (run, stop, restart, shutdown), selectors (sessions,
// limits, warnings) and change events out. The root actor stays inside.
// Past 400 lines, one concept: the door is one class whose methods are each a few lines over the root actor; the
// effects are host/effects.ts, the shells' side host/exec.ts, the selectors host/selectors.ts.
import { nanoid } from "nanoid";
import { createActor, type Actor, type AnyActorRef } from "xstate";
import {
  DEFAULT_LIMITS,
  type Limits,
  type RunFinishedEvent,
  type RunOutcome,
  type RunStartEvent,
} from "../machines/events.ts";
import type { SessionEntry } from "../machines/supervisor.ts";
import { refusal, requestOutcome } from "../machines/run-outcome.ts";
import { supervisorWith, type SupervisorLogic } from "../machines/system.ts";
import type { NestedCallRecord } from "../machines/tool-events.ts";
import type { RunTools } from "../actors/calls/contract.ts";
import { removeSessionPackages, type InstallProgress } from "../actors/deps/dependencies.ts";
import { InterpreterResolver } from "../actors/interpreter/interpreter.ts";
import type { BackendInfo, ProcessOperations } from "../actors/process/operations.ts";
import { RunOutput } from "../lib/run-output.ts";
import { liveGroups, stopGroup } from "../actors/registry/registry.ts";
import { SHUTDOWN } from "../actors/registry/shutdown.ts";
import type { Result } from "../lib/result.ts";
import { hostEffects } from "./effects.ts";
import { backendHint } from "../actors/process/backend-hints.ts";
import { defaultOperations } from "./backend.ts";
import { withOutputHints } from "./output-hints.ts";
import { limitsFor, plainDisplay, requestFields } from "./run-extras.ts";
import type { RunShown } from "../actors/runner/display-frames.ts";
import { directSession, sessionInfos, spareList, spareTargets, type SessionInfo } from "./selectors.ts";
import { ToolSets } from "./tool-sets.ts";
import { BatchCells } from "./batch-cells.ts";
import { SessionBook } from "./session-book.ts";
import { commandTo, tapCommands } from "./command-taps.ts";
import { ExecHost, execLogDir } from "./exec.ts";
import type { HostOptions, RunCallbacks, RunRequestInput, RunResult, SessionsListener } from "./requests.ts";
import { agentDir } from "../store/agent-dir.ts";
import { preciseClock } from "../lib/precise-timer.ts";
import { mark } from "../lib/marks.ts";

export type { SessionInfo } from "./selectors.ts";
export type { HostOptions, RunCallbacks, RunRequestInput, RunResult, SessionsListener } from "./requests.ts";

interface PendingRun {
  output: RunOutput;
  /** Settles `run()`; the first call wins (a promise settles once). */
  resolve: (outcome: RunOutcome) => void;
  requestedAt: number;
  /** Nested-call records by seq (the supervisor emits each as its call ends). */
  nestedCalls: NestedCallRecord[];
  tools?: RunTools;
  onProgress?: (p: InstallProgress) => void;
  onDisplay?: RunCallbacks["onDisplay"];
  value?: string;
  exception?: string;
  /** A batch run's cells (request `batch`). */
  cells?: BatchCells;
}

/** `off` sends every run through the supervisor's queue, none straight to its session. */
export const DIRECT_ENV = "PI_CODE_EXECUTION_DIRECT";

export class SupervisorHost {
  private readonly actor: Actor<SupervisorLogic>;
  /** The escalation bounds for new runs (settings may change them: `setLimits`). */
  limits: Limits;
  readonly interpreter: InterpreterResolver;
  /** Things a user should know that no single run reports (a PYTHONPATH left out, ...). */
  readonly warnings = new Set<string>();
  private readonly options: HostOptions;
  private readonly initialLimits: Limits;
  private readonly book = new SessionBook();
  private readonly toolSets = new ToolSets();
  /** What the host keeps for each unfinished run, from `run()` until its outcome arrives. */
  private readonly runs = new Map<string, PendingRun>();
  private readonly now: () => number;
  private closed = false;
  readonly id = nanoid(8);
  /** Shell sessions: the exec tools' door (host/exec.ts). */
  readonly exec: ExecHost;
  /** Where this host's runners start: one backend for the host's whole life. */
  readonly ops: ProcessOperations;
  private readonly prepareAtDoor: ReturnType<typeof hostEffects>["prepareAtDoor"];
  /** Session actors whose emitted outcomes (direct runs) the host listens to. */
  private readonly listening = new WeakSet<AnyActorRef>();
  /** Direct runs not yet reported. */
  private readonly direct = new Set<string>();
  /** Listeners of the session table, told when a direct run starts or ends (`onSessionsChange`). */
  private readonly sessionPokes = new Set<() => void>();
  /** Runner starts in flight: one that settles after shutdown began registers a process shutdown must stop. */
  private readonly starts = new Set<Promise<unknown>>();

  constructor(options: HostOptions = {}) {
    this.options = options;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.initialLimits = this.limits;
    this.now = options.now ?? Date.now;
    const env = options.env ?? (() => process.env);
    // Interpreters are probed where runs start (this.ops, set below).
    this.interpreter = options.interpreter ?? new InterpreterResolver({ env, ops: () => this.ops });
    this.ops = options.ops ?? defaultOperations(env(), options.packages);
    const { runner, boundary, prepareAtDoor } = hostEffects({
      ops: this.ops,
      ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}),
      env,
      ...(options.python ? { python: options.python } : {}),
      interpreter: this.interpreter,
      now: this.now,
      hostId: this.id,
      killMs: () => this.limits.killMs,
      ...(options.packages ? { packages: options.packages } : {}),
      ...(options.moduleReload ? { moduleReload: options.moduleReload } : {}),
      spareRunners: options.spareRunners ?? (() => true),
      output: (runId, channel, chunk) => {
        options.onOutput?.(runId, channel, chunk);
        this.runs.get(runId)?.output.write(channel, chunk);
      },
      progress: (runId, p) => this.runs.get(runId)?.onProgress?.(p),
      shown: (runId, item) => this.shown(runId, item),
      tools: (runId) => this.runs.get(runId)?.tools,
      warn: (w) => this.warnings.add(w),
      starts: this.starts,
      ...(options.onFact ? { onFact: options.onFact } : {}),
    });
    this.prepareAtDoor = prepareAtDoor;
    this.exec = new ExecHost({
      hostId: this.id,
      env,
      now: this.now,
      logDir: options.exec?.logDir ?? (() => execLogDir(agentDir())),
      // Shells run where runners run: the backend the user chose.
      ops: () => this.ops,
      ...options.exec,
    });
    this.actor = createActor(supervisorWith(runner, { ...boundary, shell: this.exec.shellLogic }), {
      id: "supervisor",
      systemId: "supervisor",
      input: {
        limits: this.limits,
        ...(options.spareIdleMs !== undefined ? { spareIdleMs: options.spareIdleMs } : {}),
      },
      ...(options.inspect ? { inspect: options.inspect } : {}),
      clock: options.clock ?? preciseClock,
    });
    tapCommands(this.actor, options.onCommand, options.onStop);
    this.exec.attach(this.actor, this.options.onCommand);
    this.actor.on("run.nested_call", ({ runId, record }) => {
      const pending = this.runs.get(runId);
      if (pending) pending.nestedCalls[record.seq - 1] = record;
    });
    this.actor.on("run.finished", ({ outcome }) => {
      mark("run.finished");
      this.runs.get(outcome.runId)?.resolve(outcome);
    });
    // An unhandled root error must never crash Pi; the registry still stops every process on shutdown.
    this.actor.subscribe({ error: () => this.killEverything() });
    this.actor.start();
  }

  /** Runs code and resolves with its outcome and output. Never rejects: failures are outcomes. */
  run(request: RunRequestInput, callbacks: RunCallbacks = {}): Promise<RunResult> {
    mark("host.run");
    const runId = nanoid(12);
    const requestedAt = this.now();
    // Refused at the door: nothing starts, and the result says why.
    const refuse = (message: string, extra?: Parameters<typeof refusal>[2]): Promise<RunResult> => {
      const ref = { runId, at: requestedAt, ...(request.session !== undefined ? { session: request.session } : {}) };
      return Promise.resolve({ outcome: refusal(ref, message, extra), ...new RunOutput().collect() });
    };
    if (this.closed) {
      const incarnation = request.session !== undefined ? this.sessionTable()[request.session]?.incarnation : undefined;
      return refuse("The code_execution supervisor has shut down.", incarnation ? { incarnation } : {});
    }
    if (request.chdir && this.ops.mapCwd && this.ops.mapCwd(request.chdir) === undefined) {
      const message =
        `${request.chdir} is outside Pi's working directory: no directory on the ${this.ops.backend.label} backend ` +
        "maps to it (remote.cwd maps Pi's working directory and its subfolders); nothing was run.";
      return refuse(message, { hints: [backendHint("remote_cwd")] });
    }
    if (request.batch?.length && (request.session === undefined || request.language === "js"))
      return refuse("A batch of cells runs only in a Python session; nothing was run.");
    const timeouts = request.cellTimeoutsMs;
    if (
      timeouts &&
      (timeouts.length !== (request.batch?.length ?? 0) || !timeouts.every((t) => Number.isInteger(t) && t >= 1))
    )
      return refuse(
        "cellTimeoutsMs needs one whole number of milliseconds (1 or more) per batch cell; nothing was run.",
      );
    const output = new RunOutput();
    if (callbacks.onOutput) output.onWrite(() => callbacks.onOutput!(output));
    const { tools, signal } = callbacks;
    const finished = new Promise<RunOutcome>((resolve) =>
      this.runs.set(runId, {
        output,
        resolve,
        requestedAt,
        nestedCalls: [],
        ...(tools ? { tools } : {}),
        ...(callbacks.onProgress ? { onProgress: callbacks.onProgress } : {}),
        ...(callbacks.onDisplay ? { onDisplay: callbacks.onDisplay } : {}),
        ...(request.batch?.length ? { cells: new BatchCells(output, requestedAt, callbacks.onCell) } : {}),
      }),
    );
    const cancel = () => this.actor.send({ type: "run.cancel", at: this.now(), runId });
    signal?.addEventListener("abort", cancel, { once: true });
    // Preparation (interpreter, PEP 723, spare key) is settled here when nothing needs waiting for (the interpreter
    // is known); otherwise it happens in the actor system, one request at a time in call order.
    const start: RunStartEvent = {
      type: "run.start",
      at: requestedAt,
      runId,
      code: request.code,
      cwd: request.cwd,
      timeoutMs: request.timeoutMs,
      ...(request.session !== undefined ? { session: request.session } : {}),
      ...(request.reset ? { reset: true } : {}),
      ...(tools ? { calls: { callerId: tools.callerId, ...this.toolSets.of(tools.tools.map((t) => t.spec)) } } : {}),
      ...limitsFor(request, this.limits, this.initialLimits),
      backend: this.ops.backend.label,
      ...requestFields(request),
    };
    const settled: RunStartEvent = { ...start, ...this.prepareAtDoor(start) };
    // The warm path: a settled request for an idle session goes straight to it (host/selectors.ts directSession).
    // `PI_CODE_EXECUTION_DIRECT=off`: every request through the supervisor (the escape hatch, and bench/direct.ts's
    // baseline), read at each run.
    const session = process.env[DIRECT_ENV] === "off" ? undefined : directSession(this.actor.getSnapshot(), settled);
    mark("host.send");
    if (session) this.sendDirect(session, settled);
    else this.actor.send(settled);
    if (signal?.aborted) cancel();
    return finished.then((outcome) => {
      mark("host.outcome");
      signal?.removeEventListener("abort", cancel);
      const pending = this.runs.get(runId);
      const nestedCalls = (pending?.nestedCalls ?? []).filter(Boolean);
      this.runs.delete(runId);
      if (nestedCalls.length) outcome = { ...outcome, nestedCalls };
      this.book.record(outcome);
      // Not a spread: that would decode the retained output (up to 64 MiB) whether or not anyone reads it.
      const result: RunResult = Object.assign(output.collect(), { outcome });
      result.outcome = withOutputHints(outcome, result.capture.stderr.tail, this.options.resourceLimits?.());
      if (pending?.value !== undefined) result.value = pending.value;
      if (pending?.exception !== undefined) result.exception = pending.exception;
      if (pending?.cells) result.cells = pending.cells.all(outcome, pending.value, pending.exception);
      mark("host.result");
      return result;
    });
  }

  /** A run sent straight to its idle session: the session reports its outcome to the host (an emitted
   * `run.finished`), and the session table's listeners hear of the busy session from here, not from the supervisor. */
  private sendDirect(session: AnyActorRef, request: RunStartEvent): void {
    const { prepared: _settled, ...rest } = request;
    const event: RunStartEvent = { ...rest, direct: true };
    if (!this.listening.has(session)) {
      this.listening.add(session);
      session.on("run.finished", ({ outcome }: RunFinishedEvent) => {
        mark("run.finished");
        this.runs.get(outcome.runId)?.resolve(outcome);
        if (this.direct.delete(outcome.runId)) this.pokeSessions();
      });
    }
    this.direct.add(event.runId);
    commandTo(session, event, this.options.onCommand);
    this.pokeSessions();
  }

  private pokeSessions(): void {
    for (const poke of this.sessionPokes) poke();
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

  /** A run's value, error text or display, as the runner reported it. */
  private shown(runId: string, item: RunShown): void {
    const pending = this.runs.get(runId);
    if (!pending) return;
    if (item.kind === "value") pending.value = item.text;
    else if (item.kind === "exception") pending.exception = item.text;
    else if (item.kind === "cell") pending.cells?.ended(item, this.now());
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

  /** New escalation bounds: they apply to runs requested from now on (and to sessions they start). */
  setLimits(limits: Partial<Limits>): void {
    this.limits = { ...this.limits, ...limits };
  }

  /** Calls `listener` whenever the session table changes (a session started, reset, lost, closed, busy or idle);
   * runs and timers alone do not call it. Returns the unsubscribe function. */
  onSessionsChange(listener: SessionsListener): () => void {
    let prev = this.actor.getSnapshot().context.sessions;
    let prevActive = this.actor.getSnapshot().context.active;
    const sub = this.actor.subscribe({
      next: (snapshot) => {
        const { sessions, active } = snapshot.context;
        // Busy and idle are the sessions' own facts (host/selectors.ts): a session run the supervisor started or
        // saw end shows in its table of active runs, not in the session table.
        const runs = sessionRunsChanged(prevActive, active);
        prevActive = active;
        if (sessions === prev && !runs) return;
        const before = prev;
        prev = sessions;
        listener(sessions, before);
      },
      error: () => {},
    });
    // A direct run makes its session busy, then idle, without the supervisor's table changing.
    const poke = () => listener(prev, prev);
    this.sessionPokes.add(poke);
    return () => {
      sub.unsubscribe();
      this.sessionPokes.delete(poke);
    };
  }

  /** Every session the supervisor knows, alive or ended, by name. */
  sessionTable(): Readonly<Record<string, SessionEntry>> {
    return this.actor.getSnapshot().context.sessions;
  }

  /** The live sessions with their phase, process and history. */
  sessions(): SessionInfo[] {
    return sessionInfos(this.actor.getSnapshot(), this.book);
  }

  /** The live spare runners (`spare:<n>`) and whether each is ready to serve a fresh run. */
  spares(): { id: string; key?: string; ready: boolean }[] {
    return spareList(this.actor.getSnapshot());
  }

  /** How many spares each key in use keeps (a pool grows while fresh runs find its spares still warming). */
  spareTargets(): Record<string, number> {
    return spareTargets(this.actor.getSnapshot());
  }

  /** Live actors under the root, runs not yet finished, and spare runners ready to serve (benchmarks, tests). */
  stats(): { children: number; activeRuns: number; readySpares: number } {
    const snapshot = this.actor.getSnapshot();
    return {
      children: Object.keys(snapshot.children).length,
      activeRuns: Object.keys(snapshot.context.active).length + this.direct.size,
      readySpares: this.spares().filter((s) => s.ready).length,
    };
  }

  /** Stops a session and starts it again empty: same name and working directory, the current interpreter. */
  async restartSession(name: string, timeoutMs = 60_000): Promise<RunResult | undefined> {
    const entry = this.sessionTable()[name];
    if (!entry || entry.status !== "alive") return undefined;
    const js = entry.language === "js" ? { language: "js" as const } : {};
    return this.run({ code: "", cwd: entry.cwd, timeoutMs, session: name, reset: true, ...js });
  }

  stopSession(name: string): Promise<boolean> {
    const entry = this.sessionTable()[name];
    if (!entry || entry.status !== "alive") return Promise.resolve(false);
    this.actor.send({ type: "session.stop", at: this.now(), name });
    return this.waitFor(() => this.sessionTable()[name]?.status !== "alive", 3000).then(() => true);
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
    // A start still in flight (a loaded machine) registers its process once it settles: wait, then stop it too.
    await Promise.allSettled([...this.starts]);
    await this.killEverything();
    await this.ops.close().catch(() => {});
    await removeSessionPackages(this.id, this.options.packages?.sessionRoot);
    // Runs that did not report within the bound end as cancelled: no caller waits forever.
    this.direct.clear();
    for (const [runId, pending] of this.runs) {
      pending.resolve(
        requestOutcome({ runId, at: pending.requestedAt }, "cancelled", {
          at: this.now(),
          killed: true,
          stopReason: "cancelled",
          message: "Pi shut down during the run.",
        }),
      );
    }
  }

  private async killEverything(): Promise<void> {
    await Promise.all(liveGroups(this.id).map((pgid) => stopGroup(pgid, SHUTDOWN.hostShutdown(this.limits.killMs))));
  }

  private waitFor(done: () => boolean, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const started = Date.now();
      const poll = () => (done() || Date.now() - started > timeoutMs ? resolve() : setTimeout(poll, 5));
      poll();
    });
  }
}

/** Whether a session run started or ended between two tables of active runs (run id -> its session, or null for a
 * fresh run, which changes no session). */
function sessionRunsChanged(before: Record<string, string | null>, after: Record<string, string | null>): boolean {
  if (before === after) return false;
  const differs = (a: Record<string, string | null>, b: Record<string, string | null>) =>
    Object.entries(a).some(([runId, session]) => session !== null && b[runId] !== session);
  return differs(before, after) || differs(after, before);
}
