// eval's agent(), budget and pool width (oh-my-pi's prelude): reserved nested calls (`__agent__`, `__budget__`,
// `__concurrency__`) answered here, so each is an actor like any nested call (a record, the run `waiting` and its work
// budget paused, cancelled with the cell). agent() runs one subagent: a child Pi agent session in this process, on the
// session's model runtime, whose tools are the parent's callable tools dispatched through the parent's
// `ctx.executeTool` (every tool_call and tool_result hook sees them). The notebook tools are left out: the child
// would wait for the kernel its parent's cell holds.
import { AsyncLocalStorage } from "node:async_hooks";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  createAgentSession,
  DefaultResourceLoader,
  getAgentDir,
  SessionManager,
  SettingsManager,
  type ExtensionAPI,
  type ExtensionToolContext,
  type ToolDefinition,
} from "@earendil-works/pi-coding-agent";
import { validateToolArguments, type Api, type Model } from "@earendil-works/pi-ai";
import type { NestedCall, RunTool, RunTools, ToolResultLike } from "../../host/index.ts";
import { errorMessage } from "../../lib/errors.ts";
import { fail, ok, type Result } from "../../lib/result.ts";
import { isCodeExecutionTool } from "../shared/calls.ts";

export const AGENT_CALL = "__agent__";
export const BUDGET_CALL = "__budget__";
export const POOL_CALL = "__concurrency__";

/** What the model is told of these helpers (the eval tool's description ends with it). */
export const ORCHESTRATION_HELP = [
  "Both languages also have `agent(prompt, agent?, model?, label?, schema?)` (one subagent with your tools but no",
  "notebook tools; its final text, or the parsed object with a JSON Schema), `parallel([() => ...])` and",
  "`pipeline(items, ...stages)` (bounded pools, results in order), `log(message)`, `phase(title)` (status lines) and",
  "`budget` (tokens: total, spent(), remaining(), hard). Python's are synchronous; JavaScript's are awaited.",
].join(" ");

/** How deep the agent() calls on the async stack go (a subagent's own agent() is one deeper). */
const depth = new AsyncLocalStorage<number>();

