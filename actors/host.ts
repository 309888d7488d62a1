// The supervisor host: builds the actor system with every effect provided from actors/, and offers the extension
// a small API. The extension sends commands and reads outcomes and snapshots; it never reaches into actors.
import { nanoid } from "nanoid";
import { createActor, type Actor, type InspectionEvent, type Observer } from "xstate";
import { DEFAULT_LIMITS, type Limits, type RunOutcome } from "../machines/events.ts";
import { runMachine } from "../machines/run.ts";
import { sessionMachine } from "../machines/session.ts";
import { supervisorMachine, type SessionEntry } from "../machines/supervisor.ts";
import { createKernelLogic } from "./kernel.ts";
import { localOperations, type ProcessOperations } from "./operations.ts";
import { RunOutput, type CollectedOutput } from "./output.ts";
import { pythonCommand, resolvePython, type PythonInfo } from "./python.ts";
import { liveGroups, stopGroup } from "./registry.ts";
import type { Result } from "./result.ts";

export interface HostOptions {
  limits?: Partial<Limits>;
  ops?: ProcessOperations;
  /** Environment for new processes; read when each process starts. */
  env?: () => NodeJS.ProcessEnv;
  python?: () => Promise<Result<PythonInfo>>;
  now?: () => number;
  /** A synchronous observer of every inspection event of the actor system. */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
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
}

export interface RunResult extends CollectedOutput {
  outcome: RunOutcome;
}

export interface SessionInfo extends SessionEntry {
  name: string;
  state: string;
  pid?: number;
}

export class SupervisorHost {
  readonly actor: Actor<typeof supervisorMachine>;
  readonly limits: Limits;
  private readonly outputs = new Map<string, RunOutput>();
  private readonly waiting = new Map<string, (outcome: RunOutcome) => void>();
  private readonly now: () => number;
  private closed = false;
  readonly id = nanoid(8);

  constructor(options: HostOptions = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.now = options.now ?? Date.now;
    const env = options.env ?? (() => process.env);
    const kernel = createKernelLogic({
      ops: options.ops ?? localOperations,
      python: options.python ?? (() => resolvePython(pythonCommand(env()), env())),
      env,
      output: (runId, channel, chunk) => this.outputs.get(runId)?.write(channel, chunk),
      now: this.now,
      killMs: this.limits.killMs,
      hostId: this.id,
    });
    const machine = supervisorMachine.provide({
      actors: {
        run: runMachine.provide({ actors: { kernel } }),
        session: sessionMachine.provide({ actors: { kernel } }),
      },
    });
    this.actor = createActor(machine, {
      id: "supervisor",
      systemId: "supervisor",
      input: { limits: this.limits },
      ...(options.inspect ? { inspect: options.inspect } : {}),
    });
    this.actor.on("run.finished", ({ outcome }) => {
      const resolve = this.waiting.get(outcome.runId);
      this.waiting.delete(outcome.runId);
      resolve?.(outcome);
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
      const outcome: RunOutcome = {
        runId,
        status: "setup_error",
        displayedValue: false,
        requestedAt: at,
        finishedAt: at,
        durationMs: 0,
        killed: false,
        message: "The code_execution supervisor has shut down.",
      };
      return Promise.resolve({ outcome, ...new RunOutput().collect() });
    }
    const output = new RunOutput();
    if (callbacks.onOutput) output.onWrite(() => callbacks.onOutput!(output));
    this.outputs.set(runId, output);
    const finished = new Promise<RunOutcome>((resolve) => this.waiting.set(runId, resolve));
    const cancel = () => this.actor.send({ type: "run.cancel", at: this.now(), runId });
    callbacks.signal?.addEventListener("abort", cancel, { once: true });
    this.actor.send({
      type: "run.start",
      at: this.now(),
      runId,
      code: request.code,
      cwd: request.cwd,
      timeoutMs: request.timeoutMs,
      ...(request.session !== undefined ? { session: request.session } : {}),
      ...(request.reset ? { reset: true } : {}),
    });
    if (callbacks.signal?.aborted) cancel();
    return finished.then((outcome) => {
      callbacks.signal?.removeEventListener("abort", cancel);
      this.outputs.delete(runId);
      return { outcome, ...output.collect() };
    });
  }

  sessions(): SessionInfo[] {
    const snapshot = this.actor.getSnapshot();
    return Object.entries(snapshot.context.sessions)
      .filter(([, entry]) => entry.status === "alive")
      .map(([name, entry]) => {
        const child = snapshot.children[`session:${name}`];
        const s = child?.getSnapshot() as { value?: unknown; context?: { kernel?: { pid: number } } } | undefined;
        return {
          name,
          ...entry,
          state: String(s?.value ?? "unknown"),
          ...(s?.context?.kernel ? { pid: s.context.kernel.pid } : {}),
        };
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
    await this.waitFor(() => {
      const c = this.actor.getSnapshot().context;
      return Object.keys(c.active).length === 0 && Object.values(c.sessions).every((s) => s.status !== "alive");
    }, bound);
    this.actor.stop();
    await this.killEverything();
    // Runs that did not report within the bound end as cancelled: no caller waits forever.
    for (const [runId, resolve] of this.waiting) {
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
    this.waiting.clear();
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
