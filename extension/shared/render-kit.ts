// What every tool renderer is built from (code_execution's, the notebook tools', the shells', the reading tools'):
// the slice of Pi's render context and theme a renderer uses, the elapsed-time counter, the output's newest lines
// behind a count of those hidden, and Python highlighting.
import type { Theme } from "@earendil-works/pi-coding-agent";
import { highlightCode } from "@earendil-works/pi-coding-agent";
import { Container, type Component } from "@earendil-works/pi-tui";

/** The theme methods used here (Pi passes its Theme; tests may pass a plain one). */
export type RenderTheme = Pick<Theme, "fg" | "bold">;

export interface RowState {
  startedAt?: number;
  endedAt?: number;
  interval?: ReturnType<typeof setInterval>;
}

/** What a renderer needs of Pi's ToolRenderContext. */
export interface RenderContext {
  state: RowState;
  executionStarted: boolean;
  isPartial?: boolean;
  isError?: boolean;
  expanded?: boolean;
  durationMs?: number | undefined;
  lastComponent?: Component | undefined;
  invalidate: () => void;
  keyHint: (keybinding: never, description: string) => string;
}

export interface ToolResultLike {
  content: { type: string; text?: string }[];
  details?: unknown;
  isError?: boolean;
}

/** Output lines shown collapsed (the newest). */
export const OUTPUT_PREVIEW_LINES = 8;

export const expandHint = (ctx: RenderContext, theme: RenderTheme, what: string) =>
  theme.fg("muted", `${what} (`) + ctx.keyHint("app.tools.expand" as never, "to expand") + theme.fg("muted", ")");

export function highlightPython(code: string): string[] {
  try {
    return highlightCode(code.replace(/\t/g, "    "), "python");
  } catch {
    return code.split("\n");
  }
}

export function textOf(result: ToolResultLike | undefined): string {
  return (result?.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text ?? "")
    .join("\n")
    .replace(/\r/g, "");
}

/** The newest lines of some output, with a count of those left out above them. */
export function tailLines(text: string, max: number, theme: RenderTheme, ctx: RenderContext | undefined): string[] {
  const lines = text.replace(/\n+$/, "").split("\n");
  if (lines.length === 1 && lines[0] === "") return [];
  return tailStyled(
    lines.map((l) => outputLine(l, theme)),
    max,
    theme,
    ctx,
  );
}

/** One line of output as the results show it: a `[note]` muted, the rest as tool output. */
export function outputLine(line: string, theme: RenderTheme): string {
  return /^\[.*\]$/.test(line) ? theme.fg("muted", line) : theme.fg("toolOutput", line);
}

/** The last `max` of lines already styled, after a marker saying how many are hidden (and how to expand). */
export function tailStyled(lines: string[], max: number, theme: RenderTheme, ctx: RenderContext | undefined): string[] {
  if (lines.length <= max) return lines;
  const hidden = lines.length - max;
  const marker = ctx
    ? expandHint(ctx, theme, `… ${hidden} earlier line${hidden === 1 ? "" : "s"}`)
    : theme.fg("muted", `… ${hidden} earlier line${hidden === 1 ? "" : "s"}`);
  return [marker, ...lines.slice(-max)];
}

export function startTimer(ctx: RenderContext): void {
  if (ctx.executionStarted && ctx.state.startedAt === undefined) ctx.state.startedAt = Date.now();
}

/** Milliseconds since the call started: redrawn every second while partial, frozen at its end once done. */
export function elapsedMs(ctx: RenderContext, partial: boolean): number | undefined {
  const st = ctx.state;
  if (partial && st.startedAt !== undefined && !st.interval) {
    st.interval = setInterval(() => ctx.invalidate(), 1000);
    st.interval.unref?.();
  }
  if (!partial) {
    st.endedAt ??= Date.now();
    if (st.interval) clearInterval(st.interval);
    st.interval = undefined;
  }
  return st.startedAt === undefined ? undefined : (partial ? Date.now() : (st.endedAt ?? Date.now())) - st.startedAt;
}

/** The result's component, emptied: the one drawn last time when there is one (Pi keeps it between updates). */
export function freshContainer(ctx: RenderContext): Container {
  const container = ctx.lastComponent instanceof Container ? ctx.lastComponent : new Container();
  container.clear();
  return container;
}

export type ResultOptions = { expanded: boolean; isPartial: boolean };
