// Regenerates the inspector screenshots docs/inspector.md shows (docs/inspector-*.png) in a real headless Chromium,
// from a recorded fixture log (test/fixtures/replay/swallowed-interrupt-lost.jsonl) stepped to the moment its run
// enters `stopping.grace`: the statechart view of that run and its sequence view. Beside them it writes
// docs/inspector-screenshots.json, what each shot shows, read from the page at capture time: the machine states
// (tree, header, timeline, chart) and the event types (chart transitions, sequence messages) visible in it, and the
// PNG's sha256. test/system/screenshots.test.ts fails when a state or event named there is no longer in machines/.
// The state panel's "tests that cover it" lists what test-artifacts/state-tests/ holds: run `bash scripts/test.sh`
// first for the whole suite's list.
//   source scripts/env.sh && node scripts/screenshots.ts
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AnyStateMachine, AnyStateNode } from "xstate";
import { CHARTED_MACHINES, chartedMachineOf } from "../inspector/charts.ts";
import { startInspector } from "../inspector/server.ts";
import { launchChromium, type Page } from "../test/helpers/chromium.ts";
import { openLogAt, show } from "../test/helpers/inspector-page.ts";

const ROOT = resolve(import.meta.dirname, "..");
const DOCS = join(ROOT, "docs");
const FIXTURE = "test/fixtures/replay/swallowed-interrupt-lost.jsonl";
/** The run's state the shots show (a nested state since the run model of issue 26: `run.stopping.grace`). */
const STATE = "stopping.grace";
export const MANIFEST = join(DOCS, "inspector-screenshots.json");

/** A machine state a shot shows: its full state node id (`run.stopping.grace`), and the actor it was shown for. */
export interface ShownState {
  machine: string;
  state: string;
  actor?: string;
}
/** An event type a shot shows: a transition of a charted machine, or a message to an actor (`to`); `machine` is
 * the machine of the actor it went to, absent for a boundary actor (a runner) that no machine defines. */
export interface ShownEvent {
  type: string;
  machine?: string;
  to?: string;
}
export interface Shot {
  file: string;
  sha256: string;
  view: "chart" | "sequence";
  actor: string;
  states: ShownState[];
  events: ShownEvent[];
}
export interface Manifest {
  fixture: string;
  state: string;
  shots: Shot[];
}

interface Visible {
  labels: { actor: string; label: string }[];
  chart?: { machine: string; states: string[]; transitions: string[]; selected?: string };
  messages: { type: string; to: string }[];
}

/** Runs in the page: what is on screen now (inside the viewport and every scrolling ancestor, not hidden). */
const VISIBLE = `(() => {
  const shown = (el) => {
    let r = el.getBoundingClientRect();
    if (r.width <= 0 && r.height <= 0) return false;
    let box = { l: r.left, t: r.top, r: r.right, b: r.bottom };
    const clip = (c) => { box = { l: Math.max(box.l, c.left), t: Math.max(box.t, c.top), r: Math.min(box.r, c.right), b: Math.min(box.b, c.bottom) }; };
    clip({ left: 0, top: 0, right: innerWidth, bottom: innerHeight });
    for (let e = el.parentElement; e; e = e.parentElement) {
      const cs = getComputedStyle(e);
      if (cs.display === "none" || cs.visibility === "hidden") return false;
      if (cs.overflow !== "visible" && e instanceof HTMLElement) clip(e.getBoundingClientRect());
    }
    return box.r > box.l && box.b > box.t;
  };
  const labels = [];
  for (const el of document.querySelectorAll("[data-actor][data-state]"))
    if (shown(el)) labels.push({ actor: el.dataset.actor, label: el.dataset.state });
  for (const el of document.querySelectorAll(".lane[data-actor] .seg[data-state]"))
    if (shown(el)) labels.push({ actor: el.closest(".lane").dataset.actor, label: el.dataset.state });
  const head = document.querySelector(".details-head");
  if (head && shown(head)) labels.push({ actor: head.querySelector("h2").textContent, label: head.querySelector(".pill").textContent });
  const svg = document.querySelector("#chart svg.chart");
  const chart = svg && shown(svg) ? {
    machine: svg.dataset.machine,
    states: [...svg.querySelectorAll("g.state[data-state-id]")].filter(shown).map((g) => g.dataset.stateId),
    transitions: [...svg.querySelectorAll("[data-transition]"), ...document.querySelectorAll(".chart-info [data-transition]")].filter(shown).map((g) => g.dataset.transition),
    selected: document.querySelector(".chart-info h3")?.textContent || undefined,
  } : undefined;
  const messages = [...document.querySelectorAll("#sequence g.msg")].filter(shown).map((g) => ({ type: g.dataset.type, to: g.dataset.to }));
  return { labels, chart, messages };
})()`;

