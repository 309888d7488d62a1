// A named persistent runner process (Python, or JavaScript for eval's js cells). Its runs are child actors, one at a
// time; a run's phase (running, interrupted, grace, killed) is the run's own state, which the session does not copy:
// `sessionPhase` reads it from the run.
// Everything a run reports (its outcome, its nested calls' records) goes to the session, which passes it on.
import { assertEvent, assign, enqueueActions, fromCallback, sendParent, sendTo, setup } from "xstate";
import type { DoneActorEvent } from "xstate";
import type {
  Language,
  Limits,
  RunFinishedEvent,
  RunnerCommand,
  RunnerFact,
  RunnerInfo,
  RunnerInput,
  RunOutcome,
  RunStartEvent,
  SessionReplacement,
} from "./events.ts";
import { runMachine, type RunInput } from "./run.ts";
import { requestExtras, runnerInfo, type RunCancel } from "./run-context.ts";
import { refusal } from "./run-outcome.ts";
import type { NestedCallEvent } from "./run-calls.ts";
import { placeholder } from "./placeholder.ts";

export interface SessionInput {
  name: string;
  /** Which process of this session name this is: 1, then 2 after a reset, a loss or a replacement, ... */
  incarnation: number;
  cwd: string;
  limits: Limits;
  /** The run that starts this session. */
  firstRun?: RunStartEvent;
  /** The previous incarnation of this session was lost. */
  replacedLost?: boolean;
  /** The interpreter the process runs (else the host's default). */
  python?: string;
  /** This incarnation replaced a live one whose interpreter or working directory differed. */
  replaced?: SessionReplacement;
  /** Absent: Python. */
  language?: Language;
  /** Where the session's process runs (the backend's label; shown by the inspector, never acted on). */
  backend?: string;
}

export interface SessionContext extends SessionInput {
  activeRunId?: string;
  runCount: number;
  closeRequested: boolean;
  runner?: RunnerInfo;
  /** The process ended while a run was active: the session ends so once that run has reported. */
  ending?: "lost" | "closed";
}

export type SessionEvent =
  | RunnerFact
  | RunnerCommand
  | RunStartEvent
  | NestedCallEvent
  | { type: "session.close"; at: number }
  | DoneActorEvent<RunOutcome>;

export interface SessionOutput {
  name: string;
  incarnation: number;
  end: "lost" | "closed";
}

/** The runner of a session run: forwards the run's runner commands to the session that owns the process. */
export const sessionLink = fromCallback<RunnerCommand, RunnerInput>(({ input, receive, system }) => {
  receive((command) => system.get(input.owner)?.send(command));
});

/** A session's run: the run machine whose runner is the session link (the process stays the session's). */
export const sessionRun = runMachine.provide({ actors: { runner: sessionLink } });

/** A session's phase as people name it: its own state, except that while its run is being stopped the run's step
 * (`interrupted`, `grace`, `killed`) shows through. `run` is the active run's state value, if any. */
export function sessionPhase(session: unknown, run: unknown): string {
  const own = typeof session === "string" ? session : JSON.stringify(session);
  const step = run && typeof run === "object" ? (run as { stopping?: unknown }).stopping : undefined;
  return (own === "running" || own === "starting") && typeof step === "string" ? step : own;
}

function runInput(context: SessionContext, e: RunStartEvent): RunInput {
  const first = context.runCount === 0;
  return {
    runId: e.runId,
    code: e.code,
    filename:
      context.language === "js"
        ? `cell-${context.runCount + 1}.js`
        : `${e.cell ? "cell" : "script"}-${context.runCount + 1}.py`,
    cwd: context.cwd,
    timeoutMs: e.timeoutMs,
    requestedAt: e.at,
    limits: e.limits ?? context.limits,
    session: {
      name: context.name,
      // The run's place in this process (1 for the run that starts it), as script-N.py says.
      ordinal: context.runCount + 1,
      incarnation: context.incarnation,
      started: first,
      ...(first && context.replacedLost ? { replacedLost: true } : {}),
      ...(first && context.replaced ? { replaced: context.replaced } : {}),
    },
    ...(context.python ? { python: context.python } : {}),
    ...(context.language ? { language: context.language } : {}),
    ...(e.dependencies?.length ? { dependencies: e.dependencies } : {}),
    ...(e.calls ? { calls: e.calls } : {}),
    ...requestExtras(e),
    ...(e.notes?.length ? { notes: e.notes } : {}),
    ...((e.backend ?? context.backend) ? { backend: e.backend ?? context.backend } : {}),
  };
}

