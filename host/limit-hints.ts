// Which resource limit (settings `limits`) ended or broke a run, read from its outcome and stderr. Only limits that
// are set are named: a MemoryError without `limits.memoryMiB` is the machine's, not a setting's.
import { backendHint } from "../actors/process/backend-hints.ts";
import type { Hint, RunOutcome } from "../machines/events.ts";
import type { ResourceLimits } from "../lib/setting-types.ts";

/** SIGXCPU as an exit status: bwrap and the remote relay report a signalled child as 128 + signal. */
const SIGXCPU_STATUS = 128 + 24;

export function limitHints(outcome: RunOutcome, stderrTail: Buffer, limits: ResourceLimits | undefined): Hint[] {
  if (!limits) return [];
  const have = new Set((outcome.hints ?? []).map((h) => h.id));
  const err = stderrTail.toString("utf8");
  const hints: Hint[] = [];
  const add = (id: string) => {
    if (!have.has(id)) hints.push(backendHint(id));
  };
  if (limits.cpuSeconds && (outcome.signal === "SIGXCPU" || (outcome.exitCode === SIGXCPU_STATUS && outcome.session?.isLost !== false)))
    add("limit_cpu");
  if (limits.memoryMiB && (/\bMemoryError\b|Cannot allocate memory|std::bad_alloc/.test(err)))
    add("limit_memory");
  if (limits.fileSizeMiB && /File too large|\[Errno 27\]/.test(err)) add("limit_file_size");
  if (limits.processes && /\[Errno 11\] Resource temporarily unavailable|can't start new thread/.test(err))
    add("limit_processes");
  return hints;
}
