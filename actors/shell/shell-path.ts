// The shell a command runs in, as an absolute path: a bare name (`bash`, `zsh`) is looked up in the absolute
// entries of PATH only, so a binary planted in the working directory (or a relative PATH entry) cannot stand in.
import { isAbsolute } from "node:path";
import { fail, ok, type Result } from "../../lib/result.ts";
import { findProgram } from "../process/children.ts";

export const DEFAULT_SHELL = "bash";

const executable = (path: string) => findProgram(path, undefined) !== undefined;

const cache = new Map<string, string>();

export function resolveShell(shell: string | undefined, path: string | undefined): Result<string> {
  const name = (shell ?? DEFAULT_SHELL).trim();
  if (!name) return fail("shell must name a shell, such as bash, sh or zsh.");
  if (name.includes("/")) {
    if (!isAbsolute(name)) return fail(`shell ${JSON.stringify(name)} must be a bare name or an absolute path.`);
    return executable(name) ? ok(name) : fail(`shell ${name} is not an executable file.`);
  }
  const key = `${name}\0${path ?? ""}`;
  const hit = cache.get(key);
  if (hit && executable(hit)) return ok(hit);
  const found = findProgram(name, path);
  if (found) {
    cache.set(key, found);
    return ok(found);
  }
  return fail(`shell ${JSON.stringify(name)} was not found on PATH (only absolute PATH entries are searched).`);
}
