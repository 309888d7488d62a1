// Calling any tool from the scripted model, one call per turn (or all in one batch), and reading the results.
import { fauxAssistantMessage, fauxToolCall, type FauxResponseStep } from "@earendil-works/pi-ai";
import { createRequire } from "node:module";
import type { PiHarness, ToolResultMessage } from "./pi-session.ts";

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
