// The inspector's statechart and sequence views in a real headless Chromium. The expectations are read from XState
// (test/helpers/machine-states.ts) and from the fixture logs' own records, never from the page's code: a live run
// held in `grace` is drawn with exactly its active states lit and every state and transition of the run machine
// present; clicking a state lists the transitions that leave it and the tests that entered it; stepping through a
// recorded log moves the lit state and highlights each transition taken; every charted machine is drawn for its
// actors; the sequence view shows a fixture log's events between actors in order and follows the log position, and
// live the events as the system delivered them. Screenshots go to test-artifacts/.
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { getStateNodes } from "xstate";
import type { AnyStateNode, InspectionEvent } from "xstate";
import { SupervisorHost } from "../../host/host.ts";
import { CHARTED_MACHINES, chartedMachineOf, stateTests, type ChartedMachine } from "../../inspector/charts.ts";
import { startInspector, type Inspector } from "../../inspector/server.ts";
import { runMachine } from "../../machines/run.ts";
import { SystemObserver } from "../../record/observe.ts";
import { actorName, ref } from "../../record/trace.ts";
import { FIXTURE_DIR } from "../../scripts/record-fixtures.ts";
import { chromiumAvailable, CHROMIUM, launchChromium, type Browser } from "../helpers/chromium.ts";
import { openLogAt, show } from "../helpers/inspector-page.ts";
import { startExec } from "../helpers/fake-shell.ts";
import { activeAncestors, activeLeaves, sorted, stateNodes, transitionIds } from "../helpers/machine-states.ts";

const ARTIFACTS = resolve(import.meta.dirname, "../../test-artifacts");

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

/** The bound: at the default zoom no text of a chart is drawn smaller than this (CSS px). */
const MIN_TEXT_PX = 10;

/** The smallest rendered size (CSS px) of the shown chart's text: font size times the SVG's scale on screen. The
 * "i" glyph in a state's description mark is a symbol, not text to read, and is left out. */
const smallestText = () =>
  browser.page.evaluate<number>(
    `Math.min(...[...document.querySelectorAll("#chart svg.chart text:not(.has-description-i)")].map((t) => t.getScreenCTM().a * parseFloat(getComputedStyle(t).fontSize)))`,
  );

/** Whether the shown chart's first lit state lies inside the canvas's visible area. */
const litInView = () =>
  browser.page.evaluate<boolean>(`(() => {
    const c = document.querySelector("#chart .chart-canvas").getBoundingClientRect();
    const r = document.querySelector("#chart g.state.lit").getBoundingClientRect();
    return r.left >= c.left && r.right <= c.right && r.top >= c.top && r.bottom <= c.bottom;
  })()`);

