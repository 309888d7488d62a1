// The `context` hook: before each model call, older completed code_execution scripts are replaced by their
// saved source's ID (`{"sourceId": "<12 hex>", ...other arguments}`), so long scripts stop costing context on
// every turn. The latest script stays inline. A script is replaced only once it is saved, and only when the
// reference is at least 64 bytes smaller than the inline arguments. Pi's session keeps the full calls; only
// what the model is sent changes.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { saveSource, sourceIdOf } from "../store/sources.ts";

/** The reference must save at least this many bytes of serialized arguments (JSON escapes, UTF-8). */
export const MIN_SAVING_BYTES = 64;

type Message = { role: string; content?: unknown; toolCallId?: string; toolName?: string };
type ToolCallBlock = { type: "toolCall"; id: string; name: string; arguments: Record<string, unknown> };

const isScriptCall = (b: unknown): b is ToolCallBlock & { arguments: { code: string } } => {
  const block = b as ToolCallBlock;
  return (
    block?.type === "toolCall" &&
    block.name === "code_execution" &&
    typeof block.arguments === "object" &&
    block.arguments !== null &&
    typeof block.arguments.code === "string"
  );
};

const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), "utf8");

/** The arguments with `code` replaced by `sourceId`, or undefined when that does not save enough. */
export function referenceArguments(
  args: Record<string, unknown>,
  sourceId: string,
): Record<string, unknown> | undefined {
  const { code: _code, ...rest } = args;
  const ref = { sourceId, ...rest };
  return jsonBytes(ref) + MIN_SAVING_BYTES <= jsonBytes(args) ? ref : undefined;
}

export class ScriptRedactor {
  /** Sources known saved by this process: each is saved (and verified) once, not on every model call. */
  private readonly saved = new Set<string>();
  private readonly save: (code: string) => Promise<string>;

  constructor(save: (code: string) => Promise<string> = (code) => saveSource(code)) {
    this.save = save;
  }

  /** The messages with older completed scripts replaced, or undefined when nothing changes. */
  async redact<M extends Message>(messages: M[]): Promise<M[] | undefined> {
    const completed = new Set<string>();
    let latest: string | undefined;
    for (const m of messages) {
      if (m.role === "toolResult" && m.toolName === "code_execution" && m.toolCallId) completed.add(m.toolCallId);
      if (m.role === "assistant" && Array.isArray(m.content))
        for (const b of m.content) if (isScriptCall(b)) latest = b.id;
    }
    let changed = false;
    const out: M[] = [];
    for (const m of messages) {
      if (m.role !== "assistant" || !Array.isArray(m.content)) {
        out.push(m);
        continue;
      }
      const content: unknown[] = [];
      for (const b of m.content) {
        if (!isScriptCall(b) || b.id === latest || !completed.has(b.id)) {
          content.push(b);
          continue;
        }
        const sourceId = sourceIdOf(b.arguments.code);
        const ref = referenceArguments(b.arguments, sourceId);
        if (!ref || !(await this.ensureSaved(b.arguments.code, sourceId))) {
          content.push(b);
          continue;
        }
        content.push({ ...b, arguments: ref });
        changed = true;
      }
      out.push({ ...m, content });
    }
    return changed ? out : undefined;
  }

  private async ensureSaved(code: string, sourceId: string): Promise<boolean> {
    if (this.saved.has(sourceId)) return true;
    try {
      await this.save(code);
      this.saved.add(sourceId);
      return true;
    } catch {
      // Not saved (collision, unwritable): the script stays inline.
      return false;
    }
  }
}

export function registerContextHook(pi: ExtensionAPI): void {
  const redactor = new ScriptRedactor();
  pi.on("context", async (event) => {
    const messages = await redactor.redact(event.messages as Message[]);
    return messages ? { messages: messages as typeof event.messages } : undefined;
  });
}
