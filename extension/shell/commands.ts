// `/exec-sessions [id|all]`: the user's way to see the live shell sessions and stop one (or all) without the
// model: SIGTERM, SIGKILL after 2 s, the wake suppressed first, as kill_session does.
import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { SupervisorHost } from "../../host/index.ts";
import type { ExecSessionInfo } from "../../host/index.ts";
import { execSessionLine } from "./status.ts";
import { show } from "../commands/show.ts";

export function registerExecSessionsCommand(pi: ExtensionAPI, peekHost: () => SupervisorHost | undefined, after: () => void): void {
  pi.registerCommand("exec-sessions", {
    description: "List the live shell sessions and stop one or all without asking the model: /exec-sessions [id|all]",
    getArgumentCompletions: (prefix: string) => {
      const ids = [...(peekHost()?.exec.sessions() ?? []).filter((s) => s.running).map((s) => String(s.id)), "all"];
      const hits = ids.filter((n) => n.startsWith(prefix.trim()));
      return hits.length ? hits.map((n) => ({ value: n, label: n })) : null;
    },
    handler: async (args: string, ctx: ExtensionCommandContext) => {
      const host = peekHost();
      const live = (host?.exec.sessions() ?? []).filter((s) => s.running);
      const arg = args.trim();
      if (live.length === 0) return show(ctx, "exec: no live sessions.");
      let chosen: ExecSessionInfo[];
      if (arg === "all") chosen = live;
      else if (arg) {
        const found = live.find((s) => String(s.id) === arg.replace(/^#/, ""));
        if (!found) return show(ctx, `exec: no live session ${arg} (live: ${live.map((s) => s.id).join(", ")}).`, "warning");
        chosen = [found];
      } else if (!ctx.hasUI) {
        return show(ctx, ["exec sessions (/exec-sessions <id|all> stops them):", ...live.map((s) => `  ${execSessionLine(s)}`)].join("\n"));
      } else {
        const rows = live.map((s) => execSessionLine(s));
        const all = `Kill all ${live.length} session${live.length === 1 ? "" : "s"}`;
        const choice = await ctx.ui.select(`exec: ${live.length} live — select one to kill (Esc to cancel)`, [...rows, all]);
        if (choice === undefined) return;
        chosen = choice === all ? live : live.filter((_, i) => rows[i] === choice);
      }
      const outcomes = await Promise.all(chosen.map((s) => host!.exec.kill(s.id, "SIGTERM", `exec-sessions:${s.id}:${Date.now()}`)));
      after();
      const killed = outcomes.filter((o) => o?.killed).length;
      const failed = outcomes.filter((o) => o && !o.killed && o.running).length;
      show(
        ctx,
        `exec: killed ${killed} session${killed === 1 ? "" : "s"}${failed ? `; ${failed} did not end and stay listed` : ""}.`,
        failed ? "warning" : "info",
      );
    },
  });
}
