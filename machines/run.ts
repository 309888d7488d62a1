// One execution of a script: from the request to its outcome. A fresh run owns its kernel (a new process); a
// session run talks to its session's kernel through `kernel` provided as the session link. Either way the run
// sees the same kernel facts and sends the same kernel commands, so one machine describes both.
import { assign, enqueueActions, fromCallback, not, sendParent, sendTo, setup } from "xstate";
import type { AnyActorRef, DoneActorEvent, EventObject } from "xstate";
import type {
  CellRef,
  InstallFact,
  InstallInput,
  InstallSummary,
  KernelCommand,
  KernelFact,
  KernelInfo,
  KernelInput,
  Language,
  Limits,
  RunFinishedEvent,
  RunOutcome,
  RunPhase,
  RunStatus,
  SessionReplacement,
  StopReason,
  Surface,
} from "./events.ts";
import type { BridgeRequest, NestedCallRecord, ToolCallFact, ToolCallOutput } from "./tool-events.ts";
import { toolCallMachine } from "./tool-call.ts";
import * as calls from "./run-calls.ts";
import { exitedOutcome, finishedOutcome, outcomeOf, stoppedOutcome, type Done, type Exited } from "./run-outcome.ts";

export interface RunInput {
  runId: string;
  code: string;
  filename: string;
  cwd: string;
  timeoutMs: number;
  requestedAt: number;
  limits: Limits;
  session?: {
    name: string;
    ordinal: number;
    incarnation: number;
    started: boolean;
    replacedLost?: boolean;
    replaced?: SessionReplacement;
  };
  /** The interpreter (else the host's default). */
  python?: string;
  /** Absent: Python (a JavaScript run is always a session's). */
  language?: Language;
  /** PEP 723 dependencies, installed before the code runs. */
  dependencies?: string[];
  /** Pi tools the code may call; each call is a `tool:<runId>:<seq>` child (machines/run-calls.ts). */
  bridge?: BridgeRequest;
  /** A claimed spare runner (`spare:<n>`) whose process this fresh run takes over. */
  spare?: string;
  /** Who asked, and for notebook cells which cell (machines/events.ts). */
  surface?: Surface;
  cell?: CellRef;
  chdir?: string;
  result?: "print" | "value";
  budget?: "wall" | "work";
  /** Where the run executes (the backend's label; shown by the inspector, never acted on). */
  backend?: string;
}

export interface RunContext extends RunInput {
  deadlineAt: number;
  /** Time of the latest fact, used to compute what is left of the deadline. */
  now: number;
  kernelReady: boolean;
  stopReason?: StopReason;
  killed: boolean;
  kernel?: KernelInfo;
  message?: string;
  outcome?: RunOutcome;
  /** Set once the dependencies are installed. */
  install?: InstallSummary;
  /** The run ended during dependency installation. */
  stage?: "install";
  /** Nested tool calls (machines/run-calls.ts); absent until the first one. */
  callCount?: number;
  open?: calls.CallsContext["open"];
  blocked?: number;
  /** A work budget (`budget: "work"`) is paused since this time: user code awaits a nested call. */
  pausedAt?: number;
}

export type RunEvent =
  KernelFact | InstallFact | { type: "run.cancel"; at: number; runId?: string } | DoneActorEvent<ToolCallOutput>;

type CallFact = Extract<ToolCallFact, { type: "kernel.tool_call" }>;

/** Placeholder: the real kernel is provided from actors/ (a process) or by the session (a link). */
const kernelPlaceholder = fromCallback<KernelCommand, KernelInput>(() => {
  throw new Error("run: the `kernel` actor must be provided");
});

/** Placeholder: the dependency installer is provided from actors/ (uv or pip). */
const installPlaceholder = fromCallback<{ type: string }, InstallInput>(() => {
  throw new Error("run: the `install` actor must be provided");
});

/** A fresh run with dependencies starts its process only once they are installed (it runs the environment's
 * interpreter); a session run's kernel is its session's link, there from the start. */
const mustInstall = (c: RunContext) => (c.dependencies?.length ?? 0) > 0 && c.install === undefined;

function kernelInput(c: RunContext): KernelInput {
  const python = c.install?.python ?? c.python;
  return {
    mode: c.session ? "session" : "fresh",
    cwd: c.cwd,
    owner: c.session ? `session:${c.session.name}` : `run:${c.runId}`,
    ...(python ? { python } : {}),
    // A spare was started for the run's own interpreter, not for an installed environment's.
    ...(c.spare && !c.install ? { adopt: c.spare } : {}),
  };
}

