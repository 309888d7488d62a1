// The shared harness of the Pi benches (bench/pi.ts, bench/exec.ts): one prompt whose scripted model makes one tool
// call a turn, and Pi's own span of each call, tool_execution_start -> tool_execution_end.
import { performance } from "node:perf_hooks";
import { fauxAssistantMessage, fauxToolCall, type FauxResponseStep } from "@earendil-works/pi-ai";
import type { PiHarness, ToolResultMessage } from "../test/helpers/pi-session.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `calls` as one prompt, one tool call a turn (after `gapMs` of model think time each); Pi's span of each. */
export async function spans(
  pi: PiHarness,
  calls: [string, Record<string, unknown>][],
  gapMs = 0,
): Promise<{ ms: number[]; results: ToolResultMessage[] }> {
  const starts = new Map<string, number>();
  const ends = new Map<string, number>();
  const off = pi.session.subscribe((e: any) => {
    if (e.type === "tool_execution_start") starts.set(e.toolCallId, performance.now());
    if (e.type === "tool_execution_end") ends.set(e.toolCallId, performance.now());
  });
  const before = pi.toolResults().length;
  const steps: FauxResponseStep[] = calls.map(([name, args]) => {
    const msg = fauxAssistantMessage([fauxToolCall(name, args as never)], { stopReason: "toolUse" });
    return gapMs ? async () => (await sleep(gapMs), msg) : msg;
  });
  pi.faux.setResponses([...steps, fauxAssistantMessage("done")]);
  await pi.session.prompt("bench");
  off();
  const results = pi.toolResults().slice(before);
  if (results.length !== calls.length) throw new Error(`expected ${calls.length} results, got ${results.length}`);
  return { ms: results.map((r) => ends.get(r.toolCallId)! - starts.get(r.toolCallId)!), results };
}