/** Shows `actor`'s statechart and checks it is its machine's, drawn whole: every state and every transition. */
async function assertDrawnWhole(actor: string, charted: ChartedMachine, message?: string): Promise<void> {
  const page = browser.page;
  await show(page, actor, "chart");
  assert.equal(await page.evaluate(`document.querySelector("#chart svg.chart").dataset.machine`), charted.kind);
  const smallest = await smallestText();
  assert.ok(smallest >= MIN_TEXT_PX - 0.01, `${charted.kind}: text drawn at ${smallest.toFixed(1)} px`);
  assert.deepEqual(await ids("#chart g.state[data-state-id]"), sorted(stateNodes(charted.machine).map((n) => n.id)));
  assert.deepEqual(
    [...new Set(await ids("#chart svg.chart [data-transition]"))].sort(),
    transitionIds(charted.machine),
    message,
  );
}

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
    // The suite's index grows while other test files run beside this one, and the page fetches it once, when it
    // first needs it (inspector/page/chart-model.js): read it before the page is opened, and again after it listed.
    const indexBefore = await stateTests();
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
      `[...document.querySelectorAll("li[data-actor^='run:']")].some((li) => li.dataset.state === "stopping.grace")`,
    );
    const run = await page.evaluate<string>(
      `[...document.querySelectorAll("li[data-actor^='run:']")].find((li) => li.dataset.state === "stopping.grace").dataset.actor`,
    );
    assert.deepEqual(snapshots.get(run), { stopping: "grace" });
    await show(page, run, "chart");
    assert.equal(await page.evaluate(`document.querySelector("#chart svg.chart").dataset.machine`), "run");

    assert.deepEqual(await ids("#chart g.state.lit"), activeLeaves(runMachine, snapshots.get(run)));
    assert.deepEqual(await ids("#chart g.state.lit"), ["run.stopping.grace"]);
    assert.deepEqual(await ids("#chart g.state.active"), activeAncestors(runMachine, snapshots.get(run)));
    assert.deepEqual(await ids("#chart g.state[data-state-id]"), sorted(stateNodes(runMachine).map((n) => n.id)));
    assert.deepEqual([...new Set(await ids("#chart svg.chart [data-transition]"))].sort(), transitionIds(runMachine));
    // Labels name the event, the guard and the delay; the initial state and the final states are marked.
    const label = (id: string) =>
      page.evaluate<string>(`document.querySelector('#chart g.transition[data-transition="${id}"]').textContent`);
    assert.match(await label("run.stopping.grace|xstate.after.grace.run.stopping.grace|0"), /after grace/);
    assert.match(await label("run.starting|runner.started|0"), /runner\.started \[isMine\]/);
    assert.equal(
      await page.evaluate(`document.querySelectorAll('#chart g.state[data-type="final"] rect.inner').length`),
      6,
    );
    // Two initial states: the run's, and `stopping`'s first step.
    assert.deepEqual(await ids("#chart g.state[data-initial]"), ["run.preparing", "run.stopping.interrupted"]);
    assert.ok(await page.evaluate(`document.querySelectorAll("#chart circle.initial").length === 2`));
    // State descriptions are the boxes' tooltips.
    const titles = await page.evaluate<Record<string, string>>(
      `Object.fromEntries([...document.querySelectorAll("#chart g.state")].map((g) => [g.dataset.stateId, g.querySelector("title").textContent]))`,
    );
    for (const n of stateNodes(runMachine)) {
      assert.equal(titles[n.id], n.description ? `${n.id}\n${n.description}` : n.id, `${n.id} tooltip`);
    }
    await page.screenshot(join(ARTIFACTS, "statechart-run-grace.png"));

    // Readable at the default size: no text under 10 px, and the lit state scrolled into view. The whole chart is
    // one click away (where its text is smaller: the control showing the bound is not met by accident).
    assert.ok((await smallestText()) >= MIN_TEXT_PX - 0.01, `run chart text at ${await smallestText()} px`);
    assert.ok(await litInView(), "the lit state is in view");
    await page.evaluate(`document.querySelector("#chart button.zoom").click()`);
    assert.ok(
      await page.evaluate<boolean>(
        `document.querySelector("#chart svg.chart").getBoundingClientRect().width <= document.querySelector("#chart .chart-canvas").clientWidth`,
      ),
      "the whole chart fits the canvas's width",
    );
    assert.ok((await smallestText()) < MIN_TEXT_PX, "the whole run chart only fits with smaller text");
    await page.screenshot(join(ARTIFACTS, "statechart-run-whole.png"));
    await page.evaluate(`document.querySelector("#chart button.zoom").click()`);
    assert.ok((await smallestText()) >= MIN_TEXT_PX - 0.01);

    // Clicking a state lists the transitions that leave it (its own, and those of its enclosing states).
    await page.evaluate(
      `document.querySelector('#chart g.state[data-state-id="run.stopping.grace"]').dispatchEvent(new MouseEvent("click", { bubbles: true }))`,
    );
    await page.waitFor(`document.querySelector(".chart-info h3")?.textContent === "run.stopping.grace"`);
    const grace = stateNodes(runMachine).find((n) => n.id === "run.stopping.grace")!;
    assert.equal(
      await page.evaluate(`document.querySelector(".chart-info .description")?.textContent ?? null`),
      grace.description ?? null,
    );
    const own = transitionIds(runMachine).filter((id) => id.startsWith("run.stopping.grace|"));
    assert.deepEqual(await ids(".chart-info ul.leaving:not(.inherited) li"), own);
    const inherited = transitionIds(runMachine).filter((id) => id.startsWith("run|") || id.startsWith("run.stopping|"));
    assert.deepEqual(await ids(".chart-info ul.leaving.inherited li"), inherited);
    // The tests that cover it: those the suite's index names for run.grace (none listed without an index).
    const listed = await page.evaluate<string[]>(
      `[...document.querySelectorAll(".chart-info ul.covering li")].map((li) => li.textContent)`,
    );
    const index = await stateTests();
    const earlier = indexBefore?.machines.run?.["run.stopping.grace"] ?? [];
    const later = index?.machines.run?.["run.stopping.grace"] ?? [];
    // What the page listed is the index as it stood in between: all it held before, nothing it did not hold after,
    // in the index's order.
    for (const name of earlier) assert.ok(listed.includes(name), `listed: ${name}`);
    assert.deepEqual(
      listed,
      later.filter((name) => listed.includes(name)),
    );
    assert.match(
      await page.evaluate<string>(`document.querySelector(".chart-info").textContent`),
      index ? /Tests that cover it/ : /no test index/,
    );

    // Its sequence view, live: every event to or from the run and its runner, as the system delivered them.
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
    const { actor: run } = await openLogAt(page, inspector.url, log, /^run:/, "stopping.grace");
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
        await assertDrawnWhole(actor, charted, charted.kind);
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
    // The shell-session machines have no fixture log; the next test draws them live.
    assert.deepEqual(sorted(seen), ["run", "session", "spare", "spare-pool", "supervisor", "tool-call"]);
    assert.deepEqual(
      browser.console.filter((l) => l.startsWith("exception")),
      [],
    );
  });

  test("the shell-session machines, live: each drawn whole, with its actor's states lit", async () => {
    const page = browser.page;
    const execObserver = new SystemObserver();
    const started = await startInspector({ observer: execObserver });
    assert.ok(started.ok);
    const execInspector = started.value;
    // Each actor's latest state value, as the system reported it.
    const values = new Map<string, unknown>();
    execObserver.on({
      inspection: (ev) => {
        const value = ev.type === "@xstate.snapshot" ? (ev.snapshot as { value?: unknown }).value : undefined;
        if (value !== undefined) values.set(actorName(ref(ev.actorRef)), value);
      },
    });
    try {
      await page.navigate(execInspector.url);
      await page.waitFor(`document.getElementById("status").dataset.kind === "live"`);
      // A background command that exits with a wake armed, and one still running.
      const h = startExec({ debounceMs: 10 }, execObserver.hostOptions().inspect);
      h.running(1, "wake");
      h.closed(1, 0);
      h.advance(50);
      h.running(2);
      const kinds = CHARTED_MACHINES.filter((m) => m.kind.startsWith("exec"));
      assert.equal(kinds.length, 4);
      for (const charted of kinds) {
        await page.waitFor(
          `[...document.querySelectorAll("#tree li[data-actor]")].some((li) => new RegExp(${JSON.stringify(charted.actors.source)}).test(li.dataset.actor))`,
        );
        const actor = await page.evaluate<string>(
          `[...document.querySelectorAll("#tree li[data-actor]")].map((li) => li.dataset.actor).find((id) => new RegExp(${JSON.stringify(charted.actors.source)}).test(id))`,
        );
        await assertDrawnWhole(actor, charted);
        assert.deepEqual(await ids("#chart g.state.lit"), activeLeaves(charted.machine, values.get(actor)), actor);
        await page.screenshot(join(ARTIFACTS, `statechart-${charted.kind}.png`));
      }
      h.send({ type: "supervisor.shutdown", at: h.clock.now() });
    } finally {
      await execInspector.close();
    }
    assert.deepEqual(
      browser.console.filter((l) => l.startsWith("exception")),
      [],
    );
  });
});
