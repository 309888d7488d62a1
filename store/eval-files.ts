// eval's files of one Pi session under the agent dir: the directory `local://` paths live in, and the artifacts
// directory where a truncated output is kept whole (read back with output("<id>")). One pair per Pi session; the
// directories are private (0700), made before a cell can write there (a runtime's own mkdir would use its umask).
import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { agentDir } from "./agent-dir.ts";
import { ensurePrivateDir } from "./artifact-fs.ts";

export const EVAL_DIR = "code-execution-eval";

export interface EvalDirs {
  /** `local://x` is `<localRoot>/x`. */
  localRoot: string;
  /** output(id) reads `<artifactsDir>/<id>.md`; truncated eval output is saved there. */
  artifactsDir: string;
}

/** The directories of a Pi session (created when first written). */
export function evalDirs(piSessionId: string): EvalDirs {
  const id = (piSessionId || "no-session").replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 120);
  const base = join(agentDir(), EVAL_DIR, id);
  return { localRoot: join(base, "local"), artifactsDir: join(base, "artifacts") };
}

const made = new Set<string>();

/** Makes the session's directories private, once per directory and process; a failure is left to the helper that
 * then uses the directory (read/write/output say it). */
export async function prepareEvalDirs(dirs: EvalDirs): Promise<void> {
  if (made.has(dirs.localRoot)) return;
  try {
    await ensurePrivateDir(join(dirs.localRoot, "..", ".."));
    await ensurePrivateDir(join(dirs.localRoot, ".."));
    await ensurePrivateDir(dirs.localRoot);
    made.add(dirs.localRoot);
  } catch {
    // reported by read/write/output when a cell uses the directory
  }
}

/** Saves a truncated eval output in full as an artifact of the session; its id is the text's digest. */
export async function saveEvalOutput(dirs: EvalDirs, text: string): Promise<{ id: string; path: string }> {
  const id = `eval-${createHash("sha256").update(text).digest("hex").slice(0, 12)}`;
  const path = join(dirs.artifactsDir, `${id}.md`);
  await ensurePrivateDir(join(dirs.artifactsDir, ".."));
  await ensurePrivateDir(dirs.artifactsDir);
  await writeFile(path, text, { mode: 0o600 });
  return { id, path };
}
