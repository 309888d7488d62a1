// What the user sees of shell sessions outside tool results: a footer while processes are alive
// (`unified-exec: 2 sessions running`, pi-unified-exec's words, so its users recognise it), and after /tree
// navigation a widget listing them with `[wake]` marks, because processes do not rewind with the conversation.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { ExecSessionInfo } from "../../host/index.ts";
import { oneLine } from "./text.ts";
import type { Footer } from "../footer.ts";

export const EXEC_WIDGET_KEY = "exec-sessions-tree";
/** How the footer, the widget and the commands' notices begin (pi-unified-exec's). */
export const STATUS_PREFIX = "unified-exec:";

type UI = ExtensionContext["ui"];

const plural = (n: number, w: string) => `${n} ${w}${n === 1 ? "" : "s"}`;

export function execStatusText(sessions: readonly ExecSessionInfo[]): string | undefined {
  const live = sessions.filter((s) => s.running);
  if (live.length === 0) return undefined;
  const armed = live.filter((s) => s.wakeArmed).length;
  return `${STATUS_PREFIX} ${plural(live.length, "session")} running${armed ? ` · ${armed} [wake]` : ""}`;
}

function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m${s % 60}s` : `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

/** One line per session: id, age, [wake], held, command, cwd. */
export function execSessionLine(s: ExecSessionInfo, now = Date.now()): string {
  const held = s.status === "held" ? " (shell exited, pipe held)" : "";
  return `#${s.id} ${age(now - s.startedAt)}${s.wakeArmed ? " [wake]" : ""}${held} ${oneLine(s.command, 72)} (${oneLine(s.cwd, 60)})`;
}

export class ExecStatus {
  private ui: UI | undefined;
  private widget = false;
  private readonly footer: Footer;

  /** The shells are the `exec` part of the extension's footer item. */
  constructor(footer: Footer) {
    this.footer = footer;
  }

  setUI(ctx: ExtensionContext): void {
    this.ui = ctx.hasUI ? ctx.ui : undefined;
    this.footer.setUI(ctx);
  }

  update(sessions: readonly ExecSessionInfo[]): void {
    this.footer.set("exec", execStatusText(sessions));
    if (this.widget) this.showTreeWidget(sessions);
  }

  /** A notice to the user (an eviction), when Pi has a UI. */
  notify(text: string, level: "info" | "warning"): void {
    try {
      this.ui?.notify(text, level);
    } catch {
      // A UI that went away (reload) is not an error of ours.
    }
  }

  showTreeWidget(sessions: readonly ExecSessionInfo[]): void {
    if (!this.ui) return;
    const live = sessions.filter((s) => s.running);
    if (live.length === 0) return this.clearWidget();
    const shown = live.slice(0, 5);
    const lines = [
      `${STATUS_PREFIX} ${plural(live.length, "session")} still running: processes did not rewind with the conversation.`,
      ...shown.map((s) => `  ${execSessionLine(s)}`),
      ...(live.length > shown.length ? [`  … ${live.length - shown.length} more; list_sessions shows them all`] : []),
      "  (write_stdin, set_on_exit or kill_session act on them; /unified-exec-sessions stops one)",
    ];
    try {
      this.ui.setWidget(EXEC_WIDGET_KEY, lines);
      this.widget = true;
    } catch {
      // A UI that went away (reload) is not an error of ours.
    }
  }

  clearWidget(): void {
    if (!this.widget) return;
    this.widget = false;
    try {
      this.ui?.setWidget(EXEC_WIDGET_KEY, undefined);
    } catch {
      // A UI that went away (reload) is not an error of ours.
    }
  }

  detach(): void {
    this.clearWidget();
    this.footer.set("exec", undefined);
  }
}
