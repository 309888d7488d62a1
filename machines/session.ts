// A named persistent Python process. Its runs are child actors; while one runs the session mirrors the run's
// phase (running, interrupted, grace, killed) so the inspector shows what the process is going through.
import { assign, enqueueActions, fromCallback, setup } from "xstate";
import type { DoneActorEvent } from "xstate";
import type {
  KernelCommand,
  KernelFact,
  KernelInfo,
  KernelInput,
  Language,
  Limits,
  RunOutcome,
  RunPhaseEvent,
  RunStartEvent,
  SessionReplacement,
} from "./events.ts";
import { runMachine, type RunInput } from "./run.ts";
import { message } from "./message.ts";
import { refusal, requestExtras } from "./run-outcome.ts";

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
  kernel?: KernelInfo;
}

export type SessionEvent =
  | KernelFact
  | KernelCommand
  | RunStartEvent
  | RunPhaseEvent
  | { type: "session.close"; at: number }
  | DoneActorEvent<RunOutcome>;

export interface SessionOutput {
  name: string;
  incarnation: number;
  end: "lost" | "closed";
}

/** The kernel of a session run: forwards the run's kernel commands to the session that owns the process. */
export const sessionLink = fromCallback<KernelCommand, KernelInput>(({ input, receive, system }) => {
  receive((command) => system.get(input.owner)?.send(command));
});

const kernelPlaceholder = fromCallback<KernelCommand, KernelInput>(() => {
  throw new Error("session: the `kernel` actor must be provided");
});

function runInput(context: SessionContext, e: RunStartEvent): RunInput {
  const first = context.runCount === 0;
  return {
    runId: e.runId,
    code: e.code,
    filename:
      context.language === "js" ? `cell-${context.runCount + 1}.js` : `${e.cell ? "cell" : "script"}-${context.runCount + 1}.py`,
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
    ...(e.bridge ? { bridge: e.bridge } : {}),
    ...requestExtras(e),
    ...((e.backend ?? context.backend) ? { backend: e.backend ?? context.backend } : {}),
  };
}

