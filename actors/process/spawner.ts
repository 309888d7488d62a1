// The spawn server for local pipe-mode children (shells, probes, installers with no wrapper: children.ts), docs/
// protocol.md "Spawn server". Node's `child_process.spawn` forks Pi's large process synchronously (several
// milliseconds of blocked event loop per exec_command), and where cgroups apply the child then execs a joining
// shell (actors/registry/containment.ts `JOIN`) before the program. A small long-lived `runtime-py/pcs_spawner.py` starts the child
// instead with posix_spawn (a vfork) from inside the child's prepared cgroup, so the child is born there and execs
// the program directly. Like the runners' fork server (fork-server.ts) it is spawned with SLOTS sets of pre-made
// socket pairs (each child's stdin, stdout, stderr), so nothing listens and no other process can reach a child's
// descriptors; its children's exit statuses come from it (their parent). One server per process (Pi loads a copy of
// these modules per Pi session), started off the path of the call that first needs it (that call spawns as before);
// with half its slots left the next one starts. Whatever finds no ready server is spawned by Node as before, and
// `PI_CODE_EXECUTION_SPAWNER=off` turns the server off altogether.
import { spawn, type ChildProcess } from "node:child_process";
import { rmdirSync, writeFileSync } from "node:fs";
import type { Socket } from "node:net";
import { constants } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { fileURLToPath } from "node:url";
import { encodeFrame, FrameDecoder, type Frame } from "./framing.ts";
import { findPython } from "./spawner-python.ts";
import type { PreparedCgroup } from "../registry/containment.ts";
import { adopt } from "../registry/registry.ts";
import { exited } from "./fork-server.ts";

/** `off` spawns every child from Node (the escape hatch, and the baseline of bench/spawn.ts). */
export const SPAWNER_ENV = "PI_CODE_EXECUTION_SPAWNER";
/** Children one server can start (3 descriptors each, on both sides). */
export const SPAWNER_SLOTS = 32;
/** With this many slots left the next server starts, so it is ready before the first is spent. */
const FOLLOW_AT = SPAWNER_SLOTS / 2;
/** An idle server (no child, nothing starting) exits after this long: longer than the gaps between a model's
 * commands, so a session's commands keep finding it ready. */
const LINGER_MS = 5 * 60_000;
/** A server that did not get ready within this long is given up. */
const READY_MS = 10_000;
/** After a server failed to start, children are spawned from Node for this long. */
const FAILED_MS = 60_000;
/** After its server died, a child's end is noticed by polling its pid. */
const LOST_POLL_MS = 20;
const SCRIPT = fileURLToPath(new URL("../../runtime-py/pcs_spawner.py", import.meta.url));

export interface ServedExit {
  code: number | null;
  signal: string | null;
}

/** A child the server started: its pid (its session and process group id, tracked in the registry from the
 * server's `started`), this side of its slot, and its exit. */
export interface ServedChild {
  pid: number;
  stdin: Socket;
  stdout: Socket;
  stderr: Socket;
  /** Calls `fn` once with the child's exit (at once if it already exited). */
  onceExit(fn: (exit: ServedExit) => void): void;
}

/** A start that failed, nothing of the program having run: where (`chdir`, `cgroup`, `exec` in the server;
 * `server` when the server died meanwhile), the errno's name, its text. */
export interface ServedFailure {
  stage: string;
  code: string;
  message: string;
}

export type Served = { ok: true; child: ServedChild } | { ok: false; failure: ServedFailure };

export interface ServedSpec {
  /** The program's path, already resolved (children.ts `findProgram`). */
  path: string;
  /** argv[0] and the arguments. */
  argv: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The cgroup the child is born in; absent: session tracking. */
  cgroup?: PreparedCgroup;
}

interface Child {
  exit?: ServedExit;
  listeners: ((exit: ServedExit) => void)[];
}

interface Pending {
  sockets: Socket[];
  cgroup?: PreparedCgroup;
  resolve(outcome: Served): void;
}

interface Server {
  pid: number;
  proc: ChildProcess;
  control: Socket;
  ready: boolean;
  alive: boolean;
  /** Per slot: its three sockets (this side), until a spawn takes them. */
  slots: (Socket[] | undefined)[];
  next: number;
  pending: Map<number, Pending>;
  children: Map<number, Child>;
  idle?: NodeJS.Timeout;
}

interface State {
  servers: Server[];
  starting: boolean;
  failedAt: number;
  /** The interpreter a server reported running on (PATH's python3 may be a slow launcher, such as pyenv's shim). */
  python?: string;
}

const state: State = ((globalThis as Record<symbol, State | undefined>)[Symbol.for("pi-code-supervisor.spawner")] ??= {
  servers: [],
  starting: false,
  failedAt: -Infinity,
});
const signalNames = new Map(Object.entries(constants.signals).map(([name, n]) => [n, name]));

/** Whether the server may be used in this process now. */
export function spawnerEnabled(): boolean {
  return process.platform === "linux" && process.env[SPAWNER_ENV] !== "off";
}

