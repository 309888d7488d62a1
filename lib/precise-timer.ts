// Timers that fire on time. Node runs timers on a millisecond loop clock, so a setTimeout fires up to a millisecond
// or two after it is due; a run's deadline that fires late is an interrupt that comes late. The actor system's
// timers (deadlines, grace periods, debounces: rare, and mostly cancelled before they fire) are armed short of
// their due time by EARLY_MS, and the rest is waited out turn by turn (setImmediate, so I/O is still served):
// at most EARLY_MS of a busy loop, and only for a timer that reaches its end.

/** How far ahead of its due time a timer hands over from Node's timer (which can fire a millisecond or two late) to
 * the turn-by-turn wait. */
export const EARLY_MS = 2;

export interface PreciseTimer {
  timeout: ReturnType<typeof setTimeout> | undefined;
  immediate: ReturnType<typeof setImmediate> | undefined;
  cancelled: boolean;
}

/** Calls `fn` once `ms` milliseconds have passed (performance.now()), within a turn of the event loop. */
export function setPreciseTimeout(fn: () => void, ms: number): PreciseTimer {
  const due = performance.now() + Math.max(0, ms);
  const timer: PreciseTimer = { timeout: undefined, immediate: undefined, cancelled: false };
  const check = () => {
    timer.timeout = undefined;
    timer.immediate = undefined;
    if (timer.cancelled) return;
    const left = due - performance.now();
    if (left <= 0) return fn();
    if (left > EARLY_MS) timer.timeout = setTimeout(check, left - EARLY_MS);
    else timer.immediate = setImmediate(check);
  };
  if (ms > EARLY_MS) timer.timeout = setTimeout(check, ms - EARLY_MS);
  else timer.immediate = setImmediate(check);
  return timer;
}

export function clearPreciseTimeout(timer: PreciseTimer): void {
  timer.cancelled = true;
  if (timer.timeout) clearTimeout(timer.timeout);
  if (timer.immediate) clearImmediate(timer.immediate);
  timer.timeout = undefined;
  timer.immediate = undefined;
}

/** An XState clock on precise timers (the actor system's default here; record/observe.ts numbers its own). */
export const preciseClock = {
  setTimeout: (fn: (...args: unknown[]) => void, ms: number): unknown => setPreciseTimeout(() => fn(), ms),
  clearTimeout: (id: unknown): void => clearPreciseTimeout(id as PreciseTimer),
};
