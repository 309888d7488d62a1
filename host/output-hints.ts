// Hints read from a run's output after it ended (a certificate failure, a missing module, a resource limit that
// ended it), added to its outcome.
import type { RunOutcome } from "../machines/events.ts";
import { runHints } from "../actors/deps/hints.ts";
import type { ResourceLimits } from "../lib/setting-types.ts";
import { limitHints } from "./limit-hints.ts";

/** The outcome with the run-time hints read from its stderr tail (and the resource limits in force). */
export function withOutputHints(outcome: RunOutcome, stderrTail: Buffer, limits?: ResourceLimits): RunOutcome {
  const hints = runHints(stderrTail.toString("utf8"), {
    ...(outcome.session ? { session: outcome.session.name } : {}),
    ...(outcome.runner ? { python: `Python ${outcome.runner.python} (${outcome.runner.executable})` } : {}),
  }).filter((h) => h.id !== "module_not_found" || outcome.status === "runtime_error");
  const withHints = hints.length ? { ...outcome, hints: [...(outcome.hints ?? []), ...hints] } : outcome;
  const limited = limitHints(withHints, stderrTail, limits);
  return limited.length ? { ...withHints, hints: [...(withHints.hints ?? []), ...limited] } : withHints;
}
