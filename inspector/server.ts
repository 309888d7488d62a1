// The live inspector: a local HTTP + WebSocket server for the page in inspector/page/. It binds to loopback only
// (any other address is refused), every URL carries an unguessable token, the Host and Origin headers must be its
// own (no DNS rebinding, no cross-site use), and it is read-only unless the caller offers the stop-session action.
// It runs inside Pi, so no request may throw past it: whatever a client sends without the token (a path that is
// not percent-encoding, bytes Node's parser refuses, CONNECT, invalid WebSocket frames, a socket reset mid-answer)
// gets 403 or a closed connection, never an exception.
// The WebSocket streams @statelyai/inspect frames (inspector/frames.ts): recent history, the live tree, then
// every frame as it happens. Every actor a page hears of comes with its creation frame first, at the actor's true
// creation time and under its parent, even when it was created before the inspector started or its creation frame
// has left the history (a spare retired later would otherwise appear at the root, created when the page connected).
// Past 400 lines, one concept: every way in (HTTP, the WebSocket upgrade, its frames) passes the same token, Host
// and Origin checks, kept in one file so that no entrance is read or changed without them.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { readFile } from "node:fs/promises";
import { stripTypeScriptTypes } from "node:module";
import { createServer, STATUS_CODES, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { AnyActorRef } from "xstate";
import { WebSocketServer, type WebSocket } from "ws";
import type { SystemObserver } from "../record/observe.ts";
import { parseLog, replayRecords } from "../record/replay.ts";
import { CLI_COMMAND } from "../record/log-files.ts";
import { fail, ok, type Result } from "../lib/result.ts";
import { actorName, ref } from "../record/trace.ts";
import { frameOf, lateFrames, liveActors, type Frame } from "./frames.ts";
import { chartAsset } from "./charts.ts";

export interface InspectorOptions {
  /** The live system; without it the inspector only shows recorded logs. */
  observer?: SystemObserver;
  /** Bind address: loopback only (`127.0.0.1` by default, `::1`, `localhost`). */
  host?: string;
  /** 0 or absent: a free port. */
  port?: number;
  /** Default: 32 random bytes, base64url. */
  token?: string;
  /** Offered only when given: stops a named session from the page (behind the same token). */
  stopSession?: (name: string) => Promise<boolean>;
  /** The log the page can open from the server (the live session's own log, or the log given to the CLI). */
  logPath?: () => string | undefined;
  /** Frames kept for pages that connect later. */
  historyFrames?: number;
  /** The largest log the page may ask the server to replay. Replay runs on the server's event loop, so inside Pi
   * the default stays small (4 MiB); the standalone CLI allows more. */
  replayLimitBytes?: number;
}

export interface Inspector {
  url: string;
  host: string;
  port: number;
  token: string;
  readOnly: boolean;
  clients(): number;
  close(): Promise<void>;
}

const PAGE_FILES: Record<string, string> = {
  "": "index.html",
  "index.html": "index.html",
  "app.js": "app.js",
  "model.js": "model.js",
  "phase.js": "phase.js",
  "cursor.js": "cursor.js",
  "view.js": "view.js",
  "dom.js": "dom.js",
  "chart-layout.js": "chart-layout.js",
  "chart-model.js": "chart-model.js",
  "chart-view.js": "chart-view.js",
  "chart-draw.js": "chart-draw.js",
  "chart-info.js": "chart-info.js",
  "sequence-view.js": "sequence-view.js",
  "style.css": "style.css",
  "timeline.css": "timeline.css",
  "chart.css": "chart.css",
  "sequence.css": "sequence.css",
};
/** The page's modules that are the project's own TypeScript modules, served with their types stripped (the page's
 * file of that name re-exports the module for Node, which reads TypeScript itself). */
const SHARED_MODULES: Record<string, URL> = {
  "actor-ids.js": new URL("../machines/actor-ids.ts", import.meta.url),
  "log-codec.js": new URL("../record/log-codec.ts", import.meta.url),
};
const stripped = new Map<string, Promise<string>>();
const sharedModule = (name: string): Promise<string> => {
  let body = stripped.get(name);
  if (!body) {
    body = readFile(SHARED_MODULES[name]!, "utf8").then((ts) => {
      // Node 22 calls this experimental and says so once on stderr, which would draw over Pi's screen.
      const emit = process.emitWarning;
      process.emitWarning = () => {};
      try {
        return stripTypeScriptTypes(ts);
      } finally {
        process.emitWarning = emit;
      }
    });
    stripped.set(name, body);
  }
  return body;
};
const TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
};
/** Node's own answers to requests its parser refuses, other than 400 (given only when they carry the token). */
const PARSE_ERRORS: Record<string, number> = { HPE_HEADER_OVERFLOW: 431, HPE_CHUNK_EXTENSIONS_OVERFLOW: 413 };
/** A page that cannot keep up is dropped rather than buffered without bound in Pi's memory. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

function sameToken(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** How long a refused connection stays open for its client to read the answer and close. */
const LINGER_MS = 2000;

