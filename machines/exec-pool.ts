// The shell sessions of one supervisor (`exec:pool`, a child of the supervisor, spawned on first use): a registry of
// sessions by numeric id, each a child actor `exec:<id>` (machines/exec-session.ts), and the wake coordinator
// `wake` (machines/exec-wake.ts). It keeps at most `maxSessions` (64): at the cap the least recently used
// unprotected session is evicted (the `protectedCount` most recently used never are; exited ones go first). An
// exited session stays registered, drainable, until a call observes its exit. The host reads the registry from the
// snapshot and hears what happened through emitted events.
import { assign, emit, enqueueActions, setup } from "xstate";
import type { DoneActorEvent } from "xstate";
import { message } from "./message.ts";
import {
  DEFAULT_EXEC_LIMITS,
  execSessionMachine,
  type ExecLimits,
  type ExecSessionEnd,
  type ExecSessionNotice,
  type ExecSessionOutput,
  type ExitInfo,
  type StopReason,
} from "./exec-session.ts";
import { wakeMachine, type WakeCommand, type WakeNoticeOut } from "./exec-wake.ts";
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
export type ExecStartEvent = {
  type: "exec.start";
  at: number;
  id: number;
  /** The exec_command call: it observes the session from the start. */
  callId: string;
  command: string;
  shell: string;
  cwd: string;
  tty: boolean;
  cols: number;
  rows: number;
  logPath?: string;
};

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

const LIVE: readonly ExecStatus[] = ["starting", "running", "held"];

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

const used = (lru: number[], id: number) => [...lru.filter((x) => x !== id), id];

const sessionId = (id: number) => `exec:${id}`;

function patch(context: ExecPoolContext, id: number, change: Partial<ExecRecord>): ExecPoolContext["sessions"] {
  const r = context.sessions[id];
  return r ? { ...context.sessions, [id]: { ...r, ...change } } : context.sessions;
}

function drop(context: ExecPoolContext, ids: number[]): ExecPoolContext["sessions"] {
  const sessions = { ...context.sessions };
  for (const id of ids) delete sessions[id];
  return sessions;
}

/** The use order without sessions that left the registry. */
function prune(context: Pick<ExecPoolContext, "lru">, sessions: ExecPoolContext["sessions"]): number[] {
  return context.lru.every((id) => String(id) in sessions) ? context.lru : context.lru.filter((id) => String(id) in sessions);
}

