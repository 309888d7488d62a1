// eval's text as the model gets it, with oh-my-pi's limits: the last 3000 lines or 50 KB. When that cuts, the whole
// text is saved as an artifact of the session (`output("<id>")` in a later cell reads it back), and the result's
// `details.meta` says what was kept and where the rest is. A save that fails is said in the text; the cut stands.
import { DEFAULT_MAX_BYTES, formatSize, truncateTail } from "@earendil-works/pi-coding-agent";
import { errorMessage } from "../../lib/errors.ts";
import { keepEvalOutput } from "../../host/index.ts";
import type { PreludeDirs } from "./prelude.ts";

/** oh-my-pi's line cap for tool output (Pi's own is 2000). */
export const EVAL_MAX_LINES = 3000;
export const EVAL_MAX_BYTES = DEFAULT_MAX_BYTES;

export interface EvalOutputMeta {
  truncation: {
    direction: "tail";
    truncatedBy: "lines" | "bytes";
    totalLines: number;
    totalBytes: number;
    outputLines: number;
    outputBytes: number;
    /** The saved whole text: `artifact://<artifactId>`, read with output("<artifactId>"). */
    artifactId?: string;
    path?: string;
    /** Why the whole text could not be saved. */
    saveError?: string;
  };
}

export async function truncateEvalText(
  text: string,
  dirs: PreludeDirs,
): Promise<{ text: string; meta?: EvalOutputMeta }> {
  const t = truncateTail(text, { maxLines: EVAL_MAX_LINES, maxBytes: EVAL_MAX_BYTES });
  if (!t.truncated) return { text: t.content };
  const truncation: EvalOutputMeta["truncation"] = {
    direction: "tail",
    truncatedBy: t.truncatedBy === "bytes" ? "bytes" : "lines",
    totalLines: t.totalLines,
    totalBytes: t.totalBytes,
    outputLines: t.outputLines,
    outputBytes: t.outputBytes,
  };
  let where: string;
  try {
    const saved = await keepEvalOutput(dirs, text);
    truncation.artifactId = saved.id;
    truncation.path = saved.path;
    where = `the whole output is artifact://${saved.id}: output("${saved.id}") in an eval cell reads it`;
  } catch (e) {
    truncation.saveError = errorMessage(e);
    where = `the whole output could not be saved (${truncation.saveError})`;
  }
  const head =
    `[output truncated: kept the last ${t.outputLines} of ${t.totalLines} lines, ` +
    `${formatSize(t.outputBytes)} of ${formatSize(t.totalBytes)}; ${where}]`;
  return { text: `${head}\n${t.content}`, meta: { truncation } };
}
