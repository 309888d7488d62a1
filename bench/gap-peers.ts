// Warm calls after a model turn's gap against the same calls back to back, for this package and a peer side by side
// (issue 26's "warm run after a 150 ms gap <= 1.5x the same run back to back"): does the gap cost a peer the same?
//   node bench/gap-peers.ts --peer /tmp/peers/pi-python [--rounds R] [--n N] [--gap MS]
// Each round runs, for each side, N calls back to back and N calls GAP ms apart (each from an empty transcript, in
// alternating order); the figure is each side's gap/back-to-back ratio of p50s, per round and its median.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startPi } from "../test/helpers/pi-session.ts";
import { noopExtension, spansFresh } from "./pi-spans.ts";
import { stats } from "./run.ts";
import { peerManifest } from "./pi-peers.ts";

const { values: flags } = parseArgs({
  options: {
    peer: { type: "string" },
    rounds: { type: "string", default: "4" },
    n: { type: "string", default: "30" },
    gap: { type: "string", default: "150" },
  },
});
if (!flags.peer) throw new Error("usage: node bench/gap-peers.ts --peer DIR [--rounds R] [--n N] [--gap MS]");
const peerDir = flags.peer;
// Refused before anything runs: a directory that is not a Pi package.
peerManifest(peerDir);
const positive = (name: "rounds" | "n" | "gap") => {
  const v = Number(flags[name]);
  if (!(Number.isInteger(v) && v >= 1)) throw new Error(`--${name} must be a positive integer (got ${flags[name]})`);
  return v;
};
const rounds = positive("rounds");
const n = positive("n");
const gap = positive("gap");
const scratch = mkdtempSync(join(tmpdir(), "pcs-bench-gap-"));
process.env.PI_CODE_EXECUTION_JOURNAL ??= join(scratch, "journal.sqlite");
process.env.PI_CODE_EXECUTION_LOG_DIR ??= join(scratch, "logs");
process.env.PI_CODE_EXECUTION_TOOLS ??= "code_execution,python";

const ours = await startPi({
  extensionPaths: [resolve(import.meta.dirname, "..")],
  extensionFactories: [noopExtension],
});
const peer = await startPi({ extensionPaths: [resolve(peerDir)], extensionFactories: [noopExtension] });
const cell: [string, Record<string, unknown>] = ["python", { cells: [{ code: "x = 1" }] }];
const sides: { name: string; pi: typeof ours; call: [string, Record<string, unknown>] }[] = [
  { name: "ours python", pi: ours, call: cell },
  { name: "ours code_execution", pi: ours, call: ["code_execution", { code: "x = 1", session: "g" }] },
  { name: "peer python", pi: peer, call: cell },
];
/** The spans, once every call succeeded (a failed call is fast and would read as a figure). */
function ok(name: string, r: { ms: number[]; results: { isError?: boolean }[] }): number[] {
  if (r.results.some((x) => x.isError)) throw new Error(`${name}: a call failed`);
  return r.ms;
}
const ratios = new Map<string, number[]>(sides.map((s) => [s.name, []]));
const b2b = new Map<string, number[]>(sides.map((s) => [s.name, []]));
const gapped = new Map<string, number[]>(sides.map((s) => [s.name, []]));
try {
  for (const s of sides)
    await spansFresh(
      s.pi,
      Array.from({ length: 10 }, () => s.call),
    );
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [...sides].reverse() : sides;
    for (const s of order) {
      const a = ok(
        s.name,
        await spansFresh(
          s.pi,
          Array.from({ length: n }, () => s.call),
        ),
      );
      const g = ok(
        s.name,
        await spansFresh(
          s.pi,
          Array.from({ length: n }, () => s.call),
          gap,
        ),
      );
      b2b.get(s.name)!.push(...a);
      gapped.get(s.name)!.push(...g);
      ratios.get(s.name)!.push(stats(g).p50 / stats(a).p50);
    }
  }
  for (const s of sides) {
    const rs = ratios.get(s.name)!.sort((x, y) => x - y);
    console.log(
      `${s.name.padEnd(22)} back to back ${stats(b2b.get(s.name)!).p50.toFixed(2)} ms, ${gap} ms apart ` +
        `${stats(gapped.get(s.name)!).p50.toFixed(2)} ms: ${rs[rs.length >> 1]!.toFixed(2)}x ` +
        `(rounds ${rs[0]!.toFixed(2)}-${rs[rs.length - 1]!.toFixed(2)})`,
    );
  }
} finally {
  await ours.dispose();
  await peer.dispose();
}
