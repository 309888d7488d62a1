// A Pi tool that cut its own output (Pi's `bash` past 2000 lines or 50 KB) keeps the whole of it in a file and says
// where: `details.fullOutputPath`, with `details.truncation.truncated`. The model sees the cut text; code asked for
// the output, so it gets the whole file, up to 5 MiB, as pi-code-execution does. A larger file fails the call with a
// message saying to filter at the source (code that needs more can read the file itself: the path is in the text).
import { open } from "node:fs/promises";
import type { ToolResultLike } from "./tool-results.ts";

export const MAX_RECOVERED_BYTES = 5 * 1024 * 1024;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The path of the tool's own full-output file, when its result says it truncated and kept one. */
export function fullOutputPath(result: ToolResultLike | undefined): string | undefined {
  const d = result?.details;
  if (!isObject(d) || typeof d.fullOutputPath !== "string" || !d.fullOutputPath) return undefined;
  return isObject(d.truncation) && d.truncation.truncated === true ? d.fullOutputPath : undefined;
}

/** The whole output instead of the cut text: `{text}`, `{error}` when it cannot be given, or undefined when the
 * result was not truncated (its text is the output). */
export async function recoveredOutput(
  result: ToolResultLike | undefined,
  python: string,
  limit = MAX_RECOVERED_BYTES,
): Promise<{ text: string } | { error: string } | undefined> {
  const path = fullOutputPath(result);
  if (!path) return undefined;
  let handle;
  try {
    handle = await open(path, "r");
  } catch (e) {
    return {
      error: `${python}: its output was truncated and the full output (${path}) cannot be read: ${(e as Error).message}`,
    };
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return { error: `${python}: its full output (${path}) is not a regular file` };
    if (info.size > limit)
      return {
        error:
          `${python}: the full output is ${info.size} bytes, over the ${limit >> 20} MiB code can recover from a ` +
          `truncated tool result (${path}). Filter the output at the source.`,
      };
    const data = Buffer.alloc(info.size);
    let at = 0;
    while (at < info.size) {
      const { bytesRead } = await handle.read(data, at, info.size - at, at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
    return { text: data.subarray(0, at).toString("utf8") };
  } finally {
    await handle.close();
  }
}
