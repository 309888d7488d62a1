// The shared harness of the Pi benches (bench/pi.ts, bench/exec.ts, bench/pi-js.ts, bench/pi-notebook.ts): one
// prompt whose scripted model makes one tool call a turn, Pi's own span of each call (tool_execution_start -> end),
// and one offline Pi session to run a bench's cases in.
import { performance } from "node:perf_hooks";
import { fauxAssistantMessage, fauxToolCall, type FauxResponseStep } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { startPi, type PiHarness, type ToolResultMessage } from "../test/helpers/pi-session.ts";

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

/** Drops Pi's transcript (the session entries and the agent's messages) and the harness's event list: without
 * compaction Pi keeps the whole conversation, so a long bench measures this extension, not the transcript. */
export function dropTranscript(pi: PiHarness): void {
  const sm = pi.session.sessionManager;
  sm.newSession({ id: sm.getSessionId() });
  pi.session.agent.state.messages = [];
  pi.events.length = 0;
}

/** `spans` in batches of `chunk` calls, each from an empty transcript: Pi clones the whole conversation before every
 * model call, so one long batch would measure the transcript more and more, not the call. */
export async function spansFresh(
  pi: PiHarness,
  calls: [string, Record<string, unknown>][],
  gapMs = 0,
  chunk = 25,
): Promise<{ ms: number[]; results: ToolResultMessage[] }> {
  const out: { ms: number[]; results: ToolResultMessage[] } = { ms: [], results: [] };
  for (let i = 0; i < calls.length; i += chunk) {
    dropTranscript(pi);
    const part = await spans(pi, calls.slice(i, i + chunk), gapMs);
    out.ms.push(...part.ms);
    out.results.push(...part.results);
  }
  return out;
}

/** A bench's cases in one offline Pi session with only `tools` registered and the journal off (`--quick`: fewer). */
export async function benchInPi(
  tools: string,
  cases: (pi: PiHarness, opts: { quick: boolean }) => Promise<void>,
): Promise<void> {
  process.env.PI_CODE_EXECUTION_TOOLS = tools;
  process.env.PI_CODE_EXECUTION_JOURNAL = "off";
  const pi = await startPi();
  try {
    await cases(pi, { quick: process.argv.includes("--quick") });
  } finally {
    await pi.dispose();
  }
}

/** A Pi tool that does nothing: Pi's own floor for a tool call (also the nested-call target). */
export function noopExtension(pi: ExtensionAPI): void {
  pi.registerTool({
    name: "bench_noop",
    label: "noop",
    description: "Does nothing.",
    parameters: Type.Object({}),
    async execute() {
      return { content: [{ type: "text" as const, text: "ok" }], details: undefined };
    },
  });
}

/** One call of each kind the profiling benches time (bench/pi-profile.ts, bench/pi-marks.ts), by name. */
export const warmCalls: Record<string, [string, Record<string, unknown>]> = {
  session: ["code_execution", { code: "x = 1", session: "p" }],
  fresh: ["code_execution", { code: "pass" }],
  mib: [
    "code_execution",
    { code: "import sys\nsys.stdout.buffer.write(b'x' * (1 << 20))\nsys.stdout.flush()", session: "p" },
  ],
  interrupt: ["code_execution", { code: "while True: pass", session: "p", timeout: 1 }],
  python: ["python", { cells: [{ code: "x = 1" }] }],
  evalpy: ["eval", { cells: [{ language: "py", code: "x = 1" }] }],
  python3: ["python", { cells: [{ code: "x = 1" }, { code: "x = 1" }, { code: "x = 1" }] }],
  evalpy3: ["eval", { cells: [1, 2, 3].map(() => ({ language: "py", code: "x = 1" })) }],
  evaljs: ["eval", { cells: [{ language: "js", code: "x = 1" }] }],
  exec: ["exec_command", { cmd: "true" }],
};
