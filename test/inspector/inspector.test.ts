// The live inspector in a real headless Chromium (Debian's `chromium`): while a real session goes running ->
// interrupted -> idle and is then killed (interrupted -> grace -> killed -> lost), the page's DOM shows every state
// within 100 ms of the transition (less the time Node or the page could not run at all, measured in the same run);
// the stop-session action works from the page; a recorded log opens in the page, steps, and verifies. Screenshots
// go to test-artifacts/ (not committed).
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import type { InspectionEvent } from "xstate";
import { SupervisorHost } from "../../host/host.ts";
import { SystemObserver } from "../../record/observe.ts";
import { actorName, ref, stateLabel } from "../../record/trace.ts";
import { sessionPhase } from "../../machines/session.ts";
import { startInspector, type Inspector } from "../../inspector/server.ts";
import { FIXTURE_DIR } from "../../scripts/record-fixtures.ts";
import { SPARE_POOL_ID } from "../../machines/actor-ids.ts";
import { chromiumAvailable, CHROMIUM, launchChromium, type Browser } from "../helpers/chromium.ts";
import { waitUntil } from "../helpers/procs.ts";
import { PAGE_TICKS, stalledWithin, stallsOf, tickLoop } from "../helpers/stalls.ts";

const ARTIFACTS = resolve(import.meta.dirname, "../../test-artifacts");
/** The issue's bound: a transition is on the page within 100 ms, less any time Node or the page could not run at
 * all (a loaded machine deschedules both; test/helpers/stalls.ts measures that in the same run). */
const BOUND_MS = 100;
const TICK_MS = 5;

let host: SupervisorHost;
let inspector: Inspector;
let browser: Browser;
const transitions: { actor: string; state: string; at: number }[] = [];

before(async () => {
  assert.ok(
    chromiumAvailable(),
    `${CHROMIUM} is missing: apt-get install -y chromium (scripts/setup.sh does, as root)`,
  );
  mkdirSync(ARTIFACTS, { recursive: true });
  const observer = new SystemObserver();
  // Each actor's state as people name it: a session's phase reads its active run (machines/session.ts).
  const runs = new Map<string, unknown>();
  const sessions = new Map<string, { value: unknown; activeRunId?: string }>();
  const push = (actor: string, state: string) => {
    const last = transitions.findLast((t) => t.actor === actor);
    if (last?.state !== state) transitions.push({ actor, state, at: Date.now() });
  };
  const pushSession = (actor: string) => {
    const s = sessions.get(actor)!;
    push(actor, sessionPhase(s.value, s.activeRunId ? runs.get(`run:${s.activeRunId}`) : undefined));
  };
  observer.on({
    inspection: (ev: InspectionEvent) => {
      if (ev.type !== "@xstate.snapshot") return;
      const snapshot = ev.snapshot as { value?: unknown; status: string; context?: { activeRunId?: string } };
      const actor = actorName(ref(ev.actorRef));
      if (actor.startsWith("session:") && snapshot.value !== undefined) {
        sessions.set(actor, { value: snapshot.value, activeRunId: snapshot.context?.activeRunId });
        return pushSession(actor);
      }
      if (actor.startsWith("run:") && snapshot.status === "active") {
        runs.set(actor, snapshot.value);
        const parent = actorName(ref(ev.actorRef)._parent!);
        if (sessions.has(parent)) pushSession(parent);
      }
      push(actor, snapshot.value !== undefined ? stateLabel(snapshot.value) : snapshot.status);
    },
  });
  host = new SupervisorHost({ ...observer.hostOptions(), limits: { graceMs: 400 } });
  const started = await startInspector({ observer, stopSession: (name) => host.stopSession(name) });
  assert.ok(started.ok);
  inspector = started.value;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await host?.shutdown();
  await inspector?.close();
});

/** Every DOM change of a tree node's state, with the page's wall-clock time (the same clock as Node's). */
const RECORD_DOM = `
  window.__seen = [];
  new MutationObserver((records) => {
    const at = Date.now();
    for (const r of records) {
      const el = r.target;
      if (el.tagName === "LI" && el.dataset.actor) window.__seen.push({ actor: el.dataset.actor, state: el.dataset.state, at });
    }
  }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ["data-state"] });
  true`;

