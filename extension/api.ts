// The package's entry point for other extensions: what another Pi extension needs to expose its tools to
// code_execution's Python, own their nested-call policy, or observe nested calls (docs/code-execution.md, "Calling
// Pi tools from Python").
// Its package subpath is `pi-code-supervisor/host`, a name kept so existing imports go on working; everywhere else
// "host" means the supervisor host (host/).
//
//   pi.events.on(CODE_EXECUTION_COLLECT_TOOLS_EVENT, (event) => {
//     (event as CodeExecutionToolCollection).register(myTool, { before, after, dispatch });
//   });
import type { ToolDefinition } from "@earendil-works/pi-coding-agent";
import type { LegacyToolCallEvent, NestedCall, NestedCallHooks, NestedCallOutcome } from "../host/index.ts";

export {
  LEGACY_TOOL_CALL_EVENT as CODE_EXECUTION_TOOL_CALL_EVENT,
  NESTED_TOOL_FINISH_EVENT,
  NESTED_TOOL_START_EVENT,
} from "../host/index.ts";
export type {
  DispatchOutcome,
  LegacyToolCallEvent,
  NestedCall,
  NestedCallHooks,
  NestedCallOutcome,
  ToolResultLike,
} from "../host/index.ts";
export type { NestedCallRecord, NestedCallStatus, Preview, ToolSpec } from "../machines/tool-events.ts";

/** Emitted on `pi.events` before each code_execution run (and before each prompt): answer with `add`/`register`. */
export const CODE_EXECUTION_COLLECT_TOOLS_EVENT = "code_execution:collect_tools";

/** Names used by other code_execution implementations, for portable integrations. */
export type NestedToolCall = NestedCall;
export type NestedToolCallOutcome = NestedCallOutcome;
export type NestedToolCallInterception = LegacyToolCallEvent;

export type AnyToolDefinition = ToolDefinition<any, any>;

/** A definition exposed to Python, with optional lifecycle handlers. */
export interface NestedToolRegistration extends NestedCallHooks {
  definition: AnyToolDefinition;
}

/** The mutable `code_execution:collect_tools` event. The tool must also be callable in Pi (active, or a codemode or
 * deferred tool); a registration replaces the discovered tool of the same name (its schema and description too). */
export interface CodeExecutionToolCollection {
  /** Exposes definitions without handlers. */
  add(...definitions: AnyToolDefinition[]): void;
  /** Exposes a definition with `before`, `after` and `dispatch` handlers (a later registration of a name wins). */
  register(definition: AnyToolDefinition, handlers?: NestedCallHooks): void;
  readonly registrations: NestedToolRegistration[];
}

export function createToolCollection(): CodeExecutionToolCollection {
  const registrations: NestedToolRegistration[] = [];
  const register = (definition: AnyToolDefinition, handlers: NestedCallHooks = {}) => {
    if (!definition || typeof definition.name !== "string") return;
    registrations.push({ ...handlers, definition });
  };
  return {
    registrations,
    register,
    add: (...definitions) => definitions.forEach((d) => register(d)),
  };
}
