// The `python` tool (pi-python compatible): cells run in order in the notebook session's persistent namespace;
// a failing cell stops the ones after it; one timeout covers the whole call, escalated as pi-python does
// (SIGINT, a second SIGINT halfway through the grace, then the kill). The text and details keep pi-python's layout.
import { statSync } from "node:fs";
import { resolve } from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import {
  runNotebookCall,
  type CellPart,
  type JournalLink,
  type OutputMark,
  type SupervisorHost,
} from "../../host/index.ts";
import { backendDetails } from "../shared/backend-mark.ts";
import type { CodeEnvironment } from "../environment.ts";
import { createRunTools, outerUsage } from "../shared/calls.ts";
import { withCompletion } from "../shared/completion.ts";
import type { NestedCallRecord } from "../../machines/tool-events.ts";
import {
  batchEnd,
  graceFor,
  lastCellPart,
  PYTHON_GRACE_MS,
  runPyCell,
  verdictOf,
} from "../shared/notebook/python-cells.ts";
import { formatPythonResult, type PythonCellDetails, type PythonDetails } from "./result.ts";
import { DisplayCollector } from "../shared/display/collector.ts";
import { pythonRenderers } from "../shared/notebook/render.ts";
import { throttled } from "../shared/notebook/updates.ts";
import type { CellEnd } from "../../machines/notebook-call.ts";
import { mark } from "../../lib/marks.ts";

export const DEFAULT_PYTHON_TIMEOUT_S = 120;

const DESCRIPTION = [
  "Run Python cells in a persistent interpreter (a notebook kernel): imports, variables, functions and live objects",
  "survive across cells and calls. Cells run in order; the value of a cell's last expression is shown as `=> repr`;",
  "if a cell raises, its traceback is shown and the cells after it do not run (state changed before the error stays).",
  "`display(obj)` shows images, markdown, HTML and JSON. Top-level `await` works; `await <tool>(...)` calls Pi tools.",
  `One \`timeout\` (seconds, default ${DEFAULT_PYTHON_TIMEOUT_S}) covers all cells of the call: on timeout the cell gets`,
  "KeyboardInterrupt (the namespace survives); if it does not stop, the kernel is killed and the namespace is lost (said so).",
  "`reset: true` starts an empty namespace; `cwd` runs this call in another directory. Use cells: [{code: '...'}].",
].join(" ");

const GUIDELINES = [
  "Use python for data transforms, parsing, math and stateful scratch work; split long work into cells so completed setup survives a timeout.",
  "If a python result says the kernel was killed or reset, re-create what you need before relying on earlier variables.",
];

export interface PythonToolLinks {
  getHost: () => SupervisorHost;
  environment: CodeEnvironment;
  journal: JournalLink;
}

