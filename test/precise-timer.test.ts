// lib/precise-timer.ts with real time: the actor system's timers (a run's deadline above all) fire on time, never
// early, and a cleared one never fires.
import { test } from "node:test";
import assert from "node:assert/strict";
import { clearPreciseTimeout, preciseClock, setPreciseTimeout } from "../lib/precise-timer.ts";

const lateness = (ms: number) =>
  new Promise<number>((resolve) => {
    const t = performance.now();
    setPreciseTimeout(() => resolve(performance.now() - t - ms), ms);
  });

test("a timer fires once its time has passed, never before, and soon after", async () => {
  const late: number[] = [];
  // Fractions of a millisecond too (Node's own timers round them and may fire early), and below the hand-over.
  for (const ms of [0, 0.4, 1, 2.7, 7.3, 12]) {
    for (let i = 0; i < 5; i++) late.push(await lateness(ms));
  }
  assert.ok(Math.min(...late) >= 0, `fired ${(-Math.min(...late)).toFixed(3)} ms early`);
  late.sort((a, b) => a - b);
  const median = late[late.length >> 1]!;
  assert.ok(median < 2, `median lateness ${median.toFixed(3)} ms`);
});

test("a cleared timer never fires, in either phase of its wait", async () => {
  let fired = 0;
  const far = setPreciseTimeout(() => (fired += 1), 20);
  const near = setPreciseTimeout(() => (fired += 1), 0.5);
  clearPreciseTimeout(near);
  await new Promise((r) => setTimeout(r, 19));
  clearPreciseTimeout(far); // within its last EARLY_MS: waiting turn by turn
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(fired, 0);
});

test("the XState clock on precise timers sets and clears", async () => {
  let fired = 0;
  const kept = preciseClock.setTimeout(() => (fired += 1), 3);
  const dropped = preciseClock.setTimeout(() => (fired += 10), 3);
  preciseClock.clearTimeout(dropped);
  await new Promise((r) => setTimeout(r, 15));
  assert.equal(fired, 1);
  void kept;
});
