// The effect of a nested tool call: the `dispatch` actor each nested call (machines/tool-call.ts) spawns, and the fixed
// lifecycle it runs. The Pi side (which tools, how they validate, Pi's hooked dispatch, the event bus) comes in a
// `RunTools` built by the extension for each run (extension/shared/calls.ts); nothing here knows Pi.
//
// Lifecycle, in this order: 1 the `nested_tool_start` observation; 2 validation; 3 the legacy `code_execution:tool_call`
// interception event; 4 the registration's `before`; 5 dispatch (the registration's dispatcher, else Pi's hooked
// executeTool); 6 the registration's `after` (once, whatever happened); 7 the `nested_tool_finish` observation with the
// terminal record, which also goes to the run. A validation failure skips 3-5; a block skips what follows it up to 6.
import { performance } from "node:perf_hooks";
import { fromCallback } from "xstate";
import type {
  DispatchCommand,
  DispatchEvent,
  DispatchInput,
  NestedCallRecord,
  NestedCallStatus,
  ToolReply,
} from "../../machines/tool-events.ts";
import { isoTime } from "../../machines/tool-records.ts";
import { errorMessage } from "../../lib/errors.ts";
import {
  MAX_RESULT_BYTES,
  PreviewBudget,
  resultText,
  structuredText,
  usageOf,
  utf8Bytes,
  type ToolResultLike,
} from "./tool-results.ts";
import { fullOutputPath, recoveredOutput } from "./full-output.ts";
import {
  LEGACY_TOOL_CALL_EVENT,
  NESTED_TOOL_FINISH_EVENT,
  NESTED_TOOL_START_EVENT,
  type LegacyToolCallEvent,
  type NestedCall,
  type RunTool,
  type RunTools,
} from "./contract.ts";

export type { RunTool, RunTools } from "./contract.ts";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

class Aborted extends Error {}

/** One preview budget per run (its tools), dropped with it. */
const budgets = new WeakMap<RunTools, PreviewBudget>();
function budgetOf(pi: RunTools | undefined): PreviewBudget {
  if (!pi) return new PreviewBudget();
  let budget = budgets.get(pi);
  if (!budget) budgets.set(pi, (budget = new PreviewBudget()));
  return budget;
}

/** Monotonic milliseconds since `t0`, to the microsecond. */
const elapsed = (t0: number) => Math.round((performance.now() - t0) * 1000) / 1000;

/** Waits for `work`, or stops waiting when `signal` aborts (the work itself is not undone). */
function abortable<T>(work: Promise<T> | T, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Aborted("cancelled"));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Aborted("cancelled"));
    signal.addEventListener("abort", onAbort, { once: true });
    Promise.resolve(work).then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

function blockOf(value: unknown): string | undefined {
  if (isObject(value) && value.block === true) return typeof value.reason === "string" ? value.reason : "";
  return undefined;
}

interface Ending {
  status: NestedCallStatus;
  text?: string;
  result?: ToolResultLike;
  dispatcher?: "pi" | "registration";
  toolCallId?: string;
}

/** Runs one nested call through the lifecycle. Never rejects: every failure is a status in the returned record. */
export async function runNestedCall(
  pi: RunTools | undefined,
  input: DispatchInput,
  signal: AbortSignal,
  onValidated: () => void,
): Promise<{ record: NestedCallRecord; reply: ToolReply }> {
  const t0 = performance.now();
  const tool = pi?.tools.find((t) => t.spec.name === input.name);
  const budget = budgetOf(pi);
  const call: NestedCall = {
    parentToolCallId: input.parentId,
    childToolCallId: input.childId,
    runId: input.runId,
    seq: input.seq,
    registeredName: input.name,
    toolName: input.name,
    pythonName: input.python,
    startedAt: isoTime(input.at),
    cwd: pi?.cwd ?? "",
    input: input.args,
    signal,
  };
  const base = {
    parentId: input.parentId,
    childId: input.childId,
    runId: input.runId,
    seq: input.seq,
    registeredName: input.name,
    pythonName: input.python,
    startedAt: call.startedAt,
    input: budget.take(JSON.stringify(input.args)),
  };
  const emit = (channel: string, payload: unknown) => {
    try {
      pi?.emit(channel, payload);
    } catch {
      // an observer's failure never changes the call
    }
  };
  emit(NESTED_TOOL_START_EVENT, { ...base, toolName: input.name });

  let end: Ending;
  try {
    end = await intercepted(pi, tool, call, signal, onValidated);
  } catch (e) {
    end =
      signal.aborted || e instanceof Aborted ? { status: "cancelled" } : { status: "failed", text: errorMessage(e) };
  }
  let text = end.status === "succeeded" || end.status === "failed" ? resultText(end.result) : "";
  // A tool that truncated its own output kept the whole of it: code gets that, up to 5 MiB (full-output.ts).
  const full =
    end.status === "succeeded" && fullOutputPath(end.result)
      ? await recoveredOutput(end.result, input.python)
      : undefined;
  if (full && "text" in full) text = full.text;
  else if (full) end = { ...end, status: "failed", text: full.error };
  let structured = end.status === "succeeded" ? structuredText(end.result, text) : undefined;
  if (end.status === "succeeded" && utf8Bytes(text) + (structured ? utf8Bytes(structured) : 0) > MAX_RESULT_BYTES) {
    end = {
      ...end,
      status: "failed",
      text: `${input.python}: the result is ${utf8Bytes(text)} bytes; the bridge passes at most ${MAX_RESULT_BYTES >> 20} MiB. Ask the tool for less.`,
    };
    text = "";
    structured = undefined;
  }
  const errorText =
    end.status === "succeeded"
      ? undefined
      : end.status === "cancelled"
        ? `${input.python}: cancelled (the run is stopping or the call was cancelled); effects that already happened stay`
        : end.status === "blocked"
          ? `${input.name} was blocked${end.text ? `: ${end.text}` : ""}`
          : end.text || text || `${input.name} failed`;
  const usage = usageOf(end.result);
  const record: NestedCallRecord = {
    ...base,
    durationMs: 0,
    status: end.status,
    ...(end.dispatcher ? { dispatcher: end.dispatcher } : {}),
    ...(end.toolCallId ? { toolCallId: end.toolCallId } : {}),
    ...(end.status === "succeeded" ? { result: budget.take(text) } : {}),
    ...(errorText !== undefined ? { error: budget.take(errorText) } : {}),
    ...(usage ? { usage } : {}),
  };
  if (tool?.hooks?.after) {
    try {
      await tool.hooks.after({
        ...call,
        status: end.status,
        durationMs: elapsed(t0),
        record: { ...record, durationMs: elapsed(t0) },
        ...(end.result ? { result: end.result } : {}),
        ...(errorText !== undefined ? { error: errorText } : {}),
      });
    } catch (e) {
      record.hookError = budget.take(errorMessage(e)).text;
    }
  }
  record.durationMs = elapsed(t0);
  emit(NESTED_TOOL_FINISH_EVENT, { ...record });
  const reply: ToolReply =
    end.status === "succeeded"
      ? { status: "ok", text, ...(structured !== undefined ? { structured } : {}) }
      : {
          status: end.status === "failed" ? "error" : end.status,
          text: errorText!,
        };
  return { record, reply };
}

