// `write_stdin {session_id, chars?, chars_b64?, yield_time_ms?, yield_until?}`: writes bytes to a session (or
// only polls it), then waits: for the process to answer (input without a window), for the window (input with
// one), or, for an empty poll, until it exits or the relative or absolute deadline passes. The wait or its
// cancellation never touches the process.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { processDetails, processStructured, processText } from "./envelope.ts";
import { backendDetails } from "../shared/backend-mark.ts";
import { LONG_UPDATE_MS, liveFeed, SHORT_UPDATE_MS } from "./live.ts";
import { DEFAULT_WRITE_YIELD_MS, MAX_YIELD_MS, parseDeadline, pollWindow, utcNow, writeInput, yieldWindow } from "./params.ts";
import { execRenderers } from "./render.ts";
import { processOutputSchema, writeStdinParams } from "./schemas.ts";
import type { ExecToolDeps } from "./tool-deps.ts";

export const WRITE_STDIN = "write_stdin";

export function registerWriteStdinTool(pi: ExtensionAPI, deps: ExecToolDeps): void {
  pi.registerTool({
    ...execRenderers.write_stdin,
    name: WRITE_STDIN,
    label: "write_stdin",
    description:
      "Write bytes to a running session, or poll it (no chars). `chars` takes C-style escapes (\\x03 Ctrl-C, \\x04 Ctrl-D, \\x1b ESC, \\n, \\r); `chars_b64` takes exact bytes. Empty polls wait for the exit up to yield_time_ms (default and minimum 5 s, no built-in maximum; an operator cap may refuse longer ones) or until yield_until (absolute UTC, only when the human asks). Returns the output since the last call.",
    promptSnippet: "Send input to or poll a running session",
    promptGuidelines: [
      "Empty write_stdin polls default to (and wait at least) 5 seconds and take any finite yield_time_ms above: choose it from the job's expected duration. Exit or cancellation returns early; cancellation leaves the process running.",
      'Use yield_until only when the human explicitly asks for a long attached wait or a UTC deadline (compute it from tool_time_utc), and never for REPLs, servers, watchers, ssh, sudo or prompts.',
      "In tty sessions submit lines with \\r (the Enter key). Send \\x03 to interrupt.",
      'Observing an exit here consumes an armed wake; set_on_exit(session_id, "none") disarms a wake without killing.',
    ],
    parameters: writeStdinParams,
    outputSchema: processOutputSchema,
    async execute(toolCallId, params, signal, onUpdate, ctx) {
      const journalArgs = {
        session_id: params.session_id,
        ...(params.chars !== undefined ? { charsBytes: Buffer.byteLength(params.chars) } : {}),
        ...(params.chars_b64 !== undefined ? { charsB64Length: params.chars_b64.length } : {}),
        ...(params.yield_time_ms !== undefined ? { yield_time_ms: params.yield_time_ms } : {}),
        ...(params.yield_until !== undefined ? { yield_until: params.yield_until } : {}),
      };
      return deps.journal.record(WRITE_STDIN, toolCallId, journalArgs, ctx, async () => {
        const input = writeInput(params.chars, params.chars_b64);
        if (!input.ok) throw new Error(`write_stdin: ${input.error}`);
        const bytes = input.value;
        const hasInput = bytes !== undefined && bytes.length > 0;
        const until = typeof params.yield_until === "string" && params.yield_until.length > 0 ? params.yield_until : undefined;
        if (until !== undefined && params.yield_time_ms !== undefined)
          throw new Error(`write_stdin: pass either yield_time_ms or yield_until, not both. tool_time_utc: ${utcNow()}`);
        if (until !== undefined && hasInput)
          throw new Error(
            `write_stdin: yield_until is only for an empty poll; send the input with yield_time_ms first, then poll. tool_time_utc: ${utcNow()}`,
          );
        let durationMs: number;
        let waitMode: "relative" | "absolute" | undefined;
        let yieldUntil: string | undefined;
        if (hasInput) {
          const w = yieldWindow(params.yield_time_ms, DEFAULT_WRITE_YIELD_MS);
          if (!w.ok) throw new Error(`write_stdin: ${w.error}`);
          durationMs = w.value;
        } else if (until !== undefined) {
          const d = parseDeadline(until, Date.now());
          if (!d.ok) throw new Error(`write_stdin: ${d.error}`);
          durationMs = d.value.remainingMs;
          waitMode = "absolute";
          yieldUntil = d.value.at;
        } else {
          // A refused cap fails relative polls only where it leaves no cap in force (a lower layer's still holds).
          const { values, refused } = deps.settings();
          const bad = values.execMaxEmptyPollMs === undefined ? refused?.execMaxEmptyPollMs : undefined;
          const w = pollWindow(params.yield_time_ms, bad ? { refused: bad } : { ms: values.execMaxEmptyPollMs });
          if (!w.ok) throw new Error(`write_stdin: ${w.error}`);
          durationMs = w.value;
          waitMode = "relative";
        }
        const host = deps.host();
        const io = host.exec.io(params.session_id);
        const live =
          onUpdate && io
            ? liveFeed(
                onUpdate as never,
                {
                  operation: WRITE_STDIN,
                  ...(yieldUntil ? { yield_until: yieldUntil } : { yield_time_ms: durationMs }),
                },
                durationMs <= MAX_YIELD_MS && waitMode !== "absolute" ? SHORT_UPDATE_MS : LONG_UPDATE_MS,
              )
            : undefined;
        if (live && io) live.watch(io);
        const r = await host.exec
          .write({
            id: params.session_id,
            ...(bytes ? { bytes } : {}),
            until: hasInput && params.yield_time_ms === undefined ? "answer" : "full",
            durationMs,
            callId: toolCallId,
            ...(signal ? { signal } : {}),
          })
          .finally(() => live?.stop());
        if (!r.ok) throw new Error(`write_stdin: ${r.error}`);
        const d = processDetails(WRITE_STDIN, r.value, {
          ...(waitMode ? { waitMode } : {}),
          ...(yieldUntil ? { yieldUntil } : {}),
          ...(waitMode !== "absolute" ? { yieldTimeMs: durationMs } : {}),
        });
        Object.assign(d, backendDetails(deps.host().backend()));
        return { content: [{ type: "text" as const, text: processText(d) }], details: d, structuredContent: processStructured(d) };
      });
    },
  });
}
