// A named persistent runner process (Python, or JavaScript for eval's js cells). Its runs are child actors, one at a
// time; a run's phase (running, interrupted, grace, killed) is the run's own state, which the session does not copy:
// `sessionPhase` reads it from the run. A run sends its commands to the session's runner directly (system id
// `session:<name>/runner`); the runner's facts come to the session, which passes a run's to it.
// Everything a run reports (its outcome, its nested calls' records) goes to the session, which passes it on: to the
// supervisor, or, for a run the host sent straight here (`direct`: the warm path, docs/design.md), the outcome to the
// host as an emitted `run.finished`.
// What the session itself knows is its state: a close asked for during a run is `running.closeRequested`, and a
// process gone while a run was active is `ending.lost` or `ending.closed` until that run has reported.
import { assertEvent, assign, enqueueActions, not, sendParent, sendTo, setup } from "xstate";
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
import { runActorId, sessionActorId, sessionRunnerId } from "./actor-ids.ts";
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
  /** The active run came straight from the host: its outcome is emitted, not sent to the supervisor. */
  direct?: boolean;
  runCount: number;
  runner?: RunnerInfo;
}

export type SessionEvent =
  RunnerFact | RunStartEvent | NestedCallEvent | { type: "session.close"; at: number } | DoneActorEvent<RunOutcome>;

export interface SessionOutput {
  name: string;
  incarnation: number;
  end: "lost" | "closed";
}

/** A session's phase as people name it: its own top-level state (`running` for any of its substates; a session
 * `ending` already has the end it will have, `lost` or `closed`), except that while its run is being stopped the
 * run's step (`interrupted`, `grace`, `killed`) shows through, until the session lets the run go when its process
 * was lost; a session closing (or ending closed) shows that. `run` is the active run's state value, if any. */
export function sessionPhase(session: unknown, run: unknown): string {
  const [top, sub] =
    typeof session === "string" ? [session] : session && typeof session === "object" ? Object.entries(session)[0]! : [];
  const own =
    top === "ending" && typeof sub === "string" ? sub : typeof top === "string" ? top : JSON.stringify(session);
  const step = run && typeof run === "object" ? (run as { stopping?: unknown }).stopping : undefined;
  const shows = top === "running" || top === "starting" || (top === "ending" && sub === "lost");
  return shows && typeof step === "string" ? step : own;
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
    // A run started while the process is up sends its command at once; the first run waits for `runner.ready`.
    ...(context.runner ? { runner: context.runner } : {}),
    // A batch's later cells are named as the runs they stand for would be (cell-6.py, cell-7.py after cell-5.py).
    ...(batchOf(context, e).length
      ? {
          batch: batchOf(context, e).map((code, k) => ({ code, filename: `cell-${context.runCount + 2 + k}.py` })),
          ...(e.cellTimeoutsMs ? { cellTimeoutsMs: e.cellTimeoutsMs } : {}),
        }
      : {}),
  };
}

/** A request's further cells: a Python session's only (the host refuses others). */
const batchOf = (context: SessionContext, e: RunStartEvent): readonly string[] =>
  context.language === "js" ? [] : (e.batch ?? []);

/** The runs a request stands for in the session's count: one, and one per further cell of its batch. */
const runsOf = (context: SessionContext, e: RunStartEvent) => 1 + batchOf(context, e).length;

const releaseAndReport = ["reportRun", "releaseRun"] as const;

/** The process is gone: an active run gets the fact and the session is `ending` until it reported; with no run
 * active the session ends `end` at once. */
