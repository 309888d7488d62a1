// The root actor. The host sends it commands. Each request is prepared first, one at a time in arrival order, by
// the `prepare` child (interpreter, PEP 723 metadata, spare key: actors/prepare/); then the supervisor starts a fresh
// run (`run:<id>`) or passes it to a named session (`session:<name>`), children with explicit ids. A fresh run takes a
// ready spare runner if its key has one, read from the spare pool (`spare:pool`, machines/spare-pool.ts, spawned by
// the first fresh run with a key), which it then tells what the run took. Every outcome, including refusals, is
// announced as an emitted `run.finished`; nested calls' records as `run.nested_call`. While serving, the supervisor is
// `idle` (no request waits) or `preparing` (the queue's head is being prepared, the rest wait in order).
import { assertEvent, assign, emit, enqueueActions, not, setup } from "xstate";
import type { EventObject } from "xstate";
import type { PrepareFact, RunFinishedEvent, RunOutcome, RunStartEvent } from "./events.ts";
import { runMachine } from "./run.ts";
import { refusal, requestOutcome } from "./run-outcome.ts";
import { placeholder } from "./placeholder.ts";
import { readySpare, sparePoolMachine, type SparePoolCommand, type SparePoolSnapshot } from "./spare-pool.ts";
import { sessionMachine, type SessionEvent, type SessionOutput } from "./session.ts";
import type { RunCancel } from "./run-context.ts";
import { DEFAULT_EXEC_POOL, EXEC_POOL_ID, execPoolMachine, type ExecCommand } from "./exec-pool.ts";
import {
  factOfPrepared,
  freshInput,
  initialContext,
  isCurrentIncarnation,
  isFreshJs,
  isQueued,
  otherLanguage,
  otherLanguageMessage,
  preparedRequest,
  replacementOf,
  sessionInput,
  sessionsEnded,
  spareKeyOf,
  sparePoolInput,
  sparesRun,
  type SupervisorContext,
  type SupervisorEmitted,
  type SupervisorEvent,
  type SupervisorInput,
} from "./supervisor-context.ts";
import { isActor, runActorId, sessionActorId, SPARE_POOL_ID } from "./actor-ids.ts";

export * from "./supervisor-context.ts";

const SHUTDOWN = "Pi is shutting down; the code_execution supervisor accepts no new runs.";
const FRESH_JS = "JavaScript runs only in a session (eval's js cells).";
const busy = (name: string) => `Session "${name}" is busy with another run; wait for it to finish.`;
/** A request whose id a run or a waiting request already has is refused, in either substate of `serving`. */
const refuseDuplicate = { guard: "duplicateRun", actions: "refuseDuplicate" } as const;
/** Whether a session actor has a run active (its own context: a direct run is known only there). */
const sessionHasRun = (ref: { getSnapshot: () => unknown } | undefined) =>
  (ref?.getSnapshot() as { context?: { activeRunId?: string } } | undefined)?.context?.activeRunId !== undefined;

/** Prepares `request`: a request its sender settled raises the fact it stands for; any other gets the `prepare`
 * actor. */
function prepare(
  enqueue: {
    raise(fact: PrepareFact): void;
    spawnChild(src: "prepare", options: { id: "prepare"; input: RunStartEvent }): void;
  },
  request: RunStartEvent,
): void {
  if (request.prepared) enqueue.raise(factOfPrepared(request));
  else enqueue.spawnChild("prepare", { id: "prepare", input: request });
}

