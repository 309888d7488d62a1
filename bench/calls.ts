// Nested tool-call round trip, run on demand: `bash bench/run.sh` runs bench/run.ts; this file with
// `source scripts/env.sh && node bench/calls.ts [--quick]`. Python times each `await tool(...)` itself
// (time.perf_counter), so a figure is the whole round trip: runner frame, runner fact, the run spawning a tool-call
// actor, the dispatch lifecycle, the answer frame. Printed beside the raw Node<->Python pipe echo of the same run.
import "../test/helpers/agent-dir.ts";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { SupervisorHost } from "../host/host.ts";
import type { RunTools } from "../actors/calls/contract.ts";
import { validateInterpreter } from "../actors/interpreter/interpreter.ts";
import { EXTENSION_PATH, startPi, textOf } from "../test/helpers/pi-session.ts";
import { line, pipeEcho } from "./run.ts";

const quick = process.argv.includes("--quick");
const N = (full: number) => (quick ? Math.max(20, Math.floor(full / 5)) : full);

/** Python code that awaits `call` n times (after 20 warm-up calls) and prints the times in ms as JSON. */
const timedCalls = (call: string, n: number) =>
  [
    "import json, time",
    `for _ in range(20): await ${call}`,
    "ts = []",
    `for _ in range(${n}):`,
    "    t0 = time.perf_counter()",
    `    await ${call}`,
    "    ts.append((time.perf_counter() - t0) * 1000)",
    "print(json.dumps(ts))",
  ].join("\n");

const concurrent = (call: string, n: number) =>
  [
    "import asyncio, json, time",
    "ts = []",
    "for _ in range(10):",
    "    t0 = time.perf_counter()",
    `    await asyncio.gather(*(${call} for _ in range(${n})))`,
    "    ts.append((time.perf_counter() - t0) * 1000)",
    "print(json.dumps(ts))",
  ].join("\n");

/** Tools: one answering at once: what the supervisor itself costs per call. */
function echoTools(cwd: string): RunTools {
  return {
    callerId: "bench",
    cwd,
    tools: [
      {
        spec: { name: "echo", python: "echo", signature: "echo(*, x: int)" },
        validate: (args) => ({ ok: true, value: args }),
      },
    ],
    emit: () => {},
    execute: async (_name, input) => ({
      result: { content: [{ type: "text", text: JSON.stringify(input) }] },
      isError: false,
    }),
  };
}

async function main() {
  const py = await validateInterpreter(process.env.PI_PYTHON ?? "python3", process.cwd());
  if (!py.ok) throw new Error(py.error);
  const cwd = mkdtempSync(join(tmpdir(), "pcs-bench-calls-"));
  console.log(
    `python ${py.value.version} at ${py.value.executable}; node ${process.version}; ${quick ? "quick" : "full"} run\n`,
  );
  const echo = line("baseline: raw pipe echo round trip", await pipeEcho(py.value.executable, N(2000)));
  const baseline = { name: "raw pipe echo", p50: echo.p50 };

  const host = new SupervisorHost();
  try {
    const tools = echoTools(cwd);
    const run = async (code: string) => {
      const r = await host.run({ code, cwd, timeoutMs: 120_000, session: "bench" }, { tools });
      if (r.outcome.status !== "success") throw new Error(`${r.outcome.status}: ${r.stderr}`);
      return JSON.parse(r.stdout) as number[];
    };
    line("nested call, supervisor only (await echo)", await run(timedCalls("echo(x=1)", N(1000))), baseline);
    line("80 concurrent calls, supervisor only", await run(concurrent("echo(x=1)", 80)));
  } finally {
    await host.shutdown();
  }

  // The same through a real Pi session: Pi's executeTool with its validation and hooks, a real tool.
  const pi = await startPi({
    extensionPaths: [EXTENSION_PATH, resolve(import.meta.dirname, "../test/fixtures/pi-tools.ts")],
  });
  try {
    const viaPi = async (code: string) => {
      const [r] = await pi.callTools([{ code, session: "bench", timeout: 600 }]);
      if (r!.isError) throw new Error(textOf(r!));
      return JSON.parse(textOf(r!).split("\n")[0]!) as number[]; // then the session notice
    };
    line("nested call through Pi's hooked dispatch", await viaPi(timedCalls("json_info(name='x')", N(500))), baseline);
    line("80 concurrent calls through Pi", await viaPi(concurrent("json_info(name='x')", 80)));
  } finally {
    await pi.dispose();
  }
}

await main();
