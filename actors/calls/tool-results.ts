// What code receives from a tool: its result flattened to the text the model sees (images as a short note), with
// its structured content beside it (for Python's `.json()`) when the text is not JSON already, bounded in size.
import { PREVIEW_BYTES, preview as boundedPreview } from "../../machines/tool-records.ts";
import type { Preview } from "../../machines/tool-events.ts";

/** The part of a Pi tool result a nested call reads (AgentToolResult, loosely typed: other extensions return it). */
export interface ToolResultLike {
  content?: unknown;
  isError?: boolean;
  details?: unknown;
  structuredContent?: unknown;
  usage?: unknown;
}

/** A result larger than this is not handed to Python (the frame must stay within the 64 MiB protocol limit even
 * when JSON escaping inflates it); the call fails with a message saying so. */
export const MAX_RESULT_BYTES = 32 * 1024 * 1024;

export const utf8Bytes = (text: string) => Buffer.byteLength(text, "utf8");

/** A 4 KiB preview with an exact byte count, measured natively. */
export const previewOf = (text: string, limit = PREVIEW_BYTES): Preview => boundedPreview(text, limit, utf8Bytes);

/** Previews of one run's calls share this many bytes; past it, each keeps only `PREVIEW_FLOOR` bytes, so a script
 * making thousands of calls leaves a bounded record (the results persist in Pi's session). */
export const RUN_PREVIEW_BUDGET = 512 * 1024;
export const PREVIEW_FLOOR = 256;

export class PreviewBudget {
  private left = RUN_PREVIEW_BUDGET;
  take(text: string): Preview {
    const p = previewOf(text, this.left >= PREVIEW_BYTES ? PREVIEW_BYTES : Math.max(PREVIEW_FLOOR, this.left));
    this.left = Math.max(0, this.left - utf8Bytes(p.text));
    return p;
  }
}

function isJsonText(text: string): boolean {
  const t = text.trim();
  if (!t || !'{["-0123456789tfn'.includes(t[0]!)) return false;
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}

function blockText(block: unknown): string | undefined {
  if (!block || typeof block !== "object") return undefined;
  const b = block as { type?: unknown; text?: unknown; mimeType?: unknown; data?: unknown };
  if (b.type === "text") return typeof b.text === "string" ? b.text : "";
  if (b.type === "image") {
    const bytes = typeof b.data === "string" ? Math.floor((b.data.length * 3) / 4) : 0;
    return `[image: ${typeof b.mimeType === "string" ? b.mimeType : "unknown type"}, about ${bytes} bytes; not shown to Python]`;
  }
  return typeof b.type === "string" ? `[${b.type} content; not shown to Python]` : undefined;
}

/** The text code gets for a result: exactly the text the model would see (Pi 1.6's own `read` and `bash` attach
 * `structuredContent` too, which must not end up in a script's string). */
export function resultText(result: ToolResultLike | undefined): string {
  const content = Array.isArray(result?.content) ? result.content : [];
  return content
    .map(blockText)
    .filter((t): t is string => t !== undefined)
    .join("\n");
}

/** The result's `structuredContent` as JSON, sent beside the text for Python's `.json()` to fall back on when the
 * text is not JSON; undefined when there is none, the text is JSON already, or it cannot be serialized. */
export function structuredText(result: ToolResultLike | undefined, text: string): string | undefined {
  if (result?.structuredContent === undefined || isJsonText(text)) return undefined;
  try {
    return JSON.stringify(result.structuredContent);
  } catch {
    return undefined;
  }
}

/** Usage as a plain object, when the tool reported one. */
export function usageOf(result: ToolResultLike | undefined): Record<string, unknown> | undefined {
  const u = result?.usage;
  return u && typeof u === "object" && !Array.isArray(u) ? (u as Record<string, unknown>) : undefined;
}
