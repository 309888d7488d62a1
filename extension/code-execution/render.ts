// How code_execution looks in Pi's terminal UI. The call shows the script with syntax highlighting (long scripts
// numbered and collapsed); the result shows, while running, a live elapsed counter and the newest output lines
// (dependency installation as progress: which package, how long), and at the end a status label read from the
// details (never parsed from the text), the session with its state, and the output collapsed from the tail.
import type { Theme } from "@earendil-works/pi-coding-agent";
import { Text, visibleWidth, wrapTextWithAnsi, type Component } from "@earendil-works/pi-tui";
import type { InstallProgress } from "../../host/index.ts";
import {
  elapsedMs,
  expandHint,
  freshContainer,
  highlightPython,
  OUTPUT_PREVIEW_LINES,
  startTimer,
  tailLines,
  textOf,
  type RenderContext,
  type RenderTheme,
  type ResultOptions,
  type ToolResultLike,
} from "../shared/render-kit.ts";

/** Details of a partial result: running (with the newest output as content) or installing dependencies. */
export type LiveDetails =
  | { status: "running"; sourceId?: string; session?: string }
  | ({ status: "installing"; sourceId?: string; session?: string; requirements?: string[] } & Partial<InstallProgress>);

/** Scripts up to this many lines show whole when collapsed; longer ones show this many and a count. */
export const CODE_PREVIEW_LINES = 12;
/** Scripts longer than this get line numbers (tracebacks name lines). */
const NUMBER_FROM = 5;

