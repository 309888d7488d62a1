// How the notebook tools look in Pi's terminal: the call shows each cell's code (highlighted by language), the
// result each cell's status and output; markdown output renders with Pi's Markdown component, JSON outputs as a
// tree (collapsed to the first level until expanded), in place of its text in the output, so each displayed value
// is drawn once (the model's copy keeps the text). Pi itself draws the result's images inline where the terminal
// supports them.
import type { Theme } from "@earendil-works/pi-coding-agent";
import { getMarkdownTheme, highlightCode } from "@earendil-works/pi-coding-agent";
import { Markdown, Text, type Component } from "@earendil-works/pi-tui";
import type { RenderContext, RenderTheme, ResultOptions, ToolResultLike } from "../render-kit.ts";
import { freshContainer, outputLine, tailLines, tailStyled } from "../render-kit.ts";
import { jsonDisplayText } from "../display/collector.ts";
import type { BackendMark } from "../backend-mark.ts";
import { statusLine } from "./status-lines.ts";

const CODE_LINES = 10;
/** Output lines of a cell shown collapsed: pi-python's 8; eval's 10 (oh-my-pi's preview). */
const OUTPUT_LINES = 8;
export const EVAL_OUTPUT_LINES = 10;
/** JSON tree lines shown when expanded (a huge value stays bounded). */
const TREE_LINES = 400;

function highlight(code: string, language: string): string[] {
  try {
    return highlightCode(code.replace(/\t/g, "    "), language === "js" ? "javascript" : "python");
  } catch {
    return code.split("\n");
  }
}

interface CellArg {
  code?: unknown;
  title?: unknown;
  language?: unknown;
}

function renderCells(
  tool: string,
  args: { cells?: unknown; timeout?: unknown; reset?: unknown; cwd?: unknown },
  theme: RenderTheme,
  ctx: RenderContext,
): Component {
  const cells = Array.isArray(args?.cells) ? (args.cells as CellArg[]) : [];
  const head = [theme.fg("toolTitle", theme.bold(tool))];
  if (args?.reset === true) head.push(theme.fg("warning", "reset"));
  if (cells.length > 1) head.push(theme.fg("muted", `${cells.length} cells`));
  if (typeof args?.timeout === "number") head.push(theme.fg("dim", `timeout ${args.timeout}s`));
  if (typeof args?.cwd === "string") head.push(theme.fg("dim", `cwd ${args.cwd}`));
  const lines = [head.join(" ")];
  cells.forEach((cell, i) => {
    const language = typeof cell?.language === "string" ? cell.language : "py";
    const title = typeof cell?.title === "string" ? ` ${cell.title}` : "";
    if (cells.length > 1 || title || tool === "eval")
      lines.push(
        theme.fg(
          "muted",
          `── ${tool === "eval" ? `[${i + 1}/${cells.length}] ${language}` : `cell ${i + 1}/${cells.length}`}${title} ──`,
        ),
      );
    const code = typeof cell?.code === "string" ? cell.code.replace(/\s+$/, "") : "";
    if (!code) return void lines.push(theme.fg("dim", "(empty)"));
    const all = highlight(code, language);
    const shown = ctx.expanded || all.length <= CODE_LINES ? all.length : CODE_LINES - 1;
    lines.push(...all.slice(0, shown));
    if (shown < all.length) lines.push(theme.fg("muted", `… ${all.length - shown} more lines`));
  });
  const out = ctx.lastComponent instanceof Text ? ctx.lastComponent : new Text("", 0, 0);
  out.setText(lines.join("\n"));
  return out;
}

