// Calling any tool from the scripted model, one call per turn (or all in one batch), and reading the results.
import { fauxAssistantMessage, fauxToolCall, type FauxResponseStep } from "@earendil-works/pi-ai";
import type { PiHarness, ToolResultMessage } from "./pi-session.ts";

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
