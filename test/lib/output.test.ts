// A run's output buffer (lib/run-output.ts) fed real bytes: the live preview never shows a split or
// repeated character and keeps the newest output, the retained head and tail windows hold the first and last bytes
// however the writes are cut, and every count is exact.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createHash } from "node:crypto";
import { completeEnd, countNewlines, retainedDigest, RunOutput, tailText, WINDOW_BYTES } from "../../lib/run-output.ts";

const EURO = Buffer.from("€"); // e2 82 ac

describe("the live preview", () => {
  test("a complete multi-byte character at the very end shows whole", () => {
    const out = new RunOutput();
    out.write("stdout", Buffer.from("price: 5€"));
    assert.equal(out.preview().stdout, "price: 5€");
    out.write("stderr", Buffer.from("ä"));
    assert.equal(out.preview().stderr, "ä");
    const emoji = new RunOutput();
    emoji.write("stdout", Buffer.from("ok 🎉"));
    assert.equal(emoji.preview().stdout, "ok 🎉");
  });

  test("a character written one byte at a time appears once, when it is complete", () => {
    const out = new RunOutput();
    out.write("stdout", Buffer.from("5"));
    const seen: string[] = [];
    for (const byte of EURO) {
      out.write("stdout", Buffer.from([byte]));
      seen.push(out.preview().stdout);
    }
    assert.deepEqual(seen, ["5", "5", "5€"], "no partial or replacement character before the last byte");
    for (const byte of Buffer.from("🎉")) out.write("stdout", Buffer.from([byte]));
    assert.equal(out.preview().stdout, "5€🎉");
  });

  test("the live tail keeps the end of the stream, not its head", () => {
    const out = new RunOutput();
    const lines = Array.from({ length: 2000 }, (_, i) => `line ${i}\n`);
    for (const l of lines) out.write("stdout", Buffer.from(l));
    const shown = out.preview().stdout;
    assert.ok(shown.endsWith("line 1999\n"), "the newest line is shown");
    assert.ok(!shown.includes("line 0\n"), "the oldest is not");
    assert.equal(Buffer.byteLength(shown), 4096, "the newest 4 KiB exactly (ASCII)");
    assert.equal(shown, lines.join("").slice(-4096));
    // Smaller windows on request; the cut never starts inside a character.
    const euros = new RunOutput();
    euros.write("stdout", Buffer.from("€".repeat(3000)));
    assert.equal(
      euros.preview(100).stdout,
      "€".repeat(33),
      "100 bytes: 33 whole characters, the partial first one dropped",
    );
  });

  test("the default 4 KiB live tail of long multi-byte output never starts with a split character", () => {
    for (const prefix of ["", "a", "ab"]) {
      const out = new RunOutput();
      out.write("stdout", Buffer.from(prefix + "€".repeat(3000)));
      const shown = out.preview().stdout;
      assert.ok(!shown.includes("\ufffd"), `prefix ${prefix.length}: no replacement character`);
      assert.equal(shown, "€".repeat(1365), "the newest whole characters within 4096 bytes");
    }
  });

  test("a lead byte waits for its character; bytes that can never start one do not", () => {
    // Stray continuation bytes at the start of the window (at most 3) are the tail of a character cut off.
    const out = new RunOutput();
    out.write("stdout", Buffer.from([0x80, 0x61]));
    assert.equal(out.preview().stdout, "a");
    // A lead that can never be completed is held back like any incomplete character.
    const e0 = new RunOutput();
    e0.write("stdout", Buffer.from("\u0800").subarray(0, 2));
    assert.equal(e0.preview().stdout, "", "U+0800 (lead 0xe0) is incomplete after 2 bytes");
    e0.write("stdout", Buffer.from("\u0800").subarray(2));
    assert.equal(e0.preview().stdout, "\u0800");
    const c2 = new RunOutput();
    c2.write("stdout", Buffer.from("\u0080").subarray(0, 1));
    assert.equal(c2.preview().stdout, "", "U+0080 (lead 0xc2) is incomplete after 1 byte");
    // 0xc0 and 0xc1 never start a valid character: nothing to wait for.
    const c0 = new RunOutput();
    c0.write("stdout", Buffer.from([0x61, 0xc0]));
    assert.equal(c0.preview().stdout, "a\ufffd");
    const c1 = new RunOutput();
    c1.write("stdout", Buffer.from([0x61, 0xc1]));
    assert.equal(c1.preview().stdout, "a\ufffd");
    // More than 3 continuation bytes cannot all belong to a cut character: the rest are invalid, and shown so.
    const stray = new RunOutput();
    stray.write("stdout", Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x61]));
    assert.equal(stray.preview().stdout, "\ufffd\ufffda");
  });

  test("output shorter than the live window shows whole, whatever its length", () => {
    for (const size of [100, 2049, 3000, 4095, 4096]) {
      const out = new RunOutput();
      const text = "x".repeat(size - 1) + "y";
      out.write("stdout", Buffer.from(text));
      assert.equal(out.preview().stdout, text, `${size} bytes`);
    }
  });

  test("invalid bytes shown as U+FFFD (3 bytes each) are cut again to stay within the window", () => {
    const out = new RunOutput();
    out.write("stdout", Buffer.alloc(5000, 0xff));
    const shown = out.preview().stdout;
    assert.equal(shown, "\ufffd".repeat(1365), "the newest replacement characters within 4096 bytes");
    assert.equal(out.preview(30).stdout, "\ufffd".repeat(10));
  });
});

