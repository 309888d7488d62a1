// The tool renderers, rendered to text at several widths: the script (highlighted, numbered and collapsed when
// long), live progress (elapsed counter, newest output, dependency installation), and final labels taken from the
// details, never from the text.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { initTheme } from "@earendil-works/pi-coding-agent";
import { stripTerminalSequences, visibleWidth } from "@earendil-works/pi-tui";
import { CODE_PREVIEW_LINES, renderCodeCall, renderCodeResult } from "../../../extension/code-execution/render.ts";
import type { RenderContext, ToolResultLike } from "../../../extension/shared/render-kit.ts";
import { outputToolRenderers, setInterpreterRenderers, sourceToolRenderers } from "../../../extension/shared/render-pages.ts";

const WIDTHS = [24, 40, 80, 132];
const theme = { fg: (_color: string, text: string) => text, bold: (text: string) => text } as never;

function context(extra: Partial<RenderContext> = {}): RenderContext {
  return {
    state: {},
    executionStarted: true,
    expanded: false,
    invalidate: () => {},
    keyHint: (_key, description) => `ctrl+o ${description}`,
    lastComponent: undefined,
    ...extra,
  };
}

/** Renders at `width`, checks no line is wider, and returns the plain text. */
function text(component: { render(width: number): readonly string[] }, width: number): string {
  const lines = component.render(width);
  for (const line of lines) assert.ok(visibleWidth(line) <= width, `line wider than ${width}: ${JSON.stringify(line)}`);
  return lines.map((l) => stripTerminalSequences(l).trimEnd()).join("\n");
}

const result = (details: unknown, body = "", isError = false): ToolResultLike => ({
  content: [{ type: "text", text: body }],
  details,
  isError,
});

before(() => initTheme("dark", false));

