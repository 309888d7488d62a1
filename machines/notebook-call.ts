// One notebook call (`python` or `eval`): its cells run one after another, each as a run of its language's session;
// a cell that fails, is cancelled, or uses up the call's time ends the call, and the cells after it are not run.
// The cells' statuses (not_run, running, ok, error, cancelled), the call's deadline and stop-after-failure are this
// machine's states, context and guards, shared by both tools; what a cell is (a Python or JavaScript run, its text,
// its journal row) is the tool's.
//
// host/notebook-call.ts runs this machine privately and is its adapter: it starts the cell the machine
// names (`startCell`) and reports the cell's end (`cell.ended`); a start may run the cells after it too, in one
// request, and their ends come back `continued`. Each cell is a run actor of the supervisor (the
// inspector shows it, with its cell's index and the call's surface, and replay re-drives it); this machine is not in
// the supervisor's actor system, so a warm cell's path there is unchanged.
import { assertEvent, assign, not, setup } from "xstate";
import { placeholderAction } from "./placeholder.ts";

export type CellStatus = "not_run" | "running" | "ok" | "error" | "cancelled";

export interface NotebookCallInput {
  /** How many cells the call has (at least one). */
  cells: number;
  /** `call`: one deadline covers every cell (pi-python's `timeout`): a cell that times out ends the call, and no
   * cell starts after it. `cell`: each cell has its own budget (oh-my-pi's per-cell `timeout`): a cell that caught
   * its timeout and completed lets the next one run. */
  budget: "call" | "cell";
  /** The call's deadline (ms, the adapter's clock), for a `call` budget. */
  deadlineAt?: number;
}

/** How a cell's run ended, in notebook words (extension/shared/notebook/python-cells.ts `cellEnding`). */
export interface CellEnd {
  /** The cell completed (also when it caught its timeout's interrupt or the cancellation and ended by itself). */
  ok: boolean;
  cancelled: boolean;
  timedOut: boolean;
  /** The cell's kernel was killed or died: its state is gone. */
  lost: boolean;
}

export type NotebookCallEvent = {
  type: "cell.ended";
  at: number;
  index: number;
  /** The next cell had already started when this one ended: several cells went to the runtime in one request (a
   * batch, docs/design.md "A notebook call"), so it runs on whatever the call's deadline says (its run's deadline
   * interrupts it) and no `startCell` is asked for it. */
  continued?: boolean;
} & CellEnd;

export interface NotebookCallContext extends NotebookCallInput {
  statuses: CellStatus[];
  /** The cell running, or the last one that ran (0-based). */
  current: number;
  timedOut: boolean;
  cancelled: boolean;
  lost: boolean;
}

/** How the call ended: its final state. */
export type NotebookCallEnding = "completed" | "stopped" | "cancelled" | "timedOut";

/** What the call's final snapshot holds; its ending is the final state's name (`snapshot.value`). */
export interface NotebookCallOutput {
  statuses: CellStatus[];
  /** The call ran out of time: a cell's timeout, or the call's deadline before a cell could start. */
  timedOut: boolean;
  cancelled: boolean;
  /** A cell's kernel was lost. */
  lost: boolean;
}

/** A cell's status from how it ended: an interrupted cell that ended by itself is `ok`; a cancelled one whose
 * kernel survived is `cancelled`; anything else that did not complete is an `error`. */
export function statusOf(end: CellEnd): CellStatus {
  if (end.ok) return "ok";
  return end.cancelled && !end.lost ? "cancelled" : "error";
}

const unprovided = (name: string) => placeholderAction("machines/notebook-call.ts", name, "host/notebook-call.ts");

export const notebookCallMachine = setup({
  types: {
    context: {} as NotebookCallContext,
    input: {} as NotebookCallInput,
    events: {} as NotebookCallEvent,
    output: {} as NotebookCallOutput,
  },
  actions: {
    /** Run cell `index` (0-based); its end comes back as `cell.ended`. */
    startCell: unprovided("startCell") as (_: unknown, params: { index: number }) => void,
    markRunning: assign({
      statuses: ({ context }) => context.statuses.map((s, i) => (i === context.current ? "running" : s)),
    }),
    recordEnd: assign(({ context, event }) => {
      assertEvent(event, "cell.ended");
      return {
        statuses: context.statuses.map((s, i) => (i === event.index ? statusOf(event) : s)),
        timedOut: context.timedOut || event.timedOut,
        cancelled: context.cancelled || event.cancelled,
        lost: context.lost || event.lost,
      };
    }),
    advance: assign({ current: ({ context }) => context.current + 1 }),
    /** The call's deadline passed between cells: the call timed out, though no cell did. */
    noteOutOfTime: assign({ timedOut: true }),
  },
  guards: {
    /** The end of the cell that is running (a late or repeated report of another is ignored). */
    isCurrent: ({ context, event }) => event.index === context.current,
    wasCancelled: ({ event }) => event.cancelled,
    failed: ({ event }) => !event.ok,
    /** With one deadline for the call, a cell's timeout uses it up (also when the cell caught the interrupt). */
    usedTheCallsTime: ({ context, event }) => context.budget === "call" && event.timedOut,
    wasLast: ({ context }) => context.current + 1 >= context.cells,
    /** The next cell is already running (started with this one, in one request). */
    nextStarted: ({ event }) => event.continued === true,
    deadlinePassed: ({ context, event }) =>
      context.budget === "call" && context.deadlineAt !== undefined && event.at >= context.deadlineAt,
  },
}).createMachine({
  id: "notebookCall",
  context: ({ input }) => ({
    ...input,
    statuses: Array.from({ length: input.cells }, () => "not_run" as const),
    current: 0,
    timedOut: false,
    cancelled: false,
    lost: false,
  }),
  initial: "running",
  states: {
    running: {
      description: "A cell runs (the call's cells run in order); the cells after it wait, not run yet.",
      entry: ["markRunning", { type: "startCell", params: ({ context }) => ({ index: context.current }) }],
      on: {
        "cell.ended": [
          { guard: not("isCurrent") },
          { guard: "wasCancelled", target: "cancelled", actions: "recordEnd" },
          { guard: "failed", target: "stopped", actions: "recordEnd" },
          { guard: "usedTheCallsTime", target: "timedOut", actions: "recordEnd" },
          { guard: "wasLast", target: "completed", actions: "recordEnd" },
          // Not re-entered: the next cell runs already, so it is marked running and not started again.
          { guard: "nextStarted", actions: ["recordEnd", "advance", "markRunning"] },
          { guard: "deadlinePassed", target: "timedOut", actions: ["recordEnd", "noteOutOfTime"] },
          { target: "running", reenter: true, actions: ["recordEnd", "advance"] },
        ],
      },
    },
    completed: { type: "final", description: "Every cell ran and completed." },
    stopped: {
      type: "final",
      description: "A cell failed: the cells after it were not run (state changed before the failure stays).",
    },
    cancelled: {
      type: "final",
      description: "The call was cancelled while a cell ran: the cells after it were not run.",
    },
    timedOut: {
      type: "final",
      description:
        "The call's time ran out (a cell's timeout, or its deadline before the next cell could start): the cells " +
        "after were not run.",
    },
  },
  output: ({ context }) => ({
    statuses: context.statuses,
    timedOut: context.timedOut,
    cancelled: context.cancelled,
    lost: context.lost,
  }),
});
