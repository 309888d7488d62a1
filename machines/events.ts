// Typed event unions shared by the machines. Every event carries its own timestamp `at` (ms since the epoch, from
// the boundary that produced it): machines never read a clock, so recorded events replay exactly.
import type { CallsRequest, NestedCallRecord, ToolCallFact, ToolResultCommand } from "./tool-events.ts";

/** `policy_error`: a nested tool call was blocked by a policy, even if the script caught the error. */
export type RunStatus = "success" | "runtime_error" | "setup_error" | "timeout" | "cancelled" | "policy_error";
export type StopReason = "timeout" | "cancelled";

/** Escalation bounds, in ms. `interruptWindow`: how long an interrupted run may take to end before the grace
 * period starts; `grace`: the cleanup allowance before the process tree is stopped; `kill`: SIGTERM -> SIGKILL. */
export interface Limits {
  interruptWindowMs: number;
  graceMs: number;
  killMs: number;
  /** A second SIGINT as the grace period starts (pi-python's escalation: SIGINT, SIGINT, kill). */
  secondInterrupt?: boolean;
  /** No automatic kill (pi-python's `interruptGraceMs: 0`): after the interrupt the run waits for the code however
   * long it takes; only its session being stopped (/python-restart, a shutdown) ends it by force. */
  noKill?: boolean;
}

/** The tool surface that asked for a run (shown in the inspector, the event log and the journal). */
export type Surface = "code_execution" | "python" | "eval";

/** A notebook cell's place in its tool call. */
export interface CellRef {
  /** 1-based. */
  index: number;
  count: number;
  title?: string;
  language?: string;
}

export const DEFAULT_LIMITS: Limits = { interruptWindowMs: 100, graceMs: 1000, killMs: 500 };

/** The language a runner runs: Python (runtime-py/, docs/protocol.md) or JavaScript (runtime-js/, docs/protocol-js.md,
 * sessions only: `eval`'s js cells). */
export type Language = "python" | "js";

/** A cell of a batch (RunRequest's `batch`) as the runner gets it. */
export interface BatchCell {
  code: string;
  filename: string;
}

export interface RunRequest {
  runId: string;
  code: string;
  cwd: string;
  timeoutMs: number;
  /** Named session, or undefined for a fresh process. */
  session?: string;
  /** Absent: Python. A session runs one language; JavaScript runs only in sessions. */
  language?: Language;
  reset?: boolean;
  /** The escalation bounds for this run, when they differ from the supervisor's (settings changed). */
  limits?: Limits;
  /** Pi tools the code may call (machines/tool-events.ts); absent: none. */
  calls?: CallsRequest;
  /** Where the run executes (the backend's label, from the host; machines only carry it, for the inspector). */
  backend?: string;
  surface?: Surface;
  cell?: CellRef;
  /** Change to this directory before the code runs (it goes first on sys.path and stays there). */
  chdir?: string;
  /** `value`: the trailing expression's repr and the error text come back apart from the output (notebook cells). */
  result?: "print" | "value";
  /** `work`: the timeout pauses while a nested call (a tool or completion()) is open; `wall` (default) never does. */
  budget?: "wall" | "work";
  /** The code of further cells this run runs after `code`, each only when the cells before it completed (a Python
   * session's notebook cells in one round trip, docs/protocol.md "Notebook cells"). */
  batch?: string[];
  /** With `batch`, each further cell's own timeout (`batch[k]`'s at `k`: eval's per-cell budget, oh-my-pi's `timeout`):
   * when a further cell starts, the deadline starts again from its own timeout. Absent: `timeoutMs` bounds the run
   * with its whole batch (pi-python's one deadline for the call). */
  cellTimeoutsMs?: number[];
  // ---- what preparation settles (actors/prepare/); a sender may settle them itself ----
  /** The interpreter's executable (`sys.executable`); a session never mixes interpreters or working directories. */
  python?: string;
  /** PEP 723 dependencies to install before the code runs (normalized requirement strings). */
  dependencies?: string[];
  /** Fresh runs: what a spare runner must match to serve this run (interpreter, cwd, environment). Absent: spares
   * are off. */
  spareKey?: string;
  /** Notices for the result (PEP 723 keys without effect in a session, ...). */
  notes?: string[];
  /** The sender settled preparation itself (nothing to wait for: the interpreter was known), so no prepare actor
   * runs: the fields above are the preparation, or `failed` says why the request cannot run. */
  prepared?: { failed?: { message: string; hints?: Hint[] } };
  /** Sent by the host straight to its idle session (docs/design.md, "a warm session run"): the supervisor is not on
   * this run's path, and the session reports its outcome to the host itself (an emitted `run.finished`). */
  direct?: true;
}

// ---- commands (extension -> supervisor; a `direct` run.start -> its session) ----
export type RunStartEvent = { type: "run.start"; at: number } & RunRequest;
export type CommandEvent =
  | RunStartEvent
  | { type: "run.cancel"; at: number; runId: string }
  | { type: "session.stop"; at: number; name: string }
  | { type: "supervisor.shutdown"; at: number };

// ---- facts (runner actor -> its parent) ----
export interface RunnerInfo {
  pid: number;
  /** The runtime's version: Python's, or Node's for a JavaScript runner (`language: "js"`). */
  python: string;
  executable: string;
  language?: "js";
}
export type RunnerError = null | "syntax" | "exception" | "exit" | "interrupt";
export type RunnerFact =
  | ({ type: "runner.ready"; at: number } & RunnerInfo)
  | { type: "runner.started"; at: number; runId: string }
  /** A batch's further cell `cell` (1-based in the run's `batch`) started: the cell before it completed. Told only
   * for a run whose cells have their own timeouts (`runner.run` `cellStarts`). */
  | { type: "runner.cell"; at: number; runId: string; cell: number }
  | {
      type: "runner.done";
      at: number;
      runId: string;
      exitCode: number;
      displayedValue: boolean;
      error: RunnerError;
      /** Local modules reloaded before the run because their files changed. */
      reloaded?: string[];
      /** Of `checkLoaded`, the modules the session had already imported (they keep their loaded version). */
      alreadyLoaded?: string[];
    }
  | { type: "runner.exited"; at: number; code: number | null; signal: string | null }
  | { type: "runner.failed"; at: number; message: string; hint?: Hint }
  | ToolCallFact;

