// Work that no tool result needs (encoding the event log, journal rows, re-checking a saved source, writing an
// output transcript) waits here while a result is pending, and runs once none is. Pi starts the next tool call of a
// turn without an event-loop turn in between, so work put off with setImmediate lands inside the next call; the
// extension therefore runs what waits as soon as Pi is done with a result (`runDeferred()` from its `message_end`
// of the tool result, after `tool_execution_end`). Used without Pi, it runs on the turn after the last pending
// result is released. Nothing waits longer than MAX_DEFER_MS: a long run, or a stream of nested calls, never holds
// it back for long (past that the work runs on the next turns, as if nothing were pending).

/** The longest a task waits for the pending results to end. */
export const MAX_DEFER_MS = 50;

type Task = () => void;

let pending = 0;
let tasks: Task[] = [];
let immediate: ReturnType<typeof setImmediate> | undefined;
let timer: ReturnType<typeof setTimeout> | undefined;
/** Set when a task waited MAX_DEFER_MS: tasks then run on the next turn, pending results or not, until none waits. */
let overdue = false;

/** Marks a tool result as pending; the function returned releases it (once; later calls do nothing). */
export function holdResult(): () => void {
  pending += 1;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    pending -= 1;
    if (pending === 0 && tasks.length) schedule();
  };
}

/** Runs `task` once no result is pending (or after MAX_DEFER_MS), on a later turn or from `runDeferred()`. A task
 * that throws does not stop the others. */
export function afterResults(task: Task): void {
  tasks.push(task);
  if (pending === 0 || overdue) schedule();
  else armTimer();
}

/** A promise that settles when deferred work would run (for async work: `await whenResultsDone()`). */
export function whenResultsDone(): Promise<void> {
  return new Promise((resolve) => afterResults(resolve));
}

/** Runs what waits now, unless a result is still pending (the extension calls it once Pi has a tool's result). Work
 * that a task defers again (a slice of a long encoding) waits for the next turn. */
export function runDeferred(): void {
  if (pending > 0 && !overdue) return;
  drain();
}

/** True while a tool result is pending (deferred work then runs in short slices, if at all). */
export function resultsPending(): boolean {
  return pending > 0;
}

/** Tasks waiting. */
export function deferredCount(): number {
  return tasks.length;
}

function schedule(): void {
  immediate ??= setImmediate(() => {
    immediate = undefined;
    // A result became pending meanwhile: its release schedules again, and the wait stays bounded.
    if (pending > 0 && !overdue) return armTimer();
    drain();
  });
}

/** The bound on the wait: it does not keep the process alive (Pi's exit is not held up by deferred work). */
function armTimer(): void {
  timer ??= setTimeout(expire, MAX_DEFER_MS).unref();
}

function expire(): void {
  timer = undefined;
  overdue = true;
  drain();
}

function drain(): void {
  // Nothing pending: whatever waited has its turn now, and the next pending result gets its own bounded wait.
  if (pending === 0) overdue = false;
  if (timer) clearTimeout(timer);
  timer = undefined;
  if (immediate) clearImmediate(immediate);
  immediate = undefined;
  const now = tasks;
  tasks = [];
  for (const task of now) {
    try {
      task();
    } catch {
      // Deferred work is off every result's path: one task's failure is its own (each reports through its owner).
    }
  }
  if (tasks.length === 0) overdue = false;
  else if (overdue || pending === 0) schedule();
  else armTimer();
}
