// One execution of a script: from the prepared request to its outcome, which is the run's output (its parent, the
// supervisor or a session, gets it with the run's done event). A fresh run owns its runner (a new process, its child
// `runner`); a session run sends its commands straight to its session's runner (system id
// `session:<name>/runner`), and the session passes it the runner's facts. Either way the run sees the same runner
// facts and sends the same runner commands, so one machine describes both.
import { assertEvent, assign, enqueueActions, not, setup } from "xstate";
import type { AnyActorRef, EventObject } from "xstate";
import { isActor, sessionRunnerId } from "./actor-ids.ts";
import type { InstallInput, RunnerCommand, RunnerInput, RunOutcome, RunStatus, StopReason } from "./events.ts";
import { toolCallMachine } from "./tool-call.ts";
import * as calls from "./run-calls.ts";
import {
  abandonedCalls,
  cellDeadline,
  concernsRun,
  endOf,
  initialContext,
  installInput,
  mustInstall,
  resumedDeadline,
  runCommand,
  runnerAtStart,
  runnerInfo,
  runnerInput,
  type RunContext,
  type RunEvent,
  type RunInput,
} from "./run-context.ts";
import {
  exitedOutcome,
  failedOutcome,
  finishedOutcome,
  installFailedOutcome,
  installStoppedOutcome,
  stoppedOutcome,
} from "./run-outcome.ts";
import { placeholder } from "./placeholder.ts";

export type { RunContext, RunEvent, RunInput } from "./run-context.ts";

const settled = (outcome: RunOutcome) => ({ outcome });

/** Where a run's commands go: a fresh run's own `runner` child, a session run's session process (no relay through
 * the session: one event, not two). */
function runnerOf(context: RunContext, system: { get: (id: string) => AnyActorRef | undefined }) {
  return context.session ? system.get(sessionRunnerId(context.session.name)) : "runner";
}

/** While user code runs (`running`, and `waiting` for a paused work budget): how it ends, and its nested calls. */
const userCodeRuns = {
  "runner.done": { guard: "isMine", target: "finished", actions: "settleDone" },
  "runner.exited": { target: "finished", actions: { type: "settleEnded", params: "after" } },
  "runner.failed": { target: "finished", actions: { type: "settleEnded", params: "after" } },
  "run.cancel": { target: "stopping", actions: [{ type: "stopFor", params: "cancelled" }, "noteClose"] },
  "runner.tool_call": { guard: "isMine", actions: "startCall" },
} as const;

