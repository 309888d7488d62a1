// What each shell tool is given when the surface registers it (shell/register.ts): the host, reached through a
// function that wires the host's wake and change callbacks on first use, the journal, and the settings in force. A
// file of its own so the tools need nothing of the registration that imports them.
import type { JournalLink, SupervisorHost } from "../../host/index.ts";
import type { ResolvedSettings } from "../../store/setting-keys.ts";

export interface ExecToolDeps {
  host: () => SupervisorHost;
  journal: JournalLink;
  /** The settings as they are now (files are watched): read at each call. */
  settings: () => ResolvedSettings;
}
