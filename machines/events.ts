// Typed event unions shared by the machines. Every event carries its own timestamp `at` (ms since the epoch, from
// the boundary that produced it): machines never read a clock, so recorded events replay exactly.

export type RunStatus = "success" | "runtime_error" | "setup_error" | "timeout" | "cancelled";
export type StopReason = "timeout" | "cancelled";

/** Escalation bounds, in ms. `interruptWindow`: how long an interrupted run may take to end before the grace
 * period starts; `grace`: the cleanup allowance before the process tree is stopped; `kill`: SIGTERM -> SIGKILL. */
export interface Limits {
  interruptWindowMs: number;
  graceMs: number;
  killMs: number;
}

export const DEFAULT_LIMITS: Limits = { interruptWindowMs: 100, graceMs: 1000, killMs: 500 };

export interface RunRequest {
  runId: string;
  code: string;
  cwd: string;
  timeoutMs: number;
  /** Named session, or undefined for a fresh process. */
  session?: string;
  reset?: boolean;
}

// ---- commands (extension -> supervisor) ----
export type RunStartEvent = { type: "run.start"; at: number } & RunRequest;
export type CommandEvent =
  | RunStartEvent
  | { type: "run.cancel"; at: number; runId: string }
  | { type: "session.stop"; at: number; name: string }
  | { type: "supervisor.shutdown"; at: number };

// ---- facts (kernel actor -> its parent) ----
export interface KernelInfo {
  pid: number;
  python: string;
  executable: string;
}
export type RunnerError = null | "syntax" | "exception" | "exit" | "interrupt";
export type KernelFact =
  | ({ type: "kernel.ready"; at: number } & KernelInfo)
  | { type: "kernel.started"; at: number; runId: string }
  | {
      type: "kernel.done";
      at: number;
      runId: string;
      exitCode: number;
      displayedValue: boolean;
      error: RunnerError;
    }
  | { type: "kernel.exited"; at: number; code: number | null; signal: string | null }
  | { type: "kernel.failed"; at: number; message: string };

// ---- commands (owner -> kernel actor) ----
export type KernelCommand =
  | { type: "kernel.run"; runId: string; code: string; filename: string }
  | { type: "kernel.interrupt"; runId: string }
  | { type: "kernel.terminate" }
  | { type: "kernel.kill" }
  | { type: "kernel.shutdown" };

export interface KernelInput {
  mode: "fresh" | "session";
  cwd: string;
  /** `session:<name>` or `run:<id>`: whom the process belongs to (for the process registry and logs). */
  owner: string;
}

// ---- run -> owner notifications ----
export type RunPhase = "running" | "interrupted" | "grace" | "killed";
export type RunPhaseEvent = { type: "run.phase"; runId: string; phase: RunPhase };

export interface SessionRef {
  name: string;
  ordinal: number;
  /** This run started the session process. */
  started: boolean;
  /** The session process died or was killed during this run: its state is gone. */
  isLost: boolean;
  /** A previous incarnation of this session was lost (not reset, not closed) before this run started it. */
  replacedLost?: boolean;
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
  kernel?: KernelInfo;
}

export type RunFinishedEvent = { type: "run.finished"; outcome: RunOutcome };
