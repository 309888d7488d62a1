// The composition root: the one place that builds what the code tools of a Pi session stand on. The extension
// (extension/index.ts) calls `createSupervisorRoot` once as Pi loads it, and registers its surfaces and Pi's hooks with
// what it returns. Built here: Pi's agent directory handed down to the store, the journal link, observability (the
// event-log recorder, the inspector and the Stately link) and the supervisor host. The host is built on first use (a
// tool call, a command, the inspector), observed from its birth and its sessions journaled; Pi's session_shutdown
// ends it (with the log and the journal), and a use after that (a reload, a session switch) builds a new one.
import { useAgentDir } from "../store/agent-dir.ts";
import { SupervisorHost } from "./host.ts";
import { JournalLink, type JournalSettings } from "./journal-link.ts";
import { Observability, type ObservabilitySettings } from "./observability.ts";
import type { HostOptions } from "./requests.ts";

export interface RootOptions {
  /** Pi's agent directory (its `getAgentDir`, read where used) and its folder's name in a project (its
   * `CONFIG_DIR_NAME`): Pi's facts, handed down to the store before anything reads it (store/agent-dir.ts). */
  agentDir: () => string;
  configDirName?: string;
  /** The journal's settings, read once, after the agent directory is known (the settings say where it is). */
  journal?: () => JournalSettings;
  /** Event-log recording and the live inspector (host/observability.ts). */
  observability?: ObservabilitySettings;
  /** The options of each new host, read as it is built (the backend, the interpreter, the limits). */
  hostOptions?: () => HostOptions;
  /** Called with each new host once it is observed and journaled (what follows the host: settings, the footer). */
  onHost?: (host: SupervisorHost) => void;
}

export interface SupervisorRoot {
  readonly journal: JournalLink;
  readonly observability: Observability;
  /** The host, built on first use. */
  host(): SupervisorHost;
  /** The host if one is built; never builds one (commands that only report). */
  peekHost(): SupervisorHost | undefined;
  /** Where the journal and the event logs are, for /code-status. */
  places(): { journal: string | undefined; eventLogDir: string | undefined; eventLog: string | undefined };
  /** Pi's session_shutdown: the host ends (every process with it), then the event log and the servers, then the
   * journal. The next `host()` builds a new host. */
  shutdown(): Promise<void>;
}

export function createSupervisorRoot(options: RootOptions): SupervisorRoot {
  useAgentDir(options.agentDir, options.configDirName);
  let host: SupervisorHost | undefined;
  /** The host the inspector's stop-session action reaches: it stays until the host has ended. */
  let observed: SupervisorHost | undefined;
  const journal = new JournalLink(options.journal?.() ?? {});
  const observability = new Observability(
    options.observability,
    (name) => observed?.stopSession(name) ?? Promise.resolve(false),
  );
  journal.eventLog = () => observability.logPath();
  journal.eventLogWritten = () => observability.logWritten();

  const build = (): SupervisorHost => {
    host = observed = new SupervisorHost(observability.observe(options.hostOptions?.()));
    journal.watch(host);
    options.onHost?.(host);
    return host;
  };

  return {
    journal,
    observability,
    host: () => host ?? build(),
    peekHost: () => host,
    places: () => ({
      journal: journal.where(),
      eventLogDir: observability.logDir(),
      eventLog: observability.logPath(),
    }),
    async shutdown() {
      const h = host;
      host = undefined;
      await h?.shutdown();
      if (observed === h) observed = undefined;
      await observability.shutdown();
      await journal.close();
    },
  };
}