describe("the retained windows", () => {
  test("one write of 20 KiB or more: the tail holds the end of that chunk", () => {
    for (const size of [WINDOW_BYTES, WINDOW_BYTES + 1, 3 * WINDOW_BYTES + 17]) {
      const out = new RunOutput();
      out.write("stdout", Buffer.from("start\n"));
      const chunk = Buffer.from(Array.from({ length: size }, (_, i) => 97 + (i % 26)));
      out.write("stdout", chunk);
      const c = out.collect().capture.stdout;
      assert.deepEqual(c.tail, chunk.subarray(size - WINDOW_BYTES), `${size} bytes: the tail is the chunk's end`);
      assert.equal(c.head.subarray(0, 6).toString(), "start\n");
      assert.deepEqual(c.head.subarray(6), chunk.subarray(0, WINDOW_BYTES - 6), "the head is the first 20 KiB");
      assert.equal(c.emittedBytes, size + 6);
    }
  });

  test("small writes across the window's wrap: the tail is the newest 20 KiB in order", () => {
    const out = new RunOutput();
    const all: Buffer[] = [];
    for (let i = 0; i < 3000; i++) {
      const b = Buffer.from(`${i}:${"x".repeat(i % 13)}\n`);
      all.push(b);
      out.write("stderr", b);
    }
    const whole = Buffer.concat(all);
    const c = out.collect().capture.stderr;
    assert.deepEqual(c.tail, whole.subarray(whole.length - WINDOW_BYTES));
    assert.deepEqual(c.head, whole.subarray(0, WINDOW_BYTES));
    assert.equal(c.emittedLines, 3000);
    assert.equal(c.endsWithNewline, true);
  });

  test("less output than the window: the head and the tail are all of it", () => {
    for (const size of [100, WINDOW_BYTES / 2 + 1, 15_000, WINDOW_BYTES - 1]) {
      const out = new RunOutput();
      const bytes = Buffer.alloc(size, 0x61);
      bytes[0] = 0x62;
      out.write("stderr", bytes);
      const c = out.collect().capture.stderr;
      assert.deepEqual(c.tail, bytes, `${size} bytes`);
      assert.deepEqual(c.head, bytes, `${size} bytes`);
    }
  });

  test("a write that exactly fills the window, then more: the window keeps wrapping correctly", () => {
    const out = new RunOutput();
    const first = Buffer.alloc(WINDOW_BYTES - 10, "a");
    const fill = Buffer.alloc(10, "b");
    const after = Buffer.from("cdefg");
    for (const b of [first, fill, after]) out.write("stdout", b);
    const c = out.collect().capture.stdout;
    assert.deepEqual(c.tail, Buffer.concat([first, fill, after]).subarray(5));
  });

  test("counts: bytes, lines as an editor counts them, the final newline, retention past the limit", () => {
    const out = new RunOutput(10);
    out.write("stdout", Buffer.from("12345\n"));
    out.write("stdout", Buffer.from("67890"));
    out.write("stdout", Buffer.alloc(0));
    const r = out.collect();
    assert.equal(r.stdoutBytes, 11);
    assert.equal(r.stdout, "12345\n6789", "retained up to the limit");
    assert.equal(r.stdoutTruncated, true);
    assert.equal(r.stderrTruncated, false);
    assert.equal(r.capture.stdout.emittedLines, 2);
    assert.equal(r.capture.stdout.endsWithNewline, false);
    assert.equal(r.capture.stdout.retainedBytes, 10);
    // An empty write changes nothing, not even whether the output ends with a newline.
    const nl = new RunOutput();
    nl.write("stdout", Buffer.from("x\n"));
    nl.write("stdout", Buffer.alloc(0));
    assert.equal(nl.collect().capture.stdout.endsWithNewline, true);
    const empty = new RunOutput().collect().capture.stdout;
    assert.deepEqual([empty.emittedBytes, empty.emittedLines, empty.endsWithNewline], [0, 0, false]);
  });

  test("the retained chunks are exactly the retained prefix, in order, cut at the limit", () => {
    const out = new RunOutput(7);
    out.write("stdout", Buffer.from("abc"));
    out.write("stderr", Buffer.from("12"));
    out.write("stdout", Buffer.from("defgh"));
    out.write("stderr", Buffer.from("34"));
    const { capture } = out.collect();
    assert.deepEqual(capture.stdout.chunks.map(String), ["abc", "de"]);
    assert.deepEqual(capture.stderr.chunks.map(String), ["12"]);
    assert.deepEqual([capture.stdout.retainedBytes, capture.stderr.retainedBytes], [5, 2]);
  });

  test("line breaks in the retained prefix: a whole chunk's, and a cut chunk's up to the cut only", () => {
    const out = new RunOutput(8);
    out.write("stdout", Buffer.from("a\nb\n"));
    out.write("stdout", Buffer.from("c\nd\ne\nf\n"));
    out.write("stdout", Buffer.from("\n\n"));
    const { capture } = out.collect();
    assert.equal(capture.stdout.retainedBytes, 8);
    assert.equal(capture.stdout.retainedNewlines, 4, "a\\nb\\nc\\nd\\n");
    assert.equal(capture.stdout.emittedLines, 8);
    const whole = new RunOutput();
    whole.write("stderr", Buffer.from("x\ny\n"));
    whole.write("stderr", Buffer.from("z"));
    assert.equal(whole.collect().capture.stderr.retainedNewlines, 2);
  });

  test("the default retention keeps 64 MiB: a few MiB are kept whole", () => {
    const out = new RunOutput();
    const mib = Buffer.alloc(1 << 20, "x");
    for (let i = 0; i < 3; i++) out.write("stdout", mib);
    const r = out.collect();
    assert.equal(r.stdoutTruncated, false);
    assert.equal(r.capture.stdout.retainedBytes, 3 << 20);
  });

  test("the collected output is a plain record: its text survives a spread and JSON", () => {
    const out = new RunOutput();
    out.write("stdout", Buffer.from("o"));
    out.write("stderr", Buffer.from("e"));
    const spread = { ...out.collect() };
    assert.deepEqual([spread.stdout, spread.stderr], ["o", "e"]);
    const json = JSON.parse(JSON.stringify(out.collect()));
    assert.deepEqual([json.stdout, json.stderr, json.stdoutBytes], ["o", "e", 1]);
  });

  test("listeners hear every write until the output is collected", () => {
    const out = new RunOutput();
    let heard = 0;
    out.onWrite(() => (heard += 1));
    out.write("stdout", Buffer.from("a"));
    out.write("stderr", Buffer.from("b"));
    out.collect();
    out.write("stdout", Buffer.from("c"));
    assert.equal(heard, 2);
  });
});