describe("the call: the script", () => {
  const long = Array.from(
    { length: 40 },
    (_, i) => `value_${i} = compute(${i}, label="a label long enough to wrap")`,
  ).join("\n");

  test("a short script shows whole, highlighted, without numbers", () => {
    const c = renderCodeCall({ code: "import math\nmath.pi", session: "geo" }, theme, context());
    const raw = c.render(80).join("\n");
    assert.match(raw, /\x1b\[/, "syntax highlighting adds colour");
    for (const w of WIDTHS) {
      const t = text(c, w);
      assert.match(t, /^python · session/);
      assert.match(t, /import math/);
      assert.doesNotMatch(t, /│/);
      assert.doesNotMatch(t, /showing/);
    }
  });

  test("a long script is numbered and collapsed, at every width; expanded shows every line", () => {
    for (const w of WIDTHS) {
      const t = text(renderCodeCall({ code: long }, theme, context()), w);
      const shown = CODE_PREVIEW_LINES - 2;
      const flat = t.replace(/\n\s*/g, " ");
      assert.match(flat, new RegExp(`showing ${shown} of 40 lines`));
      assert.match(flat, /ctrl\+o to expand/);
      assert.match(t, / 1 │ value_0/);
      assert.doesNotMatch(t, /value_39/);
      const full = text(renderCodeCall({ code: long }, theme, context({ expanded: true })), w);
      assert.match(full, /40 │ value_39/);
      assert.doesNotMatch(full, /showing/);
    }
  });

  test("wrapped script lines stay right of the line numbers", () => {
    const t = text(renderCodeCall({ code: long }, theme, context()), 40);
    const lines = t.split("\n");
    const first = lines.findIndex((l) => l.startsWith(" 1 │"));
    assert.ok(lines[first + 1].startsWith("     "), `continuation is indented: ${JSON.stringify(lines[first + 1])}`);
  });

  test("a rerun by sourceId and a fresh process say so", () => {
    const t = text(renderCodeCall({ sourceId: "0123456789ab" }, theme, context()), 80);
    assert.match(t, /fresh process/);
    assert.match(t, /rerun of saved script 0123456789ab/);
  });
});

describe("the result while running", () => {
  test("an elapsed counter and the newest output lines, collapsed from the tail", () => {
    const ctx = context();
    ctx.state.startedAt = Date.now() - 3400;
    const out = Array.from({ length: 30 }, (_, i) => `line ${i}`).join("\n");
    const c = renderCodeResult(result({ status: "running" }, out), { expanded: false, isPartial: true }, theme, ctx);
    for (const w of WIDTHS) {
      const t = text(c, w);
      assert.match(t, /running · 3\.\ds/);
      assert.match(t, /line 29/);
      assert.doesNotMatch(t, /line 0\n/);
      assert.match(t, /22 earlier lines/);
    }
    assert.ok(ctx.state.interval, "a timer redraws the counter");
    const done = renderCodeResult(
      result({ status: "success" }, "ok"),
      { expanded: false, isPartial: false },
      theme,
      ctx,
    );
    assert.equal(ctx.state.interval, undefined, "the timer stops at the final result");
    assert.match(text(done, 80), /✓ success/);
  });

  test("dependency installation is progress: the package, the installer, the elapsed time", () => {
    const ctx = context();
    ctx.state.startedAt = Date.now() - 1200;
    const live = { status: "installing", installer: "pip", package: "tinypkg==1.0", line: "Collecting tinypkg==1.0" };
    const c = renderCodeResult(result(live, "installing"), { expanded: false, isPartial: true }, theme, ctx);
    for (const w of WIDTHS.slice(1)) {
      const t = text(c, w).replace(/\n\s*/g, " ");
      assert.match(t, /installing dependencies tinypkg==1\.0 \(pip\) · 1\.\ds/);
      assert.match(t, /Collecting tinypkg==1\.0/);
    }
    clearInterval(ctx.state.interval);
  });
});

describe("the final result", () => {
  const cases: [unknown, RegExp][] = [
    [{ status: "success" }, /✓ success/],
    [{ status: "runtime_error", exitCode: 3 }, /✗ error \(exit 3\)/],
    [{ status: "runtime_error", signal: "SIGSEGV" }, /✗ error \(SIGSEGV\)/],
    [{ status: "setup_error", stage: "install" }, /✗ error \(dependencies\)/],
    [{ status: "timeout", killed: false }, /⏱ timed out/],
    [{ status: "timeout", killed: true }, /✗ killed \(timed out\)/],
    [{ status: "cancelled", killed: false }, /⊘ cancelled/],
    [{ status: "cancelled", killed: true }, /✗ killed \(cancelled\)/],
  ];
  test("the label comes from the details' status, whatever the text says", () => {
    for (const [details, label] of cases) {
      // The text claims success; only the details count.
      const c = renderCodeResult(
        result(details, "success\nall good"),
        { expanded: false, isPartial: false },
        theme,
        context({ durationMs: 2500 }),
      );
      for (const w of WIDTHS) {
        const t = text(c, w);
        assert.match(t.replace(/\n/g, " "), label, `${JSON.stringify(details)} at ${w}`);
      }
      assert.match(text(c, 132), /2\.5s/);
    }
  });

  test("the session with its state: started, kept, lost", () => {
    for (const [state, word] of [
      ["started", "started"],
      ["kept", "kept its state"],
      ["lost", "lost its state"],
    ]) {
      const details = { status: "timeout", session: { name: "geo", ordinal: 1, incarnation: 1, isLost: state === "lost", state } };
      const t = text(
        renderCodeResult(result(details, ""), { expanded: false, isPartial: false }, theme, context()),
        132,
      );
      assert.match(t, new RegExp(`session geo ${word}`));
    }
  });

  test("output is collapsed from the tail; expanded shows all; dependencies and reloads are listed", () => {
    const body = Array.from({ length: 50 }, (_, i) => `row ${i}`).join("\n");
    const details = {
      status: "success",
      python: { version: "3.11.2" },
      install: { installer: "pip", requirements: ["tinypkg==1.0"], cached: false },
      reloaded: ["helper"],
    };
    const collapsed = text(
      renderCodeResult(result(details, body), { expanded: false, isPartial: false }, theme, context()),
      80,
    );
    assert.match(collapsed, /Python 3\.11\.2/);
    assert.match(collapsed, /dependencies installed with pip: tinypkg==1\.0/);
    assert.match(collapsed, /reloaded: helper/);
    assert.match(collapsed, /row 49/);
    assert.match(collapsed, /42 earlier lines \(ctrl\+o to expand\)/);
    const expanded = text(
      renderCodeResult(result(details, body), { expanded: true, isPartial: false }, theme, context()),
      80,
    );
    assert.match(expanded, /row 0\n/);
    assert.doesNotMatch(expanded, /earlier lines/);
  });
});

describe("the other tools", () => {
  test("code_execution_output and code_execution_source: the call names the id, the result is collapsed", () => {
    const body = `[source 0123456789ab, 30 lines: bytes 0-99 of 100; end of source]\n${Array.from({ length: 30 }, (_, i) => `x = ${i}`).join("\n")}`;
    for (const w of WIDTHS) {
      assert.match(
        text(outputToolRenderers.renderCall({ outputId: "0123456789ab", offset: 0 }, theme, context()), w),
        /python output/,
      );
      assert.match(
        text(sourceToolRenderers.renderCall({ sourceId: "0123456789ab" }, theme, context()), w),
        /python source/,
      );
      const t = text(sourceToolRenderers.renderResult(result({}, body), { expanded: false }, theme, context()), w);
      assert.match(t, /\[source 0123456789ab/);
      assert.match(t, /showing 8 of 30 lines/);
    }
  });

  test("python_set_interpreter shows the path and the outcome", () => {
    const t = text(setInterpreterRenderers.renderCall({ interpreter: "/opt/py/bin/python" }, theme, context()), 80);
    assert.match(t, /python interpreter \/opt\/py\/bin\/python/);
    const r = text(
      setInterpreterRenderers.renderResult(
        result({}, 'code_execution now uses Python 3.12.1\nStopped session "a"'),
        { expanded: false },
        theme,
        context(),
      ),
      40,
    );
    assert.match(r, /Stopped session "a"/);
  });
});
