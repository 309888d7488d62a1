// A batch run's cells (RunRequestInput's `batch`, docs/protocol.md "Notebook cells"): the runner ends each cell but
// the last one run with a `cell` frame, after draining its output, so the run's output up to that frame is that
// cell's. This keeps where each cell's output ends and what it showed, and gives the caller each cell as it ends and
// every cell with the result.
import type { CellShown } from "../actors/runner/display-frames.ts";
import type { OutputMark, RunOutput } from "../lib/run-output.ts";
import type { RunOutcome } from "../machines/events.ts";
import type { CellPart, RunCallbacks } from "./requests.ts";

const START: OutputMark = { stdout: 0, stderr: 0 };

export class BatchCells {
  private readonly parts: CellPart[] = [];
  /** Where the running cell's output starts, and when it started. */
  private from = START;
  private since: number;
  private readonly output: RunOutput;
  private readonly onCell: RunCallbacks["onCell"];

  constructor(output: RunOutput, requestedAt: number, onCell?: RunCallbacks["onCell"]) {
    this.output = output;
    this.since = requestedAt;
    this.onCell = onCell;
  }

  /** The running cell ended (a `cell` frame) at `at`; the next one starts. */
  ended(shown: CellShown, at: number): void {
    const part = this.part(this.output.mark(), at, {
      error: shown.error,
      exitCode: shown.exitCode,
      ...(shown.value !== undefined ? { value: shown.value } : {}),
      ...(shown.exception !== undefined ? { exception: shown.exception } : {}),
    });
    this.parts.push(part);
    this.onCell?.(this.parts.length - 1, part, this.from);
  }

  /** Every cell the run ran: those that ended with a `cell` frame, and the last, which ended with the run. */
  all(outcome: RunOutcome, value: string | undefined, exception: string | undefined): CellPart[] {
    const last = this.part(this.output.mark(), outcome.finishedAt, {
      error: outcome.status === "success" ? null : outcome.status,
      exitCode: outcome.exitCode ?? (outcome.status === "success" ? 0 : 1),
      ...(value !== undefined ? { value } : {}),
      ...(exception !== undefined ? { exception } : {}),
    });
    return [...this.parts, last];
  }

  private part(to: OutputMark, at: number, end: Omit<CellPart, "stdout" | "stderr" | "durationMs">): CellPart {
    const part: CellPart = {
      stdout: this.output.between("stdout", this.from.stdout, to.stdout),
      stderr: this.output.between("stderr", this.from.stderr, to.stderr),
      durationMs: Math.max(0, at - this.since),
      ...end,
    };
    this.from = to;
    this.since = at;
    return part;
  }
}
