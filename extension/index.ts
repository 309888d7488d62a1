// Pi entry point. Thin: the composition root (host/create.ts) builds the host and its companions (journal, event log,
// inspector); this file registers the surfaces and Pi's hooks with what it returns, and ties the host's life to Pi's
// session, so every process ends at session_shutdown (quit, reload, new, resume, fork).
import { CONFIG_DIR_NAME, getAgentDir, type ExtensionAPI } from "@earendil-works/pi-coding-agent";
import {
  createSupervisorRoot,
  type HostOptions,
  type JournalSettings,
  type ObservabilitySettings,
} from "../host/index.ts";
import { registerCodeExecutionTool } from "./code-execution/code-execution-tool.ts";
import { registerOutputTool } from "./code-execution/output-tool.ts";
import { registerSourceTool } from "./code-execution/source-tool.ts";
import { registerContextHook } from "./code-execution/context-hook.ts";
import { registerExposedToolsMessage } from "./code-execution/exposed-tools.ts";
import { registerInspect } from "./commands/inspect.ts";
import { CodeEnvironment } from "./environment.ts";
import { registerLifecycle } from "./lifecycle.ts";
import { SessionStatus } from "./session-status.ts";
import { Footer } from "./footer.ts";
import { CODE_TOOLS_FLAG, chooseSurfaces, Surfaces } from "./surfaces.ts";
import { registerSetInterpreterTool } from "./python/set-interpreter-tool.ts";
import { registerPythonTool } from "./python/python-tool.ts";
import { registerPythonCommands } from "./python/commands.ts";
import { registerEvalTool } from "./eval/eval-tool.ts";
import { pythonBackend } from "./eval/python-backend.ts";
import { jsBackend } from "./eval/js-backend.ts";
import { registerExec } from "./shell/register.ts";
import { runDeferred } from "../lib/after-results.ts";

export interface CodeExecutionOptions {
  host?: HostOptions;
  /** The SQLite journal (default: PI_CODE_EXECUTION_JOURNAL, else the XDG data directory); opened on first use. */
  journal?: JournalSettings;
  /** Event-log recording and the live inspector (host/observability.ts). */
  observability?: ObservabilitySettings;
}

export function createCodeExecutionExtension(options: CodeExecutionOptions = {}) {
  return function codeExecution(pi: ExtensionAPI): void {
    // Settings (files + environment, hot-reloaded) and the interpreter selection: extension/environment.ts.
    const environment = new CodeEnvironment(pi);
    // One footer item for the code sessions, shells, backend and inspector (extension/footer.ts).
    const footer = new Footer();
    const status = new SessionStatus(footer, () => environment.settings().values.notebookSession);
    // The host is built on first use; settings and the footer follow each host built.
    const root = createSupervisorRoot({
      agentDir: getAgentDir, // where every file we keep lives, as Pi names it (store/agent-dir.ts)
      configDirName: CONFIG_DIR_NAME,
      journal: () => {
        const journalPath = environment.settings().values.journal;
        return { ...(journalPath ? { path: journalPath } : {}), ...options.journal };
      },
      ...(options.observability ? { observability: options.observability } : {}),
      hostOptions: () => environment.hostOptions(options.host),
      onHost: (host) => {
        environment.attach(host);
        status.attach(host);
      },
    });
    const { journal, observability } = root;
    const getHost = root.host;
    const peekHost = root.peekHost;

    // The tool surfaces (extension/surfaces.ts): each registers its tools, visible or hidden.
    let pythonCommands = false;
    const notebook = () => environment.settings().values.notebookSession;
    const surfaces: Surfaces = new Surfaces(pi, {
      code_execution: (p) => {
        registerCodeExecutionTool(p, getHost, journal, {
          timeouts: environment.timeouts(),
          display: () => environment.settings().values.display,
          completionModels: () => environment.settings().values.completionModels,
        });
        registerOutputTool(p, journal);
        registerSourceTool(p, journal);
      },
      python_set_interpreter: (p) =>
        registerSetInterpreterTool(p, environment, peekHost, () =>
          surfaces.isActive("python") ? notebook() : undefined,
        ),
      python: (p) => {
        registerPythonTool(p, { getHost, environment, journal });
        if (p === pi && !pythonCommands) {
          pythonCommands = true;
          registerPythonCommands(pi, {
            environment,
            getHost,
            peekHost,
            report: surfaceReport,
            places: root.places,
            notebook,
          });
        }
      },
      // eval's languages are backends behind one seam (extension/eval/backend.ts); JavaScript plugs in there.
      eval: (p) =>
        registerEvalTool(p, {
          environment,
          journal,
          backends: { py: pythonBackend({ getHost, environment }), js: jsBackend({ getHost, environment }) },
          backend: () => getHost().backend(),
        }),
      // The exec tools are always registered and enter or leave the active set (extension/shell/register.ts follows
      // `surfaces.isActive("exec")`).
      exec: () => {},
    });
    const flagValue = () => {
      try {
        const v = pi.getFlag(CODE_TOOLS_FLAG);
        return typeof v === "string" && v.trim() ? v : undefined;
      } catch {
        return undefined;
      }
    };
    const choose = () => surfaces.apply(chooseSurfaces(flagValue(), environment.settings(), surfaces.available()));
    function surfaceReport() {
      const c = surfaces.current();
      return { line: `Tool surfaces: ${c.active.join(", ") || "none"} (${c.from})`, warnings: c.warnings };
    }
    pi.registerFlag(CODE_TOOLS_FLAG, {
      type: "string",
      description:
        "Tool surfaces to register, comma-separated: code_execution, python, eval, exec (default: code_execution)",
    });
    choose();
    registerLifecycle(pi, {
      environment,
      status,
      getHost,
      peekHost,
      reregisterTool: () => surfaces.refresh(),
      surfaces: { report: surfaceReport, choose },
      places: root.places,
      startInspector: async (ctx, port) => {
        getHost();
        const started = await observability.openInspector(port ? { port } : {});
        if (ctx.hasUI)
          ctx.ui.notify(
            started.ok ? observability.status() : `code-inspect: ${started.error}`,
            started.ok ? "info" : "error",
          );
      },
    });
    // Work put off while a tool result was pending (the event log's encoding, journal rows: lib/after-results.ts)
    // runs as soon as Pi is done with the result: Pi starts the next call of a turn without an event-loop turn in
    // between, so anything left for a later turn would land inside that call.
    pi.on("message_end", (event) => {
      if (event.message.role === "toolResult") runDeferred();
    });
    registerContextHook(pi);
    registerExposedToolsMessage(pi);
    registerInspect(pi, observability, getHost, footer);
    registerExec(pi, {
      getHost,
      peekHost,
      journal,
      environment,
      footer,
      enabled: () => surfaces.isActive("exec"),
    });

    pi.on("session_shutdown", () => root.shutdown());
  };
}

export default createCodeExecutionExtension();
