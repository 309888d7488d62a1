// The path a warm session run takes through the actors (docs/design.md): every inspection event of one quiet run
// on the scripted process port, and their counts (events delivered, actors created, snapshots).
//   source scripts/env.sh && node bench/run-path.ts
import "../test/helpers/agent-dir.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { InspectionEvent } from "xstate";
import { SupervisorHost } from "../host/host.ts";
import { noopTools, FixedInterpreter } from "./host-cost.ts";
import { scriptedOperations } from "./scripted-ops.ts";

export interface RunPath {
  lines: string[];
  events: number;
  actors: number;
  snapshots: number;
}

/** One warm `x += 1` in session `bench` (after two runs that start it), as the inspection stream saw it. */
export async function warmRunPath(): Promise<RunPath> {
  const scratch = mkdtempSync(join(tmpdir(), "pcs-run-path-"));
  let on = false;
  const lines: string[] = [];
  const name = (e: InspectionEvent) => (e.actorRef as { id?: string }).id ?? "?";
  const host = new SupervisorHost({
    ops: scriptedOperations(),
    interpreter: new FixedInterpreter(),
    spareRunners: () => false,
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
    const tools = noopTools(scratch);
    const run = () =>
      host.run(
        { code: "x += 1", cwd: scratch, timeoutMs: 30_000, session: "bench", surface: "code_execution" },
        { tools },
      );
    await run();
    await run();
    on = true;
    const r = await run();
    on = false;
    if (r.outcome.status !== "success") throw new Error(`warm run: ${r.outcome.status}`);
  } finally {
    await host.shutdown();
    rmSync(scratch, { recursive: true, force: true });
  }
  const count = (prefix: string) => lines.filter((l) => l.startsWith(prefix)).length;
  return { lines, events: count("event"), actors: count("actor"), snapshots: count("  snapshot") };
}

if (import.meta.main) {
  const path = await warmRunPath();
  console.log(path.lines.join("\n"));
  console.log(`${path.events} events, ${path.actors} actors created, ${path.snapshots} snapshots`);
}
