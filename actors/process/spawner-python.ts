// Which Python runs the spawn server (spawner.ts): it needs only the standard library (`-I -S`), so any python3 on
// Pi's PATH serves, and a real interpreter is taken before a launcher script found earlier.
import { accessSync, closeSync, constants as fsc, openSync, readSync, statSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";

/** python3 in the absolute entries of `path` (as children.ts `findProgram` looks programs up), a real interpreter
 * before a launcher script: the server needs only some Python (`-I -S`, the standard library), and a launcher such as
 * pyenv's or asdf's shim runs a shell and its scripts first (here 0.15-0.5 s of CPU). The first script found is the
 * fallback. */
export function findPython(path = process.env.PATH ?? ""): string | undefined {
  let script: string | undefined;
  for (const dir of path.split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const file = join(dir, "python3");
    try {
      accessSync(file, fsc.X_OK);
      if (!statSync(file).isFile()) continue;
      if (!isScript(file)) return file;
      script ??= file;
    } catch {
      // not here
    }
  }
  return script;
}

/** A `#!` script rather than a binary (the first two bytes). */
function isScript(file: string): boolean {
  const fd = openSync(file, "r");
  try {
    const head = Buffer.alloc(2);
    return readSync(fd, head, 0, 2, 0) === 2 && head.toString("latin1") === "#!";
  } finally {
    closeSync(fd);
  }
}
