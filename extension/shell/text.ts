// Shell output as the model and the terminal UI see it: inert plain text (terminal control sequences stripped,
// carriage-return rewrites resolved, other control characters dropped), then its tail within Pi's bash limits
// (50 KiB / 2000 lines) with a footer naming the log that holds the raw stream.
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, formatSize, truncateTail } from "@earendil-works/pi-coding-agent";
import stripAnsi from "strip-ansi";

export const MAX_BYTES = DEFAULT_MAX_BYTES;
export const MAX_LINES = DEFAULT_MAX_LINES;

// C0 controls but tab and newline, DEL, C1 controls, interlinear annotation marks, lone surrogate halves.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\ufff9-\ufffb]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Text that cannot reprogram a terminal: escape sequences removed (strip-ansi), `\r\n` as `\n`, a line rewritten
 * with `\r` shown as it ends (progress bars), every other control character dropped. */
export function inertText(raw: string): string {
  let s = stripAnsi(raw);
  if (s.includes("\r")) {
    s = s.replace(/\r+\n/g, "\n");
    if (s.includes("\r")) s = s.replace(/[^\n]*\r(?=[^\n])/g, "");
  }
  return s.replace(CONTROL, "");
}

/** Metadata shown beside output (paths, commands, messages): inert, on one line, at most `max` characters. */
export function oneLine(raw: string, max = 4096): string {
  const s = inertText(raw.length > max * 4 ? raw.slice(0, max * 4) : raw)
    .replace(/\s+/g, " ")
    .trim();
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

export interface ModelOutput {
  /** The tail of the inert text within the limits. */
  text: string;
  truncated: boolean;
  /** `[Showing lines a-b of n (50.0KB limit). Full output: <log>]` when truncated. */
  footer?: string;
  totalLines: number;
  shownLines: number;
}

const decoder = new TextDecoder("utf-8", { fatal: false });

export function modelOutput(bytes: Uint8Array, logPath: string | undefined): ModelOutput {
  const text = inertText(decoder.decode(bytes));
  const t = truncateTail(text, { maxBytes: MAX_BYTES, maxLines: MAX_LINES });
  if (!t.truncated) return { text: t.content, truncated: false, totalLines: t.totalLines, shownLines: t.outputLines };
  const full = logPath ? `. Full output: ${oneLine(logPath)}` : "";
  const footer = t.lastLinePartial
    ? `[Showing the last ${formatSize(t.outputBytes)} of line ${t.totalLines} (${formatSize(MAX_BYTES)} limit)${full}]`
    : `[Showing lines ${t.totalLines - t.outputLines + 1}-${t.totalLines} of ${t.totalLines}` +
      `${t.truncatedBy === "bytes" ? ` (${formatSize(MAX_BYTES)} limit)` : ""}${full}]`;
  return { text: t.content, truncated: true, footer, totalLines: t.totalLines, shownLines: t.outputLines };
}
