// The machines the inspector draws, in one place: each kind of actor the supervisor runs, the machine it runs and
// which actor names are its actors. A new machine is one line here (test/inspector/inspector-charts.test.ts fails for
// any machine the supervisor can spawn that is missing). Charts are computed once per process and served as JSON.
import { readdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type { AnyStateMachine } from "xstate";
import { execPoolMachine } from "../machines/exec-pool.ts";
import { execSessionMachine } from "../machines/exec-session.ts";
import { wakeMachine } from "../machines/exec-wake.ts";
import { wakeEntryMachine } from "../machines/exec-wake-entry.ts";
import { runMachine } from "../machines/run.ts";
import { sessionMachine } from "../machines/session.ts";
import { spareMachine } from "../machines/spare.ts";
import { sparePoolMachine } from "../machines/spare-pool.ts";
import { supervisorMachine } from "../machines/supervisor.ts";
import { toolCallMachine } from "../machines/tool-call.ts";
import { machineChart, type MachineChart } from "./graph.ts";

export interface ChartedMachine {
  /** What the page calls this kind of actor. */
  kind: string;
  machine: AnyStateMachine;
  /** The names of its actors (record/trace.ts `actorName`): explicit, so the same in live frames and logs. */
  actors: RegExp;
}

export const CHARTED_MACHINES: readonly ChartedMachine[] = [
  { kind: "supervisor", machine: supervisorMachine, actors: /^supervisor$/ },
  { kind: "session", machine: sessionMachine, actors: /^session:[^/]+$/ },
  { kind: "run", machine: runMachine, actors: /^run:[^/]+$/ },
  { kind: "tool-call", machine: toolCallMachine, actors: /^tool:[^/]+$/ },
  { kind: "spare-pool", machine: sparePoolMachine, actors: /^spare:pool$/ },
  { kind: "spare", machine: spareMachine, actors: /^spare:\d+$/ },
  { kind: "exec-pool", machine: execPoolMachine, actors: /^exec:pool$/ },
  { kind: "exec-session", machine: execSessionMachine, actors: /^exec:\d+$/ },
  { kind: "exec-wake", machine: wakeMachine, actors: /^exec:pool\/wake$/ },
  { kind: "exec-wake-entry", machine: wakeEntryMachine, actors: /^wake:\d+$/ },
];

export interface ChartSet {
  machines: { kind: string; actors: string; chart: MachineChart }[];
}

let cached: string | undefined;

/** Every charted machine as JSON text (the page's `api/machines`), built on first use. */
export function chartsJson(): string {
  cached ??= JSON.stringify({
    machines: CHARTED_MACHINES.map((m) => ({ kind: m.kind, actors: m.actors.source, chart: machineChart(m.machine) })),
  } satisfies ChartSet);
  return cached;
}

/** The charted machine whose actors include `actor`, if any (boundary actors such as `…/runner` have none). */
export function chartedMachineOf(actor: string): ChartedMachine | undefined {
  return CHARTED_MACHINES.find((m) => m.actors.test(actor));
}

/** The files of the maintained layout library the page runs (elkjs: its API, and its worker), served by the
 * inspector itself: the page never loads anything from elsewhere. */
const require = createRequire(import.meta.url);
const VENDOR: Record<string, string> = {
  "elk-api.js": "elkjs/lib/elk-api.js",
  "elk-worker.min.js": "elkjs/lib/elk-worker.min.js",
};

/** Where the test suite writes which tests entered which states (test/helpers/state-coverage.ts): a checkout that
 * ran `bash scripts/test.sh` has it; an installed package has none, and the page says so. */
export const STATE_TESTS_DIR = new URL("../test-artifacts/state-tests/", import.meta.url);

export interface StateTests {
  /** machine id → state id → titles of the tests (`file › test`) in which an actor entered that state. */
  machines: Record<string, Record<string, string[]>>;
}

/** The per-test-file indexes merged; undefined when the suite never wrote one. */
export async function stateTests(dir: URL = STATE_TESTS_DIR): Promise<StateTests | undefined> {
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => f.endsWith(".json")).sort();
  } catch {
    return undefined;
  }
  if (!files.length) return undefined;
  const machines: StateTests["machines"] = {};
  for (const f of files) {
    let part: StateTests;
    try {
      part = JSON.parse(await readFile(new URL(f, dir), "utf8")) as StateTests;
    } catch {
      continue; // a file being rewritten by a running test: the next request reads it
    }
    for (const [machine, states] of Object.entries(part.machines ?? {})) {
      const into = (machines[machine] ??= {});
      for (const [state, titles] of Object.entries(states)) (into[state] ??= []).push(...titles);
    }
  }
  for (const states of Object.values(machines)) for (const titles of Object.values(states)) titles.sort();
  return { machines };
}

export interface Asset {
  type: string;
  body: string | Buffer;
  status?: number;
}

/** The statechart routes under the token: `api/machines`, `api/state-tests`, and elkjs's files. */
export async function chartAsset(rest: string): Promise<Asset | undefined> {
  if (rest === "api/machines") return { type: "application/json; charset=utf-8", body: chartsJson() };
  if (rest === "api/state-tests") {
    const index = await stateTests();
    return index
      ? { type: "application/json; charset=utf-8", body: JSON.stringify(index) }
      : { type: "application/json; charset=utf-8", body: JSON.stringify({ error: "no test index" }), status: 404 };
  }
  const vendor = VENDOR[rest];
  if (vendor) return { type: "text/javascript; charset=utf-8", body: await readFile(require.resolve(vendor)) };
  return undefined;
}
