// End-to-end figures through a real Pi session, run on demand: `npm run bench:pi [-- --quick] [-- --json out.json]`.
// Pi's scripted faux model calls the tools; this package is loaded from its manifest (package.json "pi"), as a user
// loads it; each figure is Pi's own span of one tool call, tool_execution_start -> tool_execution_end, printed beside
// baselines measured in the same run (a Pi tool that does nothing, a bare interpreter start with the runner's flags,
// a pipe round trip to an idle Python process). Other benches' Pi cases join the same session with `--with exec` (bench/exec.ts),
// `--with notebook` (bench/pi-notebook.ts) and `--with js` (bench/pi-js.ts); all use one harness, bench/pi-spans.ts.
// `--peer DIR` (repeatable) loads another Pi extension by its manifest, each in a Pi session of its own, and measures
// the same calls on it and on ours in alternating batches, printing ratios (bench/pi-peers.ts; `--only-peers` skips
// the figures above and keeps the baselines).
import { mkdtempSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startPi, type ToolResultMessage } from "../test/helpers/pi-session.ts";
import { bareStart } from "../test/helpers/procs.ts";
import { noopExtension, spansFresh } from "./pi-spans.ts";
import { validateInterpreter } from "../actors/interpreter/interpreter.ts";
import { line, pipeEcho, stats } from "./run.ts";
import { peerCases, peerManifest, type PeersReport } from "./pi-peers.ts";

const { values: flags } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    json: { type: "string" },
    with: { type: "string", multiple: true, default: [] },
    peer: { type: "string", multiple: true, default: [] },
    "only-peers": { type: "boolean", default: false },
    "peer-rounds": { type: "string" },
  },
});
const peers = flags.peer ?? [];
if (flags["only-peers"] && peers.length === 0) throw new Error("--only-peers needs at least one --peer DIR");
// Refused before anything runs: a directory that is not a Pi package.
for (const d of peers) peerManifest(d);
const peerRounds = flags["peer-rounds"] === undefined ? undefined : Number(flags["peer-rounds"]);
if (peerRounds !== undefined && !(Number.isInteger(peerRounds) && peerRounds >= 1))
  throw new Error(`--peer-rounds must be a positive integer (got ${flags["peer-rounds"]})`);
const quick = flags.quick;
const N = (full: number) => (quick ? Math.max(10, Math.floor(full / 5)) : full);
const PACKAGE_DIR = resolve(import.meta.dirname, "..");
const GAP_MS = 150;

type Stats = ReturnType<typeof stats>;
const report: {
  machine: Record<string, unknown>;
  baselines: Record<string, Stats>;
  figures: Record<string, Stats & { goal?: string; met?: boolean; ratios?: Record<string, number> }>;
  throughput?: Record<string, number>;
  /** Ratios against other extensions measured in this run (`--peer`). */
  peers?: PeersReport;
} = { machine: {}, baselines: {}, figures: {} };

const textOf = (r: ToolResultMessage) => r.content.map((c) => c.text ?? "").join("");
function mustSucceed(label: string, results: ToolResultMessage[]) {
  const bad = results.find((r) => r.isError);
  if (bad) throw new Error(`${label}: ${textOf(bad).slice(0, 500)}`);
}

function figure(
  key: string,
  label: string,
  xs: number[],
  goal?: { p50: number; text: string },
  ratios: Record<string, number> = {},
) {
  const first = Object.entries(ratios)[0];
  const st = line(
    `${label}${goal ? ` (goal ${goal.text})` : ""}`,
    xs,
    first ? { name: first[0], p50: first[1] } : undefined,
  );
  const r = Object.fromEntries(Object.entries(ratios).map(([k, v]) => [k, st.p50 / v]));
  report.figures[key] = { ...st, ...(goal ? { goal: goal.text, met: st.p50 <= goal.p50 } : {}), ratios: r };
  return st;
}

const code = (args: Record<string, unknown>): [string, Record<string, unknown>] => ["code_execution", args];

