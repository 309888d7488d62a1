// How the reading tools (code_execution_output, code_execution_source) and python_set_interpreter look in Pi's
// terminal UI: a titled call, and the page's header line with its body collapsed (a source highlighted as Python).
import type { Theme } from "@earendil-works/pi-coding-agent";
import { Text, type Component } from "@earendil-works/pi-tui";
import {
  expandHint,
  highlightPython,
  OUTPUT_PREVIEW_LINES,
  textOf,
  type RenderContext,
  type RenderTheme,
  type ToolResultLike,
} from "./render-kit.ts";

function titled(title: string, rest: string, theme: RenderTheme): string {
  return theme.fg("toolTitle", theme.bold(title)) + (rest ? ` ${theme.fg("muted", rest)}` : "");
}

function pageArgs(args: { offset?: unknown; limit?: unknown }): string {
  const parts: string[] = [];
  if (typeof args?.offset === "number") parts.push(`from byte ${args.offset}`);
  if (typeof args?.limit === "number") parts.push(`${args.limit} bytes`);
  return parts.join(", ");
}

function pageResult(
  result: ToolResultLike,
  options: { expanded: boolean },
  theme: RenderTheme,
  ctx: RenderContext,
  python: boolean,
): Component {
  const text = textOf(result);
  const nl = text.indexOf("\n");
  const header = nl < 0 ? text : text.slice(0, nl);
  const body = nl < 0 ? "" : text.slice(nl + 1);
  const lines = [result.isError ? theme.fg("error", header) : theme.fg("muted", header)];
  if (body) {
    const all =
      python && !result.isError ? highlightPython(body.replace(/\n$/, "")) : body.replace(/\n$/, "").split("\n");
    const shown = options.expanded || all.length <= OUTPUT_PREVIEW_LINES ? all.length : OUTPUT_PREVIEW_LINES;
    lines.push(...all.slice(0, shown).map((l) => (python ? l : theme.fg("toolOutput", l))));
    if (shown < all.length) lines.push(expandHint(ctx, theme, `… showing ${shown} of ${all.length} lines`));
  }
  const out = ctx.lastComponent instanceof Text ? ctx.lastComponent : new Text("", 0, 0);
  out.setText(lines.join("\n"));
  return out;
}

/** What a reading call names: its ID, or an earlier session's `sourceRef`/`outputRef` by its artifact name. */
function idOf(args: Record<string, unknown>, idKey: "outputId" | "sourceId"): string {
  if (typeof args?.[idKey] === "string") return args[idKey] as string;
  const legacy = args?.[idKey === "outputId" ? "outputRef" : "sourceRef"] as { artifactId?: unknown } | undefined;
  return typeof legacy?.artifactId === "string" ? legacy.artifactId : "…";
}

/** A reading tool's renderers: the call names what is read (`idKey`) and the page; the result is the page. */
function pageRenderers(title: string, idKey: "outputId" | "sourceId", python: boolean) {
  return {
    renderCall: (args: Record<string, unknown>, theme: Theme, _ctx: unknown) =>
      new Text(titled(title, [idOf(args, idKey), pageArgs(args)].filter(Boolean).join(" · "), theme), 0, 0),
    renderResult: (result: ToolResultLike, options: { expanded: boolean }, theme: Theme, ctx: unknown) =>
      pageResult(result, options, theme, ctx as RenderContext, python),
  };
}

export const outputToolRenderers = pageRenderers("python output", "outputId", false);
export const sourceToolRenderers = pageRenderers("python source", "sourceId", true);

export const setInterpreterRenderers = {
  renderCall: (args: { path?: unknown; interpreter?: unknown }, theme: Theme, _ctx: unknown) =>
    new Text(titled("python interpreter", shownPath(args), theme), 0, 0),
  renderResult: (result: ToolResultLike, _options: { expanded: boolean }, theme: Theme, _ctx: unknown) => {
    const lines = textOf(result).split("\n");
    return new Text(
      lines
        .map((l, i) => (i === 0 ? theme.fg(result.isError ? "error" : "success", l) : theme.fg("muted", l)))
        .join("\n"),
      0,
      0,
    );
  },
};

/** The interpreter a python_set_interpreter call names (`interpreter` in calls made before it was `path`). */
function shownPath(args: { path?: unknown; interpreter?: unknown } | undefined): string {
  const given = args?.path ?? args?.interpreter;
  return typeof given === "string" ? given : "(discovery)";
}
