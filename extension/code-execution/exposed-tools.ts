// The hidden "exposed tools" status message. While code_execution is active, before each prompt and after each turn
// that ran tools, the model is told which agent tools its Python can await, when that differs from the last such
// message still in its context (so nothing is added while the set is unchanged, and a compaction that dropped the
// message brings it back once). The message is a custom message of pi-code-execution's type
// `code_execution:exposed_tools` with `display: false`: in the model's context, not shown in the transcript.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { callableFromInfo, collectRegistrations, exposedTools } from "../shared/calls.ts";

/** pi-code-execution's type for the status message. */
export const EXPOSED_TOOLS_MESSAGE = "code_execution:exposed_tools";
/** The type our earlier versions wrote: still read in resumed sessions, so their last status is not sent again. */
export const LEGACY_EXPOSED_TOOLS_MESSAGE = "code_execution_tools";
const STATUS_TYPES: readonly unknown[] = [EXPOSED_TOOLS_MESSAGE, LEGACY_EXPOSED_TOOLS_MESSAGE];

export function exposedToolsText(signatures: readonly string[]): string {
  if (!signatures.length) return "[code_execution] No agent tools are exposed to Python: available_tools() is empty.";
  return [
    "[code_execution] Python code can await these agent tools (keyword arguments only; each result is a str whose",
    ".json() parses it; a tool error raises RuntimeError; asyncio.gather() runs calls concurrently):",
    ...signatures,
  ].join("\n");
}

/** The tool list of the last status message in `messages`, or undefined when none is there. */
export function lastExposed(messages: readonly unknown[]): string[] | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: string; customType?: string; details?: { tools?: unknown } } | undefined;
    if (m?.role === "custom" && STATUS_TYPES.includes(m.customType)) {
      const tools = m.details?.tools;
      return Array.isArray(tools) ? tools.filter((t): t is string => typeof t === "string") : [];
    }
  }
  return undefined;
}

const same = (a: readonly string[] | undefined, b: readonly string[]) =>
  a !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);

export function registerExposedToolsMessage(pi: ExtensionAPI): void {
  /** The signatures Python would get now, or undefined while no Python surface (code_execution, python, eval) is
   * active. */
  const current = (): string[] | undefined => {
    const active = pi.getActiveTools();
    if (!["code_execution", "python", "eval"].some((t) => active.includes(t))) return undefined;
    return exposedTools(callableFromInfo(pi), collectRegistrations(pi)).map((t) => t.spec.signature);
  };
  const message = (tools: string[]) => ({
    customType: EXPOSED_TOOLS_MESSAGE,
    content: exposedToolsText(tools),
    display: false,
    details: { tools },
  });

  pi.on("before_agent_start", (_event, ctx) => {
    const tools = current();
    if (!tools || same(lastExposed(ctx.sessionManager.buildSessionProjection().messages), tools)) return undefined;
    return { message: message(tools) };
  });

  pi.on("turn_end", (event) => {
    if (!event.toolResults.length) return undefined;
    const tools = current();
    if (!tools || same(lastExposed(event.context.contextMessages), tools)) return undefined;
    return { entries: [...event.entries, { type: "custom_message" as const, ...message(tools) }] };
  });
}
