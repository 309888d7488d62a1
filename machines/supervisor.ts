// The root actor. The extension sends it commands; it starts fresh runs (`run:<id>`) and named sessions
// (`session:<name>`) as children with explicit ids, and announces every outcome as an emitted `run.finished`.
import { emit, enqueueActions, fromCallback, setup } from "xstate";
import type { DoneActorEvent } from "xstate";
import type {
  CommandEvent,
  KernelCommand,
  KernelInput,
  Language,
  Limits,
  RunFinishedEvent,
  RunOutcome,
  RunPhaseEvent,
  RunStartEvent,
  SessionReplacement,
} from "./events.ts";
import { runMachine } from "./run.ts";
import { refusal, requestExtras } from "./run-outcome.ts";
import type { NestedCallEvent } from "./run-calls.ts";
import { message } from "./message.ts";
import { spareMachine, type SpareInput, type SpareNotice, type SpareOutput } from "./spare.ts";
import { sessionMachine, type SessionOutput } from "./session.ts";
import { DEFAULT_EXEC_POOL, EXEC_POOL_ID, execPoolMachine, type ExecCommand, type ExecPoolInput } from "./exec-pool.ts";

export interface SupervisorInput {
  limits: Limits;
  /** A spare runner unused this long retires (default 60 s). */
  spareIdleMs?: number;
  /** The shell sessions' bounds (machines/exec-pool.ts); default DEFAULT_EXEC_POOL. */
  exec?: ExecPoolInput;
}

/** A spare runner kept for a key: warming until it reports ready. */
export interface SpareEntry {
  id: string;
  key: string;
  ready: boolean;
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
  /** The run the session is executing, if any. */
  busyRunId?: string;
}

export interface SupervisorContext extends SupervisorInput {
  sessions: Record<string, SessionEntry>;
  /** Runs not yet finished, with their session (null for fresh runs). */
  active: Record<string, string | null>;
  /** The spare runners, by actor id (machines/spare.ts): a small pool per key in use. */
  spares: Record<string, SpareEntry>;
  /** How many spares each key in use keeps: 1, more while fresh runs find none ready (at most MAX_SPARES_PER_KEY);
   * back to the pool's size as idle spares retire. */
  spareTarget: Record<string, number>;
  spareSeq: number;
  /** False once shutdown began: no new spares. */
  serving: boolean;
}

/** What a spare runner is started for. */
export interface SpareRequest {
  key: string;
  cwd: string;
  python?: string;
}

/** Shell sessions: `exec.open` creates the pool (`exec`) on first use; every other `exec.*` command goes to it. */
export type ExecSupervisorCommand = { type: "exec.open"; at: number } | ExecCommand;

export type SupervisorEvent =
  | SpareNotice
  | CommandEvent
  | ExecSupervisorCommand
  | RunFinishedEvent
  | RunPhaseEvent
  | NestedCallEvent
  | DoneActorEvent<RunOutcome | SessionOutput>;

/** `run.nested_call`: one nested tool call's terminal record, passed on as it ends (machines/run-calls.ts). */
export type SupervisorEmitted = RunFinishedEvent | NestedCallEvent;

const kernelPlaceholder = fromCallback<KernelCommand, KernelInput>(() => {
  throw new Error("supervisor: the `kernel` actor must be provided");
});

/** Spawns a spare runner for `request` and returns the context changes that record it. */
function warmSpare(
  enqueue: { spawnChild: (src: "spare", options: { id: string; systemId: string; input: SpareInput }) => void },
  context: SupervisorContext,
  request: SpareRequest,
): Pick<SupervisorContext, "spares" | "spareSeq"> {
  const spareSeq = context.spareSeq + 1;
  const id = `spare:${spareSeq}`;
  enqueue.spawnChild("spare", {
    id,
    systemId: id,
    input: { id, idleMs: context.spareIdleMs ?? 60_000, ...request },
  });
  return { spareSeq, spares: { ...context.spares, [id]: { id, key: request.key, ready: false } } };
}

