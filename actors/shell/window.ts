// The in-memory output of a shell session between two drains: the first half and the last half of a fixed budget
// (1 MiB by default), with the exact number of bytes dropped in between. A drain returns head, an omission marker
// spliced in at the exact cut, and tail, then starts over. Every byte also goes to the session's log file, so the
// marker can point there.

export const WINDOW_BYTES = 1024 * 1024;

export function omissionMarker(omitted: number, budget: number): string {
  return `\n[... ${omitted} bytes omitted here (output exceeded the ${budget}-byte in-memory retention between polls; the full stream is in the session log file) ...]\n`;
}

export interface Drained {
  /** Head, marker (when bytes were dropped), tail. */
  bytes: Uint8Array;
  /** Bytes dropped between head and tail. */
  omitted: number;
}

export class OutputWindow {
  readonly budget: number;
  private readonly headMax: number;
  private readonly tailMax: number;
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private omitted = 0;

  constructor(budget = WINDOW_BYTES) {
    this.budget = budget;
    this.headMax = Math.floor(budget / 2);
    this.tailMax = budget - this.headMax;
  }

  /** Bytes held now (head + tail). */
  get size(): number {
    return this.headBytes + this.tailBytes;
  }

  get pending(): boolean {
    return this.size > 0 || this.omitted > 0;
  }

  push(chunk: Uint8Array): void {
    let c = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (c.length === 0) return;
    if (this.headBytes < this.headMax) {
      const take = Math.min(c.length, this.headMax - this.headBytes);
      this.head.push(take === c.length ? c : c.subarray(0, take));
      this.headBytes += take;
      c = c.subarray(take);
      if (c.length === 0) return;
    }
    this.tail.push(c);
    this.tailBytes += c.length;
    // Keep only the newest tailMax bytes; what falls out is counted, never silently lost.
    const dropped = dropOldest(this.tail, this.tailBytes, this.tailMax);
    this.tailBytes -= dropped;
    this.omitted += dropped;
  }

  /** Everything held, with the marker at the cut; the window is empty afterwards. */
  drain(): Drained {
    const parts = [...this.head];
    const omitted = this.omitted;
    if (omitted > 0) parts.push(Buffer.from(omissionMarker(omitted, this.budget), "utf8"));
    parts.push(...this.tail);
    this.head = [];
    this.tail = [];
    this.headBytes = 0;
    this.tailBytes = 0;
    this.omitted = 0;
    return { bytes: parts.length === 1 ? parts[0] : Buffer.concat(parts), omitted };
  }
}

/** The newest bytes of the stream (a rolling window for live previews), independent of drains. */
export class RollingTail {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private readonly max: number;

  constructor(max = 32 * 1024) {
    this.max = max;
  }

  push(chunk: Uint8Array): void {
    const c = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.chunks.push(c.length > this.max ? c.subarray(c.length - this.max) : c);
    this.bytes += Math.min(c.length, this.max);
    this.bytes -= dropOldest(this.chunks, this.bytes, this.max);
  }

  snapshot(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** Drops the oldest bytes of `chunks` (holding `size` bytes in all) until at most `max` remain; returns how many. */
function dropOldest(chunks: Buffer[], size: number, max: number): number {
  let dropped = 0;
  while (size - dropped > max) {
    const over = size - dropped - max;
    const first = chunks[0];
    if (first.length <= over) {
      chunks.shift();
      dropped += first.length;
    } else {
      chunks[0] = first.subarray(over);
      dropped += over;
    }
  }
  return dropped;
}
