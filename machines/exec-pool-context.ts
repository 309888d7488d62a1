// What the shell-session pool keeps and decides on (machines/exec-pool.ts wires these into actions): the commands it
// takes and the events it emits, the least-recently-used order that picks whom to evict, and each session's record.
// A live session's record is read from its actor's snapshot (the pool copies no child's state); the pool keeps only
// the sessions whose actor is gone but whose exit no call has observed yet.
import type { DoneActorEvent } from "xstate";
import {
  DEFAULT_EXEC_LIMITS,
  type ExecLimits,
  type ExecSessionContext,
  type ExecSessionEnd,
  type ExecSessionNotice,
  type ExecSessionOutput,
  type ExitInfo,
  type ShellInput,
  type ShellStopReason,
} from "./exec-session.ts";
import type { WakeNoticeOut } from "./exec-wake.ts";
import type { OnExit, SetOnExitStatus, WakeNotice } from "./exec-wake-entry.ts";
import { execActorId } from "./actor-ids.ts";

export interface ExecPoolInput {
  maxSessions: number;
  protectedCount: number;
  limits: ExecLimits;
  /** Completions due within this window go out in one prompt. */
  debounceMs: number;
}

/** The pool's id and systemId under the supervisor. */
export const EXEC_POOL_ID = "exec:pool";

export const DEFAULT_EXEC_POOL: ExecPoolInput = {
  maxSessions: 64,
  protectedCount: 8,
  limits: DEFAULT_EXEC_LIMITS,
  debounceMs: 250,
};

export type ExecStatus = "starting" | "running" | "held" | "stopping" | "exited" | "failed";

export interface ExecRecord {
  id: number;
  command: string;
  shell: string;
  cwd: string;
  tty: boolean;
  startedAt: number;
  status: ExecStatus;
  pid?: number;
  /** While `stopping`: why. */
  stop?: ShellStopReason;
  exit?: ExitInfo & { end: ExecSessionEnd };
  failure?: string;
}

export interface ExecPoolContext extends ExecPoolInput {
  /** Sessions whose process is gone (exited, or never started) and whose actor with it, kept until a call observes
   * the exit: what their actor reported. A live session is the child `exec:<id>`, read from its snapshot. */
  ended: Record<string, ExecRecord>;
  /** The registered sessions' ids (live, or ended and not yet observed) by use, least recently used first. */
  lru: number[];
}

// ---- commands (host -> supervisor -> pool) ----
/** What the shell starts (machines/exec-session.ts), with the call that started it and where its log goes. */
export type ExecStartEvent = {
  type: "exec.start";
  at: number;
  /** The exec_command call: it observes the session from the start. */
  callId: string;
  logPath?: string;
} & Omit<ShellInput, "owner">;

export type ExecCommand =
  | ExecStartEvent
  /** exec_command returns a session id: the session is kept, its call stops observing, on_exit takes effect. */
  | { type: "exec.background"; at: number; id: number; callId: string; onExit: OnExit }
  /** A call returned this session's exit: it leaves the registry (`callId`: the call whose result carries it). */
  | { type: "exec.forget"; at: number; id: number; callId?: string }
  | { type: "exec.observe"; at: number; id: number; callId: string }
  | { type: "exec.release"; at: number; id: number; callId: string }
  /** Pi finalized a tool result (`tool_execution_end`); `ok` unless it is an error. */
  | { type: "exec.finalize"; at: number; callId: string; ok: boolean }
  | { type: "exec.kill"; at: number; id: number; signal: string }
  | { type: "exec.set_on_exit"; at: number; id: number; onExit: OnExit; requestId: string }
  /** list_sessions reported these exited sessions: they leave the registry, observed by that call. */
  | { type: "exec.listed"; at: number; ids: number[]; callId: string }
  | { type: "exec.agent_settled"; at: number }
  | { type: "exec.wake_delivered"; at: number; batch: number }
  | { type: "exec.wake_failed"; at: number; batch: number; message: string }
  | { type: "exec.shutdown"; at: number };

// ---- emitted (pool -> host) ----
export type ExecEmitted =
  | { type: "exec.started"; id: number; pid: number }
  | { type: "exec.held"; id: number }
  | ({
      type: "exec.ended";
      id: number;
      end: ExecSessionEnd;
      reason?: ShellStopReason;
      escalated?: boolean;
      failure?: string;
    } & ExitInfo)
  | { type: "exec.stop_failed"; id: number; reason: ShellStopReason; escalated: boolean; message: string }
  | { type: "exec.evicting"; id: number; running: boolean }
  | { type: "exec.refused"; id: number; reason: string }
  | { type: "exec.answer"; requestId: string; id: number; found: boolean; status?: SetOnExitStatus; armed: boolean }
  | { type: "exec.wake"; batch: number; notices: WakeNotice[] };

export type ExecPoolEvent = ExecCommand | ExecSessionNotice | WakeNoticeOut | DoneActorEvent<ExecSessionOutput>;

