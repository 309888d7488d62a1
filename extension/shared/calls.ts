// The Pi side of nested tool calls: which tools a run's Python may call, and how. Callable means what Pi's
// `ctx.executeTool` reaches (active direct tools plus codemode and deferred ones), minus code_execution's own tools,
// with registrations from the shared `code_execution:collect_tools` event replacing discovered tools of their name.
// Arguments are validated with Pi's own validator; dispatch goes through `ctx.executeTool`, so every extension's
// tool_call and tool_result hooks see nested calls as they see the model's.
import type { ExtensionAPI, ExtensionToolContext, ToolInfo } from "@earendil-works/pi-coding-agent";
import { validateToolArguments } from "@earendil-works/pi-ai";
import type { RunTool, DispatchOutcome, NestedCallHooks, RunTools } from "../../host/index.ts";
import { errorMessage } from "../../lib/errors.ts";
import { fail, ok, type Result } from "../../lib/result.ts";
import type { NestedCallRecord, ToolSpec } from "../../machines/tool-events.ts";
import { CODE_EXECUTION_COLLECT_TOOLS_EVENT, createToolCollection, type NestedToolRegistration } from "../api.ts";
import { pythonNames, signature } from "./python-names.ts";

/** code_execution and its companions, and the notebook tools, are never exposed to Python (a script calling itself
 * would wait for its own session). */
export const isCodeExecutionTool = (name: string) =>
  /^code_execution($|_)/.test(name) || name === "python" || name === "eval";

/** What a nested call needs of a tool (Pi's AgentTool, a ToolDefinition or a ToolInfo). */
export interface CallableTool {
  name: string;
  description?: string;
  parameters?: unknown;
  prepareArguments?: (args: unknown) => unknown;
}

export interface ExposedTool {
  spec: ToolSpec;
  tool: CallableTool;
  hooks?: NestedCallHooks;
}

/** Registrations other extensions make for this moment (handlers run synchronously on the event bus). */
export function collectRegistrations(pi: ExtensionAPI): NestedToolRegistration[] {
  const collection = createToolCollection();
  try {
    pi.events.emit(CODE_EXECUTION_COLLECT_TOOLS_EVENT, collection);
  } catch {
    // a failing collector exposes nothing extra
  }
  return collection.registrations;
}

/** The exposed tools, by registered name, with unique Python names and signatures. */
export function exposedTools(
  callable: readonly CallableTool[],
  registrations: NestedToolRegistration[],
): ExposedTool[] {
  const byName = new Map<string, { tool: CallableTool; hooks?: NestedCallHooks }>();
  for (const tool of callable) if (!isCodeExecutionTool(tool.name)) byName.set(tool.name, { tool });
  for (const { definition, ...hooks } of registrations) {
    if (!byName.has(definition.name)) continue; // must be callable in Pi too
    const handlers: NestedCallHooks = {};
    if (typeof hooks.before === "function") handlers.before = hooks.before;
    if (typeof hooks.after === "function") handlers.after = hooks.after;
    if (typeof hooks.dispatch === "function") handlers.dispatch = hooks.dispatch;
    byName.set(definition.name, { tool: definition as CallableTool, hooks: handlers });
  }
  const names = [...byName.keys()].sort();
  const python = pythonNames(names);
  return names.map((name, i) => {
    const { tool, hooks } = byName.get(name)!;
    const spec: ToolSpec = {
      name,
      python: python[i]!,
      signature: signature(python[i]!, tool.parameters),
      ...(typeof tool.description === "string" && tool.description ? { description: tool.description } : {}),
    };
    return { spec, tool, ...(hooks && Object.keys(hooks).length ? { hooks } : {}) };
  });
}

/** The callable tools as event handlers see them (no `ctx.tools` there): Pi's rule applied to getAllTools(). */
export function callableFromInfo(pi: ExtensionAPI): CallableTool[] {
  const active = new Set(pi.getActiveTools());
  return pi
    .getAllTools()
    .filter((t: ToolInfo) =>
      t.exposure === "codemode" || t.exposure === "deferred" ? true : t.exposure === "direct" && active.has(t.name),
    )
    .map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
}

