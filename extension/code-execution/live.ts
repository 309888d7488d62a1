// Live updates of a running code_execution call: the newest output while the code runs, and dependency
// installation as progress (which package, the installer's latest line) rather than silence. Throttled.
import type { InstallProgress, RunOutput } from "../../host/index.ts";
import { liveText } from "./result.ts";
import type { LiveDetails } from "./render.ts";

/** Updates are throttled to this interval. */
export const UPDATE_INTERVAL_MS = 100;

type Update = (partial: { content: { type: "text"; text: string }[]; details: never }) => void;

/** An installer line longer than this (UTF-16 units) shows its end: the update stays far below 20 KiB. */
const LINE_LIMIT = 2048;

export function liveUpdates(onUpdate: Update, run: { sourceId: string; session?: string; requirements?: string[] }) {
  let last = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let latest: (() => { text: string; details: LiveDetails }) | undefined;
  const push = () => {
    timer = undefined;
    last = Date.now();
    const next = latest?.();
    if (next) onUpdate({ content: [{ type: "text", text: next.text }], details: next.details as never });
  };
  const schedule = (make: () => { text: string; details: LiveDetails }) => {
    latest = make;
    if (timer) return;
    const wait = UPDATE_INTERVAL_MS - (Date.now() - last);
    if (wait <= 0) push();
    else timer = setTimeout(push, wait);
  };
  // Every update names the script (seed-compatible `{status: "running", sourceId}`), and the session if any.
  const tags = { sourceId: run.sourceId, ...(run.session !== undefined ? { session: run.session } : {}) };
  return {
    onOutput: (output: RunOutput) =>
      schedule(() => ({ text: liveText(output.preview()), details: { status: "running", ...tags } })),
    onProgress: (progress: InstallProgress) =>
      schedule(() => {
        const p = { ...progress, line: newest(progress.line) };
        return {
          text: `installing dependencies with ${p.installer}${p.package ? `: ${p.package}` : ""}\n${p.line}`,
          details: {
            status: "installing",
            ...tags,
            ...p,
            ...(run.requirements ? { requirements: run.requirements } : {}),
          },
        };
      }),
    stop: () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}

/** The end of a long line, never starting inside a surrogate pair. */
function newest(line: string): string {
  if (line.length <= LINE_LIMIT) return line;
  const cut = line.slice(-LINE_LIMIT);
  return /^[\uDC00-\uDFFF]/.test(cut) ? cut.slice(1) : cut;
}
