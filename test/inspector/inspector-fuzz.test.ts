// Generated hostile traffic against a live inspector in a child process (real server, real sockets): malformed
// paths and percent-encodings, wrong and truncated tokens, foreign Host and Origin, parser-breaking bytes,
// oversized headers, fragmented and half-closed requests, garbage and fragmented WebSocket frames, mutated logs
// sent to the replay API, and half-open connections held to the end. Every request must be answered or refused
// (without the token: 403), the process must stay up, and a real client must still get the page and live frames.
// Generation is seeded; a failure prints the seed and the case. PCS_FUZZ_SEED=<n> runs another seed,
// PCS_FUZZ_SCALE=<k> k times as many cases.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { Socket } from "node:net";
import { after, before, test } from "node:test";
import {
  afterHeader,
  closePayload,
  drain,
  exchange,
  FIXTURE_LOG,
  frame,
  InspectorProcess,
  legitimateClient,
  OP,
  serverFrames,
  upgradeRequest,
  type Exchange,
  type ExchangeOptions,
} from "../helpers/inspector-wire.ts";
import { prng, type Rng } from "../helpers/prng.ts";

const SEED = Number(process.env.PCS_FUZZ_SEED ?? 20261101);
const SCALE = Number(process.env.PCS_FUZZ_SCALE ?? 1);
const HTTP_CASES = 3000 * SCALE;
const WS_CASES = 400 * SCALE;
const REPLAY_CASES = 60 * SCALE;
const HALF_OPEN = 100;
const CONCURRENCY = 16;

/** What a request must get: nothing when the client gave up; 403 without the token; with it (anywhere in the
 * bytes: a request Node cannot parse but that carries the token gets Node's own status), an answer below 500. A
 * client that half-closes after a request with the token may instead see the connection closed: Node ends it,
 * dropping an answer that was not ready yet (reading a page file, say). */
function expectation(then: ExchangeOptions["then"], bytes: Buffer, token: string): Case["expect"] {
  if (then === "destroy" || then === "reset") return "nothing";
  if (!bytes.includes(`/${token}/`)) return "403";
  return then === "end" ? "answer or close" : "answer";
}

const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** A token segment that is certainly not the token, even once percent-decoded. */
function wrongToken(r: Rng, token: string): string {
  const at = r.int(token.length);
  const mutated = [
    () => token.slice(0, r.int(token.length)), // truncated (possibly empty)
    () => token + r.pick(B64URL.split("")), // one too many
    () => token.slice(0, at) + B64URL.replace(token[at], "")[r.int(63)] + token.slice(at + 1), // one changed
    () => (token.toLowerCase() === token ? `${token}A` : token.toLowerCase()), // case folded
    () => token.slice(1) + token[0], // rotated
    () => Array.from({ length: r.int(60) }, () => r.pick(B64URL.split(""))).join(""),
    () => `${token}%00`,
    () => `${token.slice(0, 20)}/${token.slice(20)}`, // split by a slash
  ][r.int(8)]();
  const encoded = r.chance(0.3)
    ? mutated.replace(/./g, (c) => (r.chance(0.3) ? `%${c.charCodeAt(0).toString(16).padStart(2, "0")}` : c))
    : mutated;
  return encoded === token ? `${token}x` : encoded;
}

/** Path material: broken and valid percent-encodings, dot segments, control and non-ASCII bytes, long runs. */
function junkSegment(r: Rng): string {
  const parts = [
    () => "%",
    () => `%${r.pick(["", "0", "g", "Z", "E0", "zz"])}`,
    () => r.pick(["%E0%A4%A", "%C0%AF", "%ED%A0%80", "%F4%90%80%80", "%FF", "%00", "%2F", "%2e%2e", "%25"]),
    () => r.pick(["..", ".", "//", "\\", "?", "#", ";", "&", "=", "api", "ws", "api/info", "api/log", "api/replay"]),
    () => encodeURIComponent(String.fromCharCode(r.int(0x3000))),
    () => "a".repeat(r.int(4) === 0 ? 2000 + r.int(9000) : 1 + r.int(40)),
    () => String.fromCharCode(r.int(32)), // control characters, raw
    () => String.fromCharCode(0x80 + r.int(0x80)), // raw bytes over 0x7f (written as latin1)
    () => " ",
  ];
  return Array.from({ length: 1 + r.int(4) }, () => parts[r.int(parts.length)]()).join("");
}

