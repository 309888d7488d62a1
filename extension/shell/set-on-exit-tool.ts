// `set_on_exit {session_id, on_exit}`: arms or disarms the one completion prompt without touching the process:
// `disarmed`, `already_none`, `armed`, `already_armed` or `too_late`; an unknown id is `found: false`. It reaches
// the tombstone of an evicted session too.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { utcNow } from "./params.ts";
import { execRenderers } from "./render.ts";
import { setOnExitOutputSchema, setOnExitParams } from "./schemas.ts";
import type { ExecToolDeps } from "./tool-deps.ts";

export const SET_ON_EXIT = "set_on_exit";

export function registerSetOnExitTool(pi: ExtensionAPI, deps: ExecToolDeps): void {
  pi.registerTool({
    ...execRenderers.set_on_exit,
    name: SET_ON_EXIT,
    label: "set_on_exit",
    description:
      'Change a session\'s on_exit without killing it. "none" disarms a pending wake (also for an evicted session that already exited); "wake" arms one if the process still runs. A prompt already handed to the agent cannot be recalled.',
    promptSnippet: "Disarm or re-arm on_exit wake for a session",
    promptGuidelines: [
      'If a wake is no longer wanted (wrong command, abandoned job), call set_on_exit with "none" promptly; it does not stop the process.',
    ],
    parameters: setOnExitParams,
    outputSchema: setOnExitOutputSchema,
    async execute(toolCallId, params, _signal, _onUpdate, ctx) {
      return deps.journal.record(SET_ON_EXIT, toolCallId, { ...params }, ctx, async () => {
        if (params.on_exit !== "none" && params.on_exit !== "wake") throw new Error('set_on_exit: on_exit must be "none" or "wake".');
        const r = deps.host().exec.setOnExit(params.session_id, params.on_exit);
        const tool_time_utc = utcNow();
        if (!r.found) {
          const details = { session_id: params.session_id, found: false, tool_time_utc };
          return {
            content: [{ type: "text" as const, text: `No such session: ${params.session_id}\ntool_time_utc: ${tool_time_utc}` }],
            details,
            structuredContent: details,
          };
        }
        const s = r.session;
        const running = s?.running ?? false;
        const details = {
          session_id: params.session_id,
          found: true,
          on_exit: params.on_exit,
          ...(r.status ? { status: r.status } : {}),
          running,
          wake_armed: r.armed,
          ...(s ? { command: s.command } : {}),
          ...(s?.logPath ? { log_path: s.logPath } : {}),
          tool_time_utc,
        };
        const where = s ? (running ? " (process still running)" : " (process already exited)") : " (no open session; its tombstone)";
        const text = `set_on_exit session_id=${params.session_id} on_exit=${params.on_exit} → ${r.status}${where}; ${r.armed ? "wake armed" : "wake not armed"}\ntool_time_utc: ${tool_time_utc}`;
        return { content: [{ type: "text" as const, text }], details, structuredContent: details };
      });
    },
  });
}
