// Pi entry point. Thin: creates the supervisor host lazily, registers the tools, and ties the host's life to Pi's
// session, so every Python process ends at session_shutdown (quit, reload, new, resume, fork).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { SupervisorHost, type HostOptions } from "../host/host.ts";
import { registerCodeExecutionTool } from "./tools/code-execution.ts";
import { registerOutputTool } from "./tools/output.ts";
import { registerSourceTool } from "./tools/source.ts";
import { registerContextHook } from "./context.ts";
import { registerExposedToolsMessage } from "./exposed-tools.ts";
import { JournalLink, type JournalSettings } from "./journal.ts";
import { Observability, registerInspect, type ObservabilitySettings } from "./commands/inspect.ts";
import { CodeEnvironment } from "./environment.ts";
import { registerLifecycle } from "./lifecycle.ts";
import { SessionStatus } from "./status.ts";
import { registerExec } from "./exec/register.ts";

export interface CodeExecutionOptions {
  host?: HostOptions;
  /** The SQLite journal (default: PI_CODE_EXECUTION_JOURNAL, else the XDG data directory); opened on first use. */
  journal?: JournalSettings;
  /** Event-log recording and the live inspector (extension/commands/inspect.ts). */
  observability?: ObservabilitySettings;
}

export function createCodeExecutionExtension(options: CodeExecutionOptions = {}) {
  return function codeExecution(pi: ExtensionAPI): void {
    let host: SupervisorHost | undefined;
    // Settings (files + environment, hot-reloaded) and the interpreter selection: extension/environment.ts.
    const environment = new CodeEnvironment(pi);
    const status = new SessionStatus();
    const journalPath = environment.settings().values.journal;
    const journal = new JournalLink({ ...(journalPath ? { path: journalPath } : {}), ...options.journal });
    const observability = new Observability(options.observability);
    journal.eventLog = () => observability.logPath();
    const getHost = () => {
      if (host) return host;
      host = new SupervisorHost(observability.hostOptions(environment.hostOptions(options.host)));
      observability.attach(host);
      journal.watch(host);
      environment.attach(host);
      status.attach(host);
      return host;
    };

    registerCodeExecutionTool(pi, getHost, journal, { timeouts: environment.timeouts() });
    registerLifecycle(pi, {
      environment,
      status,
      getHost,
      peekHost: () => host,
      reregisterTool: (timeouts) => registerCodeExecutionTool(pi, getHost, journal, { timeouts }),
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
    registerOutputTool(pi, journal);
    registerSourceTool(pi, journal);
    registerContextHook(pi);
    registerExposedToolsMessage(pi);
    registerInspect(pi, observability, getHost);
    registerExec(pi, { getHost, peekHost: () => host, journal, environment });

    pi.on("session_shutdown", async () => {
      const h = host;
      host = undefined;
      await h?.shutdown();
      await observability.shutdown();
      await journal.close();
    });
  };
}

export default createCodeExecutionExtension();