/** A JSON value as indented tree lines; below `open` levels, containers show as `{…} n keys` / `[…] n items`. */
export function jsonTree(value: unknown, open: number, theme: RenderTheme, max = TREE_LINES): string[] {
  const lines: string[] = [];
  const walk = (v: unknown, key: string, depth: number) => {
    if (lines.length >= max) return;
    const pad = "  ".repeat(depth);
    const label = key ? theme.fg("accent", key) + ": " : "";
    if (v !== null && typeof v === "object") {
      const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x] as const) : Object.entries(v as object);
      const brackets = Array.isArray(v) ? ["[", "]"] : ["{", "}"];
      const count = `${entries.length} ${Array.isArray(v) ? "item" : "key"}${entries.length === 1 ? "" : "s"}`;
      if (depth >= open || entries.length === 0) {
        lines.push(
          `${pad}${label}${theme.fg("muted", `${brackets[0]}${entries.length ? "…" : ""}${brackets[1]} ${count}`)}`,
        );
        return;
      }
      lines.push(`${pad}${label}${theme.fg("muted", `${brackets[0]} ${count}`)}`);
      for (const [k, x] of entries) walk(x, Array.isArray(v) ? "" : k, depth + 1);
      lines.push(`${pad}${theme.fg("muted", brackets[1])}`);
      return;
    }
    const text = typeof v === "string" ? JSON.stringify(v) : String(v);
    lines.push(`${pad}${label}${theme.fg(typeof v === "string" ? "success" : "warning", text)}`);
  };
  walk(value, "", 0);
  if (lines.length >= max) lines.push(theme.fg("muted", "… (tree cut)"));
  return lines;
}

function textOf(result: ToolResultLike): string {
  return (result?.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text ?? "")
    .join("\n");
}

interface CellView {
  status?: string;
  title?: string;
  output?: string;
  stdout?: string;
  stderr?: string;
  value?: string;
  exception?: string;
  markdown?: boolean;
  durationMs?: number;
  json?: unknown[];
  /** eval's status events (log(), phase(), agent(), tool calls). */
  statusEvents?: unknown[];
}

const STATUS: Record<string, [string, string]> = {
  ok: ["success", "✓"],
  complete: ["success", "✓"],
  error: ["error", "✗"],
  cancelled: ["warning", "⊘"],
  not_run: ["dim", "·"],
  pending: ["dim", "·"],
  running: ["accent", "●"],
};

function cellBody(c: CellView): string {
  if (c.output !== undefined) return c.output;
  return [c.stdout, c.stderr, c.value ? `=> ${c.value}` : "", c.exception].filter(Boolean).join("\n");
}

/** A cell's output cut at the JSON values it displayed: each value's text (extension/shared/display/collector.ts writes
 * it) becomes the value itself. `queue` holds the result's values in display order; those found are taken off. */
function splitAtJson(body: string, queue: unknown[]): ({ text: string } | { json: unknown })[] {
  const parts: ({ text: string } | { json: unknown })[] = [];
  let rest = body;
  while (queue.length) {
    const text = jsonDisplayText(queue[0]);
    const at = rest.indexOf(text);
    if (at < 0) break;
    if (at > 0) parts.push({ text: rest.slice(0, at) });
    parts.push({ json: queue.shift() });
    rest = rest.slice(at + text.length);
  }
  if (rest) parts.push({ text: rest });
  // The newlines that framed a value's text go with it.
  return parts
    .map((p, i) => {
      if (!("text" in p)) return p;
      let text = p.text;
      if (i > 0 && "json" in parts[i - 1]) text = text.replace(/^\n/, "");
      if (i < parts.length - 1 && "json" in parts[i + 1]) text = text.replace(/\n$/, "");
      return { text };
    })
    .filter((p) => !("text" in p) || p.text !== "");
}

