// Hints read from a run's output after it ended (a certificate failure, a missing module), added to its outcome.
import type { RunOutcome } from "../machines/events.ts";
import { runHints } from "../actors/deps/hints.ts";

/** The outcome with the run-time hints read from its stderr tail. */
export function withOutputHints(outcome: RunOutcome, stderrTail: Buffer): RunOutcome {
  const hints = runHints(stderrTail.toString("utf8"), {
    ...(outcome.session ? { session: outcome.session.name } : {}),
    ...(outcome.runner ? { python: `Python ${outcome.runner.python} (${outcome.runner.executable})` } : {}),
  }).filter((h) => h.id !== "module_not_found" || outcome.status === "runtime_error");
  return hints.length ? { ...outcome, hints: [...(outcome.hints ?? []), ...hints] } : outcome;
}
