// The `eval` tool (oh-my-pi compatible): cells in Python or JavaScript, each language with its own persistent
// state; Python cells run in the notebook session, JavaScript cells through their backend (extension/eval/).
// Cells run in order; after the first error the rest are skipped. Each cell's timeout is a work budget.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import type { CodeEnvironment } from "../environment.ts";
import { createRunTools, outerUsage } from "../shared/calls.ts";
import { withCompletion } from "../shared/completion.ts";
import type { NestedCallRecord } from "../../machines/tool-events.ts";
import { DisplayCollector } from "../shared/display/collector.ts";
import { evalRenderers } from "../shared/notebook/render.ts";
import { throttled } from "../shared/notebook/updates.ts";
import { batchEnd } from "../shared/notebook/python-cells.ts";
import { prepareEvalDirs, runNotebookCall, type BackendInfo, type JournalLink } from "../../host/index.ts";
import { backendDetails, type BackendMark } from "../shared/backend-mark.ts";
import { LANGUAGE_NAMES, type EvalBackend, type EvalCellOutcome, type EvalLanguage } from "./backend.ts";
import { ORCHESTRATION_HELP, withAgents } from "./agents.ts";
import { StatusEvents } from "./status.ts";
import { preludeDirs, withPrelude } from "./prelude.ts";
import { truncateEvalText, type EvalOutputMeta } from "./truncation.ts";
import type { CellEnd, CellStatus } from "../../machines/notebook-call.ts";
import { mark } from "../../lib/marks.ts";

export const DEFAULT_EVAL_TIMEOUT_S = 30;
export const MAX_EVAL_TIMEOUT_S = 3600;

const DESCRIPTION = [
  'Run code cells in persistent kernels: `language: "py"` (Python) or `"js"` (JavaScript). State persists per',
  "language across cells and calls; `reset: true` on a cell wipes only that language's state first. Cells run in",
  "order; after the first error the rest are skipped (earlier state stays). Top-level `await` works. Each cell's",
  `\`timeout\` (whole seconds, default ${DEFAULT_EVAL_TIMEOUT_S}, 1..${MAX_EVAL_TIMEOUT_S}) counts its own work only: time spent awaiting a tool call or`,
  "completion() is not counted. In Python: `display(obj)` shows images, markdown, HTML and JSON (the last expression too);",
  "`read(path, offset=1, limit=None)`, `write(path, content)`, `env(key=None, value=None)` and `output(*ids)` are",
  "synchronous helpers (`local://x` is the session's scratch directory; output() reads saved outputs by id);",
  "`tool.<name>(...)` (or `await <name>(...)`) calls Pi tools; `completion(prompt, schema=...)` asks the model one stateless question.",
  "In JavaScript (Node): `return` works too and the trailing value shows (objects as JSON); `display(value)`,",
  "`await read(path, offset?, limit?)`, `await write(path, content)`, `env(key?, value?)`, `await output(...ids)`, `await completion(prompt, { schema })` and",
  "`await tool.<name>({...})` for Pi tools; `import` resolves from the working directory (local files reload each cell).",
  "Do not shell out to `python -c` or `node -e` for ad-hoc code; use this tool.",
].join(" ");

export interface EvalToolLinks {
  environment: CodeEnvironment;
  journal: JournalLink;
  backends: Record<EvalLanguage, EvalBackend>;
  /** Where the cells run (the host's backend), for marking a sandboxed or remote result. */
  backend?: () => BackendInfo | undefined;
}

export interface EvalCellDetails {
  index: number;
  title?: string;
  language: EvalLanguage;
  code: string;
  status: "pending" | "running" | "complete" | "error";
  output: string;
  durationMs: number;
  exitCode?: number;
  statusEvents: unknown[];
  markdown: boolean;
}

/** oh-my-pi's names for a cell's status: a cancelled cell is an error there too. */
const EVAL_STATUS: Record<CellStatus, EvalCellDetails["status"]> = {
  not_run: "pending",
  running: "running",
  ok: "complete",
  error: "error",
  cancelled: "error",
};

export interface EvalDetails {
  cells: EvalCellDetails[];
  language: EvalLanguage;
  languages: EvalLanguage[];
  jsonOutputs: unknown[];
  statusEvents: unknown[];
  isError: boolean;
  /** Set when the text was truncated: what was kept, and the artifact with the whole text. */
  meta?: EvalOutputMeta;
  /** Where the cells ran, when not on this machine. */
  backend?: BackendMark;
}