/** Starts `spec` through a ready spawn server; undefined when none is ready (the caller spawns it itself, with the
 * same cgroup). A start in flight when its server dies fails (it may have begun, so it is not started again). */
export function spawnServed(spec: ServedSpec): Promise<Served> | undefined {
  if (!spawnerEnabled()) return undefined;
  const server = state.servers.find((s) => s.ready && s.alive && s.next < SPAWNER_SLOTS);
  const slot = server ? server.next++ : -1;
  followIfNeeded();
  if (!server) return undefined;
  clearTimeout(server.idle);
  const sockets = server.slots[slot]!;
  server.slots[slot] = undefined;
  // Well-formed text, as Node itself encodes a lone surrogate (U+FFFD) when it spawns.
  const text = (s: string) => (s as unknown as { toWellFormed(): string }).toWellFormed();
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(spec.env)) if (v !== undefined) env[text(k)] = text(v);
  return new Promise((resolve) => {
    server.pending.set(slot, { sockets, cgroup: spec.cgroup, resolve });
    hold(server);
    server.control.write(
      encodeFrame({
        type: "spawn",
        slot,
        file: text(spec.path),
        argv: spec.argv.map(text),
        cwd: text(spec.cwd),
        env,
        cgroup: spec.cgroup?.dir ?? null,
        // Where the server steps back to after the spawn: its own cgroup, Pi's, the parent of Pi's base directory.
        home: spec.cgroup ? dirname(dirname(spec.cgroup.dir)) : null,
      }),
    );
  });
}

/** A new server once the free slots of the live ones run low (none at the first call), off the caller's path. */
function followIfNeeded(): void {
  if (state.starting || Date.now() - state.failedAt < FAILED_MS) return;
  const free = state.servers.filter((s) => s.alive).reduce((n, s) => n + SPAWNER_SLOTS - s.next, 0);
  if (free > FOLLOW_AT) return;
  state.starting = true;
  setTimeout(startServer, 0).unref();
}

function startServer(): void {
  // The interpreter that runs it (a fresh process: no site-packages, no PYTHON* variables).
  const python = state.python ?? findPython();
  if (!python || !spawnerEnabled()) {
    state.starting = false;
    if (!python) state.failedAt = Date.now();
    return;
  }
  let proc: ChildProcess;
  try {
    proc = spawn(python, ["-I", "-S", SCRIPT, "--slots", String(SPAWNER_SLOTS)], {
      cwd: "/",
      env: process.env,
      stdio: ["ignore", "ignore", "ignore", "pipe", ...Array<"pipe">(3 * SPAWNER_SLOTS).fill("pipe")],
      detached: true,
    });
  } catch {
    state.starting = false;
    state.failedAt = Date.now();
    return;
  }
  const stdio = proc.stdio as unknown as (Socket | null)[];
  const control = stdio[3] as Socket;
  const server: Server = {
    pid: proc.pid ?? 0,
    proc,
    control,
    ready: false,
    alive: proc.pid !== undefined,
    slots: Array.from({ length: SPAWNER_SLOTS }, (_, i) => stdio.slice(4 + 3 * i, 7 + 3 * i) as Socket[]),
    next: 0,
    pending: new Map(),
    children: new Map(),
  };
  // Slots waiting for a spawn neither keep Pi's event loop alive nor break on errors.
  for (const sockets of server.slots)
    for (const s of sockets ?? []) {
      s.on("error", () => {});
      s.unref();
    }
  control.on("error", () => {});
  proc.unref();
  control.unref();
  const notReady = setTimeout(() => {
    if (!server.ready) proc.kill("SIGKILL");
  }, READY_MS);
  notReady.unref();
  let over = false;
  const gone = () => {
    if (over) return;
    over = true;
    clearTimeout(notReady);
    clearTimeout(server.idle);
    if (!server.ready) {
      state.starting = false;
      state.failedAt = Date.now();
    }
    lost(server);
  };
  // Gone once its control channel closed (every frame it sent has been read, `started` included), or it never ran.
  control.once("close", gone);
  proc.once("error", gone);
  // A channel held open past the exit (by a child between its fork and its exec) is not waited for long.
  proc.once("exit", () => setTimeout(gone, 1000).unref());
  if (!proc.pid) return;
  state.servers.push(server);
  const decoder = new FrameDecoder(
    (frame) => onFrame(server, frame),
    () => proc.kill("SIGKILL"),
  );
  control.on("data", (c: Buffer) => decoder.push(c));
}