function pathWithout(r: Rng, token: string): string {
  switch (r.int(7)) {
    case 0:
      return `/${junkSegment(r)}/${r.chance(0.5) ? junkSegment(r) : "ws"}`;
    case 1:
      return `/${wrongToken(r, token)}/${r.pick(["", "ws", "api/info", "api/log", "app.js", junkSegment(r)])}`;
    case 2:
      return `/${wrongToken(r, token)}`;
    case 3:
      return r.pick(["/", "*", "", "//", "/ws", "/index.html", "/api/info", `/${token}`]); // no slash after it
    case 4:
      return `http://127.0.0.1/${wrongToken(r, token)}/`; // absolute form
    case 5:
      return `/${junkSegment(r)}${token}/`;
    default:
      return `/${wrongToken(r, token)}/${junkSegment(r)}?${junkSegment(r)}`;
  }
}

function pathWith(r: Rng, token: string): string {
  return `/${token}/${r.pick(["", "index.html", "app.js", "api/info", "api/log", "ws", "api/sessions/x/stop", junkSegment(r)])}`;
}

const METHODS = ["GET", "GET", "GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "PROPFIND"];
const ODD_METHODS = ["get", "BREW", "G E T", "", "GET\0", "X".repeat(300), "\u00ff"];
const VERSIONS = ["HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/0.9", "HTTP/1.x", "", "http/1.1"];

function hostHeader(r: Rng, port: number): string | undefined {
  return r.pick([
    `127.0.0.1:${port}`,
    `localhost:${port}`,
    `[::1]:${port}`,
    `127.0.0.1:${port + 1}`,
    `evil.example:${port}`,
    "127.0.0.1",
    "",
    "[::1",
    `127.0.0.1:${port}, evil.example`,
    "x".repeat(500),
    undefined,
  ]);
}

function junkHeaders(r: Rng, port: number, withBodyFraming: boolean): string[] {
  const headers: string[] = [];
  const host = hostHeader(r, port);
  if (host !== undefined) headers.push(`Host: ${host}`);
  if (r.chance(0.1)) headers.push(`Host: evil.example`); // a second one
  if (r.chance(0.4)) {
    headers.push(
      `Origin: ${r.pick([`http://127.0.0.1:${port}`, "http://evil.example", "null", "http://[", "://", "file://", `http://localhost:${port}`, junkSegment(r)])}`,
    );
  }
  const n = r.int(4);
  for (let i = 0; i < n; i++) {
    headers.push(
      r.pick([
        () => `X-${junkSegment(r).replace(/[\r\n]/g, "")}: ${junkSegment(r)}`,
        () => `${r.pick(["Bad Header", "X:Y", "", "\u00e9t\u00e9", "X\tY"])}: v`,
        () => `X-Long: ${"v".repeat(r.chance(0.5) ? 17_000 + r.int(20_000) : 4000)}`,
        () => ` folded continuation`,
        () => `Cookie: ${"c=".repeat(r.int(3000))}`,
        () => `Expect: ${r.pick(["100-continue", "teapot", ""])}`,
        () => `Connection: ${r.pick(["close", "keep-alive", "upgrade", "Upgrade, HTTP2-Settings"])}`,
        () => `Upgrade: ${r.pick(["websocket", "h2c", "", "x"])}`,
        () => "NoColon",
      ])(),
    );
  }
  if (withBodyFraming && r.chance(0.3)) {
    headers.push(
      r.pick([
        "Content-Length: 5",
        "Content-Length: -1",
        "Content-Length: 99999999999999999999",
        "Content-Length: 1\r\nContent-Length: 2",
        "Transfer-Encoding: chunked",
        "Transfer-Encoding: gzip, chunked",
        "Transfer-Encoding: chunked\r\nContent-Length: 3",
      ]),
    );
  }
  return headers;
}

interface Case {
  what: string;
  options: ExchangeOptions;
  /** What it must get: 403; an answer below 500; that or the connection closed; nothing (the client gave up). */
  expect: "403" | "answer" | "answer or close" | "nothing";
}

function httpCase(r: Rng, port: number, token: string): Case {
  const withToken = r.chance(0.15);
  const method = r.chance(0.1) ? r.pick(ODD_METHODS) : r.pick(METHODS);
  const path = withToken ? pathWith(r, token) : pathWithout(r, token);
  const eol = r.chance(0.05) ? r.pick(["\n", "\r", "\r\r\n"]) : "\r\n";
  const headers = junkHeaders(r, port, !withToken);
  let body = "";
  if (!withToken && r.chance(0.2))
    body = r.pick(["hello", "0\r\n\r\n", "zz\r\nxx\r\n", r.bytes(50).toString("latin1")]);
  const request = Buffer.from(
    `${method} ${path} ${r.pick(VERSIONS)}${eol}${headers.join(eol)}${eol}${eol}${body}`,
    "latin1",
  );
  // Mostly one write; sometimes split anywhere (mid-token, mid-percent-escape, mid-header), sometimes pipelined.
  const chunks: Buffer[] = [];
  if (r.chance(0.3)) {
    let at = 0;
    while (at < request.length) {
      const n = 1 + r.int(Math.max(1, Math.min(64, request.length - at)));
      chunks.push(request.subarray(at, at + n));
      at += n;
    }
  } else chunks.push(request);
  if (r.chance(0.05)) chunks.push(Buffer.from(`GET /${token}/ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`));
  const then = r.pick(["wait", "wait", "end", "end", "destroy", "reset"] as const);
  const what = `${method.slice(0, 20)} ${path.slice(0, 80)} (${headers.length} headers, ${chunks.length} writes, ${then})`;
  return { what, options: { chunks, then }, expect: expectation(then, Buffer.concat(chunks), token) };
}

function garbageCase(r: Rng, token: string): Case {
  const kind = r.int(5);
  const bytes =
    kind === 0
      ? r.bytes(1 + r.int(300))
      : kind === 1
        ? Buffer.from(`GET /${wrongToken(r, token)}/`.slice(0, 1 + r.int(40))) // cut short
        : kind === 2
          ? Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
          : kind === 3
            ? Buffer.concat([Buffer.from("GET / HTTP/1.1\r\n"), r.bytes(1 + r.int(200))])
            : Buffer.from("\r\n".repeat(1 + r.int(5)));
  // An HTTP/2 preface (PRI) and line breaks alone are closed by Node without an answer: refused all the same.
  const silent = kind === 2 || /^[\r\n]*$/.test(bytes.toString("latin1"));
  return {
    what: `garbage kind ${kind}: ${JSON.stringify(bytes.toString("latin1").slice(0, 60))}`,
    options: { chunks: [bytes], then: "end" },
    expect: silent ? "nothing" : expectation("end", bytes, token),
  };
}

function upgradeCase(r: Rng, port: number, token: string): Case {
  const path = r.chance(0.5) ? pathWithout(r, token) : `/${token}/ws`;
  const headers = r.chance(0.5) ? [] : junkHeaders(r, port, false).filter((h) => !/^Host:/.test(h));
  const request = Buffer.from(upgradeRequest(port, path, headers), "latin1");
  // A valid upgrade is answered 101 and then waits for frames: half-closed, so that it ends.
  const then = path === `/${token}/ws` ? "end" : r.pick(["wait", "end", "reset"] as const);
  return {
    what: `upgrade ${path.slice(0, 80)} with ${headers.length} odd headers (${then})`,
    options: { chunks: [request], then },
    expect: expectation(then, request, token),
  };
}

/** After a valid upgrade: one of these, all at once or split across writes. `valid` ones must get a pong back. */
function framesAfterUpgrade(r: Rng): { what: string; bytes: Buffer; valid: boolean } {
  const text = (s: Buffer, fin = true, opcode: number = OP.text) => frame({ opcode, payload: s, fin });
  switch (r.int(8)) {
    case 0:
      return { what: "random bytes", bytes: r.bytes(1 + r.int(200)), valid: false };
    case 1: {
      const opcode = r.int(16);
      return {
        what: `frame opcode ${opcode} with random bits`,
        bytes: frame({ opcode, fin: r.chance(0.5), rsv: r.int(8), mask: r.chance(0.8), payload: r.bytes(r.int(140)) }),
        valid: false,
      };
    }
    case 2:
      return {
        what: "a declared length that is a lie",
        bytes: frame({ opcode: OP.binary, payload: r.bytes(10), length: BigInt(r.pick([11, 200, 70_000, 2 ** 40])) }),
        valid: false,
      };
    case 3:
      return { what: "text that is not UTF-8", bytes: text(Buffer.from([0xc0, 0x80, 0xff])), valid: false };
    case 4:
      return {
        what: "a close frame with an odd payload",
        bytes: frame({
          opcode: OP.close,
          payload: r.pick([Buffer.from([1]), closePayload(r.int(5000)), r.bytes(126)]),
        }),
        valid: false,
      };
    default: {
      // A valid fragmented message with a ping in the middle of it, then one more ping.
      const parts = 1 + r.int(4);
      const frames: Buffer[] = [];
      for (let i = 0; i < parts; i++) {
        frames.push(text(Buffer.from(`part ${i}`), i === parts - 1, i === 0 ? OP.text : OP.continuation));
        if (i === 0) frames.push(frame({ opcode: OP.ping, payload: Buffer.from("mid") }));
      }
      frames.push(frame({ opcode: OP.ping, payload: Buffer.from("end") }));
      return { what: `a valid message in ${parts} fragments, with pings`, bytes: Buffer.concat(frames), valid: true };
    }
  }
}

function objectOf(line: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Runs `work` over the items with at most `n` at a time, stopping early when `stop` says so. */
async function pool<T>(items: T[], n: number, stop: () => boolean, work: (item: T, i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length && !stop()) {
        const i = next++;
        await work(items[i], i);
      }
    }),
  );
}

