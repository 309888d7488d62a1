// What the user sees of live sessions outside tool results: a footer status while sessions are alive (how many,
// and which one is busy), and after /tree navigation a widget listing them, because Python state does not rewind
// with the conversation.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { SessionInfo, SupervisorHost } from "../host/index.ts";

export const STATUS_KEY = "code-execution";
export const TREE_WIDGET_KEY = "code-execution-sessions";

type UI = ExtensionContext["ui"];

/** The footer text for these sessions; undefined (cleared) when none is alive. */
export function statusText(sessions: readonly SessionInfo[]): string | undefined {
  if (sessions.length === 0) return undefined;
  const busy = sessions.filter((s) => s.busyRunId !== undefined).map((s) => s.name);
  const count = `${sessions.length} Python session${sessions.length === 1 ? "" : "s"}`;
  if (busy.length === 0) return `${count} · idle`;
  return `${count} · busy: ${busy.join(", ")}`;
}

export function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${m % 60}m`;
}

/** One line per session: name, state, pid, age, last run. */
export function sessionLines(sessions: readonly SessionInfo[], now = Date.now()): string[] {
  const width = Math.max(...sessions.map((s) => s.name.length), 4);
  return sessions.map((s) => {
    const parts = [s.name.padEnd(width), s.state.padEnd(11)];
    if (s.pid !== undefined) parts.push(`pid ${s.pid}`);
    if (s.pythonVersion) parts.push(`${s.language === "js" ? "Node" : "Python"} ${s.pythonVersion}`);
    if (s.startedAt !== undefined) parts.push(`up ${ago(now - s.startedAt)}`);
    if (s.lastRun) parts.push(`last run ${ago(now - s.lastRun.at)} ago: ${s.lastRun.status}`);
    return parts.join("  ");
  });
}

/** Keeps the footer status in step with the supervisor's sessions. */
export class SessionStatus {
  private ui: UI | undefined;
  private last: string | undefined;
  private unsubscribe: (() => void) | undefined;
  private widgetShown = false;

  /** The UI of the running Pi session (from session_start); without one nothing is shown. */
  setUI(ctx: ExtensionContext): void {
    this.ui = ctx.hasUI ? ctx.ui : undefined;
    this.last = undefined;
  }

  attach(host: SupervisorHost): void {
    this.unsubscribe?.();
    // Only session bookkeeping changes the footer; runs and timers do not.
    this.unsubscribe = host.onSessionsChange(() => this.update(host));
    this.update(host);
  }

  update(host: SupervisorHost | undefined): void {
    const text = host ? statusText(host.sessions()) : undefined;
    if (text === this.last) return;
    this.last = text;
    try {
      this.ui?.setStatus(STATUS_KEY, text === undefined ? undefined : (this.ui.theme?.fg("muted", text) ?? text));
    } catch {
      // A UI that went away (reload) is not an error of ours.
    }
  }

  /** After /tree navigation: the live sessions, which kept their state. */
  showTreeWidget(host: SupervisorHost | undefined): void {
    const sessions = host?.sessions() ?? [];
    if (!this.ui) return;
    if (sessions.length === 0) return this.clearWidget();
    const lines = [
      `Python sessions did not rewind with the conversation: ${sessions.length === 1 ? "this session keeps its" : "these sessions keep their"} variables and imports.`,
      ...sessionLines(sessions).map((l) => `  ${l}`),
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
      // see update()
    }
  }

  detach(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.clearWidget();
    try {
      this.ui?.setStatus(STATUS_KEY, undefined);
    } catch {
      // see update()
    }
    this.last = undefined;
  }
}