async function main() {
  const py = await validateInterpreter(process.env.PI_PYTHON ?? "python3", process.cwd());
  if (!py.ok) throw new Error(py.error);
  const exe = py.value.executable;
  const scratch = mkdtempSync(join(tmpdir(), "pcs-bench-pi-"));
  // As a user runs it: journal and event log on (in scratch places), spares on.
  process.env.PI_CODE_EXECUTION_JOURNAL ??= join(scratch, "journal.sqlite");
  process.env.PI_CODE_EXECUTION_LOG_DIR ??= join(scratch, "logs");
  process.env.PI_PYTHON ??= exe;
  // The tool sets the joined cases need (the settings key PI_CODE_EXECUTION_TOOLS), read when the session starts.
  const tools = [
    "code_execution",
    ...(flags.with ?? []).map((w) => (w === "notebook" ? "python,eval" : w === "js" ? "eval" : w)),
    // The peers' calls need our notebook and shell tools.
    ...(peers.length ? ["python,eval,exec"] : []),
  ];
  if (tools.length > 1) process.env.PI_CODE_EXECUTION_TOOLS ??= tools.join(",");
  report.machine = {
    cpus: cpus().length,
    cpu: cpus()[0]?.model,
    loadavg: loadavg(),
    node: process.version,
    python: `${py.value.version} at ${exe}`,
    mode: quick ? "quick" : "full",
    at: new Date().toISOString(),
  };
  console.log(
    `python ${py.value.version} at ${exe}; node ${process.version}; ${cpus().length} cpus, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}; ${quick ? "quick" : "full"} run; spans are tool_execution_start -> end\n`,
  );

  const pi = await startPi({ extensionPaths: [PACKAGE_DIR], extensionFactories: [noopExtension] });
  try {
    // Baselines, in the same run.
    for (let i = 0; i < 5; i++) await bareStart(exe);
    const bare: number[] = [];
    for (let i = 0; i < N(30); i++) bare.push(await bareStart(exe));
    report.baselines.bareStart = line("baseline: bare `python -c pass` start", bare);
    report.baselines.pipe = line("baseline: pipe round trip, idle Python", await pipeEcho(exe, N(2000)));
    await spansFresh(
      pi,
      Array.from({ length: 20 }, () => ["bench_noop", {}]),
    );
    const noop = await spansFresh(
      pi,
      Array.from({ length: N(500) }, () => ["bench_noop", {}]),
    );
    report.baselines.noop = line("baseline: Pi no-op tool", noop.ms);
    const floor = report.baselines.noop.p50 + report.baselines.pipe.p50;
    console.log();
    if (!flags["only-peers"]) await figures(pi, floor);
    if (peers.length)
      report.peers = await peerCases(pi, peers, { quick, ...(peerRounds ? { rounds: peerRounds } : {}) });
  } finally {
    await pi.dispose();
  }

  const missed = Object.entries(report.figures).filter(([, f]) => f.met === false);
  if (report.throughput && report.throughput.mibPerSecondNet < 300) missed.push(["mib", report.figures.mib!]);
  for (const [k, c] of Object.entries(report.peers?.comparisons ?? {}))
    if (!c.met) missed.push([`peer:${k}`, c as never]);
  console.log(`\ngoals missed: ${missed.length ? missed.map(([k]) => k).join(", ") : "none"}`);
  const out = flags.json ?? join(scratch, "bench-pi.json");
  writeFileSync(out, JSON.stringify(report, null, 2) + "\n");
  console.log(`JSON: ${out}`);
}

