// Tool calls through a real Pi session (the faux model, offline), run on demand: `source scripts/env.sh && node
// bench/pi.ts [--quick]`. A figure is Pi's own: from its `tool_execution_start` event to its `tool_execution_end`
// for the call (Pi's dispatch, the extension, the supervisor, the runner and back; the model's turns are outside).
// eval with one trivial js cell, warm (goal p50 <= 0.5 ms, issue 15), beside code_execution in a warm Python session.
import { performance } from "node:perf_hooks";
import { fauxAssistantMessage, fauxToolCall } from "@earendil-works/pi-ai";
import { startPi, type PiHarness } from "../test/helpers/pi-session.ts";
import { line } from "./run.ts";

const quick = process.argv.includes("--quick");
const N = (full: number) => (quick ? Math.max(20, Math.floor(full / 5)) : full);

/** Runs `n` calls of `tool` with `args` in one assistant turn; returns each call's start-to-end time in ms. */
async function timedCalls(pi: PiHarness, tool: string, args: Record<string, unknown>, n: number): Promise<number[]> {
  const starts = new Map<string, number>();
  const times: number[] = [];
  const unsubscribe = pi.session.subscribe((e: any) => {
    if (e.type === "tool_execution_start") starts.set(e.toolCallId, performance.now());
    if (e.type === "tool_execution_end" && starts.has(e.toolCallId)) {
      times.push(performance.now() - starts.get(e.toolCallId)!);
      if (e.isError) throw new Error(`${tool} failed: ${JSON.stringify(e.result).slice(0, 400)}`);
    }
  });
  try {
    pi.faux.setResponses([
      fauxAssistantMessage(
        Array.from({ length: n }, () => fauxToolCall(tool, args as never)),
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("done"),
    ]);
    await pi.session.prompt("go");
  } finally {
    unsubscribe();
  }
  return times;
}

process.env.PI_CODE_EXECUTION_TOOLS = "code_execution,eval";
const pi = await startPi();
try {
  await timedCalls(pi, "eval", { cells: [{ language: "js", code: "0" }] }, 20);
  line(
    "eval, one trivial js cell, warm (goal 0.5 ms)",
    await timedCalls(pi, "eval", { cells: [{ language: "js", code: "1" }] }, N(500)),
  );
  await timedCalls(pi, "code_execution", { code: "0", session: "bench" }, 20);
  line(
    "code_execution in a warm Python session",
    await timedCalls(pi, "code_execution", { code: "1", session: "bench" }, N(500)),
  );
} finally {
  await pi.dispose();
}
