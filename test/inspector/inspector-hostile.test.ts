// Requests that took Pi down through its inspector, or got a wrong answer, one by one: the inspector runs in a
// child process (test/helpers/inspector-child.ts), so a crash is that process exiting, seen here with its stack.
// Without the token every request gets 403, whatever its path, method, headers or encoding; nothing a client sends
// throws past the server. The generated version of these is test/inspector/inspector-fuzz.test.ts.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { after, afterEach, before, describe, test } from "node:test";
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
  type FrameSpec,
} from "../helpers/inspector-wire.ts";
import WebSocket from "ws";

function freePort(): Promise<number> {
  return new Promise((done) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => done(port));
    });
  });
}

let inspector: InspectorProcess;
before(async () => {
  inspector = await InspectorProcess.start();
});
afterEach(async () => {
  // One crash must not hide the next test's result.
  if (!inspector.alive) inspector = await InspectorProcess.start();
});
after(async () => {
  await inspector.stop();
});

const host = () => `Host: 127.0.0.1:${inspector.port}\r\n`;
const get = (path: string, headers = "") => `GET ${path} HTTP/1.1\r\n${host()}${headers}\r\n`;

async function statusOf(chunks: (string | Buffer)[], then: "wait" | "end" = "wait"): Promise<number | string> {
  const r = await exchange(inspector.port, { chunks, then });
  return r.status ?? (r.timedOut ? "no answer" : "closed without an answer");
}

/** Paths whose first segment is not valid percent-encoding (decodeURIComponent throws URIError on them). */
const BAD_ENCODINGS = ["/%E0%A4%A", "/%", "/%zz", "/%C0", "/%ED%A0%80", "/%E0%A4%A%"];

describe("paths that are not valid percent-encoding", () => {
  test("a WebSocket upgrade on one gets 403, and the inspector stays up", async () => {
    for (const path of [...BAD_ENCODINGS.map((p) => `${p}/ws`), `/${inspector.token}%/ws`]) {
      assert.equal(await statusOf([upgradeRequest(inspector.port, path)]), 403, `${path}: ${inspector.status()}`);
    }
    assert.ok(inspector.alive, inspector.status());
    await legitimateClient(inspector);
  });

  test("plain HTTP on one gets 403, not 500", async () => {
    for (const p of BAD_ENCODINGS) {
      for (const path of [`${p}/`, `${p}/api/info`, `${p}/ws`]) {
        assert.equal(await statusOf([get(path)]), 403, path);
      }
    }
  });
});

describe("a valid upgrade followed by invalid frames", () => {
  const text = (s: string | Buffer, more: Partial<FrameSpec> = {}) =>
    frame({ opcode: OP.text, payload: Buffer.from(s), ...more });
  /** Each protocol error and the close code the server must answer it with. */
  const INVALID: [string, Buffer, number][] = [
    ["an unmasked frame", text("hello", { mask: false }), 1002],
    ["RSV bits without an extension", text("hello", { rsv: 0b100 }), 1002],
    ["a reserved opcode", frame({ opcode: 3, payload: Buffer.from("x") }), 1002],
    ["a control frame over 125 bytes", frame({ opcode: OP.ping, payload: Buffer.alloc(126) }), 1002],
    ["a fragmented control frame", frame({ opcode: OP.ping, fin: false }), 1002],
    ["a continuation with nothing to continue", frame({ opcode: OP.continuation, payload: Buffer.from("x") }), 1002],
    ["a new message inside a fragmented one", Buffer.concat([text("a", { fin: false }), text("b")]), 1002],
    ["text that is not UTF-8", text(Buffer.from([0xc3, 0x28, 0xff])), 1007],
    ["a close frame with a 1-byte payload", frame({ opcode: OP.close, payload: Buffer.from([3]) }), 1002],
    ["a close code that may not be sent", frame({ opcode: OP.close, payload: closePayload(1005) }), 1002],
    ["a 2^63-byte length", frame({ opcode: OP.binary, length: 1n << 63n }), 1009],
    ["a message over the 64 KiB limit", frame({ opcode: OP.binary, length: 65537n }), 1009],
  ];

  test("each closes its own connection with the protocol's close code; the inspector stays up", async () => {
    for (const [name, bytes, code] of INVALID) {
      const up = await exchange(inspector.port, {
        chunks: [upgradeRequest(inspector.port, `/${inspector.token}/ws`)],
        keep: true,
      });
      assert.equal(up.status, 101, name);
      up.socket!.write(bytes);
      const { data, closed } = await drain(up.socket!, afterHeader(up.received), 5000);
      assert.ok(closed, `${name}: the server closes the connection`);
      const close = serverFrames(data).find((f) => f.opcode === OP.close);
      assert.equal(close?.payload.readUInt16BE(0), code, name);
      assert.ok(inspector.alive, `${name}: ${inspector.status()}`);
    }
    await legitimateClient(inspector);
  });
});

