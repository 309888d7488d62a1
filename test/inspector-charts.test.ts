// The inspector's statechart and sequence views. The expectations are read from XState itself (every state node of
// each machine, every transition in `StateNode.transitions`/`always`, the active nodes by `getStateNodes`) and from
// the fixture logs' own records, never from the page's code. In a real headless Chromium: a live run held in `grace`
// is drawn with exactly its active states lit and every state and transition of the run machine present; stepping
// through a recorded log moves the lit state and highlights each transition taken; clicking a state lists the
// transitions that leave it; the sequence view shows a fixture log's events between actors in order and follows the
// log position. Screenshots go to test-artifacts/.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { getStateNodes } from "xstate";
import type { AnyStateMachine, AnyStateNode, InspectionEvent } from "xstate";
import { SupervisorHost } from "../host/host.ts";
import { SystemObserver } from "../record/observe.ts";
import { actorName, ref } from "../record/trace.ts";
import { startInspector, type Inspector } from "../inspector/server.ts";
import { CHARTED_MACHINES, chartedMachineOf, chartsJson, stateTests } from "../inspector/charts.ts";
import { machineChart } from "../inspector/graph.ts";
import { runMachine } from "../machines/run.ts";
import { supervisorMachine } from "../machines/supervisor.ts";
import { FIXTURE_DIR } from "../scripts/record-fixtures.ts";
import { LogCursor, modelAt, stepsFromLog, type Model } from "../inspector/page/model.js";
import { chromiumAvailable, CHROMIUM, launchChromium, type Browser } from "./helpers/chromium.ts";
import { openLogAt, show } from "./helpers/inspector-page.ts";

const ARTIFACTS = resolve(import.meta.dirname, "../test-artifacts");

// ---- expectations from XState ----

function stateNodes(machine: AnyStateMachine): AnyStateNode[] {
  const out: AnyStateNode[] = [];
  const visit = (n: AnyStateNode) => {
    out.push(n);
    for (const c of Object.values(n.states) as AnyStateNode[]) visit(c);
  };
  visit(machine.root);
  return out;
}

/** `<source>|<event>|<index>` for every transition of the machine (`always` ones with the empty event). */
function transitionIds(machine: AnyStateMachine): string[] {
  const ids: string[] = [];
  for (const n of stateNodes(machine)) {
    for (const [event, list] of n.transitions) list.forEach((_, i) => ids.push(`${n.id}|${event}|${i}`));
    (n.always ?? []).forEach((_, i) => ids.push(`${n.id}||${i}`));
  }
  return ids.sort();
}

/** The active leaves of a state value, by XState's own resolution. */
function activeLeaves(machine: AnyStateMachine, value: unknown): string[] {
  const nodes = getStateNodes(machine.root, value as never) as AnyStateNode[];
  const ids = new Set(nodes.map((n) => n.id));
  return nodes.filter((n) => !Object.values(n.states).some((c) => ids.has((c as AnyStateNode).id))).map((n) => n.id);
}

function activeAncestors(machine: AnyStateMachine, value: unknown): string[] {
  const leaves = new Set(activeLeaves(machine, value));
  return (getStateNodes(machine.root, value as never) as AnyStateNode[])
    .map((n) => n.id)
    .filter((id) => !leaves.has(id));
}

/** Machines the supervisor can run, found through the actors each machine provides, recursively. */
function reachableMachines(root: AnyStateMachine): Map<string, AnyStateMachine> {
  const found = new Map<string, AnyStateMachine>();
  const visit = (m: AnyStateMachine) => {
    if (found.has(m.id)) return;
    found.set(m.id, m);
    for (const logic of Object.values(m.implementations.actors ?? {})) {
      if (logic && typeof logic === "object" && "root" in logic) visit(logic as AnyStateMachine);
    }
  };
  visit(root);
  return found;
}

const sorted = (xs: Iterable<string>) => [...xs].sort();

