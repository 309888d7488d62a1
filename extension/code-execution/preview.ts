// The model-visible result text of a run, at most 20 KiB: the whole transcript when it fits, otherwise its
// head (where stdout starts) and its tail (where a traceback ends) with exact counts of what was left out, a
// line saying whether everything is recoverable, and finally an `outputId:` line.
import type { ArtifactOutcome, ChannelCapture } from "../../host/index.ts";
import { emittedTranscript } from "../../store/artifacts.ts";

export const MAX_TEXT_BYTES = 20 * 1024;
/** Room kept for the omission marker, the recovery line and the outputId line. */
const MARKER_RESERVE = 1024;
const STDERR_LINE = Buffer.from("[stderr]\n");
const NEWLINE_STDERR_LINE = Buffer.from("\n[stderr]\n");

export interface Capture {
  stdout: ChannelCapture;
  stderr: ChannelCapture;
}

export type { ArtifactOutcome };

function joinLines(out: string, notices: string[]): string {
  if (notices.length === 0) return out || "[no output]";
  return `${out}${out && !out.endsWith("\n") ? "\n" : ""}${notices.join("\n")}`;
}

function boundary(c: Capture): Buffer {
  if (c.stderr.emittedBytes === 0) return Buffer.alloc(0);
  return c.stdout.emittedBytes > 0 && !c.stdout.endsWithNewline ? NEWLINE_STDERR_LINE : STDERR_LINE;
}

/** The complete text when the whole output and the notices fit in 20 KiB; otherwise undefined. */
export function completeText(c: Capture, notices: string[]): string | undefined {
  const { stdout, stderr } = c;
  if (stdout.head.length < stdout.emittedBytes || stderr.head.length < stderr.emittedBytes) return undefined;
  const text = joinLines(Buffer.concat([stdout.head, boundary(c), stderr.head]).toString("utf8"), notices);
  return Buffer.byteLength(text, "utf8") <= MAX_TEXT_BYTES ? text : undefined;
}

function newlinesIn(bytes: Buffer): number {
  let n = 0;
  for (let i = bytes.indexOf(0x0a); i !== -1; i = bytes.indexOf(0x0a, i + 1)) n++;
  return n;
}

/** Decodes `bytes[0, cut)`, shrinking `cut` until the text is at most `budget` bytes (invalid UTF-8 grows). */
function fitHead(bytes: Buffer, budget: number): { cut: number; text: string } {
  let cut = Math.min(bytes.length, budget);
  for (;;) {
    while (cut > 0 && cut < bytes.length && (bytes[cut] & 0xc0) === 0x80) cut--;
    const nl = bytes.lastIndexOf(0x0a, cut - 1);
    if (nl >= 0 && nl + 1 >= cut - (budget >> 2)) cut = nl + 1; // end on a line break when one is near
    const text = bytes.subarray(0, cut).toString("utf8");
    const size = Buffer.byteLength(text, "utf8");
    if (size <= budget || cut === 0) return { cut, text };
    cut = Math.floor((cut * budget) / size) - 1;
  }
}

/** Decodes `bytes[start, end)` with `start >= floor`, moving `start` forward until the text fits `budget`. */
function fitTail(bytes: Buffer, budget: number, floor: number): { start: number; text: string } {
  let start = Math.max(floor, bytes.length - budget);
  for (;;) {
    while (start < bytes.length && (bytes[start] & 0xc0) === 0x80) start++;
    const nl = start > 0 ? bytes.indexOf(0x0a, start - 1) : -1;
    if (nl >= 0 && nl + 1 <= start + (budget >> 2)) start = nl + 1; // start on a fresh line when one is near
    const text = bytes.subarray(start).toString("utf8");
    const size = Buffer.byteLength(text, "utf8");
    if (size <= budget || start >= bytes.length) return { start, text };
    start = bytes.length - Math.floor(((bytes.length - start) * budget) / size) + 1;
  }
}

/** Head-tail text for output that does not fit. `artifact` says whether (and how) the transcript was saved. */
export function headTailText(c: Capture, notices: string[], artifact: ArtifactOutcome): string {
  const { stdout, stderr } = c;
  const b = boundary(c);
  const total = emittedTranscript(stdout, stderr);
  const noticeBytes = notices.reduce((n, l) => n + Buffer.byteLength(l, "utf8") + 1, 0);
  const content = Math.max(2048, MAX_TEXT_BYTES - MARKER_RESERVE - noticeBytes);
  const headBudget = Math.floor(content / 2);
  const tailBudget = content - headBudget;

  // The transcript's first and last bytes, from each channel's first and last window.
  const headSrc = stdout.emittedBytes >= headBudget ? stdout.head : Buffer.concat([stdout.head, b, stderr.head]);
  const tailSrc =
    stderr.emittedBytes === 0
      ? stdout.tail
      : stderr.emittedBytes >= tailBudget
        ? stderr.tail
        : Buffer.concat([stdout.tail, b, stderr.tail]);
  const head = fitHead(headSrc, headBudget);
  // Where the tail window starts in the transcript; the tail must not repeat bytes the head shows.
  const tailOrigin = total.bytes - tailSrc.length;
  const tail = fitTail(tailSrc, tailBudget, Math.max(0, head.cut - tailOrigin));
  const shownHead = head.cut;
  const shownTail = tailSrc.length - tail.start;
  const omittedBytes = total.bytes - shownHead - shownTail;

  const headBytes = headSrc.subarray(0, head.cut);
  const tailBytes = tailSrc.subarray(tail.start);
  const lastByteNewline = stderr.emittedBytes > 0 ? stderr.endsWithNewline : stdout.endsWithNewline;
  const newlinesTotal = total.lines - (total.bytes > 0 && !lastByteNewline ? 1 : 0);
  const middleNewlines = newlinesTotal - newlinesIn(headBytes) - newlinesIn(tailBytes);
  const headEndsLine = headBytes.length === 0 || headBytes[headBytes.length - 1] === 0x0a;
  const omittedLines = Math.max(0, middleNewlines - (!headEndsLine && middleNewlines > 0 ? 1 : 0));

  // When the `[stderr]` line itself is omitted, say where the tail comes from.
  const stderrStarts = stdout.emittedBytes + b.length;
  const tailIsStderr = stderr.emittedBytes > 0 && head.cut < stderrStarts && tailOrigin + tail.start >= stderrStarts;

  const parts: string[] = [];
  if (head.text) parts.push(head.text.endsWith("\n") ? head.text.slice(0, -1) : head.text);
  parts.push(
    `[... ${omittedBytes} bytes omitted (${omittedLines} whole lines); the output was ${total.bytes} bytes, ${total.lines} lines${tailIsStderr ? "; below is the end of stderr" : ""} ...]`,
  );
  if (tail.text) parts.push(tail.text.endsWith("\n") ? tail.text.slice(0, -1) : tail.text);
  if (artifact.ok) {
    const r = artifact.ref;
    parts.push(
      r.truncated
        ? `[the saved output is truncated: ${r.retainedBytes} of ${r.emittedBytes} bytes were kept (the per-run limit is 64 MiB); the rest cannot be recovered. Read what was kept with code_execution_output and the outputId below]`
        : `[all ${r.retainedBytes} bytes are saved: read them with code_execution_output and the outputId below, no need to rerun]`,
    );
  } else {
    parts.push(`[the full output could not be saved (${artifact.error}); only this preview is available]`);
  }
  parts.push(...notices);
  if (artifact.ok) parts.push(`outputId: ${artifact.ref.outputId}`);
  return parts.join("\n");
}
