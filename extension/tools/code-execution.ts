// The `code_execution` tool: validates parameters, sends the run to the supervisor, streams a live preview and
// maps the outcome to the model-visible text and details.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import type { SupervisorHost } from "../../actors/host.ts";
import { checkParams, codeExecutionSchema, maxTimeoutSeconds } from "../params.ts";
import { detailsOf, liveText, resultText, type CodeExecutionDetails, type RunningDetails } from "../format.ts";

const DESCRIPTION = [
  "Run Python code and get its output.",
  'Without `session`, each call runs in a fresh process. With `session: "name"`, code runs in a persistent Python process:',
  "globals, imports, functions, open clients, the current directory and the asyncio event loop survive across calls naming it.",
  "`reset: true` restarts the session empty. The value of a final expression is printed (end it with `;` to suppress).",
  "Top-level `await` works. stdin is not available. On timeout or cancel the code gets one KeyboardInterrupt; if it does",
  "not stop within a short grace the process is killed and a session loses its state (the result says which).",
].join(" ");

const GUIDELINES = [
  "Use code_execution with a `session` name when later steps need earlier variables or imports; omit it for one-off scripts.",
  "Relative paths and local imports in code_execution resolve from the working directory; print what you need to see.",
  "If a code_execution result says a session lost its state, re-create what you need before relying on earlier variables.",
];

/** Updates while a run streams output are throttled to this interval. */
const UPDATE_INTERVAL_MS = 100;

export function registerCodeExecutionTool(pi: ExtensionAPI, getHost: () => SupervisorHost): void {
  const maxTimeout = maxTimeoutSeconds();
  pi.registerTool({
    name: "code_execution",
    label: "Python",
    description: DESCRIPTION,
    promptSnippet: "Run Python in a fresh process or a named persistent session",
    promptGuidelines: GUIDELINES,
    parameters: codeExecutionSchema(maxTimeout),
    executionMode: "sequential",
    async execute(_toolCallId, params, signal, onUpdate, ctx) {
      const checked = checkParams(params, maxTimeout);
      if (!checked.ok) throw new Error(checked.error);
      const p = checked.value;
      const supervisor = getHost();
      let last = 0;
      let timer: NodeJS.Timeout | undefined;
      const result = await supervisor.run(
        {
          code: p.code,
          cwd: ctx.cwd,
          timeoutMs: p.timeoutMs,
          ...(p.session ? { session: p.session } : {}),
          reset: p.reset,
        },
        {
          ...(signal ? { signal } : {}),
          ...(onUpdate
            ? {
                onOutput: (output) => {
                  const push = () => {
                    timer = undefined;
                    last = Date.now();
                    onUpdate({
                      content: [{ type: "text", text: liveText(output.preview()) }],
                      details: { status: "running" } as RunningDetails as never,
                    });
                  };
                  if (timer) return;
                  const wait = UPDATE_INTERVAL_MS - (Date.now() - last);
                  if (wait <= 0) push();
                  else timer = setTimeout(push, wait);
                },
              }
            : {}),
        },
      );
      if (timer) clearTimeout(timer);
      const details: CodeExecutionDetails = detailsOf(result);
      const text = resultText(result, { timeoutMs: p.timeoutMs, graceMs: supervisor.limits.graceMs, reset: p.reset });
      return {
        content: [{ type: "text", text }],
        details,
        ...(result.outcome.status !== "success" ? { isError: true } : {}),
      };
    },
  });
}
