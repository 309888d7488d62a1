// A same-run baseline for a latency bound: how long a process could not run at all. A timer that ticks every few
// milliseconds fires late exactly when its process was descheduled or busy; the gap between two ticks, less the
// interval, is time nothing in that process ran. A latency measured across processes (Node -> a socket -> a page)
// is then judged on what is left once those stalls are taken out, so a loaded machine cannot fail a bound the code
// keeps, and a slow code path still does.

/** A window in which a process did not run: [from, to] in epoch milliseconds. */
export interface Stall {
  from: number;
  to: number;
}

/** Ticks of a timer, as epoch milliseconds, into the stalls they show (gaps beyond the interval plus `slackMs`). */
export const stallsOf = (ticks: readonly number[], intervalMs: number, slackMs = 2): Stall[] => {
  const stalls: Stall[] = [];
  for (let i = 1; i < ticks.length; i++) {
    if (ticks[i] - ticks[i - 1] > intervalMs + slackMs) stalls.push({ from: ticks[i - 1] + intervalMs, to: ticks[i] });
  }
  return stalls;
};

/** How much of [from, to] lies in any stall (their union, so two processes stalled at once count once). */
export const stalledWithin = (stalls: readonly Stall[], from: number, to: number): number => {
  const cut = stalls
    .map((s) => ({ from: Math.max(s.from, from), to: Math.min(s.to, to) }))
    .filter((s) => s.to > s.from)
    .sort((a, b) => a.from - b.from);
  let total = 0;
  let end = -Infinity;
  for (const s of cut) {
    const start = Math.max(s.from, end);
    if (s.to > start) total += s.to - start;
    end = Math.max(end, s.to);
  }
  return total;
};

/** Ticks this process's event loop every `intervalMs` until stopped; `ticks` is what it saw. */
export const tickLoop = (intervalMs = 5) => {
  const ticks: number[] = [Date.now()];
  const timer = setInterval(() => ticks.push(Date.now()), intervalMs);
  return { ticks, intervalMs, stop: () => clearInterval(timer) };
};

/** The same for a page, as a script to evaluate in it: its ticks collect in `window.__ticks`. */
export const PAGE_TICKS = (intervalMs = 5) => `
  window.__ticks = [Date.now()];
  setInterval(() => window.__ticks.push(Date.now()), ${intervalMs});
  true`;
