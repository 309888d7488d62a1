// Session start times and last runs, from the outcomes the host sees: bookkeeping the machines do not keep because
// it is about wall-clock history, shown by /code-status and the /tree widget.
import type { RunOutcome } from "../machines/events.ts";

export interface SessionHistory {
  incarnation: number;
  startedAt: number;
  lastRun?: { at: number; status: RunOutcome["status"]; durationMs: number };
}

/** Session start times and last runs, from the outcomes the host sees. */
export class SessionBook {
  private readonly book = new Map<string, SessionHistory>();

  record(outcome: RunOutcome): void {
    const s = outcome.session;
    if (!s) return;
    const prev = this.book.get(s.name);
    const entry: SessionHistory =
      s.started || !prev || prev.incarnation !== s.incarnation
        ? { incarnation: s.incarnation, startedAt: outcome.requestedAt }
        : prev;
    // A run refused before it reached the session (busy, closing) is not the session's last run.
    if (!(outcome.status === "setup_error" && !outcome.runner && !s.started)) {
      entry.lastRun = { at: outcome.finishedAt, status: outcome.status, durationMs: outcome.durationMs };
    }
    this.book.set(s.name, entry);
  }

  get(name: string, incarnation: number): SessionHistory | undefined {
    const h = this.book.get(name);
    return h && h.incarnation === incarnation ? h : undefined;
  }
}