/** A refusal written straight to a socket the HTTP server no longer manages (upgrade, CONNECT, a request its
 * parser refused). What the client still sends is read and dropped: closing with unread input would reset the
 * connection and could take the answer with it. The socket goes when the client closes, or after LINGER_MS. */
function refuse(socket: Duplex, status: number): void {
  if (socket.writableEnded || socket.destroyed) return; // already refused (a parser error repeats on each chunk)
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const linger = setTimeout(() => socket.destroy(), LINGER_MS).unref();
  socket.once("close", () => clearTimeout(linger));
  socket.resume();
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
}

export async function startInspector(options: InspectorOptions = {}): Promise<Result<Inspector>> {
  const requested = options.host ?? "127.0.0.1";
  if (!isLoopback(requested)) {
    return fail(`refusing to bind the inspector to ${requested}: it serves loopback addresses only`);
  }
  const bindHost = requested.toLowerCase() === "localhost" ? "127.0.0.1" : requested.replace(/^\[|\]$/g, "");
  const token = options.token ?? randomBytes(32).toString("base64url");
  const readOnly = !options.stopSession;
  /** Recent frames: `id` the actor it is about, `created` when it is that actor's creation frame. */
  const history: { text: string; id: string; created: boolean }[] = [];
  const historyLimit = options.historyFrames ?? 5000;
  /** Per actor with frames in the history: its creation frame and its parent, sent ahead of the actor's first
   * frame to a page that connects after the history lost the creation. */
  const origins = new Map<string, { text: string; parent?: string }>();
  const sockets = new Set<Socket>();
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  let port = 0;

  const origin = () => `http://${bindHost.includes(":") ? `[${bindHost}]` : bindHost}:${port}`;
  /** Host must name this server (a DNS-rebinding page would send its own name); Origin, when sent, too. */
  const trusted = (req: IncomingMessage): boolean => {
    const hostHeader = req.headers.host ?? "";
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(hostHeader);
    if (!m || !isLoopback(m[1]) || Number(m[2] ?? 80) !== port) return false;
    const o = req.headers.origin;
    if (o === undefined) return true;
    try {
      const u = new URL(o);
      return isLoopback(u.hostname) && Number(u.port) === port;
    } catch {
      return false;
    }
  };
  /** `/<token>/rest` → `rest`, or undefined when the token is missing or wrong. It is checked before anything
   * else, so a request without it gets 403 whatever else is wrong with it. */
  const route = (url: string | undefined): string | undefined => {
    const path = (url ?? "/").split("?")[0];
    const m = /^\/([^/]+)\/(.*)$/.exec(path);
    if (!m) return undefined;
    let given: string;
    try {
      given = decodeURIComponent(m[1]);
    } catch {
      return undefined; // not percent-encoding (URIError): not the token either
    }
    return sameToken(given, token) ? m[2] : undefined;
  };

  const broadcast = (frame: Frame) => {
    const text = JSON.stringify(frame);
    const created = frame.type === "@xstate.actor";
    if (created) origins.set(frame.sessionId, { text, ...(frame.parentId ? { parent: frame.parentId } : {}) });
    history.push({ text, id: frame.sessionId, created });
    // Trimmed by a tenth at a time, so the origins are pruned once per batch rather than on every frame.
    if (history.length > historyLimit) trim(history.length - Math.floor(historyLimit * 0.9));
    for (const client of wss.clients) send(client, text);
  };
  /** Drops the oldest frames, and the origins of actors neither live nor named by the history (a named actor keeps
   * its ancestors'; a live actor keeps its own, or its next frame would announce it again as a new incarnation). */
  const trim = (count: number) => {
    history.splice(0, count);
    const named = new Set(liveActors(options.observer?.root).map(actorName));
    for (const h of history) {
      for (let id: string | undefined = h.id; id && !named.has(id); id = origins.get(id)?.parent) named.add(id);
    }
    for (const id of origins.keys()) if (!named.has(id)) origins.delete(id);
  };
  /** An actor created before the inspector started: its creation frame (true time, under its parent, parents
   * first) and its present snapshot before its first frame here; `withState` false when that frame is the actor's
   * own snapshot. */
  const introduce = (actor: AnyActorRef, withState: boolean) => {
    if (origins.has(actorName(actor))) return;
    if (actor._parent) introduce(actor._parent, true);
    const frames = lateFrames(actor, options.observer?.createdAt(actor));
    for (const frame of withState ? frames : frames.slice(0, 1)) broadcast(frame);
  };
  const send = (client: WebSocket, text: string) => {
    if (client.readyState !== client.OPEN) return;
    if (client.bufferedAmount > MAX_BUFFERED_BYTES) return client.terminate();
    client.send(text);
  };
  const unsubscribe = options.observer?.on({
    inspection: (ev) => {
      // Every frame goes to the history (from the inspector's start) and to each connected page.
      const frame = frameOf(ev);
      if (!frame) return;
      if (frame.type !== "@xstate.actor") introduce(ref(ev.actorRef), frame.type === "@xstate.event");
      else if (ref(ev.actorRef)._parent) introduce(ref(ev.actorRef)._parent!, true);
      broadcast(frame);
    },
  });

  const respond = (res: ServerResponse, status: number, type: string, body: string | Buffer) => {
    res.writeHead(status, {
      "content-type": type,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "content-security-policy":
        "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'",
    });
    res.end(body);
  };
  const json = (res: ServerResponse, status: number, value: unknown) =>
    respond(res, status, "application/json; charset=utf-8", JSON.stringify(value));

  /** `expectation`: the request's `Expect` header, when it has one (`100-continue` or another). */
  const serve = async (req: IncomingMessage, res: ServerResponse, expectation?: "continue" | "other") => {
    const rest = route(req.url);
    if (rest === undefined) return respond(res, 403, "text/plain", "forbidden: open the URL with its token\n");
    if (!trusted(req)) return respond(res, 421, "text/plain", "misdirected request\n");
    if (expectation === "other") return respond(res, 417, "text/plain", "expectation failed\n");
    if (expectation === "continue") res.writeContinue();
    if (req.method === "GET" && rest in SHARED_MODULES) return respond(res, 200, TYPES.js, await sharedModule(rest));
    if (req.method === "GET" && rest in PAGE_FILES) {
      const file = PAGE_FILES[rest];
      const body = await readFile(new URL(`./page/${file}`, import.meta.url));
      return respond(res, 200, TYPES[file.split(".").pop()!], body);
    }
    const asset = req.method === "GET" ? await chartAsset(rest) : undefined;
    if (asset) return respond(res, asset.status ?? 200, asset.type, asset.body);
    if (req.method === "GET" && rest === "api/info") {
      const log = options.logPath?.();
      return json(res, 200, { live: Boolean(options.observer), readOnly, log: log ?? null });
    }
    if (req.method === "GET" && rest === "api/log") {
      const log = options.logPath?.();
      if (!log) return json(res, 404, { error: "no log" });
      return respond(res, 200, "application/x-ndjson; charset=utf-8", await readFile(log));
    }
    if (req.method === "POST" && rest === "api/replay") {
      const body = await readBody(req, options.replayLimitBytes ?? 4 * 1024 * 1024);
      if (body === undefined) {
        return json(res, 413, {
          error: `this log is too large to replay here; use: ${CLI_COMMAND} replay <log>`,
        });
      }
      const parsed = parseLog(body);
      // parseLog refuses lines that are no record, and input records without their event, naming the line.
      if (parsed.error) return json(res, 200, { identical: false, error: parsed.error });
      try {
        return json(res, 200, replayRecords(parsed.lines));
      } catch (e) {
        // A record with the right kind but missing fields (an edited log) trips the replay's reading of it.
        return json(res, 200, { identical: false, error: `the log has a malformed record: ${(e as Error).message}` });
      }
    }
    const stop = /^api\/sessions\/([A-Za-z0-9._-]{1,64})\/stop$/.exec(rest);
    if (req.method === "POST" && stop) {
      if (!options.stopSession) return json(res, 403, { error: "this inspector is read-only" });
      return json(res, 200, { stopped: await options.stopSession(stop[1]) });
    }
    return respond(res, 404, "text/plain", "not found\n");
  };
  const handle = (req: IncomingMessage, res: ServerResponse, expectation?: "continue" | "other") => {
    serve(req, res, expectation).catch((e: unknown) => {
      if (res.headersSent) res.destroy();
      else json(res, 500, { error: e instanceof Error ? e.message : String(e) });
    });
  };

  // A request without Host reaches `trusted` (and the token check before it) instead of Node's own 400.
  const server = createServer({ requireHostHeader: false }, (req, res) => handle(req, res));
  server.on("checkContinue", (req, res) => handle(req, res, "continue"));
  server.on("checkExpectation", (req, res) => handle(req, res, "other"));
  server.on("clientError", (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => {
    // What Node's parser refuses (bytes outside HTTP, oversized headers, an unknown method) never reaches `serve`:
    // 403 unless the bytes carry the token, then Node's own status. A timeout stays a timeout.
    if (err.code === "ECONNRESET") return socket.destroy();
    const withToken = err.rawPacket?.includes(`/${token}/`) ?? false;
    refuse(socket, err.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : withToken ? (PARSE_ERRORS[err.code!] ?? 400) : 403);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  server.on("upgrade", (req, socket, head) => {
    // The HTTP server stopped watching this socket: a reset while it is answered must not be an unhandled error.
    socket.on("error", () => socket.destroy());
    if (route(req.url) !== "ws" || !trusted(req)) return refuse(socket, 403);
    wss.handleUpgrade(req, socket, head, (client) => {
      client.on("error", () => {
        // Invalid frames: ws has already answered with the protocol's close code (1002, 1007, 1009) and closes.
      });
      // History first (each actor's creation ahead of its first frame, parents first), then each actor of the live
      // tree: its creation if the history did not name it, and its present snapshot (the history may have lost
      // its last one); then live frames. An `@xstate.actor` frame for a known id thus always means a new actor.
      const created = new Set<string>();
      const origin = (id: string | undefined) => {
        const o = id === undefined || created.has(id) ? undefined : origins.get(id);
        if (!o) return;
        created.add(id!);
        origin(o.parent);
        send(client, o.text);
      };
      for (const h of history) {
        if (h.created) {
          origin(origins.get(h.id)?.parent);
          created.add(h.id);
          send(client, h.text);
        } else {
          origin(h.id);
          send(client, h.text);
        }
      }
      for (const actor of liveActors(options.observer?.root)) {
        const [creation, present] = lateFrames(actor, options.observer?.createdAt(actor));
        if (!created.has(actorName(actor))) send(client, JSON.stringify(creation));
        if (present) send(client, JSON.stringify(present));
      }
      client.on("message", () => {
        // The stream is one-way; messages from the page are ignored.
      });
    });
  });
  server.on("connect", (_req, socket) => {
    // CONNECT names a host, never the token.
    socket.on("error", () => socket.destroy());
    refuse(socket, 403);
  });

  const listening = await new Promise<Result<number>>((resolve) => {
    server.once("error", (e: NodeJS.ErrnoException) =>
      resolve(fail(`the inspector cannot listen on ${bindHost}:${options.port ?? 0}: ${e.code ?? e.message}`)),
    );
    server.listen(options.port ?? 0, bindHost, () => resolve(ok((server.address() as AddressInfo).port)));
  });
  if (!listening.ok) {
    unsubscribe?.();
    return listening;
  }
  port = listening.value;
  server.on("error", () => {
    // After listening, only a failed accept (out of file descriptors) comes here: that client is refused.
  });

  return ok({
    url: `${origin()}/${token}/`,
    host: bindHost,
    port,
    token,
    readOnly,
    clients: () => wss.clients.size,
    close: () =>
      new Promise<void>((resolve) => {
        unsubscribe?.();
        for (const client of wss.clients) client.terminate();
        wss.close();
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  });
}

/** The body, or undefined past `limit`: the rest is then read and dropped, so the client, still sending, gets the
 * 413 rather than a reset connection. */
function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const collect = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      req.off("data", collect);
      chunks.length = 0;
      req.resume();
      resolve(undefined);
    };
    req.on("data", collect);
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
