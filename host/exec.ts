// The shell sessions' door: what the exec tools ask for (start a command and wait, write and wait, kill, list,
// set_on_exit, finalize a tool result) as commands to the supervisor's `exec` pool, and what they get back as plain
// reports. It owns each session's bytes (actors/shell/session-io.ts) and log files; every decision about a
// session's life or its wake is the machines' (machines/exec-*.ts), heard here through the pool's emitted events.
import { statSync } from "node:fs";
import { join } from "node:path";
import type { Actor, AnyActorRef } from "xstate";
import { fail, ok, type Result } from "../lib/result.ts";
import { EXEC_POOL_ID, type ExecCommand, type ExecEmitted, type ExecRecord } from "../machines/exec-pool.ts";
import type { ExecSupervisorCommand, supervisorMachine } from "../machines/supervisor.ts";
import type { OnExit, SetOnExitStatus, WakeNotice } from "../machines/exec-wake-entry.ts";
import { createShellLogic } from "../actors/shell/shell-actor.ts";
import { ExecLogs, type LogQuota } from "../actors/shell/logs.ts";
import { localShellOperations, type ShellOperations } from "../actors/shell/operations.ts";
import { loadPty } from "../actors/shell/pty.ts";
import { resolveShell } from "../actors/shell/shell-path.ts";
import { SessionIO } from "../actors/shell/session-io.ts";
import { answeredAfter, settleTurn, waitOn, type WaitOutcome } from "../actors/shell/waits.ts";
import { liveGroups, stopGroup } from "../actors/process/registry.ts";

export interface ExecHostOptions {
  hostId: string;
  env: () => NodeJS.ProcessEnv;
  /** Where log files go (`<agent dir>/pi-code-supervisor/exec-logs`). */
  logDir: string;
  logQuota?: () => LogQuota;
  ops?: ShellOperations;
  now?: () => number;
}

export interface ProcessReport {
  /** The session's id (the model's `session_id` while it runs). */
  id: number;
  running: boolean;
  /** The shell exited but a background process holds its output open. */
  held: boolean;
  end?: SessionIO["ended"];
  output: Uint8Array;
  omittedBytes: number;
  totalBytes: number;
  logPath?: string;
  logProblem?: string;
  command: string;
  cwd: string;
  tty: boolean;
  pid?: number;
  wallMs: number;
  wait: WaitOutcome;
  /** on_exit wake is armed after this call. */
  armed: boolean;
  /** The exit was returned here while a wake was armed: this result consumes it once Pi finalizes it. */
  consumedWake: boolean;
  writeFailure?: string;
}

export interface KillReport extends Omit<ProcessReport, "wait" | "consumedWake"> {
  signal: string;
  killed: boolean;
  escalated: boolean;
  /** The process had already exited when the kill came. */
  alreadyExited: boolean;
  failure?: string;
}

export interface ExecSessionInfo extends ExecRecord {
  running: boolean;
  wakeArmed: boolean;
  logPath?: string;
  totalBytes: number;
}

export interface SetOnExitReport {
  found: boolean;
  status?: SetOnExitStatus;
  armed: boolean;
  session?: ExecSessionInfo;
}

export interface StartRequest {
  command: string;
  cwd: string;
  shell?: string;
  tty: boolean;
  cols: number;
  rows: number;
  yieldMs: number;
  onExit: OnExit;
  callId: string;
  signal?: AbortSignal;
  /** Called with the session's I/O once it exists (live previews). */
  onStart?: (io: SessionIO) => void;
}

export interface WriteRequest {
  id: number;
  bytes?: Uint8Array;
  /** `answer`: return once the process answers the input; `full`: wait out the window (exit ends it early). */
  until: "answer" | "full";
  durationMs: number;
  callId: string;
  signal?: AbortSignal;
}

type Emitted<T extends ExecEmitted["type"]> = Extract<ExecEmitted, { type: T }>;

const LIVE = new Set(["starting", "running", "held", "stopping"]);

export class ExecHost {
  readonly shellLogic;
  private readonly options: ExecHostOptions;
  private readonly logs: ExecLogs;
  private readonly now: () => number;
  private readonly ios = new Map<number, SessionIO>();
  private actor: Actor<typeof supervisorMachine> | undefined;
  private pool: AnyActorRef | undefined;
  private nextId = 0;
  private readonly answers = new Map<string, Emitted<"exec.answer">>();
  private readonly refused = new Map<number, string>();
  private readonly stopWaiters = new Map<number, ((e: Emitted<"exec.stop_failed"> | undefined) => void)[]>();
  private readonly changeListeners = new Set<(what: ExecEmitted) => void>();
  private deliverer: ((notices: WakeNotice[]) => void | Promise<void>) | undefined;
  private closed = false;
  /** Tool calls that observed a session: only their finalization concerns the wakes. */
  private readonly observers = new Set<string>();