/** This package's own figures, beside the baselines (`floor`: no-op + pipe round trip). */
async function figures(pi: Awaited<ReturnType<typeof startPi>>, floor: number) {
  {
    // Session runs.
    mustSucceed("session start", (await spansFresh(pi, [code({ code: "x = 0", session: "b" })])).results);
    await spansFresh(
      pi,
      Array.from({ length: 20 }, () => code({ code: "x += 1", session: "b" })),
    );
    const warm = await spansFresh(
      pi,
      Array.from({ length: N(500) }, () => code({ code: "x += 1", session: "b" })),
    );
    mustSucceed("warm", warm.results);
    figure(
      "warmBackToBack",
      "session `x += 1`, back to back",
      warm.ms,
      { p50: Math.min(0.25, 2 * floor), text: "<= 0.25 ms and <= 2x (no-op + pipe)" },
      {
        "(no-op + pipe)": floor,
        "pipe round trip": report.baselines.pipe.p50,
      },
    );
    const warmGap = await spansFresh(
      pi,
      Array.from({ length: N(60) }, () => code({ code: "x += 1", session: "b" })),
      GAP_MS,
    );
    mustSucceed("warm gap", warmGap.results);
    figure(
      "warmAfterGap",
      `session \`x += 1\`, ${GAP_MS} ms apart`,
      warmGap.ms,
      { p50: 1, text: "<= 1 ms" },
      {
        "(no-op + pipe)": floor,
      },
    );

    // Fresh runs.
    await spansFresh(
      pi,
      Array.from({ length: 5 }, () => code({ code: "pass" })),
    );
    const fresh = await spansFresh(
      pi,
      Array.from({ length: N(100) }, () => code({ code: "pass" })),
    );
    mustSucceed("fresh", fresh.results);
    figure(
      "freshBackToBack",
      "fresh `pass`, back to back",
      fresh.ms,
      { p50: 5, text: "<= 5 ms" },
      {
        "bare start": report.baselines.bareStart.p50,
      },
    );
    const freshGap = await spansFresh(
      pi,
      Array.from({ length: N(60) }, () => code({ code: "pass" })),
      GAP_MS,
    );
    mustSucceed("fresh gap", freshGap.results);
    figure(
      "freshAfterGap",
      `fresh \`pass\`, ${GAP_MS} ms apart`,
      freshGap.ms,
      { p50: 3, text: "<= 3 ms" },
      {
        "bare start": report.baselines.bareStart.p50,
      },
    );

    // 1 MiB of output from the warm session, net of the same call's fixed cost (`x += 1` just measured).
    const mib = `import sys\nsys.stdout.buffer.write(b'x' * (1 << 20))\nsys.stdout.flush()`;
    await spansFresh(
      pi,
      Array.from({ length: 3 }, () => code({ code: mib, session: "b" })),
    );
    const big = await spansFresh(
      pi,
      Array.from({ length: N(40) }, () => code({ code: mib, session: "b" })),
    );
    mustSucceed("1 MiB", big.results);
    const bigSt = figure("mib", "1 MiB of output, session", big.ms);
    const net = bigSt.p50 - stats(warm.ms).p50;
    const mibs = 1000 / Math.max(net, 1e-3);
    report.throughput = { mibPerSecondNet: mibs, netMs: net };
    console.log(`${"  = net of the fixed cost".padEnd(44)} ${mibs.toFixed(0)} MiB/s (goal >= 300 MiB/s)`);

    // Interrupt: timeout 1 s on a busy loop; overrun past the deadline.
    const busy = code({ code: "while True: pass", session: "b", timeout: 1 });
    const intr = await spansFresh(
      pi,
      Array.from({ length: N(15) }, () => busy),
    );
    if (intr.results.some((r) => (r.details as any)?.session?.isLost || (r.details as any)?.sessionLost))
      throw new Error("the interrupt lost the session");
    figure(
      "interruptOverrun",
      "interrupt: overrun past a 1 s timeout",
      intr.ms.map((ms) => ms - 1000),
      { p50: 2, text: "<= 2 ms" },
    );

    // A nested tool call from Python (the no-op tool), timed inside Python around each await.
    const nestedCode = [
      "import time, json",
      "ts = []",
      `for _ in range(${N(300)}):`,
      "    t = time.perf_counter(); await bench_noop(); ts.append((time.perf_counter() - t) * 1000)",
      "print(json.dumps(ts))",
    ].join("\n");
    const nested = await spansFresh(pi, [code({ code: nestedCode, session: "b", timeout: 600 })]);
    mustSucceed("nested", nested.results);
    const nestedMs = JSON.parse(textOf(nested.results[0]!).trim().split("\n").at(-1)!) as number[];
    figure(
      "nestedCall",
      "nested tool call from Python, round trip",
      nestedMs.slice(20),
      { p50: 1, text: "<= 1 ms" },
      {
        "Pi no-op": report.baselines.noop.p50,
      },
    );

    for (const name of flags.with ?? []) {
      console.log();
      if (name === "exec") await (await import("./exec.ts")).execCases(pi, { quick });
      else if (name === "notebook") await (await import("./pi-notebook.ts")).notebookCases(pi, { quick });
      else if (name === "js") await (await import("./pi-js.ts")).jsCases(pi, { quick });
      else throw new Error(`--with ${name}: unknown (exec, notebook, js)`);
    }
  }
}

await main();
process.exit(0);
