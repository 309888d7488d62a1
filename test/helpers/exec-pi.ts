// The shell tools through a real Pi session, as test/extension/shell/exec-pi.test.ts and
// test/extension/shell/exec-peer-pi.test.ts drive them: a Pi session with code_execution and the shells for the file,
// and turns of scripted tool calls.
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { startPi, textOf, type PiHarness, type ToolResultMessage } from "./pi-session.ts";

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
