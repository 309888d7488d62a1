// What the model passes to the exec tools, checked and turned into values: the bytes of `chars` (C-style escapes)
// or `chars_b64`, yield windows, the strict RFC 3339 `yield_until`, signal names and PTY sizes. Every rejection is
// a sentence the model can act on.
import { constants } from "node:os";
import { fail, ok, type Result } from "../../lib/result.ts";

export const MIN_YIELD_MS = 250;
export const MAX_YIELD_MS = 30_000;
export const DEFAULT_EXEC_YIELD_MS = 10_000;
export const DEFAULT_WRITE_YIELD_MS = 250;
export const DEFAULT_POLL_MS = 5_000;
/** pi-unified-exec's MIN_EMPTY_YIELD_TIME_MS: an empty relative poll waits at least this long (unless it exits). */
export const MIN_EMPTY_POLL_MS = 5_000;
/** pi-unified-exec's MAX_SESSIONS and WARNING_SESSIONS: the user is warned from 60 open sessions on. */
export const MAX_SESSIONS = 64;
export const WARNING_SESSIONS = 60;
export const PTY_COLS = { min: 20, max: 500, default: 120 } as const;
export const PTY_ROWS = { min: 5, max: 300, default: 30 } as const;

export function clamp(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, n));
}

/** An attachment window in ms: the default when absent, else floored and clamped to 250..30 000. */
export function yieldWindow(ms: number | undefined, fallback: number): Result<number> {
  if (ms === undefined) return ok(fallback);
  if (typeof ms !== "number" || !Number.isFinite(ms)) return fail("yield_time_ms must be a finite number of milliseconds.");
  return ok(clamp(Math.floor(ms), MIN_YIELD_MS, MAX_YIELD_MS));
}

/** The operator's limit on empty relative polls (`execMaxEmptyPollMs`, or pi-unified-exec's
 * PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS): none, a number of ms, or the warning of a value that was refused. */
export type PollCap = { ms: number | undefined } | { refused: string };

/**
 * An empty poll's relative wait, as pi-unified-exec has it: 5 s by default and at least 5 s (a shorter poll of a quiet
 * process only spends a turn), any finite duration above, fractions rounded down. A cap (itself at least 5 s) refuses
 * longer waits rather than shorten them, and a cap that was set but refused fails the poll: falling back to "no cap"
 * would silently remove the protection the operator asked for.
 */
export function pollWindow(ms: number | undefined, cap: PollCap = { ms: undefined }, nowMs = Date.now()): Result<number> {
  if (ms !== undefined && (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0 || ms > Number.MAX_SAFE_INTEGER))
    return fail("yield_time_ms must be a finite, non-negative number of milliseconds no greater than Number.MAX_SAFE_INTEGER.");
  const duration = Math.max(MIN_EMPTY_POLL_MS, Math.floor(ms ?? DEFAULT_POLL_MS));
  if ("refused" in cap)
    return fail(
      `the empty-poll cap is misconfigured, so relative polls are refused until it is fixed: ${cap.refused}. ` +
        `Use yield_until for an absolute wait meanwhile. tool_time_utc: ${utcNow(nowMs)}`,
    );
  const limit = cap.ms === undefined ? undefined : Math.max(MIN_EMPTY_POLL_MS, Math.floor(cap.ms));
  if (limit !== undefined && duration > limit)
    return fail(
      `yield_time_ms ${duration} exceeds the configured empty-poll cap of ${limit} ms (execMaxEmptyPollMs or ` +
        `PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS). Request a shorter wait. tool_time_utc: ${utcNow(nowMs)}`,
    );
  return ok(duration);
}

export function ptySize(value: number | undefined, range: { min: number; max: number; default: number }): number {
  if (value === undefined || !Number.isFinite(value)) return range.default;
  return clamp(Math.floor(value), range.min, range.max);
}

const SIMPLE: Record<string, number> = {
  "\\": 0x5c,
  '"': 0x22,
  "'": 0x27,
  n: 0x0a,
  r: 0x0d,
  t: 0x09,
  b: 0x08,
  f: 0x0c,
  v: 0x0b,
  "0": 0x00,
  a: 0x07,
  e: 0x1b,
};

const HEX = /^[0-9a-fA-F]+$/;

/**
 * `chars` as bytes: C-style escapes decoded (`\xHH` is that byte, `\uHHHH` and `\u{H..H}` a code point in UTF-8,
 * `\n \r \t \b \f \v \0 \a \e \\ \" \'`), everything else as UTF-8. An escape that is not one of these (`\q`, a
 * short `\x1`, a trailing `\`) stays as written, backslash included: it is more likely a path than a mistake.
 */
