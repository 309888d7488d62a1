// The direct path's own figure, on demand: `source scripts/env.sh && node bench/direct.ts [rounds] [n]`. One Pi
// session (the faux model, this package from its manifest), warm `python` cells in alternating batches with runs
// straight to the session (the default) and with `PI_CODE_EXECUTION_DIRECT=off` (every run through the supervisor),
// Pi's span of each call; the ratio is taken per round, so a busy machine moves both sides alike.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startPi } from "../test/helpers/pi-session.ts";
import { noopExtension, spans } from "./pi-spans.ts";
import { stats } from "./run.ts";
import { DIRECT_ENV } from "../host/host.ts";

const rounds = Number(process.argv[2] ?? 6);
const n = Number(process.argv[3] ?? 100);
const scratch = mkdtempSync(join(tmpdir(), "pcs-bench-direct-"));
process.env.PI_CODE_EXECUTION_JOURNAL ??= join(scratch, "journal.sqlite");
process.env.PI_CODE_EXECUTION_LOG_DIR ??= join(scratch, "logs");
process.env.PI_CODE_EXECUTION_TOOLS ??= "code_execution,python,eval";
const cases = {
  python: ["python", { cells: [{ code: "x += 1" }] }],
  "code_execution session": ["code_execution", { code: "x = 1", session: "bench" }],
  "eval js": ["eval", { cells: [{ language: "js", code: "globalThis.x = (globalThis.x ?? 0) + 1" }] }],
} as const;
const pi = await startPi({ extensionPaths: [resolve(import.meta.dirname, "..")], extensionFactories: [noopExtension] });
try {
  await spans(pi, [["python", { cells: [{ code: "x = 0" }] }]]);
  for (const [name, call] of Object.entries(cases)) {
    const batch = async (direct: boolean) => {
      if (direct) delete process.env[DIRECT_ENV];
      else process.env[DIRECT_ENV] = "off";
      const r = await spans(
        pi,
        Array.from({ length: n }, () => call as unknown as [string, Record<string, unknown>]),
      );
      if (r.results.some((x) => x.isError)) throw new Error(`${name}: an error result`);
      return stats(r.ms).p50;
    };
    await batch(true);
    await batch(false);
    const ratios: number[] = [];
    const on: number[] = [];
    const off: number[] = [];
    for (let i = 0; i < rounds; i++) {
      // Alternate which goes first, so a trend in the machine's load does not favour one side.
      if (i % 2 === 0) {
        on.push(await batch(true));
        off.push(await batch(false));
      } else {
        off.push(await batch(false));
        on.push(await batch(true));
      }
      ratios.push(on.at(-1)! / off.at(-1)!);
    }
    const med = (xs: number[]) => [...xs].sort((p, q) => p - q)[xs.length >> 1]!;
    console.log(
      `${name.padEnd(24)} direct p50 ${med(on).toFixed(3)} ms  through the supervisor ${med(off).toFixed(3)} ms  ` +
        `= ${med(ratios).toFixed(2)}x (rounds ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`,
    );
  }
} finally {
  delete process.env[DIRECT_ENV];
  await pi.dispose();
}
