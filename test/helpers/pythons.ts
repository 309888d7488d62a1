// Python interpreters, found on this machine at run time (no test names a path of its own): the one most tests run
// (`PYTHON`: the first `python3` on PATH), and those of a given version (tests that need another Python than the
// default skip, saying why, where there is none): pyenv's installed versions (never its shims: a shim is a shell
// script that picks a version by configuration, ~0.5 s a start), then `pythonX.Y` on PATH, then the usual places.
import { accessSync, constants, readdirSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";

export interface FoundPython {
  /** The executable. */
  path: string;
  /** Its full version (`3.12.1`), as it reports it. */
  version: string;
  /** Its installation prefix when that holds `bin/python3` (a pyenv version, /usr): an interpreter's directory. */
  prefix?: string;
}

const executable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** pyenv's installed `minor` versions (`3.12.1`, `3.12.4`), newest patch first. */
function pyenvVersions(minor: string): string[] {
  const root = join(process.env.PYENV_ROOT ?? join(homedir(), ".pyenv"), "versions");
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return [];
  }
  const patch = (name: string) => Number(name.slice(minor.length + 1));
  return names
    .filter((n) => n.startsWith(`${minor}.`) && /^\d+$/.test(n.slice(minor.length + 1)))
    .sort((a, b) => patch(b) - patch(a))
    .map((n) => join(root, n, "bin", "python3"));
}

function candidates(minor: string): string[] {
  const onPath = (process.env.PATH ?? "")
    .split(delimiter)
    .filter((dir) => dir && !dir.endsWith("/shims"))
    .map((dir) => join(dir, `python${minor}`));
  return [...pyenvVersions(minor), ...onPath, `/usr/bin/python${minor}`, `/usr/local/bin/python${minor}`];
}

const found = new Map<string, FoundPython | undefined>();

/** `path` as a Python whose version starts with `minor`, or undefined when it is not one. */
function probe(path: string, minor: string): FoundPython | undefined {
  if (!executable(path)) return undefined;
  let version: string;
  try {
    version = execFileSync(path, ["-c", "import platform; print(platform.python_version())"], {
      encoding: "utf8",
      timeout: 10_000,
    }).trim();
  } catch {
    return undefined;
  }
  if (!version.startsWith(`${minor}.`)) return undefined;
  const prefix = path.replace(/\/bin\/python[\d.]*$/, "");
  return { path, version, ...(prefix !== path && executable(join(prefix, "bin", "python3")) ? { prefix } : {}) };
}

/** A real Python `minor` (`"3.12"`) on this machine, or undefined. */
export function findPython(minor: string): FoundPython | undefined {
  if (found.has(minor)) return found.get(minor);
  let result: FoundPython | undefined;
  for (const path of candidates(minor)) if ((result = probe(path, minor))) break;
  found.set(minor, result);
  return result;
}

/** The Python 3 most tests run: $PCS_TEST_PYTHON when set (to try the suite on another one), else the first
 * `python3` on PATH that is not a shim, else the usual places; undefined when there is none. */
export function systemPython(): FoundPython | undefined {
  const given = process.env.PCS_TEST_PYTHON;
  return given ? probe(given, "3") : findPython("3");
}

/** A test's `skip` for Python `minor`: false when it is installed, else the reason. */
export function skipWithout(minor: string): string | false {
  return findPython(minor) ? false : `no Python ${minor} on this machine (looked in pyenv's versions and on PATH)`;
}

/** The interpreter most tests use, found at run time; PCS_TEST_PYTHON overrides it (e.g. to try the suite on another
 * version). Without any Python 3 the bare name stays, so a test that needs one fails saying so. */
export const PYTHON = process.env.PCS_TEST_PYTHON ?? systemPython()?.path ?? "python3";

/** PYTHON as a regular expression's source, for the texts that name it. */
export const PYTHON_RE = PYTHON.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
