// Pure helpers for nested-call records: bounded UTF-8 previews and records built from what a machine knows. Shared by
// the machines (records of calls that never reported) and actors/calls/dispatch.ts (every other record).
import type { DispatchInput, NestedCallRecord, NestedCallStatus, Preview } from "./tool-events.ts";

/** Previews of inputs, results and errors keep at most this many UTF-8 bytes. */
export const PREVIEW_BYTES = 4096;

const encoder = new TextEncoder();

function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3; // a lone surrogate is encoded as U+FFFD
    } else n += 3;
  }
  return n;
}

/** The first `limit` UTF-8 bytes of `text`, never splitting a character, with the exact size of the whole. */
export function preview(text: string, limit = PREVIEW_BYTES, byteLength: (s: string) => number = utf8Length): Preview {
  const bytes = byteLength(text);
  if (bytes <= limit) return { text, bytes, truncated: false };
  // encodeInto writes whole characters only, so `read` ends on a character boundary.
  const { read } = encoder.encodeInto(text.length > limit * 2 ? text.slice(0, limit * 2) : text, new Uint8Array(limit));
  return { text: text.slice(0, read), bytes, truncated: true };
}

export const EMPTY_PREVIEW: Preview = { text: "", bytes: 0, truncated: false };

/** ISO 8601 of an epoch time in ms (no clock is read). */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/** A record for a call, from what is known of it: its dispatch input, a status and when it ended. */
export function callRecord(
  call: DispatchInput,
  extra: { status: NestedCallStatus; at: number; input?: Preview; error?: Preview; durationMs?: number },
): NestedCallRecord {
  return {
    parentId: call.parentId,
    childId: call.childId,
    runId: call.runId,
    seq: call.seq,
    registeredName: call.name,
    pythonName: call.python,
    startedAt: isoTime(call.at),
    durationMs: extra.durationMs ?? Math.max(0, extra.at - call.at),
    status: extra.status,
    input: extra.input ?? preview(JSON.stringify(call.args)),
    ...(extra.error ? { error: extra.error } : {}),
  };
}