export interface AgentLinks {
  pi: ExtensionAPI;
  ctx: ExtensionToolContext;
  /** eval.poolWidth and eval.agentDepth, read when asked. */
  limits: () => { poolWidth: number; agentDepth: number };
  /** A status event of the cell running now (`{op: "agent", ...}`). */
  onStatus: (event: Record<string, unknown>) => void;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const failure = (text: string): ToolResultLike => ({ content: [{ type: "text", text }], isError: true });
const answer = (value: unknown): ToolResultLike => ({ content: [{ type: "text", text: JSON.stringify(value) }] });

/** A run's tools plus agent(), budget and the pool width (the given list is not changed). */
export function withAgents(tools: RunTools, links: AgentLinks): RunTools {
  return { ...tools, tools: [...tools.tools, agentTool(links), budgetTool(links), poolTool(links)] };
}

function agentTool(links: AgentLinks): RunTool {
  return {
    spec: {
      name: AGENT_CALL,
      python: "agent",
      signature: "agent(prompt: str, agent: str = 'task', model: str = None, label: str = None, schema: dict = None)",
    },
    validate: (args) => {
      if (typeof args.prompt !== "string" || !args.prompt.trim())
        return fail("agent(): the prompt must be a non-empty string");
      for (const k of ["agent", "model", "label"] as const)
        if (args[k] !== undefined && typeof args[k] !== "string") return fail(`agent(): ${k} must be a string`);
      if (args.schema !== undefined && !isObject(args.schema))
        return fail("agent(): schema must be a JSON Schema object");
      const unknown = Object.keys(args).filter((k) => !["prompt", "agent", "model", "label", "schema"].includes(k));
      if (unknown.length) return fail(`agent(): unknown option ${unknown.join(", ")}`);
      return ok(args);
    },
    hooks: { dispatch: (call) => runAgent(links, call) },
  };
}

function budgetTool(links: AgentLinks): RunTool {
  return {
    spec: { name: BUDGET_CALL, python: "budget", signature: "budget" },
    validate: (args) => ok(args),
    hooks: { dispatch: () => answer(budgetOf(links)) },
  };
}

function poolTool(links: AgentLinks): RunTool {
  return {
    spec: { name: POOL_CALL, python: "parallel", signature: "parallel(thunks)" },
    validate: (args) => ok(args),
    hooks: { dispatch: () => answer({ limit: links.limits().poolWidth }) },
  };
}

/** The Pi session's tokens against its limit: the context in use against the model's window. `hard`: compaction is
 * off, so reaching the window ends the session's turns instead of compacting. */
export function budgetOf(links: Pick<AgentLinks, "ctx" | "pi">): {
  total: number | null;
  spent: number;
  remaining: number | null;
  hard: boolean;
} {
  const usage = links.ctx.getContextUsage();
  const total = usage?.contextWindow || links.ctx.model?.contextWindow || null;
  const spent = usage?.tokens ?? 0;
  let hard = false;
  try {
    hard = (links.pi.getSettings() as { compaction?: { enabled?: boolean } }).compaction?.enabled === false;
  } catch {
    // settings unreadable: the window is treated as soft (Pi compacts by default)
  }
  return { total, spent, remaining: total === null ? null : Math.max(0, total - spent), hard };
}

interface AgentDefinition {
  name: string;
  /** Extra system prompt (the definition's body). */
  prompt?: string;
  model?: string;
  /** Tools the definition limits the subagent to. */
  tools?: string[];
}

/** "task" (the default: the parent's model and tools), else `<name>.md` in the project's `.pi/agents/` (a trusted
 * project only) or in `<agent dir>/agents/`: front matter `model:` and `tools:` (comma separated), the body added to
 * the system prompt. */
export function findAgent(name: string, ctx: ExtensionToolContext): Result<AgentDefinition> {
  if (name === "task") return ok({ name });
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(name)) return fail(`agent(): "${name}" is not an agent name`);
  const trusted = typeof ctx.isProjectTrusted === "function" && ctx.isProjectTrusted() === true;
  const places = [...(trusted ? [join(ctx.cwd, ".pi", "agents")] : []), join(getAgentDir(), "agents")];
  for (const dir of places) {
    let text: string;
    try {
      text = readFileSync(join(dir, `${name}.md`), "utf8");
    } catch {
      continue;
    }
    const m = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
    const front = new Map<string, string>();
    for (const line of (m?.[1] ?? "").split(/\r?\n/)) {
      const kv = /^([A-Za-z]+):\s*(.*)$/.exec(line);
      if (kv) front.set(kv[1], kv[2].trim().replace(/^["']|["']$/g, ""));
    }
    const body = (m ? m[2] : text).trim();
    const tools = front.get("tools");
    return ok({
      name,
      ...(body ? { prompt: body } : {}),
      ...(front.get("model") ? { model: front.get("model") } : {}),
      ...(tools
        ? {
            tools: tools
              .split(",")
              .map((t) => t.trim())
              .filter(Boolean),
          }
        : {}),
    });
  }
  return fail(`agent(): no agent "${name}" (looked for ${name}.md in ${places.join(" and ")}; "task" is built in)`);
}

function resolveModel(ctx: ExtensionToolContext, id: string | undefined): Result<Model<Api>> {
  if (id === undefined)
    return ctx.model
      ? ok(ctx.model)
      : fail("agent(): no model is selected in this Pi session (choose one with /model)");
  const slash = id.indexOf("/");
  if (slash <= 0) return fail(`agent(): model "${id}" is not "provider/model"`);
  const found = ctx.modelRegistry.find(id.slice(0, slash), id.slice(slash + 1));
  return found ? ok(found) : fail(`agent(): Pi knows no model "${id}"`);
}

/** The parent's tools as the child's: each runs through the parent's hooked dispatch, and is a status event of
 * the cell (`{op: "tool", name, status, durationMs, agent: label}`). */
function proxiedTools(
  ctx: ExtensionToolContext,
  only: string[] | undefined,
  label: string,
  onStatus: AgentLinks["onStatus"],
): ToolDefinition[] {
  const tools = (ctx.tools as readonly { name: string; description?: string; parameters?: unknown }[]).filter(
    (t) => !isCodeExecutionTool(t.name) && (!only || only.includes(t.name)),
  );
  return tools.map(
    (t) =>
      ({
        name: t.name,
        label: t.name,
        description: t.description ?? t.name,
        parameters: t.parameters ?? { type: "object", properties: {} },
        async execute(_id: string, params: unknown, signal?: AbortSignal) {
          const t0 = Date.now();
          const out = await ctx.executeTool(t.name, params as Record<string, unknown>, signal ? { signal } : {});
          onStatus({
            op: "tool",
            name: t.name,
            status: out.isError ? (signal?.aborted ? "cancelled" : "failed") : "succeeded",
            durationMs: out.durationMs ?? Date.now() - t0,
            agent: label,
          });
          if (out.isError) {
            const text = (out.result.content ?? [])
              .map((b: { type: string; text?: string }) => (b.type === "text" ? (b.text ?? "") : ""))
              .join("\n");
            throw new Error(text || `${t.name} failed`);
          }
          return out.result;
        },
      }) as unknown as ToolDefinition,
  );
}

/** The parent's thinking level (Pi clamps it to the child's model). */
function thinkingOf(pi: ExtensionAPI): "off" | "minimal" | "low" | "medium" | "high" | "xhigh" {
  try {
    return (pi.getThinkingLevel() as never) ?? "off";
  } catch {
    return "off";
  }
}

/** A fenced or bare JSON answer, parsed. */
function parseAnswer(text: string): Result<unknown> {
  const fenced = /```(?:json)?\s*\n([\s\S]*?)\n?```\s*$/.exec(text.trim());
  try {
    return ok(JSON.parse(fenced ? fenced[1] : text.trim()));
  } catch (e) {
    return fail(errorMessage(e));
  }
}

function sumUsage(messages: readonly unknown[]): Record<string, number> | undefined {
  let sum: Record<string, number> | undefined;
  for (const m of messages) {
    if (!isObject(m) || m.role !== "assistant" || !isObject(m.usage)) continue;
    sum ??= {};
    for (const [k, v] of Object.entries(m.usage)) if (typeof v === "number") sum[k] = (sum[k] ?? 0) + v;
  }
  return sum;
}

async function runAgent(links: AgentLinks, call: NestedCall): Promise<ToolResultLike> {
  const input = call.input as { prompt: string; agent?: string; model?: string; label?: string; schema?: object };
  const { ctx } = links;
  const level = (depth.getStore() ?? 0) + 1;
  const cap = links.limits().agentDepth;
  if (level > cap)
    return failure(
      cap === 0
        ? "agent(): subagents are turned off (setting eval.agentDepth = 0)"
        : `agent(): the recursion cap is ${cap} levels of subagents (setting eval.agentDepth); this one would be level ${level}`,
    );
  const def = findAgent(input.agent ?? "task", ctx);
  if (!def.ok) return failure(def.error);
  const model = resolveModel(ctx, input.model ?? def.value.model);
  if (!model.ok) return failure(model.error);
  const runtime = (ctx.modelRegistry as unknown as { runtime?: unknown }).runtime;
  if (!runtime) return failure("agent(): this Pi does not expose its model runtime to extensions");
  const label = input.label ?? def.value.name;
  const t0 = Date.now();
  const status = (extra: Record<string, unknown>) =>
    links.onStatus({
      op: "agent",
      agent: def.value.name,
      label,
      model: `${model.value.provider}/${model.value.id}`,
      ...extra,
    });
  status({ state: "started" });
  const append = [
    ...(def.value.prompt ? [def.value.prompt] : []),
    ...(input.schema
      ? [
          `Your final message must be only a JSON value (no prose, no code fence needed) matching this JSON Schema:\n${JSON.stringify(input.schema)}`,
        ]
      : []),
  ];
  let session: Awaited<ReturnType<typeof createAgentSession>>["session"] | undefined;
  try {
    const agentDir = getAgentDir();
    const settingsManager = SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } });
    const resourceLoader = new DefaultResourceLoader({
      cwd: ctx.cwd,
      agentDir,
      settingsManager,
      noExtensions: true,
      noSkills: true,
      noPromptTemplates: true,
      noThemes: true,
      ...(append.length ? { appendSystemPrompt: append } : {}),
    });
    await resourceLoader.reload();
    const customTools = proxiedTools(ctx, def.value.tools, label, links.onStatus);
    ({ session } = await createAgentSession({
      cwd: ctx.cwd,
      agentDir,
      modelRuntime: runtime as never,
      model: model.value,
      thinkingLevel: thinkingOf(links.pi),
      resourceLoader,
      sessionManager: SessionManager.inMemory(ctx.cwd),
      settingsManager,
      noTools: "builtin",
      customTools,
      tools: customTools.map((t) => t.name),
    }));
    const child = session;
    const stop = () => void child.abort();
    call.signal.addEventListener("abort", stop, { once: true });
    try {
      await depth.run(level, () => child.prompt(input.prompt));
    } finally {
      call.signal.removeEventListener("abort", stop);
    }
    const messages = child.messages as readonly unknown[];
    const usage = sumUsage(messages);
    const withUsage = (r: ToolResultLike): ToolResultLike => (usage ? { ...r, usage } : r);
    const last = [...messages].reverse().find((m) => isObject(m) && m.role === "assistant") as
      { stopReason?: string; errorMessage?: string } | undefined;
    const done = (state: string, extra: Record<string, unknown> = {}) =>
      status({ state, durationMs: Date.now() - t0, ...extra });
    if (call.signal.aborted || last?.stopReason === "aborted") {
      done("cancelled");
      return withUsage(failure("agent(): the subagent was cancelled"));
    }
    if (!last || last.stopReason === "error") {
      done("failed");
      return withUsage(failure(`agent(): the subagent failed: ${last?.errorMessage ?? "it gave no answer"}`));
    }
    const text = child.getLastAssistantText() ?? "";
    if (!input.schema) {
      done("done", { chars: text.length });
      return withUsage({ content: [{ type: "text", text }] });
    }
    const parsed = parseAnswer(text);
    const checked = parsed.ok ? validated(input.schema, parsed.value) : parsed;
    if (!checked.ok) {
      done("failed");
      return withUsage(
        failure(
          `agent(): invalid structured output: ${checked.error} (the subagent said: ${JSON.stringify(text.slice(0, 200))})`,
        ),
      );
    }
    done("done", { chars: text.length });
    return withUsage({ content: [{ type: "text", text: JSON.stringify(checked.value) }] });
  } catch (e) {
    status({ state: "failed", durationMs: Date.now() - t0 });
    return failure(`agent(): ${errorMessage(e)}`);
  } finally {
    session?.dispose();
  }
}

/** The value checked against the schema with Pi's own argument validator (the same coercion as a tool's). */
function validated(schema: object, value: unknown): Result<unknown> {
  const wrapped = !isObject(value);
  try {
    const out = validateToolArguments(
      {
        name: "agent_output",
        description: "",
        parameters: (wrapped
          ? { type: "object", properties: { value: schema }, required: ["value"] }
          : schema) as never,
      },
      { type: "toolCall", id: "agent-output", name: "agent_output", arguments: (wrapped ? { value } : value) as never },
    );
    // The validator gives back the (coerced) arguments; a schema it has nothing to coerce in may give nothing back.
    const got = wrapped ? (out as { value?: unknown } | undefined)?.value : out;
    return ok(got === undefined ? value : got);
  } catch (e) {
    return fail(errorMessage(e).replace(/\s+/g, " ").trim());
  }
}
