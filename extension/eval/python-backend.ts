// eval's Python backend: each cell is one run in the notebook session (the `python` tool's kernel), with
// oh-my-pi's semantics: the per-cell timeout is a work budget (paused while the cell awaits a tool call or
// completion()), the trailing value shows like IPython's output, a timeout sends SIGINT and kills after the grace.
import type { SupervisorHost } from "../../host/index.ts";
import type { CodeEnvironment } from "../environment.ts";
import { EVAL_GRACE_MS, graceFor, runPyCell, verdictOf } from "../shared/notebook/python-cells.ts";
import {
  cellCallbacks,
  cellRef,
  enabledReason,
  joined,
  type EvalBackend,
  type EvalCallContext,
  type EvalCellInput,
  type EvalCellOutcome,
} from "./backend.ts";

export function pythonBackend(links: { getHost: () => SupervisorHost; environment: CodeEnvironment }): EvalBackend {
  return {
    language: "py",
    async unavailable(cwd) {
      const settings = links.environment.settings();
      const off = enabledReason("py", settings.values.eval.py, process.env);
      if (off) return off;
      // A live notebook session already has its interpreter; else one must be found before any cell runs.
      if (links.getHost().sessionTable()[settings.values.notebookSession]?.status === "alive") return undefined;
      const found = await links.environment.interpreter.resolve(cwd);
      return found.ok ? undefined : `no Python interpreter: ${found.error.replace(/\.$/, "")}`;
    },
    async runCell(cell: EvalCellInput, call: EvalCallContext): Promise<EvalCellOutcome> {
      const settings = links.environment.settings();
      const r = await runPyCell(
        {
          code: cell.code,
          cell: cellRef(cell, "py"),
          timeoutMs: cell.timeoutMs,
          reset: cell.reset,
        },
        {
          host: links.getHost(),
          session: settings.values.notebookSession,
          cwd: call.ctx.cwd,
          chdir: call.ctx.cwd,
          surface: "eval",
          graceMs: graceFor(settings, EVAL_GRACE_MS),
          secondInterrupt: false,
          budget: "work",
          ...cellCallbacks(call, cell.index),
        },
      );
      const v = verdictOf(r);
      const parts = [joined({ stdout: r.stdout, stderr: r.stderr })];
      if (v.ok && r.value !== undefined && r.value !== "None") parts.push(r.value);
      if (!v.ok && v.error) parts.push(v.error);
      if (v.timedOut)
        parts.push(
          v.killed
            ? `[timed out after ${cell.timeoutMs / 1000} s of work; the cell did not stop, so the Python kernel was killed and its state is gone]`
            : `[timed out after ${cell.timeoutMs / 1000} s of work (time spent awaiting tools and completion() not counted); KeyboardInterrupt was raised, the Python state is kept]`,
        );
      else if (v.killed) parts.push("[the Python kernel died; its state is gone and the next cell starts empty]");
      return {
        status: v.ok ? "complete" : "error",
        output: parts.filter(Boolean).join("\n").trim(),
        exitCode: v.ok ? 0 : (r.outcome.exitCode ?? 1) || 1,
        durationMs: r.outcome.durationMs,
        cancelled: v.cancelled,
        timedOut: v.timedOut,
        lost: v.killed,
        runs: [r],
      };
    },
  };
}
