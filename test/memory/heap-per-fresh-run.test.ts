// A fresh run leaves nothing behind (issue 31): fresh Python runs through a host, in a child process
// (test/helpers/heap-per-run.ts), keep the object heap after garbage collection flat, window after window. Apart from
// the warm runs (test/memory/heap-per-run.test.ts) because its 640 runs, each a new process, are more CPU than the
// other four measurements together. How it is measured and judged: test/helpers/heap-windows.ts.
import { test } from "node:test";
import { assertFlat, HEAP_TEST_OPTIONS, measure } from "../helpers/heap-windows.ts";

test("fresh Python runs leave the heap flat", HEAP_TEST_OPTIONS, () => {
  // Windows span whole fork servers (32 runners each: actors/process/fork-server.ts), so each ends alike.
  assertFlat(measure("fresh", 160));
});
