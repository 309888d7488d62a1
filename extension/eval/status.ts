// eval's status events (oh-my-pi's `statusEvents`): what the helpers report (log(), phase(), agent()) and the
// nested tool calls a cell made, in the order they happened, per cell and for the whole call. They fill
// `details.cells[i].statusEvents` and `details.statusEvents`, and the renderer draws them under each cell.
import type { RunTools } from "../../host/index.ts";
import { NESTED_TOOL_FINISH_EVENT } from "../../host/index.ts";
import { BUDGET_CALL, POOL_CALL } from "./agents.ts";

export type StatusEvent = Record<string, unknown> & { op: string };

/** At most this many events are kept per call (a loop of log() must not grow the details without bound). */
export const MAX_STATUS_EVENTS = 500;

export class StatusEvents {
  private readonly byCell = new Map<number, StatusEvent[]>();
  private readonly all: StatusEvent[] = [];
  private dropped = 0;
  /** The cell running now (nested calls and helper events belong to it). */
  current = 0;
  /** Called after each event (live updates). */
  onChange?: () => void;

  add(cell: number, event: Record<string, unknown>): void {
    if (typeof event.op !== "string") return;
    if (this.all.length >= MAX_STATUS_EVENTS) {
      this.dropped += 1;
      return;
    }
    const e = { ...event, op: event.op, cell: cell + 1 } as StatusEvent;
    this.all.push(e);
    let list = this.byCell.get(cell);
    if (!list) this.byCell.set(cell, (list = []));
    list.push(e);
    this.onChange?.();
  }

  forCell(cell: number): StatusEvent[] {
    return [...(this.byCell.get(cell) ?? [])];
  }

  overall(): StatusEvent[] {
    return this.dropped
      ? [...this.all, { op: "dropped", count: this.dropped, cell: this.all.at(-1)?.cell ?? 1 }]
      : [...this.all];
  }

  /** The run tools with each finished nested call reported as an event of the running cell: `{op: "tool", name,
   * status, durationMs}`, or `{op: "completion", ...}` for completion(). agent() reports its own; the budget and pool
   * width lookups are not events. */
  observe(tools: RunTools): RunTools {
    return {
      ...tools,
      emit: (channel, payload) => {
        if (channel === NESTED_TOOL_FINISH_EVENT) this.finished(payload);
        tools.emit(channel, payload);
      },
    };
  }

  private finished(payload: unknown): void {
    if (typeof payload !== "object" || payload === null) return;
    const r = payload as { registeredName?: unknown; status?: unknown; durationMs?: unknown };
    const name = typeof r.registeredName === "string" ? r.registeredName : undefined;
    if (!name || name === BUDGET_CALL || name === POOL_CALL || name === "__agent__") return;
    const durationMs = typeof r.durationMs === "number" ? Math.round(r.durationMs) : undefined;
    this.add(this.current, {
      ...(name === "__completion__" ? { op: "completion" } : { op: "tool", name }),
      status: r.status,
      ...(durationMs !== undefined ? { durationMs } : {}),
    });
  }
}
