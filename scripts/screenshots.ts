// Regenerates the README's inspector screenshots (docs/inspector-*.png) in a real headless Chromium, from a
// recorded fixture log (test/fixtures/replay/swallowed-interrupt-lost.jsonl) stepped to the moment its run is in
// `grace`: the statechart view of that run and its sequence view.
// The state panel's "tests that cover it" lists what test-artifacts/state-tests/ holds: run `bash scripts/test.sh`
// first for the whole suite's list.
//   source scripts/env.sh && node scripts/screenshots.ts
import { join, resolve } from "node:path";
import { startInspector } from "../inspector/server.ts";
import { launchChromium } from "../test/helpers/chromium.ts";
import { openLogAt, show } from "../test/helpers/inspector-page.ts";

const DOCS = resolve(import.meta.dirname, "../docs");
const LOG = resolve(import.meta.dirname, "../test/fixtures/replay/swallowed-interrupt-lost.jsonl");

async function main() {
  const started = await startInspector({ replayLimitBytes: 16 * 1024 * 1024 });
  if (!started.ok) throw new Error(started.error);
  const inspector = started.value;
  const browser = await launchChromium({ width: 1600, height: 1100 });
  try {
    const page = browser.page;
    const { actor: run } = await openLogAt(page, inspector.url, LOG, /^run:/, "grace");
    await show(page, run, "chart");
    await page.evaluate(
      `document.querySelector('#chart g.state[data-state-id="run.grace"]').dispatchEvent(new MouseEvent("click", { bubbles: true }))`,
    );
    await page.waitFor(`document.querySelector(".chart-info h3")?.textContent === "run.grace"`);
    await page.screenshot(join(DOCS, "inspector-statechart.png"));
    await show(page, run, "sequence");
    await page.waitFor(`document.querySelector("#sequence g.msg.current")`);
    await page.screenshot(join(DOCS, "inspector-sequence.png"));
    const errors = browser.console.filter((l) => l.startsWith("exception"));
    if (errors.length) throw new Error(`the page threw: ${errors.join("\n")}`);
    console.log(`wrote ${join(DOCS, "inspector-statechart.png")} and ${join(DOCS, "inspector-sequence.png")}`);
  } finally {
    await browser.close();
    await inspector.close();
  }
}

if (import.meta.main) await main();
