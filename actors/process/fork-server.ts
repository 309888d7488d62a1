// Fork servers for fresh Python runners (docs/protocol.md, "Fork server"). An interpreter start costs tens of
// milliseconds and a synchronous spawn from Pi's large process blocks its event loop for several; a fork of a
// started runner costs about one. So per host and per runner command line (interpreter, flags, limits, working
// directory, environment: what a spare's key holds) one `runner.py --mode zygote` process is kept, and a fresh
// runner is a fork of it. The child leads its own session, is contained like a spawned runner (registry.ts), and
// connects its fds 1, 2 and 3 to this process's socket, naming the token of its fork; its exit status comes from
// the fork server, which is its parent. Whatever cannot be forked (no server yet, a server that died) is spawned.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { constants } from "node:os";
import { encodeFrame, FrameDecoder, type Frame } from "./framing.ts";
import { registerGroup, stopGroup, track } from "./registry.ts";
import type { RunnerExit, RunnerSpec } from "./operations.ts";

/** A fork server without a live child (its spares retired, its runs ended) exits after this long. */
const LINGER_MS = 1000;
/** A command line whose fork server failed to start is spawned without one for this long. */
const FAILED_MS = 60_000;
/** A forked child that has not connected its three channels by then is killed and the runner spawned instead. */
const CONNECT_MS = 5000;
/** After its fork server died, a child's end is noticed by polling its pid. */
const LOST_POLL_MS = 20;

export interface ForkedChild {
  pid: number;
  stdout: Socket;
  stderr: Socket;
  control: Socket;
  /** Calls `fn` once with the child's exit (at once if it already exited). */
  onceExit(fn: (exit: RunnerExit) => void): void;
}

type Channel = "stdout" | "stderr" | "control";

interface Child {
  exit?: RunnerExit;
  listener?: (exit: RunnerExit) => void;
}

interface Zygote {
  key: string;
  pid: number;
  alive: boolean;
  ready: Promise<boolean>;
  isReady: boolean;
  control: NodeJS.WritableStream;
  forks: Map<string, (child: { pid: number; record: Child } | undefined) => void>;
  children: Map<number, Child>;
  idle?: NodeJS.Timeout;
  killMs: number;
}

const zygotes = new Map<string, Zygote>();
const failed = new Map<string, number>();
const signalNames = new Map(Object.entries(constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));

/** A fresh runner forked from this spec's fork server, or undefined: the caller spawns the runner itself. With
 * `fork: "start"` (a spare's runner, started ahead of any run) a missing server is started and waited for; with
 * `"use"` (a run that found no spare ready) only a ready server is used. */
export async function forkRunner(spec: RunnerSpec): Promise<ForkedChild | undefined> {
  if (!spec.host || !spec.fork) return undefined;
  const key = JSON.stringify([spec.host, spec.executable, spec.args, spec.cwd, spec.env]);
  let zygote = zygotes.get(key);
  if (!zygote) {
    if (spec.fork !== "start" || (failed.get(key) ?? -Infinity) > Date.now() - FAILED_MS) return undefined;
    zygote = startZygote(key, spec);
  } else if (spec.fork === "use" && !zygote.isReady) return undefined;
  if (!(await zygote.ready)) {
    failed.set(key, Date.now());
    return undefined;
  }
  if (!zygote.alive) return undefined;
  const server = await socketServer();
  if (!server) return undefined;
  return forkFrom(zygote, server);
}

