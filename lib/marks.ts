// Timing marks along a tool call's path, for bench/pi-marks.ts: where a warm cell's span goes, hop by hop, read
// inside a real Pi session. Nothing listens unless a bench installs a listener; then each `mark` hands it the mark's
// name. The listener lives on globalThis under a registered symbol, not in this module: Pi loads the extension
// through its own module loader (jiti), so the bench's copy of this module is not the extension's.
const LISTENER = Symbol.for("pi-code-supervisor.marks");

type Listener = (name: string) => void;
const slot = globalThis as { [LISTENER]?: Listener };

/** Names a point on the path. Costs one property read when nothing listens. */
export function mark(name: string): void {
  slot[LISTENER]?.(name);
}

/** Installs the listener (or removes it: undefined). For benches. */
export function listenToMarks(listener: Listener | undefined): void {
  if (listener) slot[LISTENER] = listener;
  else delete slot[LISTENER];
}
