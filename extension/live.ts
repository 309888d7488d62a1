// Live updates of a running code_execution call: the newest output while the code runs, and dependency
// installation as progress (which package, the installer's latest line) rather than silence. Throttled.
import type { InstallProgress, RunOutput } from "../host/index.ts";
import { liveText } from "./format.ts";
import type { LiveDetails } from "./render.ts";

/** Updates are throttled to this interval. */
export const UPDATE_INTERVAL_MS = 100;

type Update = (partial: { content: { type: "text"; text: string }[]; details: never }) => void;

export function liveUpdates(onUpdate: Update, run: { session?: string; requirements?: string[] }) {
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
  const session = run.session !== undefined ? { session: run.session } : {};
  return {
    onOutput: (output: RunOutput) =>
      schedule(() => ({ text: liveText(output.preview()), details: { status: "running", ...session } })),
    onProgress: (p: InstallProgress) =>
      schedule(() => ({
        text: `installing dependencies with ${p.installer}${p.package ? `: ${p.package}` : ""}\n${p.line}`,
        details: {
          status: "installing",
          ...session,
          ...p,
          ...(run.requirements ? { requirements: run.requirements } : {}),
        },
      })),
    stop: () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}
