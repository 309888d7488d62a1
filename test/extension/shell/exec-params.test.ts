// The exec tools' pure pieces: C-style escapes, base64, yield windows, RFC 3339 deadlines, signal names, the
// head+tail output window with its omission marker, and the model-visible text (inert, tail-capped, footer).
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  decodeBase64,
  decodeChars,
  parseDeadline,
  pollWindow,
  ptySize,
  PTY_COLS,
  signalName,
  writeInput,
  yieldWindow,
} from "../../../extension/shell/params.ts";
import { omissionMarker, OutputWindow, RollingTail } from "../../../actors/shell/window.ts";
import { inertText, modelOutput, oneLine } from "../../../extension/shell/text.ts";

const bytes = (b: Uint8Array) => [...b];
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

describe("chars: C-style escapes", () => {
  test("control bytes and the usual escapes", () => {
    assert.deepEqual(bytes(decodeChars("\\x03")), [3]);
    assert.deepEqual(bytes(decodeChars("\\x04")), [4]);
    assert.deepEqual(bytes(decodeChars("\\x1b[A")), [0x1b, 0x5b, 0x41]);
    assert.deepEqual(bytes(decodeChars("a\\nb\\rc\\td")), [97, 10, 98, 13, 99, 9, 100]);
    assert.deepEqual(bytes(decodeChars("\\e:wq\\n")), [0x1b, 0x3a, 0x77, 0x71, 10]);
    assert.deepEqual(bytes(decodeChars("\\0\\a\\b\\f\\v")), [0, 7, 8, 12, 11]);
    assert.deepEqual(bytes(decodeChars("\\\"\\'")), [0x22, 0x27]);
    assert.deepEqual(bytes(decodeChars("a\\x00b")), [0x61, 0, 0x62], "text before a byte escape stays before it");
  });
  test("\\\\ is one backslash; a Windows path needs doubled backslashes", () => {
    assert.equal(Buffer.from(decodeChars("C:\\\\temp")).toString(), "C:\\temp");
  });
  test("\\xHH is that byte, not a code point re-encoded as UTF-8", () => {
    assert.equal(hex(decodeChars("\\xff\\x80")), "ff80");
  });
  test("\\uHHHH and \\u{...} are code points in UTF-8, surrogate pairs joined", () => {
    assert.equal(hex(decodeChars("\\u00e9")), "c3a9");
    assert.equal(hex(decodeChars("\\u{1F600}")), "f09f9880");
    assert.equal(hex(decodeChars("\\ud83d\\ude00")), "f09f9880");
    assert.equal(Buffer.from(decodeChars("é\\n")).toString(), "é\n");
  });
  test("unknown or short escapes stay as written", () => {
    assert.equal(Buffer.from(decodeChars("\\q")).toString(), "\\q");
    assert.equal(Buffer.from(decodeChars("\\x1")).toString(), "\\x1");
    assert.equal(Buffer.from(decodeChars("\\xZZ")).toString(), "\\xZZ");
    assert.equal(Buffer.from(decodeChars("\\u12")).toString(), "\\u12");
    assert.equal(Buffer.from(decodeChars("\\u{110000}")).toString(), "\\u{110000}");
    assert.equal(Buffer.from(decodeChars("end\\")).toString(), "end\\");
    // Every character of a \\x or \\u{...} escape must be a hex digit, the first and the last too.
    for (const raw of ["\\xZ1", "\\x1Z", "\\u{Z41}", "\\u{41Z}"])
      assert.equal(Buffer.from(decodeChars(raw)).toString(), raw);
    // An unterminated \\u{ stays as written; its } is the first one after the {, never one before the escape.
    assert.equal(Buffer.from(decodeChars("\\u{41")).toString(), "\\u{41");
    assert.equal(Buffer.from(decodeChars("}\\u{41}")).toString(), "}A");
  });
  test("\\u{...} takes 1 to 6 hex digits, up to U+10FFFF", () => {
    assert.equal(hex(decodeChars("\\u{9}")), "09");
    assert.equal(hex(decodeChars("\\u{01F600}")), "f09f9880");
    assert.equal(hex(decodeChars("\\u{10FFFF}")), "f48fbfbf");
    assert.equal(Buffer.from(decodeChars("\\u{0000041}")).toString(), "\\u{0000041}");
  });
  test("raw control characters pass through", () => {
    assert.deepEqual(bytes(decodeChars("\x03\n")), [3, 10]);
  });
});

