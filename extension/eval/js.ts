// eval's JavaScript backend (issue 15): each cell is one run in the JavaScript session `js` (runtime-js/, spoken
// to over docs/protocol-js.md), one runtime per Pi session. oh-my-pi's semantics: the per-cell timeout is a work
// budget (paused while the cell awaits a tool call or completion()); at its end the cell's pending awaits are
// rejected with an AbortError, and a cell that does not end within the grace has its runtime killed.
import type { RunResult, SupervisorHost } from "../../host/index.ts";
import type { CodeEnvironment } from "../environment.ts";
import { EVAL_GRACE_MS, graceFor } from "../notebook/python-cells.ts";
import type { EvalBackend, EvalCallContext, EvalCellInput, EvalCellOutcome } from "./backend.ts";

/** The session of eval's JavaScript cells (`session:js` in the supervisor). */
export const JS_SESSION = "js";

export function jsBackend(links: { getHost: () => SupervisorHost; environment: CodeEnvironment }): EvalBackend {
  return {
    language: "js",
    unavailable: () =>
      links.environment.settings().values.eval.js
        ? undefined
        : "the JavaScript backend is disabled (setting eval.js = false or PI_CODE_EXECUTION_EVAL_JS=0)",
    async runCell(cell: EvalCellInput, call: EvalCallContext): Promise<EvalCellOutcome> {
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
          cell: {
            index: cell.index + 1,
            count: cell.count,
            language: "js",
            ...(cell.title ? { title: cell.title } : {}),
          },
          chdir: call.ctx.cwd,
          result: "value",
          budget: "work",
          escalation: { graceMs: graceFor(settings, EVAL_GRACE_MS) },
        },
        {
          ...(call.tools ? { tools: call.tools } : {}),
          ...(call.signal ? { signal: call.signal } : {}),
          ...(call.onOutput ? { onOutput: (out) => call.onOutput!(joined(out.preview())) } : {}),
          onDisplay: call.display.forCell(cell.index),
        },
      );
      return outcomeOf(r, cell.timeoutMs);
    },
  };
}

/** How a JavaScript cell went, in eval's words: its output, value or error, and what happened to the runtime. */
export function outcomeOf(r: RunResult, timeoutMs: number): EvalCellOutcome {
  const o = r.outcome;
  const lost = o.session?.isLost === true;
  const timedOut = o.stopReason === "timeout";
  const cancelled = o.stopReason === "cancelled";
  // A cell that caught the AbortError and ended by itself completed; its state is kept.
  const caught = (timedOut || cancelled) && !o.killed && !lost && o.exitCode === 0;
  const ok = o.status === "success" || caught;
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
    status: ok ? "complete" : "error",
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

function joined(p: { stdout: string; stderr: string }): string {
  if (!p.stderr) return p.stdout;
  return `${p.stdout}${p.stdout && !p.stdout.endsWith("\n") ? "\n" : ""}${p.stderr}`;
}
