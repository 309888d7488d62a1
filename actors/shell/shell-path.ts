// The shell a command runs in, as an absolute path: a bare name (`bash`, `zsh`) is looked up in the absolute
// entries of PATH only, so a binary planted in the working directory (or a relative PATH entry) cannot stand in.
import { accessSync, constants, statSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { fail, ok, type Result } from "../../lib/result.ts";

export const DEFAULT_SHELL = "bash";

function executable(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

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
  for (const dir of (path ?? "").split(":")) {
    if (!dir || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    if (executable(candidate)) {
      cache.set(key, candidate);
      return ok(candidate);
    }
  }
  return fail(`shell ${JSON.stringify(name)} was not found on PATH (only absolute PATH entries are searched).`);
}
