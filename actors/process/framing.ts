// Length-prefixed JSON frames on the control channel (docs/protocol.md): 4-byte big-endian length, then UTF-8 JSON.
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

export function encodeFrame(value: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(value), "utf8");
  if (body.length > MAX_FRAME_BYTES) throw new RangeError(`frame of ${body.length} bytes exceeds ${MAX_FRAME_BYTES}`);
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(body.length, 0);
  return Buffer.concat([head, body]);
}

export type Frame = { type: string; [key: string]: unknown };

/** Incremental decoder: feed chunks, get whole frames; a malformed stream is reported once and stops decoding. */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private broken = false;
  private readonly onFrame: (frame: Frame) => void;
  private readonly onError: (message: string) => void;
  constructor(onFrame: (frame: Frame) => void, onError: (message: string) => void) {
    this.onFrame = onFrame;
    this.onError = onError;
  }

  push(chunk: Buffer): void {
    if (this.broken) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    while (this.buffered >= 4) {
      const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.buffered);
      this.chunks = [all];
      const length = all.readUInt32BE(0);
      if (length > MAX_FRAME_BYTES) return this.breakWith(`control frame of ${length} bytes exceeds the limit`);
      if (all.length < 4 + length) return;
      const body = all.subarray(4, 4 + length);
      const rest = all.subarray(4 + length);
      this.chunks = rest.length ? [rest] : [];
      this.buffered = rest.length;
      let frame: unknown;
      try {
        frame = JSON.parse(body.toString("utf8"));
      } catch {
        return this.breakWith("control frame is not valid JSON");
      }
      if (!frame || typeof frame !== "object" || typeof (frame as Frame).type !== "string") {
        return this.breakWith("control frame has no type");
      }
      this.onFrame(frame as Frame);
    }
  }

  private breakWith(message: string): void {
    this.broken = true;
    this.chunks = [];
    this.onError(message);
  }
}
