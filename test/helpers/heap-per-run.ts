// A program, not a test: runs warm runs through a host (no Pi) and prints, as JSON, the bytes of heap each run left
// behind after garbage collection, window by window. Run with --expose-gc (test/helpers/heap-windows.ts runs it for
// test/memory/heap-per-run.test.ts and heap-per-fresh-run.test.ts).
//   node --expose-gc test/helpers/heap-per-run.ts <kind> [windows] [runs per window] [--record]
// kind: `session` (a named Python session), `fresh` (a fresh Python run each time), `js` (a JavaScript session) or
// `calls` (a named Python session whose every run makes a nested tool call, answered by the bridge below).
import "./agent-dir.ts";
import { getHeapSpaceStatistics } from "node:v8";
import { Observability } from "../../host/observability.ts";
import { SupervisorHost } from "../../host/host.ts";
import type { RunCallbacks, RunRequestInput } from "../../host/requests.ts";
import type { RunTools } from "../../actors/calls/contract.ts";

const [kind = "session", windowsArg = "4", perWindowArg = "500"] = process.argv
  .slice(2)
  .filter((a) => !a.startsWith("--"));
const record = process.argv.includes("--record");
const windows = Number(windowsArg);
const perWindow = Number(perWindowArg);

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");

/** Bytes used by objects: every heap space but compiled code and bytecode (`code_*`, `trusted_*`), which V8 keeps
 * growing as it optimizes hot functions and shrinks as it flushes cold ones, run count aside. */
function objectHeap(): number {
  return getHeapSpaceStatistics()
    .filter((s) => !s.space_name.startsWith("code_") && !s.space_name.startsWith("trusted_"))
    .reduce((sum, s) => sum + s.space_used_size, 0);
}

/** The object heap after full collections (until it stops shrinking: finalizers and weak maps settle in rounds). */
async function settledHeap(): Promise<number> {
  let last = Infinity;
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setImmediate(r));
    gc!();
    const used = objectHeap();
    if (used >= last) return used;
    last = used;
  }
  return last;
}

/** The settled heap once the host is idle: settled heaps 50 ms apart until three agree within 16 KB (at most 5 s),
 * the least of them. After a window's last fresh run, about 1.3 MB stays reachable for 50 to 150 ms (the host refills
 * its spare); a boundary measured at once caught it or not by chance, and a window read +8 500 or -8 500 bytes a run. */
async function idleHeap(): Promise<number> {
  const seen = [await settledHeap()];
  for (const start = Date.now(); Date.now() - start < 5000;) {
    await new Promise((r) => setTimeout(r, 50));
    seen.push(await settledHeap());
    const recent = seen.slice(-3);
    if (recent.length === 3 && Math.max(...recent) - Math.min(...recent) <= 16 * 1024) break;
  }
  return Math.min(...seen);
}

const REQUESTS: Record<string, (i: number) => Omit<RunRequestInput, "cwd" | "timeoutMs">> = {
  session: (i) => ({ code: `x = ${i}`, session: "s" }),
  fresh: (i) => ({ code: `x = ${i}` }),
  js: (i) => ({ code: `globalThis.x = ${i}`, session: "j", language: "js" }),
  calls: (i) => ({ code: `x = await echo(x='${i}')`, session: "c" }),
};

/** What the extension hands a run for its nested calls, with Pi's dispatch answering `echo` at once. */
const echoTools: RunTools = {
  callerId: "outer-call",
  cwd: process.cwd(),
  tools: [
    {
      spec: { name: "echo", python: "echo", signature: "echo(*, x: str)" },
      validate: (args) => ({ ok: true, value: args }),
    },
  ],
  emit() {},
  async execute(name, input) {
    return { result: { content: [{ type: "text", text: `${name}:${String(input.x)}` }] }, isError: false };
  },
};
const callbacks: RunCallbacks = kind === "calls" ? { tools: echoTools } : {};
const request = REQUESTS[kind];
if (!request) throw new Error(`unknown kind ${kind}: session, fresh or js`);

const observability = new Observability({ record: record ? {} : false });
const host = new SupervisorHost(observability.observe({}));
const cwd = process.cwd();
async function runs(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const result = await host.run({ ...request(i), cwd, timeoutMs: 30_000 }, callbacks);
    if (result.outcome.status !== "success")
      throw new Error(`run ${i} ended ${result.outcome.status}: ${JSON.stringify(result)}`);
  }
}

// The first window loads and warms up what is loaded once (the interpreter, V8's feedback for the host's paths).
await runs(perWindow);
let before = await idleHeap();
const perRun: number[] = [];
for (let w = 0; w < windows; w++) {
  await runs(perWindow);
  const after = await idleHeap();
  perRun.push(Math.round((after - before) / perWindow));
  before = after;
}
await host.shutdown();
process.stdout.write(`${JSON.stringify({ kind, record, perWindow, perRun })}\n`);
process.exit(0);
