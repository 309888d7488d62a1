// Hostile-client tooling for the inspector tests: the inspector in a child process (test/helpers/inspector-child.ts)
// and raw exchanges over node:net, below any HTTP or WebSocket client library that would refuse to send malformed
// bytes, with a small WebSocket frame writer and reader for what happens after an upgrade.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";
import { join, resolve } from "node:path";
import WebSocket from "ws";

const ROOT = resolve(import.meta.dirname, "../..");
export const FIXTURE_LOG = join(ROOT, "test/fixtures/replay/reset.jsonl");

export class InspectorProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly port: number;
  readonly token: string;
  private readonly errors: string[];

  private constructor(child: ChildProcess, url: string, errors: string[]) {
    this.child = child;
    this.url = url;
    this.errors = errors;
    const u = new URL(url);
    this.port = Number(u.port);
    this.token = u.pathname.split("/")[1];
  }

  /** `token`: its token instead of a random one. `fdLimit`: the process's open-file limit (`ulimit -n`), to run it
   * out of descriptors. `statelyPort`: also feed @statelyai/inspect's relay server, started on that port. */
  static async start(
    options: { log?: string; token?: string; fdLimit?: number; statelyPort?: number } = {},
  ): Promise<InspectorProcess> {
    const args = [join(ROOT, "test/helpers/inspector-child.ts"), "--log", options.log ?? FIXTURE_LOG];
    if (options.token) args.push("--token", options.token);
    if (options.statelyPort) args.push("--stately", String(options.statelyPort));
    const child = options.fdLimit
      ? spawn("/bin/sh", ["-c", `ulimit -n ${options.fdLimit} && exec "$0" "$@"`, process.execPath, ...args], {
          stdio: ["pipe", "pipe", "pipe"],
        })
      : spawn(process.execPath, args, { stdio: ["pipe", "pipe", "pipe"] });
    const errors: string[] = [];
    child.stderr!.on("data", (d) => errors.push(String(d)));
    const url = await new Promise<string>((done, reject) => {
      let out = "";
      child.stdout!.on("data", (d) => {
        out += d;
        const line = out.split("\n")[0];
        if (out.includes("\n")) done(JSON.parse(line).url);
      });
      child.once("exit", (code) =>
        reject(new Error(`the inspector exited (${code}) before listening: ${errors.join("")}`)),
      );
    });
    return new InspectorProcess(child, url, errors);
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** What the process wrote to stderr (an uncaught exception's stack, for one). */
  get stderr(): string {
    return this.errors.join("");
  }

  /** Says whether it is still up, with its stderr when it is not. */
  status(): string {
    return this.alive ? "alive" : `exited (${this.child.exitCode ?? this.child.signalCode}): ${this.stderr}`;
  }

  /** The supervisor handles one more event: connected pages receive live frames. */
  poke(): void {
    this.child.stdin!.write("poke\n");
  }

  async stop(): Promise<void> {
    if (!this.alive) return;
    const exited = new Promise((r) => this.child.once("exit", r));
    this.child.stdin!.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
  }
}

export interface Exchange {
  /** The status of the first final response (1xx other than 101 skipped), when one arrived. */
  status?: number;
  /** The server closed the connection (FIN or reset) before, or without, a response. */
  closed: boolean;
  timedOut: boolean;
  /** Everything received (header and anything after it). */
  received: Buffer;
  /** The socket, still open, for an upgraded connection (`keep`). */
  socket?: Socket;
}

export interface ExchangeOptions {
  /** The bytes, each chunk its own write (the server may read them apart: fragmented requests). */
  chunks: (string | Buffer)[];
  /** After writing: wait for the answer, half-close first, give up (destroy / reset) at once, or hold the
   * connection open as it is and hand the socket back. */
  then?: "wait" | "end" | "destroy" | "reset" | "hold";
  timeoutMs?: number;
  /** Keep the socket open after a 101 and hand it back. */
  keep?: boolean;
}

const STATUS = /^HTTP\/1\.[01] (\d{3})/;

/** One connection: writes the chunks, then reads until a response header is complete or the server closes. */
export function exchange(port: number, options: ExchangeOptions): Promise<Exchange> {
  const { chunks, then = "wait", timeoutMs = 5000, keep = false } = options;
  return new Promise((resolveExchange) => {
    let received = Buffer.alloc(0);
    let settled = false;
    const socket = connect({ port, host: "127.0.0.1", noDelay: true });
    const finish = (result: Omit<Exchange, "received">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (result.socket) socket.removeAllListeners("data");
      else socket.destroy();
      resolveExchange({ ...result, received });
    };
    // `timeoutMs` is the server's time to answer, counted from the request's last byte; until then only a hang
    // guard runs (writing hundreds of chunks took seconds on a machine under stress-ng, and was counted as silence).
    const giveUp = () => finish({ closed: false, timedOut: true });
    let timer = setTimeout(giveUp, Math.max(timeoutMs, 60_000));
    const answered = (): number | undefined => {
      let rest = received;
      for (;;) {
        const end = rest.indexOf("\r\n\r\n");
        if (end < 0) return undefined;
        const status = Number(STATUS.exec(rest.subarray(0, end).toString("latin1"))?.[1] ?? 0);
        if (status && status < 200 && status !== 101) {
          rest = rest.subarray(end + 4);
          continue;
        }
        return status;
      }
    };
    socket.on("data", (d: Buffer) => {
      received = Buffer.concat([received, d]);
      const status = answered();
      if (status !== undefined)
        finish({ status, closed: false, timedOut: false, ...(keep && status === 101 ? { socket } : {}) });
    });
    socket.on("error", () => {
      // A reset from the server is an answer too (see `closed`).
    });
    socket.on("close", () => finish({ closed: true, timedOut: false }));
    socket.once("connect", async () => {
      for (const chunk of chunks) {
        if (socket.destroyed) return;
        socket.write(chunk);
        if (chunks.length > 1) await new Promise((r) => setImmediate(r));
      }
      clearTimeout(timer);
      timer = setTimeout(giveUp, timeoutMs);
      if (then === "end") socket.end();
      else if (then === "destroy") finish({ closed: false, timedOut: false });
      else if (then === "hold") finish({ closed: false, timedOut: false, socket });
      else if (then === "reset") {
        socket.resetAndDestroy();
        finish({ closed: false, timedOut: false });
      }
    });
  });
}

/** A WebSocket upgrade request as a browser would send it. */
export function upgradeRequest(port: number, path: string, headers: string[] = []): string {
  return (
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
    `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\n` +
    headers.map((h) => `${h}\r\n`).join("") +
    "\r\n"
  );
}

export interface FrameSpec {
  fin?: boolean;
  /** RSV1..3 as bits 0b100, 0b010, 0b001. */
  rsv?: number;
  opcode: number;
  payload?: Buffer;
  /** Clients must mask; false sends an unmasked frame. */
  mask?: boolean;
  /** A declared length other than the payload's (a lie, or a huge 64-bit one). */
  length?: bigint;
}

/** One WebSocket frame as a client writes it. */
export function frame(spec: FrameSpec): Buffer {
  const payload = spec.payload ?? Buffer.alloc(0);
  const length = spec.length ?? BigInt(payload.length);
  const mask = spec.mask ?? true;
  const head: number[] = [((spec.fin ?? true) ? 0x80 : 0) | ((spec.rsv ?? 0) << 4) | (spec.opcode & 0x0f)];
  const m = mask ? 0x80 : 0;
  let ext = Buffer.alloc(0);
  if (length < 126n) head.push(m | Number(length));
  else if (length < 65536n) {
    head.push(m | 126);
    ext = Buffer.alloc(2);
    ext.writeUInt16BE(Number(length));
  } else {
    head.push(m | 127);
    ext = Buffer.alloc(8);
    ext.writeBigUInt64BE(length);
  }
  const key = mask ? randomBytes(4) : Buffer.alloc(0);
  const body = Buffer.from(payload);
  if (mask) for (let i = 0; i < body.length; i++) body[i] ^= key[i % 4];
  return Buffer.concat([Buffer.from(head), ext, key, body]);
}

export const OP = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 } as const;

