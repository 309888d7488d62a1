// The inspector page with a large log, in a real headless Chromium: first paint and stepping.
//   source scripts/env.sh && node bench/inspector.ts [log.jsonl]
// Without a log, a 64-session log of about one full segment (8 MiB, the recorder's rotation size) is built from the
// replay fixtures (each copy's sessions, runs and nested calls renamed, interleaved in time). A real soak log:
//   SOAK_LOG_DIR=/tmp/soak bash bench/soak.sh 60   (then pass its first segment here)
// Prints: first contentful paint; "log shown" (navigation to the tree, the statechart of the selected actor lit
// and the position at the end of the log); per-step time for the statechart, sequence and details views
// (`goTo` plus the layout it forces), stepping forward, backward, and jumping.
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startInspector } from "../inspector/server.ts";
import { parseLog } from "../record/replay.ts";
import { launchChromium } from "../test/helpers/chromium.ts";
import { stats, fmt } from "./run.ts";

const FIXTURES = resolve(import.meta.dirname, "../test/fixtures/replay");
const SESSIONS = 64;

/** A 64-session log from the fixtures, of at least `bytes`. */
export function fixtureSoakLog(bytes = 8 * 1024 * 1024): string {
  // Records whole (record/log-codec.ts): a v3 record pointing at the input before it would point elsewhere once
  // the copies are interleaved.
  const fixtures = readdirSync(FIXTURES)
    .filter((f) => f.endsWith(".jsonl"))
    .map((f) => parseLog(readFileSync(join(FIXTURES, f), "utf8")).lines.map((l) => l.record as any));
  const head = fixtures[0].slice(0, fixtures[0].findIndex((r) => r.k === "snap" && r.id === "supervisor") + 1);
  const out: { at: number; n: number; text: string }[] = [];
  let size = 0;
  let n = 0;
  for (let copy = 0; size < bytes; copy++) {
    const records = fixtures[copy % fixtures.length];
    const slot = copy % SESSIONS;
    const cycle = Math.floor(copy / SESSIONS);
    // Sessions keep their slot's name across cycles (as a soak reuses them); runs and calls are new each copy.
    const rename = new Map<string, string>();
    for (const r of records) {
      if (r.k !== "actor" || r.id === "supervisor") continue;
      const [kind, rest] = [r.id.split(":")[0], r.id.slice(r.id.indexOf(":") + 1).split("/")[0]];
      if (kind === "session") rename.set(rest, `${rest}-${slot}`);
      if (kind === "run") rename.set(rest, `${rest}-${copy}`);
    }
    const base = records.find((r) => r.k === "actor" && r.id !== "supervisor")?.at ?? records[0].at;
    const shift = head[0].at + 1000 + cycle * 4000 + slot * 37 - base;
    for (const r of records) {
      if (r.k === "header" || r.k === "start" || r.k === "end" || r.k === "stop") continue;
      // The supervisor's own records (its snapshots list only that fixture's sessions as children) are left out.
      if (r.id === "supervisor" || (r.k === "event" && r.to === "supervisor" && !r.from)) continue;
      let text = JSON.stringify({ ...r, at: r.at + shift });
      for (const [from, to] of rename) text = text.replaceAll(`:${from}`, `:${to}`).replaceAll(`"${from}"`, `"${to}"`);
      out.push({ at: r.at + shift, n: n++, text });
      size += text.length + 1;
    }
  }
  out.sort((a, b) => a.at - b.at || a.n - b.n);
  return [...head.map((r) => JSON.stringify(r)), ...out.map((r) => r.text)].join("\n") + "\n";
}

