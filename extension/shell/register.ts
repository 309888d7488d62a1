// The unified-exec surface in Pi: the five tools, `--keep-builtin-bash`, `/unified-exec-sessions` (and
// `/exec-sessions`), the footer, eviction notices and the post-/tree widget, Pi's finalized tool results reaching the
// wake coordinator (`tool_execution_end`), retries at `agent_settled`, and due wakes delivered as one follow-up
// prompt. Enabled by `exec` in the `tools` setting (or `exec: true`); while enabled the built-in `bash` leaves the
// active set unless `--keep-builtin-bash`.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { JournalLink, SupervisorHost } from "../../host/index.ts";
import { execEnabled } from "../../store/settings.ts";
import { registerExecSessionsCommand } from "./commands.ts";
import type { CodeEnvironment } from "../environment.ts";
import { EXEC_COMMAND, registerExecCommandTool } from "./exec-command-tool.ts";
import { KILL_SESSION, registerKillSessionTool } from "./kill-session-tool.ts";
import { LIST_SESSIONS, registerListSessionsTool } from "./list-sessions-tool.ts";
import { registerSetOnExitTool, SET_ON_EXIT } from "./set-on-exit-tool.ts";
import { registerWriteStdinTool, WRITE_STDIN } from "./write-stdin-tool.ts";
import { ExecStatus, STATUS_PREFIX } from "./status.ts";
import { MAX_SESSIONS } from "./params.ts";
import type { Footer } from "../footer.ts";
import { WAKE_MESSAGE_TYPE, wakeMessage } from "./wake.ts";
import type { ExecToolDeps } from "./tool-deps.ts";

export const EXEC_TOOLS: readonly string[] = [EXEC_COMMAND, WRITE_STDIN, KILL_SESSION, LIST_SESSIONS, SET_ON_EXIT];
export const KEEP_BASH_FLAG = "keep-builtin-bash";

export interface ExecLinks {
  getHost: () => SupervisorHost;
  peekHost: () => SupervisorHost | undefined;
  journal: JournalLink;
  environment: CodeEnvironment;
  /** The extension's footer item (extension/footer.ts); the shells are its `exec` part. */
  footer: Footer;
  /** Whether the surface is chosen (extension/surfaces.ts: the `tools` setting, `exec: true` or `--code-tools`);
   * default: the settings alone. */
  enabled?: () => boolean;
}

export function registerExec(pi: ExtensionAPI, links: ExecLinks): void {
  const status = new ExecStatus(links.footer);
  const wired = new WeakSet<SupervisorHost>();
  const refresh = () => status.update(links.peekHost()?.exec.sessions() ?? []);
  const host = () => {
    const h = links.getHost();
    if (!wired.has(h)) {
      wired.add(h);
      h.exec.onWake((notices) => {
        const m = wakeMessage(notices);
        pi.sendMessage(
          { customType: WAKE_MESSAGE_TYPE, content: m.content, display: true, details: m.details },
          { triggerTurn: true, deliverAs: "followUp" },
        );
      });
      h.exec.onChange((e) => {
        refresh();
        // pi-unified-exec says each LRU eviction: a process the model may still count on is gone.
        if (e.type === "exec.evicting")
          status.notify(`${STATUS_PREFIX} evicted session ${e.id} (LRU, over cap ${MAX_SESSIONS})`, "warning");
      });
    }
    return h;
  };
  const deps: ExecToolDeps = { host, journal: links.journal, settings: () => links.environment.settings() };
  registerExecCommandTool(pi, deps);
  registerWriteStdinTool(pi, deps);
  registerKillSessionTool(pi, deps);
  registerListSessionsTool(pi, deps);
  registerSetOnExitTool(pi, deps);
  registerExecSessionsCommand(pi, links.peekHost, refresh);
  pi.registerFlag(KEEP_BASH_FLAG, {
    type: "boolean",
    default: false,
    description: "Keep Pi's built-in bash tool next to exec_command/write_stdin (by default it leaves the active set).",
  });

  // Whether the surface is on, and whether it was this code that took `bash` out of the active set.
  let applied: boolean | undefined;
  let removedBash = false;
  const apply = (enabled: boolean) => {
    if (applied === enabled) return;
    let active: string[];
    try {
      active = pi.getActiveTools();
    } catch {
      return;
    }
    let next = active;
    if (enabled) {
      if (applied === false) next = [...new Set([...next, ...EXEC_TOOLS])];
      if (pi.getFlag(KEEP_BASH_FLAG) !== true && next.includes("bash")) {
        next = next.filter((n) => n !== "bash");
        removedBash = true;
      }
    } else {
      next = next.filter((n) => !EXEC_TOOLS.includes(n));
      if (removedBash && !next.includes("bash")) next = [...next, "bash"];
      removedBash = false;
    }
    if (next.length !== active.length || next.some((n, i) => n !== active[i])) pi.setActiveTools(next);
    applied = enabled;
  };
  const enabled = (values: Parameters<typeof execEnabled>[0]) =>
    links.enabled ? links.enabled() : execEnabled(values);
  links.environment.onChange((s) => apply(enabled(s.values)));

  pi.on("session_start", async (_event, ctx: ExtensionContext) => {
    status.setUI(ctx);
    applied = undefined;
    removedBash = false;
    apply(enabled(links.environment.settings().values));
    refresh();
  });
  pi.on("session_tree", async (_event, ctx: ExtensionContext) => {
    status.setUI(ctx);
    status.showTreeWidget(links.peekHost()?.exec.sessions() ?? []);
  });
  pi.on("agent_start", async () => status.clearWidget());
  // A finalized result: an exit it returned consumes the wake; an error or cancelled one releases its lease.
  // Every tool's end comes here: only a shell tool's changes the footer.
  pi.on("tool_execution_end", async (event) => {
    if (links.peekHost()?.exec.finalize(event.toolCallId, event.isError !== true)) refresh();
  });
  // A safe point to retry a failed delivery.
  pi.on("agent_settled", async () => links.peekHost()?.exec.agentSettled());
  pi.on("session_shutdown", async () => status.detach());
}
