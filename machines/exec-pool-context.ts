// What the shell-session pool keeps and decides on (machines/exec-pool.ts wires these into actions): its records,
// the commands it takes and the events it emits, and the least-recently-used order that picks whom to evict.
import type { DoneActorEvent } from "xstate";
import {
  DEFAULT_EXEC_LIMITS,
  type ExecLimits,
  type ExecSessionEnd,
  type ExecSessionNotice,
  type ExecSessionOutput,
  type ExitInfo,
  type ShellInput,
  type StopReason,
} from "./exec-session.ts";
import type { WakeNoticeOut } from "./exec-wake.ts";
import type { OnExit, SetOnExitStatus, WakeNotice } from "./exec-wake-entry.ts";

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
  stop?: StopReason;
  exit?: ExitInfo & { end: ExecSessionEnd };
  failure?: string;
}

export interface ExecPoolContext extends ExecPoolInput {
  sessions: Record<string, ExecRecord>;
  /** Session ids by use, least recently used first (kept apart from the records: a use changes only this). */
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
      reason?: StopReason;
      escalated?: boolean;
      failure?: string;
    } & ExitInfo)
  | { type: "exec.stop_failed"; id: number; reason: StopReason; escalated: boolean; message: string }
  | { type: "exec.evicting"; id: number; running: boolean }
  | { type: "exec.refused"; id: number; reason: string }
  | { type: "exec.answer"; requestId: string; id: number; found: boolean; status?: SetOnExitStatus; armed: boolean }
  | { type: "exec.wake"; batch: number; notices: WakeNotice[] };

export type ExecPoolEvent = ExecCommand | ExecSessionNotice | WakeNoticeOut | DoneActorEvent<ExecSessionOutput>;

export const LIVE: readonly ExecStatus[] = ["starting", "running", "held"];

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

export const sessionId = (id: number) => `exec:${id}`;

export function patch(context: ExecPoolContext, id: number, change: Partial<ExecRecord>): ExecPoolContext["sessions"] {
  const r = context.sessions[id];
  return r ? { ...context.sessions, [id]: { ...r, ...change } } : context.sessions;
}

export function drop(context: ExecPoolContext, ids: number[]): ExecPoolContext["sessions"] {
  const sessions = { ...context.sessions };
  for (const id of ids) delete sessions[id];
  return sessions;
}

/** The use order without sessions that left the registry. */
export function prune(context: Pick<ExecPoolContext, "lru">, sessions: ExecPoolContext["sessions"]): number[] {
  return context.lru.every((id) => String(id) in sessions)
    ? context.lru
    : context.lru.filter((id) => String(id) in sessions);
}
