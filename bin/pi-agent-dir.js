// Pi's agent directory for the CLI of an installed copy that has no Pi beside it (bin/launch.js resolves
// `@earendil-works/pi-coding-agent` here only when that package is missing): the same rule as Pi 1.6's getAgentDir(),
// `$PI_CODING_AGENT_DIR` (a leading `~` expanded, a file: URL read as its path), else `~/.pi/agent`. Inside Pi, and in a checkout, Pi's own
// function is used. The CLI needs nothing else from Pi; an import of anything else fails to link, naming it.
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export function getAgentDir() {
  const dir = process.env.PI_CODING_AGENT_DIR;
  if (!dir) return join(homedir(), ".pi", "agent");
  if (dir === "~") return homedir();
  if (dir.startsWith("~/")) return join(homedir(), dir.slice(2));
  return dir.startsWith("file://") ? fileURLToPath(dir) : dir;
}