/** The page's view of what it shows, as machine state ids and event types. */
export function shownOf(v: Visible): { states: ShownState[]; events: ShownEvent[] } {
  const states = new Map<string, ShownState>();
  const events = new Map<string, ShownEvent>();
  for (const { actor, label } of v.labels) {
    const charted = chartedMachineOf(actor);
    // A boundary actor (a runner, the prepare step) has no machine: its label is its status.
    if (!charted || !label) continue;
    const machine = charted.machine.id;
    const own = stateIds(charted.machine);
    // Parallel regions read `a.x,b.y`; each is a state of the machine.
    for (const part of label.split(",")) {
      // A session shows its run's stopping step as its phase (machines/session.ts `sessionPhase`): `grace` there
      // is the run's `run.stopping.grace`.
      const phase = charted.kind === "session" && !own.has(`${machine}.${part}`);
      const state = phase ? `${RUN_STOPPING}.${part}` : `${machine}.${part}`;
      states.set(`${actor} ${state}`, { machine: phase ? "run" : machine, state, actor });
    }
  }
  if (v.chart) {
    const machine = v.chart.machine;
    const id = chartedMachineId(machine);
    for (const s of [...v.chart.states, ...(v.chart.selected ? [v.chart.selected] : [])])
      states.set(`chart ${s}`, { machine: id, state: s });
    for (const t of v.chart.transitions) {
      // `<source id>|<event type>|<index>`; "" is an `always` transition, which names no event.
      const type = t.split("|")[1];
      if (type) events.set(`chart ${type}`, { type, machine: id });
    }
  }
  for (const m of v.messages) {
    const charted = chartedMachineOf(m.to);
    events.set(`${m.to} ${m.type}`, { type: m.type, to: m.to, ...(charted ? { machine: charted.machine.id } : {}) });
  }
  return { states: [...states.values()], events: [...events.values()] };
}

/** The id of a session's run's stopping state, whose steps a session shows as its phase. */
const RUN_STOPPING = "run.stopping";

/** Every state node id of a machine. */
function stateIds(machine: AnyStateMachine): Set<string> {
  const ids = new Set<string>();
  const visit = (node: AnyStateNode) => {
    ids.add(node.id);
    for (const child of Object.values(node.states)) visit(child as AnyStateNode);
  };
  visit(machine.root);
  return ids;
}

/** The machine id of a kind the page draws (`data-machine`). */
function chartedMachineId(kind: string): string {
  const found = CHARTED_MACHINES.find((c) => c.kind === kind);
  if (!found) throw new Error(`the page drew a machine the inspector does not chart: ${kind}`);
  return found.machine.id;
}

async function capture(page: Page, file: string, view: Shot["view"], actor: string): Promise<Shot> {
  const path = join(DOCS, file);
  await page.screenshot(path);
  const visible = await page.evaluate<Visible>(VISIBLE);
  const sha256 = createHash("sha256").update(readFileSync(path)).digest("hex");
  return { file, sha256, view, actor, ...shownOf(visible) };
}

async function main() {
  const started = await startInspector({ replayLimitBytes: 16 * 1024 * 1024 });
  if (!started.ok) throw new Error(started.error);
  const inspector = started.value;
  const browser = await launchChromium({ width: 1600, height: 1100 });
  try {
    const page = browser.page;
    const { actor: run } = await openLogAt(page, inspector.url, join(ROOT, FIXTURE), /^run:/, STATE);
    await show(page, run, "chart");
    const stateId = `run.${STATE}`;
    await page.evaluate(
      `document.querySelector('#chart g.state[data-state-id="${stateId}"]').dispatchEvent(new MouseEvent("click", { bubbles: true }))`,
    );
    await page.waitFor(`document.querySelector(".chart-info h3")?.textContent === "${stateId}"`);
    await page.waitFor(`document.querySelector('#chart g.state.lit[data-state-id="${stateId}"]')`);
    const chart = await capture(page, "inspector-statechart.png", "chart", run);
    await show(page, run, "sequence");
    await page.waitFor(`document.querySelector("#sequence g.msg.current")`);
    const sequence = await capture(page, "inspector-sequence.png", "sequence", run);
    const errors = browser.console.filter((l) => l.startsWith("exception"));
    if (errors.length) throw new Error(`the page threw: ${errors.join("\n")}`);
    const manifest: Manifest = { fixture: FIXTURE, state: stateId, shots: [chart, sequence] };
    writeFileSync(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
    console.log(`wrote ${chart.file}, ${sequence.file} and ${MANIFEST}`);
  } finally {
    await browser.close();
    await inspector.close();
  }
}

if (import.meta.main) await main();
