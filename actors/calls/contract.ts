// The contract of a nested tool call with the Pi side: the observation and interception events on Pi's bus, what
// `before`, `after` and a registration's dispatcher receive, and the `RunTools` a run's caller provides
// (extension/shared/calls.ts builds it from Pi; other extensions see these types through extension/api.ts).
import type { NestedCallRecord, NestedCallStatus, ToolSpec } from "../../machines/tool-events.ts";
import type { Result } from "../../lib/result.ts";
import type { ToolResultLike } from "./tool-results.ts";

export const NESTED_TOOL_START_EVENT = "code_execution:nested_tool_start";
export const NESTED_TOOL_FINISH_EVENT = "code_execution:nested_tool_finish";
export const LEGACY_TOOL_CALL_EVENT = "code_execution:tool_call";

/** What `before`, `after` and a registration's dispatcher get: stable ids, names and the call's signal. */
export interface NestedCall {
  /** The outer code_execution tool call. */
  parentToolCallId: string;
  /** `tool:<runId>:<seq>`: the nested call's actor, stable for its whole life. */
  childToolCallId: string;
  runId: string;
  seq: number;
  /** The name registered in Pi: use it (or `toolName`) for name-based checks. */
  registeredName: string;
  /** Alias of `registeredName`. */
  toolName: string;
  /** The normalized Python name (only a lookup name). */
  pythonName: string;
  startedAt: string;
  cwd: string;
  /** The prepared, validated input. */
  input: Record<string, unknown>;
  /** Aborted when the call is cancelled (the run's deadline or cancellation, or Python stopped waiting). */
  signal: AbortSignal;
}

export interface NestedCallOutcome extends NestedCall {
  status: NestedCallStatus;
  durationMs: number;
  /** The terminal record (the one attached to the run and sent with the finish observation). */
  record: NestedCallRecord;
  result?: ToolResultLike;
  error?: string;
}

/** A registration's lifecycle handlers (extension/api.ts documents them for other extensions). */
export interface NestedCallHooks {
  /** Throw (or return `{block: true, reason}`) to block the call: Python gets a RuntimeError, the run a policy_error. */
  before?: (call: NestedCall) => unknown;
  /** Once per call, for every outcome. Errors are recorded as `hookError`; the status stands. */
  after?: (outcome: NestedCallOutcome) => unknown;
  /** Runs the tool instead of Pi's hooked dispatch. */
  dispatch?: (call: NestedCall) => ToolResultLike | Promise<ToolResultLike>;
}

/** The mutable legacy interception event: a handler may set `block` and `reason`, or replace `input`. Handlers run
 * synchronously (an event bus emit), so only what they do before their first `await` counts. */
export interface LegacyToolCallEvent {
  toolCallId: string;
  parentToolCallId: string;
  childToolCallId: string;
  runId: string;
  toolName: string;
  registeredName: string;
  pythonName: string;
  input: Record<string, unknown>;
  cwd: string;
  signal: AbortSignal;
  block?: boolean;
  reason?: string;
}

/** One tool Python may call in a run. */
export interface RunTool {
  spec: ToolSpec;
  /** Prepares and validates arguments against the tool's schema: the prepared input, or why they are invalid. */
  validate(args: Record<string, unknown>): Result<Record<string, unknown>>;
  hooks?: NestedCallHooks;
}

/** Pi's hooked dispatch of one call. `blocked`: a tool_call hook refused it; `invalid`: Pi's validation did (after a
 * legacy handler changed the input). `toolCallId`: Pi's nested call id. */
export interface DispatchOutcome {
  result: ToolResultLike;
  isError: boolean;
  blocked?: boolean;
  invalid?: boolean;
  toolCallId?: string;
}

/** Everything a run's nested calls need from the extension. */
export interface RunTools {
  /** The outer Pi tool call. */
  callerId: string;
  cwd: string;
  tools: RunTool[];
  /** The shared event bus (Pi's `pi.events.emit`): observations and the legacy event. */
  emit(channel: string, payload: unknown): void;
  /** Runs a tool through Pi's hooked dispatch (validation, every tool_call and tool_result hook). */
  execute(name: string, input: Record<string, unknown>, signal: AbortSignal): Promise<DispatchOutcome>;
}