// ---- charts (no browser) ----

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
        label: edge("run.grace|xstate.after.grace.run.grace|0").label,
        targets: edge("run.grace|xstate.after.grace.run.grace|0").targets,
      },
      { label: "after grace", targets: ["run.killed"] },
    );
    assert.equal(edge("run.grace|xstate.after.grace.run.grace|0").delay, "grace");
    assert.equal(edge("run.starting|kernel.started|0").guard, "isMine");
    assert.equal(edge("run.finished||3").guard, "is(success)");
    assert.equal(edge("run.finished||3").label, "always");
    const node = (id: string) => chart.nodes.find((n) => n.id === id)!;
    assert.equal(node("run").initial, "run.preparing");
    for (const s of ["success", "cancelled", "timeout"]) assert.equal(node(`run.${s}`).type, "final");
    // The `after` timers XState adds are shown as transitions, not as entry/exit actions.
    assert.deepEqual(node("run.grace").exit, []);
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
  test("a test's states are recorded under its title by the suite's hook, and the per-file indexes merge", () => {
    const dir = mkdtempSync(join(tmpdir(), "pcs-state-tests-"));
    const probeDir = resolve(import.meta.dirname, "../test-artifacts/coverage-probe");
    mkdirSync(probeDir, { recursive: true });
    const probe = join(probeDir, "probe.test.ts");
    writeFileSync(
      probe,
      `import { test } from "node:test";
import { createActor, fromCallback } from "xstate";
import { spareMachine } from "../../machines/spare.ts";
test("a spare whose process dies while warming", () => {
  const spare = spareMachine.provide({ actors: { kernel: fromCallback(() => {}) } });
  const actor = createActor(spare, { input: { id: "spare:1", key: "k", cwd: "/", idleMs: 1000 } }).start();
  actor.send({ type: "kernel.exited", at: 1, code: 1 } as never);
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
        ["--import", resolve(import.meta.dirname, "helpers/state-coverage.ts"), "--test", probe],
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
      const merged = await_(stateTests(pathToFileURL(`${dir}/`)));
      return merged.then((index) => {
        assert.deepEqual(index?.machines.spare["spare.warming"], [title, "other.test.ts › x"].sort());
        assert.deepEqual(index?.machines.spare["spare.failed"], [title]);
      });
    } finally {
      rmSync(probeDir, { recursive: true, force: true });
    }
  });
});

const await_ = <T>(p: Promise<T>) => p;

// ---- the page ----

let observer: SystemObserver;
let host: SupervisorHost;
let inspector: Inspector;
let browser: Browser;
const snapshots = new Map<string, unknown>();
/** Every event delivered in the live system: [from, to, type]. */
const events: [string | undefined, string, string][] = [];

before(async () => {
  assert.ok(chromiumAvailable(), `${CHROMIUM} is missing: apt-get install -y chromium (scripts/setup.sh does)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  observer = new SystemObserver();
  observer.on({
    inspection: (ev: InspectionEvent) => {
      if (ev.type === "@xstate.event") {
        const type = (ev.event as { type: string }).type;
        events.push([ev.sourceRef ? actorName(ref(ev.sourceRef)) : undefined, actorName(ref(ev.actorRef)), type]);
      }
      if (ev.type !== "@xstate.snapshot") return;
      const value = (ev.snapshot as { value?: unknown }).value;
      if (value !== undefined) snapshots.set(actorName(ref(ev.actorRef)), value);
    },
  });
  // A long grace: the run stays in `grace` for the test (the host kills it at shutdown, after the grace).
  host = new SupervisorHost({ ...observer.hostOptions(), limits: { graceMs: 10_000 } });
  const started = await startInspector({ observer });
  assert.ok(started.ok);
  inspector = started.value;
  browser = await launchChromium({ width: 1600, height: 1000 });
});

after(async () => {
  await browser?.close();
  await host?.shutdown();
  await inspector?.close();
});

const ids = (selector: string) =>
  browser.page.evaluate<string[]>(
    `[...document.querySelectorAll(${JSON.stringify(selector)})].map((el) => el.dataset.stateId ?? el.dataset.transition).sort()`,
  );

function get(path: string): Promise<{ status: number; body: string }> {
  return new Promise((done, reject) => {
    const req = request({ host: "127.0.0.1", port: inspector.port, path }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => done({ status: res.statusCode!, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("statechart view in Chromium", () => {
  test("the server serves the charts and elkjs behind the token, and nothing without it", async () => {
    const base = `/${inspector.token}/`;
    const machines = await get(`${base}api/machines`);
    assert.equal(machines.status, 200);
    assert.deepEqual(
      JSON.parse(machines.body).machines.map((m: { kind: string }) => m.kind),
      CHARTED_MACHINES.map((m) => m.kind),
    );
    for (const file of ["elk-api.js", "elk-worker.min.js"]) {
      const r = await get(`${base}${file}`);
      assert.equal(r.status, 200, file);
      assert.ok(r.body.length > 5000, file);
      assert.equal((await get(`/wrong-token/${file}`)).status, 403);
    }
    assert.equal((await get(`/wrong-token/api/machines`)).status, 403);
  });

  test("a live run in grace: exactly its active states are lit, every state and transition is drawn", async () => {
    const page = browser.page;
    await page.navigate(inspector.url);
    await page.waitFor(
      `document.body.dataset.ready === "true" && document.getElementById("status").dataset.kind === "live"`,
    );
    const abort = new AbortController();
    const pending = host.run(
      {
        code: "import time\nwhile True:\n    try:\n        time.sleep(60)\n    except KeyboardInterrupt:\n        print('no', flush=True)",
        cwd: tmpdir(),
        timeoutMs: 120_000,
      },
      { signal: abort.signal },
    );
    await page.waitFor(
      `[...document.querySelectorAll("li[data-actor^='run:']")].some((li) => li.dataset.state === "running")`,
      20_000,
    );
    abort.abort();
    await page.waitFor(
      `[...document.querySelectorAll("li[data-actor^='run:']")].some((li) => li.dataset.state === "grace")`,
    );
    const run = await page.evaluate<string>(
      `[...document.querySelectorAll("li[data-actor^='run:']")].find((li) => li.dataset.state === "grace").dataset.actor`,
    );
    assert.equal(snapshots.get(run), "grace");
    await show(page, run, "chart");
    assert.equal(await page.evaluate(`document.querySelector("#chart svg.chart").dataset.machine`), "run");

    assert.deepEqual(await ids("#chart g.state.lit"), activeLeaves(runMachine, snapshots.get(run)));
    assert.deepEqual(await ids("#chart g.state.lit"), ["run.grace"]);
    assert.deepEqual(await ids("#chart g.state.active"), activeAncestors(runMachine, snapshots.get(run)));
    assert.deepEqual(await ids("#chart g.state[data-state-id]"), sorted(stateNodes(runMachine).map((n) => n.id)));
    assert.deepEqual([...new Set(await ids("#chart svg.chart [data-transition]"))].sort(), transitionIds(runMachine));
    // Labels name the event, the guard and the delay; the initial state and the final states are marked.
    const label = (id: string) =>
      page.evaluate<string>(`document.querySelector('#chart g.transition[data-transition="${id}"]').textContent`);
    assert.match(await label("run.grace|xstate.after.grace.run.grace|0"), /after grace/);
    assert.match(await label("run.starting|kernel.started|0"), /kernel\.started \[isMine\]/);
    assert.equal(
      await page.evaluate(`document.querySelectorAll('#chart g.state[data-type="final"] rect.inner').length`),
      6,
    );
    assert.deepEqual(await ids("#chart g.state[data-initial]"), ["run.preparing"]);
    assert.ok(await page.evaluate(`document.querySelectorAll("#chart circle.initial").length === 1`));
    // State descriptions are the boxes' tooltips.
    const titles = await page.evaluate<Record<string, string>>(
      `Object.fromEntries([...document.querySelectorAll("#chart g.state")].map((g) => [g.dataset.stateId, g.querySelector("title").textContent]))`,
    );
    for (const n of stateNodes(runMachine)) {
      assert.equal(titles[n.id], n.description ? `${n.id}\n${n.description}` : n.id, `${n.id} tooltip`);
    }
    await page.screenshot(join(ARTIFACTS, "statechart-run-grace.png"));

    // Clicking a state lists the transitions that leave it (its own, and those of its enclosing states).
    await page.evaluate(
      `document.querySelector('#chart g.state[data-state-id="run.grace"]').dispatchEvent(new MouseEvent("click", { bubbles: true }))`,
    );
    await page.waitFor(`document.querySelector(".chart-info h3")?.textContent === "run.grace"`);
    const grace = stateNodes(runMachine).find((n) => n.id === "run.grace")!;
    assert.equal(
      await page.evaluate(`document.querySelector(".chart-info .description")?.textContent ?? null`),
      grace.description ?? null,
    );
    const own = transitionIds(runMachine).filter((id) => id.startsWith("run.grace|"));
    assert.deepEqual(await ids(".chart-info ul.leaving:not(.inherited) li"), own);
    const inherited = transitionIds(runMachine).filter((id) => id.startsWith("run|"));
    assert.deepEqual(await ids(".chart-info ul.leaving.inherited li"), inherited);
    assert.match(
      await page.evaluate<string>(`document.querySelector(".chart-info").textContent`),
      /Tests that cover it/,
    );

    // Its sequence view, live: every event to or from the run and its kernel, as the system delivered them.
    await show(page, run, "sequence");
    await page.waitFor(`document.querySelector("#sequence g.msg")`);
    const rows = await page.evaluate<string[][]>(
      `[...document.querySelectorAll("#sequence g.msg")].map((g) => [g.dataset.from, g.dataset.to, g.dataset.type])`,
    );
    const inRun = (id?: string) => id === run || Boolean(id?.startsWith(`${run}/`));
    assert.deepEqual(
      rows,
      events.filter((e) => inRun(e[0]) || inRun(e[1])).map(([from, to, type]) => [from ?? "(outside)", to, type]),
    );
    assert.ok(rows.some(([, to, type]) => to === run && type === "run.cancel"));
    // The run stays in grace; the host kills it at shutdown once the grace is over.
    void pending.catch(() => {});
    assert.deepEqual(
      browser.console.filter((l) => l.startsWith("exception")),
      [],
    );
  });

  test("stepping through a log moves the lit state and highlights each transition taken", async () => {
    const page = browser.page;
    const log = join(FIXTURE_DIR, "swallowed-interrupt-lost.jsonl");
    const { actor: run } = await openLogAt(page, inspector.url, log, /^run:/, "grace");
    await show(page, run, "chart");
    const steps = await page.evaluate<string[]>("window.inspector.steps()");
    const records = readFileSync(log, "utf8")
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l));
    const snaps = records.filter((r) => r.k === "snap" && r.id === run);
    assert.ok(snaps.length >= 5);
    let previous: unknown;
    let checked = 0;
    for (const snap of snaps) {
      const i = steps.findIndex((s, k) => k >= checked && s.startsWith(`${run} → `) && s.endsWith(`(${snap.cause})`));
      assert.ok(i >= 0, `the step of ${snap.cause}`);
      checked = i + 1;
      await page.evaluate(`window.inspector.goTo(${i + 1})`);
      if (snap.value === undefined) continue;
      assert.deepEqual(await ids("#chart g.state.lit"), activeLeaves(runMachine, snap.value), `at ${snap.cause}`);
      if (previous !== undefined && JSON.stringify(previous) !== JSON.stringify(snap.value)) {
        // The transition taken: from a state active before, for this event, to a state active now.
        const before = new Set((getStateNodes(runMachine.root, previous as never) as AnyStateNode[]).map((n) => n.id));
        const taken = await ids("#chart g.transition.taken");
        assert.ok(taken.length > 0, `a transition is highlighted at ${snap.cause}`);
        for (const t of taken) {
          const [source, event] = t.split("|");
          assert.ok(before.has(source) || event === "", `${t} leaves a state active before ${snap.cause}`);
        }
        assert.ok(
          taken.some((t) => t.split("|")[1] === snap.cause),
          `${snap.cause} is among ${taken}`,
        );
      }
      previous = snap.value;
    }
    await page.evaluate(`window.inspector.goTo(0)`);
    assert.deepEqual(
      browser.console.filter((l) => l.startsWith("exception")),
      [],
    );
  });
});

describe("every kind of actor in Chromium", () => {
  test("each charted machine is drawn whole for its actors in the fixture logs, with their states lit", async () => {
    const page = browser.page;
    const seen = new Set<string>();
    for (const name of ["fresh-runs.jsonl", "nested-calls.jsonl"]) {
      const log = join(FIXTURE_DIR, name);
      await openLogAt(page, inspector.url, log, /^run:/, "running");
      const records = readFileSync(log, "utf8")
        .split("\n")
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l));
      // At the end of the log: each actor's last recorded value.
      await page.evaluate(`window.inspector.goTo(window.inspector.steps().length)`);
      const last = new Map<string, unknown>();
      for (const r of records) if (r.k === "snap" && r.value !== undefined) last.set(r.id, r.value);
      const present = await page.evaluate<string[]>(
        `[...document.querySelectorAll("#tree li[data-actor]")].map((li) => li.dataset.actor)`,
      );
      for (const charted of CHARTED_MACHINES) {
        const actor = present.find((id) => charted.actors.test(id) && last.has(id));
        if (!actor || seen.has(charted.kind)) continue;
        seen.add(charted.kind);
        await show(page, actor, "chart");
        assert.equal(await page.evaluate(`document.querySelector("#chart svg.chart").dataset.machine`), charted.kind);
        assert.deepEqual(
          await ids("#chart g.state[data-state-id]"),
          sorted(stateNodes(charted.machine).map((n) => n.id)),
        );
        assert.deepEqual(
          [...new Set(await ids("#chart svg.chart [data-transition]"))].sort(),
          transitionIds(charted.machine),
          charted.kind,
        );
        assert.deepEqual(await ids("#chart g.state.lit"), activeLeaves(charted.machine, last.get(actor)), actor);
      }
      // A boundary actor has no chart, and says why.
      const boundary = present.find((id) => !chartedMachineOf(id))!;
      assert.ok(boundary, "the log has boundary actors (processes, dispatchers)");
      await page.evaluate(`window.inspector.select(${JSON.stringify(boundary)})`);
      await page.waitFor(
        `!document.querySelector("#chart svg.chart") && /not a state machine/.test(document.getElementById("chart").textContent)`,
      );
    }
    assert.deepEqual(sorted(seen), sorted(CHARTED_MACHINES.map((m) => m.kind)));
    assert.deepEqual(
      browser.console.filter((l) => l.startsWith("exception")),
      [],
    );
  });
});

describe("sequence view in Chromium", () => {
  test("shows a fixture log's events between a session and its descendants, in order, following the position", async () => {
    const page = browser.page;
    const log = join(FIXTURE_DIR, "nested-calls.jsonl");
    await openLogAt(page, inspector.url, log, /^run:/, "running");
    const records = readFileSync(log, "utf8")
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l));
    const parent = new Map(records.filter((r) => r.k === "actor").map((r) => [r.id, r.parent]));
    const inside = (id: string | undefined): boolean =>
      id !== undefined && (id === "session:nest" || inside(parent.get(id)));
    const expected = records
      .filter((r) => r.k === "event" && (inside(r.to) || inside(r.from)))
      .map((r) => [r.from ?? "(outside)", r.to, r.event.type]);
    assert.ok(expected.length > 40);
    await page.evaluate(`window.inspector.goTo(window.inspector.steps().length)`);
    await show(page, "session:nest", "sequence");
    await page.waitFor(`document.querySelector("#sequence g.msg")`);
    const rows = () =>
      page.evaluate<string[][]>(
        `[...document.querySelectorAll("#sequence g.msg")].map((g) => [g.dataset.from, g.dataset.to, g.dataset.type])`,
      );
    assert.deepEqual(await rows(), expected);
    // Every actor that sends or receives has a lifeline with an arrow between the right ones.
    const lifelines = await page.evaluate<string[]>(
      `[...document.querySelectorAll("#sequence .lifeline-name")].map((s) => s.dataset.actor)`,
    );
    assert.deepEqual(sorted(lifelines), sorted(new Set(expected.flatMap(([from, to]) => [from, to]))));
    const geometryOk = await page.evaluate<boolean>(`(() => {
      const x = new Map([...document.querySelectorAll("#sequence line.lifeline")].map((l) => [l.dataset.actor, Number(l.getAttribute("x1"))]));
      return [...document.querySelectorAll("#sequence g.msg")].every((g) => {
        const line = g.querySelector("line.arrow-line");
        if (!line) return g.dataset.from === g.dataset.to;
        return Number(line.getAttribute("x1")) === x.get(g.dataset.from) && Number(line.getAttribute("x2")) === x.get(g.dataset.to);
      });
    })()`);
    assert.ok(geometryOk, "each arrow goes from its sender's lifeline to its receiver's");

    // At a position in the middle: the current row is the last event at or before it, later ones are dimmed, and
    // the current row is scrolled into view.
    const steps = await page.evaluate<string[]>("window.inspector.steps()");
    const eventSteps = steps.map((s, i) => [s, i + 1] as const).filter(([s]) => s.startsWith("event "));
    const middle = eventSteps[Math.floor(eventSteps.length * 0.6)][1];
    await page.evaluate(`window.inspector.goTo(${middle})`);
    const expectedCurrent =
      steps
        .slice(0, middle)
        .filter((s) => s.startsWith("event "))
        .filter((s) => {
          const m = /^event (\S+) → (\S+)(?: from (\S+))?$/.exec(s)!;
          return inside(m[2]) || inside(m[3]);
        }).length - 1;
    const state = await page.evaluate<{ current: string[]; index: number; future: number; visible: boolean }>(`(() => {
      const rows = [...document.querySelectorAll("#sequence g.msg")];
      const cur = document.querySelector("#sequence g.msg.current");
      const s = document.querySelector("#sequence .seq-scroll").getBoundingClientRect();
      const r = cur.getBoundingClientRect();
      return {
        current: [cur.dataset.from, cur.dataset.to, cur.dataset.type],
        index: rows.indexOf(cur),
        future: rows.filter((g) => g.classList.contains("future")).length,
        visible: r.top >= s.top && r.bottom <= s.bottom,
      };
    })()`);
    assert.equal(state.index, expectedCurrent);
    assert.deepEqual(state.current, expected[expectedCurrent]);
    assert.equal(state.future, expected.length - expectedCurrent - 1);
    assert.ok(state.visible, "the current event is scrolled into view");
    await page.screenshot(join(ARTIFACTS, "sequence-nested-calls.png"));
    assert.deepEqual(
      browser.console.filter((l) => l.startsWith("exception")),
      [],
    );
  });
});
