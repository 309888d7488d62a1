// One shell session's bytes on the host side: the head+tail window the next call drains, the log file that gets
// every byte, a rolling tail for live previews, totals, stdin, and a change signal that waiting calls listen to
// (output arrived, the process started, the session ended). The machines decide what happened; this only carries.
import type { Result } from "../../lib/result.ts";
import { fail, ok } from "../../lib/result.ts";
import type { LogWriter } from "./logs.ts";
import type { ChildHandle } from "../process/children.ts";
import { OutputWindow, RollingTail, type Drained } from "./window.ts";

export interface SessionEnd {
  end: "exited" | "killed" | "evicted" | "failed";
  at: number;
  code: number | null;
  signal: string | null;
  /** SIGKILL followed the requested signal. */
  escalated?: boolean;
  failure?: string;
}

export class SessionIO {
  readonly id: number;
  readonly window = new OutputWindow();
  readonly tail = new RollingTail();
  readonly log: LogWriter | undefined;
  /** Why there is no log, or why it stopped. */
  logProblem: string | undefined;
  /** Every byte the session wrote. */
  totalBytes = 0;
  handle: ChildHandle | undefined;
  pid: number | undefined;
  ended: SessionEnd | undefined;
  private readonly listeners = new Set<() => void>();
  /** Stdin written before the process started. */
  private readonly held: Uint8Array[] = [];
  private heldFailure: string | undefined;

  constructor(id: number, log: Result<LogWriter>) {
    this.id = id;
    if (log.ok) this.log = log.value;
    else this.logProblem = log.error;
  }

  get logPath(): string | undefined {
    return this.log?.path;
  }

  write(chunk: Buffer): void {
    this.totalBytes += chunk.length;
    this.window.push(chunk);
    this.tail.push(chunk);
    if (this.log) {
      this.log.write(chunk);
      if (this.log.error && !this.logProblem) this.logProblem = `writing the log failed (${this.log.error}); it is incomplete`;
    }
    this.changed();
  }

  /** Stdin. Bytes written while the process is still being spawned (a loaded machine can take longer than the
   * start call's window) are held and delivered, in order, the moment it starts. */
  input(bytes: Uint8Array): Result<void> {
    if (this.ended) return fail("stdin write failed: the process has exited; the bytes were not delivered");
    if (!this.handle) {
      this.held.push(bytes);
      return ok(undefined);
    }
    return this.handle.write(bytes);
  }

  /** Why held input could not be delivered when the process started (once). */
  takeHeldFailure(): string | undefined {
    const failure = this.heldFailure;
    this.heldFailure = undefined;
    return failure;
  }

  drain(): Drained {
    return this.window.drain();
  }

  /** The newest bytes written after `cursor` (a `totalBytes` value), as far as the rolling tail reaches. */
  since(cursor: number): Buffer {
    const tail = this.tail.snapshot();
    const fresh = this.totalBytes - cursor;
    return fresh <= 0 ? Buffer.alloc(0) : tail.subarray(Math.max(0, tail.length - fresh));
  }

  started(handle: ChildHandle): void {
    this.handle = handle;
    this.pid = handle.pid;
    for (const bytes of this.held.splice(0)) {
      const written = handle.write(bytes);
      // That write's call already returned; the next call on this session says it (takeHeldFailure).
      if (!written.ok) this.heldFailure ??= `input written before the process started was not delivered: ${written.error}`;
    }
    this.changed();
  }

  finish(end: SessionEnd): void {
    if (!this.handle && this.held.length) {
      // The process never started (its spawn failed after the start call returned): the input held for it is lost,
      // and the next call on this session says so rather than the bytes vanishing.
      const bytes = this.held.splice(0).reduce((n, b) => n + b.length, 0);
      this.heldFailure ??= `${bytes} bytes of input written before the process started were not delivered: it never started${end.failure ? ` (${end.failure})` : ""}`;
    }
    this.ended ??= end;
    this.log?.close();
    this.changed();
  }

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  changed(): void {
    for (const fn of [...this.listeners]) fn();
  }
}
