// Fork servers for fresh Python runners (docs/protocol.md, "Fork server"). An interpreter start costs tens of
// milliseconds and a synchronous spawn from Pi's large process blocks its event loop for several; a fork of a
// started runner costs about one. So per host and per runner command line (interpreter, flags, limits, working
// directory, environment: what a spare's key holds) a `runner.py --mode zygote` process is kept, and a fresh runner
// is a fork of it. The server is spawned with SLOTS sets of three socket pairs (the same kind of descriptors a
// spawned runner gets for fds 1, 2 and 3): each fork takes one set, so nothing listens and no other process can
// reach a runner's channels. The child leads its own session and is contained like a spawned runner (actors/registry/registry.ts);
// its exit status comes from the fork server, its parent. A server running out of slots is followed by a new one;
// whatever cannot be forked (no server ready, a server that died) is spawned.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import type { Socket } from "node:net";
import { constants } from "node:os";
import { encodeFrame, FrameDecoder, type Frame } from "./framing.ts";
import { registerGroup, stopGroup, track } from "../registry/registry.ts";
import { SHUTDOWN } from "../registry/shutdown.ts";
import type { RunnerExit, RunnerSpec } from "./operations.ts";

/** Runners one fork server can start (3 descriptors each, on both sides). */
export const SLOTS = 32;
/** With this many slots left, the next server for the command line starts (off the path of any run): half, so it
 * is ready before the first is spent even when fresh runs come every few ms and an interpreter start takes 50. */
const FOLLOW_AT = SLOTS / 2;
/** A fork server without a live child (its spares retired, its runs ended) exits after this long. */
const LINGER_MS = 1000;
/** A command line whose fork server failed to start is spawned without one for this long. */
const FAILED_MS = 60_000;
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
  control: Socket;
  /** Whether the server keeps Pi's event loop alive: only while an answer is awaited (its `ready`, a `forked`). */
  hold(on: boolean): void;
  /** Per slot: its three sockets (this side), until a fork takes them. */
  slots: (Socket[] | undefined)[];
  next: number;
  forks: Map<number, (child: { pid: number; record: Child } | undefined) => void>;
  children: Map<number, Child>;
  /** The server that takes over when this one is spent; it waits (and does not retire) until then. */
  successor?: Zygote;
  waiting: boolean;
  idle?: NodeJS.Timeout;
  killMs: number;
}

/** The server each command line forks from now (a spent one leaves this map, and lives on for its children). */
const zygotes = new Map<string, Zygote>();
const failed = new Map<string, number>();
const signalNames = new Map(Object.entries(constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));

/** A fresh runner forked from this spec's fork server, or undefined: the caller spawns the runner itself. With
 * `fork: "start"` (a spare's runner, started ahead of any run) a missing server is started and waited for; with
 * `"use"` (a run that found no spare ready) only a ready server is used. */
export async function forkRunner(spec: RunnerSpec): Promise<ForkedChild | undefined> {
  if (!spec.host || !spec.fork || process.platform !== "linux") return undefined;
  const key = JSON.stringify([spec.host, spec.executable, spec.args, spec.cwd, spec.env]);
  let zygote = zygotes.get(key);
  if (!zygote) {
    if (spec.fork !== "start" || (failed.get(key) ?? -Infinity) > Date.now() - FAILED_MS) return undefined;
    zygote = startZygote(key, spec, false);
    zygotes.set(key, zygote);
  } else if (spec.fork === "use" && !zygote.isReady) return undefined;
  if (!(await zygote.ready)) {
    failed.set(key, Date.now());
    return undefined;
  }
  if (!zygote.alive || zygote.next >= SLOTS) return undefined;
  const slot = zygote.next++;
  if (SLOTS - zygote.next === FOLLOW_AT) zygote.successor = startZygote(key, spec, true);
  if (zygote.next === SLOTS && zygotes.get(key) === zygote) {
    const next = zygote.successor;
    if (next?.alive) {
      zygotes.set(key, next);
      next.waiting = false;
      retireLater(next);
    } else zygotes.delete(key);
  }
  return forkFrom(zygote, slot);
}

