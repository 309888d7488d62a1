// A run leaves nothing behind (issue 31): warm runs through a host, in a child process (test/helpers/heap-per-run.ts),
// keep the object heap after garbage collection flat, window after window, for named Python sessions (with the
// event-log recorder on and off), fresh runs, JavaScript sessions and runs that make a nested tool call.
//
// The child runs without V8's optimizing compilers and without bytecode flushing: compiled code and the metadata
// that comes and goes with it moved the heap by up to 200 bytes a run either way with them on, and they hold no
// object of ours. So measured, a run of any kind leaves 0 to 30 bytes (fresh runs up to 90 in one window of 160:
// fork servers start and end in steps of 32 runs), and a window's figure is the heap's growth over its runs divided
// by their number. Before XState's transition cache was bounded (machines/actor-event-candidates.ts), every kind
// left 280 to 900 bytes a run in every window.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { test } from "node:test";

const PROGRAM = resolve(import.meta.dirname, "../helpers/heap-per-run.ts");
const FLAGS = ["--expose-gc", "--no-opt", "--no-maglev", "--no-flush-bytecode"];
/** Bytes a run may leave, by the median of three windows: a third of the smallest window the leak ever gave. */
const PER_RUN_LIMIT = 100;

interface Report {
  kind: string;
  record: boolean;
  perWindow: number;
  perRun: number[];
}

function measure(kind: string, perWindow: number, record = false): Report {
  const out = execFileSync(
    process.execPath,
    [...FLAGS, PROGRAM, kind, "3", String(perWindow), ...(record ? ["--record"] : [])],
    { encoding: "utf8", maxBuffer: 16 * 1024 * 1024, stdio: ["ignore", "pipe", "inherit"] },
  );
  return JSON.parse(out.trim().split("\n").at(-1)!) as Report;
}

function assertFlat(report: Report): void {
  const median = [...report.perRun].sort((a, b) => a - b)[1];
  assert.ok(
    median <= PER_RUN_LIMIT,
    `${report.kind}${report.record ? " (recorded)" : ""}: bytes left per run in three windows of ${report.perWindow} ` +
      `runs: ${report.perRun.join(", ")} (limit ${PER_RUN_LIMIT} by the median)`,
  );
}

const OPTIONS = { timeout: 300_000 };

test("warm runs of a named Python session leave the heap flat", OPTIONS, () => {
  assertFlat(measure("session", 300));
});

test("warm runs of a named Python session leave the heap flat with the event-log recorder on", OPTIONS, () => {
  assertFlat(measure("session", 300, true));
});

test("fresh Python runs leave the heap flat", OPTIONS, () => {
  // Windows span whole fork servers (32 runners each: actors/process/fork-server.ts), so each ends alike.
  assertFlat(measure("fresh", 160));
});

test("warm runs of a JavaScript session leave the heap flat", OPTIONS, () => {
  assertFlat(measure("js", 300));
});

test("session runs that each make a nested tool call leave the heap flat", OPTIONS, () => {
  assertFlat(measure("calls", 300));
});
