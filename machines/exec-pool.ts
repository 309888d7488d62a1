// The shell sessions of one supervisor (`exec:pool`, a child of the supervisor, spawned on first use): a registry of
// sessions by numeric id, each a child actor `exec:<id>` (machines/exec-session.ts), and the wake coordinator
// `wake` (machines/exec-wake.ts). It keeps at most `maxSessions` (64), starting ones included: at the cap the least
// recently used unprotected session is evicted (the `protectedCount` most recently used never are; exited ones go
// first; one still starting never is), and a start with nothing to evict is refused. An
// exited session stays registered, drainable, until a call observes its exit. A live session's status is its
// actor's own state, read from its snapshot (`records`), never copied here; the pool keeps the use order and the
// exits not yet observed. The host reads the registry from the snapshot (`poolRecords`) and hears what happened
// through emitted events.
import { assertEvent, emit, enqueueActions, setup } from "xstate";
import type { AnyActorRef } from "xstate";
import { execSessionMachine, type ExecSessionCommand, type ExecSessionNotice } from "./exec-session.ts";
import { wakeMachine, type WakeCommand } from "./exec-wake.ts";
import {
  LIVE,
  capDecision,
  forgetEnded,
  liveRecord,
  records,
  sessionId,
  used,
  without,
  type ExecCommand,
  type ExecEmitted,
  type ExecPoolContext,
  type ExecPoolEvent,
  type ExecPoolInput,
  type ExecRecord,
  type SessionSnapshot,
} from "./exec-pool-context.ts";

export * from "./exec-pool-context.ts";