function startZygote(key: string, spec: RunnerSpec): Zygote {
  const args = spec.args.map((a, i) => (a === "fresh" && spec.args[i - 1] === "--mode" ? "zygote" : a));
  const child = spawn(spec.executable, args, {
    cwd: spec.cwd,
    env: spec.env,
    stdio: ["ignore", "ignore", "ignore", "pipe"],
    detached: true,
  });
  const control = child.stdio[3] as unknown as NodeJS.ReadWriteStream;
  let readyNow: (ok: boolean) => void = () => {};
  const zygote: Zygote = {
    key,
    pid: child.pid ?? 0,
    alive: child.pid !== undefined,
    ready: new Promise((resolve) => (readyNow = resolve)),
    isReady: false,
    control,
    forks: new Map(),
    children: new Map(),
    killMs: spec.killMs,
  };
  zygotes.set(key, zygote);
  let over = false;
  const gone = () => {
    if (over) return;
    over = true;
    zygote.alive = false;
    if (zygotes.get(key) === zygote) zygotes.delete(key);
    clearTimeout(zygote.idle);
    readyNow(false);
    for (const resolve of zygote.forks.values()) resolve(undefined);
    zygote.forks.clear();
    for (const [pid, record] of zygote.children) if (!record.exit) watchLost(pid, record);
    void stopGroup(zygote.pid, zygote.killMs);
  };
  child.once("error", gone);
  child.once("exit", gone);
  control.on("error", () => {});
  if (!child.pid) return zygote;
  void track(child.pid).then(() => registerGroup(zygote.pid, { host: spec.host!, owner: "fork-server" }));
  const decoder = new FrameDecoder(
    (frame) => onFrame(zygote, frame, readyNow),
    () => child.kill("SIGKILL"),
  );
  control.on("data", (c: Buffer) => decoder.push(c));
  retireLater(zygote);
  return zygote;
}

function onFrame(zygote: Zygote, frame: Frame, ready: (ok: boolean) => void): void {
  switch (frame.type) {
    case "ready":
      zygote.isReady = true;
      return ready(true);
    case "forked": {
      const resolve = zygote.forks.get(String(frame.token));
      const pid = Number(frame.pid);
      // Recorded before its exit can be reported (the next frame may be that).
      const record: Child = {};
      zygote.children.set(pid, record);
      zygote.forks.delete(String(frame.token));
      return resolve?.({ pid, record });
    }
    case "exited": {
      const record = zygote.children.get(Number(frame.pid));
      if (!record) return;
      zygote.children.delete(Number(frame.pid));
      if (zygote.children.size === 0) retireLater(zygote);
      const signal = typeof frame.signal === "number" ? (signalNames.get(frame.signal) ?? null) : null;
      return ended(record, { code: typeof frame.code === "number" ? frame.code : null, signal });
    }
    default: // `fatal` or anything unknown: this server cannot be trusted to fork again
      zygote.alive = false;
      void stopGroup(zygote.pid, zygote.killMs);
  }
}

function ended(record: Child, exit: RunnerExit): void {
  if (record.exit) return;
  record.exit = exit;
  record.listener?.(exit);
}

/** A child whose fork server died is no longer anyone's child to wait for: its end is when its pid is gone. */
function watchLost(pid: number, record: Child): void {
  const poll = setInterval(() => {
    if (!gone(pid)) return;
    clearInterval(poll);
    ended(record, {
      code: null,
      signal: null,
      lost: { message: "the fork server that started this runner exited, so its exit status is unknown" },
    });
  }, LOST_POLL_MS);
}

/** Its children's exit statuses come through it, so it stays while it has any; then it lingers briefly. */
/** Exited: no such process, or a zombie that its new parent has not reaped yet. */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat[stat.lastIndexOf(")") + 2] === "Z";
  } catch {
    return true;
  }
}

function retireLater(zygote: Zygote): void {
  clearTimeout(zygote.idle);
  zygote.idle = setTimeout(() => {
    if (zygote.children.size > 0 || zygote.forks.size > 0) return;
    if (zygotes.get(zygote.key) === zygote) zygotes.delete(zygote.key);
    zygote.alive = false;
    void stopGroup(zygote.pid, zygote.killMs);
  }, LINGER_MS);
  zygote.idle.unref();
}