describe("sockets that go away mid-answer", () => {
  test("clients that reset a refused upgrade or CONNECT at once do not take it down", async () => {
    for (let i = 0; i < 300 && inspector.alive; i++) {
      const request =
        i % 2 ? upgradeRequest(inspector.port, "/nope/ws") : `CONNECT 127.0.0.1:22 HTTP/1.1\r\n${host()}\r\n`;
      await exchange(inspector.port, { chunks: [request], then: "reset" });
    }
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(inspector.alive, inspector.status());
    await legitimateClient(inspector);
  });

  test("running out of file descriptors refuses connections instead of crashing", async () => {
    const starved = await InspectorProcess.start({ fdLimit: 64 });
    try {
      const held = await Promise.all(
        Array.from({ length: 80 }, () =>
          exchange(starved.port, {
            chunks: [`GET /x HTTP/1.1\r\nHost: 127.0.0.1:${starved.port}\r\n`],
            timeoutMs: 300,
          }),
        ),
      );
      assert.ok(
        held.some((r) => r.closed),
        "some connections were refused for want of descriptors",
      );
      await new Promise((r) => setTimeout(r, 100));
      assert.ok(starved.alive, starved.status());
      await legitimateClient(starved);
    } finally {
      await starved.stop();
    }
  });
});

describe("without the token, every request gets 403", () => {
  test("also the requests Node's HTTP parser refuses, CONNECT, a foreign Host and an unmeetable Expect", async () => {
    const p = inspector.port;
    const cases: [string, (string | Buffer)[], ("wait" | "end")?][] = [
      ["an unknown method", [`BREW /nope/ HTTP/1.1\r\n${host()}\r\n`]],
      ["a space in the path", [`GET /a b/ HTTP/1.1\r\n${host()}\r\n`]],
      ["a control character in the path", [`GET /a\x01b/ HTTP/1.1\r\n${host()}\r\n`]],
      [
        "raw bytes over 0x7f in the path",
        [Buffer.concat([Buffer.from("GET /"), Buffer.from([0xff, 0xfe]), Buffer.from(` HTTP/1.1\r\n${host()}\r\n`)])],
      ],
      ["an unknown HTTP version", [`GET / HTTP/7.1\r\n${host()}\r\n`]],
      ["an invalid header name", [`GET / HTTP/1.1\r\n${host()}Bad Header: x\r\n\r\n`]],
      ["oversized headers", [get("/nope/", `X-Big: ${"a".repeat(20_000)}\r\n`)]],
      ["conflicting Content-Length", [get("/nope/", "Content-Length: 1\r\nContent-Length: 2\r\n")]],
      ["no Host (HTTP/1.1)", ["GET /nope/ HTTP/1.1\r\n\r\n"]],
      ["no Host (HTTP/1.0)", ["GET /nope/ HTTP/1.0\r\n\r\n"]],
      ["a foreign Host", [`GET /nope/ HTTP/1.1\r\nHost: evil.example:${p}\r\n\r\n`]],
      ["a foreign Origin", [get("/nope/api/info", "Origin: http://evil.example\r\n")]],
      ["an Expect the server cannot meet", [get("/nope/", "Expect: teapot\r\n")]],
      ["CONNECT", [`CONNECT 127.0.0.1:22 HTTP/1.1\r\n${host()}\r\n`]],
      ["an upgrade to another protocol", [get("/nope/", "Connection: Upgrade\r\nUpgrade: h2c\r\n")]],
      ["a request cut short", ["GET /nope/api/in"], "end"],
      ["garbage", [Buffer.from([0, 1, 2, 3, 0xff, 13, 10, 13, 10])], "end"],
    ];
    const wrong: string[] = [];
    for (const [name, chunks, then] of cases) {
      const status = await statusOf(chunks, then);
      if (status !== 403) wrong.push(`${name}: ${status}`);
    }
    assert.deepEqual(wrong, []);
    assert.ok(inspector.alive, inspector.status());
  });

  test("Expect: 100-continue without the token is refused before the body is invited", async () => {
    const r = await exchange(inspector.port, {
      chunks: [`POST /nope/api/replay HTTP/1.1\r\n${host()}Content-Length: 10\r\nExpect: 100-continue\r\n\r\n`],
    });
    assert.equal(r.status, 403);
    assert.match(r.received.toString("latin1"), /^HTTP\/1\.1 403/, "no 100 Continue first");
  });

  test("with the token, the other refusals keep their own status", async () => {
    const t = inspector.token;
    assert.equal(await statusOf([`GET /${t}/ HTTP/1.1\r\nHost: evil.example:${inspector.port}\r\n\r\n`]), 421);
    assert.equal(await statusOf([get(`/${t}/api/info`, "Origin: http://evil.example\r\n")]), 421);
    assert.equal(await statusOf([`GET /${t}/ HTTP/1.1\r\n\r\n`]), 421, "no Host");
    assert.equal(await statusOf([get(`/${t}/`, "Expect: teapot\r\n")]), 417);
    assert.equal(await statusOf([get(`/${t}/`, `X-Big: ${"a".repeat(20_000)}\r\n`)]), 431);
    assert.equal(await statusOf([`BREW /${t}/ HTTP/1.1\r\n${host()}\r\n`]), 400);
    assert.equal(await statusOf([get(`/${t}/nothing-here`)]), 404);
    assert.equal(await statusOf([get(`/${t}/`)]), 200);
  });
});