const sparesOf = (spares: Record<string, SpareEntry>, key: string) =>
  Object.values(spares).filter((s) => s.key === key);

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
    spare: spareMachine.provide({ actors: { kernel: kernelPlaceholder } }),
    exec: execPoolMachine,
  },
  actions: {
    openExec: enqueueActions(({ context, enqueue, system }, p: { stopping: boolean; at: number }) => {
      if (system.get(EXEC_POOL_ID)) return;
      enqueue.spawnChild("exec", {
        id: EXEC_POOL_ID,
        systemId: EXEC_POOL_ID,
        input: context.exec ?? DEFAULT_EXEC_POOL,
      });
      // Opened during shutdown: it refuses every start.
      if (p.stopping) enqueue.sendTo(EXEC_POOL_ID, { type: "exec.shutdown", at: p.at });
    }),
    forwardExec: enqueueActions(({ event, enqueue, system }) => {
      const ref = system.get(EXEC_POOL_ID);
      if (ref) enqueue.sendTo(ref, message(event as ExecCommand));
    }),
    refuse: emit((_, outcome: RunOutcome) => ({ type: "run.finished" as const, outcome })),
    startFresh: enqueueActions(({ context, enqueue, system }, e: RunStartEvent) => {
      const id = `run:${e.runId}`;
      // Spares serve runs of the key's own interpreter; a run with dependencies uses an installed environment.
      const key = e.spareKey !== undefined && !e.dependencies?.length ? e.spareKey : undefined;
      const pool = key !== undefined ? sparesOf(context.spares, key) : [];
      const spare = pool.find((s) => s.ready && system.get(s.id));
      const spareRef = spare ? system.get(spare.id) : undefined;
      const claimed = spareRef ? spare!.id : undefined;
      if (spareRef) enqueue.sendTo(spareRef, message({ type: "spare.claim", at: e.at, runId: e.runId }));
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
          ...(claimed ? { spare: claimed } : {}),
          ...requestExtras(e),
          ...(e.backend ? { backend: e.backend } : {}),
        },
      });
      // Keep the key's spares warming or ready: the next fresh runs like this one take them. The first run of a
      // key starts one now (it warms while the run starts cold); a claimed one is replaced at once, at claim time,
      // so runs arriving back to back find the next one warming, not yet to be started. A run that finds the pool
      // still warming grows it by one (bounded): runs are arriving faster than one spare warms.
      const request: SpareRequest | undefined =
        key !== undefined ? { key, cwd: e.cwd, ...(e.python ? { python: e.python } : {}) } : undefined;
      let next: Partial<Pick<SupervisorContext, "spares" | "spareSeq" | "spareTarget">> = {};
      if (request && context.serving) {
        const { [claimed ?? ""]: _taken, ...spares } = context.spares;
        const target = Math.min(
          MAX_SPARES_PER_KEY,
          Math.max(1, (context.spareTarget[request.key] ?? 0) + (!claimed && pool.length ? 1 : 0)),
        );
        next = { spares, spareSeq: context.spareSeq, spareTarget: { ...context.spareTarget, [request.key]: target } };
        for (let n = sparesOf(spares, request.key).length; n < target; n++)
          next = { ...next, ...warmSpare(enqueue, { ...context, ...next }, request) };
      }
      enqueue.assign({ active: { ...context.active, [e.runId]: null }, ...next });
    }),
    spareReady: enqueueActions(({ context, event, enqueue }) => {
      const e = event as SpareNotice;
      if (context.spares[e.id]) {
        enqueue.assign({ spares: { ...context.spares, [e.id]: { id: e.id, key: e.key, ready: true } } });
      }
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
      let incarnation = entry?.incarnation ?? 0;
      if (keep) {
        enqueue.sendTo(system.get(id)!, e);
      } else {
        // Reset stops the old process (its kernel's cleanup kills the process group) and starts anew.
        if (alive) enqueue.stopChild(id);
        incarnation += 1;
        enqueue.spawnChild("session", {
          id,
          systemId: id,
          input: {
            name,
            incarnation,
            cwd: e.cwd,
            limits: e.limits ?? context.limits,
            firstRun: e,
            ...(entry?.status === "lost" ? { replacedLost: true } : {}),
            ...(e.python ? { python: e.python } : {}),
            ...(e.language === "js" ? { language: e.language } : {}),
            ...(replaced ? { replaced } : {}),
            ...(e.backend ? { backend: e.backend } : {}),
          },
        });
      }
      enqueue.assign({
        sessions: {
          ...context.sessions,
          [name]: {
            incarnation,
            status: "alive",
            cwd: keep ? entry!.cwd : e.cwd,
            ...((keep ? entry!.python : e.python) ? { python: keep ? entry!.python : e.python } : {}),
            ...(e.language === "js" ? { language: e.language } : {}),
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
      if (done.actorId.startsWith("spare:")) {
        const out = done.output as unknown as SpareOutput;
        if (context.spares[out.id]) {
          const { [out.id]: _gone, ...spares } = context.spares;
          // A pool shrinks as its idle spares retire: the next burst grows it again.
          const left = sparesOf(spares, out.key).length;
          const { [out.key]: _t, ...rest } = context.spareTarget;
          const spareTarget = left ? { ...rest, [out.key]: left } : rest;
          enqueue.assign({ spares, spareTarget });
        }
      }
      if (done.actorId.startsWith("session:")) {
        const out = done.output as SessionOutput;
        const entry = context.sessions[out.name];
        // A reset may already have replaced this incarnation.
        if (entry && entry.incarnation === out.incarnation) {
          enqueue.assign({
            sessions: {
              ...context.sessions,
              [out.name]: {
                incarnation: entry.incarnation,
                status: out.end,
                cwd: entry.cwd,
                ...(entry.python ? { python: entry.python } : {}),
                ...(entry.language ? { language: entry.language } : {}),
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
      for (const spare of Object.values(context.spares)) {
        const ref = system.get(spare.id);
        if (ref) enqueue.sendTo(ref, message({ type: "spare.retire", at }));
      }
      const exec = system.get(EXEC_POOL_ID);
      if (exec) enqueue.sendTo(exec, message({ type: "exec.shutdown", at }));
      enqueue.assign({ serving: false });
    }),
  },
  guards: {
    isFresh: ({ event }) => (event as RunStartEvent).session === undefined,
    sessionBusy: ({ context, event }) => {
      const e = event as RunStartEvent;
      return e.session !== undefined && context.sessions[e.session]?.busyRunId !== undefined;
    },
    duplicateRun: ({ context, event }) => (event as RunStartEvent).runId in context.active,
    /** JavaScript runs only in sessions (eval's js cells). */
    freshJs: ({ event }) => (event as RunStartEvent).language === "js" && (event as RunStartEvent).session === undefined,
    /** A session runs one language: a run of the other one may not replace (or use) it. */
    otherLanguage: ({ context, event }) => {
      const e = event as RunStartEvent;
      const entry = e.session !== undefined ? context.sessions[e.session] : undefined;
      return entry !== undefined && entry.status === "alive" && (entry.language ?? "python") !== (e.language ?? "python");
    },
  },
}).createMachine({
  id: "supervisor",
  context: ({ input }) => ({
    ...input,
    sessions: {},
    active: {},
    spares: {},
    spareTarget: {},
    spareSeq: 0,
    serving: true,
  }),
  initial: "serving",
  on: {
    "run.cancel": { actions: "cancel" },
    "run.finished": { actions: "announce" },
    "spare.ready": { actions: "spareReady" },
    "run.nested_call": { actions: emit(({ event }) => event as NestedCallEvent) },
    "xstate.done.actor.*": { actions: "release" },
    "session.stop": { actions: { type: "closeSession", params: ({ event }) => event.name } },
    "exec.open": { actions: { type: "openExec", params: ({ event }) => ({ stopping: false, at: event.at }) } },
    "exec.*": { actions: "forwardExec" },
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
                refusal(
                  event,
                  `Session "${event.session}" is busy with another run; wait for it to finish.`,
                  context.sessions[event.session!]?.incarnation,
                ),
            },
          },
          {
            guard: "freshJs",
            actions: {
              type: "refuse",
              params: ({ event }) => refusal(event, "JavaScript runs only in a session (eval's js cells)."),
            },
          },
          {
            guard: "otherLanguage",
            actions: {
              type: "refuse",
              params: ({ context, event }) => {
                const runs = context.sessions[event.session!]?.language === "js" ? "JavaScript" : "Python";
                return refusal(
                  event,
                  `Session "${event.session}" runs ${runs}; use another session name for ${runs === "Python" ? "JavaScript" : "Python"}.`,
                  context.sessions[event.session!]?.incarnation,
                );
              },
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
        "exec.open": { actions: { type: "openExec", params: ({ event }) => ({ stopping: true, at: event.at }) } },
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
