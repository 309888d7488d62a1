// Online mode: the inspector's frames pushed into @statelyai/inspect's own inspector server, whose page embeds the
// Stately Inspector from stately.ai (so it needs the internet). `@statelyai/inspect` is an optional dependency,
// loaded only here. The frames are ours (explicit actor ids, snapshots read synchronously), not those of
// @statelyai/inspect's own observer, which serializes late and names actors by XState's process-wide counter.
import { createServer } from "node:net";
import WebSocket from "ws";
import type { SystemObserver } from "../record/observe.ts";
import { fail, ok, type Result } from "../lib/result.ts";
import { frameOf, treeFrames } from "./frames.ts";

export interface StatelyOptions {
  observer: SystemObserver;
  /** A running inspector server to feed (`ws://…`); without it one is started on `port`. */
  url?: string;
  /** Port of the server started here (default 8080, @statelyai/inspect's default). */
  port?: number;
}

export interface StatelyLink {
  /** The page to open (it embeds https://stately.ai/inspect), when the server was started here. */
  pageUrl?: string;
  wsUrl: string;
  /** Said to the user: @statelyai/inspect's server listens on every interface. */
  warning?: string;
  close(): Promise<void>;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, () => probe.close(() => resolve(true)));
  });
}

function connect(url: string, deadline: number): Promise<Result<WebSocket>> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.once("open", () => resolve(ok(ws)));
    ws.once("error", (e: Error) => {
      if (Date.now() > deadline) return resolve(fail(`cannot connect to ${url}: ${e.message}`));
      setTimeout(() => connect(url, deadline).then(resolve), 100);
    });
  });
}

export async function startStatelyLink(options: StatelyOptions): Promise<Result<StatelyLink>> {
  let stopServer: (() => void) | undefined;
  let wsUrl = options.url;
  let pageUrl: string | undefined;
  if (!wsUrl) {
    const port = options.port ?? 8080;
    let createInspectorServer: (o: { port: number; autoOpen: boolean }) => { stop(): void };
    try {
      ({ createInspectorServer } = await import("@statelyai/inspect/server"));
    } catch {
      return fail(
        "the Stately mode needs the optional package @statelyai/inspect (npm install @statelyai/inspect@0.7.2)",
      );
    }
    // Its server has no error handler: a busy port would crash Pi, so the port is checked first.
    if (!(await portFree(port))) return fail(`port ${port} is in use; pass another port or a ws:// URL`);
    stopServer = createInspectorServer({ port, autoOpen: false }).stop;
    wsUrl = `ws://127.0.0.1:${port}`;
    pageUrl = `http://localhost:${port}`;
  }
  const connected = await connect(wsUrl, Date.now() + 3000);
  if (!connected.ok) {
    stopServer?.();
    return connected;
  }
  const ws = connected.value;
  const send = (frame: object) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
  };
  // The relay replays its last 200 frames to a page that connects later; the tree comes first.
  for (const frame of treeFrames(options.observer.root)) send(frame);
  const unsubscribe = options.observer.on({
    inspection: (ev) => {
      const frame = frameOf(ev);
      if (frame) send(frame);
    },
  });
  ws.on("close", unsubscribe);
  ws.on("error", () => {
    // A relay that went away ends the link; the supervisor is unaffected.
  });
  return ok({
    wsUrl,
    ...(pageUrl ? { pageUrl } : {}),
    ...(stopServer
      ? { warning: "@statelyai/inspect's server listens on all network interfaces; stop it when you are done" }
      : {}),
    close: async () => {
      unsubscribe();
      ws.close();
      stopServer?.();
    },
  });
}
