import { initTheme } from "@earendil-works/pi-coding-agent";
import { visibleWidth, stripTerminalSequences } from "@earendil-works/pi-tui";
import { renderCodeCall, renderCodeResult } from "/work/main/extension/render.ts";
initTheme("dark", false);
const theme = { fg: (_c: string, t: string) => t, bold: (t: string) => t };
const ctx = { state: {}, executionStarted: true, expanded: false, invalidate() {}, keyHint: (_k: never, d: string) => `ctrl+o ${d}`, lastComponent: undefined };
const code = Array.from({ length: 30 }, (_, i) => `x${i} = ${i} * 2  # a comment that is rather long to force wrapping at small widths`).join("\n");
for (const w of [40, 80]) {
  const lines = renderCodeCall({ code, session: "geo" }, theme as any, ctx as any).render(w);
  console.log(lines.map((l) => JSON.stringify(stripTerminalSequences(l)) + " " + visibleWidth(l)).join("\n"));
}
const r = renderCodeResult({ content: [{ type: "text", text: "hello\nworld\n[session \"geo\" started (Python 3.11.2)]" }], details: { status: "success", session: { name: "geo", ordinal: 1, isLost: false, state: "started" }, python: { version: "3.11.2" } } }, { expanded: false, isPartial: false }, theme as any, { ...ctx, durationMs: 1234 } as any);
console.log(r.render(60).map((l) => stripTerminalSequences(l)).join("\n"));
