// The outcome of a run, computed from its context and the fact that ended it (pure functions of their inputs).
import type { KernelFact, RunOutcome, RunStartEvent, RunStatus } from "./events.ts";
import type { RunContext } from "./run.ts";

export function outcomeOf(
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
    ...(context.install ? { install: context.install } : {}),
    ...(context.stage ? { stage: context.stage } : {}),
    ...rest,
  };
}

export type Done = Extract<KernelFact, { type: "kernel.done" }>;
export type Exited = Extract<KernelFact, { type: "kernel.exited" }>;

/** What the runner reported with `done`. */
function doneFields(e: Done): Partial<RunOutcome> {
  return {
    exitCode: e.exitCode,
    displayedValue: e.displayedValue,
    ...(e.reloaded?.length ? { reloaded: e.reloaded } : {}),
    ...(e.alreadyLoaded?.length ? { alreadyLoaded: e.alreadyLoaded } : {}),
  };
}

/** A run that ended by itself. */
export function finishedOutcome(context: RunContext, e: Done): RunOutcome {
  return outcomeOf(context, e.exitCode === 0 ? "success" : "runtime_error", e.at, doneFields(e));
}

/** A run stopped by a deadline or cancellation whose process answered in time: its state is kept. */
export function stoppedOutcome(context: RunContext, e: Done): RunOutcome {
  return outcomeOf(context, context.stopReason ?? "cancelled", e.at, doneFields(e));
}

/** The process is gone. For a session this loses its state. Before user code started it is a setup error. */
export function exitedOutcome(context: RunContext, e: Exited, userCodeStarted = true): RunOutcome {
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
      ? {
          message: `${context.language === "js" ? "The JavaScript runtime" : "Python"} exited during start-up (${e.signal ?? `exit code ${e.code}`})`,
        }
      : {}),
    lost: Boolean(context.session),
  });
}

/** What a run takes over from its request as is: the surface, the cell, its directory, result and budget modes. */
export function requestExtras(e: RunStartEvent) {
  return {
    ...(e.surface ? { surface: e.surface } : {}),
    ...(e.cell ? { cell: e.cell } : {}),
    ...(e.chdir ? { chdir: e.chdir } : {}),
    ...(e.result ? { result: e.result } : {}),
    ...(e.budget ? { budget: e.budget } : {}),
  };
}

/** A setup_error outcome for a request refused before any run actor exists (busy session, shutdown, ...). */
export function refusal(e: RunStartEvent, message: string, incarnation = 0): RunOutcome {
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
      ? { session: { name: e.session, ordinal: 0, incarnation, started: false, isLost: false } }
      : {}),
  };
}
