// The `context` hook: before each model call, older completed code_execution scripts are replaced by their
// saved source's ID (`{"sourceId": "<12 hex>", ...other arguments}`), so long scripts stop costing context on
// every turn. The latest script stays inline. A script is replaced only once it is saved, and only when the
// reference is at least 64 bytes smaller than the inline arguments. An earlier version's placeholder in `code` (a
// resumed session) is shown as the structured `sourceRef` it names. Pi's session keeps the full calls; only what the
// model is sent changes.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { saveScript } from "../../host/index.ts";
import { sourceIdOf } from "../../store/sources.ts";
import { isPlaceholder, placeholderRef } from "./legacy-refs.ts";

/** The reference must save at least this many bytes of serialized arguments (JSON escapes, UTF-8). */
export const MIN_SAVING_BYTES = 64;

type Message = { role: string; content?: unknown; toolCallId?: string; toolName?: string };
type ToolCallBlock = { type: "toolCall"; id: string; name: string; arguments: Record<string, unknown> };

const hasCode = (b: unknown): b is ToolCallBlock & { arguments: { code: string } } => {
  const block = b as ToolCallBlock;
  return (
    block?.type === "toolCall" &&
    block.name === "code_execution" &&
    typeof block.arguments === "object" &&
    block.arguments !== null &&
    typeof block.arguments.code === "string"
  );
};

/** A call whose `code` is a script (an earlier version's placeholder is not one: see `legacyArguments`). */
const isScriptCall = (b: unknown): b is ToolCallBlock & { arguments: { code: string } } =>
  hasCode(b) && !isPlaceholder(b.arguments.code);

/** An earlier version's placeholder in `code` (a resumed session), as the structured `sourceRef` it names: a legacy
 * artifact name cannot be a sourceId. Undefined for anything else (also for a placeholder that names no file). */
export function legacyArguments(b: unknown): Record<string, unknown> | undefined {
  if (!hasCode(b)) return undefined;
  const ref = placeholderRef(b.arguments.code);
  if (!ref || ref === "unresolvable") return undefined;
  const { code: _code, sourceRef: _old, ...rest } = b.arguments;
  return { ...rest, sourceRef: { ...ref, ...(ref.toolCallId ? {} : { toolCallId: b.id }) } };
}

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

/** How many saved sources a redactor remembers (oldest forgotten first). */
const SAVED_REMEMBERED = 4096;

export class ScriptRedactor {
  /** Sources known saved by this process: each is saved (and verified) once, not on every model call. */
  private readonly saved = new Set<string>();
  /** Per script call id (with its code, as ids may repeat across sessions): its reference arguments, or null
   * when a reference does not save enough. */
  private readonly decided = new Map<string, { code: string; ref: Record<string, unknown> | null }>();
  private readonly save: (code: string) => Promise<string>;

  constructor(save: (code: string) => Promise<string> = saveScript) {
    this.save = save;
  }

  /** The messages with older completed scripts replaced, or undefined when nothing changes. */
  async redact<M extends Message>(messages: M[]): Promise<M[] | undefined> {
    const completed = new Set<string>();
    const present = new Set<string>();
    let latest: string | undefined;
    for (const m of messages) {
      if (m.role === "toolResult" && m.toolName === "code_execution" && m.toolCallId) completed.add(m.toolCallId);
      if (m.role === "assistant" && Array.isArray(m.content))
        for (const b of m.content)
          if (isScriptCall(b)) {
            latest = b.id;
            present.add(b.id);
          }
    }
    // Decisions for calls no longer in the context (compacted away, or a new session) are dropped: each holds its
    // script, and a long session would otherwise keep every script it ever ran.
    if (this.decided.size > present.size)
      for (const id of this.decided.keys()) if (!present.has(id)) this.decided.delete(id);
    let changed = false;
    const out: M[] = [];
    for (const m of messages) {
      if (
        m.role !== "assistant" ||
        !Array.isArray(m.content) ||
        !m.content.some((b) => this.candidate(b, latest, completed) || legacyArguments(b))
      ) {
        out.push(m); // unchanged messages are passed on as they are (no copy per message per model call)
        continue;
      }
      const content: unknown[] = [];
      for (const b of m.content) {
        const ref = this.candidate(b, latest, completed) ? await this.reference(b) : legacyArguments(b);
        content.push(ref ? { ...b, arguments: ref } : b);
        if (ref) changed = true;
      }
      out.push({ ...m, content });
    }
    return changed ? out : undefined;
  }

  private candidate(
    b: unknown,
    latest: string | undefined,
    completed: Set<string>,
  ): b is ToolCallBlock & {
    arguments: { code: string };
  } {
    return isScriptCall(b) && b.id !== latest && completed.has(b.id) && this.decision(b)?.ref !== null;
  }

  /** The reference arguments of a completed script call, decided once per call id (hash, sizes and save). */
  private async reference(
    b: ToolCallBlock & { arguments: { code: string } },
  ): Promise<Record<string, unknown> | undefined> {
    const decided = this.decision(b)?.ref;
    if (decided) return decided;
    const sourceId = sourceIdOf(b.arguments.code);
    const ref = referenceArguments(b.arguments, sourceId);
    if (!ref) {
      this.decided.set(b.id, { code: b.arguments.code, ref: null });
      return undefined;
    }
    if (!(await this.ensureSaved(b.arguments.code, sourceId))) return undefined;
    this.decided.set(b.id, { code: b.arguments.code, ref });
    return ref;
  }

  private decision(b: ToolCallBlock & { arguments: { code: string } }) {
    const d = this.decided.get(b.id);
    return d && d.code === b.arguments.code ? d : undefined;
  }

  /** How many decisions are held (tests). */
  get decisions(): number {
    return this.decided.size;
  }

  private async ensureSaved(code: string, sourceId: string): Promise<boolean> {
    if (this.saved.has(sourceId)) return true;
    try {
      await this.save(code);
      // A bounded memory of what was saved: a forgotten source is saved (verified) again when next needed.
      if (this.saved.size >= SAVED_REMEMBERED) this.saved.delete(this.saved.values().next().value!);
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
