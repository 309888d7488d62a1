// completion() in Python (oh-my-pi's helper): one stateless model call through Pi's model registry, no history and
// no tools, routed as a nested call of the reserved tool `__completion__`. It is a nested call like any other
// (an actor, a `nestedCalls` record with its usage, counted once in the outer result; the run's deadline and
// cancellation cover it). With a schema the model must answer through one synthetic `respond` tool.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { Api, AssistantMessage, Context, Model } from "@earendil-works/pi-ai";
import type { NestedCall, RunTool, RunTools, ToolResultLike } from "../../host/index.ts";
import { fail, ok, type Result } from "../../lib/result.ts";

export const COMPLETION_TOOL = "__completion__";
const RESPOND = "respond";

export interface CompletionModels {
  smol: string | undefined;
  slow: string | undefined;
}

/** completion()'s spec: one object, so the host sees the same tool set from call to call. */
const COMPLETION_SPEC = {
  name: COMPLETION_TOOL,
  python: "completion",
  signature: "completion(prompt: str, *, model: str = 'default', system: str = None, schema: dict = None)",
};

/** A run's tools plus completion(): every surface's Python has it. The given list is not changed (the extension
 * keeps it from call to call while the tools stay the same). */
export function withCompletion(tools: RunTools, ctx: ExtensionContext, models: () => CompletionModels): RunTools {
  return { ...tools, tools: [...tools.tools, completionTool(ctx, models)] };
}

export function completionTool(ctx: ExtensionContext, models: () => CompletionModels): RunTool {
  return {
    spec: COMPLETION_SPEC,
    validate: (args) => {
      if (typeof args.prompt !== "string") return fail("completion(): prompt must be a string");
      if (args.model !== undefined && typeof args.model !== "string")
        return fail("completion(): model must be a string");
      if (args.system !== undefined && typeof args.system !== "string")
        return fail("completion(): system must be a string");
      if (
        args.schema !== undefined &&
        (typeof args.schema !== "object" || args.schema === null || Array.isArray(args.schema))
      )
        return fail("completion(): schema must be a JSON Schema object");
      return ok(args);
    },
    hooks: { dispatch: (call) => complete(ctx, call, models()) },
  };
}

function failure(text: string): ToolResultLike {
  return { content: [{ type: "text", text }], isError: true };
}

/** Pi's model roles by name (oh-my-pi's `pi/smol`, `pi/slow`, `pi/default`): a model (or virtual model) the user
 * registered under the provider `pi`. */
function role(ctx: ExtensionContext, name: string): Model<Api> | undefined {
  try {
    return ctx.modelRegistry.find("pi", name);
  } catch {
    return undefined;
  }
}

/** "smol"/"slow": settings `completionModels`, else Pi's model role `pi/smol`/`pi/slow`, else the session's model;
 * "default": the session's current model, else the role `pi/default`; "provider/model": that model. */
export function resolveModel(ctx: ExtensionContext, name: string, models: CompletionModels): Result<Model<Api>> {
  const id = name === "smol" ? models.smol : name === "slow" ? models.slow : name === "default" ? undefined : name;
  if (id === undefined) {
    const tier = name === "smol" || name === "slow" ? role(ctx, name) : undefined;
    const model = tier ?? ctx.model ?? role(ctx, "default");
    return model ? ok(model) : fail("completion(): no model is selected in this Pi session (choose one with /model)");
  }
  const slash = id.indexOf("/");
  if (slash <= 0) return fail(`completion(): model "${id}" is neither "default", "smol", "slow" nor "provider/model"`);
  const found = ctx.modelRegistry.find(id.slice(0, slash), id.slice(slash + 1));
  return found ? ok(found) : fail(`completion(): Pi knows no model "${id}"`);
}

/** The provider-specific way to make the model call `respond` (pi-ai's simple options only know auto/none). */
function forcedChoice(api: string): unknown {
  switch (api) {
    case "anthropic-messages":
      return { type: "tool", name: RESPOND };
    case "openai-completions":
      return { type: "function", function: { name: RESPOND } };
    case "openai-responses":
    case "azure-openai-responses":
    case "openai-codex-responses":
      return { type: "function", name: RESPOND };
    case "google-generative-ai":
    case "google-vertex":
    case "bedrock-converse-stream":
    case "mistral-conversations":
      return "any";
    default:
      return undefined;
  }
}

async function complete(ctx: ExtensionContext, call: NestedCall, models: CompletionModels): Promise<ToolResultLike> {
  const input = call.input as { prompt: string; model?: string; system?: string; schema?: Record<string, unknown> };
  const found = resolveModel(ctx, input.model ?? "default", models);
  if (!found.ok) return failure(found.error);
  const model = found.value;
  const auth = await ctx.modelRegistry.getApiKeyAndHeaders(model);
  if (!auth.ok) return failure(`completion(): no credentials for ${model.provider}/${model.id}: ${auth.error}`);
  const schema = input.schema;
  const context: Context = {
    ...(input.system !== undefined
      ? { systemPrompt: input.system }
      : schema
        ? { systemPrompt: `Answer by calling the ${RESPOND} tool exactly once.` }
        : {}),
    messages: [{ role: "user", content: input.prompt, timestamp: Date.now() }],
    ...(schema
      ? {
          tools: [{ name: RESPOND, description: "Give the answer, in exactly this structure.", parameters: schema }],
        }
      : {}),
  };
  const choice = schema ? forcedChoice(model.api) : undefined;
  let message: AssistantMessage;
  try {
    // "slow" asks a reasoning model to think hard (pi-ai's provider-neutral `reasoning` is a simple-stream option).
    // A forced tool choice is left out there: providers refuse it with extended thinking, and the system prompt
    // already asks for `respond` (a JSON answer in text is accepted too).
    message =
      input.model === "slow" && model.reasoning
        ? await ctx.modelRegistry.streamSimple(model, context, { signal: call.signal, reasoning: "high" }).result()
        : await ctx.modelRegistry.complete(model, context, {
            signal: call.signal,
            ...(choice !== undefined ? { toolChoice: choice } : {}),
          } as never);
  } catch (e) {
    return failure(`completion(): ${e instanceof Error ? e.message : String(e)}`);
  }
  const usage = message.usage as unknown as Record<string, unknown> | undefined;
  const withUsage = (r: ToolResultLike): ToolResultLike => (usage ? { ...r, usage } : r);
  if (message.stopReason === "aborted" || call.signal.aborted)
    return withUsage(failure("completion(): the call was aborted"));
  if (message.stopReason === "error")
    return withUsage(failure(`completion(): the model call failed: ${message.errorMessage ?? "unknown error"}`));
  const blocks = message.content as { type: string; text?: string; name?: string; arguments?: unknown }[];
  if (schema) {
    const respond = blocks.find((b) => b.type === "toolCall" && b.name === RESPOND);
    if (respond) return withUsage({ content: [{ type: "text", text: JSON.stringify(respond.arguments ?? {}) }] });
    const text = textOf(blocks).trim();
    try {
      JSON.parse(text);
      return withUsage({ content: [{ type: "text", text }] });
    } catch {
      return withUsage(
        failure(
          `completion(): the model did not answer through ${RESPOND} (it said: ${JSON.stringify(text.slice(0, 200))})`,
        ),
      );
    }
  }
  const text = textOf(blocks);
  if (!text.trim()) return withUsage(failure("completion(): the model returned an empty answer"));
  return withUsage({ content: [{ type: "text", text }] });
}

function textOf(blocks: { type: string; text?: string }[]): string {
  return blocks
    .filter((b) => b.type === "text")
    .map((b) => b.text ?? "")
    .join("");
}
