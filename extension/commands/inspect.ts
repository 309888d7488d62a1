// `/code-inspect` and `--code-inspect`: the live inspector of this Pi session's supervisor, and the status of its
// event log. The recorder and the servers are the host's (host/observability.ts); this file talks to the user.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { Observability, SupervisorHost } from "../../host/index.ts";
import type { Footer } from "../footer.ts";

const USAGE =
  "usage: /code-inspect [port] [actions] | stop | stately [port | ws://host:port] | status — the live inspector of this session's code supervisor";

function tell(ctx: ExtensionContext, text: string, level: "info" | "error" = "info"): void {
  if (ctx.hasUI) ctx.ui.notify(text, level);
  else process.stderr.write(`${text}\n`);
}

/** Registers `/code-inspect` and `--code-inspect`; `ensureHost` creates the supervisor so the page has a tree. */
export function registerInspect(
  pi: ExtensionAPI,
  observability: Observability,
  ensureHost: () => SupervisorHost,
  footer?: Footer,
): void {
  pi.registerFlag("code-inspect", {
    type: "boolean",
    default: false,
    description: "Start the live inspector of the code supervisor (prints its loopback URL)",
  });

  const start = async (ctx: ExtensionContext, options: { port?: number; actions?: boolean }) => {
    ensureHost();
    const started = await observability.openInspector(options);
    if (!started.ok) return tell(ctx, `code-inspect: ${started.error}`, "error");
    footer?.set("inspect", `inspector ${started.value.url}`);
    tell(ctx, observability.status());
  };

  pi.on("session_start", async (_event, ctx) => {
    observability.sessionStarted(ctx.sessionManager.getSessionId());
    if (pi.getFlag("code-inspect") === true) await start(ctx, {});
  });

  pi.registerCommand("code-inspect", {
    description: "Open the live inspector of the code supervisor (actor tree, states, events, timeline)",
    getArgumentCompletions: (prefix) =>
      ["stop", "actions", "stately", "status"]
        .filter((v) => v.startsWith(prefix.trim()))
        .map((value) => ({ value, label: value })),
    handler: async (args, ctx) => {
      const words = args.trim().split(/\s+/).filter(Boolean);
      const port = words.map(Number).find((n) => Number.isInteger(n) && n > 0 && n < 65536);
      if (words[0] === "stop") {
        const was = await observability.stopInspection();
        footer?.set("inspect", undefined);
        const stopped = [...(was.inspector ? ["inspector"] : []), ...(was.stately ? ["Stately relay"] : [])];
        return tell(
          ctx,
          stopped.length ? `code-inspect: ${stopped.join(" and ")} stopped` : "code-inspect: no inspector was running",
        );
      }
      if (words[0] === "status") return tell(ctx, observability.status());
      if (words[0] === "stately") {
        ensureHost();
        const url = words.find((w) => /^wss?:\/\//.test(w));
        const started = await observability.openStately({
          ...(url ? { url } : {}),
          ...(port !== undefined ? { port } : {}),
        });
        if (!started.ok) return tell(ctx, `code-inspect: ${started.error}`, "error");
        return tell(ctx, observability.status());
      }
      const unknown = words.filter((w) => w !== "actions" && Number(w) !== port);
      if (unknown.length) return tell(ctx, USAGE, "error");
      return start(ctx, {
        ...(port !== undefined ? { port } : {}),
        ...(words.includes("actions") ? { actions: true } : {}),
      });
    },
  });
}
