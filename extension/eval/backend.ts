// The per-language seam of the `eval` tool: one backend per cell language. A backend runs a cell (the Python one
// also several consecutive cells in one request) and reports how each went; the tool owns ordering, skipping, the
// text and details. Python cells run in the notebook session
// (extension/eval/python-backend.ts), JavaScript cells in the JavaScript session (extension/eval/js-backend.ts); a
// language disabled in settings is a tool error naming it.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { OutputMark, RunOutput, RunTools } from "../../host/index.ts";
import type { RunResult } from "../../host/index.ts";
import type { CellRef } from "../../machines/events.ts";
import type { DisplayCollector } from "../shared/display/collector.ts";

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
  /** Cell `index`'s newest output, for live updates. */
  onOutput?: (index: number, text: string) => void;
}

export interface EvalCellOutcome {
  /** The cell's 0-based position in the call. */
  index: number;
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
  /** Why cells of this language cannot run now (disabled, no interpreter), or undefined when they can: checked for
   * every language of a call before any cell runs. */
  unavailable(cwd: string): Promise<string | undefined>;
  /** Whether `runCells` takes several cells: they go to the runtime in one request (one round trip). */
  batches: boolean;
  /** Runs `cells` (consecutive cells of this language; one unless the backend `batches`) in order, each only when
   * the one before it completed. Each but the last one run is reported through `ended` as it ends (the next one has
   * started); the last one run's outcome resolves. */
  runCells(
    cells: readonly EvalCellInput[],
    call: EvalCallContext,
    ended: (outcome: EvalCellOutcome) => void,
  ): Promise<EvalCellOutcome>;
}

/** Why a language's cells cannot run while settings disable it. */
export function disabledReason(language: EvalLanguage): string {
  return `the ${LANGUAGE_NAMES[language]} backend is disabled (setting eval.${language} = false or PI_CODE_EXECUTION_EVAL_${language.toUpperCase()}=0)`;
}

const FLAG_VALUES: Record<string, boolean> = {
  "1": true,
  true: true,
  yes: true,
  on: true,
  "0": false,
  false: false,
  no: false,
  off: false,
};

/** oh-my-pi's `PI_PY` / `PI_JS`: set, it overrides the `eval.py` / `eval.js` setting. Why the language cannot run,
 * or undefined when it can; a value that is not a boolean is refused rather than guessed. */
export function enabledReason(language: EvalLanguage, setting: boolean, env: NodeJS.ProcessEnv): string | undefined {
  const name = `PI_${language.toUpperCase()}`;
  const raw = env[name];
  if (raw !== undefined && raw.trim() !== "") {
    const flag = FLAG_VALUES[raw.trim().toLowerCase()];
    if (flag === undefined) return `${name}=${JSON.stringify(raw)} is not a boolean (use 1 or 0)`;
    return flag ? undefined : `the ${LANGUAGE_NAMES[language]} backend is disabled (${name}=${raw.trim()})`;
  }
  return setting ? undefined : disabledReason(language);
}

/** The cell as its run names it (1-based), for the inspector and the event log. */
export function cellRef(cell: EvalCellInput, language: EvalLanguage): CellRef {
  return { index: cell.index + 1, count: cell.count, language, ...(cell.title ? { title: cell.title } : {}) };
}

/** What a run of cells reports back to the call: its tools, abort signal, live output and displays, each for the
 * cell running (`at()`, 0-based in the call; with `since()`, where that cell's output starts in the run's). */
export function cellCallbacks(
  call: EvalCallContext,
  at: () => number,
  since: () => OutputMark | undefined = () => undefined,
) {
  return {
    ...(call.tools ? { tools: call.tools } : {}),
    ...(call.signal ? { signal: call.signal } : {}),
    ...(call.onOutput
      ? {
          onOutput: (out: RunOutput) => {
            const from = since();
            call.onOutput!(at(), joined(from ? out.previewSince(from) : out.preview()));
          },
        }
      : {}),
    onDisplay: (item: Parameters<ReturnType<DisplayCollector["forCell"]>>[0]) => call.display.forCell(at())(item),
  };
}

/** stdout, then stderr on a line of its own. */
export function joined(p: { stdout: string; stderr: string }): string {
  if (!p.stderr) return p.stdout;
  return `${p.stdout}${p.stdout && !p.stdout.endsWith("\n") ? "\n" : ""}${p.stderr}`;
}
