// Pi's agent directory for the CLI of an installed copy that has no Pi beside it (bin/launch.js resolves
// `@earendil-works/pi-coding-agent` here only when that package is missing): the same rule as Pi 1.6's getAgentDir(),
// `$PI_CODING_AGENT_DIR` (a leading `~` expanded, a file: URL read as its path), else `~/.pi/agent`. Inside Pi, and in a checkout, Pi's own
// function is used. The CLI needs nothing else from Pi (and the project folder's name, Pi's CONFIG_DIR_NAME, whose
// default is `.pi`); an import of anything else fails to link, naming it.
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

/** The name of a project's Pi folder (`<cwd>/.pi`): Pi's default, for a copy without Pi. */
export const CONFIG_DIR_NAME = ".pi";
