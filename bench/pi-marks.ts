// Where a warm call's span goes, hop by hop, in a real Pi session: `source scripts/env.sh && node bench/pi-marks.ts
// [case] [n] [gap ms]` (a case of bench/pi-spans.ts `warmCalls`: python by default; 400 calls; back to back). The
// product names points on its path with lib/marks.ts (the tool's execute, the host's run and send, the runner's frame
// write and each read of its control channel, the run's end, the host's outcome and result, a notebook call's start,
// cells and end); this bench listens to them, with Pi's `tool_execution_start` and `tool_execution_end` around them,
// journal and event log on in scratch places as in bench/pi.ts. Calls do not all take one road (the runner's
// `started` and `done` arrive in one read or two): each shape is printed with its count and p50, and for each hop
// the median over its calls of the time since the call started and of the hop itself.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { listenToMarks } from "../lib/marks.ts";
import { startPi } from "../test/helpers/pi-session.ts";
import { noopExtension, spans, spansFresh, warmCalls } from "./pi-spans.ts";

const [kind = "python", count = "400", gap = "0"] = process.argv.slice(2);
const call = warmCalls[kind];
if (!call) throw new Error(`unknown case ${kind}; one of ${Object.keys(warmCalls).join(", ")}`);
const scratch = mkdtempSync(join(tmpdir(), "pcs-bench-marks-"));
process.env.PI_CODE_EXECUTION_JOURNAL ??= join(scratch, "journal.sqlite");
process.env.PI_CODE_EXECUTION_LOG_DIR ??= join(scratch, "logs");
process.env.PI_CODE_EXECUTION_TOOLS ??= "code_execution,python,eval,exec";

type Marks = [name: string, at: number][];
const calls: Marks[] = [];
let current: Marks | undefined;
const pi = await startPi({ extensionPaths: [resolve(import.meta.dirname, "..")], extensionFactories: [noopExtension] });
listenToMarks((name) => current?.push([name, performance.now()]));
pi.session.subscribe((e: { type: string }) => {
  if (e.type === "tool_execution_start") current = [["pi.start", performance.now()]];
  if (e.type === "tool_execution_end" && current) {
    current.push(["pi.end", performance.now()]);
    calls.push(current);
    current = undefined;
  }
});
try {
  await spans(
    pi,
    Array.from({ length: 30 }, () => call),
  );
  calls.length = 0;
  await spansFresh(
    pi,
    Array.from({ length: Number(count) }, () => call),
    Number(gap),
  );
} finally {
  listenToMarks(undefined);
  await pi.dispose();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const us = (ms: number) => `${(ms * 1000).toFixed(0)} us`.padStart(8);
const shapes = new Map<string, Marks[]>();
for (const c of calls) {
  const key = c.map(([name]) => name).join(" ");
  shapes.set(key, [...(shapes.get(key) ?? []), c]);
}
console.log(
  `${kind}: ${calls.length} calls, p50 ${us(median(calls.map((c) => c.at(-1)![1] - c[0]![1]))).trim()}` +
    `${Number(gap) ? `, ${gap} ms apart` : ", back to back"}`,
);
for (const group of [...shapes.values()].sort((a, b) => b.length - a.length)) {
  if (group.length < calls.length / 10) continue;
  console.log(
    `\n${group.length} calls of this shape, p50 ${us(median(group.map((c) => c.at(-1)![1] - c[0]![1]))).trim()}:`,
  );
  console.log(`${"mark".padEnd(18)} ${"since start".padStart(11)} ${"hop".padStart(8)}`);
  group[0]!.forEach(([name], i) => {
    const since = median(group.map((c) => c[i]![1] - c[0]![1]));
    const hop = i ? median(group.map((c) => c[i]![1] - c[i - 1]![1])) : 0;
    console.log(`${name.padEnd(18)} ${us(since).padStart(11)} ${us(hop)}`);
  });
}