function startZygote(key: string, spec: RunnerSpec, waiting: boolean): Zygote {
  const [runner, ...rest] = spec.args;
  const limits = rest.indexOf("--limits");
  const args = [runner!, "--mode", "zygote", "--slots", String(SLOTS), ...(limits >= 0 ? rest.slice(limits) : [])];
  const child = spawn(spec.executable, args, {
    cwd: spec.cwd,
    env: spec.env,
    stdio: ["ignore", "ignore", "ignore", "pipe", ...Array<"pipe">(3 * SLOTS).fill("pipe")],
    detached: true,
  });
  const stdio = child.stdio as unknown as (Socket | null)[];
  const control = stdio[3] as Socket;
  let readyNow: (ok: boolean) => void = () => {};
  const zygote: Zygote = {
    key,
    pid: child.pid ?? 0,
    alive: child.pid !== undefined,
    ready: new Promise((resolve) => (readyNow = resolve)),
    isReady: false,
    control,
    hold(on) {
      for (const h of [child, control])
        if (on) h.ref();
        else h.unref();
    },
    slots: Array.from({ length: SLOTS }, (_, i) => stdio.slice(4 + 3 * i, 7 + 3 * i) as Socket[]),
    next: 0,
    forks: new Map(),
    children: new Map(),
    waiting,
    killMs: spec.killMs,
  };
  // Slots waiting for a fork neither keep Pi's event loop alive nor break on errors.
  for (const sockets of zygote.slots)
    for (const s of sockets ?? []) {
      s.on("error", () => {});
      s.unref();
    }
  control.on("error", () => {});
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
    const next = zygote.successor;
    if (next?.waiting && next.alive && !zygotes.has(key)) {
      zygotes.set(key, next);
      next.waiting = false;
      retireLater(next);
    }
    for (const sockets of zygote.slots) for (const s of sockets ?? []) s.destroy();
    control.destroy();
    void stopGroup(zygote.pid, SHUTDOWN.forkServer(zygote.killMs));
  };
  child.once("error", gone);
  child.once("exit", gone);
  if (!child.pid) return zygote;
  // Owned from the start, so a shutdown at any moment stops it with the host's other processes.
  void track(child.pid);
  registerGroup(child.pid, { host: spec.host!, owner: "fork-server" });
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
      holdWhileNeeded(zygote);
      return ready(true);
    case "forked": {
      const resolve = zygote.forks.get(Number(frame.slot));
      const pid = Number(frame.pid);
      // Recorded before its exit can be reported (the next frame may be that).
      const record: Child = {};
      zygote.children.set(pid, record);
      zygote.forks.delete(Number(frame.slot));
      return resolve?.({ pid, record });
    }
    case "exited": {
      const record = zygote.children.get(Number(frame.pid));
      if (!record) return;
      zygote.children.delete(Number(frame.pid));
      holdWhileNeeded(zygote);
      if (zygote.children.size === 0) retireLater(zygote);
      const signal = typeof frame.signal === "number" ? (signalNames.get(frame.signal) ?? null) : null;
      return ended(record, { code: typeof frame.code === "number" ? frame.code : null, signal });
    }
    default: // `fatal` or anything unknown: this server cannot be trusted to fork again
      stop(zygote);
  }
}

/** A server keeps Pi's event loop alive only while something awaits it: its `ready`, a fork, a child's exit. */
function holdWhileNeeded(zygote: Zygote): void {
  zygote.hold(!zygote.isReady || zygote.forks.size > 0 || zygote.children.size > 0);
}

function ended(record: Child, exit: RunnerExit): void {
  if (record.exit) return;
  record.exit = exit;
  record.listener?.(exit);
}

/** A child whose fork server died is no longer anyone's child to wait for: its end is when its pid is gone. */
function watchLost(pid: number, record: Child): void {
  const poll = setInterval(() => {
    if (!exited(pid)) return;
    clearInterval(poll);
    ended(record, {
      code: null,
      signal: null,
      lost: { message: "the fork server that started this runner exited, so its exit status is unknown" },
    });
  }, LOST_POLL_MS);
}

/** No such process, or a zombie that its new parent has not reaped yet (a server that died left its children to
 * init: their end is noticed by polling). */
export function exited(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat[stat.lastIndexOf(")") + 2] === "Z";
  } catch {
    return true;
  }
}

/** Its children's exit statuses come through it, so it stays while it has any; then it lingers briefly (a spent
 * one goes at once). */
function retireLater(zygote: Zygote): void {
  clearTimeout(zygote.idle);
  zygote.idle = setTimeout(
    () => {
      if (zygote.children.size > 0 || zygote.forks.size > 0 || zygote.waiting) return;
      stop(zygote);
      // A successor not yet in use goes with it (one in use is the command line's server now).
      if (zygote.successor?.waiting) stop(zygote.successor);
    },
    zygote.next >= SLOTS ? 0 : LINGER_MS,
  );
  zygote.idle.unref();
}

function stop(zygote: Zygote): void {
  zygote.alive = false;
  if (zygotes.get(zygote.key) === zygote) zygotes.delete(zygote.key);
  void stopGroup(zygote.pid, SHUTDOWN.forkServer(zygote.killMs));
}

async function forkFrom(zygote: Zygote, slot: number): Promise<ForkedChild | undefined> {
  clearTimeout(zygote.idle);
  const sockets = zygote.slots[slot]!;
  zygote.slots[slot] = undefined;
  const forked = new Promise<{ pid: number; record: Child } | undefined>((resolve) => zygote.forks.set(slot, resolve));
  zygote.hold(true);
  zygote.control.write(encodeFrame({ type: "fork", slot }));
  const child = await forked;
  if (!child) {
    for (const s of sockets) s.destroy();
    holdWhileNeeded(zygote);
    retireLater(zygote);
    return undefined;
  }
  const { pid, record } = child;
  // Contained (its own cgroup where they apply) before the host sends it a frame, so before any user code runs.
  await track(pid);
  for (const s of sockets) s.ref();
  const [stdout, stderr, control] = sockets as [Socket, Socket, Socket];
  return {
    pid,
    stdout,
    stderr,
    control,
    onceExit(fn) {
      if (record.exit) {
        const exit = record.exit;
        setImmediate(() => fn(exit));
      } else record.listener = fn;
    },
  };
}
