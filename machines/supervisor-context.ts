// What the supervisor machine keeps and the pure decisions it takes on it: which requests wait for preparation,
// which sessions exist, what a fresh run or a session incarnation starts with (machines/supervisor.ts wires these
// into actions). The spare runners are the spare pool's (machines/spare-pool.ts).
import type { DoneActorEvent } from "xstate";
import type {
  CommandEvent,
  Language,
  Limits,
  PrepareFact,
  RunFinishedEvent,
  RunOutcome,
  RunStartEvent,
  SessionReplacement,
} from "./events.ts";
import type { NestedCallEvent } from "./run-calls.ts";
import { requestExtras, type RunInput } from "./run-context.ts";
import type { SessionInput, SessionOutput } from "./session.ts";
import type { SparePoolInput, SparesRun } from "./spare-pool.ts";
import type { ExecCommand, ExecPoolInput } from "./exec-pool.ts";

export interface SupervisorInput {
  limits: Limits;
  /** A spare runner unused this long retires (default 60 s). */
  spareIdleMs?: number;
  /** The shell sessions' bounds (machines/exec-pool.ts); default DEFAULT_EXEC_POOL. */
  exec?: ExecPoolInput;
}

/** Shell sessions: `exec.open` creates the pool (`exec:pool`) on first use; every other `exec.*` command goes to it. */
export type ExecSupervisorCommand = { type: "exec.open"; at: number } | ExecCommand;

export interface SessionEntry {
  /** The session's current (or last) process: 1, then one more after each reset, loss or replacement. */
  incarnation: number;
  /** `alive` while its actor exists; `lost` or `closed` after it ended. */
  status: "alive" | "lost" | "closed";
  cwd: string;
  /** The interpreter's executable, when the host named one. */
  python?: string;
  /** Absent: Python. */
  language?: Language;
}

export interface SupervisorContext extends SupervisorInput {
  /** Requests waiting for preparation, in arrival order; the first one is being prepared (`serving.preparing`: by
   * the `prepare` child, or by the fact its sender settled). Empty in `serving.idle` and in `stopping`. */
  queue: RunStartEvent[];
  sessions: Record<string, SessionEntry>;
  /** Runs not yet finished, with their session (null for fresh runs). */
  active: Record<string, string | null>;
}

export type SupervisorEvent =
  | CommandEvent
  | ExecSupervisorCommand
  | PrepareFact
  | RunFinishedEvent
  | NestedCallEvent
  | DoneActorEvent<RunOutcome | SessionOutput>;

/** `run.nested_call`: one nested tool call's terminal record, passed on as it ends (machines/run-calls.ts). */
export type SupervisorEmitted = RunFinishedEvent | NestedCallEvent;

export function initialContext(input: SupervisorInput): SupervisorContext {
  return { ...input, queue: [], sessions: {}, active: {} };
}

/** The request at the head of the queue with what its preparation settled. */
export function preparedRequest(
  c: SupervisorContext,
  e: Extract<PrepareFact, { type: "prepare.done" }>,
): RunStartEvent {
  const { type: _t, at: _at, runId: _r, ...prepared } = e;
  const { prepared: _p, ...request } = c.queue[0]!;
  return { ...request, ...prepared };
}

/** The fact a request settled by its sender stands for (RunRequest `prepared`): raised in place of a prepare
 * actor's, so both roads meet at `prepare.done` / `prepare.failed`. */
export function factOfPrepared(r: RunStartEvent): PrepareFact {
  const failed = r.prepared?.failed;
  if (failed) return { type: "prepare.failed", at: r.at, runId: r.runId, ...failed };
  return {
    type: "prepare.done",
    at: r.at,
    runId: r.runId,
    ...(r.python !== undefined ? { python: r.python } : {}),
    ...(r.dependencies !== undefined ? { dependencies: r.dependencies } : {}),
    ...(r.spareKey !== undefined ? { spareKey: r.spareKey } : {}),
    ...(r.notes !== undefined ? { notes: r.notes } : {}),
  };
}

export const isQueued = (c: SupervisorContext, runId: string) => c.queue.some((r) => r.runId === runId);