export function registerEvalTool(pi: ExtensionAPI, links: EvalToolLinks): void {
  pi.registerTool({
    ...evalRenderers,
    name: "eval",
    label: "Eval",
    description: `${DESCRIPTION} ${ORCHESTRATION_HELP}`,
    promptSnippet: "Run Python (or JavaScript) cells in persistent kernels, with display() and completion()",
    parameters: Type.Object(
      {
        cells: Type.Array(
          Type.Object(
            {
              language: Type.Union([Type.Literal("py"), Type.Literal("js")], {
                description: '"py" for Python, "js" for JavaScript.',
              }),
              code: Type.String({ description: "The cell's code, verbatim." }),
              title: Type.Optional(Type.String({ description: "A short label for the transcript." })),
              timeout: Type.Optional(
                // A number, not an integer: Pi's validator would round 1.5 to 1; execute() refuses a fraction.
                Type.Number({
                  minimum: 1,
                  maximum: MAX_EVAL_TIMEOUT_S,
                  description: `Whole seconds of work, 1..${MAX_EVAL_TIMEOUT_S} (default ${DEFAULT_EVAL_TIMEOUT_S}); out of range is refused.`,
                }),
              ),
              reset: Type.Optional(Type.Boolean({ description: "Wipe this cell's language state before it runs." })),
            },
            { additionalProperties: false },
          ),
          { minItems: 1, description: "Cells, run in order." },
        ),
      },
      { additionalProperties: false },
    ),
    executionMode: "sequential",
    async execute(toolCallId, params, signal, onUpdate, ctx) {
      mark("tool.execute");
      const summary = {
        cells: params.cells.map((c) => ({ language: c.language, codeBytes: Buffer.byteLength(c.code) })),
      };
      return links.journal.record("eval", toolCallId, summary, ctx, async (note) => {
        // Pi validates the schema first; a call that bypasses it (an extension's executeTool) is refused here too.
        const badTimeout = params.cells.findIndex(
          (c) =>
            c.timeout !== undefined &&
            !(Number.isInteger(c.timeout) && c.timeout >= 1 && c.timeout <= MAX_EVAL_TIMEOUT_S),
        );
        if (badTimeout >= 0)
          throw new Error(
            `cell ${badTimeout + 1}: timeout ${JSON.stringify(params.cells[badTimeout].timeout)} is out of range: it must be a whole number of seconds from 1 to ${MAX_EVAL_TIMEOUT_S}. No cell was run.`,
          );
        // Every language is checked first: a cell whose backend is missing or disabled runs nothing at all.
        const used = [...new Set(params.cells.map((c) => c.language))];
        const missing = (
          await Promise.all(used.map(async (l) => [l, await links.backends[l]?.unavailable(ctx.cwd)] as const))
        ).filter(([, why]) => why);
        if (missing.length)
          throw new Error(
            missing.map(([l, why]) => `${LANGUAGE_NAMES[l]} cells (language "${l}") cannot run: ${why}.`).join(" ") +
              " No cell was run.",
          );
        const settings = links.environment.settings();
        // Images shown to the model are content blocks of their own; only those not shown leave a line in the text.
        const display = new DisplayCollector(settings.values.display, { quietShown: true });
        const n = params.cells.length;
        const languages = [...new Set(params.cells.map((c) => c.language))];
        const cells: EvalCellDetails[] = params.cells.map((c, index) => ({
          index,
          ...(c.title ? { title: c.title } : {}),
          language: c.language,
          code: c.code,
          status: "pending",
          output: "",
          durationMs: 0,
          statusEvents: [],
          markdown: false,
        }));
        const details: EvalDetails = {
          cells,
          language: params.cells[0].language,
          languages,
          jsonOutputs: [],
          statusEvents: [],
          isError: false,
          ...backendDetails(links.backend?.()),
        };
        const update = onUpdate
          ? throttled(() =>
              onUpdate({
                content: [{ type: "text", text: evalText(cells, 0) }],
                // A snapshot: the cells go on changing after this update is sent.
                details: {
                  ...details,
                  cells: cells.map((c) => ({ ...c, statusEvents: status.forCell(c.index) })),
                  jsonOutputs: display.jsonOutputs(),
                  statusEvents: status.overall(),
                } as never,
              }),
            )
          : undefined;
        const dirs = preludeDirs(ctx);
        await prepareEvalDirs(dirs);
        // Status events (log(), phase(), agent(), tool calls) are details of the cell running when they happen.
        const status = new StatusEvents();
        display.onStatus = (i, event) => status.add(i, event);
        const tools = status.observe(
          withPrelude(
            withAgents(
              withCompletion(createRunTools(pi, ctx, toolCallId), ctx, () => settings.values.completionModels),
              {
                pi,
                ctx,
                limits: () => links.environment.settings().values.eval,
                onStatus: (event) => status.add(status.current, event),
              },
            ),
            dirs,
          ),
        );
        status.onChange = () => update?.();
        const nested: NestedCallRecord[] = [];
        let last: EvalCellOutcome | undefined;
        /** What the call keeps of a cell that ended. */
        const finish = (outcome: EvalCellOutcome): CellEnd => {
          const cell = cells[outcome.index];
          cell.output = outcome.output;
          cell.durationMs = outcome.durationMs;
          cell.exitCode = outcome.exitCode;
          cell.markdown = display.markdownIn(outcome.index);
          cell.statusEvents = status.forCell(outcome.index);
          last = outcome;
          return {
            ok: outcome.status === "complete",
            cancelled: outcome.cancelled,
            timedOut: outcome.timedOut,
            lost: outcome.lost,
          };
        };
        // Consecutive cells of a language whose backend batches go to it together (one round trip), up to a cell
        // that resets (a run of its own) or has a PEP 723 block (preparation reads a run's first code only).
        const runCell = async (
          first: number,
          continued: (index: number, end: CellEnd) => void,
        ): Promise<CellEnd & { index: number }> => {
          const language = params.cells[first].language;
          const backend = links.backends[language];
          const end = backend.batches
            ? batchEnd(params.cells, first, (cell) => cell.language === language && cell.reset !== true)
            : first;
          const inputs = params.cells.slice(first, end + 1).map((input, k) => ({
            index: first + k,
            count: n,
            code: input.code,
            ...(input.title ? { title: input.title } : {}),
            timeoutMs: (input.timeout ?? DEFAULT_EVAL_TIMEOUT_S) * 1000,
            reset: input.reset === true,
          }));
          status.current = first;
          const outcome = await backend.runCells(
            inputs,
            {
              ctx,
              toolCallId,
              display,
              tools,
              ...(signal ? { signal } : {}),
              ...(update
                ? {
                    onOutput: (i: number, text: string) => {
                      cells[i].output = text;
                      update();
                    },
                  }
                : {}),
            },
            (ended) => {
              // A cell of the batch completed and the next one runs: its status events are the next one's.
              const cellEnd = finish(ended);
              status.current = ended.index + 1;
              continued(ended.index, cellEnd);
            },
          );
          for (const r of outcome.runs) {
            nested.push(...(r.outcome.nestedCalls ?? []));
            note.runId ??= r.outcome.runId;
            links.journal.run(r, { toolCallId, surface: "eval", ...display.countsIn(first, outcome.index) });
          }
          return { ...finish(outcome), index: outcome.index };
        };
        // The order, the statuses and stop-after-failure: machines/notebook-call.ts (each cell its own budget).
        const call = await runNotebookCall({
          cells: n,
          budget: "cell",
          runCell,
          onStatuses: (statuses) => {
            statuses.forEach((s, i) => (cells[i].status = EVAL_STATUS[s]));
            if (statuses.includes("running")) update?.now();
          },
        });
        let stop: string | undefined;
        if (call.ending === "cancelled" || call.ending === "stopped") {
          const i = call.statuses.findLastIndex((s) => s !== "not_run");
          const title = params.cells[i].title;
          const label = `cell ${i + 1}/${n}${title ? ` (${title})` : ""}`;
          const later = i + 1 < n;
          stop =
            call.ending === "cancelled"
              ? `[${label} was cancelled${later ? "; later cells were skipped" : ""}]`
              : `[${label} failed${later ? "; later cells were skipped" : ""}; state from earlier cells is kept${last?.lost ? ", except this language's kernel, which was lost" : ""}]`;
        }
        update?.stop();
        await display.settle();
        details.jsonOutputs = display.jsonOutputs();
        details.statusEvents = status.overall();
        details.isError = stop !== undefined;
        const imageCount = display.imageContent().length;
        let text = evalText(cells, imageCount);
        const notes = [...display.trailingNotes(), ...(stop ? [stop] : [])];
        if (notes.length) text = `${text}\n\n${notes.join("\n")}`;
        const usage = outerUsage(nested);
        const out = await truncateEvalText(text, dirs);
        if (out.meta) details.meta = out.meta;
        return {
          content: [{ type: "text" as const, text: out.text }, ...display.imageContent()],
          details,
          ...(usage ? { usage: usage as never } : {}),
          ...(details.isError ? { isError: true } : {}),
        };
      });
    },
  });
}

/** oh-my-pi's text: each cell's output, prefixed `[i/n] title` when there are several; a note when nothing shows. */
export function evalText(cells: EvalCellDetails[], images: number): string {
  const ran = cells.filter((c) => c.status !== "pending");
  const parts: string[] = [];
  for (const c of ran) {
    const out = c.output.trim();
    if (cells.length > 1)
      parts.push(`[${c.index + 1}/${cells.length}]${c.title ? ` ${c.title}` : ""}${out ? `\n${out}` : ""}`);
    else if (out) parts.push(out);
  }
  const any = ran.some((c) => c.output.trim());
  if (!any) {
    const none = images > 0 ? `(displayed ${images} image(s); no text output)` : "(no output)";
    return cells.length > 1 ? [...parts, none].join("\n\n") : none;
  }
  return parts.join("\n\n");
}