// ---- commands (owner -> runner actor) ----
export type RunnerCommand =
  | {
      type: "runner.run";
      runId: string;
      code: string;
      filename: string;
      /** Package directories to put on the session's sys.path before the run. */
      sysPath?: string[];
      /** Top-level modules just installed: the runner reports those the session had already imported. */
      checkLoaded?: string[];
      /** The tool set Python may call in this run (a session's earlier tools are replaced); the runner looks its
       * specs up by the run. */
      toolSet?: string;
      chdir?: string;
      result?: "value";
      /** Further cells, each with the file name its tracebacks show. */
      batch?: BatchCell[];
      /** Tell the run when each further cell starts (`runner.cell`): its cells have their own timeouts. */
      cellStarts?: true;
    }
  | ToolResultCommand
  | { type: "runner.interrupt"; runId: string }
  /** A spare's process moves to the run that claimed it (the runner hands its handle over, it does not stop it). */
  | { type: "runner.handover"; runId: string }
  | { type: "runner.terminate" }
  | { type: "runner.kill" }
  | { type: "runner.shutdown" };

export interface RunnerInput {
  mode: "fresh" | "session";
  cwd: string;
  /** `session:<name>` or `run:<id>`: whom the process belongs to (for the process registry and logs). */
  owner: string;
  /** The interpreter to start (else the host's default). */
  python?: string;
  /** Take over this spare runner's process (`spare:<n>`) instead of starting one; start one if it has none. */
  adopt?: string;
  /** Absent: Python. */
  language?: Language;
}

// ---- the dependency installer (run -> install actor -> run) ----
export interface InstallInput {
  runId: string;
  /** `install:<runId>`: how the recorder and replay address its facts. */
  owner: string;
  mode: "fresh" | "session";
  python?: string;
  dependencies: string[];
  cwd: string;
  /** Session runs install into a package directory of this session process. */
  session?: { name: string; incarnation: number };
}

/** What an installation produced: the environment and what it holds. */
export interface InstallSummary {
  installer: "uv" | "pip";
  /** The requirements as given. */
  requirements: string[];
  /** Reused a cached environment (fresh runs) or found everything already installed. */
  cached: boolean;
  /** Fresh runs: the environment's interpreter. */
  python?: string;
  /** Sessions: the package directory added to sys.path. */
  sysPath?: string;
  /** Top-level modules of the installed distributions. */
  modules: string[];
}

export type InstallFact =
  | ({ type: "install.done"; at: number } & InstallSummary)
  | { type: "install.failed"; at: number; message: string; hint?: Hint };

/** A stable hint id and its advice (the journal records the ids). */
export interface Hint {
  id: string;
  text: string;
}

// ---- preparation (supervisor -> prepare actor -> supervisor) ----
/** What preparation settles for a request: the interpreter, the dependencies, the spare key and notices. */
export type Prepared = Pick<RunRequest, "python" | "dependencies" | "spareKey" | "notes">;

export type PrepareFact =
  | ({ type: "prepare.done"; at: number; runId: string } & Prepared)
  | { type: "prepare.failed"; at: number; runId: string; message: string; hints?: Hint[] };

export interface SessionRef {
  name: string;
  /** The run's ordinal within the session process: 1 for the run that started it, 2 for the next, ...; 0 for a run
   * refused before it reached the process. */
  ordinal: number;
  /** Which process of this session name: 1, then one more after each reset, loss or replacement. */
  incarnation: number;
  /** This run started the session process. */
  started: boolean;
  /** The session process died or was killed during this run: its state is gone. */
  isLost: boolean;
  /** A previous incarnation of this session was lost (not reset, not closed) before this run started it. */
  replacedLost?: boolean;
  /** A live incarnation was replaced because this run's interpreter or working directory differs from it. */
  replaced?: SessionReplacement;
}

export interface SessionReplacement {
  reason: "interpreter" | "cwd";
  /** The previous incarnation's interpreter or working directory. */
  from: string;
}

/** The final record of a run, in serializable data only. */
export interface RunOutcome {
  runId: string;
  status: RunStatus;
  exitCode?: number;
  signal?: string;
  displayedValue: boolean;
  requestedAt: number;
  finishedAt: number;
  durationMs: number;
  stopReason?: StopReason;
  /** The process tree was stopped by force (SIGTERM/SIGKILL) after the grace period. */
  killed: boolean;
  /** Why a setup_error happened, or why a process died. */
  message?: string;
  session?: SessionRef;
  runner?: RunnerInfo;
  /** Dependencies installed (or found installed) before the run. */
  install?: InstallSummary;
  /** The run ended during dependency installation, before its code ran. */
  stage?: "install";
  /** Local modules reloaded before the run. */
  reloaded?: string[];
  /** Installed modules the session had already imported: they keep their loaded version. */
  alreadyLoaded?: string[];
  hints?: Hint[];
  /** Notices the host adds (PEP 723 settings without effect in a session, ...). */
  notes?: string[];
  /** Every nested tool call the code attempted, in start order (absent when there were none). */
  nestedCalls?: NestedCallRecord[];
}

export type RunFinishedEvent = { type: "run.finished"; outcome: RunOutcome };