/** Prepares and validates arguments exactly as Pi does for a model's call (coercion included). */
export function validator(tool: CallableTool): (args: Record<string, unknown>) => Result<Record<string, unknown>> {
  return (args) => {
    try {
      const prepared = tool.prepareArguments ? tool.prepareArguments(args) : args;
      const value = validateToolArguments(tool as never, {
        type: "toolCall",
        id: "code_execution-bridge",
        name: tool.name,
        arguments: prepared as never,
      });
      return value && typeof value === "object" && !Array.isArray(value)
        ? ok(value as Record<string, unknown>)
        : fail(`${tool.name}: the prepared arguments are not an object`);
    } catch (e) {
      return fail(errorMessage(e));
    }
  };
}

/** What decides the exposed tools: each callable tool's and each registration's parts, by identity. */
function toolSetKey(callable: readonly CallableTool[], registrations: NestedToolRegistration[]): unknown[] {
  const key: unknown[] = [];
  for (const t of callable) key.push(t.name, t.description, t.parameters, t.prepareArguments);
  key.push(registrations.length);
  for (const r of registrations) key.push(r.definition, r.before, r.after, r.dispatch);
  return key;
}

/** The last tool set per Pi instance and its run tools: names, signatures and validators are derived again only
 * when the tool set changed (a run's start-up path otherwise repeats the same discovery every call). */
const lastToolSet = new WeakMap<ExtensionAPI, { key: unknown[]; tools: RunTool[] }>();

function runTools(pi: ExtensionAPI, ctx: ExtensionToolContext): RunTool[] {
  const callable = ctx.tools as readonly CallableTool[];
  const registrations = collectRegistrations(pi);
  const key = toolSetKey(callable, registrations);
  const last = lastToolSet.get(pi);
  if (last && last.key.length === key.length && last.key.every((v, i) => v === key[i])) return last.tools;
  const tools: RunTool[] = exposedTools(callable, registrations).map(({ spec, tool, hooks }) => ({
    spec,
    validate: validator(tool),
    ...(hooks ? { hooks } : {}),
  }));
  lastToolSet.set(pi, { key, tools });
  return tools;
}

/** One run's tools: those callable at this moment, validated by Pi's validator and dispatched by `ctx.executeTool`. */
export function createRunTools(pi: ExtensionAPI, ctx: ExtensionToolContext, callerId: string): RunTools {
  const tools = runTools(pi, ctx);
  return {
    callerId,
    cwd: ctx.cwd,
    tools,
    emit: (channel, payload) => pi.events.emit(channel, payload),
    async execute(name, input, signal): Promise<DispatchOutcome> {
      const out = await ctx.executeTool(name, input, { signal });
      const text = (out.result.content ?? [])
        .map((b: { type: string; text?: string }) => (b.type === "text" ? (b.text ?? "") : ""))
        .join("\n");
      // Pi never rejects: a call that did not run (no durationMs) with valid arguments, a known tool and a live
      // signal was refused by a tool_call hook.
      const notRun = out.isError && out.durationMs === undefined && !signal.aborted;
      const invalid = notRun && /^(Validation failed|Invalid arguments) for tool /.test(text);
      const missing = notRun && text.startsWith(`Tool ${name} not found`);
      return {
        result: out.result,
        isError: out.isError,
        ...(notRun && !invalid && !missing ? { blocked: true } : {}),
        ...(invalid ? { invalid: true } : {}),
        toolCallId: out.toolCall.id,
      };
    },
  };
}

type Usage = Record<string, unknown>;

function addUsage(a: Usage, b: Usage): Usage {
  const out: Usage = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    if (typeof v === "number") out[k] = (typeof prev === "number" ? prev : 0) + v;
    else if (v && typeof v === "object" && !Array.isArray(v))
      out[k] = addUsage(prev && typeof prev === "object" ? (prev as Usage) : {}, v as Usage);
    else if (typeof v === "boolean") out[k] = prev === undefined ? v : prev === true && v;
  }
  return out;
}

/** Usage the outer result must carry: Pi already adds the usage of calls it dispatched (ctx.executeTool) to the
 * outer result, so only calls a registration dispatched itself are summed here. Every record keeps its own. */
export function outerUsage(records: readonly NestedCallRecord[] | undefined): Usage | undefined {
  let sum: Usage | undefined;
  for (const r of records ?? []) {
    if (r.usage && r.dispatcher === "registration") sum = addUsage(sum ?? {}, r.usage);
  }
  return sum;
}