export const execPoolMachine = setup({
  types: {
    context: {} as ExecPoolContext,
    input: {} as ExecPoolInput,
    events: {} as ExecPoolEvent,
    emitted: {} as ExecEmitted,
  },
  actors: { session: execSessionMachine, wake: wakeMachine },
  actions: {
    toWake: enqueueActions(({ enqueue }, command: WakeCommand) => enqueue.sendTo("wake", command)),
    start: enqueueActions(({ context, enqueue }, e: ExecStartEvent) => {
      let sessions = context.sessions;
      if (Object.keys(sessions).length >= context.maxSessions) {
        const victim = lruVictim(sessions, context.lru, context.protectedCount);
        if (victim && !LIVE.includes(victim.status)) {
          // Exited: only the record goes; its wake entry stays as the tombstone that still delivers.
          sessions = drop(context, [victim.id]);
          enqueue.emit({ type: "exec.evicting", id: victim.id, running: false });
        } else if (victim) {
          enqueue.sendTo("wake", { type: "entry.suppress", id: victim.id } satisfies WakeCommand);
          enqueue.sendTo(
            sessionId(victim.id),
            message({ type: "session.stop", at: e.at, reason: "evict", signal: "SIGTERM" }),
          );
          sessions = { ...sessions, [victim.id]: { ...victim, status: "stopping", stop: "evict" } };
          enqueue.emit({ type: "exec.evicting", id: victim.id, running: true });
        }
      }
      enqueue.sendTo("wake", {
        type: "wake.track",
        id: e.id,
        entry: {
          notice: {
            id: e.id,
            command: e.command,
            cwd: e.cwd,
            startedAt: e.at,
            ...(e.logPath ? { logPath: e.logPath } : {}),
          },
          armed: false,
          leases: [e.callId],
        },
      } satisfies WakeCommand);
      enqueue.spawnChild("session", {
        id: sessionId(e.id),
        systemId: sessionId(e.id),
        input: {
          id: e.id,
          command: e.command,
          shell: e.shell,
          cwd: e.cwd,
          tty: e.tty,
          cols: e.cols,
          rows: e.rows,
          startedAt: e.at,
          limits: context.limits,
        },
      });
      enqueue.assign({
        lru: used(prune(context, sessions), e.id),
        sessions: {
          ...sessions,
          [e.id]: {
            id: e.id,
            command: e.command,
            shell: e.shell,
            cwd: e.cwd,
            tty: e.tty,
            startedAt: e.at,
            status: "starting",
          },
        },
      });
    }),
    touch: assign({
      lru: ({ context }, id: number) =>
        context.sessions[id] && context.lru[context.lru.length - 1] !== id ? used(context.lru, id) : context.lru,
    }),
    /** The record leaves; the call whose result carries the exit has it reported to the wake entry. */
    forget: enqueueActions(({ context, enqueue }, e: Extract<ExecCommand, { type: "exec.forget" }>) => {
      const sessions = drop(context, [e.id]);
      enqueue.assign({ sessions, lru: prune(context, sessions) });
      if (e.callId !== undefined)
        enqueue.sendTo("wake", { type: "entry.report", id: e.id, callId: e.callId } satisfies WakeCommand);
    }),
    kill: enqueueActions(({ context, enqueue }, e: Extract<ExecCommand, { type: "exec.kill" }>) => {
      const r = context.sessions[e.id];
      if (!r || !LIVE.includes(r.status)) return;
      // The wake is suppressed before any signal, so the induced exit can never prompt.
      enqueue.sendTo("wake", { type: "entry.suppress", id: e.id } satisfies WakeCommand);
      enqueue.sendTo(sessionId(e.id), message({ type: "session.stop", at: e.at, reason: "kill", signal: e.signal }));
      enqueue.assign({ sessions: patch(context, e.id, { status: "stopping", stop: "kill" }) });
    }),
    shutdownAll: enqueueActions(({ context, enqueue, event }) => {
      const at = (event as { at: number }).at;
      enqueue.sendTo("wake", { type: "wake.stop" } satisfies WakeCommand);
      let sessions = context.sessions;
      for (const r of Object.values(context.sessions)) {
        if (!LIVE.includes(r.status) && r.status !== "stopping") continue;
        enqueue.sendTo(sessionId(r.id), message({ type: "session.stop", at, reason: "shutdown", signal: "SIGTERM" }));
        sessions = { ...sessions, [r.id]: { ...r, status: "stopping", stop: "shutdown" } };
      }
      enqueue.assign({ sessions });
    }),
    running: enqueueActions(({ context, enqueue }, e: Extract<ExecSessionNotice, { type: "session.running" }>) => {
      const r = context.sessions[e.id];
      enqueue.assign({ sessions: patch(context, e.id, { pid: e.pid, ...(r?.status === "starting" ? { status: "running" } : {}) }) });
      enqueue.emit({ type: "exec.started", id: e.id, pid: e.pid });
    }),
    held: enqueueActions(({ context, enqueue }, e: Extract<ExecSessionNotice, { type: "session.held" }>) => {
      if (context.sessions[e.id]?.status === "running")
        enqueue.assign({ sessions: patch(context, e.id, { status: "held" }) });
      enqueue.emit({ type: "exec.held", id: e.id });
    }),
    stopFailed: enqueueActions(({ context, enqueue }, e: Extract<ExecSessionNotice, { type: "session.stop_failed" }>) => {
      const r = context.sessions[e.id];
      if (r) {
        const { stop: _s, ...rest } = r;
        enqueue.assign({ sessions: { ...context.sessions, [e.id]: { ...rest, status: "running" } } });
      }
      // The process is still ours and alive: its wake is as it was before the kill.
      enqueue.sendTo("wake", { type: "entry.restore", id: e.id } satisfies WakeCommand);
      enqueue.emit({ type: "exec.stop_failed", id: e.id, reason: e.reason, escalated: e.escalated, message: e.message });
    }),
    ended: enqueueActions(({ context, enqueue, event }) => {
      const done = event as DoneActorEvent<ExecSessionOutput>;
      enqueue.stopChild(done.actorId);
      const o = done.output;
      const exit = { at: o.at, code: o.code, signal: o.signal, end: o.end };
      // A natural exit (or a failed start) stays registered until a call observes it; a stop we made leaves now.
      const keep = o.end === "exited" || o.end === "failed";
      const sessions = keep
        ? patch(context, o.id, { status: o.end === "failed" ? "failed" : "exited", exit, ...(o.failure ? { failure: o.failure } : {}) })
        : drop(context, [o.id]);
      enqueue.assign({ sessions, lru: prune(context, sessions) });
      enqueue.sendTo("wake", {
        type: "entry.exit",
        id: o.id,
        at: o.at,
        code: o.code,
        signal: o.signal,
        ...(o.failure ? { failure: o.failure } : {}),
      } satisfies WakeCommand);
      enqueue.emit({
        type: "exec.ended",
        id: o.id,
        end: o.end,
        at: o.at,
        code: o.code,
        signal: o.signal,
        ...(o.reason ? { reason: o.reason } : {}),
        ...(o.escalated ? { escalated: true } : {}),
        ...(o.failure ? { failure: o.failure } : {}),
      });
    }),
  },
  guards: {
    duplicate: ({ context, event }) => String((event as ExecStartEvent).id) in context.sessions,
  },
}).createMachine({
  id: "exec",
  context: ({ input }) => ({ ...input, sessions: {}, lru: [] }),
  invoke: { src: "wake", id: "wake", systemId: "exec:wake", input: ({ context }) => ({ debounceMs: context.debounceMs }) },
  initial: "serving",
  on: {
    "exec.background": {
      actions: [
        { type: "touch", params: ({ event }) => event.id },
        { type: "toWake", params: ({ event }) => ({ type: "entry.set", id: event.id, onExit: event.onExit }) },
        { type: "toWake", params: ({ event }) => ({ type: "entry.release", id: event.id, callId: event.callId }) },
      ],
    },
    "exec.forget": { actions: { type: "forget", params: ({ event }) => event } },
    "exec.observe": {
      actions: [
        { type: "touch", params: ({ event }) => event.id },
        { type: "toWake", params: ({ event }) => ({ type: "entry.observe", id: event.id, callId: event.callId }) },
      ],
    },
    "exec.release": {
      actions: { type: "toWake", params: ({ event }) => ({ type: "entry.release", id: event.id, callId: event.callId }) },
    },
    "exec.finalize": {
      actions: { type: "toWake", params: ({ event }) => ({ type: "entry.finalize", callId: event.callId, ok: event.ok }) },
    },
    "exec.kill": { actions: { type: "kill", params: ({ event }) => event } },
    "exec.set_on_exit": {
      actions: {
        type: "toWake",
        params: ({ context, event }) => ({
          type: "wake.set",
          id: event.id,
          onExit: event.onExit,
          requestId: event.requestId,
          registered: String(event.id) in context.sessions,
        }),
      },
    },
    "exec.listed": {
      actions: enqueueActions(({ context, enqueue, event }) => {
        const ids = event.ids.filter((id) => String(id) in context.sessions);
        for (const id of ids) {
          enqueue.sendTo("wake", { type: "entry.observe", id, callId: event.callId } satisfies WakeCommand);
          enqueue.sendTo("wake", { type: "entry.report", id, callId: event.callId } satisfies WakeCommand);
        }
        const sessions = drop(context, ids);
        enqueue.assign({ sessions, lru: prune(context, sessions) });
      }),
    },
    "exec.agent_settled": { actions: { type: "toWake", params: { type: "wake.settled" } } },
    "exec.wake_delivered": { actions: { type: "toWake", params: ({ event }) => ({ type: "wake.delivered", batch: event.batch }) } },
    "exec.wake_failed": { actions: { type: "toWake", params: ({ event }) => ({ type: "wake.failed", batch: event.batch }) } },
    "session.running": { actions: { type: "running", params: ({ event }) => event } },
    "session.held": { actions: { type: "held", params: ({ event }) => event } },
    "session.stop_failed": { actions: { type: "stopFailed", params: ({ event }) => event } },
    "xstate.done.actor.*": { actions: "ended" },
    "wake.deliver": { actions: emit(({ event }) => ({ type: "exec.wake" as const, batch: event.batch, notices: event.notices })) },
    "wake.answer": {
      actions: emit(({ event }) => {
        const { type: _t, ...answer } = event;
        return { type: "exec.answer" as const, ...answer };
      }),
    },
  },
  states: {
    serving: {
      description: "Sessions start, run and are observed.",
      on: {
        "exec.start": [
          {
            guard: "duplicate",
            actions: emit(({ event }) => ({ type: "exec.refused" as const, id: event.id, reason: `session id ${event.id} is in use` })),
          },
          { actions: { type: "start", params: ({ event }) => event } },
        ],
        "exec.shutdown": { target: "stopping", actions: "shutdownAll" },
      },
    },
    stopping: {
      description: "Pi is shutting down: every process group gets SIGTERM, then SIGKILL; nothing new starts.",
      on: {
        "exec.start": {
          actions: emit(({ event }) => ({ type: "exec.refused" as const, id: event.id, reason: "Pi is shutting down" })),
        },
      },
    },
  },
});
