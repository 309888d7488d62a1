// The shell a command runs in, as an absolute path: a bare name (`bash`, `zsh`) is looked up in the absolute
// entries of PATH only, so a binary planted in the working directory (or a relative PATH entry) cannot stand in.
import { basename, isAbsolute } from "node:path";
import { fail, ok, type Result } from "../../lib/result.ts";
import { findProgram } from "../process/program-path.ts";

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

/** The shell's arguments to run `command`. Bash also gets `--norc`: a non-interactive `bash -c` whose stdin is a
 * socket takes itself for a command run by rshd or sshd and, as a top-level shell (SHLVL unset or 0 in the
 * environment it is given, as when Pi was started by a service or from a backgrounded subshell), sources ~/.bashrc. A
 * pipe-mode session's stdin is a socket (the spawn server's socket pairs; libuv's pipes are socket pairs too), so the
 * user's rc file ran before every such command when Pi had no SHLVL (this machine's `pyenv init`: 0.4 to 0.8 s a
 * command, and a rehash lock left stale by a shell killed inside it hangs every later one for 60 s), but never in a
 * PTY and never under a Pi started from a terminal. With `--norc` no shell command reads it, however Pi started. */
export function shellArgs(shell: string, command: string): string[] {
  return basename(shell) === "bash" ? ["--norc", "-c", command] : ["-c", command];
}
