// pi-code-execution's earlier references, kept valid in resumed sessions (its README: "Legacy structured sourceRef
// objects and path-bearing or XML-like placeholders remain valid"): the `sourceRef` object, the placeholders an
// earlier context hook put in `code` (`<code_execution_source_redacted artifact="…" …>`, the same with `path="…"`,
// and `# previous code_execution source saved to <path> (…)`), and code_execution_output's `outputRef` object.
// A placeholder becomes the sourceRef it names; a sourceRef loads its verified script, or when the file is gone, the
// matching script among the code_execution calls on the current branch (the one the ref's toolCallId names first).
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { ArtifactUnavailableError } from "../../store/artifact-fs.ts";
import { loadLegacySource, matchesLegacySource, type LegacySourceRef } from "../../store/legacy-artifacts.ts";
import { restoreScript } from "../../host/index.ts";

export type { LegacyOutputRef, LegacySourceRef } from "../../store/legacy-artifacts.ts";

export const legacySourceRefSchema = Type.Object(
  {
    artifactId: Type.String({
      pattern: "^(?:[0-9a-f]{16}|[0-9a-f]{64})\\.py$",
      description: "The saved script's artifact name (16 or 64 hex characters, then .py).",
    }),
    lines: Type.Integer({ minimum: 1, description: "The script's line count." }),
    sha256: Type.String({ pattern: "^[0-9a-f]{12,64}$", description: "The script's SHA-256 digest (or its start)." }),
    toolCallId: Type.Optional(Type.String({ description: "The code_execution call that ran it." })),
  },
  {
    additionalProperties: false,
    description: "A saved script's reference from an earlier session (pass it unchanged); prefer `sourceId`.",
  },
);

export const legacyOutputRefSchema = Type.Object(
  {
    artifactId: Type.String({ pattern: "^[0-9a-f]{64}\\.out$", description: "The saved output's artifact name." }),
    emittedBytes: Type.Integer({ minimum: 1 }),
    lines: Type.Integer({ minimum: 1 }),
    retainedBytes: Type.Integer({ minimum: 1 }),
    retainedLines: Type.Integer({ minimum: 1 }),
    sha256: Type.String({ pattern: "^[0-9a-f]{64}$" }),
    toolCallId: Type.String({ minLength: 1 }),
    truncated: Type.Boolean(),
  },
  {
    additionalProperties: false,
    description: "A saved output's reference from an earlier session (pass it unchanged); prefer `outputId`.",
  },
);

const ARTIFACT_PLACEHOLDER =
  /^<code_execution_source_redacted artifact="(?<artifactId>(?:[0-9a-f]{16}|[0-9a-f]{64})\.py)"(?: tool_call_id="(?<toolCallId>[^"]+)")? lines="(?<lines>\d+)" sha256="(?<sha256>[0-9a-f]{12,64})">$/;
const PATH_PLACEHOLDER =
  /^<code_execution_source_redacted path="(?<path>[^"]+\.py)"(?: tool_call_id="(?<toolCallId>[^"]+)")? lines="(?<lines>\d+)" sha256="(?<sha256>[0-9a-f]{12,64})">$/;
const PATH_COMMENT =
  /^# previous code_execution source saved to (?<path>.+\.py) \((?<lines>\d+) lines, sha256:(?<sha256>[0-9a-f]{12,64})\)$/;
/** The oldest form names no file: nothing can be loaded from it. */
const PATHLESS_COMMENT = /^# code omitted after execution \(\d+ lines, sha256:[0-9a-f]+\)$/;

/** What a `code` argument that is an earlier placeholder names: its sourceRef, "unresolvable" for a placeholder that
 * names no saved script, or undefined when `code` is a script. */
export function placeholderRef(code: string): LegacySourceRef | "unresolvable" | undefined {
  const t = code.trim();
  if (!t.startsWith("<code_execution_source_redacted ") && !t.startsWith("# ")) return undefined;
  const g = (ARTIFACT_PLACEHOLDER.exec(t) ?? PATH_PLACEHOLDER.exec(t) ?? PATH_COMMENT.exec(t))?.groups;
  if (!g)
    return PATHLESS_COMMENT.test(t) || t.startsWith("<code_execution_source_redacted ") ? "unresolvable" : undefined;
  const artifactId = g.artifactId ?? g.path!.split(/[\\/]/).at(-1)!;
  if (!/^(?:[0-9a-f]{16}|[0-9a-f]{64})\.py$/.test(artifactId)) return "unresolvable";
  let toolCallId: string | undefined;
  try {
    toolCallId = g.toolCallId ? decodeURIComponent(g.toolCallId) : undefined;
  } catch {
    toolCallId = undefined;
  }
  return { artifactId, lines: Number(g.lines), sha256: g.sha256!, ...(toolCallId ? { toolCallId } : {}) };
}

/** Whether a tool call's `code` is an earlier placeholder rather than a script. */
export const isPlaceholder = (code: string): boolean => placeholderRef(code) !== undefined;

const NO_RETRY = "Do not retry with this reference; send the script as `code` instead.";

export const describeRef = (ref: LegacySourceRef) => `${ref.artifactId} (${ref.lines} lines, sha256 ${ref.sha256})`;

/** The exact script a legacy sourceRef names, or an Error whose message says why and not to retry. A script found
 * only on the branch is saved again, under its sourceId (the ID the context hook will show from now on). */
export async function resolveLegacySource(ref: LegacySourceRef, ctx: ExtensionContext): Promise<string> {
  try {
    return await loadLegacySource(ref);
  } catch (e) {
    if (!(e instanceof ArtifactUnavailableError && e.missing))
      throw new Error(`Source ${describeRef(ref)} cannot be used: ${(e as Error).message}. ${NO_RETRY}`);
  }
  const candidates: { id: string; code: string }[] = [];
  for (const entry of ctx.sessionManager.getBranch()) {
    if (entry.type !== "message" || entry.message.role !== "assistant" || !Array.isArray(entry.message.content))
      continue;
    for (const block of entry.message.content) {
      if (block.type !== "toolCall" || block.name !== "code_execution") continue;
      const code = (block.arguments as Record<string, unknown>)?.code;
      if (typeof code === "string" && !isPlaceholder(code)) candidates.push({ id: block.id, code });
    }
  }
  const ordered = [
    ...candidates.filter((c) => c.id === ref.toolCallId),
    ...candidates.filter((c) => c.id !== ref.toolCallId),
  ];
  const found = ordered.find((c) => matchesLegacySource(c.code, ref));
  if (!found)
    throw new Error(
      `Source ${describeRef(ref)} is not available: it is not saved and no code_execution call on this session branch has it. ${NO_RETRY}`,
    );
  await restoreScript(found.code);
  return found.code;
}
