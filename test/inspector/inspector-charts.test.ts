// The inspector's machine charts without a browser: every machine the supervisor can spawn is charted with every state
// and transition (as XState has them) and its names; every actor of the fixture logs maps to its chart; the log
// cursor gives the same model as a rebuild from the start at any position; and the test suite's index of the states
// each test entered is written by its hook and merged by the server.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import { getStateNodes } from "xstate";
import { CHARTED_MACHINES, chartedMachineOf, chartsJson, stateTests } from "../../inspector/charts.ts";
import { machineChart } from "../../inspector/graph.ts";
import { LogCursor } from "../../inspector/page/cursor.js";
import { modelAt, stepsFromLog, type Model } from "../../inspector/page/model.js";
import { runMachine } from "../../machines/run.ts";
import { supervisorMachine } from "../../machines/supervisor.ts";
import { FIXTURE_DIR } from "../../scripts/record-fixtures.ts";
import { reachableMachines, sorted, stateNodes, transitionIds } from "../helpers/machine-states.ts";
import { startExec } from "../helpers/fake-shell.ts";
import { actorName, ref } from "../../record/trace.ts";
import type { InspectionEvent } from "xstate";
import { tempDir } from "../helpers/temp-dir.ts";

describe("machine charts", () => {
  test("every machine the supervisor can spawn is charted, with every state and every transition", () => {
    const charted = new Map(CHARTED_MACHINES.map((m) => [m.machine.id, m]));
    const reachable = reachableMachines(supervisorMachine);
    assert.ok(reachable.size >= 5, `found ${[...reachable.keys()]}`);
    for (const [id, machine] of reachable) {
      assert.ok(charted.has(id), `machine "${id}" is not in inspector/charts.ts (one line there draws it)`);
      const chart = machineChart(machine);
      assert.deepEqual(sorted(chart.nodes.map((n) => n.id)), sorted(stateNodes(machine).map((n) => n.id)), id);
      assert.deepEqual(sorted(chart.edges.map((e) => e.id)), transitionIds(machine), id);
    }
    const served = JSON.parse(chartsJson()) as { machines: { kind: string; chart: { id: string } }[] };
    assert.deepEqual(
      served.machines.map((m) => m.chart.id),
      CHARTED_MACHINES.map((m) => m.machine.id),
    );
  });

  test("transitions carry their event, guard and delay names; final, initial and descriptions are kept", () => {
    const chart = machineChart(runMachine);
    const edge = (id: string) => chart.edges.find((e) => e.id === id)!;
    assert.deepEqual(
      {
        label: edge("run.stopping.grace|xstate.after.grace.run.stopping.grace|0").label,
        targets: edge("run.stopping.grace|xstate.after.grace.run.stopping.grace|0").targets,
      },
      { label: "after grace", targets: ["run.stopping.killed"] },
    );
    assert.equal(edge("run.stopping.grace|xstate.after.grace.run.stopping.grace|0").delay, "grace");
    assert.equal(edge("run.starting|runner.started|0").guard, "isMine");
    assert.equal(edge("run.finished||3").guard, "statusIs(success)");
    assert.equal(edge("run.finished||3").label, "always");
    const node = (id: string) => chart.nodes.find((n) => n.id === id)!;
    assert.equal(node("run").initial, "run.preparing");
    for (const s of ["success", "cancelled", "timeout"]) assert.equal(node(`run.${s}`).type, "final");
    // The `after` timers XState adds are shown as transitions, not as entry/exit actions.
    assert.deepEqual(node("run.stopping.grace").exit, []);
    for (const m of CHARTED_MACHINES) {
      const c = machineChart(m.machine);
      for (const n of stateNodes(m.machine)) {
        assert.equal(c.nodes.find((x) => x.id === n.id)?.description, n.description, `${n.id} description`);
      }
    }
  });

  test("every actor of the fixture logs that runs a machine is charted; boundary actors are not", () => {
    const names = new Map<string, boolean>();
    const files = [
      ...readdirSync(FIXTURE_DIR).map((f) => join(FIXTURE_DIR, f)),
      ...readdirSync(join(FIXTURE_DIR, "faults")).map((f) => join(FIXTURE_DIR, "faults", f)),
    ].filter((f) => f.endsWith(".jsonl"));
    const snaps = files
      .flatMap((f) => readFileSync(f, "utf8").split("\n"))
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l))
      .filter((r) => r.k === "snap");
    for (const r of snaps) names.set(r.id, (names.get(r.id) ?? false) || r.value !== undefined);
    assert.ok(names.size > 10);
    for (const [name, machine] of names) {
      const charted = chartedMachineOf(name);
      if (machine) assert.ok(charted, `${name} runs a machine but no chart matches it`);
      else assert.equal(charted, undefined, `${name} is a callback actor`);
    }
    // Every recorded value is a state of the machine charted for its actor.
    for (const r of snaps) {
      if (r.value === undefined) continue;
      const charted = chartedMachineOf(r.id)!;
      assert.ok(getStateNodes(charted.machine.root, r.value).length > 0, `${r.id}: ${JSON.stringify(r.value)}`);
    }
  });
});

