// `/unified-exec-sessions [id|all]` (pi-unified-exec's name) and `/exec-sessions` (this project's first name for it,
// kept for those who learned it): the user's way to see the live shell sessions and stop one (or all) without the
// model: SIGTERM, SIGKILL after 2 s, the wake suppressed first, as kill_session does.
import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { SupervisorHost } from "../../host/index.ts";
import type { ExecSessionInfo } from "../../host/index.ts";
import { execSessionLine, STATUS_PREFIX } from "./status.ts";
import { show } from "../commands/show.ts";

/** pi-unified-exec's command name first; both run the same handler. */
export const EXEC_SESSIONS_COMMANDS = ["unified-exec-sessions", "exec-sessions"] as const;

const plural = (n: number) => `session${n === 1 ? "" : "s"}`;

export function registerExecSessionsCommand(pi: ExtensionAPI, peekHost: () => SupervisorHost | undefined, after: () => void): void {
  for (const name of EXEC_SESSIONS_COMMANDS) {
    pi.registerCommand(name, {
      description: `List the live shell sessions and stop one or all without asking the model: /${name} [id|all]`,
      getArgumentCompletions: (prefix: string) => {
        const ids = [...(peekHost()?.exec.sessions() ?? []).filter((s) => s.running).map((s) => String(s.id)), "all"];
        const hits = ids.filter((n) => n.startsWith(prefix.trim()));
        return hits.length ? hits.map((n) => ({ value: n, label: n })) : null;
      },
      handler: (args: string, ctx: ExtensionCommandContext) => run(name, args, ctx),
    });
  }

  async function run(name: string, args: string, ctx: ExtensionCommandContext): Promise<void> {
    const host = peekHost();
    const live = (host?.exec.sessions() ?? []).filter((s) => s.running);
    const arg = args.trim();
    if (live.length === 0) return show(ctx, `${STATUS_PREFIX} no live sessions`);
    let chosen: ExecSessionInfo[];
    if (arg === "all") chosen = live;
    else if (arg) {
      const found = live.find((s) => String(s.id) === arg.replace(/^#/, ""));
      if (!found)
        return show(ctx, `${STATUS_PREFIX} no live session ${arg} (live: ${live.map((s) => s.id).join(", ")}).`, "warning");
      chosen = [found];
    } else if (!ctx.hasUI) {
      return show(
        ctx,
        [`${STATUS_PREFIX} ${live.length} live ${plural(live.length)} (/${name} <id|all> stops them):`, ...live.map((s) => `  ${execSessionLine(s)}`)].join("\n"),
      );
    } else {
      const rows = live.map((s) => execSessionLine(s));
      const all = `Kill all ${live.length} ${plural(live.length)}`;
      const choice = await ctx.ui.select(
        `${STATUS_PREFIX} ${live.length} live ${plural(live.length)} — select to kill (Esc to cancel)`,
        [...rows, all],
      );
      if (choice === undefined) return;
      chosen = choice === all ? live : live.filter((_, i) => rows[i] === choice);
    }
    const outcomes = await Promise.all(chosen.map((s) => host!.exec.kill(s.id, "SIGTERM", `${name}:${s.id}:${Date.now()}`)));
    after();
    // A session already being stopped (an eviction at the cap that has not closed yet) was listed as live, and the
    // kill waited for its end, but that stop was not this command's: counted, it made "killed 65" of 64 sessions.
    const killed = outcomes.filter((o) => o?.killed && !o.alreadyStopping).length;
    const failed = outcomes.filter((o) => o && !o.killed && o.running).length;
    show(
      ctx,
      `${STATUS_PREFIX} killed ${killed} ${plural(killed)}${failed ? `; ${failed} did not confirm exit (still listed)` : ""}`,
      failed ? "warning" : "info",
    );
  }
}
