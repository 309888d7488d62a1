// Notices and details about what happened around a run's code: its dependencies (installed, reused, already
// imported by the session), reloaded local modules, a session replaced for another interpreter or working
// directory, PEP 723 settings without effect, and hints with stable ids. result.ts places them in the result text.
import type { Hint, RunOutcome, SessionRef } from "../../machines/events.ts";

/** How a session fared in a run, for renderers: started it, kept its state through a stop, lost it, or ran on. */
export type SessionState = "started" | "kept" | "lost" | "continued";

export function sessionState(o: RunOutcome): SessionState | undefined {
  const s = o.session;
  if (!s) return undefined;
  if (s.isLost) return "lost";
  if (s.started) return "started";
  return o.stopReason ? "kept" : "continued";
}

/** The line for a session started in place of a live one that ran another interpreter or working directory. */
export function replacedNotice(s: SessionRef, version: string): string | undefined {
  if (!s.replaced) return undefined;
  const why =
    s.replaced.reason === "interpreter"
      ? `this run uses another interpreter than its previous process (${s.replaced.from})`
      : `the working directory changed (was ${s.replaced.from})`;
  return `[session "${s.name}" started anew${version}: ${why}, so its earlier state is gone]`;
}

function list(items: readonly string[], max = 6): string {
  return items.length <= max ? items.join(", ") : `${items.slice(0, max).join(", ")} and ${items.length - max} more`;
}

/** Lines before the outcome lines: dependencies, already-loaded packages, reloads, metadata notes. */
export function preludeNotices(o: RunOutcome): string[] {
  const lines: string[] = [];
  const i = o.install;
  if (i) {
    const what = list(i.requirements);
    if (o.session) {
      lines.push(
        i.cached
          ? `[dependencies already installed in session "${o.session.name}": ${what}]`
          : `[installed ${what} with ${i.installer} into session "${o.session.name}"'s package directory]`,
      );
    } else {
      lines.push(
        i.cached
          ? `[dependencies: reused the cached environment with ${what}]`
          : `[installed ${what} with ${i.installer} into a new cached environment]`,
      );
    }
  }
  if (o.alreadyLoaded?.length && o.session) {
    lines.push(
      `[session "${o.session.name}" had already imported ${list(o.alreadyLoaded)}: the loaded version stays in use until the session is reset]`,
    );
  }
  if (o.reloaded?.length) lines.push(`[reloaded changed local modules before running: ${list(o.reloaded, 12)}]`);
  for (const note of o.notes ?? []) lines.push(note);
  return lines;
}

/** The hint lines, last. */
export function hintNotices(o: RunOutcome): string[] {
  return (o.hints ?? []).filter((h) => h.text).map((h) => `[hint ${h.id}: ${h.text}]`);
}

export interface ExtraDetails {
  /** The process tree was stopped by force after the grace period. */
  killed: boolean;
  python?: { version: string; executable: string };
  install?: { installer: "uv" | "pip"; requirements: string[]; cached: boolean };
  reloaded?: string[];
  alreadyLoaded?: string[];
  hints?: Hint[];
  /** The run ended during dependency installation. */
  stage?: "install";
}

export function extraDetails(o: RunOutcome): ExtraDetails {
  return {
    killed: o.killed,
    ...(o.runner ? { python: { version: o.runner.python, executable: o.runner.executable } } : {}),
    ...(o.install
      ? { install: { installer: o.install.installer, requirements: o.install.requirements, cached: o.install.cached } }
      : {}),
    ...(o.reloaded?.length ? { reloaded: o.reloaded } : {}),
    ...(o.alreadyLoaded?.length ? { alreadyLoaded: o.alreadyLoaded } : {}),
    ...(o.hints?.length ? { hints: o.hints } : {}),
    ...(o.stage ? { stage: o.stage } : {}),
  };
}