async function forkFrom(zygote: Zygote, server: SocketServer): Promise<ForkedChild | undefined> {
  clearTimeout(zygote.idle);
  const token = randomBytes(16).toString("hex");
  const connected = server.expect(token);
  const forked = new Promise<{ pid: number; record: Child } | undefined>((resolve) => zygote.forks.set(token, resolve));
  zygote.control.write(encodeFrame({ type: "fork", token, socket: server.path }));
  const child = await forked;
  if (!child) {
    connected.cancel();
    retireLater(zygote);
    return undefined;
  }
  const { pid, record } = child;
  // Contained (its own cgroup where they apply) before the host sends a frame, so before any user code runs.
  const tracked = track(pid);
  let exitedEarly: () => void = () => {};
  const early = new Promise<undefined>((resolve) => {
    exitedEarly = () => resolve(undefined);
    record.listener = exitedEarly;
  });
  if (record.exit) exitedEarly();
  const timer = setTimeout(exitedEarly, CONNECT_MS);
  const channels = await Promise.race([connected.promise, early]);
  clearTimeout(timer);
  await tracked;
  if (!channels) {
    connected.cancel();
    if (!record.exit) void stopGroup(pid, zygote.killMs);
    retireLater(zygote);
    return undefined;
  }
  record.listener = undefined;
  return {
    pid,
    ...channels,
    onceExit(fn) {
      if (record.exit) {
        const exit = record.exit;
        setImmediate(() => fn(exit));
      } else record.listener = fn;
    },
  };
}

interface SocketServer {
  path: string;
  expect(token: string): { promise: Promise<Record<Channel, Socket>>; cancel(): void };
}

// Pi loads the extension's modules afresh for every Pi session: the socket is the process's, under a global symbol.
const SERVER = Symbol.for("pi-code-supervisor.fork-socket");
const shared = globalThis as { [SERVER]?: Promise<SocketServer | undefined> };

/** The process's one socket that forked children connect to. Linux's abstract namespace: nothing on disk to
 * remove, whatever way the process ends. Anyone on the machine may connect; a connection that does not name the
 * 128-bit random token of a fork in flight is closed. */
function socketServer(): Promise<SocketServer | undefined> {
  return (shared[SERVER] ??= new Promise((resolve) => {
    if (process.platform !== "linux") return resolve(undefined);
    const path = `\0pi-code-supervisor-${process.pid}-${randomBytes(8).toString("hex")}`;
    const waiting = new Map<
      string,
      { sockets: Partial<Record<Channel, Socket>>; done: (s: Record<Channel, Socket>) => void }
    >();
    const server: Server = createServer((socket) => greet(socket, waiting));
    server.on("error", () => resolve(undefined));
    server.listen(path, () => {
      server.unref();
      resolve({
        path,
        expect(token) {
          let done: (s: Record<Channel, Socket>) => void = () => {};
          const promise = new Promise<Record<Channel, Socket>>((r) => (done = r));
          waiting.set(token, { sockets: {}, done });
          return {
            promise,
            cancel() {
              const entry = waiting.get(token);
              waiting.delete(token);
              for (const s of Object.values(entry?.sockets ?? {})) s.destroy();
            },
          };
        },
      });
    });
  }));
}

/** A new connection names its token and channel in its first line; what follows is the channel's own data. */
function greet(
  socket: Socket,
  waiting: Map<string, { sockets: Partial<Record<Channel, Socket>>; done: (s: Record<Channel, Socket>) => void }>,
): void {
  let head = Buffer.alloc(0);
  socket.on("error", () => {});
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const nl = head.indexOf(10);
    if (nl < 0) {
      if (head.length > 80) socket.destroy();
      return;
    }
    socket.removeListener("data", onData);
    socket.pause();
    const rest = head.subarray(nl + 1);
    if (rest.length) socket.unshift(rest);
    const [token, channel] = head.subarray(0, nl).toString("latin1").split(" ");
    const entry = waiting.get(token ?? "");
    if (!entry || (channel !== "stdout" && channel !== "stderr" && channel !== "control") || entry.sockets[channel])
      return void socket.destroy();
    entry.sockets[channel] = socket;
    const { stdout, stderr, control } = entry.sockets;
    if (stdout && stderr && control) {
      waiting.delete(token!);
      entry.done({ stdout, stderr, control });
    }
  };
  socket.on("data", onData);
}
