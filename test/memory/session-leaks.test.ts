// Nothing grows with the number of Pi sessions: 50 real Pi sessions opened and closed one after another in one
// process (test/helpers/many-pi-sessions.ts, in a child run with --expose-gc) leave the listeners on `process`,
// the active handles and the heap where they were after the first three.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { test } from "node:test";

const PROGRAM = resolve(import.meta.dirname, "../helpers/many-pi-sessions.ts");
/** The heap (objects, not compiled code) may differ by this much after garbage collection (60 KiB a session); it
 * moves by about 1 MiB either way as V8 keeps metadata of the modules Pi loads afresh for each session. */
const HEAP_TOLERANCE = 3 * 1024 * 1024;

test("50 Pi sessions in one process leave listeners, handles and heap where they started", { timeout: 300_000 }, () => {
  const out = execFileSync(process.execPath, ["--expose-gc", PROGRAM, "50"], {
    encoding: "utf8",
    maxBuffer: 16 * 1024 * 1024,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const report = JSON.parse(out.trim().split("\n").at(-1)!);
  assert.deepEqual(report.warnings, [], "no MaxListenersExceededWarning or any other warning");
  assert.deepEqual(report.after.listeners, report.before.listeners, "listeners on process, by event name");
  assert.deepEqual(report.after.resources, report.before.resources, "active handles and requests, by type");
  const grown = report.after.heap - report.before.heap;
  assert.ok(
    grown < HEAP_TOLERANCE,
    `the heap grew by ${(grown / 1024 / 1024).toFixed(1)} MiB over ${report.count} sessions`,
  );
});
