// machines/tool-records.ts: the bounded UTF-8 previews every nested-call record carries (their byte counts are what
// a record says of an input, a result or an error) and the records built from what a machine knows of a call.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { callRecord, EMPTY_PREVIEW, isoTime, preview, PREVIEW_BYTES } from "../../machines/tool-records.ts";
import type { DispatchInput } from "../../machines/tool-events.ts";

describe("preview byte counts", () => {
  test("every UTF-8 length class and its edges, surrogate pairs, and lone surrogates (as U+FFFD) count as Node encodes them", () => {
    const texts = [
      "",
      "a",
      "\u007f",
      "\u0080",
      "é",
      "\u07ff",
      "\u0800",
      "€",
      "\ud7ff",
      "\ue000",
      "\uffff",
      "𝄞",
      "\ud800\udc00",
      "\udbff\udfff",
      "a\ud800",
      "\ud800",
      "\ud800a",
      "\ud800\ud800",
      "\udbff\ue000",
      "\ud800\ud7ff",
      "\udc00",
      "\udfff\ud800",
      "x𝄞y€zé",
      "𝄞".repeat(3) + "\ud83d",
      // Lone low surrogates after characters that are not high surrogates: each counts alone.
      "€\udc00",
      "\u0800\udc00",
      "\ue000\udc00",
      "\udc00\udc00",
      "é\udc00",
    ];
    for (const text of texts) {
      const p = preview(text);
      assert.equal(p.bytes, Buffer.byteLength(text, "utf8"), JSON.stringify(text));
      assert.deepEqual(p, { text, bytes: p.bytes, truncated: false });
    }
  });

  test("a surrogate pair after a lone high surrogate counts once, as a pair", () => {
    assert.equal(preview("\ud800\ud800\udc00").bytes, 3 + 4);
    assert.equal(preview("\ud800\udc00\udc00").bytes, 4 + 3);
  });
});

describe("truncated previews", () => {
  test("at most the limit in whole characters, with the size of the whole", () => {
    assert.deepEqual(preview("a".repeat(PREVIEW_BYTES)), {
      text: "a".repeat(PREVIEW_BYTES),
      bytes: PREVIEW_BYTES,
      truncated: false,
    });
    const over = preview("a".repeat(PREVIEW_BYTES + 1));
    assert.deepEqual(over, { text: "a".repeat(PREVIEW_BYTES), bytes: PREVIEW_BYTES + 1, truncated: true });
    const long = preview("a".repeat(10 * PREVIEW_BYTES));
    assert.equal(long.text, "a".repeat(PREVIEW_BYTES));
    assert.equal(long.bytes, 10 * PREVIEW_BYTES);
    const euros = preview("€".repeat(2000));
    assert.equal(euros.text, "€".repeat(Math.floor(PREVIEW_BYTES / 3)), "never half a character");
    assert.equal(euros.bytes, 6000);
    assert.equal(euros.truncated, true);
    const clefs = preview("𝄞".repeat(5000));
    assert.equal(clefs.text, "𝄞".repeat(PREVIEW_BYTES / 4));
    assert.equal(clefs.bytes, 20000);
  });

  test("a smaller limit and a given byte length are honoured", () => {
    assert.deepEqual(preview("abcdef", 4), { text: "abcd", bytes: 6, truncated: true });
    assert.deepEqual(preview("é€", 4), { text: "é", bytes: 5, truncated: true });
    assert.deepEqual(preview("abc", 4, () => 99), { text: "abc".slice(0, 3), bytes: 99, truncated: true });
    assert.deepEqual(EMPTY_PREVIEW, { text: "", bytes: 0, truncated: false });
  });
});

describe("call records", () => {
  const call: DispatchInput = {
    runId: "r1",
    callId: "c1",
    seq: 2,
    childId: "tool:r1:2",
    parentId: "call_9",
    name: "my-search",
    python: "my_search",
    args: { query: "q", n: 1 },
    at: Date.UTC(2026, 0, 2, 3, 4, 5, 6),
  };

  test("from a call's dispatch input: names, ids, start time, duration and the arguments' preview", () => {
    assert.equal(isoTime(call.at), "2026-01-02T03:04:05.006Z");
    assert.deepEqual(callRecord(call, { status: "cancelled", at: call.at + 250 }), {
      parentId: "call_9",
      childId: "tool:r1:2",
      runId: "r1",
      seq: 2,
      registeredName: "my-search",
      pythonName: "my_search",
      startedAt: "2026-01-02T03:04:05.006Z",
      durationMs: 250,
      status: "cancelled",
      input: { text: '{"query":"q","n":1}', bytes: 19, truncated: false },
    });
  });

  test("a clock that went back gives a duration of 0; a given duration, input and error are kept", () => {
    assert.equal(callRecord(call, { status: "failed", at: call.at - 5 }).durationMs, 0);
    const error = preview("boom");
    const input = preview("given");
    const r = callRecord(call, { status: "failed", at: call.at + 1, durationMs: 7, input, error });
    assert.equal(r.durationMs, 7);
    assert.equal(r.input, input);
    assert.equal(r.error, error);
    assert.equal("error" in callRecord(call, { status: "succeeded", at: call.at }), false);
  });
});
