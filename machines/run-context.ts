// What a run machine knows: its input (the prepared request), its context, the events it takes, and the pure
// functions that derive commands and child inputs from them (machines/run.ts wires them into actions).
import type { DoneActorEvent } from "xstate";
import type {
  BatchCell,
  InstallFact,
  InstallInput,
  InstallSummary,
  Language,
  Limits,
  RunnerCommand,
  RunnerFact,
  RunnerInfo,
  RunnerInput,
  RunOutcome,
  RunRequest,
  SessionReplacement,
  StopReason,
} from "./events.ts";
import type { CallsRequest, NestedCallRecord, ToolCallOutput } from "./tool-events.ts";
import { abandonCalls, type CallsContext } from "./run-calls.ts";
import { runActorId, sessionActorId } from "./actor-ids.ts";

/** Carried over from the request as is (machines/events.ts): the backend's label (shown by the inspector, never
 * acted on), who asked and for notebook cells which cell, the cell's directory, result and budget modes. */
export interface RunInput extends Pick<RunRequest, "backend" | "surface" | "cell" | "chdir" | "result" | "budget"> {
  runId: string;
  code: string;
  filename: string;
  cwd: string;
  timeoutMs: number;
  requestedAt: number;
  limits: Limits;
  session?: {
    name: string;
    /** The run's place in its session process (1 for the run that starts it). */
    ordinal: number;
    /** Which process of the session runs it. */
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
  calls?: CallsRequest;
  /** A claimed spare runner (`spare:<n>`) whose process this fresh run takes over. */
  spare?: string;
  /** Notices from preparation (PEP 723 keys without effect in a session, ...), kept on the outcome. */
  notes?: string[];
  /** A session's process already up when the run starts: the run command goes out at once. */
  runner?: RunnerInfo;
  /** Cells run after `code` in this run (RunRequest's `batch`), named as the runs they stand for would be. */
  batch?: BatchCell[];
  /** Each of `batch`'s own timeout (RunRequest's `cellTimeoutsMs`): the deadline starts again as each one starts. */
  cellTimeoutsMs?: number[];
}

export interface RunContext extends RunInput {
  deadlineAt: number;
  /** Time of the latest fact, used to compute what is left of the deadline. */
  now: number;
  runnerReady: boolean;
  stopReason?: StopReason;
  killed: boolean;
  message?: string;
  outcome?: RunOutcome;
  /** Set once the dependencies are installed. */
  install?: InstallSummary;
  /** The run ended during dependency installation. */
  stage?: "install";
  /** Nested tool calls (machines/run-calls.ts); absent until the first one. */
  callCount?: number;
  open?: CallsContext["open"];
  blocked?: number;
  /** A work budget (`budget: "work"`) is paused since this time: user code awaits a nested call. */
  pausedAt?: number;
  /** The run was cancelled because its session is closing: it is stopped by force even under `Limits.noKill`. */
  closing?: true;
}

/** `close`: the run's session is closing; a run that waits without a kill (`Limits.noKill`) is stopped by force. */
export type RunCancel = { type: "run.cancel"; at: number; runId?: string; close?: boolean };

export type RunEvent = RunnerFact | InstallFact | RunCancel | DoneActorEvent<ToolCallOutput>;

export function initialContext(input: RunInput): RunContext {
  return {
    ...input,
    deadlineAt: input.requestedAt + input.timeoutMs,
    now: input.requestedAt,
    runnerReady: input.runner !== undefined,
    killed: false,
  };
}

/** A fresh run with dependencies starts its process only once they are installed (it runs the environment's
 * interpreter); a session run's runner is its session's, there from the start. */
export const mustInstall = (c: RunContext) => (c.dependencies?.length ?? 0) > 0 && c.install === undefined;

/** A fresh run starts its own runner at once unless it installs first; a session run uses its session's. */
export const runnerAtStart = (c: RunContext) => !c.session && !mustInstall(c);

export function runnerInput(c: RunContext): RunnerInput {
  const python = c.install?.python ?? c.python;
  return {
    mode: c.session ? "session" : "fresh",
    cwd: c.cwd,
    owner: c.session ? sessionActorId(c.session.name) : runActorId(c.runId),
    ...(python ? { python } : {}),
    // A spare was started for the run's own interpreter, not for an installed environment's.
    ...(c.spare && !c.install ? { adopt: c.spare } : {}),
  };
}

export function installInput(c: RunContext): InstallInput {
  return {
    runId: c.runId,
    owner: `install:${c.runId}`,
    mode: c.session ? "session" : "fresh",
    dependencies: c.dependencies ?? [],
    cwd: c.cwd,
    ...(c.python ? { python: c.python } : {}),
    ...(c.session ? { session: { name: c.session.name, incarnation: c.session.incarnation } } : {}),
  };
}

/** The command that runs the code: a session run also names its package directory and the modules to check. */
export function runCommand(c: RunContext): RunnerCommand {
  return {
    type: "runner.run",
    runId: c.runId,
    code: c.code,
    filename: c.filename,
    ...(c.install?.sysPath ? { sysPath: [c.install.sysPath], checkLoaded: c.install.modules } : {}),
    ...(c.calls ? { toolSet: c.calls.toolSet } : {}),
    ...(c.chdir ? { chdir: c.chdir } : {}),
    ...(c.result === "value" ? { result: "value" as const } : {}),
    ...(c.batch ? { batch: c.batch, ...(c.cellTimeoutsMs ? { cellStarts: true as const } : {}) } : {}),
  };
}

/** What a run takes over from its request as is: the surface, the cell, its directory, result and budget modes. */
export function requestExtras(e: Pick<RunRequest, "surface" | "cell" | "chdir" | "result" | "budget">) {
  return {
    ...(e.surface ? { surface: e.surface } : {}),
    ...(e.cell ? { cell: e.cell } : {}),
    ...(e.chdir ? { chdir: e.chdir } : {}),
    ...(e.result ? { result: e.result } : {}),
    ...(e.budget ? { budget: e.budget } : {}),
  };
}

/** When a call ended, from its record (start time plus duration): the time a paused work budget resumes at. */
export function endOf(out: ToolCallOutput): number {
  const started = Date.parse(out.record.startedAt);
  return Number.isFinite(started) ? Math.round(started + out.record.durationMs) : 0;
}

/** The deadline of a batch's further cell `cell` (1-based), which started at `at`, when it has its own timeout. */
export function cellDeadline(c: RunContext, cell: number, at: number): number | undefined {
  const timeoutMs = c.cellTimeoutsMs?.[cell - 1];
  return timeoutMs === undefined ? undefined : at + timeoutMs;
}

/** When the last open call ended, a paused work budget resumes: the deadline moves by the time spent waiting. */
export const resumedDeadline = (c: RunContext) => c.deadlineAt + Math.max(0, c.now - (c.pausedAt ?? c.now));

/** Open calls recorded as cancelled (they die with the run): after the grace bound when they did not drain, or at
 * once when a session's process is gone (the run's `sessionEndsNow` guard). */
export function abandonedCalls(c: RunContext, when: "grace" | "now"): NestedCallRecord[] {
  const end = c.outcome?.finishedAt ?? c.now;
  if (when === "grace") return abandonCalls(c, end + c.limits.graceMs, c.limits.graceMs);
  return abandonCalls(c, end, 0, "The run's process ended while this call was open; the call was cancelled with it.");
}

export function runnerInfo(e: RunnerInfo): RunnerInfo {
  return { pid: e.pid, python: e.python, executable: e.executable, ...(e.language ? { language: e.language } : {}) };
}

/** Whether a fact or cancellation concerns this run (facts without a run id concern whoever owns the runner). */
export const concernsRun = (c: RunContext, e: RunEvent) =>
  !("runId" in e) || e.runId === undefined || e.runId === c.runId;
