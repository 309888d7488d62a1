// Peers in the same run (issue 26): other Pi extensions that offer the same surfaces, loaded by their package.json
// `"pi"` manifest into the same harness (bench/pi-spans.ts, test/helpers/pi-session.ts), each in a Pi session of
// its own (they register tools with our names: `python`, `exec_command`, `write_stdin`), in this process. The same
// calls are made on ours and on the peer in alternating batches, adjacent in time (ours first in even rounds, the
// peer first in odd ones), and each round gives a ratio, ours p50 / the peer's p50; the figure that counts is the
// median of those ratios, with their spread. Run through `node bench/pi.ts --peer DIR [--peer DIR] [--only-peers]`.
//
// What is compared with what, by the tools a peer registers:
// - `python` (pi-python): its warm cell `python {cells:[{code:"x += 1"}]}` against ours: the `python` cell, the
//   `eval` py cell, `code_execution {session, code:"x += 1"}` and the `eval` js cell;
// - `exec_command` and `write_stdin` (pi-unified-exec): `exec_command {cmd:"true"}` against ours, and a
//   `write_stdin {session_id, chars:"x\n"}` to a live `cat` until the echo (pi-unified-exec waits out its window:
//   250 ms by default, so its batches are small).
// Baselines in the same rounds: Pi's no-op tool in every session, and a bare `bash -c true` from Node.
import { readFileSync, statSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { startPi, type PiHarness, type ToolResultMessage } from "../test/helpers/pi-session.ts";
import { bareBash } from "./exec.ts";
import { dropTranscript, noopExtension, spans } from "./pi-spans.ts";
import { fmt, stats } from "./run.ts";

type Call = [string, Record<string, unknown>];
type Stats = ReturnType<typeof stats>;

export interface Peer {
  dir: string;
  name: string;
  version: string;
  tools: string[];
  pi: PiHarness;
}

export interface Comparison {
  label: string;
  peer: string;
  ours: { call: Call; p50: number; stats: Stats };
  theirs: { call: Call; p50: number; stats: Stats };
  /** ours p50 / the peer's p50, per round (adjacent batches). */
  ratio: { p50: number; min: number; max: number; rounds: number[] };
  goal: string;
  met: boolean;
}

export interface PeersReport {
  method: string;
  /** When and under what load the rounds ran (ratios move less with load than times, but they move). */
  run: { at: string; mode: "quick" | "full"; loadavg: { start: number[]; end: number[] } };
  rounds: number;
  n: number;
  peers: Record<string, { dir: string; version: string; tools: string[] }>;
  baselines: { noop: Record<string, Stats>; bareBash: Stats };
  comparisons: Record<string, Comparison>;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const textOf = (r: ToolResultMessage) => r.content.map((c) => c.text ?? "").join("");

/** Reads a peer's manifest: it must be a Pi package (`"pi"` in package.json) in a directory. */
export function peerManifest(dir: string): { name: string; version: string } {
  const abs = resolve(dir);
  let pkg: { name?: unknown; version?: unknown; pi?: { extensions?: unknown } };
  try {
    if (!statSync(abs).isDirectory()) throw new Error("not a directory");
    pkg = JSON.parse(readFileSync(join(abs, "package.json"), "utf8"));
  } catch (e) {
    throw new Error(`--peer ${dir}: no readable package.json there (${(e as Error).message})`);
  }
  if (!pkg.pi || !Array.isArray(pkg.pi.extensions) || pkg.pi.extensions.length === 0)
    throw new Error(`--peer ${dir}: package.json has no "pi": {"extensions": [...]} manifest`);
  return { name: String(pkg.name ?? abs), version: String(pkg.version ?? "?") };
}

/** Starts a Pi session with only the peer (and the no-op tool) loaded, by its manifest. */
export async function startPeer(dir: string): Promise<Peer> {
  const { name, version } = peerManifest(dir);
  const pi = await startPi({ extensionPaths: [resolve(dir)], extensionFactories: [noopExtension] });
  const tools = (pi.session.getAllTools() as { name: string }[]).map((t) => t.name);
  if (!tools.includes("python") && !tools.includes("exec_command")) {
    await pi.dispose();
    throw new Error(`--peer ${dir}: ${name} registers neither \`python\` nor \`exec_command\`; nothing to compare`);
  }
  return { dir: resolve(dir), name, version, tools, pi };
}

async function times(pi: PiHarness, call: Call, n: number, check?: (r: ToolResultMessage) => string | undefined) {
  // Every batch starts from an empty transcript: Pi clones the whole conversation before each model call
  // (`emitContext`) and its turn-end work grows with it too, and that work lands in whichever call is waiting on
  // I/O. Our session makes several times the peers' calls (five kinds against their one), so with transcripts kept,
  // exec_command `true` read 13 ms in our session against 8 ms for the same code in a peer's slot.
  dropTranscript(pi);
  const r = await spans(
    pi,
    Array.from({ length: n }, () => call),
  );
  for (const x of r.results) {
    const why = x.isError ? textOf(x).slice(0, 300) : check?.(x);
    if (why) throw new Error(`${call[0]} ${JSON.stringify(call[1])}: ${why}`);
  }
  return r.ms;
}

async function mustRun(pi: PiHarness, call: Call): Promise<ToolResultMessage> {
  const [r] = (await spans(pi, [call])).results;
  if (!r || r.isError)
    throw new Error(`${call[0]} ${JSON.stringify(call[1])}: ${r ? textOf(r).slice(0, 300) : "no result"}`);
  return r;
}

interface Pair {
  key: string;
  label: string;
  peer: Peer;
  ours: Call;
  theirs: Call;
  /** Calls per batch (ours, theirs). */
  n: [number, number];
  goal: { text: string; met: (oursP50: number, ratio: number) => boolean };
  checkOurs?: (r: ToolResultMessage) => string | undefined;
  checkTheirs?: (r: ToolResultMessage) => string | undefined;
}

const X = "x += 1";
const echoed = (r: ToolResultMessage) =>
  r.details?.output === "x\n" ? undefined : `expected the echo "x\\n", got ${JSON.stringify(r.details?.output)}`;
const exited = (r: ToolResultMessage) =>
  r.details?.running === false && r.details?.exit_code === 0 ? undefined : `did not exit 0: ${textOf(r).slice(0, 200)}`;

/** The peers' cases. `ours` must have the python, eval, code_execution and exec tools (bench/pi.ts sets them). */
export async function peerCases(
  ours: PiHarness,
  dirs: string[],
  { quick, rounds: roundsWanted }: { quick: boolean; rounds?: number },
): Promise<PeersReport> {
  const n = quick ? 30 : 150;
  const rounds = roundsWanted ?? (quick ? 2 : 4);
  const peers: Peer[] = [];
  try {
    for (const d of dirs) peers.push(await startPeer(d));
    const names = new Set<string>();
    for (const p of peers) {
      if (names.has(p.name)) throw new Error(`--peer: ${p.name} is given twice`);
      names.add(p.name);
    }
    const pairs: Pair[] = [];
    // Two peers offering the same surface each get their own comparisons (the second keyed by its name).
    const push = (...ps: Pair[]) => {
      for (const pair of ps)
        pairs.push(pairs.some((x) => x.key === pair.key) ? { ...pair, key: `${pair.key}:${pair.peer.name}` } : pair);
    };
    for (const p of peers) {
      if (p.tools.includes("python")) {
        await mustRun(p.pi, ["python", { cells: [{ code: "x = 0" }] }]);
        await mustRun(ours, ["python", { cells: [{ code: "x = 0" }] }]);
        await mustRun(ours, ["code_execution", { session: "peer", code: "x = 0" }]);
        await mustRun(ours, ["eval", { cells: [{ language: "js", code: "globalThis.x = 0" }] }]);
        const theirs: Call = ["python", { cells: [{ code: X }] }];
        const le1 = {
          text: `<= 1.0x ${p.name}'s warm cell`,
          met: (_: number, ratio: number) => ratio <= 1,
        };
        push(
          {
            key: "pythonCell",
            label: "python cell `x += 1`, warm",
            peer: p,
            ours: ["python", { cells: [{ code: X }] }],
            theirs,
            n: [n, n],
            goal: le1,
          },
          {
            key: "evalPyCell",
            label: "eval py cell `x += 1`, warm",
            peer: p,
            ours: ["eval", { cells: [{ language: "py", code: X }] }],
            theirs,
            n: [n, n],
            goal: le1,
          },
          {
            key: "codeExecution",
            label: "code_execution {session, `x += 1`}",
            peer: p,
            ours: ["code_execution", { session: "peer", code: X }],
            theirs,
            n: [n, n],
            goal: le1,
          },
          {
            // Three cells in one call: pi-python sends them in one request, and so do ours (one run, a batch:
            // docs/design.md "A notebook call"), python's and eval's alike.
            key: "pythonThreeCells",
            label: "python 3 cells `x += 1`, warm",
            peer: p,
            ours: ["python", { cells: [{ code: X }, { code: X }, { code: X }] }],
            theirs: ["python", { cells: [{ code: X }, { code: X }, { code: X }] }],
            n: [n, n],
            goal: le1,
          },
          {
            key: "evalPyThreeCells",
            label: "eval 3 py cells `x += 1`, warm",
            peer: p,
            ours: ["eval", { cells: [1, 2, 3].map(() => ({ language: "py", code: X })) }],
            theirs: ["python", { cells: [{ code: X }, { code: X }, { code: X }] }],
            n: [n, n],
            goal: le1,
          },
          {
            key: "evalJsCell",
            label: "eval js cell `x += 1`, warm",
            peer: p,
            ours: ["eval", { cells: [{ language: "js", code: X }] }],
            theirs,
            n: [n, n],
            goal: le1,
          },
        );
      }
      if (p.tools.includes("exec_command")) {
        push({
          key: "execTrue",
          label: "exec_command `true`",
          peer: p,
          ours: ["exec_command", { cmd: "true" }],
          theirs: ["exec_command", { cmd: "true" }],
          n: [n, n],
          goal: { text: `<= 1.0x ${p.name}'s`, met: (_, ratio) => ratio <= 1 },
          checkOurs: exited,
          checkTheirs: exited,
        });
        if (p.tools.includes("write_stdin")) {
          const open = async (pi: PiHarness) =>
            (await mustRun(pi, ["exec_command", { cmd: "cat", yield_time_ms: 250 }])).details?.session_id as number;
          const mine = await open(ours);
          const theirsId = await open(p.pi);
          if (typeof mine !== "number" || typeof theirsId !== "number") throw new Error("`cat` did not stay running");
          push({
            key: "writeStdinEcho",
            label: "write_stdin `x\\n` to cat, until the echo",
            peer: p,
            ours: ["write_stdin", { session_id: mine, chars: "x\\n" }],
            theirs: ["write_stdin", { session_id: theirsId, chars: "x\\n" }],
            n: [n, Math.max(4, Math.floor(n / 15))],
            goal: { text: "<= 1 ms (ours, absolute)", met: (p50) => p50 <= 1 },
            checkOurs: echoed,
            checkTheirs: echoed,
          });
        }
      }
    }
    // Warm-up: every call of every pair, and the no-op in every session.
    for (const pair of pairs) {
      await times(ours, pair.ours, 20, pair.checkOurs);
      await times(pair.peer.pi, pair.theirs, pair.key === "writeStdinEcho" ? 2 : 20, pair.checkTheirs);
    }
    const sessions: [string, PiHarness][] = [["ours", ours], ...peers.map((p): [string, PiHarness] => [p.name, p.pi])];
    for (const [, pi] of sessions) await times(pi, ["bench_noop", {}], 20);
    for (let i = 0; i < 10; i++) await bareBash();

    const load0 = loadavg();
    const at = new Date().toISOString();
    const samples = new Map<string, { ours: number[]; theirs: number[]; ratios: number[] }>();
    const noop = new Map<string, number[]>(sessions.map(([k]) => [k, []]));
    const bash: number[] = [];
    for (let round = 0; round < rounds; round++) {
      for (const [k, pi] of sessions) noop.get(k)!.push(...(await times(pi, ["bench_noop", {}], Math.max(20, n / 3))));
      for (let i = 0; i < Math.max(10, n / 5); i++) bash.push(await bareBash());
      for (const pair of pairs) {
        const mine = () => times(ours, pair.ours, pair.n[0], pair.checkOurs);
        const theirs = () => times(pair.peer.pi, pair.theirs, pair.n[1], pair.checkTheirs);
        let o: number[];
        let t: number[];
        if (round % 2 === 0) {
          o = await mine();
          t = await theirs();
        } else {
          t = await theirs();
          o = await mine();
        }
        const s = samples.get(pair.key) ?? { ours: [], theirs: [], ratios: [] };
        s.ours.push(...o);
        s.theirs.push(...t);
        s.ratios.push(stats(o).p50! / stats(t).p50!);
        samples.set(pair.key, s);
      }
    }

    const report: PeersReport = {
      method:
        "Pi's span of each tool call (tool_execution_start -> end), one call per faux-model turn; each extension in its own Pi session in one process; per round, adjacent batches of the same call on ours and on the peer (order alternating by round); ratio = ours p50 / peer p50 within the round",
      run: { at, mode: quick ? "quick" : "full", loadavg: { start: load0, end: loadavg() } },
      rounds,
      n,
      peers: Object.fromEntries(peers.map((p) => [p.name, { dir: p.dir, version: p.version, tools: p.tools }])),
      baselines: {
        noop: Object.fromEntries([...noop].map(([k, xs]) => [k, stats(xs)])),
        bareBash: stats(bash),
      },
      comparisons: {},
    };
    const load = (l: number[]) => l.map((x) => x.toFixed(1)).join(" ");
    console.log(
      `\npeers, same run: ${rounds} rounds, adjacent batches, ratio = ours p50 / peer p50 per round (load ${load(report.run.loadavg.start)} -> ${load(report.run.loadavg.end)})`,
    );
    for (const [k, s] of Object.entries(report.baselines.noop))
      console.log(`  ${`baseline: Pi no-op tool (${k})`.padEnd(56)} p50 ${fmt(s.p50!).padStart(9)}`);
    console.log(
      `  ${"baseline: bare `bash -c true` spawn to close".padEnd(56)} p50 ${fmt(report.baselines.bareBash.p50!).padStart(9)}`,
    );
    for (const pair of pairs) {
      const s = samples.get(pair.key)!;
      const os = stats(s.ours);
      const ts = stats(s.theirs);
      const ratio = { p50: median(s.ratios), min: Math.min(...s.ratios), max: Math.max(...s.ratios), rounds: s.ratios };
      const met = pair.goal.met(os.p50!, ratio.p50);
      report.comparisons[pair.key] = {
        label: pair.label,
        peer: pair.peer.name,
        ours: { call: pair.ours, p50: os.p50!, stats: os },
        theirs: { call: pair.theirs, p50: ts.p50!, stats: ts },
        ratio,
        goal: pair.goal.text,
        met,
      };
      console.log(
        `  ${pair.label.padEnd(44)} ours ${fmt(os.p50!).padStart(9)}  ${pair.peer.name} ${fmt(ts.p50!).padStart(9)}  = ${ratio.p50.toFixed(2)}x (rounds ${ratio.min.toFixed(2)}-${ratio.max.toFixed(2)})  goal ${pair.goal.text}: ${met ? "met" : "missed"}`,
      );
    }
    return report;
  } finally {
    for (const p of peers) await p.pi.dispose();
  }
}
