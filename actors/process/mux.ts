// Frames of the remote relay's byte stream (runtime-py/relay.py, docs/protocol.md "Remote backends"): 1 byte
// stream id, 4-byte big-endian length, payload. Stream 0: relay messages (JSON); 1/2: the runner's stdout/stderr;
// 3: its control channel, byte for byte.
export const MUX = { relay: 0, stdout: 1, stderr: 2, control: 3 } as const;
const MAX_PAYLOAD = 64 * 1024 * 1024;

export function muxFrame(stream: number, payload: Buffer): Buffer {
  const head = Buffer.allocUnsafe(5);
  head[0] = stream;
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** Incremental decoder; a malformed stream is reported once and stops decoding. */
export class MuxDecoder {
  private buf: Buffer = Buffer.alloc(0);
  private broken = false;
  private readonly onFrame: (stream: number, payload: Buffer) => void;
  private readonly onError: (message: string) => void;
  constructor(onFrame: (stream: number, payload: Buffer) => void, onError: (message: string) => void) {
    this.onFrame = onFrame;
    this.onError = onError;
  }

  push(chunk: Buffer): void {
    if (this.broken) return;
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    while (this.buf.length >= 5) {
      const stream = this.buf[0]!;
      const n = this.buf.readUInt32BE(1);
      if (stream > 3 || n > MAX_PAYLOAD) {
        this.broken = true;
        return this.onError(stream > 3 ? `unknown stream ${stream}` : `frame of ${n} bytes is too large`);
      }
      if (this.buf.length < 5 + n) return;
      const payload = this.buf.subarray(5, 5 + n);
      this.buf = this.buf.subarray(5 + n);
      this.onFrame(stream, payload);
    }
  }
}