type Settle = { type: "settle"; params: (args: { context: RunContext; event: any }) => RunOutcome };
const settleWith = (compute: (context: RunContext, event: any) => RunOutcome) => ({
  target: "finished" as const,
  actions: {
    type: "settle",
    params: ({ context, event }: { context: RunContext; event: any }) => compute(context, event),
  } as Settle,
});

const onDone = settleWith((c, e: Done) => finishedOutcome(c, e));
const onStoppedDone = settleWith((c, e: Done) => stoppedOutcome(c, e));
const onExited = settleWith((c, e: Exited) => exitedOutcome(c, e));
const onExitedBeforeStart = settleWith((c, e: Exited) => exitedOutcome(c, e, false));
const onFailed = settleWith((c, e: Extract<KernelFact, { type: "kernel.failed" }>) =>
  outcomeOf(c, c.stopReason ?? "setup_error", e.at, { message: e.message, ...(e.hint ? { hints: [e.hint] } : {}) }),
);
/** The kernel broke after user code started: for a session its state is gone with it. */
const onFailedAfterStart = settleWith((c, e: Extract<KernelFact, { type: "kernel.failed" }>) =>
  outcomeOf(c, c.stopReason ?? "runtime_error", e.at, {
    message: e.message,
    lost: Boolean(c.session),
    ...(e.hint ? { hints: [e.hint] } : {}),
  }),
);
/** While user code runs (`running`, and `waiting` for a paused work budget): how it ends, and its nested calls. */
const userCodeRuns = {
  "kernel.done": { guard: "isMine", ...onDone },
  "kernel.exited": onExited,
  "kernel.failed": onFailedAfterStart,
  "run.cancel": { target: "interrupted", actions: { type: "stopFor", params: "cancelled" } },
  "kernel.tool_call": { guard: "isMine", actions: "startCall" },
} as const;
const report = { type: "report", params: ({ context }: { context: RunContext }) => context.outcome! } as const;
/** Installation failed: the code never ran. */
const onInstallFailed = settleWith((c, e: Extract<InstallFact, { type: "install.failed" }>) =>
  outcomeOf(c, "setup_error", e.at, {
    message: e.message,
    stage: "install",
    ...(e.hint ? { hints: [e.hint] } : {}),
  }),
);
/** The deadline or a cancellation during installation: the installer is stopped with the state (a session's
 * process never ran anything of this run, so it keeps its state). */
const stopInstall = (reason: StopReason) =>
  settleWith((c, e: { at?: number }) =>
    outcomeOf(
      { ...c, stopReason: reason, stage: "install" },
      reason,
      reason === "timeout" ? c.deadlineAt : Math.max(e.at ?? 0, c.now),
      {
        message:
          reason === "timeout"
            ? `dependency installation did not finish within the ${c.timeoutMs / 1000} s timeout; the code did not run`
            : "cancelled during dependency installation; the code did not run",
      },
    ),
  );

