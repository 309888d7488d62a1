// The root actor. The extension sends it commands; it starts fresh runs (`run:<id>`) and named sessions
// (`session:<name>`) as children with explicit ids, and announces every outcome as an emitted `run.finished`.
import { emit, enqueueActions, fromCallback, setup } from "xstate";
import type { DoneActorEvent } from "xstate";
import type {
  CommandEvent,
  KernelCommand,
  KernelInput,
  Limits,
  RunFinishedEvent,
  RunOutcome,
  RunPhaseEvent,
  RunStartEvent,
  SessionReplacement,
} from "./events.ts";
import { runMachine } from "./run.ts";
import type { NestedCallEvent } from "./run-calls.ts";
import { message } from "./message.ts";
import { sessionMachine, type SessionOutput } from "./session.ts";

export interface SupervisorInput {
  limits: Limits;
}

export interface SessionEntry {
  ordinal: number;
  /** `alive` while its actor exists; `lost` or `closed` after it ended. */
  status: "alive" | "lost" | "closed";
  cwd: string;
  /** The interpreter's executable, when the host named one. */
  python?: string;
  /** The run the session is executing, if any. */
  busyRunId?: string;
}

export interface SupervisorContext extends SupervisorInput {
  sessions: Record<string, SessionEntry>;
  /** Runs not yet finished, with their session (null for fresh runs). */
  active: Record<string, string | null>;
}

export type SupervisorEvent =
  | CommandEvent
  | RunFinishedEvent
  | RunPhaseEvent
  | NestedCallEvent
  | DoneActorEvent<RunOutcome | SessionOutput>;

/** `run.nested_call`: one nested tool call's terminal record, passed on as it ends (machines/run-calls.ts). */
export type SupervisorEmitted = RunFinishedEvent | NestedCallEvent;

const kernelPlaceholder = fromCallback<KernelCommand, KernelInput>(() => {
  throw new Error("supervisor: the `kernel` actor must be provided");
});

/** A setup_error outcome for a request the supervisor refuses before any actor exists. */
export function refusal(e: RunStartEvent, message: string, context?: SupervisorContext): RunOutcome {
  const entry = e.session !== undefined ? context?.sessions[e.session] : undefined;
  return {
    runId: e.runId,
    status: "setup_error",
    displayedValue: false,
    requestedAt: e.at,
    finishedAt: e.at,
    durationMs: 0,
    killed: false,
    message,
    ...(e.session !== undefined
      ? { session: { name: e.session, ordinal: entry?.ordinal ?? 0, started: false, isLost: false } }
      : {}),
  };
}

