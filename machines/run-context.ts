// What a run machine knows: its input (the prepared request), its context, the events it takes, and the pure
// functions that derive commands and child inputs from them (machines/run.ts wires them into actions).
import type { DoneActorEvent } from "xstate";
import type {
  InstallFact,
  InstallInput,
  InstallSummary,
  Limits,
  RunnerCommand,
  RunnerFact,
  RunnerInfo,
  RunnerInput,
  RunOutcome,
  SessionReplacement,
  StopReason,
} from "./events.ts";
import type { CallsRequest, ToolCallOutput } from "./tool-events.ts";
import type { CallsContext } from "./run-calls.ts";

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
  /** PEP 723 dependencies, installed before the code runs. */
  dependencies?: string[];
  /** Pi tools the code may call; each call is a `tool:<runId>:<seq>` child (machines/run-calls.ts). */
  calls?: CallsRequest;
  /** A claimed spare runner (`spare:<n>`) whose process this fresh run takes over. */
  spare?: string;
  /** Notices from preparation (PEP 723 keys without effect in a session, ...), kept on the outcome. */
  notes?: string[];
  /** Where the run executes (the backend's label; shown by the inspector, never acted on). */
  backend?: string;
}

export interface RunContext extends RunInput {
  deadlineAt: number;
  /** Time of the latest fact, used to compute what is left of the deadline. */
  now: number;
  runnerReady: boolean;
  stopReason?: StopReason;
  killed: boolean;
  runner?: RunnerInfo;
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
}

export type RunCancel = { type: "run.cancel"; at: number; runId?: string };

export type RunEvent = RunnerFact | InstallFact | RunCancel | DoneActorEvent<ToolCallOutput>;

export function initialContext(input: RunInput): RunContext {
  return {
    ...input,
    deadlineAt: input.requestedAt + input.timeoutMs,
    now: input.requestedAt,
    runnerReady: false,
    killed: false,
  };
}

/** A fresh run with dependencies starts its process only once they are installed (it runs the environment's
 * interpreter); a session run's runner is its session's link, there from the start. */
export const mustInstall = (c: RunContext) => (c.dependencies?.length ?? 0) > 0 && c.install === undefined;

/** Whether the run spawns its runner on entry: a session run always (the link), a fresh one unless it installs. */
export const runnerAtStart = (c: RunContext) => Boolean(c.session) || !mustInstall(c);

export function runnerInput(c: RunContext): RunnerInput {
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
    ...(c.calls ? { tools: c.calls.tools } : {}),
  };
}

export function runnerInfo(e: RunnerInfo): RunnerInfo {
  return { pid: e.pid, python: e.python, executable: e.executable };
}

/** Whether a fact or cancellation concerns this run (facts without a run id concern whoever owns the runner). */
export const concernsRun = (c: RunContext, e: RunEvent) =>
  !("runId" in e) || e.runId === undefined || e.runId === c.runId;
