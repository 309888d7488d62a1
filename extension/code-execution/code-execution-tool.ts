// The `code_execution` tool: validates parameters, sends the run to the supervisor, streams a live preview and
// maps the outcome to the model-visible text and details.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { keepOutput, keepScript, type JournalLink, type SupervisorHost } from "../../host/index.ts";
import { checkParams, codeExecutionSchema, DEFAULT_TIMEOUT_S, maxTimeoutSeconds } from "./params.ts";
import { detailsOf, resultText, type CodeExecutionDetails } from "./result.ts";
import { backendDetails } from "../shared/backend-mark.ts";
import { liveUpdates } from "./live.ts";
import { codeExecutionRenderers } from "./render.ts";
import type { OutputRef } from "../../store/artifacts.ts";
import { resolveSource } from "./source-tool.ts";
import { resolveLegacySource } from "./legacy-refs.ts";
import { createRunTools, outerUsage } from "../shared/calls.ts";
import { DisplayCollector, type DisplayLimits } from "../shared/display/collector.ts";
import { withCompletion, type CompletionModels } from "../shared/completion.ts";
import { mark } from "../../lib/marks.ts";

const DESCRIPTION = [
  "Run Python code and get its output.",
  'Without `session`, each call runs in a fresh process. With `session: "name"`, code runs in a persistent Python process:',
  "globals, imports, functions, open clients, the current directory and the asyncio event loop survive across calls naming it.",
  "`reset: true` restarts the session empty. The value of a final expression is printed (end it with `;` to suppress).",
  "Top-level `await` works. stdin is not available. On timeout or cancel the code gets one KeyboardInterrupt; if it does",
  "not stop within a short grace the process is killed and a session loses its state (the result says which).",
  "Results show at most 20 KiB: longer output is previewed (head and tail) and saved under an `outputId`.",
  "Each script is saved under a `sourceId`; pass `sourceId` instead of `code` to rerun that exact script.",
  "Third-party packages: declare them in a PEP 723 block at the top of the script (`# /// script`, then",
  '`# dependencies = ["requests<3"]`, then `# ///`); they are installed before the code runs and the timeout counts it.',
].join(" ");

const GUIDELINES = [
  "Use code_execution with a `session` name when later steps need earlier variables or imports; omit it for one-off scripts.",
  "Relative paths and local imports in code_execution resolve from the working directory; print what you need to see.",
  "If a code_execution result says a session lost its state, re-create what you need before relying on earlier variables.",
  "When code_execution reports ModuleNotFoundError, declare the package in a PEP 723 block instead of running pip yourself.",
  "Older code_execution scripts may appear as `sourceId` references; read one with code_execution_source, or rerun it by passing the sourceId.",
  "A `sourceRef` object from an earlier session works the same way: pass it unchanged (never put a `<code_execution_source_redacted ...>` marker in `code`).",
];

export interface CodeExecutionToolOptions {
  /** Default and largest `timeout`, in seconds (settings; read at registration: re-register when they change). */
  timeouts?: { defaultSeconds: number; maxSeconds: number };
  /** Rich display limits (settings `display.*`), read at each call. */
  display?: () => DisplayLimits;
  /** completion()'s "smol" and "slow" models (settings `completionModels`). */
  completionModels?: () => CompletionModels;
}

