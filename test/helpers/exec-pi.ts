// The shell tools through a real Pi session, as test/extension/shell/exec-pi.test.ts,
// test/extension/shell/exec-peer-pi.test.ts and test/extension/shell/exec-ui.test.ts drive them: a Pi session with
// code_execution and the shells for the file, turns of scripted tool calls, and the pids of live sessions.
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import assert from "node:assert/strict";
import { startPi, textOf, type PiHarness, type ToolResultMessage } from "./pi-session.ts";
import { waitUntil } from "./procs.ts";

export type Call = [string, Record<string, unknown>];

/** A Pi session with code_execution and the shells on (PI_CODE_EXECUTION_TOOLS while the file runs). */
export async function startPiWithShells(): Promise<PiHarness> {
  process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,exec";
  return startPi();
}

export async function disposePiWithShells(pi: PiHarness | undefined): Promise<void> {
  await pi?.dispose();
  delete process.env.PI_CODE_EXECUTION_TOOLS;
}

/** One prompt: each inner list is one assistant message of tool calls (run together), then "done", then
 * `extraReplies` acknowledgements (for wake-ups that start turns of their own). */
export async function turns(h: PiHarness, batches: Call[][], extraReplies = 0): Promise<ToolResultMessage[]> {
  const before = h.toolResults().length;
  h.faux.setResponses([
    ...batches.map((b) =>
      fauxAssistantMessage(
        b.map(([n, a]) => fauxToolCall(n, a as never)),
        { stopReason: "toolUse" },
      ),
    ),
    fauxAssistantMessage("done"),
    ...Array.from({ length: extraReplies }, () => fauxAssistantMessage("ack")),
  ]);
  await h.session.prompt("go");
  return h.toolResults().slice(before);
}

export const one = async (h: PiHarness, name: string, args: Record<string, unknown>, extra = 0) =>
  (await turns(h, [[[name, args]]], extra))[0]!;

/** A result's envelope: its text before the `---` line. */
export const header = (r: ToolResultMessage) => textOf(r).split("\n---\n")[0];

/** The pids of live sessions `ids`, in order. A session whose spawn outlasted its call's window has no pid in that
 * result (the product leaves it out until the process exists); list_sessions shows it once the spawn is done, so this
 * polls list_sessions until every one has it, each live meanwhile. Listing reports every exited session once and
 * forgets it: a caller that needs an exit left unobserved must not list while one may have happened. */
export async function livePids(h: PiHarness, ids: readonly number[]): Promise<number[]> {
  let pids: (number | undefined)[] = [];
  const known = await waitUntil(async () => {
    const [list] = await turns(h, [[["list_sessions", {}]]]);
    const listed = new Map<number, any>(list.details.sessions.map((s: any) => [s.session_id, s]));
    for (const id of ids) assert.equal(listed.get(id)?.running, true, `session ${id} is live`);
    pids = ids.map((id) => listed.get(id).pid as number | undefined);
    return pids.every((p) => p !== undefined);
  }, 60_000);
  assert.ok(known, `the pids of sessions ${ids.join(", ")}: ${pids.join(", ")}`);
  return pids as number[];
}
