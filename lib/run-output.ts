// Output of one run: every byte counted, bounded retention, and a live preview that never splits a UTF-8
// character. Invalid UTF-8 is replaced when decoded, never fatal.
import { createHash, type Hash } from "node:crypto";

/** Bytes retained per run (both channels together); past it output is drained and counted, not kept. */
export const RETAIN_LIMIT = 64 * 1024 * 1024;
/** The first and the last bytes of each channel kept whatever the retention: the final preview's head and tail
 * (a traceback written after the retention filled up still reaches the model). */
export const WINDOW_BYTES = 20 * 1024;
const LIVE_BYTES = 4096;
/** Retained stdout past this is hashed as it arrives (the transcript's digest, store/artifacts.ts), so a long output's
 * digest is not computed on the result path; output below it never needs an artifact or costs too little to matter. */
// Stryker disable next-line ArithmeticOperator: equivalent, where the running digest starts changes its speed only.
const DIGEST_FROM = 16 * 1024;

export type Channel = "stdout" | "stderr";

/** One channel as emitted: exact counts, the retained prefix, and its first and last bytes. */
export interface ChannelCapture {
  emittedBytes: number;
  /** Lines as a text editor counts them: line breaks, plus one for a final line without a break. */
  emittedLines: number;
  endsWithNewline: boolean;
  retainedBytes: number;
  /** Line breaks (0x0a) in the retained prefix. */
  retainedNewlines: number;
  /** The retained prefix, in order (shared, not copied). */
  chunks: readonly Buffer[];
  /** The first min(emittedBytes, WINDOW_BYTES) bytes. */
  head: Buffer;
  /** The last min(emittedBytes, WINDOW_BYTES) bytes. */
  tail: Buffer;
}

/** A SHA-256 of a channel's first `count` retained chunks, kept up to date as they arrive, by the chunks array it
 * covers (the one a capture shares). */
interface RunningDigest {
  hash: Hash | undefined;
  count: number;
}
const digests = new WeakMap<readonly Buffer[], RunningDigest>();

/** A SHA-256 of the channel's retained bytes, ready for more (the transcript goes on with stderr): a copy of the one
 * hashed as the chunks arrived, finished with the chunks not hashed yet; from scratch for other captures. */
export function retainedDigest(capture: ChannelCapture): Hash {
  const running = digests.get(capture.chunks);
  const hash = running?.hash ? running.hash.copy() : createHash("sha256");
  for (let i = running?.hash ? running.count : 0; i < capture.chunks.length; i++) hash.update(capture.chunks[i]!);
  return hash;
}

class ChannelBuffer {
  readonly chunks: Buffer[] = [];
  retained = 0;
  retainedNewlines = 0;
  emitted = 0;
  newlines = 0;
  // Stryker disable next-line UnaryOperator: equivalent, it is read only after a write and never equals 0x0a.
  lastByte = -1;
  private head: Buffer | undefined;
  private headLength = 0;
  private readonly tail = new Ring(WINDOW_BYTES);
  private readonly digest: RunningDigest | undefined;

  /** `digest`: hash the retained bytes as they arrive (stdout, which starts the transcript). The running digest
   * changes when hashing happens, never the digest (`retainedDigest` finishes or makes it): its mutants are equivalent
   * (test/lib/output.test.ts checks the digest for every size around its start, in one write or many). */
  // Stryker disable next-line BooleanLiteral,BlockStatement: equivalent (speed only, above).
  constructor(digest = false) {
    // Stryker disable next-line ConditionalExpression: equivalent (speed only, above).
    if (digest) digests.set(this.chunks, (this.digest = { hash: undefined, count: 0 }));
  }

  write(chunk: Buffer, room: number): number {
    if (chunk.length === 0) return 0;
    this.emitted += chunk.length;
    const newlines = countNewlines(chunk);
    this.newlines += newlines;
    this.lastByte = chunk[chunk.length - 1];
    // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, a full head copies 0 bytes.
    if (this.headLength < WINDOW_BYTES) {
      this.head ??= Buffer.allocUnsafe(WINDOW_BYTES);
      // Stryker disable next-line ArithmeticOperator: equivalent, Buffer.copy stops at the target's end.
      this.headLength += chunk.copy(this.head, this.headLength, 0, WINDOW_BYTES - this.headLength);
    }
    this.tail.write(chunk);
    const keep = Math.min(chunk.length, Math.max(0, room));
    if (keep > 0) {
      // Stryker disable next-line ConditionalExpression: equivalent, a subarray of all of it holds the same bytes.
      const kept = keep === chunk.length ? chunk : chunk.subarray(0, keep);
      this.chunks.push(kept);
      this.retained += keep;
      this.retainedNewlines += kept === chunk ? newlines : countNewlines(kept);
      const d = this.digest;
      // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement: equivalent (speed only, the
      // constructor's note).
      if (d && this.retained >= DIGEST_FROM) {
        d.hash ??= createHash("sha256");
        // Stryker disable next-line EqualityOperator: equivalent, the hash is left with no chunk and finished later.
        while (d.count < this.chunks.length) d.hash.update(this.chunks[d.count++]!);
      }
    }
    return keep;
  }

