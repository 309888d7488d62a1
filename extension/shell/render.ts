// How the exec tools look in Pi's terminal: a command banner (`$ cmd`, or `» input → session` / `⟳ poll`), the
// output collapsed to its last five lines (Pi's expand key shows it all), a live elapsed counter while attached,
// and a footer from the details: took/yielded, exit code or session id, `[wake]` when a wake is armed, the log.
// Everything shown is inert text (details.output is already stripped of control sequences).
import type { Theme } from "@earendil-works/pi-coding-agent";
import { Text, type Component } from "@earendil-works/pi-tui";
import { elapsedMs, startTimer, type RenderContext, type RenderTheme, type ToolResultLike } from "../shared/render-kit.ts";
import { inertText, oneLine } from "./text.ts";

/** Output lines shown collapsed. */
export const PREVIEW_LINES = 5;

type Opts = { expanded: boolean; isPartial: boolean };

function elapsedLabel(ms: number): string {
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m${Math.floor(s % 60)}s` : `${Math.floor(m / 60)}h${m % 60}m`;
}

/** `2h40m later`: what is left of an absolute wait. */
export function remainingLabel(untilIso: string, now = Date.now()): string {
  const left = Date.parse(untilIso) - now;
  return left <= 0 ? "deadline passed" : `${elapsedLabel(left)} later`;
}

function tick(ctx: RenderContext, partial: boolean): number | undefined {
  startTimer(ctx);
  return elapsedMs(ctx, partial);
}

function outputLines(text: string, expanded: boolean, theme: RenderTheme, ctx: RenderContext): string[] {
  const lines = text.replace(/\n+$/, "").split("\n");
  if (lines.length === 1 && lines[0] === "") return [];
  if (expanded || lines.length <= PREVIEW_LINES) return lines.map((l) => theme.fg("toolOutput", l));
  const hidden = lines.length - PREVIEW_LINES;
  return [
    theme.fg("muted", `… (${hidden} earlier line${hidden === 1 ? "" : "s"}, `) +
      ctx.keyHint("app.tools.expand" as never, "to expand") +
      theme.fg("muted", ")"),
    ...lines.slice(-PREVIEW_LINES).map((l) => theme.fg("toolOutput", l)),
  ];
}

function text(component: Component | undefined, content: string): Component {
  const t = component instanceof Text ? component : new Text("", 0, 0);
  t.setText(content);
  return t;
}

function describeBytes(args: { chars?: unknown; chars_b64?: unknown }): string | undefined {
  if (typeof args.chars_b64 === "string" && args.chars_b64)
    return `(base64, ${Buffer.from(args.chars_b64, "base64").length} bytes)`;
  if (typeof args.chars !== "string" || !args.chars) return undefined;
  const s = args.chars
    .replace(/\\x03|\x03/g, "^C")
    .replace(/\\x04|\x04/g, "^D")
    .replace(/\\x1b|\\e|\x1b/g, "^[");
  return oneLine(s.length > 60 ? `${s.slice(0, 59)}…` : s);
}

interface ResultDetails {
  backend?: { kind: string; label: string };
  status?: string;
  running?: boolean;
  session_id?: number;
  exit_code?: number;
  signal?: string;
  failure_message?: string;
  log_path?: string;
  output?: string;
  on_exit?: string;
  completion_notification?: string;
  on_exit_wake?: string;
  wait_status?: string;
  yield_until?: string;
  wall_time_seconds?: number;
  killed?: boolean;
  found?: boolean;
  escalated?: boolean;
  requested_signal?: string;
}

function footer(d: ResultDetails | undefined, theme: RenderTheme, partial: boolean, ms: number | undefined): string {
  const parts: string[] = [];
  const time = ms !== undefined ? elapsedLabel(ms) : d?.wall_time_seconds !== undefined ? `${d.wall_time_seconds.toFixed(1)}s` : undefined;
  if (partial) {
    if (time) parts.push(`elapsed ${time}`);
    if (d?.yield_until) parts.push(remainingLabel(d.yield_until));
  } else if (d?.running) {
    if (time) parts.push(d.wait_status === "cancelled" ? `cancelled after ${time}` : `yielded ${time}`);
  } else if (time) parts.push(`took ${time}`);
  if (d?.running && d.session_id !== undefined) parts.push(`session_id=${d.session_id}`);
  if (!d?.running && d?.exit_code !== undefined) parts.push(`exit_code=${d.exit_code}`);
  if (d?.signal) parts.push(`signal=${d.signal}`);
  if (d?.completion_notification === "armed") parts.push("[wake]");
  if (d?.on_exit_wake === "consumed") parts.push("wake consumed");
  if (d?.log_path) parts.push(`log: ${oneLine(d.log_path)}`);
  if (d?.backend) parts.push(`runs on ${oneLine(d.backend.label)}`);
  let line = theme.fg("muted", `  ${parts.join(" · ")}`);
  if (d?.failure_message) line += `\n${theme.fg("error", `  ${d.failure_message}`)}`;
  return line;
}

function processResult(result: ToolResultLike, opts: Opts, theme: RenderTheme, ctx: RenderContext): Component {
  const ms = tick(ctx, opts.isPartial);
  const d = result.details as ResultDetails | undefined;
  const body = typeof d?.output === "string" ? d.output : inertText(result.content.map((c) => c.text ?? "").join(""));
  const lines = [...outputLines(body, opts.expanded, theme, ctx), footer(d, theme, opts.isPartial, opts.isPartial ? ms : undefined)];
  return text(ctx.lastComponent, lines.join("\n"));
}

const title = (theme: RenderTheme, s: string) => theme.fg("toolTitle", theme.bold(s));

export const execRenderers = {
  exec_command: {
    renderCall: (args: { cmd?: unknown; workdir?: unknown; yield_time_ms?: unknown; tty?: unknown; on_exit?: unknown }, theme: Theme, ctx: unknown) => {
      const c = ctx as RenderContext;
      tick(c, true);
      const cmd = typeof args?.cmd === "string" ? oneLine(args.cmd, 400) : "…";
      const extra = [
        typeof args?.yield_time_ms === "number" ? `yield ${(args.yield_time_ms / 1000).toFixed(1)}s` : undefined,
        typeof args?.workdir === "string" ? `cwd: ${oneLine(args.workdir, 80)}` : undefined,
        args?.tty === true ? "tty" : undefined,
        args?.on_exit === "wake" ? "[wake]" : undefined,
      ].filter(Boolean);
      return text(c.lastComponent, `${title(theme, "$")} ${theme.fg("toolOutput", cmd)}${extra.length ? theme.fg("muted", ` (${extra.join(" · ")})`) : ""}`);
    },
    renderResult: (result: ToolResultLike, opts: Opts, theme: Theme, ctx: unknown) => processResult(result, opts, theme, ctx as RenderContext),
  },
  write_stdin: {
    renderCall: (args: { session_id?: unknown; chars?: unknown; chars_b64?: unknown; yield_time_ms?: unknown; yield_until?: unknown }, theme: Theme, ctx: unknown) => {
      const c = ctx as RenderContext;
      tick(c, true);
      const input = describeBytes(args ?? {});
      const wait =
        typeof args?.yield_until === "string"
          ? remainingLabel(args.yield_until)
          : typeof args?.yield_time_ms === "number"
            ? `yield ${(args.yield_time_ms / 1000).toFixed(1)}s`
            : input
              ? "until it answers"
              : "yield 5.0s";
      const head = input ? `${title(theme, "»")} ${theme.fg("toolOutput", input)}` : title(theme, "⟳ poll");
      return text(c.lastComponent, `${head}${theme.fg("muted", ` → session_id=${String(args?.session_id ?? "?")} (${wait})`)}`);
    },
    renderResult: (result: ToolResultLike, opts: Opts, theme: Theme, ctx: unknown) => processResult(result, opts, theme, ctx as RenderContext),
  },
  kill_session: {
    renderCall: (args: { session_id?: unknown; signal?: unknown }, theme: Theme, ctx: unknown) =>
      text(
        (ctx as RenderContext).lastComponent,
        `${title(theme, "kill_session")} ${theme.fg("muted", `session_id=${String(args?.session_id ?? "?")} signal=${typeof args?.signal === "string" ? args.signal : "SIGTERM"}`)}`,
      ),
    renderResult: (result: ToolResultLike, opts: Opts, theme: Theme, ctx: unknown) => {
      const c = ctx as RenderContext;
      const d = result.details as ResultDetails | undefined;
      if (d?.found === false) return text(c.lastComponent, theme.fg("warning", `  no such session: ${String(d.session_id ?? "?")}`));
      const lines = outputLines(d?.output ?? "", opts.expanded, theme, c);
      const what = d?.killed
        ? theme.fg("success", `killed session_id=${d.session_id}`)
        : d?.running
          ? theme.fg("error", `kill failed: session_id=${d?.session_id} still running`)
          : theme.fg("muted", `session_id=${d?.session_id} had already exited`);
      const rest = [
        d?.wall_time_seconds !== undefined ? `took ${d.wall_time_seconds.toFixed(1)}s` : undefined,
        d?.signal ? `signal=${d.signal}` : d?.exit_code !== undefined ? `exit_code=${d.exit_code}` : undefined,
        d?.escalated ? "escalated to SIGKILL" : undefined,
        d?.log_path ? `log: ${oneLine(d.log_path)}` : undefined,
      ].filter(Boolean);
      lines.push(`  ${what}${theme.fg("muted", rest.length ? ` · ${rest.join(" · ")}` : "")}`);
      if (d?.failure_message && !d.killed) lines.push(theme.fg("error", `  ${d.failure_message}`));
      return text(c.lastComponent, lines.join("\n"));
    },
  },
  list_sessions: {
    renderCall: (_args: unknown, theme: Theme, ctx: unknown) => text((ctx as RenderContext).lastComponent, title(theme, "list_sessions")),
    renderResult: (result: ToolResultLike, opts: Opts, theme: Theme, ctx: unknown) => {
      const c = ctx as RenderContext;
      const d = result.details as { sessions?: { session_id: number; running: boolean; state: string; wake_armed: boolean; command: string; exit_code?: number; signal?: string; log_path?: string; elapsed_ms: number }[] } | undefined;
      const all = d?.sessions ?? [];
      if (all.length === 0) return text(c.lastComponent, theme.fg("muted", "  no sessions"));
      const shown = opts.expanded ? all : all.slice(0, PREVIEW_LINES);
      const lines = shown.map((s) => {
        const state = s.running ? s.state : `exited${s.exit_code !== undefined ? ` ${s.exit_code}` : ""}${s.signal ? ` ${s.signal}` : ""}`;
        let l = `  #${s.session_id} ${theme.fg(s.running ? "accent" : "muted", state)} ${elapsedLabel(s.elapsed_ms)}${s.wake_armed ? theme.fg("warning", " [wake]") : ""} ${theme.fg("toolOutput", oneLine(s.command, 70))}`;
        if (opts.expanded && s.log_path) l += `\n      ${theme.fg("dim", `log: ${oneLine(s.log_path)}`)}`;
        return l;
      });
      if (shown.length < all.length)
        lines.push(theme.fg("muted", `  … ${all.length - shown.length} more (`) + c.keyHint("app.tools.expand" as never, "to expand") + theme.fg("muted", ")"));
      return text(c.lastComponent, lines.join("\n"));
    },
  },
  set_on_exit: {
    renderCall: (args: { session_id?: unknown; on_exit?: unknown }, theme: Theme, ctx: unknown) =>
      text(
        (ctx as RenderContext).lastComponent,
        `${title(theme, "set_on_exit")} ${theme.fg("muted", `session_id=${String(args?.session_id ?? "?")} → ${String(args?.on_exit ?? "?")}`)}`,
      ),
    renderResult: (result: ToolResultLike, _opts: Opts, theme: Theme, ctx: unknown) => {
      const d = result.details as { found?: boolean; status?: string; wake_armed?: boolean } | undefined;
      const line = d?.found === false ? theme.fg("warning", "  no such session") : `  ${theme.fg("accent", d?.status ?? "?")}${d?.wake_armed ? theme.fg("warning", " [wake]") : theme.fg("muted", " · wake not armed")}`;
      return text((ctx as RenderContext).lastComponent, line);
    },
  },
};
