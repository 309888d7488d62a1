// eval's Python backend: cells run in the notebook session (the `python` tool's kernel), with oh-my-pi's semantics:
// the per-cell timeout is a work budget (paused while the cell awaits a tool call or completion()), the trailing
// value shows like IPython's output, a timeout sends SIGINT and kills after the grace. Consecutive Python cells go to
// the kernel as one run (a batch, docs/protocol.md "Notebook cells"): one round trip, each cell still with its own
// timeout (the run's deadline starts again at each cell, RunRequest `cellTimeoutsMs`).
import type { CellPart, OutputMark, RunResult, SupervisorHost } from "../../host/index.ts";
import type { CodeEnvironment } from "../environment.ts";
import {
  EVAL_GRACE_MS,
  graceFor,
  lastCellPart,
  runPyCell,
  verdictOf,
  type CellVerdict,
} from "../shared/notebook/python-cells.ts";
import {
  cellCallbacks,
  cellRef,
  enabledReason,
  joined,
  type EvalBackend,
  type EvalCellInput,
  type EvalCellOutcome,
} from "./backend.ts";

export function pythonBackend(links: { getHost: () => SupervisorHost; environment: CodeEnvironment }): EvalBackend {
  return {
    language: "py",
    batches: true,
    async unavailable(cwd) {
      const settings = links.environment.settings();
      const off = enabledReason("py", settings.values.eval.py, process.env);
      if (off) return off;
      // A live notebook session already has its interpreter; else one must be found before any cell runs.
      if (links.getHost().sessionTable()[settings.values.notebookSession]?.status === "alive") return undefined;
      const found = await links.environment.interpreter.resolve(cwd);
      return found.ok ? undefined : `no Python interpreter: ${found.error.replace(/\.$/, "")}`;
    },
    async runCells(cells, call, ended): Promise<EvalCellOutcome> {
      const settings = links.environment.settings();
      const [first, ...rest] = cells;
      /** The cell running (in `cells`), and where its output starts in the run's. */
      let current = 0;
      let from: OutputMark | undefined;
      const r = await runPyCell(
        {
          code: first.code,
          ...(rest.length ? { batch: rest.map((c) => c.code), cellTimeoutsMs: rest.map((c) => c.timeoutMs) } : {}),
          cell: cellRef(first, "py"),
          timeoutMs: first.timeoutMs,
          reset: first.reset,
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
          ...cellCallbacks(
            call,
            () => cells[current].index,
            () => from,
          ),
          onCell: (k, part, next) => {
            ended(cellOutcome(cells[k], part, COMPLETED, []));
            current = k + 1;
            from = next;
          },
        },
      );
      // The last cell run ended with the run.
      return cellOutcome(cells[current], lastCellPart(r), verdictOf(r), [r], r);
    },
  };
}

const COMPLETED: CellVerdict = { ok: true, cancelled: false, timedOut: false, killed: false };

/** A cell's outcome in eval's words: what it printed, its value or error, and what its timeout or kernel did. */
function cellOutcome(
  cell: EvalCellInput,
  part: Pick<CellPart, "stdout" | "stderr" | "value" | "durationMs">,
  v: CellVerdict,
  runs: RunResult[],
  run?: RunResult,
): EvalCellOutcome {
  const parts = [joined({ stdout: part.stdout, stderr: part.stderr })];
  if (v.ok && part.value !== undefined && part.value !== "None") parts.push(part.value);
  if (!v.ok && v.error) parts.push(v.error);
  if (v.timedOut)
    parts.push(
      v.killed
        ? `[timed out after ${cell.timeoutMs / 1000} s of work; the cell did not stop, so the Python kernel was killed and its state is gone]`
        : `[timed out after ${cell.timeoutMs / 1000} s of work (time spent awaiting tools and completion() not counted); KeyboardInterrupt was raised, the Python state is kept]`,
    );
  else if (v.killed) parts.push("[the Python kernel died; its state is gone and the next cell starts empty]");
  return {
    index: cell.index,
    status: v.ok ? "complete" : "error",
    // Stryker disable next-line MethodExpression: equivalent, only the first part can be empty, and trim() drops it.
    output: parts.filter(Boolean).join("\n").trim(),
    exitCode: v.ok ? 0 : (run?.outcome.exitCode ?? 1) || 1,
    durationMs: part.durationMs,
    cancelled: v.cancelled,
    timedOut: v.timedOut,
    lost: v.killed,
    runs,
  };
}
