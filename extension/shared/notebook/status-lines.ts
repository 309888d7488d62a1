// eval's status events as the renderer draws them: one dim line per event under its cell (extension/eval/status.ts
// collects them).

/** One line per event. */
export function statusLine(e: Record<string, unknown>): string {
  const ms = typeof e.durationMs === "number" ? ` ${(e.durationMs / 1000).toFixed(2)}s` : "";
  switch (e.op) {
    case "log":
      return `log: ${String(e.message ?? "")}`;
    case "phase":
      return `phase: ${String(e.title ?? "")}`;
    case "tool":
      return `${e.agent !== undefined ? `${String(e.agent)} › ` : ""}tool ${String(e.name)}: ${String(e.status)}${ms}`;
    case "completion":
      return `completion(): ${String(e.status)}${ms}`;
    case "agent":
      return `agent ${String(e.label ?? e.agent)} (${String(e.model)}): ${String(e.state)}${ms}`;
    case "dropped":
      return `… ${String(e.count)} more status events not kept`;
    default:
      return String(e.op);
  }
}
