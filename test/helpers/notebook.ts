// Calling any tool from the scripted model, one call per turn (or all in one batch), and reading the results.
import { fauxAssistantMessage, fauxToolCall, type FauxResponseStep } from "@earendil-works/pi-ai";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before } from "node:test";
import { startPi, type PiHarness, type ToolResultMessage } from "./pi-session.ts";
import { tempDir } from "./temp-dir.ts";

const Database = createRequire(import.meta.url)("better-sqlite3");

export async function callAs(
  pi: PiHarness,
  calls: [tool: string, args: Record<string, unknown>][],
  opts: { batch?: boolean } = {},
): Promise<ToolResultMessage[]> {
  const before = pi.toolResults().length;
  const steps: FauxResponseStep[] = opts.batch
    ? [
        fauxAssistantMessage(
          calls.map(([t, a]) => fauxToolCall(t, a as never)),
          { stopReason: "toolUse" },
        ),
      ]
    : calls.map(([t, a]) => fauxAssistantMessage([fauxToolCall(t, a as never)], { stopReason: "toolUse" }));
  steps.push(fauxAssistantMessage("done"));
  pi.faux.setResponses(steps);
  await pi.session.prompt("run it");
  return pi.toolResults().slice(before);
}

/** An eval cell of each language, as the model writes it. */
export const jsCell = (code: string, extra: Record<string, unknown> = {}) => ({ language: "js", code, ...extra });
export const pyCell = (code: string, extra: Record<string, unknown> = {}) => ({ language: "py", code, ...extra });

/** One eval call of `cells`, from the scripted model: its result. */
export async function evalCall(pi: PiHarness, ...cells: Record<string, unknown>[]): Promise<ToolResultMessage> {
  const [r] = await callAs(pi, [["eval", { cells }]]);
  return r!;
}

export interface JournalRunRow {
  status: string;
  images: number;
  json_outputs: number;
}

/** The journal's runs of one tool call of `surface`, oldest first. The journal writes after the result, so this waits
 * (up to 2 s) for `atLeast` rows: asking for one more than expected checks that no more come. */
export async function journalRuns(
  journal: string,
  surface: string,
  toolCallId: string,
  atLeast: number,
): Promise<JournalRunRow[]> {
  for (let i = 0; ; i++) {
    let rows: JournalRunRow[] = [];
    try {
      const db = new Database(journal, { readonly: true, fileMustExist: true });
      rows = db
        .prepare(
          "SELECT status, images, json_outputs FROM runs WHERE surface = ? AND tool_call_id = ? ORDER BY requested_at",
        )
        .all(surface, toolCallId) as JournalRunRow[];
      db.close();
    } catch {
      // not written yet
    }
    if (rows.length >= atLeast || i >= 40) return rows;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A test file's Pi session with only `tools` and its journal in a scratch file: started in a `before` of the file,
 * disposed in an `after`, the environment put back. The promise settles once it started (`before` hooks of a file's
 * root may run side by side: await it in the file's own). */
export function piWithJournal(tools: string): Promise<{ pi: PiHarness; journal: string }> {
  let pi: PiHarness | undefined;
  let saved: string | undefined;
  let started!: (s: { pi: PiHarness; journal: string }) => void;
  let failed!: (e: unknown) => void;
  const ready = new Promise<{ pi: PiHarness; journal: string }>((resolve, reject) => {
    started = resolve;
    failed = reject;
  });
  before(async () => {
    try {
      const journal = join(tempDir("pcs-nb-journal-"), "journal.sqlite");
      saved = process.env.PI_CODE_EXECUTION_JOURNAL;
      process.env.PI_CODE_EXECUTION_JOURNAL = journal;
      process.env.PI_CODE_EXECUTION_TOOLS = tools;
      pi = await startPi();
      started({ pi, journal });
    } catch (e) {
      failed(e);
      throw e;
    }
  });
  after(async () => {
    await pi?.dispose();
    delete process.env.PI_CODE_EXECUTION_TOOLS;
    if (saved === undefined) delete process.env.PI_CODE_EXECUTION_JOURNAL;
    else process.env.PI_CODE_EXECUTION_JOURNAL = saved;
  });
  return ready;
}