describe("the online mode's relay (@statelyai/inspect's server, on every interface)", () => {
  test("invalid frames from one of its clients do not take Pi down, and the relay keeps relaying", async () => {
    const port = await freePort();
    const pi = await InspectorProcess.start({ statelyPort: port });
    try {
      for (const bytes of [
        frame({ opcode: OP.text, payload: Buffer.from("x"), mask: false }),
        frame({ opcode: OP.binary, length: 1n << 63n }),
        Buffer.from([0xff, 0xff, 0xff]),
      ]) {
        const up = await exchange(port, { chunks: [upgradeRequest(port, "/")], keep: true });
        assert.equal(up.status, 101, pi.status());
        up.socket!.write(bytes);
        await drain(up.socket!, Buffer.alloc(0), 2000);
      }
      const reset = await exchange(port, { chunks: [upgradeRequest(port, "/")], keep: true });
      reset.socket!.resetAndDestroy();
      await new Promise((r) => setTimeout(r, 200));
      assert.ok(pi.alive, pi.status());
      // A page connected to the relay still receives what Pi's bridge sends.
      const ws = new WebSocket(`ws://127.0.0.1:${port}`);
      const live = await new Promise<boolean>((done) => {
        const timer = setTimeout(() => done(false), 10_000);
        ws.on("open", () => pi.poke());
        ws.on("error", () => done(false));
        ws.on("message", (m) => {
          if (String(m).includes('"poke-')) {
            clearTimeout(timer);
            done(true);
          }
        });
      });
      ws.close();
      assert.ok(live, "a live frame through the relay");
    } finally {
      await pi.stop();
    }
  });
});

describe("the replay API", () => {
  test("a log over the limit is answered 413 with the way to replay it", async () => {
    const res = await fetch(`${inspector.url}api/replay`, {
      method: "POST",
      body: Buffer.alloc(4 * 1024 * 1024 + 1, "x"),
    });
    assert.equal(res.status, 413);
    assert.match(((await res.json()) as { error: string }).error, /node \S+\/bin\/pi-code-supervisor\.js replay/);
    assert.ok(inspector.alive, inspector.status());
  });

  test("records that are not objects get a clear error, not a 500", async () => {
    const header = readFileSync(FIXTURE_LOG, "utf8").split("\n")[0];
    for (const bad of ["null", "3", '"text"', "[1,2]", "true"]) {
      const res = await fetch(`${inspector.url}api/replay`, {
        method: "POST",
        body: `${header}\n${bad}\n{"k":"stop"}\n`,
      });
      assert.equal(res.status, 200, bad);
      const report = (await res.json()) as { identical: boolean; error?: string };
      assert.equal(report.identical, false);
      assert.equal(report.error, "line 2 is not a log record", bad);
    }
  });

  test("a recorded log still replays identical", async () => {
    const res = await fetch(`${inspector.url}api/replay`, { method: "POST", body: readFileSync(FIXTURE_LOG) });
    assert.deepEqual(((await res.json()) as { identical: boolean }).identical, true);
  });
});
