// Which Python runs the spawn server (spawner.ts): it needs only the standard library (`-I -S`), so any python3 on
// Pi's PATH serves, and a real interpreter is taken before a launcher script found earlier.
import { closeSync, openSync, readSync } from "node:fs";
import { programsOnPath } from "./program-path.ts";

/** python3 in the absolute entries of `path` (as a start looks programs up: program-path.ts), a real interpreter
 * before a launcher script: the server needs only some Python (`-I -S`, the standard library), and a launcher such as
 * pyenv's or asdf's shim runs a shell and its scripts first (here 0.15-0.5 s of CPU). The first script found is the
 * fallback. */
export function findPython(path = process.env.PATH ?? ""): string | undefined {
  let script: string | undefined;
  for (const file of programsOnPath("python3", path)) {
    if (!isScript(file)) return file;
    script ??= file;
  }
  return script;
}

/** A `#!` script rather than a binary (the first two bytes); one that cannot be read counts as a script (the
 * fallback). */
function isScript(file: string): boolean {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    return true;
  }
  try {
    const head = Buffer.alloc(2);
    return readSync(fd, head, 0, 2, 0) === 2 && head.toString("latin1") === "#!";
  } finally {
    closeSync(fd);
  }
}