  constructor(options: ExecHostOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.logs = new ExecLogs(options.logDir, options.logQuota);
    this.shellLogic = createShellLogic({
      ops: options.ops ?? localShellOperations,
      io: (id) => this.ios.get(id),
      env: options.env,
      hostId: options.hostId,
      now: this.now,
    });
  }

  attach(actor: Actor<typeof supervisorMachine>): void {
    this.actor = actor;
  }

  /** How due completion prompts reach Pi (`pi.sendMessage`); a throw or rejection counts as a failed delivery. */
  onWake(deliver: (notices: WakeNotice[]) => void | Promise<void>): void {
    this.deliverer = deliver;
  }

  /** Every event of the pool (sessions starting, ending, evicted...): footers and widgets refresh on these. */
  onChange(fn: (what: ExecEmitted) => void): () => void {
    this.changeListeners.add(fn);
    return () => this.changeListeners.delete(fn);
  }

  private send(command: ExecSupervisorCommand): void {
    if ("callId" in command && command.callId) this.observers.add(command.callId);
    this.actor?.send(command);
  }

  /** The pool exists from the first use on (a supervisor that never runs a shell has none). */
  private ensurePool(): AnyActorRef | undefined {
    if (this.pool) return this.pool;
    if (!this.actor) return undefined;
    this.send({ type: "exec.open", at: this.now() });
    this.pool = this.actor.system.get(EXEC_POOL_ID) as AnyActorRef | undefined;
    this.pool?.on("*", (e: ExecEmitted) => this.heard(e));
    return this.pool;
  }