export function decodeChars(input: string): Uint8Array {
  if (!input.includes("\\")) return Buffer.from(input, "utf8");
  const out: number[] = [];
  const text = (s: string) => {
    for (const b of Buffer.from(s, "utf8")) out.push(b);
  };
  let plain = "";
  const flush = () => {
    if (plain) text(plain);
    plain = "";
  };
  for (let i = 0; i < input.length; ) {
    const ch = input[i];
    if (ch !== "\\" || i + 1 >= input.length) {
      plain += ch;
      i += 1;
      continue;
    }
    const next = input[i + 1];
    if (next === "x") {
      const hex = input.slice(i + 2, i + 4);
      if (hex.length === 2 && HEX.test(hex)) {
        flush();
        out.push(parseInt(hex, 16));
        i += 4;
      } else {
        plain += "\\x";
        i += 2;
      }
      continue;
    }
    if (next === "u") {
      if (input[i + 2] === "{") {
        const close = input.indexOf("}", i + 3);
        const hex = close > 0 ? input.slice(i + 3, close) : "";
        if (hex.length >= 1 && hex.length <= 6 && HEX.test(hex) && parseInt(hex, 16) <= 0x10ffff) {
          plain += String.fromCodePoint(parseInt(hex, 16));
          i = close + 1;
          continue;
        }
      } else {
        const hex = input.slice(i + 2, i + 6);
        if (hex.length === 4 && HEX.test(hex)) {
          plain += String.fromCharCode(parseInt(hex, 16));
          i += 6;
          continue;
        }
      }
      plain += "\\u";
      i += 2;
      continue;
    }
    const simple = SIMPLE[next];
    if (simple !== undefined) {
      flush();
      out.push(simple);
      i += 2;
      continue;
    }
    plain += `\\${next}`;
    i += 2;
  }
  flush();
  return Uint8Array.from(out);
}

/** Strict base64 (standard alphabet, padding optional, whitespace ignored): the exact bytes, or why not. */
export function decodeBase64(input: string): Result<Uint8Array> {
  const s = input.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 === 1)
    return fail("chars_b64 is not valid base64 (standard alphabet A-Z a-z 0-9 + /, optional = padding).");
  const bytes = Buffer.from(s, "base64");
  // Node ignores trailing bits it cannot use; a round trip proves nothing was dropped.
  if (bytes.toString("base64").replace(/=+$/, "") !== s.replace(/=+$/, ""))
    return fail("chars_b64 is not valid base64: its last characters carry bits that encode no byte.");
  return ok(new Uint8Array(bytes));
}

/** The bytes a write_stdin call sends (undefined: an empty write, a poll). */
export function writeInput(chars: string | undefined, charsB64: string | undefined): Result<Uint8Array | undefined> {
  const hasChars = typeof chars === "string" && chars.length > 0;
  const hasB64 = typeof charsB64 === "string" && charsB64.length > 0;
  if (hasChars && hasB64) return fail("Pass either chars or chars_b64, not both.");
  if (hasB64) return decodeBase64(charsB64!);
  if (hasChars) return ok(decodeChars(chars!));
  return ok(undefined);
}

export function utcNow(nowMs = Date.now()): string {
  return new Date(nowMs).toISOString();
}

const RFC3339_UTC = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?Z$/;

/**
 * A strict RFC 3339 UTC deadline (`2026-07-21T18:30:00Z`, up to 3 fraction digits, uppercase Z, no offsets) as
 * the wait left from `nowMs` (0 when past). Impossible dates (`2026-02-30`, `25:00`) are rejected rather than
 * normalized.
 */
export function parseDeadline(raw: string, nowMs: number): Result<{ at: string; remainingMs: number }> {
  const tool = `tool_time_utc: ${utcNow(nowMs)}`;
  const m = RFC3339_UTC.exec(raw);
  if (!m)
    return fail(
      `yield_until must be an RFC 3339 UTC timestamp such as "2026-07-21T18:30:00Z" or "2026-07-21T18:30:00.123Z" ` +
        `(full date and time with seconds, up to 3 fraction digits, uppercase Z; offsets and local times are rejected). ` +
        `Got ${JSON.stringify(raw)}. ${tool}`,
    );
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number);
  const ms = m[7] ? Number(m[7].padEnd(3, "0")) : 0;
  const t = Date.UTC(y, mo - 1, d, h, mi, s, ms);
  const back = new Date(t);
  if (
    back.getUTCFullYear() !== y ||
    back.getUTCMonth() !== mo - 1 ||
    back.getUTCDate() !== d ||
    back.getUTCHours() !== h ||
    back.getUTCMinutes() !== mi ||
    back.getUTCSeconds() !== s
  )
    return fail(`yield_until ${JSON.stringify(raw)} is not a real date and time. ${tool}`);
  return ok({ at: back.toISOString(), remainingMs: Math.max(0, t - nowMs) });
}

/** `term`, `INT`, `sigkill`, `SIGHUP` -> the signal's name; unknown names are an error. Default SIGTERM. */
export function signalName(raw: string | undefined): Result<NodeJS.Signals> {
  if (raw === undefined || raw.trim() === "") return ok("SIGTERM");
  let name = raw.trim().toUpperCase();
  if (!name.startsWith("SIG")) name = `SIG${name}`;
  if (!(name in constants.signals))
    return fail(`Unknown signal ${JSON.stringify(raw)}: use a name such as SIGTERM, SIGINT, SIGHUP or SIGKILL.`);
  return ok(name as NodeJS.Signals);
}
