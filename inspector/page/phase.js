// A session's phase as the page shows it (machines/session.ts `sessionPhase`, the same rule as /code-status).
import { isActor, runActorId } from "./actor-ids.js";

/** A session's phase is its top-level state (`running` for `running.closeRequested`; `ending.lost` is `lost`, the
 * end already decided) and reads its active run: while the run is being stopped, the run's step (`interrupted`,
 * `grace`, `killed`) is the session's phase until the session lets the run go (machines/session.ts,
 * `sessionPhase`). */
export function sessionPhase(model, a, own) {
  if (!isActor(a.id, "session")) return own;
  const [top, sub] = own.split(".");
  const phase = top === "ending" && sub ? sub : top;
  if (top !== "running" && top !== "starting" && !(top === "ending" && sub === "lost")) return phase;
  const runId = a.context && typeof a.context === "object" ? a.context.activeRunId : undefined;
  const run = typeof runId === "string" ? model.actors.get(runActorId(runId)) : undefined;
  // A run's last state before it ended counts until the session lets it go (the session reacts right after).
  const value = run?.activeValue;
  const step = value && typeof value === "object" ? value.stopping : undefined;
  return typeof step === "string" ? step : phase;
}
