// Live updates while an exec tool waits: the newest output of the session, pushed when output arrives (never on
// a timer, so a quiet wait costs nothing), at most every `minIntervalMs` with one trailing update per burst.
import type { SessionIO } from "../../host/index.ts";
import { inertText } from "./text.ts";

type Update = (partial: { content: { type: "text"; text: string }[]; details: never }) => void;

/** Short waits update up to 4 times a second; long ones once every 30 s (plus first and last). */
export const SHORT_UPDATE_MS = 250;
export const LONG_UPDATE_MS = 30_000;

export interface LiveBase {
  operation: string;
  command?: string;
  cwd?: string;
  yield_until?: string;
  yield_time_ms?: number;
}

export function liveFeed(onUpdate: Update, base: LiveBase, minIntervalMs: number) {
  let io: SessionIO | undefined;
  let off: (() => void) | undefined;
  let last = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const push = () => {
    timer = undefined;
    if (!io || stopped) return;
    last = performance.now();
    const text = inertText(io.tail.snapshot().toString("utf8"));
    try {
      onUpdate({
        content: [{ type: "text", text }],
        details: {
          ...base,
          status: io.ended ? "exited" : "running",
          running: !io.ended,
          session_id: io.id,
          output: text,
          output_bytes_total: io.totalBytes,
          ...(io.logPath ? { log_path: io.logPath } : {}),
          ...(io.pid !== undefined ? { pid: io.pid } : {}),
        } as never,
      });
    } catch {
      // A renderer problem never disturbs the wait.
    }
  };
  const changed = () => {
    if (stopped || timer) return;
    const wait = minIntervalMs - (performance.now() - last);
    if (wait <= 0) push();
    else timer = setTimeout(push, wait);
  };
  return {
    watch(session: SessionIO) {
      io = session;
      off?.();
      off = session.onChange(changed);
      push();
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      off?.();
    },
  };
}
