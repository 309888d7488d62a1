// pi-python's commands: `/python-status` (the same report as /code-status) and `/python-restart` (the notebook
// kernel restarted empty, like `/code-restart notebook`, and started when it is not running; a kernel busy with a
// wedged cell is killed first, as pi-python's restart does).
import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { SupervisorHost } from "../../host/index.ts";
import type { CodeEnvironment } from "../environment.ts";
import { registerCodeStatusCommand, type StatusPlaces, type SurfaceReport } from "../commands/code-status.ts";
import { show } from "../commands/show.ts";

export interface PythonCommandLinks {
  environment: CodeEnvironment;
  getHost: () => SupervisorHost;
  peekHost: () => SupervisorHost | undefined;
  report: () => SurfaceReport;
  places: () => StatusPlaces;
  notebook: () => string;
}

export function registerPythonCommands(pi: ExtensionAPI, links: PythonCommandLinks): void {
  registerCodeStatusCommand(pi, links.environment, links.peekHost, links.places, links.report, "python-status");
  pi.registerCommand("python-restart", {
    description: "Restart the python tool's kernel with an empty namespace (the notebook session)",
    handler: async (_args: string, ctx: ExtensionCommandContext) => {
      const host = links.getHost();
      const name = links.notebook();
      const before = host.sessions().find((s) => s.name === name);
      // A kernel busy with a cell (one that ignores its interrupts, or waits without a kill under pi-python's
      // `interruptGraceMs: 0`) is stopped first: a reset would only queue behind that cell. The cell ends killed.
      if (before?.busyRunId) await host.stopSession(name);
      const alive = host.sessions().some((s) => s.name === name);
      const r = alive
        ? await host.restartSession(name)
        : await host.run({ code: "", cwd: ctx.cwd, timeoutMs: 60_000, session: name, surface: "python" });
      const o = r?.outcome;
      if (!o || o.status !== "success") {
        return show(
          ctx,
          `The python kernel (session "${name}") could not be restarted: ${o?.message ?? o?.status ?? "it stopped"}.`,
          "error",
        );
      }
      const pid = host.sessions().find((s) => s.name === name)?.pid;
      show(
        ctx,
        `The python kernel (session "${name}") ${before ? "restarted" : "started"}: Python ${o.runner?.python ?? "?"}, pid ${pid ?? "?"}; its namespace is empty.`,
      );
    },
  });
}
