// One execution of a script: from the request to its outcome. A fresh run owns its kernel (a new process); a
// session run talks to its session's kernel through `kernel` provided as the session link. Either way the run
// sees the same kernel facts and sends the same kernel commands, so one machine describes both.
import { assign, enqueueActions, fromCallback, sendParent, sendTo, setup } from "xstate";
import type {
  KernelCommand,
  KernelFact,
  KernelInfo,
  KernelInput,
  Limits,
  RunFinishedEvent,
  RunOutcome,
  RunPhase,
  RunStatus,
  StopReason,
} from "./events.ts";

export interface RunInput {
  runId: string;
  code: string;
  filename: string;
  cwd: string;
  timeoutMs: number;
  requestedAt: number;
  limits: Limits;
  session?: { name: string; ordinal: number; started: boolean; replacedLost?: boolean };
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
}

export type RunEvent = KernelFact | { type: "run.cancel"; at: number; runId?: string };

/** Placeholder: the real kernel is provided from actors/ (a process) or by the session (a link). */
const kernelPlaceholder = fromCallback<KernelCommand, KernelInput>(() => {
  throw new Error("run: the `kernel` actor must be provided");
});

function outcomeOf(
  context: RunContext,
  status: RunStatus,
  at: number,
  extra: Partial<RunOutcome> & { lost?: boolean } = {},
): RunOutcome {
  const { lost, ...rest } = extra;
  return {
    runId: context.runId,
    status,
    displayedValue: false,
    requestedAt: context.requestedAt,
    finishedAt: at,
    durationMs: Math.max(0, at - context.requestedAt),
    killed: context.killed,
    ...(context.stopReason ? { stopReason: context.stopReason } : {}),
    ...(context.message ? { message: context.message } : {}),
    ...(context.kernel ? { kernel: context.kernel } : {}),
    ...(context.session ? { session: { ...context.session, isLost: Boolean(lost) } } : {}),
    ...rest,
  };
}

type Done = Extract<KernelFact, { type: "kernel.done" }>;
type Exited = Extract<KernelFact, { type: "kernel.exited" }>;

/** A run that ended by itself. */
function finishedOutcome(context: RunContext, e: Done): RunOutcome {
  return outcomeOf(context, e.exitCode === 0 ? "success" : "runtime_error", e.at, {
    exitCode: e.exitCode,
    displayedValue: e.displayedValue,
  });
}

/** A run stopped by a deadline or cancellation whose process answered in time: its state is kept. */
function stoppedOutcome(context: RunContext, e: Done): RunOutcome {
  return outcomeOf(context, context.stopReason ?? "cancelled", e.at, {
    exitCode: e.exitCode,
    displayedValue: e.displayedValue,
  });
}

/** The process is gone. For a session this loses its state. Before user code started it is a setup error. */
function exitedOutcome(context: RunContext, e: Exited, userCodeStarted = true): RunOutcome {
  const status: RunStatus = context.stopReason
    ? context.stopReason
    : !userCodeStarted
      ? "setup_error"
      : e.code === 0 && !e.signal
        ? "success"
        : "runtime_error";
  return outcomeOf(context, status, e.at, {
    ...(e.code !== null ? { exitCode: e.code } : {}),
    ...(e.signal ? { signal: e.signal } : {}),
    ...(status === "setup_error" && !context.message
      ? { message: `Python exited during start-up (${e.signal ?? `exit code ${e.code}`})` }
      : {}),
    lost: Boolean(context.session),
  });
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
  outcomeOf(c, c.stopReason ?? "setup_error", e.at, { message: e.message }),
);
/** The kernel broke after user code started: for a session its state is gone with it. */
const onFailedAfterStart = settleWith((c, e: Extract<KernelFact, { type: "kernel.failed" }>) =>
  outcomeOf(c, c.stopReason ?? "runtime_error", e.at, { message: e.message, lost: Boolean(c.session) }),
);
const report = { type: "report", params: ({ context }: { context: RunContext }) => context.outcome! } as const;

export const runMachine = setup({
  types: {
    context: {} as RunContext,
    input: {} as RunInput,
    events: {} as RunEvent,
    output: {} as RunOutcome,
  },
  actors: { kernel: kernelPlaceholder },
  actions: {
    sendRun: sendTo("kernel", ({ context }): KernelCommand => ({
      type: "kernel.run",
      runId: context.runId,
      code: context.code,
      filename: context.filename,
    })),
    sendInterrupt: sendTo("kernel", ({ context }): KernelCommand => ({
      type: "kernel.interrupt",
      runId: context.runId,
    })),
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
    is: ({ context }, status: RunStatus) => context.outcome?.status === status,
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
    enqueue.spawnChild("kernel", {
      id: "kernel",
      input: {
        mode: context.session ? "session" : "fresh",
        cwd: context.cwd,
        owner: context.session ? `session:${context.session.name}` : `run:${context.runId}`,
      },
    });
  }),
  initial: "starting",
  states: {
    /** Waiting for the interpreter to be ready and to confirm that the script is about to run. */
    starting: {
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
      on: {
        "kernel.done": { guard: "isMine", ...onDone },
        "kernel.exited": onExited,
        "kernel.failed": onFailedAfterStart,
        "run.cancel": { target: "interrupted", actions: { type: "stopFor", params: "cancelled" } },
      },
      after: { deadline: { target: "interrupted", actions: { type: "stopFor", params: "timeout" } } },
    },
    /** One KeyboardInterrupt was sent to the main thread; an interruptible script ends now and keeps its state. */
    interrupted: {
      entry: [{ type: "notifyPhase", params: "interrupted" }, "sendInterrupt"],
      on: {
        "kernel.done": { guard: "isMine", ...onStoppedDone },
        "kernel.exited": onExited,
        "kernel.failed": onFailedAfterStart,
      },
      after: { interruptWindow: "grace" },
    },
    /** Still running (cleanup, or the interrupt was caught). No second interrupt: a grace period, then the
     * process tree is stopped. */
    grace: {
      entry: { type: "notifyPhase", params: "grace" },
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
    /** Routes to the final state named by the outcome's status. */
    finished: {
      always: [
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
  },
  output: ({ context }) => context.outcome!,
});

function pick(e: KernelInfo): KernelInfo {
  return { pid: e.pid, python: e.python, executable: e.executable };
}