export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    input: {} as SupervisorInput,
    events: {} as SupervisorEvent,
    emitted: {} as SupervisorEmitted,
  },
  actors: {
    prepare: placeholder<EventObject, RunStartEvent>("supervisor", "prepare"),
    run: runMachine,
    session: sessionMachine,
    sparePool: sparePoolMachine,
    exec: execPoolMachine,
  },
  actions: {
    /** The shell-session pool is created on first use; opened during shutdown, it refuses every start. */
    openExec: enqueueActions(({ context, event, enqueue, system }, stopping: boolean) => {
      assertEvent(event, "exec.open");
      if (system.get(EXEC_POOL_ID)) return;
      enqueue.spawnChild("exec", {
        id: EXEC_POOL_ID,
        systemId: EXEC_POOL_ID,
        input: context.exec ?? DEFAULT_EXEC_POOL,
      });
      const shutdown = { type: "exec.shutdown", at: event.at } satisfies ExecCommand;
      if (stopping) enqueue.sendTo(EXEC_POOL_ID, shutdown);
    }),
    forwardExec: enqueueActions(({ event, enqueue, system }) => {
      assertEvent(event, "exec.*");
      const ref = system.get(EXEC_POOL_ID);
      if (ref) enqueue.sendTo(ref, event);
    }),
    /** A request joins the queue, behind those waiting. */
    enqueue: assign(({ context, event }) => {
      assertEvent(event, "run.start");
      return { queue: [...context.queue, event] };
    }),
    /** The request at the head of the queue is prepared: by a prepare actor, or, when its sender settled it, by
     * raising the fact it stands for (`next` prepares the one after the same way). Spawned, not invoked by `preparing`:
     * a settled request gets no actor (the warm path), and an invoked child stops on the state's exit, before the
     * transition's actions, so its stop would precede the start of the run it prepared, where logs record it after. */
    prepareHead: enqueueActions(({ context, enqueue }) => {
      prepare(enqueue, context.queue[0]!);
    }),
    /** The head of the queue is done with (prepared, refused or cancelled): its preparation stops, and the next one,
     * if any, is prepared under the same id. */
    next: enqueueActions(({ context, enqueue }) => {
      const [head, ...queue] = context.queue;
      if (head && !head.prepared) enqueue.stopChild("prepare");
      if (queue[0]) prepare(enqueue, queue[0]);
      enqueue.assign({ queue });
    }),
    refuse: emit((_, outcome: RunOutcome): RunFinishedEvent => ({ type: "run.finished", outcome })),
    refuseDuplicate: emit(({ event }): RunFinishedEvent => {
      assertEvent(event, "run.start");
      return { type: "run.finished", outcome: refusal(event, `Run id ${event.runId} is already in use.`) };
    }),
    refuseUnprepared: emit(({ context, event }): RunFinishedEvent => {
      assertEvent(event, "prepare.failed");
      const request = context.queue[0]!;
      const incarnation = request.session !== undefined ? context.sessions[request.session]?.incarnation : undefined;
      const extra = {
        at: event.at,
        ...(event.hints ? { hints: event.hints } : {}),
        ...(incarnation ? { incarnation } : {}),
      };
      return { type: "run.finished", outcome: refusal(request, event.message, extra) };
    }),
    /** A prepared request no run may serve: its session runs the other language. */
    refuseOtherLanguage: emit(({ context, event }): RunFinishedEvent => {
      assertEvent(event, "prepare.done");
      const e = preparedRequest(context, event);
      const incarnation = context.sessions[e.session!]?.incarnation;
      const message = otherLanguageMessage(context, e);
      return { type: "run.finished", outcome: refusal(e, message, { at: event.at, incarnation }) };
    }),
    refuseFreshJs: emit(({ context, event }): RunFinishedEvent => {
      assertEvent(event, "prepare.done");
      const outcome = refusal(preparedRequest(context, event), FRESH_JS, { at: event.at });
      return { type: "run.finished", outcome };
    }),
    startFresh: enqueueActions(({ context, event, enqueue, system }) => {
      assertEvent(event, "prepare.done");
      const e = preparedRequest(context, event);
      const id = runActorId(e.runId);
      const key = spareKeyOf(e);
      // The ready spare is chosen here, in the transition that starts the run (the run waits for its process from
      // the spare, actors/runner/handover.ts); the pool hears of it before the run starts, claims it and keeps the
      // key's spares warming for the next fresh runs like this one.
      let claimed: string | undefined;
      if (key !== undefined) {
        const pool = system.get(SPARE_POOL_ID);
        claimed = readySpare(pool?.getSnapshot() as SparePoolSnapshot | undefined, key);
        const input = sparePoolInput(context);
        if (!pool) enqueue.spawnChild("sparePool", { id: SPARE_POOL_ID, systemId: SPARE_POOL_ID, input });
        enqueue.sendTo(SPARE_POOL_ID, sparesRun(e, key, claimed) satisfies SparePoolCommand);
      }
      enqueue.spawnChild("run", { id, systemId: id, input: freshInput(context, e, claimed) });
      enqueue.assign({ active: { ...context.active, [e.runId]: null } });
    }),
    startInSession: enqueueActions(({ context, event, enqueue, system }) => {
      assertEvent(event, "prepare.done");
      const e = preparedRequest(context, event);
      const name = e.session!;
      const id = sessionActorId(name);
      const entry = context.sessions[name];
      const ref = system.get(id);
      const alive = entry?.status === "alive" && ref !== undefined;
      const replaced = alive && !e.reset ? replacementOf(entry!, e) : undefined;
      const keep = alive && !e.reset && !replaced;
      // Whether a session has a run is its own fact, read here from the session (a run the host sent straight to it
      // is known there alone; the supervisor keeps no copy): a busy session refuses the request, and a reset or a
      // replacement must not stop it under that run.
      if (alive && sessionHasRun(ref)) {
        const outcome = refusal(e, busy(name), { at: event.at, incarnation: entry!.incarnation });
        enqueue.emit({ type: "run.finished", outcome });
        return;
      }
      let incarnation = entry?.incarnation ?? 0;
      if (keep) {
        enqueue.sendTo(system.get(id)!, e);
      } else {
        // Reset stops the old process (its runner's cleanup kills the process group) and starts anew.
        if (alive) enqueue.stopChild(id);
        incarnation += 1;
        enqueue.spawnChild("session", { id, systemId: id, input: sessionInput(context, e, incarnation, replaced) });
      }
      const python = keep ? entry!.python : e.python;
      enqueue.assign({
        sessions: {
          ...context.sessions,
          [name]: {
            incarnation,
            status: "alive",
            cwd: keep ? entry!.cwd : e.cwd,
            ...(python ? { python } : {}),
            ...(e.language === "js" ? { language: e.language } : {}),
          },
        },
        active: { ...context.active, [e.runId]: name },
      });
    }),
    /** A cancelled request that no run serves yet ends here, its code never run (`next` drops the head). */
    cancelQueued: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, "run.cancel");
      const request = context.queue.find((r) => r.runId === event.runId)!;
      const message = "cancelled before it started; the code did not run";
      enqueue.emit({
        type: "run.finished",
        outcome: requestOutcome(request, "cancelled", { at: event.at, stopReason: "cancelled", message }),
      });
      if (context.queue[0] !== request) enqueue.assign({ queue: context.queue.filter((r) => r !== request) });
    }),
    /** A run ended: it is no longer active, and the outcome goes out. */
    announce: enqueueActions(({ context, enqueue }, outcome: RunOutcome) => {
      const { [outcome.runId]: _gone, ...active } = context.active;
      enqueue.assign({ active });
      enqueue.emit({ type: "run.finished", outcome });
    }),
    passNestedCall: emit(({ event }) => {
      assertEvent(event, "run.nested_call");
      return event;
    }),
    /** Done children are removed at once: XState otherwise keeps them (quadratic cost). A session incarnation whose
     * end was queued behind the request that started the next one is not: its id names the new incarnation now. */
    release: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, "xstate.done.actor.*");
      if (isActor(event.actorId, "session")) {
        const out = event.output as SessionOutput;
        if (!isCurrentIncarnation(context, out)) return;
        enqueue.stopChild(event.actorId);
        enqueue.assign({ sessions: sessionsEnded(context, out) });
        return;
      }
      enqueue.stopChild(event.actorId);
    }),
    cancel: enqueueActions(({ event, enqueue, system }) => {
      assertEvent(event, "run.cancel");
      const run = system.get(runActorId(event.runId));
      if (run) enqueue.sendTo(run, event);
    }),
    closeSession: enqueueActions(({ context, event, enqueue, system }) => {
      assertEvent(event, "session.stop");
      const ref = system.get(sessionActorId(event.name));
      if (ref && context.sessions[event.name]?.status === "alive") {
        const close = { type: "session.close", at: event.at } satisfies SessionEvent;
        enqueue.sendTo(ref, close);
      }
    }),
    /** Shutdown: sessions close, fresh runs are cancelled, spares retire, waiting requests are refused. */
    closeAll: enqueueActions(({ context, event, enqueue, system }) => {
      assertEvent(event, "supervisor.shutdown");
      const at = event.at;
      const close = { type: "session.close", at } satisfies SessionEvent;
      for (const [name, entry] of Object.entries(context.sessions)) {
        const ref = system.get(sessionActorId(name));
        if (ref && entry.status === "alive") enqueue.sendTo(ref, close);
      }
      for (const [runId, session] of Object.entries(context.active)) {
        const ref = session === null ? system.get(runActorId(runId)) : undefined;
        const cancel = { type: "run.cancel", at, runId } satisfies RunCancel;
        if (ref) enqueue.sendTo(ref, cancel);
      }
      const spares = system.get(SPARE_POOL_ID);
      const retire = { type: "spares.shutdown", at } satisfies SparePoolCommand;
      if (spares) enqueue.sendTo(spares, retire);
      const exec = system.get(EXEC_POOL_ID);
      const shutdown = { type: "exec.shutdown", at } satisfies ExecCommand;
      if (exec) enqueue.sendTo(exec, shutdown);
      if (context.queue.length) enqueue.stopChild("prepare");
      for (const request of context.queue) {
        enqueue.emit({ type: "run.finished", outcome: refusal(request, SHUTDOWN, { at }) });
      }
      enqueue.assign({ queue: [] });
    }),
  },
  guards: {
    duplicateRun: ({ context, event }) => {
      assertEvent(event, "run.start");
      return event.runId in context.active || isQueued(context, event.runId);
    },
    isQueued: ({ context, event }) => {
      assertEvent(event, "run.cancel");
      return isQueued(context, event.runId);
    },
    isHead: ({ context, event }) => {
      assertEvent(event, "run.cancel");
      return context.queue[0]?.runId === event.runId;
    },
    noneWaits: ({ context }) => context.queue.length === 0,
    forHead: ({ context, event }) => {
      assertEvent(event, ["prepare.done", "prepare.failed"]);
      return context.queue[0]?.runId === event.runId;
    },
    isFresh: ({ context }) => context.queue[0]?.session === undefined,
    freshJs: ({ context }) => context.queue[0] !== undefined && isFreshJs(context.queue[0]),
    otherLanguage: ({ context, event }) => {
      assertEvent(event, "prepare.done");
      return otherLanguage(context, preparedRequest(context, event));
    },
    isRun: ({ event }) => {
      assertEvent(event, "xstate.done.actor.*");
      return isActor(event.actorId, "run");
    },
  },
}).createMachine({
  id: "supervisor",
  context: ({ input }) => initialContext(input),
  initial: "serving",
  // What both states do: runs and sessions report, done children are released, a started run can be cancelled, and
  // the shell-session pool gets its commands.
  on: {
    "run.cancel": { actions: "cancel" },
    "run.finished": { actions: { type: "announce", params: ({ event }) => event.outcome } },
    "run.nested_call": { actions: "passNestedCall" },
    "xstate.done.actor.*": [
      {
        guard: "isRun",
        description: "A fresh run's outcome is its output.",
        actions: [{ type: "announce", params: ({ event }) => event.output as RunOutcome }, "release"],
      },
      { actions: "release" },
    ],
    "exec.*": { actions: "forwardExec" },
  },
  states: {
    serving: {
      description: "Requests are prepared one at a time, in the order they came, then started.",
      initial: "idle",
      on: {
        "session.stop": { actions: "closeSession" },
        "exec.open": { actions: { type: "openExec", params: false } },
        "supervisor.shutdown": { target: "stopping", actions: "closeAll" },
      },
      states: {
        idle: {
          description: "No request waits.",
          on: { "run.start": [refuseDuplicate, { target: "preparing", actions: "enqueue" }] },
        },
        preparing: {
          description:
            "The request at the queue's head is being prepared (by the `prepare` child, or by the fact its sender " +
            "settled); the rest wait in order. Done with the head, the next one is prepared, until none waits.",
          entry: "prepareHead",
          always: { guard: "noneWaits", target: "idle", description: "The last request waiting is done with." },
          on: {
            "run.start": [refuseDuplicate, { actions: "enqueue" }],
            "prepare.done": [
              { guard: not("forHead"), description: "Only the request being prepared is answered." },
              { guard: "freshJs", actions: ["refuseFreshJs", "next"] },
              { guard: "otherLanguage", actions: ["refuseOtherLanguage", "next"] },
              { guard: "isFresh", actions: ["startFresh", "next"] },
              { actions: ["startInSession", "next"] },
            ],
            "prepare.failed": { guard: "forHead", actions: ["refuseUnprepared", "next"] },
            "run.cancel": [
              { guard: "isHead", actions: ["cancelQueued", "next"] },
              { guard: "isQueued", actions: "cancelQueued" },
            ],
          },
        },
      },
    },
    stopping: {
      description:
        "Pi is shutting down or reloading: sessions close, runs are cancelled, nothing new starts (no queue, no " +
        "spares); a shell-session pool opened now starts stopped.",
      on: {
        "exec.open": { actions: { type: "openExec", params: true } },
        "run.start": { actions: { type: "refuse", params: ({ event }) => refusal(event, SHUTDOWN) } },
      },
    },
  },
});