export function registerPythonTool(pi: ExtensionAPI, links: PythonToolLinks): void {
  const maxTimeout = links.environment.settings().values.maxTimeout;
  pi.registerTool({
    ...pythonRenderers,
    name: "python",
    label: "Python",
    description: DESCRIPTION,
    promptSnippet: "Run Python cells in a persistent notebook kernel",
    promptGuidelines: GUIDELINES,
    parameters: Type.Object(
      {
        cells: Type.Array(
          Type.Object(
            {
              code: Type.String({ description: "Python source of the cell; its last expression's value is shown." }),
              title: Type.Optional(Type.String({ description: "A short label for the cell." })),
            },
            { additionalProperties: false },
          ),
          { minItems: 1, description: "Cells to run, in order." },
        ),
        timeout: Type.Optional(
          Type.Number({
            description: `Seconds for the whole call (default ${DEFAULT_PYTHON_TIMEOUT_S}; clamped to 1..${maxTimeout}).`,
          }),
        ),
        reset: Type.Optional(Type.Boolean({ description: "Start an empty namespace before the first cell." })),
        cwd: Type.Optional(
          Type.String({
            description:
              "Run this call in this directory (relative to Pi's working directory); it goes first on sys.path.",
          }),
        ),
      },
      { additionalProperties: false },
    ),
    executionMode: "sequential",
    async execute(toolCallId, params, signal, onUpdate, ctx) {
      mark("tool.execute");
      const args = { cells: params.cells.length, ...(params.timeout !== undefined ? { timeout: params.timeout } : {}) };
      return links.journal.record(
        "python",
        toolCallId,
        { ...args, reset: params.reset === true },
        ctx,
        async (note) => {
          const settings = links.environment.settings();
          const max = settings.values.maxTimeout;
          const timeoutS = clamp(params.timeout ?? DEFAULT_PYTHON_TIMEOUT_S, 1, max);
          const chdir = params.cwd ? resolve(ctx.cwd, params.cwd) : ctx.cwd;
          if (params.cwd && !isDirectory(chdir)) throw new Error(`cwd ${chdir} is not a directory; nothing was run.`);
          const host = links.getHost();
          const session = settings.values.notebookSession;
          const display = new DisplayCollector(settings.values.display);
          const cells: PythonCellDetails[] = params.cells.map((c, index) => ({
            index,
            ...(c.title ? { title: c.title } : {}),
            status: "not_run",
            stdout: "",
            stderr: "",
            durationMs: 0,
          }));
          const details: PythonDetails = {
            cells,
            timedOut: false,
            cancelled: false,
            killed: false,
            reset: params.reset === true,
            ...backendDetails(host.backend()),
          };
          const titles = params.cells.map((c) => c.title);
          const update = onUpdate
            ? throttled(() =>
                onUpdate({
                  content: [{ type: "text", text: formatPythonResult(titles, details, true) }],
                  // A snapshot: the cells go on changing after this update is sent.
                  details: { ...details, cells: cells.map((c) => ({ ...c })), partial: true } as never,
                }),
              )
            : undefined;
          const deadlineAt = Date.now() + timeoutS * 1000;
          const graceMs = graceFor(settings, PYTHON_GRACE_MS);
          const tools = withCompletion(
            createRunTools(pi, ctx, toolCallId),
            ctx,
            () => settings.values.completionModels,
          );
          const nested: NestedCallRecord[] = [];
          const runIds: string[] = [];
          // Cells go to the kernel together (one run, one round trip): a cell and those after it up to one with a
          // PEP 723 block (a run of its own: preparation reads the run's first code only). The kernel stops at the
          // first cell that fails or is interrupted; a cell it did not reach is started again by the call's machine.
          const runCell = async (
            first: number,
            continued: (index: number, end: CellEnd) => void,
          ): Promise<CellEnd & { index: number }> => {
            const last = batchEnd(params.cells, first);
            let current = first;
            let from: OutputMark | undefined;
            const fill = (
              i: number,
              part: Pick<CellPart, "stdout" | "stderr" | "durationMs" | "value">,
              ok: boolean,
            ) => {
              const cell = cells[i];
              cell.stdout = bounded(part.stdout);
              cell.stderr = bounded(part.stderr);
              cell.durationMs = part.durationMs;
              if (ok && part.value !== undefined && part.value !== "None") cell.value = part.value;
              Object.assign(cell, display.cellDetails(i));
            };
            const r = await runPyCell(
              {
                code: params.cells[first].code,
                ...(last > first ? { batch: params.cells.slice(first + 1, last + 1).map((c) => c.code) } : {}),
                cell: {
                  index: first + 1,
                  count: params.cells.length,
                  ...(params.cells[first].title ? { title: params.cells[first].title } : {}),
                },
                timeoutMs: deadlineAt - Date.now(),
                reset: first === 0 && params.reset === true,
              },
              {
                host,
                session,
                cwd: ctx.cwd,
                chdir,
                surface: "python",
                graceMs,
                secondInterrupt: true,
                // pi-python: 0 turns the automatic kill off; a wedged cell then waits for /python-restart.
                noKill: graceMs === 0,
                budget: "wall",
                tools,
                ...(signal ? { signal } : {}),
                ...(update
                  ? {
                      onOutput: (out) => {
                        const p = from ? out.previewSince(from) : out.preview();
                        cells[current].stdout = p.stdout;
                        cells[current].stderr = p.stderr;
                        update();
                      },
                    }
                  : {}),
                // A display goes to the cell running when it is shown.
                onDisplay: (item) => display.forCell(current)(item),
                onCell: (k, part, next) => {
                  fill(first + k, part, true);
                  current = first + k + 1;
                  from = next;
                  continued(first + k, { ok: true, cancelled: false, timedOut: false, lost: false });
                },
              },
            );
            runIds.push(r.outcome.runId);
            nested.push(...(r.outcome.nestedCalls ?? []));
            links.journal.run(r, { toolCallId, surface: "python", ...display.countsIn(first, current) });
            const v = verdictOf(r);
            // The last cell run ended with the run.
            fill(current, lastCellPart(r), v.ok);
            if (!v.ok && v.error) cells[current].exception = v.error;
            if (r.outcome.runner)
              details.python = { version: r.outcome.runner.python, executable: r.outcome.runner.executable };
            if (r.outcome.session)
              details.session = {
                name: r.outcome.session.name,
                ordinal: r.outcome.session.ordinal,
                isLost: r.outcome.session.isLost,
              };
            return { index: current, ok: v.ok, cancelled: v.cancelled, timedOut: v.timedOut, lost: v.killed };
          };
          // The order, the statuses, the call's deadline and stop-after-failure: machines/notebook-call.ts.
          const call = await runNotebookCall({
            cells: params.cells.length,
            budget: "call",
            deadlineAt,
            runCell,
            onStatuses: (statuses) => {
              statuses.forEach((status, i) => (cells[i].status = status));
              if (statuses.includes("running")) update?.now();
            },
          });
          details.timedOut = call.timedOut;
          details.cancelled = call.cancelled;
          details.killed = call.lost;
          update?.stop();
          note.runId = runIds[0];
          await display.settle();
          const text = formatPythonResult(titles, details, false);
          const usage = outerUsage(nested);
          const failed = cells.some((c) => c.status !== "ok") || details.killed; // a cell failed, or never ran
          return {
            content: [{ type: "text" as const, text }, ...display.imageContent()],
            details,
            ...(usage ? { usage: usage as never } : {}),
            ...(failed ? { isError: true } : {}),
          };
        },
      );
    },
  });
}

function clamp(n: number, min: number, max: number): number {
  return Number.isFinite(n) ? Math.min(max, Math.max(min, n)) : min;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Details keep at most this many characters of each channel per cell (head and tail). */
const DETAIL_CHARS = 256 * 1024;

function bounded(text: string): string {
  if (text.length <= DETAIL_CHARS) return text;
  const half = DETAIL_CHARS / 2;
  return `${text.slice(0, half)}\n[... ${text.length - 2 * half} characters omitted ...]\n${text.slice(-half)}`;
}