  liveTail(): Buffer {
    return this.tail.last(LIVE_BYTES);
  }

  capture(): ChannelCapture {
    return {
      emittedBytes: this.emitted,
      emittedLines: this.newlines + (this.emitted > 0 && this.lastByte !== 0x0a ? 1 : 0),
      endsWithNewline: this.lastByte === 0x0a,
      retainedBytes: this.retained,
      retainedNewlines: this.retainedNewlines,
      chunks: this.chunks,
      head: Buffer.from(this.head?.subarray(0, this.headLength) ?? []),
      tail: this.tail.last(WINDOW_BYTES),
    };
  }

  text(): string {
    return Buffer.concat(this.chunks, this.retained).toString("utf8");
  }

  /** The retained bytes from `from` to `to`. */
  slice(from: number, to = this.retained): Buffer {
    const parts: Buffer[] = [];
    let at = 0;
    for (const chunk of this.chunks) {
      // Stryker disable next-line EqualityOperator: equivalent, a chunk starting at `to` adds no bytes (speed only).
      if (at >= to) break;
      const end = at + chunk.length;
      // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, a chunk ending by `from` adds
      // no bytes.
      if (end > from) parts.push(chunk.subarray(Math.max(0, from - at), Math.min(chunk.length, to - at)));
      at = end;
    }
    return Buffer.concat(parts);
  }
}

/** Where each channel's retained output ended at some moment (a batch's cell boundary, host/host.ts). */
export interface OutputMark {
  stdout: number;
  stderr: number;
}

/** The newest `size` bytes written, in a fixed buffer: O(chunk) per write however small the chunks are. */
class Ring {
  private buf: Buffer | undefined;
  private end = 0;
  private full = false;
  private readonly size: number;
  constructor(size: number) {
    this.size = size;
  }

  write(chunk: Buffer): void {
    const size = this.size;
    const buf = (this.buf ??= Buffer.allocUnsafe(size));
    // Stryker disable next-line EqualityOperator: equivalent, a chunk of exactly `size` fills the window either way.
    if (chunk.length >= size) {
      chunk.copy(buf, 0, chunk.length - size);
      this.end = 0;
      this.full = true;
      return;
    }
    // Stryker disable next-line ArithmeticOperator,MethodExpression: equivalent, Buffer.copy stops at either end.
    const first = chunk.copy(buf, this.end, 0, Math.min(chunk.length, size - this.end));
    if (first < chunk.length) {
      this.end = chunk.copy(buf, 0, first);
      this.full = true;
    } else {
      this.end += first;
      // Equivalent if skipped: an end at `size` reads as the whole window in order, and the next write wraps.
      // Stryker disable next-line ConditionalExpression,BlockStatement: equivalent (above).
      if (this.end === size) {
        this.end = 0;
        this.full = true;
      }
    }
  }

  /** A copy of the newest `n` bytes (fewer if fewer were written). */
  last(n: number): Buffer {
    if (!this.buf) return Buffer.alloc(0);
    const ordered = this.full
      ? Buffer.concat([this.buf.subarray(this.end), this.buf.subarray(0, this.end)])
      : Buffer.from(this.buf.subarray(0, this.end));
    // Never cutting would be equivalent for every caller (the capture asks for the whole window; the preview cuts
    // its own 4 KiB); always cutting would not: a negative start counts from the end, so fewer than `n` bytes but
    // more than `n / 2` would lose their beginning (test/lib/output.test.ts, output shorter than the window).
    // Stryker disable next-line ConditionalExpression,EqualityOperator: never cutting is equivalent (above).
    return ordered.length > n ? ordered.subarray(ordered.length - n) : ordered;
  }
}

/** Counts 0x0a bytes: `indexOf` is fastest for long lines, a byte loop for very short ones. */
export function countNewlines(bytes: Buffer): number {
  let n = 0;
  let i = bytes.indexOf(0x0a);
  const dense = bytes.length >> 5;
  while (i !== -1) {
    n += 1;
    // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement: equivalent, both ways count every 0x0a (speed only).
    if (n > dense) {
      // Stryker disable next-line EqualityOperator: equivalent, the byte past the end is undefined, never 0x0a.
      for (let j = i + 1; j < bytes.length; j++) if (bytes[j] === 0x0a) n += 1;
      return n;
    }
    i = bytes.indexOf(0x0a, i + 1);
  }
  return n;
}

