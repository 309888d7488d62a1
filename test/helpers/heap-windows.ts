// The measuring side of test/memory/heap-per-run.test.ts and heap-per-fresh-run.test.ts: runs the program
// test/helpers/heap-per-run.ts in a child and judges its windows. Two files, not one: each child is minutes of CPU on
// a loaded machine (fresh runs most of all), and each file has its own 300 s.
//
// The child runs without V8's optimizing compilers and without bytecode flushing: compiled code and the metadata
// that comes and goes with it moved the heap by up to 200 bytes a run either way with them on, and they hold no
// object of ours. So measured, a run of any kind leaves 0 to 30 bytes (fresh runs up to 90 in one window of 160:
// fork servers start and end in steps of 32 runs), and a window's figure is the heap's growth over its runs divided
// by their number, each boundary measured once the host is idle (heap-per-run.ts `idleHeap`). Before XState's transition cache was bounded (machines/actor-event-candidates.ts), every kind
// left 280 to 900 bytes a run in every window.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";

const PROGRAM = resolve(import.meta.dirname, "heap-per-run.ts");
const FLAGS = ["--expose-gc", "--no-opt", "--no-maglev", "--no-flush-bytecode"];
/** Bytes a run may leave, by the median of three windows: a third of the smallest window the leak ever gave. */
const PER_RUN_LIMIT = 100;

export const HEAP_TEST_OPTIONS = { timeout: 300_000 };

interface Report {
  kind: string;
  record: boolean;
  perWindow: number;
  perRun: number[];
}

export function measure(kind: string, perWindow: number, record = false): Report {
  const out = execFileSync(
    process.execPath,
    [...FLAGS, PROGRAM, kind, "3", String(perWindow), ...(record ? ["--record"] : [])],
    { encoding: "utf8", maxBuffer: 16 * 1024 * 1024, stdio: ["ignore", "pipe", "inherit"] },
  );
  return JSON.parse(out.trim().split("\n").at(-1)!) as Report;
}

export function assertFlat(report: Report): void {
  const median = [...report.perRun].sort((a, b) => a - b)[1];
  assert.ok(
    median <= PER_RUN_LIMIT,
    `${report.kind}${report.record ? " (recorded)" : ""}: bytes left per run in three windows of ${report.perWindow} ` +
      `runs: ${report.perRun.join(", ")} (limit ${PER_RUN_LIMIT} by the median)`,
  );
}
