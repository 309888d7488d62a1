// `exec_command {cmd, workdir?, shell?, tty?, cols?, rows?, yield_time_ms?, on_exit?}`: starts the command in a
// shell session and stays attached up to the window; an exit inside it is returned directly (no session kept),
// otherwise the result names the session_id to drive with write_stdin.
import { resolve } from "node:path";
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { processDetails, processStructured, processText } from "./envelope.ts";
import { backendDetails } from "../shared/backend-mark.ts";
import { liveFeed, SHORT_UPDATE_MS } from "./live.ts";
import { DEFAULT_EXEC_YIELD_MS, MAX_SESSIONS, ptySize, PTY_COLS, PTY_ROWS, WARNING_SESSIONS, yieldWindow } from "./params.ts";
import { STATUS_PREFIX } from "./status.ts";
import { execRenderers } from "./render.ts";
import { execCommandParams, processOutputSchema } from "./schemas.ts";
import type { ExecToolDeps } from "./tool-deps.ts";

export const EXEC_COMMAND = "exec_command";

export function registerExecCommandTool(pi: ExtensionAPI, deps: ExecToolDeps): void {
  pi.registerTool({
    ...execRenderers.exec_command,
    name: EXEC_COMMAND,
    label: "exec_command",
    description:
      'Run a command in a persistent shell session. Returns `exit_code` if it finished within yield_time_ms, else `session_id` (drive it with write_stdin, stop it with kill_session). on_exit defaults to "none"; pass "wake" only when the human explicitly wants one automatic follow-up when it exits unobserved (set_on_exit changes it later).',
    promptSnippet: "Run a shell command; long-running ones yield a session_id",
    promptGuidelines: [
      "Prefer dedicated file tools when available (read/grep/find/ls); otherwise use exec_command with fast tools such as rg.",
      "Use a small yield_time_ms (~500 ms) for quick one-shots and the 10 s default for most commands; dev servers, REPLs, ssh and sudo return a session_id you drive with write_stdin.",
      "For a long non-interactive command, start with a short yield to get a session_id, then wait with an empty write_stdin poll and a finite yield_time_ms suited to the job.",
      'on_exit "wake" only when the human explicitly wants auto-resume on an unobserved exit, never for servers or watchers; disarm a mistaken wake with set_on_exit(session_id, "none").',
    ],
    parameters: execCommandParams,
    outputSchema: processOutputSchema,
    async execute(toolCallId, params, signal, onUpdate, ctx) {
      // The journal keeps the call's shape, not the command text (as code_execution keeps no script text).
      const { cmd, ...rest } = params;
      const journalArgs = { ...rest, cmdBytes: typeof cmd === "string" ? Buffer.byteLength(cmd) : 0 };
      return deps.journal.record(EXEC_COMMAND, toolCallId, journalArgs, ctx, async () => {
        if (typeof params.cmd !== "string" || params.cmd.trim() === "") throw new Error("cmd must be a non-empty command.");
        const window = yieldWindow(params.yield_time_ms, DEFAULT_EXEC_YIELD_MS);
        if (!window.ok) throw new Error(window.error);
        const tty = params.tty === true;
        const cwd = params.workdir ? resolve(ctx.cwd, params.workdir) : ctx.cwd;
        const onExit = params.on_exit === "wake" ? "wake" : "none";
        const live = onUpdate
          ? liveFeed(onUpdate as never, { operation: EXEC_COMMAND, command: params.cmd, cwd, yield_time_ms: window.value }, SHORT_UPDATE_MS)
          : undefined;
        const r = await deps.host().exec.start({
          command: params.cmd,
          cwd,
          ...(params.shell !== undefined ? { shell: params.shell } : {}),
          tty,
          cols: ptySize(params.cols, PTY_COLS),
          rows: ptySize(params.rows, PTY_ROWS),
          yieldMs: window.value,
          onExit,
          callId: toolCallId,
          ...(signal ? { signal } : {}),
          ...(live ? { onStart: (io) => live.watch(io) } : {}),
        });
        live?.stop();
        if (!r.ok) throw new Error(`exec_command: ${r.error}`);
        if (r.value.running) warnNearCap(r.value.openSessions ?? 0, ctx);
        const d = processDetails(EXEC_COMMAND, r.value, { onExit, wantedWake: onExit === "wake", yieldTimeMs: window.value });
        Object.assign(d, backendDetails(deps.host().backend()));
        return {
          content: [{ type: "text" as const, text: processText(d) }],
          details: d,
          // A start that failed is a result (failure_message), as pi-unified-exec reports it, not a tool error.
          structuredContent: processStructured(d),
        };
      });
    },
  });
}

/** pi-unified-exec's warning as the registry nears its cap (eviction starts at 64): from 60 open sessions on, each
 * new background session tells the user how many are open (counted as it started), so the LRU eviction that follows
 * is no surprise. */
function warnNearCap(open: number, ctx: ExtensionContext): void {
  if (open < WARNING_SESSIONS || !ctx.hasUI) return;
  try {
    ctx.ui.notify(`${STATUS_PREFIX} ${open}/${MAX_SESSIONS} sessions open`, "warning");
  } catch {
    // A UI that went away (reload) is not an error of ours.
  }
}