async function main() {
  let log = process.argv[2] ? resolve(process.argv[2]) : undefined;
  if (!log) {
    log = join(mkdtempSync(join(tmpdir(), "pcs-inspector-bench-")), "soak-64-sessions.jsonl");
    writeFileSync(log, fixtureSoakLog());
  }
  const started = await startInspector({ logPath: () => log, replayLimitBytes: 256 * 1024 * 1024 });
  if (!started.ok) throw new Error(started.error);
  const inspector = started.value;
  const browser = await launchChromium({ width: 1600, height: 1000 });
  const page = browser.page;
  try {
    const figures: Record<string, number[]> = { fcp: [], read: [], parsed: [], shown: [], chart: [], cpu: [] };
    let steps = 0;
    let actors = 0;
    // The renderer main thread's CPU time (DevTools' ThreadTime): what the page itself spends, whatever the load.
    await page.send("Performance.enable");
    const threadTime = async () =>
      ((await page.send("Performance.getMetrics")).metrics as { name: string; value: number }[]).find(
        (m) => m.name === "ThreadTime",
      )!.value * 1000;
    for (let i = 0; i < 5; i++) {
      const before = await threadTime();
      await page.navigate(`${inspector.url}?fresh=${i}`);
      await page.waitFor(`performance.getEntriesByName("log-shown").length`, 30_000);
      const after = await threadTime();
      figures.cpu.push(after >= before ? after - before : after);
      // The chart is drawn when its root state is lit (the supervisor's, selected at first).
      await page.waitFor(
        `window.inspector?.mode() === "log" && document.querySelector("#chart svg.chart g.state.lit") && (window.__chartAt ??= performance.now())`,
        30_000,
      );
      const t = await page.evaluate<Record<string, number>>(`({
        fcp: performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? -1,
        read: performance.getEntriesByName("log-read")[0].startTime,
        parsed: performance.getEntriesByName("log-parsed")[0].startTime,
        shown: performance.getEntriesByName("log-shown")[0].startTime,
        chart: window.__chartAt,
        steps: window.inspector.steps().length,
        actors: document.querySelectorAll("#tree li[data-actor]").length,
      })`);
      for (const k of Object.keys(t)) figures[k]?.push(t[k]);
      steps = t.steps;
      actors = t.actors;
    }
    const bytes = statSync(log).size;
    const p50 = (k: string) => `p50 ${fmt(stats(figures[k]).p50)} (max ${fmt(stats(figures[k]).max)})`;
    console.log(
      `log: ${log} (${(bytes / 2 ** 20).toFixed(1)} MiB, ${steps} steps, ${actors} actors in the tree at the end)`,
    );
    console.log(`first contentful paint: ${p50("fcp")}`);
    console.log(`log fetched: ${p50("read")}; parsed: ${p50("parsed")}`);
    console.log(`log shown (tree, timeline and the view at the end of the log): ${p50("shown")}`);
    console.log(`  main-thread CPU time from navigation to log shown: ${p50("cpu")}`);
    console.log(`statechart drawn and lit (ELK layout in its worker): ${p50("chart")}`);

    // Stepping: a run actor selected, each view in turn.
    const middle = Math.floor(steps / 2);
    await page.evaluate(`window.inspector.goTo(${middle})`);
    const run = await page.evaluate<string>(`document.querySelector("li[data-actor^='run:']").dataset.actor`);
    for (const tab of ["chart", "sequence", "info"]) {
      await page.evaluate(
        `window.inspector.select(${JSON.stringify(run)}); window.inspector.showTab("${tab}"); window.inspector.goTo(${middle})`,
      );
      if (tab === "chart")
        await page.waitFor(`document.querySelector('#chart svg.chart[data-machine="run"] g.state.lit')`);
      const cpuBefore = await threadTime();
      const timing = await page.evaluate<{ forward: number[]; backward: number[]; jump: number[] }>(`(() => {
        const time = (p) => {
          const t0 = performance.now();
          window.inspector.goTo(p);
          document.body.getBoundingClientRect(); // the layout the step forces
          return performance.now() - t0;
        };
        const forward = [], backward = [], jump = [];
        for (let i = 1; i <= 200; i++) forward.push(time(${middle} + i));
        for (let i = 1; i <= 200; i++) backward.push(time(${middle} + 200 - i));
        for (let i = 0; i < 20; i++) jump.push(time(Math.floor(((i * 7919) % 100) / 100 * ${steps})));
        return { forward, backward, jump };
      })()`);
      const f = (xs: number[]) => `p50 ${fmt(stats(xs).p50)}, p99 ${fmt(stats(xs).p99)}, max ${fmt(stats(xs).max)}`;
      console.log(
        `step (${tab}): forward ${f(timing.forward)}; backward ${f(timing.backward)}; jump ${f(timing.jump)}`,
      );
      console.log(
        `  main-thread CPU time per step, all 420 together: ${fmt(((await threadTime()) - cpuBefore) / 420)}`,
      );
    }
    const errors = browser.console.filter((l) => l.startsWith("exception"));
    if (errors.length) throw new Error(errors.join("\n"));
  } finally {
    await browser.close();
    await inspector.close();
  }
}

if (import.meta.main) await main();