describe("chars_b64", () => {
  test("exact bytes", () => {
    const r = decodeBase64("G3s6wgo=");
    assert.ok(r.ok);
    assert.equal(hex(r.value), "1b7b3ac20a");
    const spaced = decodeBase64("G3s6\n wgo=");
    assert.ok(spaced.ok && hex(spaced.value) === "1b7b3ac20a", "whitespace ignored");
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const back = decodeBase64(all.toString("base64"));
    assert.ok(back.ok);
    assert.deepEqual(Buffer.from(back.value), all);
  });
  test("malformed base64 is rejected", () => {
    for (const bad of ["abc$", "$abc", "A", "AB=C", "ABC=D===", "AB==="]) {
      const r = decodeBase64(bad);
      assert.ok(!r.ok && r.error.endsWith("(standard alphabet A-Z a-z 0-9 + /, optional = padding)."), bad);
    }
    // Trailing bits that encode no byte.
    const bits = decodeBase64("QR==");
    assert.ok(!bits.ok && bits.error.endsWith("its last characters carry bits that encode no byte."));
  });
  test("chars and chars_b64 together are an error; neither is a poll", () => {
    const both = writeInput("x", "eA==");
    assert.equal(both.ok, false);
    assert.match(!both.ok ? both.error : "", /either chars or chars_b64/);
    const none = writeInput(undefined, "");
    assert.ok(none.ok && none.value === undefined);
    const empty = writeInput("", undefined);
    assert.ok(empty.ok && empty.value === undefined);
    const chars = writeInput("a\\n", undefined);
    assert.ok(chars.ok && chars.value && hex(chars.value) === "610a");
    const b64 = writeInput(undefined, "eA==");
    assert.ok(b64.ok && b64.value && hex(b64.value) === "78");
  });
});

describe("windows and sizes", () => {
  test("yield windows are clamped 250..30000", () => {
    assert.deepEqual(yieldWindow(undefined, 10_000), { ok: true, value: 10_000 });
    assert.deepEqual(yieldWindow(1, 10_000), { ok: true, value: 250 });
    assert.deepEqual(yieldWindow(99_999, 10_000), { ok: true, value: 30_000 });
    assert.deepEqual(yieldWindow(1234.9, 10_000), { ok: true, value: 1234 });
    const nan = yieldWindow(Number.NaN, 10_000);
    assert.ok(!nan.ok && nan.error === "yield_time_ms must be a finite number of milliseconds.");
  });
  test("empty polls: 5 s by default and at least 5 s, any finite duration above", () => {
    assert.deepEqual(pollWindow(undefined), { ok: true, value: 5000 });
    assert.deepEqual(pollWindow(86_400_000 * 3), { ok: true, value: 259_200_000 });
    assert.deepEqual(pollWindow(0), { ok: true, value: 5000 });
    assert.deepEqual(pollWindow(4999), { ok: true, value: 5000 });
    assert.deepEqual(pollWindow(7000.9), { ok: true, value: 7000 });
    assert.equal(pollWindow(-1).ok, false);
    assert.equal(pollWindow(Number.POSITIVE_INFINITY).ok, false);
    assert.equal(pollWindow(Number.NaN).ok, false);
    assert.deepEqual(pollWindow(Number.MAX_SAFE_INTEGER), { ok: true, value: Number.MAX_SAFE_INTEGER });
    const unsafe = pollWindow(Number.MAX_SAFE_INTEGER + 1);
    assert.ok(
      !unsafe.ok &&
        /^yield_time_ms must be a finite, non-negative number .* Number\.MAX_SAFE_INTEGER\.$/.test(unsafe.error),
    );
  });
  test("the empty-poll cap: longer relative polls are refused; below 5 s it acts as 5 s; a refused cap fails", () => {
    assert.deepEqual(pollWindow(290_000, { ms: 290_000 }), { ok: true, value: 290_000 });
    const over = pollWindow(290_001, { ms: 290_000 });
    assert.ok(!over.ok && /exceeds the configured empty-poll cap of 290000 ms.*tool_time_utc: /.test(over.error));
    assert.deepEqual(pollWindow(undefined, { ms: 1 }), { ok: true, value: 5000 });
    const bad = pollWindow(undefined, { refused: "PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS: must be positive" });
    assert.ok(
      !bad.ok &&
        /misconfigured.*PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS: must be positive\. Use yield_until for an absolute wait meanwhile\. tool_time_utc: /.test(
          bad.error,
        ),
    );
  });
  test("PTY sizes default to 120x30 and are clamped", () => {
    assert.equal(ptySize(undefined, PTY_COLS), 120);
    assert.equal(ptySize(5, PTY_COLS), 20);
    assert.equal(ptySize(10_000, PTY_COLS), 500);
    assert.equal(ptySize(Number.NaN, PTY_COLS), 120);
  });
});