describe("the retained output's digest", () => {
  const sha = (...parts: (string | Buffer)[]) => {
    const h = createHash("sha256");
    for (const p of parts) h.update(p);
    return h.digest("hex");
  };
  // Past 16 KiB of stdout the digest is kept up to date as chunks arrive; below it, and for stderr, it is computed
  // when asked. Either way it is the digest of the retained bytes, whatever the chunks.
  const sizes = [0, 1, 16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, 100 * 1024];

  test("stdout, below and past the running digest's start, in one write or many: the SHA-256 of what was retained", () => {
    for (const size of sizes)
      for (const step of [size || 1, 997, 4096]) {
        const bytes = Buffer.from(Array.from({ length: size }, (_, i) => (i * 7 + size) & 0xff));
        const out = new RunOutput();
        for (let at = 0; at < size; at += step) out.write("stdout", bytes.subarray(at, at + step));
        const { capture } = out.collect();
        assert.equal(retainedDigest(capture.stdout).digest("hex"), sha(bytes), `${size} bytes by ${step}`);
      }
  });

  test("stderr (no running digest) and a capture built by hand are hashed from their chunks", () => {
    const out = new RunOutput();
    const big = Buffer.alloc(40 * 1024, "e");
    out.write("stderr", big);
    out.write("stderr", Buffer.from("!"));
    assert.equal(retainedDigest(out.collect().capture.stderr).digest("hex"), sha(big, "!"));
    const byHand = { ...out.collect().capture.stderr, chunks: [Buffer.from("a"), Buffer.from("b")] };
    assert.equal(retainedDigest(byHand).digest("hex"), sha("ab"));
  });

  test("past the retention limit the digest covers the retained prefix only", () => {
    const out = new RunOutput(20 * 1024);
    const first = Buffer.alloc(18 * 1024, "a");
    out.write("stdout", first);
    out.write("stdout", Buffer.alloc(8 * 1024, "b"));
    out.write("stdout", Buffer.alloc(8 * 1024, "c"));
    const { capture } = out.collect();
    assert.equal(retainedDigest(capture.stdout).digest("hex"), sha(first, Buffer.alloc(2 * 1024, "b")));
  });

  test("each call gives a fresh hash ready for more (the transcript goes on with stderr): asking twice, or after more output, is exact", () => {
    const out = new RunOutput();
    const a = Buffer.alloc(20 * 1024, "a");
    out.write("stdout", a);
    const capture = out.collect().capture.stdout;
    const once = retainedDigest(capture).update("tail").digest("hex");
    assert.equal(once, sha(a, "tail"));
    assert.equal(retainedDigest(capture).digest("hex"), sha(a), "the first hash's update did not leak into the second");
    // The capture shares the retained chunks: output written after it is covered too, each chunk exactly once.
    out.write("stdout", Buffer.from("more"));
    assert.equal(retainedDigest(capture).digest("hex"), sha(a, "more"));
    assert.equal(retainedDigest(out.collect().capture.stdout).digest("hex"), sha(a, "more"));
  });
});