export const runMachine = setup({
  types: {
    context: {} as RunContext,
    input: {} as RunInput,
    events: {} as RunEvent,
    output: {} as RunOutcome,
  },
  actors: {
    runner: placeholder<RunnerCommand, RunnerInput>("run", "runner"),
    install: placeholder<EventObject, InstallInput>("run", "install"),
    toolCall: toolCallMachine,
  },
  actions: {
    /** A fresh run's process starts now unless it installs dependencies first (it then runs the environment's
     * interpreter); a session run's runner is its session's, there already. */
    spawnRunnerAtStart: enqueueActions(({ context, enqueue }) => {
      if (runnerAtStart(context)) enqueue.spawnChild("runner", { id: "runner", input: runnerInput(context) });
    }),
    spawnRunnerAfterInstall: enqueueActions(({ context, enqueue }) => {
      if (!context.session) enqueue.spawnChild("runner", { id: "runner", input: runnerInput(context) });
    }),
    sendRun: enqueueActions(({ context, enqueue, system }) => {
      const to = runnerOf(context, system);
      if (to) enqueue.sendTo(to, runCommand(context));
    }),
    /** After installation a session's process may already be up: the run goes out at once. */
    sendRunIfReady: enqueueActions(({ context, enqueue, system }) => {
      const to = runnerOf(context, system);
      if (to && context.runnerReady) enqueue.sendTo(to, runCommand(context));
    }),
    /** A KeyboardInterrupt for this run; the second, when the grace period starts, only where the limits ask for it
     * (pi-python's escalation, for code that swallowed the first). */
    sendInterrupt: enqueueActions(({ context, enqueue, system }, which: "first" | "second") => {
      const to = runnerOf(context, system);
      const interrupt = { type: "runner.interrupt", runId: context.runId } satisfies RunnerCommand;
      if (to && (which === "first" || context.limits.secondInterrupt)) enqueue.sendTo(to, interrupt);
    }),
    /** The process group is stopped: SIGTERM, then SIGKILL once the kill bound has passed. */
    signal: enqueueActions(({ context, enqueue, system }, type: "runner.terminate" | "runner.kill") => {
      const to = runnerOf(context, system);
      if (to) enqueue.sendTo(to, { type } satisfies RunnerCommand);
    }),
    noteReady: assign(({ event }) => {
      assertEvent(event, "runner.ready");
      return { runnerReady: true, now: event.at, runner: runnerInfo(event) };
    }),
    noteInstalled: assign(({ event }) => {
      assertEvent(event, "install.done");
      const { type: _t, at, ...summary } = event;
      return { install: summary, now: at };
    }),
    noteTime: assign(({ event }) => {
      assertEvent(event, "runner.started");
      return { now: event.at };
    }),
    /** A batch's further cell started with its own timeout: the deadline starts again from it (a paused work
     * budget counts its pause from the cell's start). */
    startCellBudget: assign(({ context, event }) => {
      assertEvent(event, "runner.cell");
      return {
        deadlineAt: cellDeadline(context, event.cell, event.at)!,
        now: event.at,
        ...(context.pausedAt !== undefined ? { pausedAt: event.at } : {}),
      };
    }),
    markKilled: assign({ killed: true }),
    stopFor: assign((_, reason: StopReason) => ({ stopReason: reason })),
    /** A cancel from the run's session closing: no-kill limits stop holding, the run escalates to the kill. */
    noteClose: assign(({ event }) => {
      assertEvent(event, "run.cancel");
      return event.close ? { closing: true as const } : {};
    }),
    settleDone: assign(({ context, event }) => {
      assertEvent(event, "runner.done");
      return settled(finishedOutcome(context, event));
    }),
    settleStopped: assign(({ context, event }) => {
      assertEvent(event, "runner.done");
      return settled(stoppedOutcome(context, event));
    }),
    /** The runner's process exited or broke, before user code started or after (for a session, after means its
     * state is gone with it). */
    settleEnded: assign(({ context, event }, started: "before" | "after") => {
      assertEvent(event, ["runner.exited", "runner.failed"]);
      const after = started === "after";
      return settled(
        event.type === "runner.exited" ? exitedOutcome(context, event, after) : failedOutcome(context, event, after),
      );
    }),
    /** Installation failed: the code never ran. */
    settleInstallFailed: assign(({ context, event }) => {
      assertEvent(event, "install.failed");
      return settled(installFailedOutcome(context, event));
    }),
    /** The deadline or a cancellation during installation: the installer is stopped with the state (a session's
     * process never ran anything of this run, so it keeps its state). */
    settleInstallStopped: assign(({ context, event }, reason: StopReason) =>
      settled(installStoppedOutcome(context, reason, "at" in event ? event.at : 0)),
    ),
    /** A nested tool call while user code runs: its actor is spawned, or it is refused at once. */
    startCall: enqueueActions(({ context, event, enqueue, system }) => {
      assertEvent(event, "runner.tool_call");
      const step = calls.startCall(context, event);
      // A work budget needs the call's time to pause from; a wall-clock run's context stays as it was.
      enqueue.assign({ callCount: step.callCount, ...(context.budget === "work" ? { now: event.at } : {}) });
      if (step.kind === "refuse") {
        const to = runnerOf(context, system);
        if (to) enqueue.sendTo(to, step.reply);
        enqueue.sendParent(calls.recorded(context, step.record));
        return;
      }
      enqueue.spawnChild("toolCall", { id: step.id, systemId: step.id, input: step.input });
      enqueue.assign({ open: step.open });
    }),
    /** A call while the run is being stopped or has ended: answered as cancelled and recorded, never started. */
    refuseCall: enqueueActions(({ context, event, enqueue, system }, why: calls.RefusalReason) => {
      assertEvent(event, "runner.tool_call");
      const step = calls.refuseCall(context, event, why);
      enqueue.assign({ callCount: step.callCount });
      if (step.kind !== "refuse") return;
      const to = runnerOf(context, system);
      if (to) enqueue.sendTo(to, step.reply);
      enqueue.sendParent(calls.recorded(context, step.record));
    }),
    /** Python stopped waiting for a call (its task was cancelled): the dispatch is aborted. */
    cancelCall: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, "runner.tool_cancel");
      const child = calls.openChild(context, event.callId);
      if (child) enqueue.sendTo(child, { type: "tool.cancel", at: event.at });
    }),
    cancelCalls: enqueueActions(({ context, event, enqueue }) => {
      const at = "at" in event && typeof event.at === "number" ? event.at : context.now;
      for (const child of calls.openChildren(context)) enqueue.sendTo(child, { type: "tool.cancel", at });
    }),
    /** A call's actor ended: the runner gets the answer, the record goes to the parent. */
    finishCall: enqueueActions(({ context, event, enqueue, system }) => {
      assertEvent(event, "xstate.done.actor.*");
      const output = event.output;
      enqueue.stopChild(event.actorId);
      const { reply, ...rest } = calls.finishCall(context, output);
      enqueue.assign({ ...rest, ...(context.budget === "work" ? { now: Math.max(context.now, endOf(output)) } : {}) });
      const to = runnerOf(context, system);
      if (to) enqueue.sendTo(to, reply);
      enqueue.sendParent(calls.recorded(context, output.record));
    }),
    /** Open calls are recorded as cancelled: after the grace bound, or at once (see `sessionEndsNow`). */
    abandonCalls: enqueueActions(({ context, enqueue }, when: "grace" | "now") => {
      for (const record of abandonedCalls(context, when)) enqueue.sendParent(calls.recorded(context, record));
      enqueue.assign({ open: {} });
    }),
    /** The work budget stops while user code awaits a nested call... */
    pauseBudget: assign(({ context }) => ({ pausedAt: context.now })),
    /** ...and resumes when the last open call ended: the deadline moves by the time spent waiting. */
    resumeBudget: assign(({ context }) => ({ deadlineAt: resumedDeadline(context), pausedAt: undefined })),
    markPolicy: assign(({ context }) => ({ outcome: { ...context.outcome!, status: "policy_error" as const } })),
  },
  guards: {
    isMine: ({ context, event }) => concernsRun(context, event),
    /** This run's further cell started, and it has a timeout of its own. */
    cellHasOwnTimeout: ({ context, event }) => {
      assertEvent(event, "runner.cell");
      return concernsRun(context, event) && cellDeadline(context, event.cell, event.at) !== undefined;
    },
    isToolCall: ({ event }) => {
      assertEvent(event, "xstate.done.actor.*");
      return isActor(event.actorId, "tool");
    },
    runnerReady: ({ context }) => context.runnerReady,
    mustInstall: ({ context }) => mustInstall(context),
    statusIs: ({ context }, status: RunStatus) => context.outcome?.status === status,
    hasOpenCalls: ({ context }) => calls.hasOpenCalls(context),
    /** A work budget with a nested call open: the deadline does not run. */
    budgetPaused: ({ context }) => context.budget === "work" && calls.hasOpenCalls(context),
    /** A session run settled by its process exiting or failing: the session is lost with the process, so open calls
     * cannot drain; they are recorded as cancelled at once and the run reports without waiting. */
    sessionEndsNow: ({ context, event }) =>
      Boolean(context.session) &&
      calls.hasOpenCalls(context) &&
      (event.type === "runner.exited" || event.type === "runner.failed"),
    policyViolated: ({ context }) => calls.policyViolated(context),
    /** The limits ask for no automatic kill (pi-python's `interruptGraceMs: 0`), and the run's session is not
     * closing (a close that only interrupted would wait for ever on code that ignores the interrupt). */
    noKill: ({ context }) => context.limits.noKill === true && context.closing !== true,
    /** The session closes while its run waits without a kill: nothing else would ever end it. */
    closingUnbounded: ({ context, event }) =>
      context.limits.noKill === true && event.type === "run.cancel" && event.close === true,
  },
  delays: {
    deadline: ({ context }) => Math.max(0, context.deadlineAt - context.now),
    interruptWindow: ({ context }) => context.limits.interruptWindowMs,
    grace: ({ context }) => context.limits.graceMs,
    killBound: ({ context }) => context.limits.killMs,
  },
}).createMachine({
  id: "run",
  context: ({ input }) => initialContext(input),
  entry: "spawnRunnerAtStart",
  on: {
    "runner.tool_call": { guard: "isMine", actions: { type: "refuseCall", params: "stopping" } },
    "runner.tool_cancel": { guard: "isMine", actions: "cancelCall" },
    "xstate.done.actor.*": { guard: "isToolCall", actions: "finishCall" },
  },
  initial: "preparing",
  states: {
    preparing: {
      description: "Transient: a script with PEP 723 dependencies installs them first.",
      always: [{ guard: "mustInstall", target: "installing" }, { target: "starting" }],
    },
    installing: {
      description:
        "The dependencies are being installed (uv or pip); the deadline covers this. A session run's runner may " +
        "report ready meanwhile; the run is sent once installation is done.",
      invoke: { id: "install", src: "install", input: ({ context }) => installInput(context) },
      on: {
        "install.done": { target: "starting", actions: ["noteInstalled", "spawnRunnerAfterInstall"] },
        "install.failed": { target: "finished", actions: "settleInstallFailed" },
        "runner.ready": { actions: "noteReady" },
        "runner.failed": { target: "finished", actions: { type: "settleEnded", params: "before" } },
        "runner.exited": { target: "finished", actions: { type: "settleEnded", params: "before" } },
        "run.cancel": { target: "finished", actions: { type: "settleInstallStopped", params: "cancelled" } },
      },
      after: { deadline: { target: "finished", actions: { type: "settleInstallStopped", params: "timeout" } } },
    },
    starting: {
      description: "Waiting for the interpreter to be ready and to confirm that the script is about to run.",
      entry: "sendRunIfReady",
      on: {
        "runner.ready": { actions: ["noteReady", "sendRun"] },
        "runner.started": { guard: "isMine", target: "running", actions: "noteTime" },
        "runner.done": { guard: "isMine", target: "finished", actions: "settleDone" },
        "runner.failed": { target: "finished", actions: { type: "settleEnded", params: "before" } },
        "runner.exited": { target: "finished", actions: { type: "settleEnded", params: "before" } },
        "run.cancel": [
          {
            guard: "runnerReady",
            target: "stopping",
            actions: [{ type: "stopFor", params: "cancelled" }, "noteClose"],
          },
          {
            description: "Nothing was sent to the interpreter yet: its process is stopped, the script never runs.",
            target: "stopping.killed",
            actions: { type: "stopFor", params: "cancelled" },
          },
        ],
      },
      after: {
        deadline: [
          { guard: "runnerReady", target: "stopping", actions: { type: "stopFor", params: "timeout" } },
          { target: "stopping.killed", actions: { type: "stopFor", params: "timeout" } },
        ],
      },
    },
    running: {
      description:
        "User code is executing; its nested tool calls start here. A batch's further cell with its own timeout " +
        "starts the deadline again (the state is re-entered, so its timer restarts).",
      on: {
        ...userCodeRuns,
        "runner.cell": { guard: "cellHasOwnTimeout", target: "running", reenter: true, actions: "startCellBudget" },
      },
      always: { guard: "budgetPaused", target: "waiting", actions: "pauseBudget" },
      after: { deadline: { target: "stopping", actions: { type: "stopFor", params: "timeout" } } },
    },
    waiting: {
      description:
        "A work budget (eval cells): user code awaits a nested tool call or completion(), so the deadline is paused " +
        "until the last open call ends; then it moves by the time spent here.",
      on: { ...userCodeRuns, "runner.cell": { guard: "cellHasOwnTimeout", actions: "startCellBudget" } },
      always: { guard: not("budgetPaused"), target: "running", actions: "resumeBudget" },
    },
    stopping: {
      description:
        "The deadline passed or the run was cancelled: one interrupt, a grace period, then the process tree is " +
        "stopped. Whichever step it is in, the process exiting or failing ends the run.",
      on: {
        "runner.exited": { target: "finished", actions: { type: "settleEnded", params: "after" } },
        "runner.failed": { target: "finished", actions: { type: "settleEnded", params: "after" } },
        "run.cancel": { guard: "closingUnbounded", target: ".killed" },
      },
      initial: "interrupted",
      states: {
        interrupted: {
          description:
            "One KeyboardInterrupt was sent to the main thread; an interruptible script ends now and keeps its state. " +
            "With no kill (pi-python's interruptGraceMs 0) the run waits here until the code ends or its session closes.",
          entry: [{ type: "sendInterrupt", params: "first" }, "cancelCalls"],
          on: { "runner.done": { guard: "isMine", target: "#run.finished", actions: "settleStopped" } },
          after: { interruptWindow: { guard: not("noKill"), target: "grace" } },
        },
        grace: {
          description:
            "Still running (cleanup, or the interrupt was caught). A grace period (with a second interrupt at its " +
            "start when the limits ask for one), then the process tree is stopped.",
          entry: { type: "sendInterrupt", params: "second" },
          on: { "runner.done": { guard: "isMine", target: "#run.finished", actions: "settleStopped" } },
          after: { grace: "killed" },
        },
        killed: {
          description:
            "SIGTERM to the process group, SIGKILL after a short bound; the run ends when the process is gone.",
          entry: ["markKilled", { type: "signal", params: "runner.terminate" }],
          after: { killBound: { actions: { type: "signal", params: "runner.kill" } } },
        },
      },
    },
    finished: {
      description:
        "Routes to the final state named by the outcome's status, once no nested call is open; a blocked call " +
        "makes it `policy_error`.",
      always: [
        { guard: "sessionEndsNow", actions: { type: "abandonCalls", params: "now" } },
        { guard: "hasOpenCalls", target: "draining" },
        { guard: "policyViolated", target: "policy_error", actions: "markPolicy" },
        { guard: { type: "statusIs", params: "success" }, target: "success" },
        { guard: { type: "statusIs", params: "runtime_error" }, target: "runtime_error" },
        { guard: { type: "statusIs", params: "timeout" }, target: "timeout" },
        { guard: { type: "statusIs", params: "cancelled" }, target: "cancelled" },
        { target: "setup_error" },
      ],
    },
    draining: {
      description:
        "The outcome is known but nested calls are open: they are cancelled, and their `after` handlers and finish " +
        "observations get up to the grace period to complete before the run reports.",
      entry: "cancelCalls",
      always: { guard: not("hasOpenCalls"), target: "finished" },
      on: { "runner.tool_call": { guard: "isMine", actions: { type: "refuseCall", params: "ended" } } },
      after: { grace: { target: "finished", actions: { type: "abandonCalls", params: "grace" } } },
    },
    success: { type: "final", description: "The code ran to its end (exit code 0)." },
    runtime_error: { type: "final", description: "The code raised, exited non-zero, or its process died." },
    setup_error: { type: "final", description: "The code never ran: the interpreter, installation or start failed." },
    timeout: { type: "final", description: "The deadline stopped the run." },
    cancelled: { type: "final", description: "The caller cancelled the run (Pi's abort, a session closing)." },
    policy_error: { type: "final", description: "A nested tool call was blocked by a policy." },
  },
  output: ({ context }) => context.outcome!,
});
