// What the supervisor machine keeps and the pure decisions it takes on it: which requests wait for preparation,
// which sessions and spares exist, what a fresh run or a session incarnation starts with (machines/supervisor.ts
// wires these into actions).
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
import type { SpareInput, SpareOutput } from "./spare.ts";
import type { ExecCommand, ExecPoolInput } from "./exec-pool.ts";
import { spareActorId } from "./actor-ids.ts";

export interface SupervisorInput {
  limits: Limits;
  /** A spare runner unused this long retires (default 60 s). */
  spareIdleMs?: number;
  /** The shell sessions' bounds (machines/exec-pool.ts); default DEFAULT_EXEC_POOL. */
  exec?: ExecPoolInput;
}

/** Shell sessions: `exec.open` creates the pool (`exec:pool`) on first use; every other `exec.*` command goes to it. */
export type ExecSupervisorCommand = { type: "exec.open"; at: number } | ExecCommand;

/** A spare runner started for a key. Whether it is still warming or ready is its own state (machines/spare.ts),
 * read from its snapshot when a fresh run looks for one. */
export interface SpareEntry {
  id: string;
  key: string;
}

/** The most spares kept per key: fresh runs arriving faster than one spare warms grow the pool up to this. */
export const MAX_SPARES_PER_KEY = 3;

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

/** What a spare runner is started for. */
export interface SpareRequest {
  key: string;
  cwd: string;
  python?: string;
}

export interface SupervisorContext extends SupervisorInput {
  /** Requests waiting for preparation, in arrival order; the first one is being prepared (the `prepare` child). */
  queue: RunStartEvent[];
  sessions: Record<string, SessionEntry>;
  /** Runs not yet finished, with their session (null for fresh runs). */
  active: Record<string, string | null>;
  /** The spare runners, by actor id (machines/spare.ts): a small pool per key in use. */
  spares: Record<string, SpareEntry>;
  /** How many spares each key in use keeps: 1, more while fresh runs find none ready (at most MAX_SPARES_PER_KEY);
   * back to the pool's size as idle spares retire. */
  spareTarget: Record<string, number>;
  spareSeq: number;
}

export type SupervisorEvent =
  | CommandEvent
  | ExecSupervisorCommand
  | PrepareFact
  | RunFinishedEvent
  | NestedCallEvent
  | DoneActorEvent<RunOutcome | SessionOutput | SpareOutput>;

/** `run.nested_call`: one nested tool call's terminal record, passed on as it ends (machines/run-calls.ts). */
export type SupervisorEmitted = RunFinishedEvent | NestedCallEvent;

export function initialContext(input: SupervisorInput): SupervisorContext {
  return { ...input, queue: [], sessions: {}, active: {}, spares: {}, spareTarget: {}, spareSeq: 0 };
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
export const spareKeyOf = (e: RunStartEvent) =>
  e.spareKey !== undefined && !e.dependencies?.length ? e.spareKey : undefined;

export const sparesOf = (spares: Record<string, SpareEntry>, key: string) =>
  Object.values(spares).filter((s) => s.key === key);

/** How many spares `key` keeps after a fresh run of it: at least one, one more when the run found the pool still
 * warming (runs arrive faster than one spare warms), at most MAX_SPARES_PER_KEY. */
export function spareTargetAfter(c: SupervisorContext, key: string, claimed: boolean, poolSize: number): number {
  return Math.min(MAX_SPARES_PER_KEY, Math.max(1, (c.spareTarget[key] ?? 0) + (!claimed && poolSize ? 1 : 0)));
}

/** After a fresh run of the request's key (which took `claimed`, if any): the spares to start and the pool's new
 * records. Only a serving supervisor starts fresh runs, so nothing starts during shutdown. */
export function sparesAfterRun(c: SupervisorContext, request: SpareRequest, claimed: string | undefined, pool: number) {
  const start: SpareInput[] = [];
  let { [claimed ?? ""]: _taken, ...spares } = c.spares;
  const target = spareTargetAfter(c, request.key, claimed !== undefined, pool);
  let spareSeq = c.spareSeq;
  for (let n = sparesOf(spares, request.key).length; n < target; n++) {
    spareSeq += 1;
    const id = spareActorId(spareSeq);
    start.push(spareInput(c, id, request));
    spares = { ...spares, [id]: { id, key: request.key } };
  }
  return { start, next: { spares, spareSeq, spareTarget: { ...c.spareTarget, [request.key]: target } } };
}

/** A spare retired: it leaves the pool, which shrinks to what is left (the next burst grows it again). */
export function sparesAfterRetire(c: SupervisorContext, out: SpareOutput) {
  const { [out.id]: _gone, ...spares } = c.spares;
  const left = sparesOf(spares, out.key).length;
  const { [out.key]: _t, ...rest } = c.spareTarget;
  return { spares, spareTarget: left ? { ...rest, [out.key]: left } : rest };
}

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

export function spareInput(c: SupervisorContext, id: string, request: SpareRequest): SpareInput {
  return { id, idleMs: c.spareIdleMs ?? 60_000, ...request };
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