function duration(ms: number): string {
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m ${Math.floor(s % 60)}s` : `${Math.floor(m / 60)}h ${m % 60}m ${Math.floor(s % 60)}s`;
}

/** Lines behind a gutter (line numbers): a long line wraps under its own text, not under the gutter. */
export class GutterText implements Component {
  private rows: { gutter: string; text: string }[] = [];
  private cache: { width: number; lines: string[] } | undefined;

  setRows(rows: { gutter: string; text: string }[]): void {
    this.rows = rows;
    this.cache = undefined;
  }

  invalidate(): void {
    this.cache = undefined;
  }

  render(width: number): string[] {
    if (this.cache?.width === width) return this.cache.lines;
    const lines: string[] = [];
    for (const { gutter, text } of this.rows) {
      const g = visibleWidth(gutter);
      const room = width - g;
      if (room < 8) {
        lines.push(...wrapTextWithAnsi(gutter + text, Math.max(1, width)));
        continue;
      }
      const wrapped = text ? wrapTextWithAnsi(text, room) : [""];
      wrapped.forEach((w, i) => lines.push((i === 0 ? gutter : " ".repeat(g)) + w));
    }
    this.cache = { width, lines };
    return lines;
  }
}

/** The script as gutter rows: highlighted, numbered when long, collapsed to the first lines unless expanded. */
export function codeRows(
  code: string,
  theme: RenderTheme,
  ctx: RenderContext,
  expanded: boolean,
): { gutter: string; text: string }[] {
  const raw = code.replace(/\s+$/, "");
  if (!raw) return [{ gutter: "", text: theme.fg("muted", "(empty script)") }];
  const lines = highlightPython(raw);
  const total = lines.length;
  const shown = expanded || total <= CODE_PREVIEW_LINES ? total : CODE_PREVIEW_LINES - 2;
  const width = String(total).length;
  const numbered = total > NUMBER_FROM;
  const out = lines
    .slice(0, shown)
    .map((text, i) => ({ gutter: numbered ? theme.fg("dim", `${String(i + 1).padStart(width)} │ `) : "", text }));
  if (shown < total) out.push({ gutter: "", text: expandHint(ctx, theme, `… showing ${shown} of ${total} lines`) });
  return out;
}

/** `Elapsed 3.2s` while partial; the run's own duration once done. */
function elapsed(ctx: RenderContext, partial: boolean): string | undefined {
  const ms = elapsedMs(ctx, partial);
  if (!partial && ctx.durationMs !== undefined) return duration(ctx.durationMs);
  return ms === undefined ? undefined : duration(ms);
}

interface CallArgs {
  code?: unknown;
  sourceId?: unknown;
  sourceRef?: unknown;
  session?: unknown;
  reset?: unknown;
  timeout?: unknown;
}

export function renderCodeCall(args: CallArgs, theme: RenderTheme, ctx: RenderContext): Component {
  startTimer(ctx);
  let head = theme.fg("toolTitle", theme.bold("python"));
  if (typeof args?.session === "string") {
    head += theme.fg("muted", " · session ") + theme.fg("accent", args.session);
    if (args.reset === true) head += theme.fg("warning", " (reset)");
  } else head += theme.fg("muted", " · fresh process");
  if (typeof args?.timeout === "number") head += theme.fg("muted", ` · timeout ${args.timeout}s`);
  const rows =
    typeof args?.code === "string"
      ? codeRows(args.code, theme, ctx, ctx.expanded === true)
      : [
          {
            gutter: "",
            text:
              typeof args?.sourceId === "string"
                ? theme.fg("muted", `rerun of saved script ${args.sourceId}`)
                : typeof (args?.sourceRef as { artifactId?: unknown } | undefined)?.artifactId === "string"
                  ? theme.fg("muted", `rerun of saved script ${(args.sourceRef as { artifactId: string }).artifactId}`)
                  : theme.fg("toolOutput", "…"),
          },
        ];
  const view = ctx.lastComponent instanceof GutterText ? ctx.lastComponent : new GutterText();
  view.setRows([{ gutter: "", text: head }, ...rows]);
  return view;
}

interface FinalDetails {
  status?: string;
  exitCode?: number;
  signal?: string;
  killed?: boolean;
  stage?: string;
  session?: { name: string; ordinal: number; incarnation?: number; isLost: boolean; state?: string };
  python?: { version: string };
  install?: { installer: string; requirements: string[]; cached: boolean };
  reloaded?: string[];
  hints?: { id: string }[];
  /** Where the run executed, when not on this machine (extension/shared/backend-mark.ts, backendDetails). */
  backend?: { kind: string; label: string };
}

/** The final label, from the details' status (and `killed`), never from the text. */
export function statusLabel(d: FinalDetails | undefined, theme: RenderTheme, isError: boolean): string {
  switch (d?.status) {
    case "success":
      return theme.fg("success", "✓ success");
    case "timeout":
      return theme.fg(d.killed ? "error" : "warning", d.killed ? "✗ killed (timed out)" : "⏱ timed out");
    case "cancelled":
      return theme.fg(d.killed ? "error" : "warning", d.killed ? "✗ killed (cancelled)" : "⊘ cancelled");
    case "setup_error":
      return theme.fg("error", d.stage === "install" ? "✗ error (dependencies)" : "✗ error (setup)");
    case "policy_error":
      return theme.fg("error", "✗ error (policy)");
    case "runtime_error":
      return theme.fg("error", d.signal ? `✗ error (${d.signal})` : `✗ error (exit ${d.exitCode ?? 1})`);
    default:
      return isError ? theme.fg("error", "✗ error") : theme.fg("muted", "done");
  }
}

function sessionBadge(d: FinalDetails | undefined, theme: RenderTheme): string {
  const s = d?.session;
  if (!s) return "";
  const state = s.state ?? (s.isLost ? "lost" : "continued");
  const color = state === "lost" ? "error" : state === "started" ? "accent" : state === "kept" ? "warning" : "muted";
  const word = state === "lost" ? "lost its state" : state === "kept" ? "kept its state" : state;
  return theme.fg("muted", " · session ") + theme.fg("accent", s.name) + theme.fg(color, ` ${word}`);
}

export function renderCodeResult(
  result: ToolResultLike,
  options: ResultOptions,
  theme: RenderTheme,
  ctx: RenderContext,
): Component {
  const container = freshContainer(ctx);
  const time = elapsed(ctx, options.isPartial);
  const d = result.details as (FinalDetails & Partial<LiveDetails>) | undefined;
  if (options.isPartial) {
    if (d?.status === "installing") {
      const live = d as Extract<LiveDetails, { status: "installing" }>;
      const pkg = live.package
        ? ` ${live.package}`
        : live.requirements?.length
          ? ` ${live.requirements.join(", ")}`
          : "";
      let line = theme.fg("warning", "⧗ installing dependencies") + theme.fg("toolOutput", pkg);
      if (live.installer) line += theme.fg("muted", ` (${live.installer})`);
      if (time) line += theme.fg("muted", ` · ${time}`);
      const lines = [line];
      if (live.line) lines.push(theme.fg("dim", live.line));
      container.addChild(new Text(lines.join("\n"), 0, 0));
      return container;
    }
    const head = theme.fg("accent", "● running") + (time ? theme.fg("muted", ` · ${time}`) : "");
    const out = tailLines(textOf(result), options.expanded ? 10_000 : OUTPUT_PREVIEW_LINES, theme, undefined);
    container.addChild(new Text([head, ...out].join("\n"), 0, 0));
    return container;
  }
  let head = statusLabel(d, theme, result.isError === true || ctx.isError === true);
  head += sessionBadge(d, theme);
  if (d?.python) head += theme.fg("muted", ` · Python ${d.python.version}`);
  // A run away from this machine says where: the sandbox, or the remote host.
  if (d?.backend) head += theme.fg("warning", ` · runs on ${d.backend.label}`);
  if (time) head += theme.fg("muted", ` · ${time}`);
  const lines = [head];
  if (d?.install) {
    const how = d.install.cached ? "reused" : `installed with ${d.install.installer}`;
    lines.push(theme.fg("muted", `dependencies ${how}: ${d.install.requirements.join(", ")}`));
  }
  if (d?.reloaded?.length) lines.push(theme.fg("muted", `reloaded: ${d.reloaded.join(", ")}`));
  const text = textOf(result);
  lines.push(...tailLines(text, options.expanded ? Number.MAX_SAFE_INTEGER : OUTPUT_PREVIEW_LINES, theme, ctx));
  container.addChild(new Text(lines.join("\n"), 0, 0));
  return container;
}

/** Renderers for code_execution (spread into its tool definition). */
export const codeExecutionRenderers = {
  renderCall: (args: CallArgs, theme: Theme, ctx: unknown) => renderCodeCall(args, theme, ctx as RenderContext),
  renderResult: (
    result: ToolResultLike,
    options: { expanded: boolean; isPartial: boolean },
    theme: Theme,
    ctx: unknown,
  ) => renderCodeResult(result, options, theme, ctx as RenderContext),
};