export function closePayload(code: number, reason = ""): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(code);
  return Buffer.concat([b, Buffer.from(reason)]);
}

/** The server's (unmasked) frames in `data`, as far as they are complete. */
export function serverFrames(data: Buffer): { opcode: number; payload: Buffer }[] {
  const frames: { opcode: number; payload: Buffer }[] = [];
  let i = 0;
  while (i + 2 <= data.length) {
    const opcode = data[i] & 0x0f;
    let length = data[i + 1] & 0x7f;
    let at = i + 2;
    if (length === 126) {
      if (at + 2 > data.length) break;
      length = data.readUInt16BE(at);
      at += 2;
    } else if (length === 127) {
      if (at + 8 > data.length) break;
      length = Number(data.readBigUInt64BE(at));
      at += 8;
    }
    if (at + length > data.length) break;
    frames.push({ opcode, payload: data.subarray(at, at + length) });
    i = at + length;
  }
  return frames;
}

/** After an upgrade: everything the server sends until it closes (or the timeout), and whether it closed. */
export function drain(socket: Socket, already: Buffer, timeoutMs: number): Promise<{ data: Buffer; closed: boolean }> {
  return new Promise((done) => {
    let data = already;
    const timer = setTimeout(() => {
      socket.destroy();
      done({ data, closed: false });
    }, timeoutMs);
    socket.on("data", (d: Buffer) => (data = Buffer.concat([data, d])));
    const closed = () => {
      clearTimeout(timer);
      socket.destroy();
      done({ data, closed: true });
    };
    if (socket.readableEnded || socket.destroyed) return closed();
    socket.once("end", closed);
    socket.once("close", closed);
  });
}

/** The WebSocket frames after the 101 response's header. */
export function afterHeader(received: Buffer): Buffer {
  const end = received.indexOf("\r\n\r\n");
  return end < 0 ? Buffer.alloc(0) : received.subarray(end + 4);
}

/** What a real user does: the page over HTTP, then a WebSocket that receives the tree and a live frame. */
export async function legitimateClient(inspector: InspectorProcess): Promise<void> {
  const page = await fetch(inspector.url);
  if (page.status !== 200 || !(await page.text()).includes('src="app.js"')) {
    throw new Error(`the page with the token: ${page.status}`);
  }
  const info = (await fetch(`${inspector.url}api/info`).then((r) => r.json())) as { live: boolean };
  if (!info.live) throw new Error(`api/info: ${JSON.stringify(info)}`);
  const ws = new WebSocket(`${inspector.url.replace("http", "ws")}ws`);
  try {
    await new Promise<void>((done, reject) => {
      const timer = setTimeout(() => reject(new Error("no live frame within 10 s")), 10_000);
      let tree = false;
      ws.on("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
      ws.on("message", (m) => {
        const f = JSON.parse(String(m)) as { type: string; sessionId: string; event?: { name?: string } };
        if (!tree && f.type === "@xstate.actor" && f.sessionId === "supervisor") {
          tree = true;
          inspector.poke();
        }
        if (tree && f.type === "@xstate.event" && f.event?.name?.startsWith("poke-")) {
          clearTimeout(timer);
          done();
        }
      });
    });
  } finally {
    ws.close();
  }
}