describe("a batch's cell windows (mark, between, previewSince)", () => {
  test("between two marks: exactly the bytes written in between, across chunk boundaries, per channel", () => {
    const out = new RunOutput();
    out.write("stdout", Buffer.from("cell1 "));
    out.write("stderr", Buffer.from("e1 "));
    const m1 = out.mark();
    assert.deepEqual(m1, { stdout: 6, stderr: 3 });
    out.write("stdout", Buffer.from("cell"));
    out.write("stdout", Buffer.from("2a "));
    out.write("stdout", Buffer.from("cell2b "));
    out.write("stderr", Buffer.from("e2 "));
    const m2 = out.mark();
    out.write("stdout", Buffer.from("cell3"));
    assert.equal(out.between("stdout", m1.stdout, m2.stdout), "cell2a cell2b ");
    assert.equal(out.between("stderr", m1.stderr, m2.stderr), "e2 ");
    assert.equal(out.between("stdout", m2.stdout), "cell3", "without an end: up to what is retained now");
    assert.equal(out.between("stdout", 0, m1.stdout), "cell1 ");
    assert.equal(out.between("stdout", 3, 8), "l1 ce", "a range inside and across chunks");
    assert.equal(out.between("stdout", m2.stdout, m2.stdout), "", "an empty cell");
    assert.equal(out.between("stderr", m2.stderr), "");
  });

  test("past the retention limit a mark stops moving and a later cell's window is empty", () => {
    const out = new RunOutput(8);
    out.write("stdout", Buffer.from("12345"));
    const m = out.mark();
    out.write("stdout", Buffer.from("6789ab"));
    assert.deepEqual(out.mark(), { stdout: 8, stderr: 0 });
    assert.equal(out.between("stdout", m.stdout), "678");
    const full = out.mark();
    out.write("stdout", Buffer.from("cd"));
    assert.equal(out.between("stdout", full.stdout), "");
  });

  test("previewSince shows only the running cell's output, its newest bytes, on character boundaries", () => {
    const out = new RunOutput();
    out.write("stdout", Buffer.from("earlier cell\n"));
    out.write("stderr", Buffer.from("earlier warning\n"));
    const m = out.mark();
    assert.deepEqual(out.previewSince(m), { stdout: "", stderr: "" });
    out.write("stdout", Buffer.from("now\n"));
    assert.deepEqual(out.previewSince(m), { stdout: "now\n", stderr: "" });
    out.write("stdout", Buffer.concat([Buffer.from("x"), EURO, EURO, Buffer.from("y")]));
    // 4 bytes: the newest whole characters that fit, never half a euro.
    assert.equal(out.previewSince(m, 4).stdout, "€y");
    assert.equal(out.previewSince(m, 5).stdout, "€y");
    assert.equal(out.previewSince(m, 7).stdout, "€€y");
    // The default window is 4 KiB of the cell's newest output.
    const long = "z".repeat(5000);
    out.write("stderr", Buffer.from(long));
    assert.equal(out.previewSince(m).stderr, "z".repeat(4096));
    assert.equal(out.previewSince(m).stdout, "now\nx€€y");
  });
});

