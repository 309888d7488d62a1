// The one outcome builder: every RunOutcome (a run's own, a refusal before any run exists, a request the host gave
// up on) is made here, from what is known of the request and the fact that ended it. Pure functions.
import type { InstallFact, RunnerFact, RunOutcome, RunRequest, RunStatus, SessionRef, StopReason } from "./events.ts";
import type { RunContext } from "./run-context.ts";

/** What every outcome starts from: which request, when it was made, its session and preparation notices. */
interface OutcomeBase {
  runId: string;
  requestedAt: number;
  session?: SessionRef;
  notes?: string[];
}

function outcome(base: OutcomeBase, status: RunStatus, at: number, extra: Partial<RunOutcome>): RunOutcome {
  return {
    runId: base.runId,
    status,
    displayedValue: false,
    requestedAt: base.requestedAt,
    finishedAt: at,
    durationMs: Math.max(0, at - base.requestedAt),
    killed: false,
    ...(base.session ? { session: base.session } : {}),
    ...(base.notes?.length ? { notes: base.notes } : {}),
    ...extra,
  };
}

/** A run's outcome, from its context. `lost`: the session's process (and its state) is gone. */
export function outcomeOf(
  context: RunContext,
  status: RunStatus,
  at: number,
  extra: Partial<RunOutcome> & { lost?: boolean } = {},
): RunOutcome {
  const { lost, ...rest } = extra;
  const base = {
    runId: context.runId,
    requestedAt: context.requestedAt,
    ...(context.session ? { session: { ...context.session, isLost: Boolean(lost) } } : {}),
    ...(context.notes ? { notes: context.notes } : {}),
  };
  return outcome(base, status, at, {
    killed: context.killed,
    ...(context.stopReason ? { stopReason: context.stopReason } : {}),
    ...(context.message ? { message: context.message } : {}),
    ...(context.runner ? { runner: context.runner } : {}),
    ...(context.install ? { install: context.install } : {}),
    ...(context.stage ? { stage: context.stage } : {}),
    ...rest,
  });
}

export type Done = Extract<RunnerFact, { type: "runner.done" }>;
export type Exited = Extract<RunnerFact, { type: "runner.exited" }>;

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

type Failed = Extract<RunnerFact, { type: "runner.failed" }>;

/** The runner broke (or never started). After user code started, a session's state is gone with it. */
export function failedOutcome(context: RunContext, e: Failed, userCodeStarted: boolean): RunOutcome {
  const status = context.stopReason ?? (userCodeStarted ? "runtime_error" : "setup_error");
  return outcomeOf(context, status, e.at, {
    message: e.message,
    ...(userCodeStarted ? { lost: Boolean(context.session) } : {}),
    ...(e.hint ? { hints: [e.hint] } : {}),
  });
}

/** Installation failed: the code never ran. */
export function installFailedOutcome(context: RunContext, e: Extract<InstallFact, { type: "install.failed" }>) {
  const extra = { message: e.message, stage: "install" as const, ...(e.hint ? { hints: [e.hint] } : {}) };
  return outcomeOf(context, "setup_error", e.at, extra);
}

/** The deadline or a cancellation (at `cancelAt`) stopped the installation; the code did not run. */
export function installStoppedOutcome(context: RunContext, reason: StopReason, cancelAt: number): RunOutcome {
  const at = reason === "timeout" ? context.deadlineAt : Math.max(cancelAt, context.now);
  const message =
    reason === "timeout"
      ? `dependency installation did not finish within the ${context.timeoutMs / 1000} s timeout; the code did not run`
      : "cancelled during dependency installation; the code did not run";
  return outcomeOf({ ...context, stopReason: reason, stage: "install" }, reason, at, { message });
}

/** The request as far as an outcome needs it (a `run.start`, or what the host knows of a request). */
export type RequestRef = Pick<RunRequest, "runId" | "session" | "notes"> & { at: number };

/** The outcome of a request that no run actor ever served, ending at `at` (default: when it was made). */
export function requestOutcome(
  e: RequestRef,
  status: RunStatus,
  extra: Partial<RunOutcome> & { at?: number; incarnation?: number } = {},
): RunOutcome {
  // The run never reached a session process: its ordinal is 0; `incarnation` is the session's current process.
  const { at = e.at, incarnation = 0, ...rest } = extra;
  const base = {
    runId: e.runId,
    requestedAt: e.at,
    ...(e.session !== undefined
      ? { session: { name: e.session, ordinal: 0, incarnation, started: false, isLost: false } }
      : {}),
    ...(e.notes ? { notes: e.notes } : {}),
  };
  return outcome(base, status, at, rest);
}

/** A setup_error for a request refused before any run actor exists (busy session, shutdown, bad metadata, ...). */
export function refusal(
  e: RequestRef,
  message: string,
  extra: Omit<Partial<RunOutcome>, "message"> & { at?: number; incarnation?: number } = {},
): RunOutcome {
  return requestOutcome(e, "setup_error", { ...extra, message });
}