describe("yield_until: strict RFC 3339 UTC", () => {
  const now = Date.UTC(2026, 6, 21, 8, 30, 0);
  test("valid deadlines give the remaining wait", () => {
    const r = parseDeadline("2026-07-21T08:30:05Z", now);
    assert.deepEqual(r, { ok: true, value: { at: "2026-07-21T08:30:05.000Z", remainingMs: 5000 } });
    const f = parseDeadline("2026-07-21T08:30:00.25Z", now);
    assert.ok(f.ok && f.value.remainingMs === 250);
    const past = parseDeadline("2020-01-01T00:00:00Z", now);
    assert.ok(past.ok && past.value.remainingMs === 0);
    const far = parseDeadline("2099-12-31T23:59:59.999Z", now);
    assert.ok(far.ok && far.value.remainingMs > 0);
    assert.ok(parseDeadline("2028-02-29T00:00:00Z", now).ok, "leap day");
  });
  test("other shapes and impossible dates are rejected, with the tool time", () => {
    for (const bad of [
      "2026-07-21T08:30:00",
      "2026-07-21T08:30:00z",
      "2026-07-21T08:30:00+00:00",
      "2026-07-21 08:30:00Z",
      "2026-07-21T08:30Z",
      "2026-07-21T08:30:00.1234Z",
      "2026-07-21T08:30:00Z and more",
      "2026-02-30T00:00:00Z",
      "2027-02-29T00:00:00Z",
      "2026-07-21T25:00:00Z",
      "2026-07-21T08:60:00Z",
      "2026-07-21T08:30:61Z",
      "2026-13-01T00:00:00Z",
      "tomorrow",
    ]) {
      const r = parseDeadline(bad, now);
      assert.equal(r.ok, false, bad);
      assert.match(!r.ok ? r.error : "", /tool_time_utc: 2026-07-21T08:30:00\.000Z/);
      assert.match(!r.ok ? r.error : "", /such as "2026-07-21T18:30:00Z".*uppercase Z; offsets|not a real date/);
    }
  });
});

describe("signal names", () => {
  test("normalized; unknown rejected", () => {
    assert.deepEqual(signalName(undefined), { ok: true, value: "SIGTERM" });
    assert.deepEqual(signalName("  "), { ok: true, value: "SIGTERM" });
    assert.deepEqual(signalName("term"), { ok: true, value: "SIGTERM" });
    assert.deepEqual(signalName("INT"), { ok: true, value: "SIGINT" });
    assert.deepEqual(signalName("sigkill"), { ok: true, value: "SIGKILL" });
    assert.deepEqual(signalName(" SIGHUP "), { ok: true, value: "SIGHUP" });
    const bad = signalName("SIGFOO");
    assert.equal(bad.ok, false);
    assert.match(!bad.ok ? bad.error : "", /Unknown signal "SIGFOO"/);
  });
});

