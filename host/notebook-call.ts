// The adapter of one notebook call's machine (machines/notebook-call.ts), shared by `python` and `eval`: it runs the
// machine privately, starts each cell the machine names through the tool's `runCell` (a run of the cell's session),
// and reports the cell's end back as an event stamped with this clock. The tool keeps what a cell is (its request,
// its text and details, its journal row); the machine keeps the order, the statuses, the deadline and when to stop.
import { createActor, type AnyActorRef } from "xstate";
import {
  notebookCallMachine,
  type CellEnd,
  type CellStatus,
  type NotebookCallEnding,
  type NotebookCallInput,
  type NotebookCallOutput,
} from "../machines/notebook-call.ts";
import { mark } from "../lib/marks.ts";

export interface NotebookCallSpec extends NotebookCallInput {
  /** Runs cell `index` (0-based) and says how it ended. A rejection ends the call with that error. It may run the
   * cells after it in the same request (a batch): each of those but the last is reported through `continued` as it
   * ends (the next one already running), and the last one's end resolves with its `index`. */
  runCell(index: number, continued: (index: number, end: CellEnd) => void): Promise<CellEnd & { index?: number }>;
  /** Every change of the cells' statuses (a cell started or ended), in order. */
  onStatuses?(statuses: readonly CellStatus[]): void;
}

export interface NotebookCallResult extends NotebookCallOutput {
  ending: NotebookCallEnding;
}

/** Who starts each actor's cells: the machine is provided once (a `provide` per call clones it, ~50 us here), and
 * its action finds its call's starter by the actor. */
const starters = new WeakMap<AnyActorRef, (index: number) => void>();
const notebookCall = notebookCallMachine.provide({
  actions: {
    startCell: ({ self }, { index }: { index: number }) => {
      const start = starters.get(self);
      if (!start) throw new Error("host/notebook-call.ts: a notebook call started without its starter");
      start(index);
    },
  },
});

export function runNotebookCall(spec: NotebookCallSpec): Promise<NotebookCallResult> {
  mark("notebook.start");
  const input: NotebookCallInput = { cells: spec.cells, budget: spec.budget, deadlineAt: spec.deadlineAt };
  return new Promise((resolve, reject) => {
    const actor = createActor(notebookCall, { input });
    const continued = (index: number, end: CellEnd) =>
      actor.send({ type: "cell.ended", at: Date.now(), index, ...end, continued: true });
    starters.set(actor, (index) => {
      mark("notebook.cell");
      // A cell that throws at once ends the call as one that rejects.
      new Promise<CellEnd & { index?: number }>((ran) => ran(spec.runCell(index, continued))).then(
        (end) => actor.send({ type: "cell.ended", at: Date.now(), ...end, index: end.index ?? index }),
        (error: unknown) => {
          actor.stop();
          reject(error);
        },
      );
    });
    // Each step of the machine changes the statuses (a cell started, or one ended): each is reported.
    actor.subscribe({
      next: (snapshot) => {
        spec.onStatuses?.(snapshot.context.statuses);
        if (snapshot.status !== "done") return;
        mark("notebook.end");
        resolve({ ending: snapshot.value as NotebookCallEnding, ...(snapshot.output as NotebookCallOutput) });
      },
      error: reject,
    });
    actor.start();
  });
}
