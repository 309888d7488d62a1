// Wiring of interpreter selection, settings and session visibility into Pi's lifecycle: the --python flag, the
// python_set_interpreter tool, the /code-status, /code-restart and /code-sessions commands, the footer status, the
// widget after /tree, and settings changes reaching the tool (timeouts) and the host (limits) while Pi runs.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { SupervisorHost } from "../host/index.ts";
import { registerCodeStatusCommand, type StatusPlaces, type SurfaceReport } from "./commands/code-status.ts";
import { registerSessionCommands } from "./commands/code-sessions.ts";
import { PYTHON_FLAG, SANDBOX_FLAG, SSH_FLAG, type CodeEnvironment } from "./environment.ts";
import type { SessionStatus } from "./status.ts";
import { savesLanded } from "../store/artifact-saves.ts";

export interface LifecycleLinks {
  environment: CodeEnvironment;
  status: SessionStatus;
  getHost: () => SupervisorHost;
  peekHost: () => SupervisorHost | undefined;
  /** Registers the visible tools again with new timeouts (their schemas state them). */
  reregisterTool: (timeouts: { defaultSeconds: number; maxSeconds: number }) => void;
  /** The tool surfaces for /code-status, and choosing them again at session start and on settings changes. */
  surfaces?: { report: () => SurfaceReport; choose: () => void };
  /** Where the journal and the event logs are, for /code-status. */
  places?: () => StatusPlaces;
  /** Opens the live inspector (the `inspector.autoStart` setting; `--code-inspect` does the same). */
  startInspector?: (ctx: ExtensionContext, port: number) => Promise<void>;
}

export function registerLifecycle(pi: ExtensionAPI, links: LifecycleLinks): void {
  const { environment, status, peekHost } = links;
  pi.registerFlag(PYTHON_FLAG, {
    type: "string",
    description:
      "Python interpreter for code_execution (path, venv python or command; python_set_interpreter overrides it)",
  });
  pi.registerFlag(SANDBOX_FLAG, {
    type: "boolean",
    description:
      "Run code_execution in a bubblewrap sandbox (settings `sandbox.*`; the `backend` setting does the same)",
  });
  pi.registerFlag(SSH_FLAG, {
    type: "string",
    description: "Run code_execution on user@host[:remote-cwd] over your OpenSSH client (settings `remote.*`)",
  });
  registerCodeStatusCommand(pi, environment, peekHost, links.places, links.surfaces?.report);
  registerSessionCommands(pi, links.getHost, peekHost);

  let timeouts = JSON.stringify(environment.timeouts());
  environment.onChange(() => {
    links.surfaces?.choose();
    const next = environment.timeouts();
    if (JSON.stringify(next) === timeouts) return;
    timeouts = JSON.stringify(next);
    links.reregisterTool(next);
  });

  pi.on("session_start", async (_event, ctx) => {
    await environment.start(ctx.cwd);
    links.surfaces?.choose();
    environment.restoreSelection(ctx);
    status.setUI(ctx);
    status.update(peekHost());
    const inspector = environment.settings().values.inspector;
    if (inspector.autoStart && links.startInspector) await links.startInspector(ctx, inspector.port);
  });
  pi.on("session_tree", async (_event, ctx) => {
    environment.restoreSelection(ctx);
    status.setUI(ctx);
    status.showTreeWidget(peekHost());
  });
  // The widget has said its piece once the conversation moves on.
  pi.on("agent_start", async () => status.clearWidget());
  pi.on("session_shutdown", async () => {
    status.detach();
    await environment.close();
    // Output artifacts of the last results are written after them: they land before Pi goes.
    await savesLanded();
  });
}