export interface CollectedOutput {
  /** Retained stdout, decoded (invalid UTF-8 replaced). */
  stdout: string;
  stderr: string;
  stdoutBytes: number;
  stderrBytes: number;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  /** Both channels as emitted: the material of the preview and of the output artifact. */
  capture: { stdout: ChannelCapture; stderr: ChannelCapture };
}

export class RunOutput {
  // Stryker disable next-line BooleanLiteral: equivalent (speed only, ChannelBuffer's constructor).
  private readonly channels = { stdout: new ChannelBuffer(true), stderr: new ChannelBuffer() };
  private retained = 0;
  private listeners: (() => void)[] = [];

  private readonly limit: number;
  constructor(limit = RETAIN_LIMIT) {
    this.limit = limit;
  }

  write(channel: Channel, chunk: Buffer): void {
    this.retained += this.channels[channel].write(chunk, this.limit - this.retained);
    for (const fn of this.listeners) fn();
  }

  onWrite(fn: () => void): void {
    this.listeners.push(fn);
  }

  /** The newest output of each channel as text of at most `maxBytes` UTF-8 bytes, cut on character boundaries. */
  preview(maxBytes = LIVE_BYTES): { stdout: string; stderr: string } {
    return {
      stdout: liveWindow(this.channels.stdout.liveTail(), maxBytes),
      stderr: liveWindow(this.channels.stderr.liveTail(), maxBytes),
    };
  }

  /** Where the retained output of each channel ends now. */
  mark(): OutputMark {
    return { stdout: this.channels.stdout.retained, stderr: this.channels.stderr.retained };
  }

  /** A channel's retained output between two marks, decoded (a batch's cell: what it wrote). */
  between(channel: Channel, from: number, to?: number): string {
    return this.channels[channel].slice(from, to).toString("utf8");
  }

  /** As `preview`, of the output written since `from` only (the running cell of a batch). */
  previewSince(from: OutputMark, maxBytes = LIVE_BYTES): { stdout: string; stderr: string } {
    const since = (channel: Channel) => {
      const c = this.channels[channel];
      return liveWindow(c.slice(Math.max(from[channel], c.retained - maxBytes)), maxBytes);
    };
    return { stdout: since("stdout"), stderr: since("stderr") };
  }

  /** The run's output. `stdout`/`stderr` are decoded on first read: up to 64 MiB of text nobody may need. */
  collect(): CollectedOutput {
    const { stdout, stderr } = this.channels;
    this.listeners = [];
    const lazy = (channel: ChannelBuffer) => {
      let text: string | undefined;
      return { enumerable: true, get: () => (text ??= channel.text()) };
    };
    return Object.defineProperties(
      {
        stdoutBytes: stdout.emitted,
        stderrBytes: stderr.emitted,
        stdoutTruncated: stdout.emitted > stdout.retained,
        stderrTruncated: stderr.emitted > stderr.retained,
        capture: { stdout: stdout.capture(), stderr: stderr.capture() },
      },
      { stdout: lazy(stdout), stderr: lazy(stderr) },
    ) as CollectedOutput;
  }
}

/** The newest `maxBytes` of a channel, decoded: invalid bytes become U+FFFD (3 bytes each), so the text is cut
 * again to stay within `maxBytes`. */
function liveWindow(bytes: Buffer, maxBytes: number): string {
  const text = tailText(bytes, maxBytes);
  const encoded = Buffer.from(text, "utf8");
  // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, cutting complete text within the
  // window again gives it back whole.
  return encoded.length <= maxBytes ? text : tailText(encoded, maxBytes);
}

/** Decodes the last `maxBytes` of `bytes` (a window of newer bytes of a stream), skipping the continuation bytes
 * of a character cut at its start (also when the window itself starts inside one) and holding back a character
 * still incomplete at its end. */
export function tailText(bytes: Buffer, maxBytes: number): string {
  let start = Math.max(0, bytes.length - maxBytes);
  // A character has at most three continuation bytes: more are invalid bytes, replaced when decoded.
  const limit = Math.min(bytes.length, start + 3);
  while (start < limit && (bytes[start] & 0xc0) === 0x80) start += 1;
  return bytes.subarray(start, Math.max(start, completeEnd(bytes))).toString("utf8");
}

/** Length of `bytes` without a multi-byte character that is still incomplete at its end. */
export function completeEnd(bytes: Buffer): number {
  const n = bytes.length;
  // Stryker disable next-line MethodExpression: equivalent, a lead further back than 4 bytes is never incomplete.
  for (let i = n - 1; i >= Math.max(0, n - 4); i--) {
    const b = bytes[i];
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    // 0xc0 and 0xc1 never start a valid character: shown at once (as U+FFFD), like a stray byte.
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc2 ? 2 : 1;
    return i + need <= n ? n : i;
  }
  return n;
}
