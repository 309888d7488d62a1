// `/code-restart [name|all]` starts sessions again empty; `/code-sessions` picks a session (or all) and stops it.
// Both act on the supervisor directly, without going through the model. Sessions are Python or JavaScript
// runtimes of several surfaces: each row names its runtime (extension/session-status.ts, runtimeLabel).
import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { SessionInfo, SupervisorHost } from "../../host/index.ts";
import { sessionLines } from "../session-status.ts";
import { show } from "./show.ts";

const ALL = "all";
const NONE = "No code sessions (Python or JavaScript) are running.";

function completions(peekHost: () => SupervisorHost | undefined) {
  return (prefix: string) => {
    const names = [...(peekHost()?.sessions() ?? []).map((s) => s.name), ALL];
    const hits = names.filter((n) => n.startsWith(prefix.trim()));
    return hits.length ? hits.map((n) => ({ value: n, label: n })) : null;
  };
}

/** The sessions an argument names: one by name, `all`, or (no argument) the only one or the user's pick. */
async function pick(
  ctx: ExtensionCommandContext,
  sessions: SessionInfo[],
  arg: string,
  title: string,
  notebook: string,
): Promise<SessionInfo[] | string> {
  if (sessions.length === 0) return NONE;
  if (arg === ALL) return sessions;
  if (arg) {
    const found = sessions.find((s) => s.name === arg);
    return found ? [found] : `No live session "${arg}" (live: ${sessions.map((s) => s.name).join(", ")}).`;
  }
  if (sessions.length === 1 && !ctx.hasUI) return sessions;
  if (!ctx.hasUI) return `Name a session or "all": ${sessions.map((s) => s.name).join(", ")}.`;
  const rows = sessionLines(sessions, notebook);
  const allRow = `all ${sessions.length} sessions`;
  const choice = await ctx.ui.select(title, [...rows, ...(sessions.length > 1 ? [allRow] : [])]);
  if (choice === undefined) return "Nothing was changed.";
  if (choice === allRow) return sessions;
  const i = rows.indexOf(choice);
  return i >= 0 ? [sessions[i]] : "Nothing was changed.";
}

export function registerSessionCommands(
  pi: ExtensionAPI,
  getHost: () => SupervisorHost,
  peekHost: () => SupervisorHost | undefined,
  notebook: () => string,
): void {
  pi.registerCommand("code-restart", {
    description:
      "Restart a code session empty (same name and directory, current interpreter): /code-restart [name|all]",
    getArgumentCompletions: completions(peekHost),
    handler: async (args: string, ctx: ExtensionCommandContext) => {
      const host = peekHost();
      const chosen = await pick(
        ctx,
        host?.sessions() ?? [],
        args.trim(),
        "Restart which session? (its variables are lost)",
        notebook(),
      );
      if (typeof chosen === "string") return show(ctx, chosen);
      const lines: string[] = [];
      for (const s of chosen) {
        const r = await getHost().restartSession(s.name);
        const o = r?.outcome;
        if (!o) lines.push(`Session "${s.name}" is no longer running.`);
        else if (o.status === "success")
          lines.push(
            `Session "${s.name}" restarted: ${o.runner?.language === "js" ? "Node" : "Python"} ${o.runner?.python ?? "?"}, pid ${
              getHost()
                .sessions()
                .find((x) => x.name === s.name)?.pid ?? "?"
            }; its namespace is empty.`,
          );
        else lines.push(`Session "${s.name}" could not be restarted: ${o.message ?? o.status}.`);
      }
      show(ctx, lines.join("\n"), lines.some((l) => l.includes("could not")) ? "warning" : "info");
    },
  });

  pi.registerCommand("code-sessions", {
    description:
      "List the code sessions (Python, JavaScript) and stop one (or all) without asking the model: /code-sessions [name|all]",
    getArgumentCompletions: completions(peekHost),
    handler: async (args: string, ctx: ExtensionCommandContext) => {
      const host = peekHost();
      const sessions = host?.sessions() ?? [];
      if (!ctx.hasUI && !args.trim()) {
        return show(
          ctx,
          sessions.length
            ? ["Code sessions:", ...sessionLines(sessions, notebook()).map((l) => `  ${l}`)].join("\n")
            : NONE,
        );
      }
      const chosen = await pick(ctx, sessions, args.trim(), "Stop which session? (its variables are lost)", notebook());
      if (typeof chosen === "string") return show(ctx, chosen);
      await Promise.all(chosen.map((s) => host!.stopSession(s.name)));
      const names = chosen.map((s) => `"${s.name}"`).join(", ");
      show(
        ctx,
        `Stopped ${chosen.length === 1 ? "session" : "sessions"} ${names}: ${chosen.length === 1 ? "its" : "their"} state is gone; a later run with the same name starts empty.`,
      );
    },
  });
}
