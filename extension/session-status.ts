// What the user sees of live sessions outside tool results: a footer part while sessions are alive (how many of
// each runtime, which one is busy, and where runs execute when that is not this machine), and after /tree
// navigation a widget listing them, because a session's state does not rewind with the conversation. A session is
// named by its runtime: its language and the surface that uses it (the notebook session is the `python` tool's and
// eval's Python cells'; `js` is eval's JavaScript cells'; any other is a code_execution session).
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { BackendInfo, SessionInfo, SupervisorHost } from "../host/index.ts";
import type { Footer } from "./footer.ts";
import { JS_SESSION } from "./eval/js-backend.ts";
import { afterResults, resultsPending } from "../lib/after-results.ts";

export const TREE_WIDGET_KEY = "code-execution-sessions";

type UI = ExtensionContext["ui"];

/** `Python (code_execution)`, `Python (python/eval notebook)`, `JavaScript (eval)`. */
export function runtimeLabel(s: Pick<SessionInfo, "name" | "language">, notebook: string): string {
  if (s.language === "js") return `JavaScript (${s.name === JS_SESSION ? "eval" : "eval, session " + s.name})`;
  return `Python (${s.name === notebook ? "python/eval notebook" : "code_execution"})`;
}

/** The footer part for these sessions, counted by runtime; undefined (cleared) when none is alive. */
export function statusText(sessions: readonly SessionInfo[], notebook: string): string | undefined {
  if (sessions.length === 0) return undefined;
  const counts = new Map<string, number>();
  for (const s of sessions) counts.set(runtimeLabel(s, notebook), (counts.get(runtimeLabel(s, notebook)) ?? 0) + 1);
  const kinds = [...counts].map(([label, n]) => (sessions.length === 1 ? label : `${n} ${label}`)).join(", ");
  const count = `${sessions.length} session${sessions.length === 1 ? "" : "s"}: ${kinds}`;
  const busy = sessions.filter((s) => s.busyRunId !== undefined).map((s) => s.name);
  if (busy.length === 0) return `${count} · idle`;
  return `${count} · busy: ${busy.join(", ")}`;
}

/** Where runs execute, for the footer: undefined on this machine, else the backend's label (`sandbox (bwrap, no
 * network)`, `remote ssh user@host:/srv`). */
export function backendMark(backend: BackendInfo | undefined): string | undefined {
  return backend && backend.kind !== "local" ? `runs on ${backend.label}` : undefined;
}

export function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${m % 60}m`;
}

/** One line per session: name, state, pid, runtime (language, version, surface), age, last run. */
export function sessionLines(sessions: readonly SessionInfo[], notebook: string, now = Date.now()): string[] {
  const width = Math.max(...sessions.map((s) => s.name.length), 4);
  return sessions.map((s) => {
    const parts = [s.name.padEnd(width), s.state.padEnd(11)];
    if (s.pid !== undefined) parts.push(`pid ${s.pid}`);
    const runtime = runtimeLabel(s, notebook);
    // The version goes after the language: `Python 3.12.1 (code_execution)`, `JavaScript Node 22.1.0 (eval)`.
    const version = s.pythonVersion ? ` ${s.language === "js" ? "Node " : ""}${s.pythonVersion}` : "";
    parts.push(runtime.replace(" (", `${version} (`));
    if (s.startedAt !== undefined) parts.push(`up ${ago(now - s.startedAt)}`);
    if (s.lastRun) parts.push(`last run ${ago(now - s.lastRun.at)} ago: ${s.lastRun.status}`);
    return parts.join("  ");
  });
}

/** Keeps the footer's sessions and backend parts in step with the supervisor. */
export class SessionStatus {
  private ui: UI | undefined;
  private unsubscribe: (() => void) | undefined;
  private widgetShown = false;
  /** The host whose changes are followed (a put-off redraw of a detached one does nothing). */
  private attached: SupervisorHost | undefined;
  private readonly footer: Footer;
  private readonly notebook: () => string;

  constructor(footer: Footer, notebook: () => string) {
    this.footer = footer;
    this.notebook = notebook;
  }

  /** The UI of the running Pi session (from session_start); without one nothing is shown. */
  setUI(ctx: ExtensionContext): void {
    this.ui = ctx.hasUI ? ctx.ui : undefined;
    this.footer.setUI(ctx);
  }

  attach(host: SupervisorHost): void {
    this.unsubscribe?.();
    // Only session bookkeeping changes the footer; runs and timers do not. A tool's run changes it twice (busy,
    // idle) from inside the supervisor's step, on the call's path: while a result is pending the footer is redrawn
    // with the work put off until Pi has the result (lib/after-results.ts: at once then, and within MAX_DEFER_MS for
    // a run that goes on, so `busy` still shows), once for all the changes of the call. Otherwise at once.
    let queued = false;
    const redraw = () => {
      queued = false;
      if (this.attached === host) this.update(host);
    };
    this.attached = host;
    this.unsubscribe = host.onSessionsChange(() => {
      if (!resultsPending()) return this.update(host);
      if (queued) return;
      queued = true;
      afterResults(redraw);
    });
    this.update(host);
  }

  update(host: SupervisorHost | undefined): void {
    this.footer.set("code", host ? statusText(host.sessions(), this.notebook()) : undefined);
    this.footer.set("backend", backendMark(host?.backend()));
  }

  /** After /tree navigation: the live sessions, which kept their state. */
  showTreeWidget(host: SupervisorHost | undefined): void {
    const sessions = host?.sessions() ?? [];
    if (!this.ui) return;
    if (sessions.length === 0) return this.clearWidget();
    const lines = [
      `Code sessions did not rewind with the conversation: ${sessions.length === 1 ? "this session keeps its" : "these sessions keep their"} variables and imports.`,
      ...sessionLines(sessions, this.notebook()).map((l) => `  ${l}`),
      "  (/code-restart <name> starts one empty; /code-sessions stops one)",
    ];
    this.ui.setWidget(TREE_WIDGET_KEY, lines);
    this.widgetShown = true;
  }

  clearWidget(): void {
    if (!this.widgetShown) return;
    this.widgetShown = false;
    try {
      this.ui?.setWidget(TREE_WIDGET_KEY, undefined);
    } catch {
      // A UI that went away (reload) is not an error of ours.
    }
  }

  detach(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.attached = undefined;
    this.clearWidget();
    this.footer.set("code", undefined);
    this.footer.set("backend", undefined);
  }
}
