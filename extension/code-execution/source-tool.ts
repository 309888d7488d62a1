// The `code_execution_source` tool (read a saved script without running it) and the lookup code_execution uses
// for `sourceId`: the verified saved file, or, when that file is missing, the one script with that ID among an
// earlier session's legacy-named files (legacy-refs.ts), else among the code_execution calls on the current session
// branch (never another branch).
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { ArtifactUnavailableError, PAGE_BYTES } from "../../store/artifact-fs.ts";
import { loadSource, pageOf, readSourcePage, sourceIdOf, type SourcePage } from "../../store/sources.ts";
import { legacySourcesWithId } from "../../store/legacy-artifacts.ts";
import {
  describeRef,
  isPlaceholder,
  legacySourceRefSchema,
  resolveLegacySource,
  type LegacySourceRef,
} from "./legacy-refs.ts";
import { restoreScript, type JournalLink } from "../../host/index.ts";
import { SOURCE_ID_PATTERN } from "./params.ts";
import { sourceToolRenderers } from "../shared/render-pages.ts";

export const pageParams = {
  offset: Type.Optional(
    Type.Integer({
      minimum: 0,
      description: "UTF-8 byte offset to start at (default 0); use the previous page's next offset.",
    }),
  ),
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: `Bytes to return, at most ${PAGE_BYTES} (the default; larger is capped).`,
    }),
  ),
};

/** Scripts on the current branch whose ID is `sourceId` (distinct texts: more than one is a prefix collision). */
export function branchSources(ctx: ExtensionContext, sourceId: string): string[] {
  const found = new Set<string>();
  for (const entry of ctx.sessionManager.getBranch()) {
    if (entry.type !== "message" || entry.message.role !== "assistant") continue;
    const content = entry.message.content;
    if (!Array.isArray(content)) continue;
    for (const block of content) {
      if (block.type !== "toolCall" || block.name !== "code_execution") continue;
      const code = (block.arguments as Record<string, unknown>)?.code;
      if (typeof code === "string" && !isPlaceholder(code) && sourceIdOf(code) === sourceId) found.add(code);
    }
  }
  return [...found];
}

const NO_RETRY = "Do not retry with this sourceId; send the script as `code` instead.";

/** The exact script for `sourceId`, or an Error whose message says why and not to retry. */
export async function resolveSource(sourceId: string, ctx: ExtensionContext): Promise<string> {
  try {
    return await loadSource(sourceId);
  } catch (e) {
    if (!(e instanceof ArtifactUnavailableError && e.missing))
      throw new Error(`Source ${sourceId} cannot be used: ${(e as Error).message}. ${NO_RETRY}`);
  }
  // Not under its own name: an earlier session's script saved under its longer legacy name, or the branch's copy.
  const legacy = await legacySourcesWithId(sourceId);
  if (legacy.length > 1)
    throw new Error(
      `Source ${sourceId} is ambiguous: ${legacy.length} different saved scripts start with this ID; pass the full \`sourceRef\` instead. ${NO_RETRY}`,
    );
  const found = legacy.length ? legacy : branchSources(ctx, sourceId);
  if (found.length === 1) {
    // Put it back where it belongs; a failure here does not stop the run.
    await restoreScript(found[0]);
    return found[0];
  }
  if (found.length > 1)
    throw new Error(
      `Source ${sourceId} is ambiguous: ${found.length} different scripts on this session branch have this ID. ${NO_RETRY}`,
    );
  throw new Error(
    `Source ${sourceId} is not available: it is not saved and no code_execution call on this session branch has it. ${NO_RETRY}`,
  );
}

export function registerSourceTool(pi: ExtensionAPI, journal: JournalLink): void {
  pi.registerTool({
    ...sourceToolRenderers,
    name: "code_execution_source",
    label: "Python source",
    description: `Read a script saved by code_execution (its \`sourceId\`) without running it, in pages of at most ${PAGE_BYTES} bytes.`,
    promptSnippet: "Read a saved code_execution script by sourceId without running it",
    parameters: Type.Object(
      {
        sourceId: Type.Optional(
          Type.String({
            pattern: SOURCE_ID_PATTERN,
            description: "The script's sourceId (12 hex characters).",
          }),
        ),
        // pi-code-execution's earlier reference (resumed sessions): give it instead of `sourceId`.
        sourceRef: Type.Optional(legacySourceRefSchema),
        ...pageParams,
      },
      { additionalProperties: false },
    ),
    async execute(toolCallId, params, _signal, _onUpdate, ctx) {
      return journal.record("code_execution_source", toolCallId, { ...params }, ctx, async () => {
        const legacy = params.sourceRef as LegacySourceRef | undefined;
        if ((params.sourceId === undefined) === (legacy === undefined))
          throw new Error("code_execution_source: give `sourceId` (or an earlier session's `sourceRef`), exactly one.");
        let page: SourcePage;
        if (legacy) {
          // The script it names (verified, or recovered from the branch and saved again), paged under its sourceId.
          const code = await resolveLegacySource(legacy, ctx);
          page = pageOf(sourceIdOf(code), code, params);
        } else {
          const sourceId = params.sourceId!;
          try {
            page = await readSourcePage(sourceId, params);
          } catch (e) {
            if (!(e instanceof ArtifactUnavailableError)) throw e;
            if (!e.missing) throw new Error(`Source ${sourceId} cannot be read: ${e.message}.`);
            // Not saved here: a legacy file or the current branch may still hold it; resolveSource saves it back.
            const code = await resolveSource(sourceId, ctx);
            page = await readSourcePage(sourceId, params).catch(() => pageOf(sourceId, code, params));
          }
        }
        const moved = params.offset !== undefined && page.offset !== params.offset;
        const range =
          page.end > page.offset
            ? `bytes ${page.offset}-${page.end - 1} of ${page.totalBytes}`
            : `no bytes at offset ${page.offset}`;
        const next = page.end < page.totalBytes ? `next offset ${page.end}` : "end of source";
        const was = legacy ? ` (was ${describeRef(legacy)})` : "";
        const header = `[source ${page.sourceId}${was}, ${page.lines} lines: ${range}; ${next}${moved ? ` (offset moved back to the start of a character)` : ""}]`;
        return {
          content: [{ type: "text" as const, text: `${header}\n${page.text}` }],
          details: {
            sourceId: page.sourceId,
            offset: page.offset,
            ...(page.end < page.totalBytes ? { nextOffset: page.end } : {}),
            bytes: page.end - page.offset,
            totalBytes: page.totalBytes,
            lines: page.lines,
            done: page.end >= page.totalBytes,
          },
        };
      });
    },
  });
}