export function registerCodeExecutionTool(
  pi: ExtensionAPI,
  getHost: () => SupervisorHost,
  journal: JournalLink,
  options: CodeExecutionToolOptions = {},
): void {
  const maxTimeout = options.timeouts?.maxSeconds ?? maxTimeoutSeconds();
  const defaultTimeout = options.timeouts?.defaultSeconds ?? DEFAULT_TIMEOUT_S;
  pi.registerTool({
    ...codeExecutionRenderers,
    name: "code_execution",
    label: "Python",
    description: DESCRIPTION,
    promptSnippet: "Run Python in a fresh process or a named persistent session",
    promptGuidelines: GUIDELINES,
    parameters: codeExecutionSchema(maxTimeout, defaultTimeout),
    executionMode: "sequential",
    async execute(toolCallId, params, signal, onUpdate, ctx) {
      mark("tool.execute");
      return journal.record("code_execution", toolCallId, journalArguments(params), ctx, async (note) => {
        const checked = checkParams(params, maxTimeout, defaultTimeout);
        if (!checked.ok) throw new Error(checked.error);
        const p = checked.value;
        // A sourceId reruns the exact verified script; other code is kept under its sourceId while it runs (the
        // host decides when it is written: host/artifacts.ts).
        const code =
          p.sourceId !== undefined
            ? await resolveSource(p.sourceId, ctx)
            : p.sourceRef
              ? await resolveLegacySource(p.sourceRef, ctx) // an earlier session's reference: saved anew below
              : p.code!;
        const script = keepScript(code, p.sourceId);
        const supervisor = getHost();
        // The Pi tools this run's Python may await (extension/shared/calls.ts), as callable at this moment.
        const tools = withCompletion(
          createRunTools(pi, ctx, toolCallId),
          ctx,
          options.completionModels ?? (() => ({ smol: undefined, slow: undefined })),
        );
        // The sourceId is the script's digest: known before the file is saved, so every update can name it.
        const tags = {
          sourceId: script.sourceId,
          ...(p.session ? { session: p.session } : {}),
        };
        const live = onUpdate ? liveUpdates(onUpdate, tags) : undefined;
        const display = new DisplayCollector(options.display?.() ?? { maxImages: 8, maxImageBytes: 5 * 1024 * 1024 });
        const result = await supervisor.run(
          {
            code,
            cwd: ctx.cwd,
            timeoutMs: p.timeoutMs,
            ...(p.session ? { session: p.session } : {}),
            reset: p.reset,
            surface: "code_execution",
          },
          {
            tools,
            onDisplay: display.forCell(0),
            ...(signal ? { signal } : {}),
            ...(live ? { onOutput: live.onOutput, onProgress: live.onProgress } : {}),
          },
        );
        live?.stop();
        note.runId = result.outcome.runId;
        await display.settle();
        const noticeCtx = { timeoutMs: p.timeoutMs, graceMs: supervisor.limits.graceMs, reset: p.reset };
        const shownNotes = display.trailingNotes();
        if (shownNotes.length)
          result.outcome = { ...result.outcome, notes: [...(result.outcome.notes ?? []), ...shownNotes] };
        let rendered = resultText(result, noticeCtx);
        let output: OutputRef | undefined;
        if (!rendered.complete) {
          // The preview leaves output out: the transcript is kept so it can be read back without rerunning (its
          // outputId is known now; when it is written is the host's: host/artifacts.ts).
          const saved = await keepOutput(result.capture);
          if (saved.ok) output = saved.ref;
          rendered = resultText(result, noticeCtx, saved);
        }
        const sourceId = await script.saved;
        const details: CodeExecutionDetails = detailsOf(result, {
          ...(sourceId ? { sourceId } : {}),
          ...(output ? { output } : {}),
        });
        Object.assign(details, display.cellDetails(0), backendDetails(supervisor.backend()));
        journal.run(result, {
          toolCallId,
          surface: "code_execution",
          ...display.countsOf(0),
          ...(sourceId ? { sourceId } : {}),
          ...(output ? { outputId: output.outputId } : {}),
        });
        const usage = outerUsage(result.outcome.nestedCalls);
        return {
          content: [{ type: "text" as const, text: rendered.text }, ...display.imageContent()],
          details,
          ...(usage ? { usage: usage as never } : {}),
          ...(result.outcome.status !== "success" ? { isError: true } : {}),
        };
      });
    },
  });
}

/** What the journal keeps of the parameters: never the script text (the run's source_id names it). */
function journalArguments(params: Record<string, unknown>): Record<string, unknown> {
  const { code, ...rest } = params;
  return typeof code === "string" ? { ...rest, codeBytes: Buffer.byteLength(code, "utf8") } : rest;
}