const processGone = (end: "lost" | "closed") =>
  [
    { guard: "hasActiveRun", target: `#session.ending.${end}`, actions: "forwardToRun" },
    { target: `#session.${end}` },
  ] as const;

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    input: {} as SessionInput,
    events: {} as SessionEvent,
    output: {} as SessionOutput,
    emitted: {} as RunFinishedEvent,
  },
  actors: {
    runner: placeholder<RunnerCommand, RunnerInput>("session", "runner"),
    run: runMachine,
  },
  actions: {
    startProcess: enqueueActions(({ context, enqueue }) => {
      const input: RunnerInput = {
        mode: "session",
        cwd: context.cwd,
        owner: sessionActorId(context.name),
        ...(context.python ? { python: context.python } : {}),
        ...(context.language ? { language: context.language } : {}),
      };
      enqueue.spawnChild("runner", { id: "runner", systemId: sessionRunnerId(context.name), input });
    }),
    spawnRun: enqueueActions(({ context, enqueue }, e: RunStartEvent | undefined) => {
      if (!e) return;
      const id = runActorId(e.runId);
      enqueue.spawnChild("run", { id, systemId: id, input: runInput(context, e) });
      enqueue.assign({ activeRunId: e.runId, runCount: context.runCount + runsOf(context, e), direct: e.direct });
    }),
    noteRunner: assign(({ event }) => {
      assertEvent(event, "runner.ready");
      return { runner: runnerInfo(event) };
    }),
    /** Runner facts belong to the active run; with none (between runs) they are the session's alone. */
    forwardToRun: enqueueActions(({ context, event, enqueue }) => {
      if (context.activeRunId) enqueue.sendTo(runActorId(context.activeRunId), event);
    }),
    shutdownRunner: sendTo("runner", { type: "runner.shutdown" } satisfies RunnerCommand),
    killRunner: sendTo("runner", { type: "runner.kill" } satisfies RunnerCommand),
    /** A run the session cannot take (busy, closing) is refused; the refusal goes where its outcome would have. */
    rejectRun: enqueueActions(({ context, event, enqueue }, why: "busy" | "closing") => {
      assertEvent(event, "run.start");
      const message =
        why === "closing"
          ? `Session "${context.name}" is closing; run again once it has stopped.`
          : `Session "${context.name}" is busy with another run; wait for it to finish.`;
      const finished: RunFinishedEvent = {
        type: "run.finished",
        outcome: refusal({ ...event, session: context.name }, message, { incarnation: context.incarnation }),
      };
      if (event.direct) enqueue.emit(finished);
      else enqueue.sendParent(finished);
    }),
    cancelActiveRun: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, "session.close");
      const cancel = { type: "run.cancel", at: event.at, close: true } satisfies RunCancel;
      if (context.activeRunId) enqueue.sendTo(runActorId(context.activeRunId), cancel);
    }),
    /** The run's outcome (its output) goes to the supervisor, or to the host for a run that came straight here. */
    reportRun: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, "xstate.done.actor.*");
      const finished: RunFinishedEvent = { type: "run.finished", outcome: event.output };
      if (context.direct) enqueue.emit(finished);
      else enqueue.sendParent(finished);
    }),
    releaseRun: enqueueActions(({ event, enqueue }) => {
      assertEvent(event, "xstate.done.actor.*");
      enqueue.stopChild(event.actorId);
      enqueue.assign({ activeRunId: undefined, direct: undefined });
    }),
    passNestedCall: sendParent(({ event }) => {
      assertEvent(event, "run.nested_call");
      return event;
    }),
  },
  guards: {
    hasActiveRun: ({ context }) => context.activeRunId !== undefined,
  },
  delays: {
    killBound: ({ context }) => context.limits.killMs,
  },
}).createMachine({
  id: "session",
  context: ({ input }) => ({ ...input, runCount: 0 }),
  entry: ["startProcess", { type: "spawnRun", params: ({ context }) => context.firstRun }],
  initial: "starting",
  on: {
    "runner.started": { actions: "forwardToRun" },
    "runner.cell": { actions: "forwardToRun" },
    "runner.done": { actions: "forwardToRun" },
    "runner.tool_call": { actions: "forwardToRun" },
    "runner.tool_cancel": { actions: "forwardToRun" },
    "run.nested_call": { actions: "passNestedCall" },
    "run.start": { actions: { type: "rejectRun", params: "busy" } },
  },
  states: {
    starting: {
      description: "The interpreter is starting; a first run waits for it.",
      on: {
        "run.start": {
          guard: not("hasActiveRun"),
          description: "The first run ended before the interpreter was ready: the next one waits in its place.",
          actions: { type: "spawnRun", params: ({ event }) => event },
        },
        "runner.ready": [
          { guard: "hasActiveRun", target: "running", actions: ["noteRunner", "forwardToRun"] },
          { target: "idle", actions: "noteRunner" },
        ],
        "session.close": { target: "closing", actions: "cancelActiveRun" },
        // The process is gone: so is every variable in it.
        "runner.exited": processGone("lost"),
        // The interpreter never started (missing, bad cwd): nothing was lost.
        "runner.failed": processGone("closed"),
        "xstate.done.actor.*": {
          description: "The first run ended before the interpreter was ready: the session still waits for it.",
          actions: releaseAndReport,
        },
      },
    },
    idle: {
      description: "Alive, no run: SIGINT is ignored in the process, threads may keep running.",
      on: {
        "run.start": {
          target: "running",
          actions: { type: "spawnRun", params: ({ event }) => event },
        },
        "session.close": "closing",
        "runner.exited": "lost",
        "runner.failed": "lost",
      },
    },
    running: {
      description:
        "A run is active. How far it is (running, interrupted, grace, killed) is the run's own state; the session " +
        "passes runner facts to it and its commands to the process.",
      initial: "active",
      states: {
        active: {
          description: "The run goes on; once it reported, the session is idle.",
          on: { "session.close": { target: "closeRequested", actions: "cancelActiveRun" } },
        },
        closeRequested: {
          description: "Asked to close: the run is cancelled, and the session closes once it reported.",
          on: {
            "session.close": { actions: "cancelActiveRun" },
            "xstate.done.actor.*": { target: "#session.closing", actions: releaseAndReport },
          },
        },
      },
      on: {
        "runner.exited": { target: "ending.lost", actions: "forwardToRun" },
        "runner.failed": { target: "ending.lost", actions: "forwardToRun" },
        "xstate.done.actor.*": { target: "idle", actions: releaseAndReport },
      },
    },
    closing: {
      description: "Asked to exit; killed if it does not within the bound.",
      entry: "shutdownRunner",
      on: {
        "runner.exited": processGone("closed"),
        "runner.failed": processGone("closed"),
        "xstate.done.actor.*": {
          description: "A run cancelled by the close reported: the session still waits for its process to exit.",
          actions: releaseAndReport,
        },
        "run.start": { actions: { type: "rejectRun", params: "closing" } },
      },
      after: { killBound: { actions: "killRunner" } },
    },
    ending: {
      description:
        "The process is gone while a run was active: the run has the fact and reports, then the session ends.",
      // Always entered at the end decided (`processGone`); XState requires an initial substate all the same.
      initial: "lost",
      states: {
        lost: {
          description: "It died or was killed: the session is lost once the run reported.",
          on: { "xstate.done.actor.*": { target: "#session.lost", actions: releaseAndReport } },
        },
        closed: {
          description: "It exited when asked, or never started: the session is closed once the run reported.",
          on: { "xstate.done.actor.*": { target: "#session.closed", actions: releaseAndReport } },
        },
      },
      // A later fact of the gone process is not passed on: the run settled on the first (every state of a run that
      // takes process facts ends on either; one draining its calls takes neither).
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
