// Waiting on a shell session, event driven: a waiting call wakes on the session's changes (output, start, end),
// its cancellation, or one timer. Time is monotonic (`performance.now()`): a deadline given on the wall clock is
// turned into a duration once by the caller, so clock changes cannot stretch or shorten a wait. Timers longer than
// setTimeout allows are re-armed in chunks. A wait never touches the process: it only stops watching.
import type { SessionIO } from "./session-io.ts";

export type WaitOutcome = "exit" | "answer" | "deadline" | "cancelled";

/** The largest single setTimeout; longer waits re-arm. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface WaitOptions {
  durationMs: number;
  signal?: AbortSignal;
  /** Also return as soon as this holds (checked on every change). */
  answered?: () => boolean;
  /** Monotonic clock (tests). */
  now?: () => number;
}

export function waitOn(io: SessionIO, options: WaitOptions): Promise<WaitOutcome> {
  const now = options.now ?? (() => performance.now());
  const check = (): WaitOutcome | undefined =>
    io.ended ? "exit" : options.answered?.() ? "answer" : options.signal?.aborted ? "cancelled" : undefined;
  const first = check();
  if (first) return Promise.resolve(first);
  if (options.durationMs <= 0) return Promise.resolve("deadline");
  const started = now();
  return new Promise((resolve) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const done = (outcome: WaitOutcome) => {
      clearTimeout(timer);
      off();
      options.signal?.removeEventListener("abort", onAbort);
      resolve(outcome);
    };
    const onChange = () => {
      const o = check();
      if (o) done(o);
    };
    const onAbort = () => done("cancelled");
    const arm = () => {
      const left = options.durationMs - (now() - started);
      if (left <= 0) return done("deadline");
      timer = setTimeout(arm, Math.min(Math.max(1, Math.ceil(left)), MAX_TIMER_MS));
    };
    const off = io.onChange(onChange);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    arm();
  });
}

/** Resolves once the event loop has handled what is already readable (output arriving in the same burst). */
export function settleTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Whether the session has answered input written at `cursor`: output arrived after it that is more than the
 * terminal echoing the input back (in a PTY the line discipline echoes what is typed, with CR or LF shown as
 * CRLF). In pipe mode any output is the answer.
 */
export function answeredAfter(io: SessionIO, cursor: number, written: Uint8Array, tty: boolean): () => boolean {
  const echo = tty ? Buffer.from(Buffer.from(written).toString("latin1").replace(/\r\n|\r|\n/g, "\r\n"), "latin1") : undefined;
  return () => {
    const fresh = io.since(cursor);
    if (fresh.length === 0) return false;
    if (!echo) return true;
    const n = Math.min(fresh.length, echo.length);
    // Anything that is not (a prefix of) the echo, or anything after the whole echo, is the program speaking.
    if (!fresh.subarray(0, n).equals(echo.subarray(0, n))) return true;
    return fresh.length > echo.length;
  };
}