const busy = { actions: { type: "rejectBusy", params: "busy" } } as const;

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    input: {} as SessionInput,
    events: {} as SessionEvent,
    output: {} as SessionOutput,
  },
  actors: {
    kernel: kernelPlaceholder,
    run: runMachine.provide({ actors: { kernel: sessionLink } }),
  },
  actions: {
    spawnRun: enqueueActions(({ context, enqueue }, e: RunStartEvent) => {
      const id = `run:${e.runId}`;
      enqueue.spawnChild("run", { id, systemId: id, input: runInput(context, e) });
      enqueue.assign({ activeRunId: e.runId, runCount: context.runCount + 1 });
    }),
    /** A run started while the kernel is up learns it at once. */
    tellReady: enqueueActions(({ context, enqueue }, at: number) => {
      if (context.kernel && context.activeRunId) {
        enqueue.sendTo(`run:${context.activeRunId}`, { type: "kernel.ready", at, ...context.kernel });
      }
    }),
    /** Kernel facts belong to the active run; with none (between runs) they are the session's alone. */
    forwardToRun: enqueueActions(({ context, event, enqueue, system }) => {
      const run = context.activeRunId ? system.get(`run:${context.activeRunId}`) : undefined;
      if (run) enqueue.sendTo(run, event);
    }),
    toKernel: enqueueActions(({ event, enqueue }) => {
      enqueue.sendTo("kernel", event as KernelCommand);
    }),
    rejectBusy: enqueueActions(({ context, event, enqueue, system }, why: "busy" | "closing") => {
      const e = event as RunStartEvent;
      const supervisor = system.get("supervisor");
      if (!supervisor) return;
      const outcome = refusal(
        { ...e, session: context.name },
        why === "closing"
          ? `Session "${context.name}" is closing; run again once it has stopped.`
          : `Session "${context.name}" is busy with another run; wait for it to finish.`,
        context.incarnation,
      );
      enqueue.sendTo(supervisor, message({ type: "run.finished", outcome }));
    }),
    cancelActiveRun: enqueueActions(({ context, event, enqueue, system }) => {
      const run = context.activeRunId ? system.get(`run:${context.activeRunId}`) : undefined;
      const at = "at" in event && typeof event.at === "number" ? event.at : 0;
      if (run) enqueue.sendTo(run, message({ type: "run.cancel", at }));
    }),
    releaseRun: enqueueActions(({ event, enqueue }) => {
      enqueue.stopChild((event as DoneActorEvent).actorId);
      enqueue.assign({ activeRunId: undefined });
    }),
  },
  guards: {
    hasActiveRun: ({ context }) => context.activeRunId !== undefined,
    closeRequested: ({ context }) => context.closeRequested,
  },
  delays: {
    killBound: ({ context }) => context.limits.killMs,
  },
}).createMachine({
  id: "session",
  context: ({ input }) => ({ ...input, runCount: 0, closeRequested: false }),
  entry: enqueueActions(({ context, enqueue }) => {
    enqueue.spawnChild("kernel", {
      id: "kernel",
      input: {
        mode: "session",
        cwd: context.cwd,
        owner: `session:${context.name}`,
        ...(context.python ? { python: context.python } : {}),
        ...(context.language ? { language: context.language } : {}),
      },
    });
    if (context.firstRun) enqueue({ type: "spawnRun", params: context.firstRun });
  }),
  initial: "starting",
  on: {
    "kernel.run": { actions: "toKernel" },
    "kernel.interrupt": { actions: "toKernel" },
    "kernel.terminate": { actions: "toKernel" },
    "kernel.kill": { actions: "toKernel" },
    "kernel.started": { actions: "forwardToRun" },
    "kernel.done": { actions: "forwardToRun" },
    // The tool bridge: the active run's calls and their answers.
    "kernel.tool_call": { actions: "forwardToRun" },
    "kernel.tool_cancel": { actions: "forwardToRun" },
    "kernel.tool_result": { actions: "toKernel" },
    // The process is gone: so is every variable in it.
    "kernel.exited": { target: ".lost", actions: "forwardToRun" },
    "kernel.failed": { target: ".lost", actions: "forwardToRun" },
    "run.start": busy,
    "session.close": { actions: [assign({ closeRequested: true }), "cancelActiveRun"] },
    "xstate.done.actor.*": [
      { guard: "closeRequested", target: ".closing", actions: "releaseRun" },
      { target: ".idle", actions: "releaseRun" },
    ],
  },
  states: {
    /** The interpreter is starting; a first run waits for it. */
    starting: {
      on: {
        "kernel.ready": [
          {
            guard: "hasActiveRun",
            target: "running",
            actions: [assign(({ event }) => ({ kernel: kernelInfo(event) })), "forwardToRun"],
          },
          {
            target: "idle",
            actions: assign(({ event }) => ({ kernel: kernelInfo(event) })),
          },
        ],
        "session.close": { target: "closing", actions: ["cancelActiveRun"] },
        // The interpreter never started (missing, bad cwd): nothing was lost.
        "kernel.failed": { target: "closed", actions: "forwardToRun" },
        "run.phase": phaseTarget(),
      },
    },
    /** Alive, no run: SIGINT is ignored in the process, threads may keep running. */
    idle: {
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
    running: { on: { "run.phase": phaseTarget() } },
    interrupted: { on: { "run.phase": phaseTarget() } },
    grace: { on: { "run.phase": phaseTarget() } },
    killed: { on: { "run.phase": phaseTarget() } },
    /** Asked to exit; killed if it does not within the bound. */
    closing: {
      entry: enqueueActions(({ enqueue }) => enqueue.sendTo("kernel", { type: "kernel.shutdown" })),
      on: {
        "kernel.exited": { target: "closed", actions: "forwardToRun" },
        "kernel.failed": { target: "closed", actions: "forwardToRun" },
        "xstate.done.actor.*": { actions: "releaseRun" },
        "run.start": { actions: { type: "rejectBusy", params: "closing" } },
        "session.close": {},
      },
      after: {
        killBound: { actions: enqueueActions(({ enqueue }) => enqueue.sendTo("kernel", { type: "kernel.kill" })) },
      },
    },
    lost: {
      type: "final",
      output: ({ context }) => ({ name: context.name, incarnation: context.incarnation, end: "lost" as const }),
    },
    closed: {
      type: "final",
      output: ({ context }) => ({ name: context.name, incarnation: context.incarnation, end: "closed" as const }),
    },
  },
  output: ({ event }) => event.output as SessionOutput,
});

function kernelInfo(e: KernelInfo): KernelInfo {
  return { pid: e.pid, python: e.python, executable: e.executable, ...(e.language ? { language: e.language } : {}) };
}

function phaseTarget() {
  return [
    { guard: ({ event }: { event: SessionEvent }) => (event as RunPhaseEvent).phase === "running", target: "running" },
    {
      guard: ({ event }: { event: SessionEvent }) => (event as RunPhaseEvent).phase === "interrupted",
      target: "interrupted",
    },
    { guard: ({ event }: { event: SessionEvent }) => (event as RunPhaseEvent).phase === "grace", target: "grace" },
    { target: "killed" },
  ];
}
