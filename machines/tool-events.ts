// Nested tool calls's vocabulary: what a run knows about the Pi tools its Python code may call, the facts and commands
// of one nested call, and the terminal record every call leaves on the run's outcome. Serializable data only; every
// event carries `at` (ms since the epoch, stamped by the boundary that produced it).

/** One tool exposed to Python for a run. */
export interface ToolSpec {
  /** The name registered in Pi (what hooks and policies see). */
  name: string;
  /** The normalized Python name: an identifier that shadows no keyword, builtin or helper. */
  python: string;
  /** `name(*, a: str, b: int = None)`: required parameters first, Python type names. */
  signature: string;
  /** The tool's description, for `help()` in Python. */
  description?: string;
}

/** A tool as the machines know it: which Pi tool a call names, and its Python name (for records and messages). */
export interface ExposedTool {
  name: string;
  python: string;
}

/** What a run needs to offer tools: the outer tool call it belongs to and the callable tools. The tools' signatures
 * and descriptions stay with the host (the runner sends them to its process once per tool set), so events and the
 * event log carry names only: a run's size does not grow with the tools' descriptions. */
export interface CallsRequest {
  /** The Pi tool call (code_execution) that started the run: the parent id of every nested call. */
  callerId?: string;
  /** The tool set's id: the same while the exposed tools stay the same (a runner sends the specs once per set). */
  toolSet: string;
  tools: ExposedTool[];
}

/** A bounded UTF-8 preview: at most 4 KiB of `text`, the exact byte count of the whole value, and whether it was cut. */
export interface Preview {
  text: string;
  bytes: number;
  truncated: boolean;
}

/** Terminal status of a nested call. `invalid`: the arguments failed validation; `blocked`: a policy refused it. */
export type NestedCallStatus = "succeeded" | "failed" | "invalid" | "blocked" | "cancelled";

/** The terminal record of one nested call, attached to the run's outcome in start order. */
export interface NestedCallRecord {
  /** The outer Pi tool call (code_execution), or `run:<runId>` when the run has none. */
  parentId: string;
  /** The nested call's actor: `tool:<runId>:<seq>`. */
  childId: string;
  runId: string;
  /** 1-based, in start order. */
  seq: number;
  registeredName: string;
  pythonName: string;
  /** ISO 8601. */
  startedAt: string;
  /** Monotonic milliseconds from start to the terminal state (the `after` handler included). */
  durationMs: number;
  status: NestedCallStatus;
  /** Who ran the tool: Pi's hooked `executeTool`, or a registration's own dispatcher (absent: it never ran). */
  dispatcher?: "pi" | "registration";
  /** Pi's id of the nested tool call (`<outer id>/<n>`), when Pi dispatched it. */
  toolCallId?: string;
  input: Preview;
  result?: Preview;
  error?: Preview;
  /** Token usage the nested tool reported (pi-ai's Usage). */
  usage?: Record<string, unknown>;
  /** A registration's `after` handler failed (the status stands). */
  hookError?: string;
}

/** The answer Python gets. `ok`: a result string; the others raise (TypeError for `invalid`, else RuntimeError). */
export interface ToolReply {
  status: "ok" | "error" | "invalid" | "blocked" | "cancelled";
  text: string;
  /** `ok` only: the result's structuredContent as JSON, when the text is not JSON (Python's `.json()` falls back). */
  structured?: string;
}

// ---- facts (runner actor -> run): the runner asked for a call, or stopped waiting for one ----
export type ToolCallFact =
  | { type: "runner.tool_call"; at: number; runId: string; callId: string; name: string; args: Record<string, unknown> }
  | { type: "runner.tool_cancel"; at: number; runId: string; callId: string };

// ---- command (run -> runner actor): answer a call ----
export type ToolResultCommand = { type: "runner.tool_result"; runId: string; callId: string } & ToolReply;

// ---- the dispatch actor (provided from actors/) <-> its tool-call machine ----
export interface DispatchInput {
  runId: string;
  callId: string;
  seq: number;
  childId: string;
  parentId: string;
  name: string;
  python: string;
  args: Record<string, unknown>;
  /** When the runner's request arrived: the call's start time. */
  at: number;
}
export type DispatchEvent =
  /** The arguments are valid; the tool is about to be intercepted and run. */
  | { type: "dispatch.validated"; at: number }
  | { type: "dispatch.finished"; at: number; record: NestedCallRecord; reply: ToolReply };
export type DispatchCommand = { type: "dispatch.cancel"; at: number };

/** What a tool-call actor reports to its run when it ends. */
export interface ToolCallOutput {
  callId: string;
  record: NestedCallRecord;
  reply: ToolReply;
}

/** Most calls one run may have in flight; more are refused (the runner allows as many). */
export const MAX_OPEN_CALLS = 1024;