export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    input: {} as SupervisorInput,
    events: {} as SupervisorEvent,
    emitted: {} as SupervisorEmitted,
  },
  actors: {
    run: runMachine.provide({ actors: { kernel: kernelPlaceholder } }),
    session: sessionMachine.provide({ actors: { kernel: kernelPlaceholder } }),
  },
  actions: {
    refuse: emit((_, outcome: RunOutcome) => ({ type: "run.finished" as const, outcome })),
    startFresh: enqueueActions(({ context, enqueue }, e: RunStartEvent) => {
      const id = `run:${e.runId}`;
      enqueue.spawnChild("run", {
        id,
        systemId: id,
        input: {
          runId: e.runId,
          code: e.code,
          filename: "script.py",
          cwd: e.cwd,
          timeoutMs: e.timeoutMs,
          requestedAt: e.at,
          limits: e.limits ?? context.limits,
          ...(e.python ? { python: e.python } : {}),
          ...(e.dependencies?.length ? { dependencies: e.dependencies } : {}),
          ...(e.bridge ? { bridge: e.bridge } : {}),
        },
      });
      enqueue.assign({ active: { ...context.active, [e.runId]: null } });
    }),
    startInSession: enqueueActions(({ context, enqueue, system }, e: RunStartEvent) => {
      const name = e.session!;
      const id = `session:${name}`;
      const entry = context.sessions[name];
      const alive = entry?.status === "alive" && system.get(id) !== undefined;
      // One process never mixes interpreters or working directories: a run that differs replaces it.
      const replaced: SessionReplacement | undefined =
        !alive || e.reset
          ? undefined
          : entry!.python !== e.python
            ? { reason: "interpreter", from: entry!.python ?? "the default interpreter" }
            : entry!.cwd !== e.cwd
              ? { reason: "cwd", from: entry!.cwd }
              : undefined;
      const keep = alive && !e.reset && !replaced;
      let ordinal = entry?.ordinal ?? 0;
      if (keep) {
        enqueue.sendTo(system.get(id)!, e);
      } else {
        // Reset stops the old process (its kernel's cleanup kills the process group) and starts anew.
        if (alive) enqueue.stopChild(id);
        ordinal += 1;
        enqueue.spawnChild("session", {
          id,
          systemId: id,
          input: {
            name,
            ordinal,
            cwd: e.cwd,
            limits: e.limits ?? context.limits,
            firstRun: e,
            ...(entry?.status === "lost" ? { replacedLost: true } : {}),
            ...(e.python ? { python: e.python } : {}),
            ...(replaced ? { replaced } : {}),
          },
        });
      }
      enqueue.assign({
        sessions: {
          ...context.sessions,
          [name]: {
            ordinal,
            status: "alive",
            cwd: keep ? entry!.cwd : e.cwd,
            ...((keep ? entry!.python : e.python) ? { python: keep ? entry!.python : e.python } : {}),
            busyRunId: e.runId,
          },
        },
        active: { ...context.active, [e.runId]: name },
      });
    }),
    announce: enqueueActions(({ context, event, enqueue }) => {
      const { outcome } = event as RunFinishedEvent;
      const session = context.active[outcome.runId];
      const { [outcome.runId]: _gone, ...active } = context.active;
      const sessions = { ...context.sessions };
      if (session && sessions[session]?.busyRunId === outcome.runId) {
        const { busyRunId: _b, ...rest } = sessions[session];
        sessions[session] = rest;
      }
      enqueue.assign({ active, sessions });
      enqueue.emit({ type: "run.finished", outcome });
    }),
    /** Done children are removed at once: XState otherwise keeps them (quadratic cost). */
    release: enqueueActions(({ context, event, enqueue }) => {
      const done = event as DoneActorEvent<RunOutcome | SessionOutput>;
      enqueue.stopChild(done.actorId);
      if (done.actorId.startsWith("session:")) {
        const out = done.output as SessionOutput;
        const entry = context.sessions[out.name];
        // A reset may already have replaced this incarnation.
        if (entry && entry.ordinal === out.ordinal) {
          enqueue.assign({
            sessions: {
              ...context.sessions,
              [out.name]: {
                ordinal: entry.ordinal,
                status: out.end,
                cwd: entry.cwd,
                ...(entry.python ? { python: entry.python } : {}),
              },
            },
          });
        }
      }
    }),
    cancel: enqueueActions(({ event, enqueue, system }) => {
      const e = event as Extract<CommandEvent, { type: "run.cancel" }>;
      const run = system.get(`run:${e.runId}`);
      if (run) enqueue.sendTo(run, e);
    }),
    closeSession: enqueueActions(({ context, event, enqueue, system }, name: string) => {
      const ref = system.get(`session:${name}`);
      if (ref && context.sessions[name]?.status === "alive") {
        enqueue.sendTo(ref, message({ type: "session.close", at: (event as { at?: number }).at ?? 0 }));
      }
    }),
    closeAll: enqueueActions(({ context, event, enqueue, system }) => {
      const at = (event as { at?: number }).at ?? 0;
      for (const [name, entry] of Object.entries(context.sessions)) {
        const ref = system.get(`session:${name}`);
        if (ref && entry.status === "alive") enqueue.sendTo(ref, message({ type: "session.close", at }));
      }
      for (const [runId, session] of Object.entries(context.active)) {
        const ref = session === null ? system.get(`run:${runId}`) : undefined;
        if (ref) enqueue.sendTo(ref, message({ type: "run.cancel", at, runId }));
      }
    }),
  },
  guards: {
    isFresh: ({ event }) => (event as RunStartEvent).session === undefined,
    sessionBusy: ({ context, event }) => {
      const e = event as RunStartEvent;
      return e.session !== undefined && context.sessions[e.session]?.busyRunId !== undefined;
    },
    duplicateRun: ({ context, event }) => (event as RunStartEvent).runId in context.active,
  },
}).createMachine({
  id: "supervisor",
  context: ({ input }) => ({ ...input, sessions: {}, active: {} }),
  initial: "serving",
  on: {
    "run.cancel": { actions: "cancel" },
    "run.finished": { actions: "announce" },
    "run.nested_call": { actions: emit(({ event }) => event as NestedCallEvent) },
    "xstate.done.actor.*": { actions: "release" },
    "session.stop": { actions: { type: "closeSession", params: ({ event }) => event.name } },
  },
  states: {
    serving: {
      on: {
        "run.start": [
          {
            guard: "duplicateRun",
            actions: {
              type: "refuse",
              params: ({ event }) => refusal(event, `Run id ${event.runId} is already in use.`),
            },
          },
          {
            guard: "sessionBusy",
            actions: {
              type: "refuse",
              params: ({ context, event }) =>
                refusal(event, `Session "${event.session}" is busy with another run; wait for it to finish.`, context),
            },
          },
          { guard: "isFresh", actions: { type: "startFresh", params: ({ event }) => event } },
          { actions: { type: "startInSession", params: ({ event }) => event } },
        ],
        "supervisor.shutdown": { target: "stopping", actions: "closeAll" },
      },
    },
    /** Pi is shutting down or reloading: sessions close, runs are cancelled, nothing new starts. */
    stopping: {
      on: {
        "run.start": {
          actions: {
            type: "refuse",
            params: ({ event }) =>
              refusal(event, "Pi is shutting down; the code_execution supervisor accepts no new runs."),
          },
        },
      },
    },
  },
});