/** A shell session neither stopping nor ended: a kill or an eviction can still begin on it. */
export const LIVE: readonly ExecStatus[] = ["starting", "running", "held"];

/** The sessions the cap counts: every record but those being stopped (they leave the registry once their process
 * is gone, SIGKILL at most 1 s later). A session still starting counts: its process may already run. */
export function counted(sessions: Readonly<Record<string, ExecRecord>>): number {
  let n = 0;
  for (const r of Object.values(sessions)) if (r.status !== "stopping") n += 1;
  return n;
}

/** At the cap, whom a new start evicts; `full` when nothing can go (every candidate is still starting or among the
 * most recently used), and the start is refused rather than exceed the cap. */
export function capDecision(
  records: Readonly<Record<string, ExecRecord>>,
  context: Pick<ExecPoolContext, "lru" | "maxSessions" | "protectedCount">,
): { kind: "room" } | { kind: "evict"; victim: ExecRecord } | { kind: "full"; reason: string } {
  if (counted(records) < context.maxSessions) return { kind: "room" };
  const victim = lruVictim(records, context.lru, context.protectedCount);
  if (victim) return { kind: "evict", victim };
  const starting = Object.values(records).filter((r) => r.status === "starting").length;
  return {
    kind: "full",
    reason:
      `the cap of ${context.maxSessions} shell sessions is reached and none can be evicted ` +
      `(${starting} still starting, the ${context.protectedCount} most recently used are protected); ` +
      "kill one with kill_session or wait for one to exit",
  };
}

/** The session to evict at the cap: not among the `protectedCount` most recently used, exited before running,
 * least recently used first; none while stopping. */
export function lruVictim(
  records: Readonly<Record<string, ExecRecord>>,
  lru: readonly number[],
  protectedCount: number,
): ExecRecord | undefined {
  const byUse = lru.map((id) => records[id]).filter((r): r is ExecRecord => r !== undefined);
  const candidates = byUse
    .slice(0, Math.max(0, byUse.length - protectedCount))
    .filter((r) => r.status !== "stopping" && r.status !== "starting");
  return (
    candidates.find((r) => r.status === "exited" || r.status === "failed") ??
    candidates.find((r) => LIVE.includes(r.status))
  );
}

export const used = (lru: number[], id: number) => [...lru.filter((x) => x !== id), id];

export const sessionId = (id: number) => execActorId(id);

/** What the pool reads of a shell session's actor (machines/exec-session.ts). */
export interface SessionSnapshot {
  value: unknown;
  context: ExecSessionContext;
}

/** A live session's status from its own state: a stop asked for while it starts already counts as `stopping`. */
export function statusOf(s: SessionSnapshot): ExecStatus {
  const [top, sub] = typeof s.value === "string" ? [s.value] : Object.entries(s.value as object)[0]!;
  if (top === "starting") return s.context.stop ? "stopping" : "starting";
  if (top === "running") return sub === "held" ? "held" : "running";
  if (top === "exited" || top === "failed") return top;
  // `stopping`, or `killed`/`evicted` for the moment before the pool lets the ended actor go.
  return "stopping";
}

/** A live session's record, read from its actor's snapshot. */
export function liveRecord(s: SessionSnapshot): ExecRecord {
  const c = s.context;
  return {
    id: c.id,
    command: c.command,
    shell: c.shell,
    cwd: c.cwd,
    tty: c.tty,
    startedAt: c.startedAt,
    status: statusOf(s),
    ...(c.pid !== undefined ? { pid: c.pid } : {}),
    ...(c.stop ? { stop: c.stop.reason } : {}),
  };
}

/** Every registered session's record by id: a live one from its actor (`child` reads its snapshot), an ended one as
 * the pool kept it. */
export function records(
  context: Pick<ExecPoolContext, "ended" | "lru">,
  child: (id: number) => SessionSnapshot | undefined,
): Record<string, ExecRecord> {
  const out: Record<string, ExecRecord> = {};
  for (const id of context.lru) {
    const ended = context.ended[id];
    const live = ended ? undefined : child(id);
    if (ended) out[id] = ended;
    else if (live) out[id] = liveRecord(live);
  }
  return out;
}

/** The records as a reader of the pool's snapshot sees them (the host's door, tests). */
export function poolRecords(snapshot: {
  context: Pick<ExecPoolContext, "ended" | "lru">;
  children: Record<string, { getSnapshot(): unknown } | undefined>;
}): Record<string, ExecRecord> {
  return records(snapshot.context, (id) => snapshot.children[sessionId(id)]?.getSnapshot() as SessionSnapshot);
}

/** The use order without `ids`. */
export const without = (lru: number[], ids: readonly number[]) =>
  ids.some((id) => lru.includes(id)) ? lru.filter((id) => !ids.includes(id)) : lru;

/** The ended records without `ids`. */
export function forgetEnded(ended: ExecPoolContext["ended"], ids: readonly number[]): ExecPoolContext["ended"] {
  if (!ids.some((id) => String(id) in ended)) return ended;
  const out = { ...ended };
  for (const id of ids) delete out[id];
  return out;
}
