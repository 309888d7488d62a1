// What eval's helpers need from the host (oh-my-pi's read/write/env/output, in both languages): where `local://`
// paths live and where the session's output artifacts are, one directory pair per Pi session under the agent dir.
// Both reach the runtimes through a reserved entry of the run's tool set (`__eval__`, never installed as a name and
// never callable): a run whose set carries it is an eval cell and gets the prelude; a run of another surface in the
// shared notebook session does not, and keeps Pi's `read`/`write` tools under those names.
import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { RunTool, RunTools } from "../../host/index.ts";
import { agentDir } from "../../store/agent-dir.ts";
import { ensurePrivateDir } from "../../store/artifact-fs.ts";
import { fail } from "../../lib/result.ts";

/** The reserved tool-set entry that marks an eval run and carries its helpers' directories. */
export const EVAL_PRELUDE = "__eval__";
export const EVAL_DIR = "code-execution-eval";

export interface PreludeDirs {
  /** `local://x` is `<localRoot>/x`. */
  localRoot: string;
  /** output(id) reads `<artifactsDir>/<id>.md`; truncated eval output is saved there. */
  artifactsDir: string;
}

/** The directories of this Pi session (created when first written). */
export function preludeDirs(ctx: ExtensionContext): PreludeDirs {
  const raw = ctx.sessionManager.getSessionId() || "no-session";
  const id = raw.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 120);
  const base = join(agentDir(), EVAL_DIR, id);
  return { localRoot: join(base, "local"), artifactsDir: join(base, "artifacts") };
}

const made = new Set<string>();

/** Makes the session's directories private (0700) before a cell can write there: a runtime's own mkdir would make
 * them with its umask. Once per directory and process; a failure is left to the helper that then uses it. */
export async function preparePreludeDirs(dirs: PreludeDirs): Promise<void> {
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

/** The run's tools plus the prelude marker. */
export function withPrelude(tools: RunTools, dirs: PreludeDirs): RunTools {
  const marker: RunTool = {
    spec: {
      name: EVAL_PRELUDE,
      python: "eval_prelude",
      signature: "eval_prelude()",
      description: JSON.stringify(dirs),
    },
    validate: () => fail("eval's prelude entry is not a tool"),
    hooks: {
      dispatch: () => ({
        content: [{ type: "text", text: "eval's prelude entry is not a tool" }],
        isError: true,
      }),
    },
  };
  return { ...tools, tools: [...tools.tools, marker] };
}

/** Saves a truncated eval output in full as an artifact of the session; its id is the text's digest. */
export async function saveOutputArtifact(dirs: PreludeDirs, text: string): Promise<{ id: string; path: string }> {
  const id = `eval-${createHash("sha256").update(text).digest("hex").slice(0, 12)}`;
  const path = join(dirs.artifactsDir, `${id}.md`);
  await ensurePrivateDir(join(dirs.artifactsDir, ".."));
  await ensurePrivateDir(dirs.artifactsDir);
  await writeFile(path, text, { mode: 0o600 });
  return { id, path };
}
