// A run leaves nothing behind (issue 31): warm runs through a host, in a child process (test/helpers/heap-per-run.ts),
// keep the object heap after garbage collection flat, window after window, for named Python sessions (with the
// event-log recorder on and off), JavaScript sessions and runs that make a nested tool call. Fresh runs:
// test/memory/heap-per-fresh-run.test.ts. How it is measured and judged: test/helpers/heap-windows.ts.
import { test } from "node:test";
import { assertFlat, HEAP_TEST_OPTIONS, measure } from "../helpers/heap-windows.ts";

test("warm runs of a named Python session leave the heap flat", HEAP_TEST_OPTIONS, () => {
  assertFlat(measure("session", 300));
});

test(
  "warm runs of a named Python session leave the heap flat with the event-log recorder on",
  HEAP_TEST_OPTIONS,
  () => {
    assertFlat(measure("session", 300, true));
  },
);

test("warm runs of a JavaScript session leave the heap flat", HEAP_TEST_OPTIONS, () => {
  assertFlat(measure("js", 300));
});

test("session runs that each make a nested tool call leave the heap flat", HEAP_TEST_OPTIONS, () => {
  assertFlat(measure("calls", 300));
});
