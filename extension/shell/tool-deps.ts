// What each shell tool is given when the surface registers it (shell/register.ts): the host, reached through a
// function that wires the host's wake and change callbacks on first use, and the journal. A file of its own so the
// tools need nothing of the registration that imports them.
import type { SupervisorHost } from "../../host/index.ts";
import type { JournalLink } from "../journal.ts";

export interface ExecToolDeps {
  host: () => SupervisorHost;
  journal: JournalLink;
}
