// The per-language seam of the `eval` tool: one backend per cell language. A backend runs one cell and reports
// how it went; the tool owns ordering, skipping, the text and details. Python cells run in the notebook session
// (extension/eval/python.ts), JavaScript cells in the JavaScript session (extension/eval/js.ts); a language disabled
// in settings is a tool error naming it.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { RunTools } from "../../host/index.ts";
import type { RunResult } from "../../host/index.ts";
import type { DisplayCollector } from "../display/collector.ts";

export type EvalLanguage = "py" | "js";

export const LANGUAGE_NAMES: Record<EvalLanguage, string> = { py: "Python", js: "JavaScript" };

export interface EvalCellInput {
  /** 0-based position in the call. */
  index: number;
  count: number;
  code: string;
  title?: string;
  timeoutMs: number;
  /** Wipe this language's state before the cell (other languages keep theirs). */
  reset: boolean;
}

/** What one eval call gives every backend. */
export interface EvalCallContext {
  ctx: ExtensionContext;
  toolCallId: string;
  signal?: AbortSignal;
  tools?: RunTools;
  display: DisplayCollector;
  /** The cell's newest output, for live updates. */
  onOutput?: (text: string) => void;
}

export interface EvalCellOutcome {
  status: "complete" | "error";
  /** Everything the cell printed, displayed, returned and raised, in order. */
  output: string;
  exitCode: number;
  durationMs: number;
  cancelled: boolean;
  timedOut: boolean;
  /** The backend's state is gone (a killed or dead kernel). */
  lost: boolean;
  /** The supervisor runs the cell made (the journal records them); none for backends outside the supervisor. */
  runs: RunResult[];
}

export interface EvalBackend {
  language: EvalLanguage;
  /** Why cells of this language cannot run now, or undefined when they can. */
  unavailable(): string | undefined;
  runCell(cell: EvalCellInput, call: EvalCallContext): Promise<EvalCellOutcome>;
}
