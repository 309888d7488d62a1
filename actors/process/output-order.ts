// Output and frames in the order the runner wrote them. A runner's stdout, stderr and control channel are three
// sockets, and libuv reads the readable ones of one poll in no fixed order: a `done` can be read before the stdout
// bytes written ahead of it, and a display's frame after the stdout bytes written behind it (`display(x);
// console.log("after")` must show x first). A frame that says how much its runner wrote before it (`out:
// [stdoutBytes, stderrBytes]`, counted since the runner started) waits here until that much output has been read,
// and the frames after it wait behind it; output goes out up to the first waiting frame's count on its channel (a
// chunk is cut there) and the rest waits behind that frame. The wait is bounded: bytes the runner counted but that
// never come (a write that failed) hold frames back for OUTPUT_WAIT_MS at most.
import type { Frame } from "./framing.ts";

/** The longest a frame waits for the output it names. */
export const OUTPUT_WAIT_MS = 250;

type Channel = 0 | 1;

export class OutputOrder {
  private readonly emit: (frame: Frame) => void;
  private readonly deliver: (channel: Channel, chunk: Buffer) => void;
  private readonly waitMs: number;
  /** Bytes delivered on stdout (0) and stderr (1). */
  private readonly delivered: [number, number] = [0, 0];
  /** Output read but not delivered yet, per channel, in order. */
  private readonly pending: [Buffer[], Buffer[]] = [[], []];
  private frames: Frame[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The give-up after the wait, run after one poll of the sockets (see `flush`). */
  private giveUp: ReturnType<typeof setImmediate> | undefined;

  /** `deliver`: output in its place among the frames (before the frames that count it, after those that do not). */
  constructor(
    emit: (frame: Frame) => void,
    deliver: (channel: Channel, chunk: Buffer) => void,
    waitMs = OUTPUT_WAIT_MS,
  ) {
    this.emit = emit;
    this.deliver = deliver;
    this.waitMs = waitMs;
  }

  /** Bytes read on stdout (0) or stderr (1). */
  output(channel: Channel, chunk: Buffer): void {
    if (this.frames.length === 0 && this.pending[channel].length === 0) return this.send(channel, chunk);
    this.pending[channel].push(chunk);
    this.flush(false);
  }

  frame(frame: Frame): void {
    this.frames.push(frame);
    this.flush(false);
  }

  /** Everything held goes out now, in order (the runner exited and its output was drained). */
  release(): void {
    this.flush(true);
  }

  private send(channel: Channel, chunk: Buffer): void {
    this.delivered[channel] += chunk.length;
    this.deliver(channel, chunk);
  }

  /** Delivers what is pending on `channel` up to `limit` bytes delivered in all (a chunk is cut at it). */
  private pour(channel: Channel, limit: number): void {
    const queue = this.pending[channel];
    while (queue.length && this.delivered[channel] < limit) {
      const chunk = queue[0]!;
      const room = limit - this.delivered[channel];
      if (chunk.length <= room) {
        queue.shift();
        this.send(channel, chunk);
      } else {
        queue[0] = chunk.subarray(room);
        this.send(channel, chunk.subarray(0, room));
      }
    }
  }

  private flush(force: boolean): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.giveUp) clearImmediate(this.giveUp);
    this.timer = this.giveUp = undefined;
    while (this.frames.length) {
      const head = this.frames[0]!;
      // A frame that names no output keeps the order things were read in: what was read before it goes first.
      const [stdout, stderr] = counts(head) ?? [Infinity, Infinity];
      this.pour(0, stdout);
      this.pour(1, stderr);
      const arrived = counts(head) === undefined || (this.delivered[0] >= stdout && this.delivered[1] >= stderr);
      if (!force && !arrived) break;
      this.frames.shift();
      this.emit(head);
    }
    if (this.frames.length === 0) {
      this.pour(0, Infinity);
      this.pour(1, Infinity);
    } else
      this.timer = setTimeout(() => {
        // A loop that stalled past the wait (a starved process) runs this timer before the poll that reads what
        // arrived meanwhile, the awaited output among it: one poll first, then what is still missing is given up on.
        this.timer = undefined;
        this.giveUp = setImmediate(() => this.flush(true));
      }, this.waitMs);
  }
}

/** What a frame says was written before it, per channel (0 for a channel it does not count); undefined when it
 * names no output at all. */
function counts(frame: Frame): [number, number] | undefined {
  const out = (frame as { out?: unknown }).out;
  if (!Array.isArray(out)) return undefined;
  const [stdout, stderr] = out as unknown[];
  return [typeof stdout === "number" ? stdout : 0, typeof stderr === "number" ? stderr : 0];
}