/** Steps 2-5: validation, the legacy event, `before`, dispatch. */
async function intercepted(
  pi: RunTools | undefined,
  tool: RunTool | undefined,
  call: NestedCall,
  signal: AbortSignal,
  onValidated: () => void,
): Promise<Ending> {
  if (!pi || !tool) return { status: "invalid", text: `${call.registeredName} is not exposed to Python in this run` };
  const checked = tool.validate(call.input);
  if (!checked.ok) return { status: "invalid", text: checked.error };
  call.input = checked.value;
  onValidated();
  if (signal.aborted) return { status: "cancelled" };

  const legacy: LegacyToolCallEvent = {
    toolCallId: call.parentToolCallId,
    parentToolCallId: call.parentToolCallId,
    childToolCallId: call.childToolCallId,
    runId: call.runId,
    toolName: call.registeredName,
    registeredName: call.registeredName,
    pythonName: call.pythonName,
    input: call.input,
    cwd: call.cwd,
    signal,
  };
  try {
    pi.emit(LEGACY_TOOL_CALL_EVENT, legacy);
  } catch {
    // the bus failed (Pi's catches handler errors itself): nothing intercepted the call
  }
  if (legacy.block) return { status: "blocked", text: legacy.reason ?? "" };
  if (legacy.input !== call.input) {
    if (!isObject(legacy.input))
      return { status: "invalid", text: "a code_execution:tool_call handler replaced the input with a non-object" };
    call.input = legacy.input;
  }

  if (tool.hooks?.before) {
    try {
      const answer = await abortable(tool.hooks.before(call), signal);
      const reason = blockOf(answer);
      if (reason !== undefined) return { status: "blocked", text: reason };
    } catch (e) {
      if (signal.aborted || e instanceof Aborted) return { status: "cancelled" };
      return { status: "blocked", text: errorMessage(e) };
    }
  }
  if (signal.aborted) return { status: "cancelled" };

  if (tool.hooks?.dispatch) {
    const result = await abortable(tool.hooks.dispatch(call), signal);
    const isError = !isObject(result) || result.isError === true;
    return {
      status: isError ? "failed" : "succeeded",
      result: isObject(result) ? result : {},
      dispatcher: "registration",
    };
  }
  const out = await abortable(pi.execute(call.registeredName, call.input, signal), signal);
  const ended: Ending = {
    status: out.blocked
      ? "blocked"
      : out.invalid
        ? "invalid"
        : out.isError
          ? signal.aborted
            ? "cancelled"
            : "failed"
          : "succeeded",
    result: out.result,
    dispatcher: "pi",
    ...(out.toolCallId ? { toolCallId: out.toolCallId } : {}),
  };
  if (out.blocked || out.invalid) ended.text = resultText(out.result);
  return ended;
}

export interface DispatchDeps {
  toolsFor(runId: string): RunTools | undefined;
  now(): number;
}

/** The `dispatch` actor: one call's lifecycle. `dispatch.cancel` (or being stopped with its run) aborts the call's
 * signal; the lifecycle then still runs `after` and the finish observation. */
export function createDispatchLogic(deps: DispatchDeps) {
  return fromCallback<DispatchCommand, DispatchInput>(({ input, sendBack, receive }) => {
    const controller = new AbortController();
    let live = true;
    const back = (event: DispatchEvent) => {
      if (live) sendBack(event);
    };
    receive((command) => {
      if (command.type === "dispatch.cancel") controller.abort(new Error("cancelled"));
    });
    void runNestedCall(deps.toolsFor(input.runId), input, controller.signal, () =>
      back({ type: "dispatch.validated", at: deps.now() }),
    ).then(({ record, reply }) => back({ type: "dispatch.finished", at: deps.now(), record, reply }));
    return () => {
      live = false;
      controller.abort(new Error("the run ended"));
    };
  });
}
