// A program, not a test: opens and closes N real Pi sessions (this extension loaded as Pi loads it) one after
// another in this process, each running a fresh run and a session run that imports a local module, and prints
// what the process holds before and after as JSON: listeners on `process` by event name, active resources by type,
// and the heap after garbage collection. Run with --expose-gc (test/memory/session-leaks.test.ts).
import "./agent-dir.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { getHeapSpaceStatistics } from "node:v8";
import { startPi } from "./pi-session.ts";

const count = Number(process.argv[2] ?? 50);
const warnings: string[] = [];
process.on("warning", (w) => warnings.push(`${w.name}: ${w.message}`));

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");

function listeners(): Record<string, number> {
  return Object.fromEntries(process.eventNames().map((name) => [String(name), process.listenerCount(name)]));
}

function resources(): Record<string, number> {
  const byType: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) byType[type] = (byType[type] ?? 0) + 1;
  return byType;
}

/** Bytes used by objects: every heap space but compiled code, which keeps growing as V8 optimizes hot functions. */
function objectHeap(): number {
  return getHeapSpaceStatistics()
    .filter((s) => !s.space_name.startsWith("code_"))
    .reduce((sum, s) => sum + s.space_used_size, 0);
}

async function heap(): Promise<number> {
  // Let closed handles and finalizers settle, then collect until the heap stops shrinking.
  let last = Infinity;
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setTimeout(r, 20));
    gc!();
    const used = objectHeap();
    if (used >= last - 64 * 1024) return used;
    last = used;
  }
  return last;
}

/** Processes that were told to exit at shutdown, and their pipes: give them a moment. */
async function settle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 1000));
}

async function onePiSession(): Promise<void> {
  const pi = await startPi();
  writeFileSync(join(pi.cwd, "helper.py"), "VALUE = 41\n");
  const results = await pi.callTools([
    { code: "print('fresh')" },
    { code: "import helper\nhelper.VALUE + 1", session: "s" },
  ]);
  const texts = results.map((r) => r.content.map((c) => c.text ?? "").join(""));
  if (texts[0] !== "fresh\n" || !texts[1].startsWith("42\n")) throw new Error(`unexpected results: ${texts}`);
  await pi.dispose();
}

// The first sessions load what is loaded once per process (Pi, XState, better-sqlite3, ...) and warm V8 up.
for (let i = 0; i < 3; i++) await onePiSession();
await settle();
const before = { listeners: listeners(), resources: resources(), heap: await heap() };
for (let i = 0; i < count; i++) await onePiSession();
await settle();
const after = { listeners: listeners(), resources: resources(), heap: await heap() };
process.stdout.write(`${JSON.stringify({ count, before, after, warnings })}\n`);
process.exit(0);
