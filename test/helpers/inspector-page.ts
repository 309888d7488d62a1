// Driving the inspector page in Chromium (test/helpers/chromium.ts): opening a recorded log and stepping to a state.
import type { Page } from "./chromium.ts";

/** Opens `log` from disk in the page at `url` and steps to the record where an actor whose name matches `actor`
 * enters `state`; returns that position (a step number) and the actor's name. */
export async function openLogAt(
  page: Page,
  url: string,
  log: string,
  actor: RegExp,
  state: string,
): Promise<{ position: number; actor: string }> {
  await page.navigate(url);
  await page.waitFor(`document.body.dataset.ready === "true"`);
  await page.evaluate(`document.getElementById("open").click(); true`);
  await page.setFiles("#file", [log]);
  await page.waitFor(`window.inspector.mode() === "log"`);
  const steps = await page.evaluate<string[]>("window.inspector.steps()");
  const i = steps.findIndex((s) => actor.test(s.split(" → ")[0]) && s.includes(` → ${state} `));
  if (i < 0) throw new Error(`no step where ${actor} enters ${state}`);
  await page.evaluate(`window.inspector.goTo(${i + 1})`);
  return { position: i + 1, actor: steps[i].split(" → ")[0] };
}

/** Selects `actor` in the page, shows `tab`, and waits until that view has drawn it. */
export async function show(page: Page, actor: string, tab: "chart" | "sequence" | "info"): Promise<void> {
  await page.evaluate(
    `window.inspector.select(${JSON.stringify(actor)}); window.inspector.showTab(${JSON.stringify(tab)})`,
  );
  if (tab === "chart") {
    await page.waitFor(
      `document.querySelector("#chart .chart-title")?.textContent.startsWith(${JSON.stringify(`${actor} ·`)}) && document.querySelector("#chart svg.chart")`,
    );
  }
}
