// Builders for the outcomes the machine tests expect. They only fill in what nearly every expected outcome repeats;
// they never call machines/run-outcome.ts (a test must not compute its expected value with the code under test), and
// they add no key the caller did not ask for, so a deepEqual on a built outcome is as exact as on the literal.
import type { RunOutcome, SessionRef } from "../../machines/events.ts";

type Given = Pick<RunOutcome, "runId" | "status" | "finishedAt"> & Partial<RunOutcome>;

/**
 * An expected RunOutcome: nothing displayed, requested at 0, not killed, and a duration of finishedAt - requestedAt
 * (the runs these tests drive never have a clock that goes back), under the fields given.
 */
export function outcome(given: Given): RunOutcome {
  const requestedAt = given.requestedAt ?? 0;
  return {
    displayedValue: false,
    requestedAt,
    durationMs: given.finishedAt - requestedAt,
    killed: false,
    ...given,
  };
}

/** An expected session reference: the first run of session "s" in its first process, which ran user code. */
export function sessionRef(given: Partial<SessionRef> = {}): SessionRef {
  return { name: "s", ordinal: 1, incarnation: 1, started: true, isLost: false, ...given };
}

/** The session reference of a request refused before it reached the session's process (ordinal 0, never started). */
export function refusedIn(name: string, incarnation: number): SessionRef {
  return { name, ordinal: 0, incarnation, started: false, isLost: false };
}