const domState = (actor: string) =>
  browser.page.evaluate<string | null>(`document.querySelector('li[data-actor="${actor}"]')?.dataset.state ?? null`);

describe("live page in Chromium", () => {
  test("every state of a session reaches the DOM within 100 ms, through an interrupt and a kill", async () => {
    const page = browser.page;
    await page.navigate(inspector.url);
    await page.waitFor(
      `document.body.dataset.ready === "true" && document.getElementById("status").dataset.kind === "live"`,
    );
    await page.evaluate(RECORD_DOM);
    await page.evaluate(PAGE_TICKS(TICK_MS));
    const nodeTicks = tickLoop(TICK_MS);
    const cwd = tmpdir();
    const run = (code: string, signal?: AbortSignal) =>
      host.run({ code, cwd, timeoutMs: 20_000, session: "live" }, signal ? { signal } : {});
    const cancelWhenRunning = async (code: string) => {
      const abort = new AbortController();
      const pending = run(code, abort.signal);
      await page.waitFor(`document.querySelector('li[data-actor="session:live"]')?.dataset.state === "running"`);
      await new Promise((r) => setTimeout(r, 150));
      abort.abort();
      return pending;
    };

    assert.equal((await run("kept = 7")).outcome.status, "success");
    const interrupted = await cancelWhenRunning("import time\nprint('working', flush=True)\ntime.sleep(60)");
    assert.equal(interrupted.outcome.status, "cancelled");
    assert.equal(interrupted.outcome.session?.isLost, false);
    await page.waitFor(`document.querySelector('li[data-actor="session:live"]')?.dataset.state === "idle"`);
    const killed = await cancelWhenRunning(
      "import time\nwhile True:\n    try:\n        time.sleep(60)\n    except KeyboardInterrupt:\n        print('no', flush=True)",
    );
    assert.equal(killed.outcome.killed, true);
    assert.equal(killed.outcome.session?.isLost, true);
    await page.waitFor(`document.querySelector('li[data-actor="session:live"]')?.dataset.state === "lost"`);

    const expected = transitions.filter((t) => t.actor === "session:live").map((t) => t.state);
    for (const s of ["running", "interrupted", "idle", "grace", "killed", "lost"]) assert.ok(expected.includes(s), s);
    const seen = await page.evaluate<{ actor: string; state: string; at: number }[]>("window.__seen");
    nodeTicks.stop();
    const stalls = [
      ...stallsOf(nodeTicks.ticks, TICK_MS),
      ...stallsOf(await page.evaluate<number[]>("window.__ticks"), TICK_MS),
    ];
    const latencies: string[] = [];
    let from = 0;
    for (const t of transitions.filter((t) => t.actor === "session:live")) {
      const i = seen.findIndex((s, k) => k >= from && s.actor === t.actor && s.state === t.state);
      assert.ok(i >= 0, `the page showed ${t.state} (seen: ${seen.map((s) => s.state).join(" ")})`);
      from = i + 1;
      const latency = seen[i].at - t.at;
      const stalled = stalledWithin(stalls, t.at, seen[i].at);
      latencies.push(`${t.state} ${latency} ms${stalled > 0 ? ` (${stalled} ms stalled)` : ""}`);
      assert.ok(
        latency - stalled <= BOUND_MS,
        `${t.state} reached the DOM after ${latency} ms, ${stalled} ms of it with Node or the page not running`,
      );
    }
    console.log(`# DOM latency per transition: ${latencies.join(", ")}`);
    assert.equal(await domState("supervisor"), "serving.idle");
    await page.evaluate(`document.querySelector('li[data-actor="session:live"] .row').click()`);
    await page.waitFor(`document.querySelector("#details h2")?.textContent === "session:live"`);
    await page.screenshot(join(ARTIFACTS, "inspector-live.png"));
    assert.deepEqual(
      browser.console.filter((l) => l.startsWith("exception")),
      [],
    );
  });

  test("the stop-session action (offered behind the token) stops a session from the page", async () => {
    const page = browser.page;
    await host.run({ code: "a = 1", cwd: tmpdir(), timeoutMs: 20_000, session: "stoppable" });
    await page.waitFor(`document.querySelector('li[data-actor="session:stoppable"]')?.dataset.state === "idle"`);
    await page.evaluate(`document.querySelector('li[data-actor="session:stoppable"] .row').click()`);
    await page.waitFor(`document.querySelector('[data-action="stop-session"]')`);
    await page.evaluate(`document.querySelector('[data-action="stop-session"]').click()`);
    await page.waitFor(`document.querySelector('li[data-actor="session:stoppable"]')?.dataset.state === "closed"`);
    assert.equal(
      host.sessions().find((s) => s.name === "stoppable"),
      undefined,
    );
  });
});