describe("helpers", () => {
  test("countNewlines: sparse, dense and none", () => {
    assert.equal(countNewlines(Buffer.from("")), 0);
    assert.equal(countNewlines(Buffer.from("abc")), 0);
    assert.equal(countNewlines(Buffer.from("a\nb\nc")), 2);
    assert.equal(countNewlines(Buffer.from("\n".repeat(1000))), 1000);
    assert.equal(countNewlines(Buffer.from("x".repeat(100) + "\n\n" + "y".repeat(64) + "\n")), 3);
  });

  test("completeEnd drops only an incomplete character at the end", () => {
    const cases: [Buffer, number][] = [
      [Buffer.from("ab"), 2],
      [Buffer.from("a€"), 4],
      [Buffer.from("a€").subarray(0, 3), 1],
      [Buffer.from("a€").subarray(0, 2), 1],
      [Buffer.from("🎉"), 4],
      [Buffer.from("🎉").subarray(0, 3), 0],
      [Buffer.from("é"), 2],
      [Buffer.from("é").subarray(0, 1), 0],
      [Buffer.from([0x61, 0xc1]), 2],
      [Buffer.from("\u0800").subarray(0, 2), 0],
      [Buffer.alloc(0), 0],
    ];
    for (const [bytes, end] of cases) assert.equal(completeEnd(bytes), end, bytes.toString("hex"));
  });

  test("tailText starts on a character boundary and ends on a complete character", () => {
    const bytes = Buffer.from("a€b€");
    assert.equal(tailText(bytes, 8), "a€b€");
    assert.equal(tailText(bytes, 5), "b€");
    assert.equal(tailText(bytes, 7), "€b€");
    assert.equal(tailText(bytes, 6), "b€", "the cut inside € moves forward");
    assert.equal(tailText(bytes.subarray(0, 7), 8), "a€b");
  });
});
