// Output before the frames that follow it. A runner's stdout, stderr and control channel are three sockets, and
// libuv reads the readable ones of one poll in no fixed order (a `done` can be read before the stdout bytes
// written ahead of it, and in a later poll than them). A frame that says how much its runner wrote before it
// (`out: [stdoutBytes, stderrBytes]`, counted since the runner started) waits here until that much output has been
// read, and the frames after it wait behind it, so output lands in the run that wrote it. The wait is bounded:
// bytes the runner counted but that never come (a write that failed) hold frames back for OUTPUT_WAIT_MS at most.
import type { Frame } from "./framing.ts";

/** The longest a frame waits for the output it names. */
export const OUTPUT_WAIT_MS = 250;

export class OutputOrder {
  private readonly emit: (frame: Frame) => void;
  private readonly waitMs: number;
  private readonly read: [number, number] = [0, 0];
  private queue: Frame[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(emit: (frame: Frame) => void, waitMs = OUTPUT_WAIT_MS) {
    this.emit = emit;
    this.waitMs = waitMs;
  }

  /** Bytes read on stdout (0) or stderr (1), after their listeners had them. */
  output(channel: 0 | 1, bytes: number): void {
    this.read[channel] += bytes;
    if (this.queue.length) this.flush(false);
  }

  frame(frame: Frame): void {
    this.queue.push(frame);
    this.flush(false);
  }

  /** Everything held goes out now (the runner exited and its output was drained). */
  release(): void {
    this.flush(true);
  }

  private flush(force: boolean): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    let i = 0;
    for (; i < this.queue.length; i++) {
      if (!force && !this.arrived(this.queue[i]!)) break;
    }
    const ready = i === this.queue.length ? this.queue : this.queue.slice(0, i);
    this.queue = i === this.queue.length ? [] : this.queue.slice(i);
    for (const f of ready) this.emit(f);
    if (this.queue.length) this.timer = setTimeout(() => this.flush(true), this.waitMs);
  }

  private arrived(frame: Frame): boolean {
    const out = (frame as { out?: unknown }).out;
    if (!Array.isArray(out)) return true;
    const [stdout, stderr] = out as unknown[];
    return (
      (typeof stdout !== "number" || this.read[0] >= stdout) && (typeof stderr !== "number" || this.read[1] >= stderr)
    );
  }
}
