// Python cells as runs: every cell of a `python` or `eval` call is one run in the notebook session (setting
// `notebookSession`, the session `code_execution {session: "notebook"}` reaches too), with the surface and the cell
// in the run's input so the inspector and the event log show who started it.
import type { CellPart, RunCallbacks, RunOutput, RunResult, RunTools, SupervisorHost } from "../../../host/index.ts";
import type { CellRef, Surface } from "../../../machines/events.ts";
import type { ResolvedSettings } from "../../../store/settings.ts";
import { mentionsScriptBlock } from "../../../lib/pep723.ts";

/** pi-python's grace between the timeout's SIGINT and the kill (a second SIGINT comes halfway). */
export const PYTHON_GRACE_MS = 30_000;
/** oh-my-pi's: SIGINT, then the kill 5 s later. */
export const EVAL_GRACE_MS = 5_000;

/** The grace a surface uses: `interruptGraceMs` when someone set it (ours or pi-python's), else its own default. */
export function graceFor(settings: ResolvedSettings, surfaceDefault: number): number {
  // Stryker disable next-line OptionalChaining: equivalent, loadSettings gives every key its source.
  return settings.sources.interruptGraceMs?.source === "default" ? surfaceDefault : settings.values.interruptGraceMs;
}

export interface PyCellRequest {
  code: string;
  /** Cells after this one, run in the same run while they complete (host RunRequestInput's `batch`). */
  batch?: string[];
  /** With `batch`, each of its cells' own timeout (eval's per-cell budget; host RunRequestInput's `cellTimeoutsMs`). */
  cellTimeoutsMs?: number[];
  cell: CellRef;
  timeoutMs: number;
  /** A fresh namespace before this cell. */
  reset: boolean;
}

export interface PyCellContext {
  host: SupervisorHost;
  session: string;
  /** Pi's working directory: the session's start directory. */
  cwd: string;
  /** Where this call's cells run (the call's `cwd`, else Pi's). */
  chdir: string;
  surface: Surface;
  graceMs: number;
  secondInterrupt: boolean;
  /** pi-python's `interruptGraceMs: 0`: the interrupt, then no automatic kill (/python-restart ends a wedged cell). */
  noKill?: boolean;
  budget: "wall" | "work";
  tools?: RunTools;
  signal?: AbortSignal;
  onOutput?: (output: RunOutput) => void;
  onDisplay?: RunCallbacks["onDisplay"];
  onCell?: RunCallbacks["onCell"];
}

export function runPyCell(req: PyCellRequest, ctx: PyCellContext): Promise<RunResult> {
  return ctx.host.run(
    {
      code: req.code,
      ...(req.batch?.length
        ? {
            batch: req.batch,
            ...(req.cellTimeoutsMs
              ? { cellTimeoutsMs: req.cellTimeoutsMs.map((t) => Math.max(1, Math.round(t))) }
              : {}),
          }
        : {}),
      cwd: ctx.cwd,
      timeoutMs: Math.max(1, Math.round(req.timeoutMs)),
      session: ctx.session,
      reset: req.reset,
      surface: ctx.surface,
      cell: req.cell,
      chdir: ctx.chdir,
      result: "value",
      budget: ctx.budget,
      escalation: {
        graceMs: ctx.graceMs,
        secondInterrupt: ctx.secondInterrupt,
        ...(ctx.noKill ? { noKill: true } : {}),
      },
    },
    {
      ...(ctx.tools ? { tools: ctx.tools } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      ...(ctx.onOutput ? { onOutput: ctx.onOutput } : {}),
      ...(ctx.onDisplay ? { onDisplay: ctx.onDisplay } : {}),
      ...(ctx.onCell ? { onCell: ctx.onCell } : {}),
    },
  );
}

/** How a cell's run went, in notebook words. */
export interface CellVerdict {
  /** The cell completed (also: it caught the timeout's KeyboardInterrupt and finished). */
  ok: boolean;
  cancelled: boolean;
  timedOut: boolean;
  /** The kernel was killed or died: its namespace is gone. */
  killed: boolean;
  /** The error text: a traceback, or what went wrong around the code. */
  error?: string;
}

/** How a cell's run ended, in any language: it completed (also when it caught the timeout's interrupt or the
 * cancellation and ended by itself, keeping its state), timed out, was cancelled, or lost its session's state. */
export function cellEnding(o: RunResult["outcome"]): {
  ok: boolean;
  lost: boolean;
  timedOut: boolean;
  cancelled: boolean;
} {
  const lost = o.session?.isLost === true;
  const timedOut = o.stopReason === "timeout";
  const cancelled = o.stopReason === "cancelled";
  const caught = (timedOut || cancelled) && !o.killed && !lost && o.exitCode === 0;
  return { ok: o.status === "success" || caught, lost, timedOut, cancelled };
}

export function verdictOf(r: RunResult): CellVerdict {
  const o = r.outcome;
  const { ok, lost, timedOut, cancelled } = cellEnding(o);
  let error = r.exception;
  if (!ok && !error) {
    if (o.status === "setup_error") error = o.message ?? "the cell could not be run";
    else if (lost)
      error = o.killed
        ? "the kernel did not stop after the interrupts and was killed; its namespace is gone"
        : `the kernel died (${o.signal ?? (o.exitCode !== undefined ? `exit code ${o.exitCode}` : (o.message ?? "unknown cause"))}); its namespace is gone`;
    else if (o.status === "policy_error") error = "a nested tool call was blocked by a policy";
    else error = o.message;
  }
  if (!ok && o.status === "policy_error" && r.exception)
    error = `${r.exception.trimEnd()}\n[a nested tool call was blocked by a policy]`;
  return {
    ok,
    cancelled,
    timedOut,
    killed: lost,
    ...(error ? { error } : {}),
  };
}

/** What the last cell a run ran printed, took and returned: its part of a batch, or the whole run's output. */
export function lastCellPart(r: RunResult): Pick<CellPart, "stdout" | "stderr" | "durationMs" | "value"> {
  return (
    r.cells?.at(-1) ?? {
      stdout: r.stdout,
      stderr: r.stderr,
      durationMs: r.outcome.durationMs,
      ...(r.value !== undefined ? { value: r.value } : {}),
    }
  );
}

/** The last cell of the batch that starts at `first`: the cells after it join while `joins` says so, up to one with a
 * PEP 723 block (a run of its own: preparation reads a run's first code only). */
export function batchEnd<C extends { code: string }>(
  cells: readonly C[],
  first: number,
  joins: (cell: C) => boolean = () => true,
): number {
  let end = first;
  while (end + 1 < cells.length && joins(cells[end + 1]!) && !mentionsScriptBlock(cells[end + 1]!.code)) end += 1;
  return end;
}
