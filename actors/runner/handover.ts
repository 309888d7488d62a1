// Hands a spare runner's process to the fresh run that claimed it. The spare's runner actor offers its handle
// (or gives up: its process died or it was stopped); the run's runner actor takes it, or starts a process of its
// own when nothing came. Process handles never enter machine context.
import type { RunnerHandle } from "../process/operations.ts";

export interface Handover {
  handle: RunnerHandle;
  ready: { python: string; executable: string; language?: "js" };
}

const waiting = new Map<
  string,
  {
    promise: Promise<Handover | undefined>;
    resolve: (h: Handover | undefined) => void;
    /** The claim window's timer: cleared when the offer is taken, so a taken handle is not held for the window. */
    timer?: NodeJS.Timeout;
  }
>();

function slot(spareId: string) {
  let s = waiting.get(spareId);
  if (!s) {
    let resolve!: (h: Handover | undefined) => void;
    const promise = new Promise<Handover | undefined>((r) => (resolve = r));
    s = { promise, resolve };
    waiting.set(spareId, s);
  }
  return s;
}

/** An offer's key: the spare's actor id (`spare:<n>`) within its host. Actor ids repeat across hosts, and two hosts
 * in one process (two Pi sessions of an SDK user, a bench's harnesses) must never take each other's process: one
 * host's runner may be on another backend (the host, a sandbox, a remote) than the other's. */
export const handoverKey = (hostId: string, spareId: string): string => `${hostId}/${spareId}`;

/** How long an offer waits for the run that claimed it (normally milliseconds: the run takes it as it starts). */
export const CLAIM_WINDOW_MS = 5000;

/** Offers nobody took within the window, newest last: a run that comes for one later gets nothing and starts a
 * process of its own, where it used to wait for an offer that had been dropped, until its deadline. */
const expired = new Set<string>();
const EXPIRED_KEPT = 256;

/** The spare's side: its process (or `undefined` when there is none to give). Settles once. */
export function offer(spareId: string, handover: Handover | undefined, windowMs = CLAIM_WINDOW_MS): void {
  const s = slot(spareId);
  s.resolve(handover);
  s.timer = setTimeout(() => {
    if (waiting.get(spareId) !== s) return; // taken
    waiting.delete(spareId);
    expired.add(spareId);
    if (expired.size > EXPIRED_KEPT) expired.delete(expired.values().next().value!);
    // Nobody came for the process (its run ended first, or is too slow to matter): it must not outlive its claim.
    handover?.handle.signalGroup("SIGKILL");
  }, windowMs).unref();
}

/** The run's side: waits for the spare's offer (nothing, when the offer expired before it came). */
export function take(spareId: string): Promise<Handover | undefined> {
  if (expired.delete(spareId)) return Promise.resolve(undefined);
  const s = slot(spareId);
  return s.promise.then((h) => {
    clearTimeout(s.timer);
    waiting.delete(spareId);
    return h;
  });
}