const releaseAndReport = ["reportRun", "releaseRun"] as const;

/** The process is gone: an active run gets the fact and reports first, then the session ends `end`; with no run
 * active it ends at once. */
const processGone = (end: "lost" | "closed") =>
  [
    { guard: "hasActiveRun", actions: ["forwardToRun", { type: "markEnding", params: end }] },
    { target: `#session.${end}` },
  ] as const;

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    input: {} as SessionInput,
    events: {} as SessionEvent,
    output: {} as SessionOutput,
  },
  actors: {
    runner: placeholder<RunnerCommand, RunnerInput>("session", "runner"),
    run: sessionRun,
  },
  actions: {
    startProcess: enqueueActions(({ context, enqueue }) => {
      const input: RunnerInput = {
        mode: "session",
        cwd: context.cwd,
        owner: `session:${context.name}`,
        ...(context.python ? { python: context.python } : {}),
        ...(context.language ? { language: context.language } : {}),
      };
      enqueue.spawnChild("runner", { id: "runner", input });
    }),
    spawnRun: enqueueActions(({ context, enqueue }, e: RunStartEvent | undefined) => {
      if (!e) return;
      const id = `run:${e.runId}`;
      enqueue.spawnChild("run", { id, systemId: id, input: runInput(context, e) });
      enqueue.assign({ activeRunId: e.runId, runCount: context.runCount + 1 });
    }),
    noteRunner: assign(({ event }) => {
      assertEvent(event, "runner.ready");
      return { runner: runnerInfo(event) };
    }),
    /** A run started while the runner is up learns it at once. */
    tellReady: enqueueActions(({ context, enqueue }, at: number) => {
      if (context.runner && context.activeRunId) {
        const ready = { type: "runner.ready", at, ...context.runner } satisfies RunnerFact;
        enqueue.sendTo(`run:${context.activeRunId}`, ready);
      }
    }),
    /** Runner facts belong to the active run; with none (between runs) they are the session's alone. */
    forwardToRun: enqueueActions(({ context, event, enqueue }) => {
      if (context.activeRunId) enqueue.sendTo(`run:${context.activeRunId}`, event);
    }),
    toRunner: sendTo("runner", ({ event }) => {
      assertEvent(event, ["runner.run", "runner.interrupt", "runner.terminate", "runner.kill", "runner.tool_result"]);
      return event;
    }),
    shutdownRunner: sendTo("runner", { type: "runner.shutdown" } satisfies RunnerCommand),
    killRunner: sendTo("runner", { type: "runner.kill" } satisfies RunnerCommand),
    /** A run the session cannot take (busy, closing) is refused; the refusal goes up like any outcome. */
    rejectRun: sendParent(({ context, event }, why: "busy" | "closing"): RunFinishedEvent => {
      assertEvent(event, "run.start");
      const message =
        why === "closing"
          ? `Session "${context.name}" is closing; run again once it has stopped.`
          : `Session "${context.name}" is busy with another run; wait for it to finish.`;
      return {
        type: "run.finished",
        outcome: refusal({ ...event, session: context.name }, message, { incarnation: context.incarnation }),
      };
    }),
    requestClose: assign({ closeRequested: true }),
    cancelActiveRun: enqueueActions(({ context, event, enqueue }) => {
      const at = "at" in event && typeof event.at === "number" ? event.at : 0;
      const cancel = { type: "run.cancel", at } satisfies RunCancel;
      if (context.activeRunId) enqueue.sendTo(`run:${context.activeRunId}`, cancel);
    }),
    markEnding: assign((_, end: "lost" | "closed") => ({ ending: end })),
    /** The run's outcome (its output) goes to the supervisor. */
    reportRun: sendParent(({ event }): RunFinishedEvent => {
      assertEvent(event, "xstate.done.actor.*");
      return { type: "run.finished", outcome: event.output };
    }),
    releaseRun: enqueueActions(({ event, enqueue }) => {
      assertEvent(event, "xstate.done.actor.*");
      enqueue.stopChild(event.actorId);
      enqueue.assign({ activeRunId: undefined });
    }),
    passNestedCall: sendParent(({ event }) => {
      assertEvent(event, "run.nested_call");
      return event;
    }),
  },
  guards: {
    hasActiveRun: ({ context }) => context.activeRunId !== undefined,
    processReady: ({ context }) => context.runner !== undefined,
    closeRequested: ({ context }) => context.closeRequested,
    endingIs: ({ context }, end: "lost" | "closed") => context.ending === end,
  },
  delays: {
    killBound: ({ context }) => context.limits.killMs,
  },
}).createMachine({
  id: "session",
  context: ({ input }) => ({ ...input, runCount: 0, closeRequested: false }),
  entry: ["startProcess", { type: "spawnRun", params: ({ context }) => context.firstRun }],
  initial: "starting",
  on: {
    "runner.run": { actions: "toRunner" },
    "runner.interrupt": { actions: "toRunner" },
    "runner.terminate": { actions: "toRunner" },
    "runner.kill": { actions: "toRunner" },
    "runner.tool_result": { actions: "toRunner" },
    "runner.started": { actions: "forwardToRun" },
    "runner.done": { actions: "forwardToRun" },
    "runner.tool_call": { actions: "forwardToRun" },
    "runner.tool_cancel": { actions: "forwardToRun" },
    "run.nested_call": { actions: "passNestedCall" },
    // The process is gone: so is every variable in it.
    "runner.exited": processGone("lost"),
    "runner.failed": processGone("lost"),
    "run.start": { actions: { type: "rejectRun", params: "busy" } },
    "session.close": { actions: ["requestClose", "cancelActiveRun"] },
    "xstate.done.actor.*": [
      { guard: { type: "endingIs", params: "lost" }, target: ".lost", actions: releaseAndReport },
      { guard: { type: "endingIs", params: "closed" }, target: ".closed", actions: releaseAndReport },
      { guard: "closeRequested", target: ".closing", actions: releaseAndReport },
      { guard: "processReady", target: ".idle", actions: releaseAndReport },
      {
        description: "The first run ended before the interpreter was ready: the session still waits for it.",
        actions: releaseAndReport,
      },
    ],
  },
  states: {
    starting: {
      description: "The interpreter is starting; a first run waits for it.",
      on: {
        "runner.ready": [
          { guard: "hasActiveRun", target: "running", actions: ["noteRunner", "forwardToRun"] },
          { target: "idle", actions: "noteRunner" },
        ],
        "session.close": { target: "closing", actions: "cancelActiveRun" },
        // The interpreter never started (missing, bad cwd): nothing was lost.
        "runner.failed": processGone("closed"),
      },
    },
    idle: {
      description: "Alive, no run: SIGINT is ignored in the process, threads may keep running.",
      on: {
        "run.start": {
          target: "running",
          actions: [
            { type: "spawnRun", params: ({ event }) => event },
            { type: "tellReady", params: ({ event }) => event.at },
          ],
        },
        "session.close": "closing",
      },
    },
    running: {
      description:
        "A run is active. How far it is (running, interrupted, grace, killed) is the run's own state; the session " +
        "passes runner facts to it and its commands to the process.",
    },
    closing: {
      description: "Asked to exit; killed if it does not within the bound.",
      entry: "shutdownRunner",
      on: {
        "runner.exited": processGone("closed"),
        "runner.failed": processGone("closed"),
        "xstate.done.actor.*": [
          { guard: { type: "endingIs", params: "closed" }, target: "closed", actions: releaseAndReport },
          { actions: releaseAndReport },
        ],
        "run.start": { actions: { type: "rejectRun", params: "closing" } },
        "session.close": {},
      },
      after: { killBound: { actions: "killRunner" } },
    },
    lost: {
      type: "final",
      description: "The process died or was killed: its state is gone.",
      output: ({ context }) => ({ name: context.name, incarnation: context.incarnation, end: "lost" as const }),
    },
    closed: {
      type: "final",
      description: "The process exited when asked (or never started).",
      output: ({ context }) => ({ name: context.name, incarnation: context.incarnation, end: "closed" as const }),
    },
  },
  output: ({ event }) => event.output as SessionOutput,
});