describe("a recorded log in the page", () => {
  test("opens from disk, steps through the recorded states, and verifies by replay", async () => {
    const page = browser.page;
    await page.evaluate(`document.getElementById("open").click(); true`);
    await page.setFiles("#file", [join(FIXTURE_DIR, "swallowed-interrupt-lost.jsonl")]);
    await page.waitFor(`window.inspector.mode() === "log"`);
    assert.match(
      await page.evaluate<string>(`document.getElementById("status").textContent`),
      /swallowed-interrupt-lost/,
    );
    assert.equal(await domState("session:stubborn"), "closed", "the end of the log: closed at Pi's shutdown");
    const steps = await page.evaluate<string[]>("window.inspector.steps()");
    // The run's steps (`stopping.<step>`) are the session's phase until it is lost.
    for (const state of ["interrupted", "grace", "killed", "lost"]) {
      const i = steps.findIndex((s) =>
        state === "lost" ? s.startsWith("session:stubborn → lost ") : / → stopping\.(\w+) /.exec(s)?.[1] === state,
      );
      assert.ok(i >= 0, `the log has the step to ${state}`);
      await page.evaluate(`window.inspector.goTo(${i + 1})`);
      assert.equal(await domState("session:stubborn"), state);
    }
    await page.evaluate(`document.getElementById("next").click()`);
    assert.match(await page.evaluate<string>(`document.getElementById("step").textContent`), /^line \d+: /);
    await page.evaluate(`document.getElementById("verify").click()`);
    await page.waitFor(`document.getElementById("verdict").dataset.kind === "ok"`);
    assert.match(await page.evaluate<string>(`document.getElementById("verdict").textContent`), /^identical/);
    await page.screenshot(join(ARTIFACTS, "inspector-log.png"));
    await page.evaluate(`document.getElementById("live").click()`);
    assert.equal(await domState("session:live"), "lost", "back to the live tree");
  });
});

/** A time as the page's header prints it (`created HH:MM:SS.mmm`), back to milliseconds of the day. */
const msOfDay = (text: string) => {
  const [h, m, sec] = text.split(":").map(Number);
  return Math.round(((h * 60 + m) * 60 + sec) * 1000);
};
const dayMs = (at: number) => at % 86_400_000;

