// Online mode: the inspector's frames pushed into @statelyai/inspect's own inspector server, whose page embeds the
// Stately Inspector from stately.ai (so it needs the internet). `@statelyai/inspect` is an optional dependency,
// used only by that server, which runs in its own process (inspector/stately-relay.js says why). The frames are
// ours (explicit actor ids, snapshots read synchronously), not those of @statelyai/inspect's own observer, which
// serializes late and names actors by XState's process-wide counter.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
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

/** Connects, retrying until the deadline (a server given by URL may be starting) or until `gone` says stop. */
function connect(url: string, deadline: number, gone: () => string | undefined = () => undefined) {
  return new Promise<Result<WebSocket>>((resolve) => {
    const ws = new WebSocket(url);
    const retry = (e: Error) => {
      const reason = gone();
      if (reason) return resolve(fail(reason));
      if (Date.now() > deadline) return resolve(fail(`cannot connect to ${url}: ${e.message}`));
      setTimeout(() => connect(url, deadline, gone).then(resolve), 100);
    };
    ws.once("error", retry);
    ws.once("open", () => {
      ws.off("error", retry);
      resolve(ok(ws));
    });
  });
}

/** Starts inspector/stately-relay.js on `port`. `listening` settles once it accepts connections (or with why it
 * never will); `gone` says why it is no longer running, if it is not. */
function startRelay(
  port: number,
): Result<{ stop: () => Promise<void>; gone: () => string | undefined; listening: Promise<Result<void>> }> {
  try {
    createRequire(import.meta.url).resolve("@statelyai/inspect/server");
  } catch {
    return fail(
      "the Stately mode needs the optional package @statelyai/inspect (npm install @statelyai/inspect@0.7.2)",
    );
  }
  const child = spawn(process.execPath, [fileURLToPath(new URL("./stately-relay.js", import.meta.url)), String(port)], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  let gone: string | undefined;
  let said: ((r: Result<void>) => void) | undefined;
  const listening = new Promise<Result<void>>((resolve) => (said = resolve));
  let stdout = "";
  child.stdout!.on("data", (d) => {
    stdout += d;
    if (stdout.includes("listening\n")) said?.(ok(undefined));
  });
  child.stderr!.on("data", (d) => (stderr = (stderr + d).slice(-2000)));
  child.stdin!.on("error", () => {
    // The relay already exited; `gone` says why.
  });
  const ended = (why: string) => {
    gone ??= why;
    said?.(fail(gone));
  };
  child.on("error", (e) => ended(`the Stately relay could not start: ${e.message}`));
  child.on("exit", (code) =>
    ended(
      code === 3
        ? `port ${port} is in use; pass another port or a ws:// URL`
        : `the Stately relay exited (${code}): ${stderr.trim()}`,
    ),
  );
  const stop = () =>
    new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      const kill = setTimeout(() => child.kill("SIGKILL"), 2000);
      child.once("exit", () => {
        clearTimeout(kill);
        done();
      });
      child.stdin!.end();
    });
  return ok({ stop, gone: () => gone, listening });
}

export async function startStatelyLink(options: StatelyOptions): Promise<Result<StatelyLink>> {
  let stopServer: (() => Promise<void>) | undefined;
  let gone: (() => string | undefined) | undefined;
  let wsUrl = options.url;
  let pageUrl: string | undefined;
  if (!wsUrl) {
    const port = options.port ?? 8080;
    // Checked first so that the link cannot connect to another server already there before the relay fails.
    if (!(await portFree(port))) return fail(`port ${port} is in use; pass another port or a ws:// URL`);
    const relay = startRelay(port);
    if (!relay.ok) return relay;
    ({ stop: stopServer, gone } = relay.value);
    // A hang guard only: the relay says when it listens, or exits with why it cannot.
    let guard: ReturnType<typeof setTimeout> | undefined;
    const listening = await Promise.race([
      relay.value.listening,
      new Promise<Result<void>>(
        (resolve) =>
          (guard = setTimeout(() => resolve(fail("the Stately relay did not start listening within 60 s")), 60_000)),
      ),
    ]);
    clearTimeout(guard);
    if (!listening.ok) {
      await stopServer();
      return listening;
    }
    wsUrl = `ws://127.0.0.1:${port}`;
    pageUrl = `http://localhost:${port}`;
  }
  const connected = await connect(wsUrl, Date.now() + 3000, gone);
  if (!connected.ok) {
    await stopServer?.();
    return connected;
  }
  const ws = connected.value;
  const send = (frame: object) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
  };
  // The relay replays its last 200 frames to a page that connects later; the tree comes first.
  for (const frame of treeFrames(options.observer.root, (actor) => options.observer.createdAt(actor))) send(frame);
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
      await stopServer?.();
    },
  });
}