export const runMachine = setup({
  types: {
    context: {} as RunContext,
    input: {} as RunInput,
    events: {} as RunEvent,
    output: {} as RunOutcome,
  },
  actors: { kernel: kernelPlaceholder, install: installPlaceholder, toolCall: toolCallMachine },
  actions: {
    sendRun: sendTo("kernel", ({ context }): KernelCommand => ({
      type: "kernel.run",
      runId: context.runId,
      code: context.code,
      filename: context.filename,
      ...(context.install?.sysPath
        ? { sysPath: [context.install.sysPath], checkLoaded: context.install.modules }
        : {}),
      ...(context.bridge ? { tools: context.bridge.tools } : {}),
      ...(context.chdir ? { chdir: context.chdir } : {}),
      ...(context.result === "value" ? { result: "value" as const } : {}),
    })),
    spawnKernel: enqueueActions(({ context, enqueue }) => {
      enqueue.spawnChild("kernel", { id: "kernel", input: kernelInput(context) });
    }),
    sendInterrupt: sendTo("kernel", ({ context }): KernelCommand => ({
      type: "kernel.interrupt",
      runId: context.runId,
    })),
    /** pi-python's escalation: a second SIGINT when the grace period starts (for code that swallowed the first). */
    secondInterrupt: enqueueActions(({ context, enqueue }) => {
      if (context.limits.secondInterrupt) enqueue.sendTo("kernel", { type: "kernel.interrupt", runId: context.runId });
    }),
    terminate: sendTo("kernel", { type: "kernel.terminate" } satisfies KernelCommand),
    kill: sendTo("kernel", { type: "kernel.kill" } satisfies KernelCommand),
    notifyPhase: sendParent(({ context }, phase: RunPhase) => ({
      type: "run.phase",
      runId: context.runId,
      phase,
    })),
    markKilled: assign({ killed: true }),
    settle: assign((_, outcome: RunOutcome) => ({ outcome })),
    stopFor: assign((_, reason: StopReason) => ({ stopReason: reason })),
    noteTime: assign({ now: ({ event }) => ("at" in event ? event.at : 0) }),
    /** A nested tool call while user code runs: its actor is spawned, or it is refused at once. */
    startCall: enqueueActions(({ context, event, enqueue, system }) => {
      const step = calls.startCall(context, event as CallFact);
      // A work budget needs the call's time to pause from; a wall-clock run's context stays as it was.
      enqueue.assign({
        callCount: step.callCount,
        ...(context.budget === "work" ? { now: (event as CallFact).at } : {}),
      });
      if (step.kind === "refuse") {
        enqueue.sendTo("kernel", step.reply);
        return recordCall(enqueue, system, context.runId, step.record);
      }
      enqueue.spawnChild("toolCall", { id: step.id, systemId: step.id, input: step.input });
      enqueue.assign({ open: step.open });
    }),
    refuseCall: enqueueActions(({ context, event, enqueue, system }, why: calls.RefusalReason) => {
      const step = calls.refuseCall(context, event as CallFact, why);
      enqueue.assign({ callCount: step.callCount });
      if (step.kind !== "refuse") return;
      enqueue.sendTo("kernel", step.reply);
      recordCall(enqueue, system, context.runId, step.record);
    }),
    /** Python stopped waiting for a call (its task was cancelled): the dispatch is aborted. */
    cancelCall: enqueueActions(({ context, event, enqueue }) => {
      const e = event as Extract<ToolCallFact, { type: "kernel.tool_cancel" }>;
      const child = calls.openChild(context, e.callId);
      if (child) enqueue.sendTo(child, { type: "tool.cancel", at: e.at });
    }),
    cancelCalls: enqueueActions(({ context, event, enqueue }) => {
      const at = "at" in event && typeof event.at === "number" ? event.at : context.now;
      for (const child of calls.openChildren(context)) enqueue.sendTo(child, { type: "tool.cancel", at });
    }),
    finishCall: enqueueActions(({ context, event, enqueue, system }) => {
      const done = event as DoneActorEvent<ToolCallOutput>;
      if (!done.actorId.startsWith("tool:")) return;
      enqueue.stopChild(done.actorId);
      const { reply, ...rest } = calls.finishCall(context, done.output);
      enqueue.assign({
        ...rest,
        ...(context.budget === "work" ? { now: Math.max(context.now, endOf(done.output)) } : {}),
      });
      enqueue.sendTo("kernel", reply);
      recordCall(enqueue, system, context.runId, done.output.record);
    }),
    /** Open calls that did not report within the bound are recorded as cancelled (they die with the run). */
    abandonCalls: enqueueActions(({ context, enqueue, system }) => {
      const at = (context.outcome?.finishedAt ?? context.now) + context.limits.graceMs;
      for (const record of calls.abandonCalls(context, at, context.limits.graceMs))
        recordCall(enqueue, system, context.runId, record);
      enqueue.assign({ open: {} });
    }),
    /** The session's process is gone with calls open: recorded as cancelled now (see `sessionEndsNow`). */
    abandonCallsNow: enqueueActions(({ context, enqueue, system }) => {
      const at = context.outcome?.finishedAt ?? context.now;
      const text = "The run's process ended while this call was open; the call was cancelled with it.";
      for (const record of calls.abandonCalls(context, at, 0, text)) recordCall(enqueue, system, context.runId, record);
      enqueue.assign({ open: {} });
    }),
    /** The work budget stops while user code awaits a nested call... */
    pauseBudget: assign(({ context }) => ({ pausedAt: context.now })),
    /** ...and resumes when the last open call ended: the deadline moves by the time spent waiting. */
    resumeBudget: assign(({ context }) => ({
      deadlineAt: context.deadlineAt + Math.max(0, context.now - (context.pausedAt ?? context.now)),
      pausedAt: undefined,
    })),
    markPolicy: assign(({ context }) => ({ outcome: { ...context.outcome!, status: "policy_error" as const } })),
    /** The outcome goes to the supervisor directly: the owner (a session) may end in the same step. */
    report: enqueueActions(({ system, enqueue }, outcome: RunOutcome) => {
      const supervisor = system.get("supervisor");
      const finished: RunFinishedEvent = { type: "run.finished", outcome };
      if (supervisor) enqueue.sendTo(supervisor, finished);
    }),
  },
  guards: {
    isMine: ({ context, event }) => !("runId" in event) || event.runId === undefined || event.runId === context.runId,
    kernelReady: ({ context }) => context.kernelReady,
    mustInstall: ({ context }) => mustInstall(context),
    is: ({ context }, status: RunStatus) => context.outcome?.status === status,
    hasOpenCalls: ({ context }) => calls.hasOpenCalls(context),
    /** A work budget with a nested call open: the deadline does not run. */
    budgetPaused: ({ context }) => context.budget === "work" && calls.hasOpenCalls(context),
    /** A session run settled by its process exiting or failing: the session ends in this same step and stops this
     * run with it, so open calls cannot drain (the run would never report). */
    sessionEndsNow: ({ context, event }) =>
      Boolean(context.session) &&
      calls.hasOpenCalls(context) &&
      (event.type === "kernel.exited" || event.type === "kernel.failed"),
    policyViolated: ({ context }) => calls.policyViolated(context),
  },
  delays: {
    deadline: ({ context }) => Math.max(0, context.deadlineAt - context.now),
    interruptWindow: ({ context }) => context.limits.interruptWindowMs,
    grace: ({ context }) => context.limits.graceMs,
    killBound: ({ context }) => context.limits.killMs,
  },
}).createMachine({
  id: "run",
  context: ({ input }) => ({
    ...input,
    deadlineAt: input.requestedAt + input.timeoutMs,
    now: input.requestedAt,
    kernelReady: false,
    killed: false,
  }),
  entry: enqueueActions(({ enqueue, context }) => {
    if (context.session || !mustInstall(context)) enqueue({ type: "spawnKernel" });
  }),
  // Nested tool calls: refused unless user code is running (`running` starts them); ended calls answer the runner.
  on: {
    "kernel.tool_call": { guard: "isMine", actions: { type: "refuseCall", params: "stopping" } },
    "kernel.tool_cancel": { guard: "isMine", actions: "cancelCall" },
    "xstate.done.actor.*": { actions: "finishCall" },
  },
  initial: "preparing",
  states: {
    /** Transient: a script with PEP 723 dependencies installs them first. */
    preparing: { always: [{ guard: "mustInstall", target: "installing" }, { target: "starting" }] },
    /** The dependencies are being installed (uv or pip); the deadline covers this. A session run's kernel may
     * report ready meanwhile; the run is sent once installation is done. */
    installing: {
      invoke: {
        id: "install",
        src: "install",
        input: ({ context }): InstallInput => ({
          runId: context.runId,
          owner: `install:${context.runId}`,
          mode: context.session ? "session" : "fresh",
          dependencies: context.dependencies ?? [],
          cwd: context.cwd,
          ...(context.python ? { python: context.python } : {}),
          ...(context.session
            ? { session: { name: context.session.name, incarnation: context.session.incarnation } }
            : {}),
        }),
      },
      on: {
        "install.done": {
          target: "starting",
          actions: [
            assign(({ event }) => {
              const { type: _t, at, ...summary } = event;
              return { install: summary, now: at };
            }),
            enqueueActions(({ context, enqueue }) => {
              if (!context.session) enqueue({ type: "spawnKernel" });
            }),
          ],
        },
        "install.failed": onInstallFailed,
        "kernel.ready": {
          actions: assign(({ event }) => ({ kernelReady: true, now: event.at, kernel: pick(event) })),
        },
        "kernel.failed": onFailed,
        "kernel.exited": onExitedBeforeStart,
        "run.cancel": stopInstall("cancelled"),
      },
      after: { deadline: stopInstall("timeout") },
    },
    /** Waiting for the interpreter to be ready and to confirm that the script is about to run. */
    starting: {
      // After installation, a session's process may already be up: the run goes out at once.
      entry: enqueueActions(({ context, enqueue }) => {
        if (context.kernelReady) enqueue("sendRun");
      }),
      on: {
        "kernel.ready": {
          actions: [assign(({ event }) => ({ kernelReady: true, now: event.at, kernel: pick(event) })), "sendRun"],
        },
        "kernel.started": { guard: "isMine", target: "running", actions: "noteTime" },
        "kernel.done": { guard: "isMine", ...onDone },
        "kernel.failed": onFailed,
        "kernel.exited": onExitedBeforeStart,
        "run.cancel": [
          // Nothing was sent to the interpreter yet: stop its process, the script never runs.
          {
            guard: ({ context }) => !context.kernelReady,
            target: "killed",
            actions: { type: "stopFor", params: "cancelled" },
          },
          { target: "interrupted", actions: { type: "stopFor", params: "cancelled" } },
        ],
      },
      after: {
        deadline: [
          { guard: "kernelReady", target: "interrupted", actions: { type: "stopFor", params: "timeout" } },
          { target: "killed", actions: { type: "stopFor", params: "timeout" } },
        ],
      },
    },
    /** User code is executing. */
    running: {
      entry: { type: "notifyPhase", params: "running" },
      on: userCodeRuns,
      always: { guard: "budgetPaused", target: "waiting", actions: "pauseBudget" },
      after: { deadline: { target: "interrupted", actions: { type: "stopFor", params: "timeout" } } },
    },
    /** A work budget (eval cells): user code awaits a nested tool call or completion(), so the deadline is paused
     * until the last open call ends; then it moves by the time spent here. */
    waiting: {
      on: userCodeRuns,
      always: { guard: not("budgetPaused"), target: "running", actions: "resumeBudget" },
    },
    /** One KeyboardInterrupt was sent to the main thread; an interruptible script ends now and keeps its state. */
    interrupted: {
      entry: [{ type: "notifyPhase", params: "interrupted" }, "sendInterrupt", "cancelCalls"],
      on: {
        "kernel.done": { guard: "isMine", ...onStoppedDone },
        "kernel.exited": onExited,
        "kernel.failed": onFailedAfterStart,
      },
      after: { interruptWindow: "grace" },
    },
    /** Still running (cleanup, or the interrupt was caught). A grace period (with a second interrupt at its start
     * when the limits ask for one), then the process tree is stopped. */
    grace: {
      entry: [{ type: "notifyPhase", params: "grace" }, "secondInterrupt"],
      on: {
        "kernel.done": { guard: "isMine", ...onStoppedDone },
        "kernel.exited": onExited,
        "kernel.failed": onFailedAfterStart,
      },
      after: { grace: "killed" },
    },
    /** SIGTERM to the process group, SIGKILL after a short bound; the run ends when the process is gone. */
    killed: {
      entry: [{ type: "notifyPhase", params: "killed" }, "markKilled", "terminate"],
      on: { "kernel.exited": onExited, "kernel.failed": onFailedAfterStart },
      after: { killBound: { actions: "kill" } },
    },
    /** Routes to the final state named by the outcome's status, once no nested call is open; a blocked call makes
     * it `policy_error`. */
    finished: {
      always: [
        { guard: "sessionEndsNow", actions: "abandonCallsNow" },
        { guard: "hasOpenCalls", target: "draining" },
        { guard: "policyViolated", target: "policy_error", actions: "markPolicy" },
        { guard: { type: "is", params: "success" }, target: "success" },
        { guard: { type: "is", params: "runtime_error" }, target: "runtime_error" },
        { guard: { type: "is", params: "timeout" }, target: "timeout" },
        { guard: { type: "is", params: "cancelled" }, target: "cancelled" },
        { target: "setup_error" },
      ],
    },
    success: { type: "final", entry: report },
    runtime_error: { type: "final", entry: report },
    setup_error: { type: "final", entry: report },
    timeout: { type: "final", entry: report },
    cancelled: { type: "final", entry: report },
    policy_error: { type: "final", entry: report },
    /** The outcome is known but nested calls are open: they are cancelled, and their `after` handlers and finish
     * observations get up to the grace period to complete before the run reports. */
    draining: {
      entry: "cancelCalls",
      always: { guard: ({ context }) => !calls.hasOpenCalls(context), target: "finished" },
      on: { "kernel.tool_call": { guard: "isMine", actions: { type: "refuseCall", params: "ended" } } },
      after: { grace: { target: "finished", actions: "abandonCalls" } },
    },
  },
  output: ({ context }) => context.outcome!,
});

/** A call's terminal record goes to the supervisor, which emits it for the host (machines/run-calls.ts). */
function recordCall(
  enqueue: { sendTo: (to: AnyActorRef, event: EventObject) => void },
  system: { get: (id: string) => AnyActorRef | undefined },
  runId: string,
  record: NestedCallRecord,
) {
  const supervisor = system.get("supervisor");
  const event: calls.NestedCallEvent = { type: "run.nested_call", runId, record };
  if (supervisor) enqueue.sendTo(supervisor, event);
}

/** When a call ended, from its record (start time plus duration): the time a paused work budget resumes at. */
function endOf(out: ToolCallOutput): number {
  const started = Date.parse(out.record.startedAt);
  return Number.isFinite(started) ? Math.round(started + out.record.durationMs) : 0;
}

function pick(e: KernelInfo): KernelInfo {
  return { pid: e.pid, python: e.python, executable: e.executable, ...(e.language ? { language: e.language } : {}) };
}
