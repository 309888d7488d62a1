// The shell sessions' door: what the exec tools ask for (start a command and wait, write and wait, kill, list,
// set_on_exit, finalize a tool result) as commands to the supervisor's `exec` pool, and what they get back as plain
// reports. It owns each session's bytes (actors/shell/session-io.ts) and log files; every decision about a
// session's life or its wake is the machines' (machines/exec-*.ts), heard here through the pool's emitted events.
import { statSync } from "node:fs";
import type { Actor, AnyActorRef } from "xstate";
import { fail, ok, type Result } from "../lib/result.ts";
import {
  EXEC_POOL_ID,
  poolRecords,
  type ExecCommand,
  type ExecEmitted,
  type ExecRecord,
} from "../machines/exec-pool.ts";
import type { ExecSupervisorCommand } from "../machines/supervisor.ts";
import type { SupervisorLogic } from "../machines/system.ts";
import type { OnExit, WakeNotice } from "../machines/exec-wake-entry.ts";
import { createShellLogic } from "../actors/shell/shell-actor.ts";
import { ExecLogs, type LogQuota } from "../actors/shell/logs.ts";
import { localOperations, type ProcessOperations } from "../actors/process/operations.ts";
import { loadPty } from "../actors/process/pty.ts";
import { resolveShell } from "../actors/shell/shell-path.ts";
import { SessionIO } from "../actors/shell/session-io.ts";
import { answeredAfter, settleTurn, waitOn, type WaitOutcome } from "../actors/shell/waits.ts";
import { liveGroups, stopGroup } from "../actors/registry/registry.ts";
import { SHUTDOWN } from "../actors/registry/shutdown.ts";
import { ExecEvents, type Emitted } from "./exec-events.ts";
import {
  notStarted,
  processReport,
  stamp,
  unknownSession,
  type ExecSessionInfo,
  type KillReport,
  type ProcessReport,
  type SetOnExitReport,
  type StartRequest,
  type WriteRequest,
} from "./exec-reports.ts";
import { wakeActorId } from "../machines/actor-ids.ts";
import type { CommandEvent } from "../machines/events.ts";
import { commandTo } from "./command-taps.ts";
import { LIVE } from "../machines/exec-pool-context.ts";

/** The statuses a shell session is reported `running` in (list_sessions): its process may still be there, a session
 * being stopped included (the pool's `LIVE` leaves `stopping` out: a stop has begun there already). */
const REPORTED_RUNNING = new Set<string>([...LIVE, "stopping"]);

export interface ExecHostOptions {
  hostId: string;
  env: () => NodeJS.ProcessEnv;
  /** Where log files go (`<agent dir>/pi-code-supervisor/exec-logs`). */
  logDir: string | (() => string);
  logQuota?: () => LogQuota;
  /** The backend's process port (default: this machine). */
  ops?: () => Pick<ProcessOperations, "spawn">;
  now?: () => number;
}

export class ExecHost {
  readonly shellLogic;
  private readonly options: ExecHostOptions;
  private readonly logs: ExecLogs;
  private readonly now: () => number;
  private readonly ios = new Map<number, SessionIO>();
  private actor: Actor<SupervisorLogic> | undefined;
  /** The recorder's tap for commands sent past the root (host/command-taps.ts). */
  private onCommand: ((event: CommandEvent, to?: string) => void) | undefined;
  private pool: AnyActorRef | undefined;
  private nextId = 0;
  private readonly events: ExecEvents;
  private closed = false;
  /** Tool calls that observed a session: only their finalization concerns the wakes. */
  private readonly observers = new Set<string>();

  constructor(options: ExecHostOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.logs = new ExecLogs(options.logDir, options.logQuota);
    this.events = new ExecEvents(this.ios, (command) => this.send(command), this.now);
    this.shellLogic = createShellLogic({
      ops: options.ops ?? (() => localOperations),
      io: (id) => this.ios.get(id),
      env: options.env,
      hostId: options.hostId,
      now: this.now,
    });
  }

  attach(actor: Actor<SupervisorLogic>, onCommand?: (event: CommandEvent, to?: string) => void): void {
    this.actor = actor;
    this.onCommand = onCommand;
  }

  /** How due completion prompts reach Pi (`pi.sendMessage`); a throw or rejection counts as a failed delivery. */
  onWake(deliver: (notices: WakeNotice[]) => void | Promise<void>): void {
    this.events.onWake(deliver);
  }

  /** Every event of the pool (sessions starting, ending, evicted...): footers and widgets refresh on these. */
  onChange(fn: (what: ExecEmitted) => void): () => void {
    return this.events.onChange(fn);
  }

  /** Once the pool exists, a command goes straight to it (recorded with it as the receiver, replayed to it), not
   * through the root, which only passed it on: one step per command, not two. `exec.open`, which creates the pool, is
   * sent once, before it exists (ensurePool), so it always goes to the root. */
  private send(command: ExecSupervisorCommand): void {
    if ("callId" in command && command.callId) this.observers.add(command.callId);
    this.deliver(command);
  }

  private deliver(command: ExecSupervisorCommand): void {
    if (this.pool?.getSnapshot().status === "active")
      return commandTo(this.pool, command as unknown as CommandEvent, this.onCommand);
    this.actor?.send(command);
  }

