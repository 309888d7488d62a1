// What a surface adds to a run request beyond code and place (host/host.ts): the surface, cell and result modes the
// machines carry, a surface's own escalation bounds, and how a run's displays and plots reach its caller.
import type { Limits, RunRequest } from "../machines/events.ts";
import { requestExtras } from "../machines/run-context.ts";
import type { ShownDisplay } from "../actors/runner/display-frames.ts";
import type { RunRequestInput } from "./requests.ts";

/** The request fields a run takes over as they are (the surface, the cell, its directory, result and budget). */
export function requestFields(request: RunRequestInput): Partial<RunRequest> {
  return {
    ...requestExtras(request),
    ...(request.language === "js" ? { language: "js" as const } : {}),
    ...(request.batch?.length
      ? { batch: request.batch, ...(request.cellTimeoutsMs ? { cellTimeoutsMs: request.cellTimeoutsMs } : {}) }
      : {}),
  };
}

/** The run's escalation bounds when they differ from the supervisor's: changed settings, or a surface's own
 * escalation (pi-python: SIGINT, a second SIGINT halfway through the grace, the kill at its end; or with
 * `interruptGraceMs: 0`, the SIGINT alone and no kill). */
export function limitsFor(request: RunRequestInput, limits: Limits, initial: Limits): { limits?: Limits } {
  const e = request.escalation;
  if (!e) return sameLimits(limits, initial) ? {} : { limits };
  // No kill: the supervisor's bounds stay for what they also bound (draining nested calls after the outcome).
  if (e.noKill) return { limits: { ...limits, noKill: true } };
  const graceMs = e.graceMs ?? limits.graceMs;
  if (!e.secondInterrupt) return { limits: { ...limits, graceMs } };
  const half = Math.floor(graceMs / 2);
  return { limits: { ...limits, interruptWindowMs: half, graceMs: graceMs - half, secondInterrupt: true } };
}

function sameLimits(a: Limits, b: Limits): boolean {
  return a.interruptWindowMs === b.interruptWindowMs && a.graceMs === b.graceMs && a.killMs === b.killMs;
}

/** A display as plain output, for callers that render none themselves: text as is, an image as a line. */
export function plainDisplay(item: ShownDisplay): string {
  if (item.kind === "image") return `[image: ${item.mime}]\n`;
  if (item.kind === "status") return ""; // eval's status events are details, not output
  return item.text.endsWith("\n") ? item.text : `${item.text}\n`;
}

/** matplotlib draws off-screen (Agg) unless the user chose a backend: figures are shown as images, never in windows
 * that would block a run. */
export function withPlotBackend(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return env.MPLBACKEND ? env : { ...env, MPLBACKEND: "Agg" };
}