/** A child session's snapshot, read through the pool itself (`self`): its children as of this event. */
const childOf = (self: AnyActorRef) => (id: number) =>
  (self.getSnapshot().children as Record<string, AnyActorRef | undefined>)[sessionId(id)]?.getSnapshot() as
    SessionSnapshot | undefined;

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
    /** A start under a free id: refused at the cap when nothing can be evicted (the sessions' states decide, read
     * from their actors), else started, evicting the victim the cap names. */
    start: enqueueActions(({ context, event, enqueue, self }) => {
      assertEvent(event, "exec.start");
      const e = event;
      // At the cap with nothing to evict the start is refused rather than exceed it.
      const cap = capDecision(records(context, childOf(self)), context);
      if (cap.kind === "full") {
        enqueue.emit({ type: "exec.refused", id: e.id, reason: cap.reason });
        return;
      }
      const victim = cap.kind === "evict" ? cap.victim : undefined;
      let { lru, ended } = context;
      if (victim && !LIVE.includes(victim.status)) {
        // Exited: only the record goes; its wake entry stays as the tombstone that still delivers.
        lru = without(lru, [victim.id]);
        ended = forgetEnded(ended, [victim.id]);
        enqueue.emit({ type: "exec.evicting", id: victim.id, running: false });
      } else if (victim) {
        enqueue.sendTo("wake", { type: "entry.suppress", id: victim.id } satisfies WakeCommand);
        const stop = {
          type: "shell.stop",
          at: e.at,
          reason: "evict",
          signal: "SIGTERM",
        } satisfies ExecSessionCommand;
        enqueue.sendTo(sessionId(victim.id), stop);
        enqueue.emit({ type: "exec.evicting", id: victim.id, running: true });
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
      enqueue.assign({ lru: used(lru, e.id), ended });
    }),
    touch: enqueueActions(({ context, enqueue }, id: number) => {
      if (context.lru.includes(id) && context.lru[context.lru.length - 1] !== id)
        enqueue.assign({ lru: used(context.lru, id) });
    }),
    /** The record leaves; the call whose result carries the exit has it reported to the wake entry. */
    forget: enqueueActions(({ context, enqueue }, e: Extract<ExecCommand, { type: "exec.forget" }>) => {
      enqueue.assign({ lru: without(context.lru, [e.id]), ended: forgetEnded(context.ended, [e.id]) });
      if (e.callId !== undefined)
        enqueue.sendTo("wake", { type: "entry.report", id: e.id, callId: e.callId } satisfies WakeCommand);
    }),
    kill: enqueueActions(({ context, enqueue, self }, e: Extract<ExecCommand, { type: "exec.kill" }>) => {
      const r = records(context, childOf(self))[e.id];
      if (!r || !LIVE.includes(r.status)) return;
      // The wake is suppressed before any signal, so the induced exit can never prompt.
      enqueue.sendTo("wake", { type: "entry.suppress", id: e.id } satisfies WakeCommand);
      const stop = { type: "shell.stop", at: e.at, reason: "kill", signal: e.signal } satisfies ExecSessionCommand;
      enqueue.sendTo(sessionId(e.id), stop);
    }),
    shutdownAll: enqueueActions(({ context, enqueue, event, self }) => {
      assertEvent(event, "exec.shutdown");
      const stop = {
        type: "shell.stop",
        at: event.at,
        reason: "shutdown",
        signal: "SIGTERM",
      } satisfies ExecSessionCommand;
      enqueue.sendTo("wake", { type: "wake.stop" } satisfies WakeCommand);
      for (const r of Object.values(records(context, childOf(self)))) {
        if (LIVE.includes(r.status)) enqueue.sendTo(sessionId(r.id), stop);
      }
    }),
    running: emit((_, e: Extract<ExecSessionNotice, { type: "shell.running" }>) => ({
      type: "exec.started" as const,
      id: e.id,
      pid: e.pid,
    })),
    held: emit((_, e: Extract<ExecSessionNotice, { type: "shell.held" }>) => ({
      type: "exec.held" as const,
      id: e.id,
    })),
    stopFailed: enqueueActions(({ enqueue }, e: Extract<ExecSessionNotice, { type: "shell.stop_failed" }>) => {
      // The process is still ours and alive: its wake is as it was before the kill.
      enqueue.sendTo("wake", { type: "entry.restore", id: e.id } satisfies WakeCommand);
      enqueue.emit({
        type: "exec.stop_failed",
        id: e.id,
        reason: e.reason,
        escalated: e.escalated,
        message: e.message,
      });
    }),
    ended: enqueueActions(({ context, enqueue, event, self }) => {
      assertEvent(event, "xstate.done.actor.*");
      const o = event.output;
      // The ended actor's last snapshot: what its record was, for the exit kept until a call observes it.
      const last = childOf(self)(o.id);
      enqueue.stopChild(event.actorId);
      const exit = { at: o.at, code: o.code, signal: o.signal, end: o.end };
      // A natural exit (or a failed start) stays registered until a call observes it; a stop we made leaves now.
      const keep = (o.end === "exited" || o.end === "failed") && context.lru.includes(o.id) && last;
      if (keep) {
        const { stop: _s, ...record } = liveRecord(last);
        const kept: ExecRecord = {
          ...record,
          status: o.end === "failed" ? "failed" : "exited",
          exit,
          ...(o.failure ? { failure: o.failure } : {}),
        };
        enqueue.assign({ ended: { ...context.ended, [o.id]: kept } });
      } else enqueue.assign({ lru: without(context.lru, [o.id]) });
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
    /** list_sessions reported these exited sessions: observed and reported by that call, they leave. */
    listed: enqueueActions(({ context, enqueue, event }) => {
      assertEvent(event, "exec.listed");
      const ids = event.ids.filter((id) => context.lru.includes(id));
      for (const id of ids) {
        enqueue.sendTo("wake", { type: "entry.observe", id, callId: event.callId } satisfies WakeCommand);
        enqueue.sendTo("wake", { type: "entry.report", id, callId: event.callId } satisfies WakeCommand);
      }
      enqueue.assign({ lru: without(context.lru, ids), ended: forgetEnded(context.ended, ids) });
    }),
    refuseStart: emit(({ event }, reason: string) => {
      assertEvent(event, "exec.start");
      return { type: "exec.refused" as const, id: event.id, reason: reason || `session id ${event.id} is in use` };
    }),
    passWake: emit(({ event }) => {
      assertEvent(event, "wake.deliver");
      return { type: "exec.wake" as const, batch: event.batch, notices: event.notices };
    }),
    passAnswer: emit(({ event }) => {
      assertEvent(event, "wake.answer");
      const { type: _t, ...answer } = event;
      return { type: "exec.answer" as const, ...answer };
    }),
  },
  guards: {
    duplicate: ({ context, event }) => {
      assertEvent(event, "exec.start");
      return context.lru.includes(event.id);
    },
  },
}).createMachine({
  id: "exec",
  context: ({ input }) => ({ ...input, ended: {}, lru: [] }),
  invoke: {
    src: "wake",
    id: "wake",
    systemId: "exec:wake",
    input: ({ context }) => ({ debounceMs: context.debounceMs }),
  },
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
      actions: {
        type: "toWake",
        params: ({ event }) => ({ type: "entry.release", id: event.id, callId: event.callId }),
      },
    },
    "exec.finalize": {
      actions: {
        type: "toWake",
        params: ({ event }) => ({ type: "entry.finalize", callId: event.callId, ok: event.ok }),
      },
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
          registered: context.lru.includes(event.id),
        }),
      },
    },
    "exec.listed": { actions: "listed" },
    "exec.agent_settled": { actions: { type: "toWake", params: { type: "wake.settled" } } },
    "exec.wake_delivered": {
      actions: { type: "toWake", params: ({ event }) => ({ type: "wake.delivered", batch: event.batch }) },
    },
    "exec.wake_failed": {
      actions: { type: "toWake", params: ({ event }) => ({ type: "wake.failed", batch: event.batch }) },
    },
    "shell.running": { actions: { type: "running", params: ({ event }) => event } },
    "shell.held": { actions: { type: "held", params: ({ event }) => event } },
    "shell.stop_failed": { actions: { type: "stopFailed", params: ({ event }) => event } },
    "xstate.done.actor.*": { actions: "ended" },
    "wake.deliver": { actions: "passWake" },
    "wake.answer": { actions: "passAnswer" },
  },
  states: {
    serving: {
      description: "Sessions start, run and are observed.",
      on: {
        // The cap is decided in `start`: it reads the sessions' states from their actors, and XState guards see only
        // the context and the event.
        "exec.start": [{ guard: "duplicate", actions: { type: "refuseStart", params: "" } }, { actions: "start" }],
        "exec.shutdown": { target: "stopping", actions: "shutdownAll" },
      },
    },
    stopping: {
      description: "Pi is shutting down: every process group gets SIGTERM, then SIGKILL; nothing new starts.",
      on: {
        "exec.start": { actions: { type: "refuseStart", params: "Pi is shutting down" } },
      },
    },
  },
});
