// The path a warm session run takes through the actors (docs/design.md): every inspection event of one quiet run
// on the scripted process port, and their counts (events delivered, actors created, snapshots); then the same for a
// fresh run that takes a ready spare runner (spares on), which the spare pool replaces.
//   source scripts/env.sh && node bench/run-path.ts
import "../test/helpers/agent-dir.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { InspectionEvent } from "xstate";
import { SupervisorHost } from "../host/host.ts";
import type { RunTools } from "../actors/calls/contract.ts";
import { noopTools, FixedInterpreter } from "./host-cost.ts";
import { scriptedOperations } from "./scripted-ops.ts";

export interface RunPath {
  lines: string[];
  events: number;
  actors: number;
  snapshots: number;
}

/** A host on the scripted port whose inspection events are written as lines while `on()` says so. */
async function observed(
  spares: boolean,
  measure: (host: SupervisorHost, tools: RunTools, cwd: string, on: (yes: boolean) => void) => Promise<void>,
): Promise<RunPath> {
  const scratch = mkdtempSync(join(tmpdir(), "pcs-run-path-"));
  let on = false;
  const lines: string[] = [];
  const name = (e: InspectionEvent) => (e.actorRef as { id?: string }).id ?? "?";
  const host = new SupervisorHost({
    ops: scriptedOperations(),
    interpreter: new FixedInterpreter(),
    spareRunners: () => spares,
    exec: { logDir: join(scratch, "exec-logs") },
    inspect: (e) => {
      if (!on) return;
      if (e.type === "@xstate.event") lines.push(`event ${e.event.type} -> ${name(e)}`);
      else if (e.type === "@xstate.actor") lines.push(`actor ${name(e)}`);
      else if (e.type === "@xstate.snapshot")
        lines.push(`  snapshot ${name(e)} ${JSON.stringify((e.snapshot as { value?: unknown }).value ?? "")}`);
    },
  });
  try {
    await measure(host, noopTools(scratch), scratch, (yes) => (on = yes));
  } finally {
    await host.shutdown();
    rmSync(scratch, { recursive: true, force: true });
  }
  const count = (prefix: string) => lines.filter((l) => l.startsWith(prefix)).length;
  return { lines, events: count("event"), actors: count("actor"), snapshots: count("  snapshot") };
}

/** One warm `x += 1` in session `bench` (after two runs that start it), as the inspection stream saw it. */
export function warmRunPath(): Promise<RunPath> {
  return observed(false, async (host, tools, cwd, on) => {
    const run = () =>
      host.run({ code: "x += 1", cwd, timeoutMs: 30_000, session: "bench", surface: "code_execution" }, { tools });
    await run();
    await run();
    on(true);
    const r = await run();
    on(false);
    if (r.outcome.status !== "success") throw new Error(`warm run: ${r.outcome.status}`);
  });
}

/** One fresh `pass` that takes a ready spare (the first fresh run of the key started it; its replacement starts
 * now), as the inspection stream saw it up to the run's result. */
export function freshRunPath(): Promise<RunPath> {
  return observed(true, async (host, tools, cwd, on) => {
    const run = () => host.run({ code: "pass", cwd, timeoutMs: 30_000, surface: "code_execution" }, { tools });
    if ((await run()).outcome.status !== "success") throw new Error("first fresh run failed");
    const deadline = Date.now() + 10_000;
    while (!host.spares().some((s) => s.ready)) {
      if (Date.now() > deadline) throw new Error("no spare became ready");
      await new Promise((r) => setTimeout(r, 5));
    }
    on(true);
    const r = await run();
    on(false);
    if (r.outcome.status !== "success") throw new Error(`fresh run: ${r.outcome.status}`);
  });
}

if (import.meta.main) {
  for (const [what, path] of [
    ["warm session run", await warmRunPath()],
    ["fresh run taking a ready spare", await freshRunPath()],
  ] as const) {
    console.log(`# ${what}`);
    console.log(path.lines.join("\n"));
    console.log(`${what}: ${path.events} events, ${path.actors} actors created, ${path.snapshots} snapshots\n`);
  }
}