  private heard(e: ExecEmitted): void {
    switch (e.type) {
      case "exec.ended": {
        const io = this.ios.get(e.id);
        io?.finish({
          end: e.end,
          at: e.at,
          code: e.code,
          signal: e.signal,
          ...(e.escalated ? { escalated: true } : {}),
          ...(e.failure ? { failure: e.failure } : {}),
        });
        if (io && e.end !== "exited" && e.end !== "failed") this.ios.delete(e.id);
        this.settleStop(e.id, undefined);
        break;
      }
      case "exec.stop_failed":
        this.settleStop(e.id, e);
        break;
      case "exec.evicting":
        if (!e.running) this.ios.delete(e.id);
        break;
      case "exec.started":
        this.ios.get(e.id)?.changed();
        break;
      case "exec.answer":
        this.answers.set(e.requestId, e);
        break;
      case "exec.refused":
        this.refused.set(e.id, e.reason);
        this.ios.get(e.id)?.finish({ end: "failed", at: this.now(), code: null, signal: null, failure: e.reason });
        break;
      case "exec.wake":
        queueMicrotask(() => void this.deliver(e.batch, e.notices));
        break;
    }
    for (const fn of this.changeListeners) {
      try {
        fn(e);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  private async deliver(batch: number, notices: WakeNotice[]): Promise<void> {
    try {
      if (!this.deliverer) throw new Error("no way to reach Pi yet");
      await this.deliverer(notices);
      this.send({ type: "exec.wake_delivered", at: this.now(), batch });
    } catch (e) {
      this.send({ type: "exec.wake_failed", at: this.now(), batch, message: (e as Error).message ?? String(e) });
    }
  }

  private records(): Record<string, ExecRecord> {
    const snap = this.pool?.getSnapshot() as { context?: { sessions: Record<string, ExecRecord> } } | undefined;
    return snap?.context?.sessions ?? {};
  }

  private wakeArmed(id: number): boolean {
    const s = this.actor?.system.get(`wake:${id}`)?.getSnapshot() as
      | { status: string; value: unknown; context: { armed: boolean } }
      | undefined;
    return !!s && s.status === "active" && s.context.armed;
  }

  private info(r: ExecRecord): ExecSessionInfo {
    const io = this.ios.get(r.id);
    return {
      ...r,
      running: LIVE.has(r.status),
      wakeArmed: this.wakeArmed(r.id),
      ...(io?.logPath ? { logPath: io.logPath } : {}),
      totalBytes: io?.totalBytes ?? 0,
    };
  }

  /** Every registered session, oldest first: live ones and exited ones not yet observed. */
  sessions(): ExecSessionInfo[] {
    return Object.values(this.records())
      .sort((a, b) => a.id - b.id)
      .map((r) => this.info(r));
  }

  io(id: number): SessionIO | undefined {
    return this.ios.get(id);
  }

  /** Starts `command` and stays attached up to `yieldMs`: the exit if it comes by then, else a live session. */
  async start(req: StartRequest): Promise<Result<ProcessReport>> {
    if (this.closed) return fail("Pi is shutting down; no new shell sessions start.");
    if (req.tty) {
      const pty = loadPty();
      if (!pty.ok) return pty;
    }
    try {
      if (!statSync(req.cwd).isDirectory()) return fail(`workdir ${req.cwd} is not a directory.`);
    } catch {
      return fail(`workdir ${req.cwd} does not exist.`);
    }
    const shell = resolveShell(req.shell, this.options.env().PATH);
    if (!shell.ok) return shell;
    if (!this.ensurePool()) return fail("the supervisor is not running.");
    const id = ++this.nextId;
    const io = new SessionIO(id, this.logs.open(`${stamp(this.now())}-${this.options.hostId}-${id}.log`));
    this.ios.set(id, io);
    const began = performance.now();
    this.send({
      type: "exec.start",
      at: this.now(),
      id,
      callId: req.callId,
      command: req.command,
      shell: shell.value,
      cwd: req.cwd,
      tty: req.tty,
      cols: req.cols,
      rows: req.rows,
      ...(io.logPath ? { logPath: io.logPath } : {}),
    });
    const refusal = this.refused.get(id);
    if (refusal !== undefined) {
      this.refused.delete(id);
      this.ios.delete(id);
      return fail(`the session was not started: ${refusal}.`);
    }
    req.onStart?.(io);
    const outcome = await waitOn(io, { durationMs: req.yieldMs, ...(req.signal ? { signal: req.signal } : {}) });
    // From here to the end, nothing can interleave: the exit either happened or it did not.
    const r = this.records()[id];
    if (io.ended) {
      const report = this.report(io, r, outcome, began, true);
      this.send({ type: "exec.forget", at: this.now(), id, callId: req.callId });
      this.ios.delete(id);
      return ok(report);
    }
    const drained = outcome !== "cancelled";
    this.send({ type: "exec.background", at: this.now(), id, callId: req.callId, onExit: req.onExit });
    return ok(this.report(io, this.records()[id] ?? r, outcome, began, drained));
  }

  /** Writes to a session (or only polls it) and waits: for the answer, the window, or the exit. */
  async write(req: WriteRequest): Promise<Result<ProcessReport>> {
    const r = this.records()[req.id];
    const io = this.ios.get(req.id);
    if (!r || !io) return fail(this.unknown(req.id));
    const began = performance.now();
    this.send({ type: "exec.observe", at: this.now(), id: req.id, callId: req.callId });
    let writeFailure: string | undefined;
    let answered: (() => boolean) | undefined;
    if (req.bytes && req.bytes.length > 0) {
      const cursor = io.totalBytes;
      const written = io.input(req.bytes);
      if (!written.ok) writeFailure = written.error;
      else if (req.until === "answer") answered = answeredAfter(io, cursor, req.bytes, r.tty);
    }
    let outcome: WaitOutcome;
    try {
      outcome =
        writeFailure && !io.ended
          ? "deadline"
          : await waitOn(io, {
              durationMs: req.durationMs,
              ...(req.signal ? { signal: req.signal } : {}),
              ...(answered ? { answered } : {}),
            });
      // The answer's rest usually follows in the same burst.
      if (outcome === "answer") await settleTurn();
    } catch (e) {
      this.send({ type: "exec.release", at: this.now(), id: req.id, callId: req.callId });
      throw e;
    }
    const current = this.records()[req.id] ?? r;
    if (io.ended) {
      const armed = this.wakeArmed(req.id);
      const report = this.report(io, current, outcome, began, true, writeFailure);
      report.consumedWake = armed;
      this.send({ type: "exec.forget", at: this.now(), id: req.id, callId: req.callId });
      this.ios.delete(req.id);
      return ok(report);
    }
    this.send({ type: "exec.release", at: this.now(), id: req.id, callId: req.callId });
    return ok(this.report(io, current, outcome, began, outcome !== "cancelled", writeFailure));
  }

  /** A write_stdin whose result was not produced (an error) lets go of its lease. */
  release(id: number, callId: string): void {
    this.send({ type: "exec.release", at: this.now(), id, callId });
  }

  /** Stops a session's process group: `signal`, then SIGKILL after 2 s. Undefined: no such session. */
  async kill(id: number, signal: string, callId: string): Promise<KillReport | undefined> {
    const r = this.records()[id];
    const io = this.ios.get(id);
    if (!r || !io) return undefined;
    const began = performance.now();
    let alreadyExited = false;
    let failed: Emitted<"exec.stop_failed"> | undefined;
    if (io.ended) {
      // Nothing to signal: the result reports the exit, which observes it.
      alreadyExited = true;
      this.send({ type: "exec.observe", at: this.now(), id, callId });
      this.send({ type: "exec.forget", at: this.now(), id, callId });
    } else {
      const stopped = new Promise<Emitted<"exec.stop_failed"> | undefined>((resolve) => {
        this.stopWaiters.set(id, [...(this.stopWaiters.get(id) ?? []), resolve]);
      });
      if (r.status !== "stopping") this.send({ type: "exec.kill", at: this.now(), id, signal });
      failed = await stopped;
    }
    const killed = !alreadyExited && io.ended !== undefined;
    if (io.ended) this.ios.delete(id);
    const base = this.report(io, this.records()[id] ?? r, "exit", began, true);
    const { wait: _w, consumedWake: _c, ...rest } = base;
    return {
      ...rest,
      signal,
      killed,
      escalated: failed?.escalated ?? io.ended?.escalated ?? false,
      alreadyExited,
      ...(failed ? { failure: failed.message } : {}),
    };
  }

  setOnExit(id: number, onExit: OnExit): SetOnExitReport {
    this.ensurePool();
    const requestId = `set-${this.now()}-${Math.random().toString(36).slice(2)}`;
    this.send({ type: "exec.set_on_exit", at: this.now(), id, onExit, requestId });
    const a = this.answers.get(requestId);
    this.answers.delete(requestId);
    const r = this.records()[id];
    return {
      found: a?.found ?? false,
      ...(a?.status ? { status: a.status } : {}),
      armed: a?.armed ?? false,
      ...(r ? { session: this.info(r) } : {}),
    };
  }

  /** Every session; those that exited are reported this once and leave the registry, observed by `callId`. */
  list(callId: string): { live: ExecSessionInfo[]; exited: ExecSessionInfo[] } {
    const all = this.sessions();
    const live = all.filter((s) => s.running);
    const exited = all.filter((s) => !s.running);
    if (exited.length) {
      this.send({ type: "exec.listed", at: this.now(), ids: exited.map((s) => s.id), callId });
      for (const s of exited) this.ios.delete(s.id);
    }
    return { live, exited };
  }

  /** Pi finalized a tool result (`tool_execution_end`). */
  finalize(callId: string, ok: boolean): void {
    if (!this.observers.delete(callId)) return;
    this.actor?.send({ type: "exec.finalize", at: this.now(), callId, ok });
  }

  agentSettled(): void {
    if (this.pool) this.send({ type: "exec.agent_settled", at: this.now() });
  }

  /** After the supervisor's shutdown: waits (event driven, bounded) for every session to end, then stops what
   * is left of their process groups (background processes that let go of the output): SIGTERM, 1 s, SIGKILL. */
  async shutdown(boundMs: number): Promise<void> {
    this.closed = true;
    const live = () => this.sessions().filter((s) => s.running).length;
    if (this.pool && live() > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(finish, boundMs);
        const off = this.onChange(() => {
          if (live() === 0) finish();
        });
        function finish() {
          clearTimeout(timer);
          off();
          resolve();
        }
      });
    }
    await Promise.all(liveGroups(this.options.hostId, /^exec:/).map((pgid) => stopGroup(pgid, 1000)));
    for (const io of this.ios.values()) io.log?.close();
  }

  private settleStop(id: number, failed: Emitted<"exec.stop_failed"> | undefined): void {
    const waiters = this.stopWaiters.get(id);
    this.stopWaiters.delete(id);
    for (const fn of waiters ?? []) fn(failed);
  }

  private unknown(id: number): string {
    const ids = Object.keys(this.records());
    return `Unknown session_id ${id}${ids.length ? ` (sessions: ${ids.join(", ")})` : " (no sessions are open)"}. A session that exited and was reported once is gone; its log keeps the output.`;
  }

  private report(
    io: SessionIO,
    r: ExecRecord | undefined,
    wait: WaitOutcome,
    began: number,
    drain: boolean,
    writeFailure?: string,
  ): ProcessReport {
    const d = drain ? io.drain() : { bytes: new Uint8Array(0), omitted: 0 };
    return {
      id: io.id,
      running: !io.ended,
      held: r?.status === "held",
      ...(io.ended ? { end: io.ended } : {}),
      output: d.bytes,
      omittedBytes: d.omitted,
      totalBytes: io.totalBytes,
      ...(io.logPath ? { logPath: io.logPath } : {}),
      ...(io.logProblem ? { logProblem: io.logProblem } : {}),
      command: r?.command ?? "",
      cwd: r?.cwd ?? "",
      tty: r?.tty ?? false,
      ...(io.pid !== undefined ? { pid: io.pid } : {}),
      wallMs: performance.now() - began,
      wait,
      armed: !io.ended && this.wakeArmed(io.id),
      consumedWake: false,
      ...(writeFailure ? { writeFailure } : {}),
    };
  }
}

function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
}

export function execLogDir(agentDir: string): string {
  return join(agentDir, "pi-code-supervisor", "exec-logs");
}

export type { ExecCommand };