  /** The pool exists from the first use on (a supervisor that never runs a shell has none). */
  private ensurePool(): AnyActorRef | undefined {
    if (this.pool) return this.pool;
    if (!this.actor) return undefined;
    this.send({ type: "exec.open", at: this.now() });
    this.pool = this.actor.system.get(EXEC_POOL_ID) as AnyActorRef | undefined;
    this.pool?.on("*", (e: ExecEmitted) => this.events.heard(e));
    return this.pool;
  }

  /** The registry: live sessions read from their own actors, exits not yet observed from the pool. */
  private records(): Record<string, ExecRecord> {
    const snap = this.pool?.getSnapshot() as Parameters<typeof poolRecords>[0] | undefined;
    return snap?.context ? poolRecords(snap) : {};
  }

  private wakeArmed(id: number): boolean {
    const s = this.actor?.system.get(wakeActorId(id))?.getSnapshot() as
      { status: string; value: unknown; context: { armed: boolean } } | undefined;
    return !!s && s.status === "active" && s.context.armed;
  }

  private info(r: ExecRecord): ExecSessionInfo {
    const io = this.ios.get(r.id);
    return {
      ...r,
      running: REPORTED_RUNNING.has(r.status),
      wakeArmed: this.wakeArmed(r.id),
      ...(io?.logPath ? { logPath: io.logPath } : {}),
      totalBytes: io?.totalBytes ?? 0,
    };
  }

  private report(
    io: SessionIO,
    r: ExecRecord | undefined,
    wait: WaitOutcome,
    began: number,
    drain: boolean,
    writeFailure?: string,
  ): ProcessReport {
    return processReport(io, r, wait, began, drain, (id) => this.wakeArmed(id), writeFailure);
  }

  /** Every registered session, oldest first: live ones and exited ones not yet observed. The records are keyed by
   * id, and an object's integer keys are enumerated in ascending order, so they come sorted. */
  sessions(): ExecSessionInfo[] {
    return Object.values(this.records()).map((r) => this.info(r));
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
    // A start that cannot happen here (no such workdir, no such shell) is the command's result, as pi-unified-exec
    // reports a spawn failure: `[exited]`, exit_code -1, the reason as failure_message; nothing started.
    let badCwd: string | undefined;
    try {
      if (!statSync(req.cwd).isDirectory()) badCwd = `workdir ${req.cwd} is not a directory.`;
    } catch {
      badCwd = `workdir ${req.cwd} does not exist.`;
    }
    if (badCwd) return ok(notStarted(req, badCwd));
    const shell = resolveShell(req.shell, this.options.env().PATH);
    if (!shell.ok) return ok(notStarted(req, shell.error));
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
    const refusal = this.events.refused.get(id);
    if (refusal !== undefined) {
      this.events.refused.delete(id);
      this.ios.delete(id);
      return fail(`the session was not started: ${refusal}.`);
    }
    // How many sessions are registered with this one, counted as it starts: sibling starts each see their own count.
    const openSessions = Object.keys(this.records()).length;
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
    // `r` still reads right: `exec.background` changes nothing the report reads (status, command, cwd, tty).
    return ok({ ...this.report(io, r, outcome, began, drained), openSessions });
  }

  /** Writes to a session (or only polls it) and waits: for the answer, the window, or the exit. */
  async write(req: WriteRequest): Promise<Result<ProcessReport>> {
    const r = this.records()[req.id];
    const io = this.ios.get(req.id);
    if (!r || !io) return fail(unknownSession(req.id, Object.keys(this.records())));
    const began = performance.now();
    this.send({ type: "exec.observe", at: this.now(), id: req.id, callId: req.callId });
    let writeFailure = io.takeHeldFailure();
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
    const alreadyStopping = r.status === "stopping";
    let failed: Emitted<"exec.stop_failed"> | undefined;
    if (io.ended) {
      // Nothing to signal: the result reports the exit, which observes it.
      alreadyExited = true;
      this.send({ type: "exec.observe", at: this.now(), id, callId });
      this.send({ type: "exec.forget", at: this.now(), id, callId });
    } else {
      const stopped = this.events.stopped(id);
      if (!alreadyStopping) this.send({ type: "exec.kill", at: this.now(), id, signal });
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
      alreadyStopping,
      ...(failed ? { failure: failed.message } : {}),
    };
  }

  setOnExit(id: number, onExit: OnExit): SetOnExitReport {
    // No pool yet: no shell ever started, so there is no such session (and nothing to create a pool for).
    if (!this.pool) return { found: false, armed: false };
    const requestId = `set-${this.now()}-${Math.random().toString(36).slice(2)}`;
    this.send({ type: "exec.set_on_exit", at: this.now(), id, onExit, requestId });
    const a = this.events.answers.get(requestId);
    this.events.answers.delete(requestId);
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

  /** Pi finalized a tool result (`tool_execution_end`). False when the call was not one of the shell tools'. */
  finalize(callId: string, ok: boolean): boolean {
    if (!this.observers.delete(callId)) return false;
    this.deliver({ type: "exec.finalize", at: this.now(), callId, ok });
    return true;
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
    await Promise.all(
      liveGroups(this.options.hostId, /^exec:/).map((pgid) => stopGroup(pgid, SHUTDOWN.shellLeftovers)),
    );
    for (const io of this.ios.values()) io.log?.close();
  }
}
export { execLogDir } from "./exec-reports.ts";
export type {
  ExecSessionInfo,
  KillReport,
  ProcessReport,
  SetOnExitReport,
  StartRequest,
  WriteRequest,
} from "./exec-reports.ts";
export type { ExecCommand };
