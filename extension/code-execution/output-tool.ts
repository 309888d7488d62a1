// The `code_execution_output` tool: pages through a run's saved transcript by UTF-8 byte offset, so output the
// preview left out is recovered without running the code (and its side effects) again. Every read verifies the
// artifact first (store/artifacts.ts; an earlier session's `outputRef`: store/legacy-artifacts.ts).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { ArtifactUnavailableError, PAGE_BYTES } from "../../store/artifact-fs.ts";
import { readOutputPage } from "../../store/artifacts.ts";
import { readLegacyOutputPage } from "../../store/legacy-artifacts.ts";
import { legacyOutputRefSchema, type LegacyOutputRef } from "./legacy-refs.ts";
import type { JournalLink } from "../../host/index.ts";
import { pageParams } from "./source-tool.ts";
import { outputToolRenderers } from "../shared/render-pages.ts";

export function registerOutputTool(pi: ExtensionAPI, journal: JournalLink): void {
  pi.registerTool({
    ...outputToolRenderers,
    name: "code_execution_output",
    label: "Python output",
    description: `Read the saved output of an earlier code_execution run by its \`outputId\` (given when the result showed only a preview), in pages of at most ${PAGE_BYTES} bytes. Nothing is rerun.`,
    promptSnippet: "Read the full saved output of a code_execution run by outputId, page by page",
    promptGuidelines: [
      "When a code_execution result ends with an `outputId:` line, read omitted output with code_execution_output instead of rerunning the code.",
    ],
    parameters: Type.Object(
      {
        outputId: Type.Optional(
          Type.String({
            pattern: "^[0-9a-f]{12}$",
            description: "The outputId from a code_execution result (12 hex characters).",
          }),
        ),
        // pi-code-execution's earlier reference (resumed sessions): give it instead of `outputId`.
        outputRef: Type.Optional(legacyOutputRefSchema),
        ...pageParams,
      },
      { additionalProperties: false },
    ),
    async execute(toolCallId, params, _signal, _onUpdate, ctx) {
      return journal.record("code_execution_output", toolCallId, { ...params }, ctx, async () => {
        const legacy = params.outputRef as LegacyOutputRef | undefined;
        if ((params.outputId === undefined) === (legacy === undefined))
          throw new Error("code_execution_output: give `outputId` (or an earlier session's `outputRef`), exactly one.");
        const name = legacy ? legacy.artifactId : params.outputId!;
        let page;
        try {
          page = legacy ? await readLegacyOutputPage(legacy, params) : await readOutputPage(params.outputId!, params);
        } catch (e) {
          if (e instanceof ArtifactUnavailableError)
            throw new Error(
              `Output ${name} cannot be read: ${e.message}. Do not retry this reference; rerun the source only if repeating its effects is safe.`,
            );
          throw e;
        }
        const { ref } = page;
        const size = ref.retainedBytes;
        const moved = params.offset !== undefined && page.offset !== params.offset;
        const range =
          page.end > page.offset
            ? `bytes ${page.offset}-${page.end - 1} of ${size}`
            : `no bytes at offset ${page.offset}`;
        const next =
          page.end < size
            ? `next offset ${page.end}`
            : ref.truncated
              ? `end of the saved output (the run emitted ${ref.emittedBytes} bytes; the rest was not kept)`
              : "end of output";
        const header = `[output ${name}: ${range}; ${next}${moved ? " (offset moved back to the start of a character)" : ""}]`;
        return {
          content: [{ type: "text" as const, text: `${header}\n${page.text}` }],
          details: {
            ...(legacy ? { artifactId: legacy.artifactId } : { outputId: ref.outputId }),
            offset: page.offset,
            ...(page.end < size ? { nextOffset: page.end } : {}),
            bytes: page.end - page.offset,
            totalBytes: size,
            emittedBytes: ref.emittedBytes,
            truncated: ref.truncated,
            done: page.end >= size,
          },
        };
      });
    },
  });
}
