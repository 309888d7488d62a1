// `kill_session {session_id, signal?}`: the signal (normalized: `term`, `INT`, `sigkill`) to the session's process
// group, SIGKILL after 2 s; the wake is suppressed first. A kill that did not land keeps the session, running.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { killDetails, killStructured, killText } from "./envelope.ts";
import { signalName } from "./params.ts";
import { execRenderers } from "./render.ts";
import { killOutputSchema, killSessionParams } from "./schemas.ts";
import type { ExecToolDeps } from "./tool-deps.ts";

export const KILL_SESSION = "kill_session";

export function registerKillSessionTool(pi: ExtensionAPI, deps: ExecToolDeps): void {
  pi.registerTool({
    ...execRenderers.kill_session,
    name: KILL_SESSION,
    label: "kill_session",
    description:
      "Terminate a session's process group: the signal (default SIGTERM), then SIGKILL after 2 s. Also suppresses an armed on_exit wake. Returns the final output; a kill that did not land says so and the session stays.",
    promptSnippet: "Terminate a session",
    parameters: killSessionParams,
    outputSchema: killOutputSchema,
    async execute(toolCallId, params, _signal, _onUpdate, ctx) {
      return deps.journal.record(KILL_SESSION, toolCallId, { ...params }, ctx, async () => {
        const sig = signalName(params.signal);
        if (!sig.ok) throw new Error(`kill_session: ${sig.error}`);
        const r = await deps.host().exec.kill(params.session_id, sig.value, toolCallId);
        const d = killDetails(params.session_id, sig.value, r);
        return {
          content: [{ type: "text" as const, text: killText(d) }],
          details: d,
          structuredContent: killStructured(d),
          ...(d.status === "kill_failed" ? { isError: true } : {}),
        };
      });
    },
  });
}
