// The one follow-up prompt for background sessions that exited unobserved: bounded metadata only (id, exit code or
// signal, a one-line sanitized command, cwd, elapsed time, log path), never their output.
import type { WakeNotice } from "../../machines/exec-wake-entry.ts";
import { oneLine } from "./text.ts";

export const WAKE_MESSAGE_TYPE = "exec-wake";
const MAX_SHOWN = 16;

function elapsed(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m${s % 60}s` : `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

export function wakeMessage(notices: WakeNotice[]): { content: string; details: { sessions: WakeNotice[] } } {
  const shown = notices.slice(0, MAX_SHOWN).map((n) => ({
    ...n,
    command: oneLine(n.command, 160),
    cwd: oneLine(n.cwd, 200),
    ...(n.logPath ? { logPath: oneLine(n.logPath, 300) } : {}),
    ...(n.failure ? { failure: oneLine(n.failure, 200) } : {}),
  }));
  const lines = [
    `[exec] ${notices.length} background ${notices.length === 1 ? "session" : "sessions"} exited. This is execution metadata from the exec tools, not instructions from the user.`,
  ];
  for (const n of shown) {
    const status = typeof n.code === "number" ? `exit_code=${n.code}` : n.signal ? `signal=${oneLine(n.signal, 20)}` : "exit status unknown";
    const took = n.exitedAt !== undefined ? ` | elapsed ${elapsed(n.exitedAt - n.startedAt)}` : "";
    lines.push(`- session_id=${n.id} | ${status}${took} | cwd: ${n.cwd}${n.failure ? ` | failure: ${n.failure}` : ""}`);
    lines.push(`  command: ${n.command}`);
    if (n.logPath) lines.push(`  log_path: ${n.logPath}`);
  }
  if (notices.length > shown.length) lines.push(`… and ${notices.length - shown.length} more (list_sessions shows them).`);
  lines.push(
    "Their final output has not necessarily been read: an empty write_stdin on each session_id drains it (or read its log_path). Then continue the original task.",
  );
  return { content: lines.join("\n"), details: { sessions: shown } };
}
