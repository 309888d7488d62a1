// The model-visible head-tail preview (extension/code-execution/preview.ts) built from real output buffers: whole
// characters only, wherever the cut falls, and shown + omitted = emitted.
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RunOutput } from "../../../lib/run-output.ts";
import { completeText, headTailText, MAX_TEXT_BYTES } from "../../../extension/code-execution/preview.ts";

const NOT_SAVED = { ok: false as const, error: "not saved in this test" };

function capture(stdout: string | Buffer, stderr: string | Buffer = "") {
  const out = new RunOutput();
  out.write("stdout", Buffer.from(stdout));
  out.write("stderr", Buffer.from(stderr));
  return out.collect().capture;
}

/** The preview's head, its marker line and its tail. */
function parts(text: string) {
  const [head, rest] = text.split("\n[... ");
  const marker = `[... ${rest.slice(0, rest.indexOf(" ...]") + 5)}`;
  const tail = rest.slice(rest.indexOf(" ...]\n") + 6).split("\n[the full output")[0];
  return { head, marker, tail };
}

describe("head-tail preview of long lines of multi-byte characters", () => {
  for (const prefix of ["", "a", "ab"]) {
    test(`"€" * 20000 after ${prefix.length} ASCII bytes: head and tail are whole characters`, () => {
      const emitted = prefix + "€".repeat(20000);
      const c = capture(emitted);
      assert.equal(completeText(c, []), undefined, "60 KB does not fit");
      const text = headTailText(c, [], NOT_SAVED);
      assert.ok(!text.includes("\ufffd"), "no replacement character anywhere");
      assert.ok(Buffer.byteLength(text) <= MAX_TEXT_BYTES);
      const { head, marker, tail } = parts(text);
      assert.ok(head.startsWith(prefix + "€"), "the head starts at the beginning");
      assert.match(tail, /^€+$/, "the tail starts on a character boundary and holds only whole characters");
      assert.ok(emitted.endsWith(tail), "the tail is the end");
      const omitted = Number(/\[\.\.\. (\d+) bytes omitted/.exec(marker)![1]);
      assert.equal(
        omitted + Buffer.byteLength(head) + Buffer.byteLength(tail),
        Buffer.byteLength(emitted),
        "shown + omitted = emitted",
      );
      assert.match(marker, /\(0 whole lines\); the output was \d+ bytes, 1 lines/);
    });
  }

  test("four-byte characters after 0 to 3 ASCII bytes", () => {
    for (const prefix of ["", "a", "ab", "abc"]) {
      const text = headTailText(capture(prefix + "🎉".repeat(12000)), [], NOT_SAVED);
      assert.ok(!text.includes("\ufffd"), `prefix ${prefix.length}`);
      assert.match(parts(text).tail, /^(🎉)+$/u);
    }
  });
});

describe("the [stderr] boundary in the preview", () => {
  test("a short transcript is complete, with the boundary on its own line", () => {
    assert.equal(completeText(capture("out", "err\n"), []), "out\n[stderr]\nerr\n");
    assert.equal(completeText(capture("out\n", "err"), []), "out\n[stderr]\nerr");
    assert.equal(completeText(capture("", "err"), []), "[stderr]\nerr");
    assert.equal(completeText(capture("", ""), []), "[no output]");
    assert.equal(completeText(capture("x", ""), ["[note]"]), "x\n[note]");
  });

  test("long stdout then a short traceback: the tail shows the end of stdout, the boundary and the traceback", () => {
    const lines = Array.from({ length: 100000 }, (_, i) => `line ${i}\n`).join("");
    const tb = "Traceback (most recent call last):\nValueError: x\n";
    const text = headTailText(capture(lines, tb), [], NOT_SAVED);
    assert.match(
      text,
      /line 99999\n\[stderr\]\nTraceback \(most recent call last\):\nValueError: x\n\[the full output/,
    );
    assert.match(text, /^line 0\nline 1\n/);
    assert.ok(!text.includes("below is the end of stderr"), "the boundary is shown, so no note is needed");
  });
});