/** The key a fresh run's spare must match: runs with dependencies use an installed environment, not the key's. */
export const spareKeyOf = (e: RunStartEvent) => (e.dependencies?.length ? undefined : e.spareKey);

/** JavaScript runs only in sessions (eval's js cells). */
export const isFreshJs = (e: RunStartEvent) => e.language === "js" && e.session === undefined;

/** A session runs one language: a run of the other one may neither use nor replace it. */
export function otherLanguage(c: SupervisorContext, e: RunStartEvent): boolean {
  const entry = e.session !== undefined ? c.sessions[e.session] : undefined;
  return entry !== undefined && entry.status === "alive" && (entry.language ?? "python") !== (e.language ?? "python");
}

export function otherLanguageMessage(c: SupervisorContext, e: RunStartEvent): string {
  const runs = c.sessions[e.session!]?.language === "js" ? "JavaScript" : "Python";
  return `Session "${e.session}" runs ${runs}; use another session name for ${runs === "Python" ? "JavaScript" : "Python"}.`;
}

export function freshInput(c: SupervisorContext, e: RunStartEvent, spare: string | undefined): RunInput {
  return {
    runId: e.runId,
    code: e.code,
    filename: "script.py",
    cwd: e.cwd,
    timeoutMs: e.timeoutMs,
    requestedAt: e.at,
    limits: e.limits ?? c.limits,
    ...(e.python ? { python: e.python } : {}),
    ...(e.dependencies?.length ? { dependencies: e.dependencies } : {}),
    ...(e.calls ? { calls: e.calls } : {}),
    ...(spare ? { spare } : {}),
    ...requestExtras(e),
    ...(e.notes?.length ? { notes: e.notes } : {}),
    ...(e.backend ? { backend: e.backend } : {}),
  };
}

/** The spare pool's bounds: a spare unused for `spareIdleMs` (default 60 s) retires. */
export const sparePoolInput = (c: SupervisorContext): SparePoolInput => ({ idleMs: c.spareIdleMs ?? 60_000 });

/** What the spare pool hears of a fresh run of `key` (machines/spare-pool.ts): which ready spare it took, if any. */
export function sparesRun(e: RunStartEvent, key: string, claimed: string | undefined): SparesRun {
  return {
    type: "spares.run",
    at: e.at,
    runId: e.runId,
    key,
    cwd: e.cwd,
    ...(e.python ? { python: e.python } : {}),
    ...(claimed ? { claimed } : {}),
  };
}

/** Why a live session cannot serve this run: one process never mixes interpreters or working directories. */
export function replacementOf(entry: SessionEntry, e: RunStartEvent): SessionReplacement | undefined {
  if (entry.python !== e.python) return { reason: "interpreter", from: entry.python ?? "the default interpreter" };
  if (entry.cwd !== e.cwd) return { reason: "cwd", from: entry.cwd };
  return undefined;
}

export function sessionInput(
  c: SupervisorContext,
  e: RunStartEvent,
  incarnation: number,
  replaced: SessionReplacement | undefined,
): SessionInput {
  return {
    name: e.session!,
    incarnation,
    cwd: e.cwd,
    limits: e.limits ?? c.limits,
    firstRun: e,
    ...(c.sessions[e.session!]?.status === "lost" ? { replacedLost: true } : {}),
    ...(e.python ? { python: e.python } : {}),
    ...(e.language === "js" ? { language: e.language } : {}),
    ...(replaced ? { replaced } : {}),
    ...(e.backend ? { backend: e.backend } : {}),
  };
}

/** Whether an ended incarnation is the session's current one: its end may reach the supervisor after the request
 * that started the next incarnation under the same id. */
export const isCurrentIncarnation = (c: SupervisorContext, out: SessionOutput) =>
  c.sessions[out.name]?.incarnation === out.incarnation;

/** The session table after its current incarnation ended (`lost` or `closed`). */
export function sessionsEnded(c: SupervisorContext, out: SessionOutput): Record<string, SessionEntry> {
  return { ...c.sessions, [out.name]: { ...c.sessions[out.name]!, status: out.end } };
}
