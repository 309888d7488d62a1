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
  { promise: Promise<Handover | undefined>; resolve: (h: Handover | undefined) => void }
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

/** The spare's side: its process (or `undefined` when there is none to give). Settles once. */
export function offer(spareId: string, handover: Handover | undefined): void {
  slot(spareId).resolve(handover);
  // Whoever takes it has it; an untaken offer is dropped once taken or after the claim window.
  setTimeout(() => waiting.delete(spareId), 5000).unref();
}

/** The run's side: waits for the spare's offer. */
export function take(spareId: string): Promise<Handover | undefined> {
  const s = slot(spareId);
  return s.promise.then((h) => {
    waiting.delete(spareId);
    return h;
  });
}