describe("actors created before the inspector started, and run labels", () => {
  test("a retired spare sits under its parent (the spare pool), each actor shows its true creation time, runs read as surface and code", async () => {
    // A host whose spare exists (and then retires) before the page connects, and an inspector started after both
    // the root and the spare were created.
    const observer = new SystemObserver();
    const born = new Map<string, number>();
    observer.on({
      inspection: (ev) => {
        if (ev.type === "@xstate.actor") born.set(actorName(ref(ev.actorRef)), Date.now());
      },
    });
    // The spare's idle timer (1500 ms) is held until the inspector has started: on a loaded machine starting it can
    // take longer than the idle time, and a spare retired before the inspector existed is not in its history.
    const SPARE_IDLE_MS = 1500;
    let inspectorStarted = () => {};
    const started = new Promise<void>((r) => (inspectorStarted = r));
    const options = observer.hostOptions();
    const clock = {
      setTimeout: (fn: (...args: unknown[]) => void, ms: number) =>
        options.clock.setTimeout(ms === SPARE_IDLE_MS ? () => void started.then(() => fn()) : fn, ms),
      clearTimeout: (n: number) => options.clock.clearTimeout(n),
    };
    const spareHost = new SupervisorHost({ ...options, clock, spareIdleMs: SPARE_IDLE_MS });
    let late: Inspector | undefined;
    try {
      const cwd = tmpdir();
      assert.equal((await spareHost.run({ code: "1", cwd, timeoutMs: 20_000 })).outcome.status, "success");
      assert.ok(await waitUntil(() => spareHost.spares().some((s) => s.ready), 10_000), "a spare is ready");
      const spare = spareHost.spares()[0].id;
      const inspector = await startInspector({ observer });
      assert.ok(inspector.ok);
      late = inspector.value;
      assert.ok(
        spareHost.spares().some((s) => s.id === spare),
        "the spare is alive when the inspector starts",
      );
      inspectorStarted();
      // The spare retires while the inspector runs, before any page connects: its frames are in the history,
      // its creation is not.
      assert.ok(await waitUntil(() => !spareHost.spares().some((s) => s.id === spare), 10_000), "the spare retired");
      const page = browser.page;
      const connectedAt = Date.now();
      await page.navigate(late.url);
      await page.waitFor(
        `document.body.dataset.ready === "true" && document.getElementById("status").dataset.kind === "live"`,
      );
      await page.waitFor(`document.querySelector('li[data-actor="${spare}"]')`);
      const parentOf = (id: string) =>
        page.evaluate(
          `document.querySelector('li[data-actor="${id}"]').parentElement.closest("li")?.dataset.actor ?? "(root)"`,
        );
      assert.equal(await parentOf(spare), SPARE_POOL_ID, "the retired spare is under the spare pool");
      assert.equal(await parentOf(SPARE_POOL_ID), "supervisor", "the pool is under the supervisor");
      assert.deepEqual(
        await page.evaluate(`[...document.querySelectorAll("#tree > ul.tree > li")].map((li) => li.dataset.actor)`),
        ["supervisor"],
        "the supervisor is the only root",
      );
      // True creation times: the moment each actor was created (what the event log records), not the connect time.
      for (const id of ["supervisor", spare]) {
        await page.evaluate(`window.inspector.select(${JSON.stringify(id)})`);
        await page.waitFor(`document.querySelector("#actor-head h2")?.textContent === ${JSON.stringify(id)}`);
        const head = await page.evaluate<string>(`document.querySelector("#actor-head").textContent`);
        const shown = /created (\d\d:\d\d:\d\d\.\d{3})/.exec(head)?.[1];
        assert.ok(shown, head);
        assert.ok(Math.abs(msOfDay(shown) - dayMs(born.get(id)!)) <= 5, `${id}: created ${shown} (${head})`);
        assert.ok(dayMs(connectedAt) - msOfDay(shown) > 1000, `${id} was created well before the page connected`);
      }
      // Runs read as their surface and the first line of their code (blank lines skipped); the id stays the tooltip.
      const labelled = await spareHost.run({
        code: "\n\ntotal = 6 * 7\nprint(total)",
        cwd,
        timeoutMs: 20_000,
        surface: "code_execution",
      });
      const run = `run:${labelled.outcome.runId}`;
      // A label is `surface: code`; the id it replaces (`run:<id>`) has a colon too, but no space after it.
      await page.waitFor(`document.querySelector('li[data-actor="${run}"] .name')?.textContent.includes(": ")`);
      assert.deepEqual(
        await page.evaluate(
          `(() => { const n = document.querySelector('li[data-actor="${run}"] .name'); return [n.textContent, n.title]; })()`,
        ),
        ["code_execution: total = 6 * 7", run],
      );
      await page.waitFor(`document.querySelector('.lane[data-actor="${run}"] .lane-name')?.textContent.includes(": ")`);
      assert.equal(
        await page.evaluate(`document.querySelector('.lane[data-actor="${run}"] .lane-name').textContent`),
        "code_execution: total = 6 * 7",
      );
      await page.screenshot(join(ARTIFACTS, "inspector-late.png"));
    } finally {
      await spareHost.shutdown();
      await late?.close();
    }
  });
});
