// Wiring of interpreter selection, settings and session visibility into Pi's lifecycle: the --python flag, the
// python_set_interpreter tool, the /code-status, /code-restart and /code-sessions commands, the footer status, the
// widget after /tree, and settings changes reaching the tool (timeouts) and the host (limits) while Pi runs.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { artifactsLanded, type SupervisorHost } from "../host/index.ts";
import { registerCodeStatusCommand, type StatusPlaces, type SurfaceReport } from "./commands/code-status.ts";
import { registerSessionCommands } from "./commands/code-sessions.ts";
import { PYTHON_FLAG, SANDBOX_FLAG, SSH_FLAG, type CodeEnvironment } from "./environment.ts";
import type { SessionStatus } from "./session-status.ts";

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

/** Pi's trust decision for the session's project; a Pi without it (or failing to say) counts as untrusted. */
export function projectTrusted(ctx: ExtensionContext): boolean {
  try {
    return typeof ctx.isProjectTrusted === "function" && ctx.isProjectTrusted() === true;
  } catch {
    return false;
  }
}

/** Start-up warnings in Pi's UI (one notice), or on stderr where Pi has no UI (print and JSON modes). */
function sayAtStart(ctx: ExtensionContext, warnings: string[]): void {
  const text =
    warnings.length === 1
      ? `pi-code-supervisor: ${warnings[0]}`
      : ["pi-code-supervisor:", ...warnings.map((w) => `- ${w}`)].join("\n");
  if (ctx.hasUI) ctx.ui.notify(text, "warning");
  else process.stderr.write(`${text}\n`);
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
  registerSessionCommands(pi, links.getHost, peekHost, () => environment.settings().values.notebookSession);

  let timeouts = JSON.stringify(environment.timeouts());
  environment.onChange(() => {
    links.surfaces?.choose();
    const next = environment.timeouts();
    if (JSON.stringify(next) === timeouts) return;
    timeouts = JSON.stringify(next);
    links.reregisterTool(next);
  });

  // Unknown names (a surface, a setting key, a backend) are said once at start-up, each with the closest known name:
  // a typo such as `--code-tools pyhton` would otherwise leave Pi without code tools until /code-status.
  const said = new Set<string>();
  pi.on("session_start", async (_event, ctx) => {
    const notices = await environment.start(ctx.cwd, projectTrusted(ctx));
    const badFlag = await environment.checkFlag(ctx.cwd);
    links.surfaces?.choose();
    const fresh = [
      ...notices,
      ...(badFlag ? [badFlag] : []),
      ...(links.surfaces?.report().warnings ?? []),
      ...environment.settings().unknown,
    ].filter((w) => !said.has(w));
    for (const w of fresh) said.add(w);
    if (fresh.length) sayAtStart(ctx, fresh);
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
    await artifactsLanded();
  });
}
