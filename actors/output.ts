// Output of one run: every byte counted, bounded retention, and a live preview that never splits a UTF-8
// character. Invalid UTF-8 is replaced when decoded, never fatal.

/** Bytes retained per run (both channels together); past it output is drained and counted, not kept. */
export const RETAIN_LIMIT = 64 * 1024 * 1024;
const TAIL_BYTES = 4096;

export type Channel = "stdout" | "stderr";

class ChannelBuffer {
  chunks: Buffer[] = [];
  retained = 0;
  emitted = 0;
  tail: Buffer = Buffer.alloc(0);

  write(chunk: Buffer, room: number): number {
    this.emitted += chunk.length;
    const keep = Math.min(chunk.length, Math.max(0, room));
    if (keep > 0) {
      this.chunks.push(keep === chunk.length ? chunk : chunk.subarray(0, keep));
      this.retained += keep;
    }
    this.tail =
      chunk.length >= TAIL_BYTES
        ? chunk.subarray(chunk.length - TAIL_BYTES)
        : Buffer.concat([this.tail, chunk]).subarray(-TAIL_BYTES);
    return keep;
  }

  text(): string {
    return Buffer.concat(this.chunks, this.retained).toString("utf8");
  }
}

export interface CollectedOutput {
  stdout: string;
  stderr: string;
  stdoutBytes: number;
  stderrBytes: number;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
}

export class RunOutput {
  private readonly channels = { stdout: new ChannelBuffer(), stderr: new ChannelBuffer() };
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

  /** The newest bytes of each channel, starting on a character boundary. */
  preview(maxBytes = TAIL_BYTES): { stdout: string; stderr: string } {
    return {
      stdout: tailText(this.channels.stdout.tail, maxBytes),
      stderr: tailText(this.channels.stderr.tail, maxBytes),
    };
  }

  collect(): CollectedOutput {
    const { stdout, stderr } = this.channels;
    this.listeners = [];
    return {
      stdout: stdout.text(),
      stderr: stderr.text(),
      stdoutBytes: stdout.emitted,
      stderrBytes: stderr.emitted,
      stdoutTruncated: stdout.emitted > stdout.retained,
      stderrTruncated: stderr.emitted > stderr.retained,
    };
  }
}

/** Decodes the last `maxBytes` of `bytes`, skipping UTF-8 continuation bytes at the cut. */
export function tailText(bytes: Buffer, maxBytes: number): string {
  let start = Math.max(0, bytes.length - maxBytes);
  while (start < bytes.length && start > 0 && (bytes[start] & 0xc0) === 0x80) start += 1;
  return bytes.subarray(start, completeEnd(bytes)).toString("utf8");
}

/** Length of `bytes` without a multi-byte character that is still incomplete at its end. */
export function completeEnd(bytes: Buffer): number {
  const n = bytes.length;
  for (let i = n - 1; i >= Math.max(0, n - 4); i--) {
    const b = bytes[i];
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return i + need <= n ? n : i;
  }
  return n;
}
