// Looking a program up as a start does: a path as it is, a bare name in the absolute entries of PATH only.
import { accessSync, constants as fs, statSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";

/** Where `file` would be executed from, or undefined: a path as it is, a bare name in the absolute entries of `path`
 * only (a relative entry would let a binary planted in the working directory stand in). Checked before a start so
 * that a missing program is a start failure, not the joining shell's exit 127; also how shells and interpreter
 * commands are resolved. */
export function findProgram(file: string, path: string | undefined): string | undefined {
  if (file.includes("/")) return usable(file) ? file : undefined;
  return programsOnPath(file, path).next().value;
}

/** Every executable file named `file` in the absolute entries of `path`, in PATH's order. */
export function* programsOnPath(file: string, path: string | undefined): Generator<string, undefined> {
  for (const dir of (path ?? "").split(delimiter))
    if (dir && isAbsolute(dir) && usable(join(dir, file))) yield join(dir, file);
  return undefined;
}

function usable(p: string): boolean {
  try {
    accessSync(p, fs.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
}
