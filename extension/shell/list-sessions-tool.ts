// `list_sessions {}`: every open session (pid, command, cwd, age, tty, log, wake_armed) and those that exited
// since they were last seen, reported this once and then pruned. `tool_time_utc` lets the model compute a
// yield_until deadline from the host's clock.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import type { ExecSessionInfo } from "../../host/index.ts";
import { utcNow } from "./params.ts";
import { execRenderers } from "./render.ts";
import { listOutputSchema, listSessionsParams } from "./schemas.ts";
import { oneLine } from "./text.ts";
import type { ExecToolDeps } from "./tool-deps.ts";

export const LIST_SESSIONS = "list_sessions";

export function sessionEntry(s: ExecSessionInfo, now: number) {
  return {
    session_id: s.id,
    command: s.command,
    cwd: s.cwd,
    tty: s.tty,
    ...(s.pid !== undefined ? { pid: s.pid } : {}),
    started_at_ms: s.startedAt,
    elapsed_ms: Math.max(0, now - s.startedAt),
    running: s.running,
    state: s.status,
    wake_armed: s.wakeArmed,
    ...(!s.running && typeof s.exit?.code === "number" ? { exit_code: s.exit.code } : {}),
    ...(!s.running && s.exit?.signal ? { signal: s.exit.signal } : {}),
    ...(s.failure ? { failure_message: oneLine(s.failure) } : {}),
    output_bytes_total: s.totalBytes,
    ...(s.logPath ? { log_path: s.logPath } : {}),
  };
}

export function registerListSessionsTool(pi: ExtensionAPI, deps: ExecToolDeps): void {
  pi.registerTool({
    ...execRenderers.list_sessions,
    name: LIST_SESSIONS,
    label: "list_sessions",
    description: "List the shell sessions of this Pi session: live ones, and those that exited since last seen (reported once).",
    promptSnippet: "List live sessions",
    parameters: listSessionsParams,
    outputSchema: listOutputSchema,
    async execute(toolCallId, _params, _signal, _onUpdate, ctx) {
      return deps.journal.record(LIST_SESSIONS, toolCallId, {}, ctx, async () => {
        const { live, exited } = deps.host().exec.list(toolCallId);
        const now = Date.now();
        const sessions = [...live, ...exited].sort((a, b) => a.id - b.id).map((s) => sessionEntry(s, now));
        const tool_time_utc = utcNow(now);
        const lines = sessions.length
          ? sessions.map((s) => {
              const ended = s.running
                ? s.state === "held"
                  ? "  (shell exited, pipe held)"
                  : ""
                : `  [exited${s.exit_code !== undefined ? ` exit_code=${s.exit_code}` : ""}${s.signal ? ` signal=${s.signal}` : ""}; removed from the list]`;
              return `  ${String(s.session_id).padStart(3)}  pid=${String(s.pid ?? "?").padStart(6)}  ${s.tty ? "tty " : "pipe"}  ${`${(s.elapsed_ms / 1000).toFixed(1)}s`.padStart(8)}${s.wake_armed ? " [wake]" : ""}  ${oneLine(s.command, 60)}${ended}\n        log: ${s.log_path ?? "(none)"}`;
            })
          : ["  (no live sessions)"];
        const header = exited.length
          ? `exec sessions (${live.length} live, ${exited.length} just exited):`
          : `exec sessions (${live.length}):`;
        const details = { sessions, active_count: live.length, just_exited_count: exited.length, tool_time_utc };
        return {
          content: [{ type: "text" as const, text: `${header}\n${lines.join("\n")}\ntool_time_utc: ${tool_time_utc}` }],
          details,
          structuredContent: details,
        };
      });
    },
  });
}