let inspector: InspectorProcess;
const held: Socket[] = [];
before(async () => {
  // The token is part of the generated bytes: derived from the seed too, so that a seed reproduces them.
  const r = prng(SEED ^ 0x5eed);
  inspector = await InspectorProcess.start({
    token: Array.from({ length: 43 }, () => r.pick(B64URL.split(""))).join(""),
  });
});
after(async () => {
  for (const s of held) s.destroy();
  await inspector.stop();
});

test(`generated hostile requests are all refused or answered, and the inspector keeps serving (seed ${SEED})`, async (t) => {
  const started = Date.now();
  const r = prng(SEED);
  const { port, token } = inspector;
  const failures: string[] = [];
  const fail = (i: number, c: { what: string }, problem: string) => {
    if (failures.length < 20) failures.push(`#${i} ${c.what}: ${problem}`);
  };
  const verdict = (summary: string) =>
    `seed ${SEED} (rerun: PCS_FUZZ_SEED=${SEED} node --test test/inspector/inspector-fuzz.test.ts): ${summary}\n` +
    failures.join("\n");
  const down = () => !inspector.alive;

  // Half-open connections: a partial request (or nothing at all) held until the end, while everything else runs.
  for (let i = 0; i < HALF_OPEN; i++) {
    const partial = i % 3 === 0 ? "" : `GET /${wrongToken(r, token)}/ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: `;
    const c = await exchange(port, { chunks: partial ? [partial] : [], then: "hold" });
    if (c.socket) held.push(c.socket);
  }

  // Plain HTTP, parser garbage and upgrade requests, in one seeded sequence.
  const cases: Case[] = Array.from({ length: HTTP_CASES }, () => {
    const k = r.next();
    return k < 0.75 ? httpCase(r, port, token) : k < 0.85 ? garbageCase(r, token) : upgradeCase(r, port, token);
  });
  const counts = new Map<string, number>();
  await pool(cases, CONCURRENCY, down, async (c, i) => {
    const got: Exchange = await exchange(port, c.options);
    const key = got.status ? String(got.status) : got.closed ? "closed" : got.timedOut ? "timeout" : "gave up";
    counts.set(key, (counts.get(key) ?? 0) + 1);
    if (got.timedOut && c.expect !== "nothing") fail(i, c, "neither answered nor closed within 5 s");
    else if (c.expect === "403" && got.status !== 403) fail(i, c, `expected 403, got ${key}`);
    else if (c.expect === "answer" && (got.status === undefined || got.status >= 500)) fail(i, c, `got ${key}`);
    else if (c.expect === "answer or close" && got.status !== undefined && got.status >= 500) fail(i, c, `got ${key}`);
  });
  assert.ok(inspector.alive, verdict(`the inspector died: ${inspector.status()}`));
  assert.deepEqual(failures, [], verdict("wrong answers"));

  // Valid upgrades, then garbage or fragmented frames.
  const frameCases = Array.from({ length: WS_CASES }, () => {
    const c = framesAfterUpgrade(r);
    // All at once, or cut anywhere (mid-header, mid-mask, mid-payload) into small writes.
    const writes: Buffer[] = [];
    for (let at = 0; at < c.bytes.length;) {
      const n = r.chance(0.5) ? c.bytes.length : 1 + r.int(16);
      writes.push(c.bytes.subarray(at, at + n));
      at += n;
    }
    return { ...c, writes };
  });
  await pool(frameCases, CONCURRENCY, down, async (c, i) => {
    const up = await exchange(port, { chunks: [upgradeRequest(port, `/${token}/ws`)], keep: true });
    if (up.status !== 101) return fail(i, c, `the upgrade got ${up.status ?? "no answer"}`);
    const socket = up.socket!;
    for (const w of c.writes) socket.write(w);
    if (c.valid) {
      // The pongs prove the server read it all; then a clean close.
      const received = await new Promise<Buffer>((done) => {
        let data = afterHeader(up.received);
        const timer = setTimeout(() => done(data), 5000);
        socket.on("data", (d: Buffer) => {
          data = Buffer.concat([data, d]);
          if (serverFrames(data).some((f) => f.opcode === OP.pong && f.payload.toString() === "end")) {
            clearTimeout(timer);
            done(data);
          }
        });
      });
      const pongs = serverFrames(received)
        .filter((f) => f.opcode === OP.pong)
        .map((f) => f.payload.toString());
      if (pongs.join() !== "mid,end") fail(i, c, `pongs ${JSON.stringify(pongs)}`);
      socket.write(frame({ opcode: OP.close, payload: closePayload(1000) }));
    }
    // An invalid frame is answered with a close; a frame cut short is waited for, until the client leaves.
    await drain(socket, Buffer.alloc(0), c.valid ? 5000 : 30);
  });
  assert.ok(inspector.alive, verdict(`the inspector died: ${inspector.status()}`));
  assert.deepEqual(failures, [], verdict("wrong WebSocket answers"));

  // The log API, with the token: recorded logs mutated record by record.
  const lines = readFileSync(FIXTURE_LOG, "utf8").split("\n").filter(Boolean);
  const values = [
    "null",
    "0",
    '"x"',
    "[]",
    "{}",
    '{"k":"cmd"}',
    '{"k":"fact","from":"nope","event":{}}',
    '{"k":"timer","n":99}',
  ];
  const logs = Array.from({ length: REPLAY_CASES }, () => {
    const log = [...lines];
    const edits = 1 + r.int(4);
    for (let e = 0; e < edits; e++) {
      const at = r.int(log.length);
      const mutate = r.int(6);
      if (mutate === 0) log.splice(at, 1);
      else if (mutate === 1) log.splice(at, 0, log[r.int(log.length)]);
      else if (mutate === 2) log[at] = r.pick(values);
      else if (mutate === 3) log[at] = log[at].slice(0, r.int(log[at].length));
      else {
        // A field dropped or replaced, in a record an earlier edit left whole.
        const record = objectOf(log[at]);
        const key = r.pick(Object.keys(record ?? {}));
        if (!record || key === undefined) continue;
        if (mutate === 4) delete record[key];
        else record[key] = JSON.parse(r.pick(values));
        log[at] = JSON.stringify(record);
      }
    }
    return { what: `a log with ${edits} edits`, body: log.join("\n") };
  });
  await pool(logs, 4, down, async (c, i) => {
    try {
      const res = await fetch(`${inspector.url}api/replay`, { method: "POST", body: c.body });
      const report = (await res.json()) as { identical?: unknown; error?: string };
      if (res.status !== 200 || typeof report.identical !== "boolean") {
        fail(i, c, `${res.status} ${JSON.stringify(report).slice(0, 200)}`);
      }
    } catch (e) {
      fail(i, c, String(e));
    }
  });
  assert.ok(inspector.alive, verdict(`the inspector died: ${inspector.status()}`));
  assert.deepEqual(failures, [], verdict("wrong replay answers"));

  // With the half-open connections still held: a real user is served.
  await legitimateClient(inspector);
  assert.equal(inspector.stderr, "", "nothing was reported on stderr");
  t.diagnostic(
    `seed ${SEED}: ${cases.length} requests (${[...counts].map(([k, v]) => `${k}: ${v}`).join(", ")}), ` +
      `${frameCases.length} upgraded connections, ${logs.length} mutated logs, ${held.length} half-open, ` +
      `${Date.now() - started} ms`,
  );
});