describe("the head+tail window", () => {
  test("pending while it holds bytes or counts dropped ones; empty after a drain", () => {
    const w = new OutputWindow(4);
    assert.equal(w.pending, false);
    w.push(Buffer.from("a"));
    assert.deepEqual([w.pending, w.size], [true, 1]);
    w.drain();
    assert.deepEqual([w.pending, w.size], [false, 0]);
    w.push(Buffer.from("abcdefgh"));
    assert.deepEqual([w.pending, w.size], [true, 4]);
  });
  test("fits whole: no marker", () => {
    const w = new OutputWindow(16);
    w.push(Buffer.from("abc"));
    w.push(Buffer.from("def"));
    const d = w.drain();
    assert.equal(Buffer.from(d.bytes).toString(), "abcdef");
    assert.equal(d.omitted, 0);
    assert.equal(w.drain().bytes.length, 0);
  });
  test("the marker sits at the exact cut, with the exact count", () => {
    const w = new OutputWindow(10);
    const all = "0123456789abcdefghijKLMNOP"; // 26 bytes, pushed in odd pieces
    for (const piece of ["012", "3456789a", "bcdefghij", "K", "LMNOP"]) w.push(Buffer.from(piece));
    const d = w.drain();
    assert.equal(d.omitted, 16);
    assert.equal(Buffer.from(d.bytes).toString(), `01234${omissionMarker(16, 10)}LMNOP`);
    assert.equal(all.length, 26);
  });
  test("a single huge chunk", () => {
    const w = new OutputWindow(1024 * 1024);
    const big = Buffer.alloc(5 * 1024 * 1024, 0x61);
    big[0] = 0x41;
    big[big.length - 1] = 0x5a;
    w.push(big);
    const d = w.drain();
    assert.equal(d.omitted, 4 * 1024 * 1024);
    const text = Buffer.from(d.bytes).toString();
    assert.ok(text.startsWith("A"));
    assert.ok(text.endsWith("Z"));
    assert.match(text, /\[\.\.\. 4194304 bytes omitted here/);
  });
  test("rolling tail keeps the newest bytes", () => {
    const t = new RollingTail(5);
    t.push(Buffer.from("abc"));
    t.push(Buffer.from("defgh"));
    assert.equal(t.snapshot().toString(), "defgh");
    t.push(Buffer.from("0123456789"));
    assert.equal(t.snapshot().toString(), "56789");
  });
  test("by default the window holds 1 MiB between drains and the rolling tail 32 KiB", () => {
    const w = new OutputWindow();
    w.push(Buffer.alloc(1024 * 1024 + 1, 0x61));
    assert.deepEqual([w.size, w.drain().omitted], [1024 * 1024, 1]);
    const t = new RollingTail();
    t.push(Buffer.alloc(40 * 1024, 0x61));
    assert.equal(t.snapshot().length, 32 * 1024);
  });
});

describe("model-visible text", () => {
  test("bytes that are not UTF-8 become U+FFFD, never an error", () => {
    assert.equal(modelOutput(Uint8Array.from([0x61, 0xff, 0x62]), undefined).text, "a\ufffdb");
  });
  test("escape sequences and control characters are stripped", () => {
    assert.equal(inertText("\x1b[31mred\x1b[0m \x1b]0;title\x07ok\x1b]52;c;Zm9v\x07\n"), "red ok\n");
    assert.equal(inertText("a\x07b\x00c\x08d\n"), "abcd\n");
    assert.equal(inertText(">>> 1\r\n2\r\n"), ">>> 1\n2\n");
    assert.equal(inertText("10%\r50%\r100%\ndone\n"), "100%\ndone\n");
    assert.equal(inertText("tab\tkept"), "tab\tkept");
    assert.equal(inertText("\ud83d\ude00 \ud83d"), "\ud83d\ude00 ");
  });
  test("one-line metadata", () => {
    assert.equal(oneLine("npm \x1b[1mrun\x1b[0m\n  dev"), "npm run dev");
    assert.equal(oneLine("x".repeat(50), 10), `${"x".repeat(9)}…`);
    assert.equal(oneLine("x".repeat(10), 10), "x".repeat(10), "exactly max: whole");
    assert.equal(oneLine(" \n padded \t"), "padded");
    assert.equal(oneLine("x".repeat(5000)), `${"x".repeat(4095)}…`, "4096 by default");
    // A huge value is read no further than 4 x max characters: what lies beyond never shows, even when the kept part
    // collapses to less than max.
    assert.equal(oneLine(`a${" ".repeat(100)}b`, 10), "a");
  });
  test("within limits: whole, no footer", () => {
    const m = modelOutput(Buffer.from("a\nb\n"), "/l.log");
    assert.equal(m.text, "a\nb\n");
    assert.equal(m.truncated, false);
    assert.equal(m.footer, undefined);
  });
  test("over 50 KiB: the tail and the footer naming the log", () => {
    const lines = Array.from({ length: 4500 }, (_, i) => `line ${String(i + 1).padStart(5, "0")} ${"x".repeat(40)}`);
    const m = modelOutput(Buffer.from(`${lines.join("\n")}\n`), "/tmp/x.log");
    assert.equal(m.truncated, true);
    assert.ok(Buffer.byteLength(m.text) <= 50 * 1024);
    assert.ok(m.text.endsWith(`${lines[4499]}\n`) || m.text.endsWith(lines[4499]));
    assert.match(m.footer!, /^\[Showing lines \d+-4500 of 4500 \(50\.0KB limit\)\. Full output: \/tmp\/x\.log\]$/);
  });
  test("over 2000 lines", () => {
    const m = modelOutput(Buffer.from(Array.from({ length: 3000 }, (_, i) => String(i)).join("\n")), "/l");
    assert.equal(m.truncated, true);
    assert.equal(m.shownLines, 2000);
    assert.match(m.footer!, /^\[Showing lines 1001-3000 of 3000\. Full output: \/l\]$/);
  });
  test("one line over 50 KiB: its last 50 KiB; the log path inert; no log, no pointer", () => {
    const long = Buffer.from("y".repeat(60 * 1024));
    const m = modelOutput(long, "/l\x1b[31m.log");
    assert.equal(m.text, "y".repeat(50 * 1024));
    assert.equal(m.footer, "[Showing the last 50.0KB of line 1 (50.0KB limit). Full output: /l.log]");
    assert.equal(modelOutput(long, undefined).footer, "[Showing the last 50.0KB of line 1 (50.0KB limit)]");
  });
});

// Edges around the survivors of the mutation run (exec-params, docs/reliability.md): the deadline's anchor and the
// rolling tail's drop of more than one chunk fail without their code; the others hold the behaviour that the
// survivors beside them (equivalent mutants) leave as it is.
describe("edges the mutation run found untested", () => {
  test("a yield window that is not a finite number is refused, not clamped", () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
      const r = yieldWindow(bad, 1000);
      assert.ok(!r.ok && r.error === "yield_time_ms must be a finite number of milliseconds.", String(bad));
    }
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, -1]) {
      const r = pollWindow(bad);
      assert.ok(!r.ok && r.error.startsWith("yield_time_ms must be a finite, non-negative number"), String(bad));
    }
  });

  test("a \\u{...} escape that names no code point stays as written", () => {
    for (const raw of ["\\u{zz}", "\\u{110000}", "\\u{}", "\\u{1234567}"])
      assert.equal(Buffer.from(decodeChars(raw)).toString(), raw, raw);
  });

  test("a deadline with anything before the date is refused", () => {
    const r = parseDeadline("at 2026-07-21T18:30:00Z", Date.UTC(2026, 6, 21, 18, 0, 0));
    assert.ok(!r.ok && r.error.startsWith("yield_until must be an RFC 3339 UTC timestamp"));
  });

  test("oneLine keeps `max` characters of a long text, however long it was", () => {
    assert.equal(oneLine("x".repeat(50), 20), `${"x".repeat(19)}…`);
  });

  test("the rolling tail keeps the newest bytes exactly when a push drops a whole chunk and part of the next", () => {
    const t = new RollingTail(10);
    for (const s of ["aaaa", "bbbb", "cccccccc"]) t.push(Buffer.from(s));
    assert.equal(t.snapshot().toString(), "bbcccccccc");
  });
});