function onFrame(server: Server, frame: Frame): void {
  switch (frame.type) {
    case "ready":
      server.ready = true;
      if (typeof frame.executable === "string" && isAbsolute(frame.executable)) state.python ??= frame.executable;
      state.starting = false;
      return retireLater(server);
    case "started":
    case "failed": {
      const slot = Number(frame.slot);
      const p = server.pending.get(slot);
      if (!p) return void server.proc.kill("SIGKILL");
      server.pending.delete(slot);
      if (frame.type === "failed") {
        // Nothing started: the cgroup it would have been born in goes.
        p.cgroup?.discard();
        for (const s of p.sockets) s.destroy();
        p.resolve({
          ok: false,
          failure: { stage: String(frame.stage), code: String(frame.code), message: String(frame.message) },
        });
        return holdWhileNeeded(server);
      }
      const pid = Number(frame.pid);
      if (!Number.isInteger(pid) || pid <= 0) return void server.proc.kill("SIGKILL");
      const record: Child = { listeners: [] };
      server.children.set(pid, record);
      // It was born in its cgroup: it and everything it starts are inside already.
      adopt(pid, p.cgroup?.box(pid));
      for (const s of p.sockets) s.ref();
      const [stdin, stdout, stderr] = p.sockets as [Socket, Socket, Socket];
      return p.resolve({
        ok: true,
        child: {
          pid,
          stdin,
          stdout,
          stderr,
          onceExit(fn) {
            if (record.exit) fn(record.exit);
            else record.listeners.push(fn);
          },
        },
      });
    }
    case "exited": {
      const pid = Number(frame.pid);
      const record = server.children.get(pid);
      if (!record) return;
      server.children.delete(pid);
      const signal = typeof frame.signal === "number" ? (signalNames.get(frame.signal) ?? String(frame.signal)) : null;
      ended(record, { code: typeof frame.code === "number" ? frame.code : null, signal });
      holdWhileNeeded(server);
      return retireLater(server);
    }
    default: // `fatal` or anything unknown: this server cannot be trusted to spawn again
      server.proc.kill("SIGKILL");
  }
}

function ended(record: Child, exit: ServedExit): void {
  if (record.exit) return;
  record.exit = exit;
  for (const fn of record.listeners.splice(0)) fn(exit);
}

/** A server keeps Pi's event loop alive only while something awaits it: a start, a child's exit. */
function hold(server: Server): void {
  server.control.ref();
  server.proc.ref();
}

function holdWhileNeeded(server: Server): void {
  if (server.pending.size > 0 || [...server.children.values()].some((c) => !c.exit)) return hold(server);
  server.control.unref();
  server.proc.unref();
}

/** An idle server goes after LINGER_MS; a spent one as soon as its last child ended (its statuses come through it). */
function retireLater(server: Server): void {
  clearTimeout(server.idle);
  if (server.pending.size > 0 || server.children.size > 0) return;
  server.idle = setTimeout(() => stop(server), server.next >= SPAWNER_SLOTS ? 0 : LINGER_MS);
  server.idle.unref();
}

/** Ends a server with nothing in flight: the end of its control channel is its exit. */
function stop(server: Server): void {
  if (server.pending.size > 0 || server.children.size > 0) return;
  server.alive = false;
  state.servers = state.servers.filter((s) => s !== server);
  for (const sockets of server.slots) for (const s of sockets ?? []) s.destroy();
  server.control.destroy();
}

/** The server exited (stopped, killed, crashed), and every frame it sent was read. A started child lives on, and its
 * end is noticed when its pid is gone (its status went with its parent). A start in flight fails: its child may be
 * anywhere between its fork and its exec, so where cgroups apply its prepared cgroup is killed and removed (a child
 * that joins later finds no cgroup and exits without running the program) before the failure is reported. */
function lost(server: Server): void {
  server.alive = false;
  state.servers = state.servers.filter((s) => s !== server);
  const message = "the spawn server exited while it started the program";
  for (const [, p] of server.pending) {
    for (const s of p.sockets) s.destroy();
    const failure = { stage: "server", code: "ESRCH", message };
    if (p.cgroup) void removeCgroup(p.cgroup.dir).then(() => p.resolve({ ok: false, failure }));
    else p.resolve({ ok: false, failure });
  }
  server.pending.clear();
  for (const [pid, record] of server.children) if (!record.exit) watchLost(pid, record);
  server.children.clear();
  for (const sockets of server.slots) for (const s of sockets ?? []) s.destroy();
  server.control.destroy();
}

/** Kills whatever is in `dir` until the directory can be removed (bounded: a second). */
async function removeCgroup(dir: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    try {
      writeFileSync(join(dir, "cgroup.kill"), "1");
    } catch {
      // removed already, or no member to kill
    }
    try {
      rmdirSync(dir);
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return;
    }
    await new Promise((r) => setTimeout(r, LOST_POLL_MS));
  }
}

function watchLost(pid: number, record: Child): void {
  const poll = setInterval(() => {
    if (!exited(pid)) return;
    clearInterval(poll);
    ended(record, { code: null, signal: null });
  }, LOST_POLL_MS);
}

/** Servers alive in this process (tests, bench). */
export function spawnerPids(): { pid: number; ready: boolean; used: number }[] {
  return state.servers.filter((s) => s.alive).map((s) => ({ pid: s.pid, ready: s.ready, used: s.next }));
}