function renderNotebookResult(
  result: ToolResultLike,
  options: ResultOptions,
  theme: RenderTheme,
  ctx: RenderContext,
  outputLines = OUTPUT_LINES,
): Component {
  const container = freshContainer(ctx);
  const d = result.details as
    | {
        cells?: CellView[];
        jsonOutputs?: unknown[];
        timedOut?: boolean;
        killed?: boolean;
        backend?: BackendMark;
        meta?: { truncation?: { outputLines?: number; totalLines?: number; artifactId?: string } };
      }
    | undefined;
  const cells = Array.isArray(d?.cells) ? d!.cells : undefined;
  if (!cells) {
    container.addChild(
      new Text(tailLines(textOf(result), options.expanded ? 10_000 : outputLines, theme, undefined).join("\n"), 0, 0),
    );
    return container;
  }
  const tags: string[] = [];
  if (d?.backend) tags.push(theme.fg("warning", `runs on ${d.backend.label}`));
  if (d?.timedOut) tags.push(theme.fg("warning", "timed out"));
  if (d?.killed) tags.push(theme.fg("error", "kernel killed: namespace lost"));
  if (tags.length) container.addChild(new Text(tags.join(theme.fg("muted", " · ")), 0, 0));
  const open = options.expanded ? 64 : 1;
  const tree = (value: unknown) => jsonTree(value, open, theme);
  // Each displayed JSON value is drawn once: as a tree where its text was, or after the cells when the text is
  // not in the output shown (cut by the output limit).
  const queue = [...(d?.jsonOutputs ?? cells.flatMap((c) => c.json ?? []))];
  cells.forEach((c, i) => {
    const [color, mark] = STATUS[c.status ?? ""] ?? ["muted", "?"];
    let head = theme.fg(color as never, `${mark} [${i + 1}/${cells.length}]`);
    if (c.title) head += ` ${c.title}`;
    if (typeof c.durationMs === "number" && c.status !== "not_run" && c.status !== "pending")
      head += theme.fg("muted", ` · ${(c.durationMs / 1000).toFixed(2)}s`);
    container.addChild(new Text(head, 0, 0));
    const events = (Array.isArray(c.statusEvents) ? c.statusEvents : []).filter(
      (e): e is Record<string, unknown> => typeof e === "object" && e !== null,
    );
    if (events.length) {
      const lines = events.map((e) => theme.fg("dim", `· ${statusLine(e)}`));
      container.addChild(
        new Text(tailStyled(lines, options.expanded ? 10_000 : OUTPUT_LINES, theme, ctx).join("\n"), 1, 0),
      );
    }
    const body = cellBody(c).replace(/\n+$/, "");
    if (!body) return;
    const parts = splitAtJson(body, queue);
    if (c.markdown && !options.isPartial) {
      for (const p of parts) {
        container.addChild(
          "json" in p ? new Text(tree(p.json).join("\n"), 1, 0) : new Markdown(p.text, 1, 0, getMarkdownTheme()),
        );
      }
      return;
    }
    const lines = parts.flatMap((p) =>
      "json" in p ? tree(p.json) : p.text.split("\n").map((l) => outputLine(l, theme)),
    );
    container.addChild(
      new Text(tailStyled(lines, options.expanded ? 10_000 : outputLines, theme, ctx).join("\n"), 1, 0),
    );
  });
  for (const value of queue) container.addChild(new Text(tree(value).join("\n"), 1, 0));
  const cut = d?.meta?.truncation;
  if (cut)
    container.addChild(
      new Text(
        theme.fg(
          "dim",
          `model's copy truncated: last ${cut.outputLines} of ${cut.totalLines} lines` +
            (cut.artifactId ? ` · whole output artifact://${cut.artifactId}` : ""),
        ),
        0,
        0,
      ),
    );
  return container;
}

type RenderCall = (
  args: { cells?: unknown; timeout?: unknown; reset?: unknown; cwd?: unknown },
  theme: Theme,
  ctx: unknown,
) => Component;
type RenderResult = (
  result: ToolResultLike,
  options: { expanded: boolean; isPartial: boolean },
  theme: Theme,
  ctx: unknown,
) => Component;

function renderers(tool: string, outputLines: number): { renderCall: RenderCall; renderResult: RenderResult } {
  return {
    renderCall: (args, theme, ctx) => renderCells(tool, args, theme, ctx as RenderContext),
    renderResult: (result, options, theme, ctx) =>
      renderNotebookResult(result, options, theme, ctx as RenderContext, outputLines),
  };
}

export const pythonRenderers = renderers("python", OUTPUT_LINES);
export const evalRenderers = renderers("eval", EVAL_OUTPUT_LINES);
