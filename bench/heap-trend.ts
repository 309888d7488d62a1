// Where a slow heap rise comes from, on demand: `source scripts/env.sh && node --expose-gc bench/heap-trend.ts
// [batches] [calls per batch] [case...]`. One Pi session (the extension loaded as Pi loads it, journal and event log
// on in a scratch place, every surface on), one case at a time: batches of the same call, Pi's transcript dropped
// after each batch as bench/soak.ts does, then a full GC and the heap in use. Printed per case: the heap after each
// batch and the least-squares slope in KiB per 1000 calls after the first batch (warm-up), beside Pi's no-op tool in
// the same session (Pi's own floor: what Pi keeps per call that the transcript drop does not reach).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startPi } from "../test/helpers/pi-session.ts";
import { dropTranscript, noopExtension, spans } from "./pi-spans.ts";
import { slope } from "./run.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");
const [batchesArg = "6", perArg = "300", ...wanted] = process.argv.slice(2);
const batches = Number(batchesArg);
const per = Number(perArg);

const CASES: Record<string, [string, Record<string, unknown>]> = {
  noop: ["noop", {}],
  python: ["python", { cells: [{ code: "x = 1\nx" }] }],
  evalpy: ["eval", { cells: [{ language: "py", code: "y = 1\ny" }] }],
  evaljs: ["eval", { cells: [{ language: "js", code: "1 + 1" }] }],
  session: ["code_execution", { session: "heap", code: "z = 1\nprint(z)" }],
  fresh: ["code_execution", { code: "print(1)" }],
  exec: ["exec_command", { cmd: "true" }],
};

const scratch = mkdtempSync(join(tmpdir(), "pcs-heap-"));
process.env.PI_CODE_EXECUTION_JOURNAL ??= join(scratch, "journal.sqlite");
process.env.PI_CODE_EXECUTION_LOG_DIR ??= join(scratch, "logs");
process.env.PI_CODE_EXECUTION_TOOLS ??= "code_execution,python,eval,exec";

const settle = async () => {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 50));
  }
};

const pi = await startPi({ extensionPaths: [resolve(import.meta.dirname, "..")], extensionFactories: [noopExtension] });
try {
  const names = wanted.length ? wanted : Object.keys(CASES);
  for (const name of names) {
    const call = CASES[name];
    if (!call) throw new Error(`unknown case ${name}; one of ${Object.keys(CASES).join(", ")}`);
    const heaps: number[] = [];
    const calls: number[] = [];
    for (let b = 0; b <= batches; b++) {
      await spans(
        pi,
        Array.from({ length: per }, () => call),
      );
      dropTranscript(pi);
      await settle();
      heaps.push(process.memoryUsage().heapUsed / 1024);
      calls.push((b + 1) * per);
    }
    const kib = slope(calls.slice(1), heaps.slice(1)) * 1000;
    console.log(
      `${name.padEnd(8)} heap MiB after each batch of ${per}: ${heaps.map((h) => (h / 1024).toFixed(2)).join(" ")}; ` +
        `slope after the first: ${kib.toFixed(1)} KiB per 1000 calls`,
    );
  }
} finally {
  await pi.dispose();
}
