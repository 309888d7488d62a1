// eval's JavaScript backend (issue 15): each cell is one run in the JavaScript session `js` (runtime-js/, spoken
// to over docs/protocol-js.md), one runtime per Pi session. oh-my-pi's semantics: the per-cell timeout is a work
// budget (paused while the cell awaits a tool call or completion()); at its end the cell's pending awaits are
// rejected with an AbortError, and a cell that does not end within the grace has its runtime killed.
import type { RunResult, SupervisorHost } from "../../host/index.ts";
import type { CodeEnvironment } from "../environment.ts";
import { EVAL_GRACE_MS, cellEnding, graceFor } from "../shared/notebook/python-cells.ts";
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

/** The session of eval's JavaScript cells (`session:js` in the supervisor). */
export const JS_SESSION = "js";

export function jsBackend(links: { getHost: () => SupervisorHost; environment: CodeEnvironment }): EvalBackend {
  return {
    language: "js",
    unavailable: async () => enabledReason("js", links.environment.settings().values.eval.js, process.env),
    // One cell a run: the JavaScript runtime takes no batch.
    batches: false,
    async runCells(cells: readonly EvalCellInput[], call: EvalCallContext): Promise<EvalCellOutcome> {
      const cell = cells[0];
      const settings = links.environment.settings();
      const r = await links.getHost().run(
        {
          code: cell.code,
          cwd: call.ctx.cwd,
          timeoutMs: Math.max(1, Math.round(cell.timeoutMs)),
          session: JS_SESSION,
          language: "js",
          reset: cell.reset,
          surface: "eval",
          cell: cellRef(cell, "js"),
          chdir: call.ctx.cwd,
          result: "value",
          budget: "work",
          escalation: { graceMs: graceFor(settings, EVAL_GRACE_MS) },
        },
        cellCallbacks(call, () => cell.index),
      );
      return outcomeOf(r, cell.index, cell.timeoutMs);
    },
  };
}

/** How a JavaScript cell went, in eval's words: its output, value or error, and what happened to the runtime. */
export function outcomeOf(r: RunResult, index: number, timeoutMs: number): EvalCellOutcome {
  const o = r.outcome;
  // A cell that caught the AbortError and ended by itself completed (`ok`); its state is kept.
  const { ok, lost, timedOut, cancelled } = cellEnding(o);
  const parts = [joined({ stdout: r.stdout, stderr: r.stderr }).replace(/\n$/, "")];
  if (r.value !== undefined) parts.push(r.value);
  if (r.exception) parts.push(r.exception.trimEnd());
  if (o.status === "setup_error") parts.push(o.message ?? "the JavaScript cell could not be run");
  if (o.status === "policy_error")
    parts.push(
      "[a tool call of this cell was blocked by a policy: the eval call is an error even though the cell went on]",
    );
  const fresh = "the JavaScript state is gone and the next js cell starts a fresh runtime";
  if (timedOut)
    parts.push(
      lost
        ? `[timed out after ${timeoutMs / 1000} s of work; the cell did not end after its pending awaits were rejected, so the JavaScript runtime was killed: ${fresh}]`
        : `[timed out after ${timeoutMs / 1000} s of work (time spent awaiting tools and completion() not counted); its pending awaits were rejected with an AbortError; the JavaScript state is kept]`,
    );
  else if (cancelled && lost)
    parts.push(`[cancelled; the cell did not end, so the JavaScript runtime was killed: ${fresh}]`);
  else if (lost) parts.push(`[the JavaScript runtime ${ended(o)} during this cell: ${fresh}]`);
  return {
    index,
    status: ok ? "complete" : "error",
    // Stryker disable next-line MethodExpression: equivalent, only the first part can be empty (a value or an
    // exception is never ''), and trim() drops it.
    output: parts.filter(Boolean).join("\n").trim(),
    exitCode: ok ? 0 : (o.exitCode ?? 1) || 1,
    durationMs: o.durationMs,
    cancelled,
    timedOut,
    lost,
    runs: [r],
  };
}

function ended(o: RunResult["outcome"]): string {
  if (o.signal) return `was killed by ${o.signal}`;
  if (o.exitCode !== undefined) return `exited with code ${o.exitCode}`;
  return `failed (${o.message ?? "unknown cause"})`;
}