describe("actor names to charts", () => {
  test("every actor of a shell-session system maps to the chart of the machine it runs", () => {
    // The shell surface's pool, sessions, wake coordinator and wake entries, driven through a background command
    // that exits with a wake armed.
    const seen = new Map<string, string | undefined>();
    const h = startExec({ debounceMs: 10 }, (ev: InspectionEvent) => {
      if (ev.type !== "@xstate.snapshot") return;
      const logic = (ev.actorRef as { logic?: { id?: string; root?: unknown } }).logic;
      seen.set(actorName(ref(ev.actorRef)), logic?.root ? logic.id : undefined);
    });
    h.running(1, "wake");
    h.closed(1, 0);
    h.advance(50);
    h.start(2);
    h.spawned(2);
    const kinds = new Set<string>();
    for (const [name, machine] of seen) {
      const charted = chartedMachineOf(name);
      assert.equal(charted?.machine.id, machine, `${name} runs ${machine ?? "no machine"}`);
      if (charted) kinds.add(charted.kind);
    }
    assert.deepEqual(sorted(kinds), ["exec-pool", "exec-session", "exec-wake", "exec-wake-entry", "supervisor"]);
  });
});

describe("stepping through a log", () => {
  /** A model as data, without the wall-clock time a step was seen at. */
  const plain = (m: Model) =>
    JSON.stringify(
      { ...m, actors: [...m.actors], kids: [...m.kids].map(([k, v]) => [k, [...v]]), version: 0 },
      (k, v) => (k === "seen" ? undefined : v),
    );

  test("the cursor's model at any position, forward, backward or jumping, is the model rebuilt from the start", () => {
    for (const name of ["nested-calls.jsonl", "swallowed-interrupt-lost.jsonl", "faults/cancel-during-grace.jsonl"]) {
      const { steps, error } = stepsFromLog(readFileSync(join(FIXTURE_DIR, name), "utf8"));
      assert.equal(error, undefined);
      const cursor = new LogCursor(steps, 16);
      const positions = [steps.length, 0, 5, 40, 39, 38, 17, 16, 15, 100, steps.length - 1, 3, steps.length];
      for (let i = 0; i < 40; i++) positions.push((i * 7919) % (steps.length + 1));
      for (const p of positions) assert.equal(plain(cursor.at(p)), plain(modelAt(steps, p)), `${name} at ${p}`);
    }
  });
});

describe("tests that cover a state", () => {
  test("a test's states are recorded under its title by the suite's hook, and the per-file indexes merge", async () => {
    const dir = tempDir("pcs-state-tests-");
    const probeDir = resolve(import.meta.dirname, "../../test-artifacts/coverage-probe");
    mkdirSync(probeDir, { recursive: true });
    const probe = join(probeDir, "probe.test.ts");
    writeFileSync(
      probe,
      `import { test } from "node:test";
import { createActor, fromCallback } from "xstate";
import { spareMachine } from "../../machines/spare.ts";
test("a spare whose process dies while warming", () => {
  const spare = spareMachine.provide({ actors: { runner: fromCallback(() => {}) } });
  const actor = createActor(spare, { input: { id: "spare:1", key: "k", cwd: "/", idleMs: 1000 } }).start();
  actor.send({ type: "runner.exited", at: 1, code: 1 } as never);
  if (actor.getSnapshot().value !== "failed") throw new Error("not failed");
});
`,
    );
    try {
      // Without NODE_TEST_CONTEXT, which would make the child report to this runner instead of running its file.
      const env: NodeJS.ProcessEnv = { ...process.env, PCS_STATE_TESTS_DIR: dir };
      delete env.NODE_TEST_CONTEXT;
      const r = spawnSync(
        process.execPath,
        ["--import", resolve(import.meta.dirname, "../helpers/state-coverage.ts"), "--test", probe],
        { env, encoding: "utf8" },
      );
      assert.equal(r.status, 0, r.stdout + r.stderr);
      const title = "probe.test.ts › a spare whose process dies while warming";
      const written = JSON.parse(readFileSync(join(dir, "probe.json"), "utf8"));
      assert.deepEqual(written.machines, {
        spare: { spare: [title], "spare.failed": [title], "spare.warming": [title] },
      });
      // Another file's part of the index, merged with it by the server.
      writeFileSync(
        join(dir, "other.json"),
        JSON.stringify({ file: "test/other.test.ts", machines: { spare: { "spare.warming": ["other.test.ts › x"] } } }),
      );
      const index = await stateTests(pathToFileURL(`${dir}/`));
      assert.deepEqual(index?.machines.spare["spare.warming"], ["other.test.ts › x", title]);
      assert.deepEqual(index?.machines.spare["spare.failed"], [title]);
      assert.equal(await stateTests(pathToFileURL(`${join(dir, "none")}/`)), undefined);
    } finally {
      rmSync(probeDir, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
