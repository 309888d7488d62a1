// The process port's other children (besides runners, operations.ts): shells and PTYs, interpreter probes and
// dependency installers. A child starts in its own process group with pipes (stdin a pipe; stdout and stderr kept
// apart but delivered in arrival order) or a PTY, and comes back as a small handle. Every backend implements
// `spawn` (local here; the sandbox wraps the same start in bwrap; remote runs it through its transport), so nothing
// of the user's starts on this machine when the user chose a sandbox or a remote. Failures are values.
import { spawn, type ChildProcess } from "node:child_process";
import { constants } from "node:os";
import { fail, ok, type Result } from "../../lib/result.ts";
import type { StartFailure } from "./operations.ts";
import { loadPty, type PtyProcess } from "./pty.ts";
import { prepareCgroup, type PreparedCgroup } from "../registry/containment.ts";
import { adopt, signalTree, stopTracked } from "../registry/registry.ts";
import { SHUTDOWN } from "../registry/shutdown.ts";
import { spawnServed, type ServedChild } from "./spawner.ts";
import { findProgram } from "./program-path.ts";

/** What a child is for: a backend may treat them differently (the sandbox lets an install write only `writable`). */
export type ChildPurpose = "shell" | "probe" | "install";

export interface ChildSpec {
  /** The program: an absolute path, or a name looked up on the backend's PATH. */
  file: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  purpose: ChildPurpose;
  /** A PTY of this size; absent: pipes. */
  tty?: { cols: number; rows: number };
  /** The only writable paths inside a sandbox (an install's environment), replacing the working directory and
   * `sandbox.writable`. Ignored by backends that do not confine writes. */
  writable?: string[];
}

export interface ChildExit {
  code: number | null;
  signal: string | null;
}

export type ChildStream = "stdout" | "stderr";

export interface ChildHandle {
  /** The local process's pid (a wrapper's, such as bwrap's or ssh's), which is also its process group id. It is
   * tracked in the process registry (actors/registry/registry.ts) from before it ran: its owner names itself with `registerGroup`,
   * and stops it (`stopTracked`) or lets go of it once it is empty (`unregisterGroup`). */
  readonly pid: number;
  /** Output, in arrival order (a PTY's is all `stdout`). Chunks that came before a listener go to the first one. */
  onData(fn: (chunk: Buffer, stream: ChildStream) => void): void;
  /** The process exited (its output may still be open). Called at once if that already happened. */
  onProcessExit(fn: (exit: ChildExit) => void): void;
  /** The process exited and its output closed: nothing more will come. Called at once if that already happened. */
  onClose(fn: (exit: ChildExit) => void): void;
  /** Whether an output pipe has not reached its end: a process still holds it. A PTY has no pipes: node-pty ends
   * the terminal itself once its leader exited (after its own bound), whoever else holds it. */
  pipesOpen(): boolean;
  write(bytes: Uint8Array): Result<void>;
  /** A signal to everything the child started (its cgroup or session, wherever they moved), or to the program
   * behind a wrapper (the sandbox's init, the remote process group). */
  signalGroup(signal: string): Result<void>;
  /** Stop reading: the output is closed from our side (used when the actor goes away). */
  destroy(): void;
}

/** How a backend wraps a local start: the program actually run, and how its exit reads back (bwrap's 128+N). */
export interface LocalWrap {
  argv: string[];
  exit?: (exit: ChildExit) => ChildExit;
  /** Signals other than SIGKILL go here rather than to the wrapper's group (the sandbox's init), when it is known. */
  signalTarget?: (pid: number) => number | undefined;
}

const signalNames = new Map<number, string>(Object.entries(constants.signals).map(([name, n]) => [n, name]));

function groupSignal(pid: number, signal: string, wrap?: LocalWrap): Result<void> {
  // A wrapper's init (bwrap's) needs the signal instead of the wrapper, which would die of it at once.
  const inner = signal !== "SIGKILL" ? wrap?.signalTarget?.(pid) : undefined;
  if (inner !== undefined) {
    try {
      process.kill(-inner, signal as NodeJS.Signals);
      return ok(undefined);
    } catch {
      // the wrapper is going away: everything tracked under it gets the signal
    }
  }
  // Everything in its cgroup (or session): a daemon that called setsid() is reached too.
  return signalTree(pid, signal as NodeJS.Signals);
}

/** Listener lists that remember what already happened, so late listeners miss nothing. */
export class ChildEvents {
  private data: ((c: Buffer, s: ChildStream) => void)[] = [];
  private early: [Buffer, ChildStream][] = [];
  private exits: ((e: ChildExit) => void)[] = [];
  private closes: ((e: ChildExit) => void)[] = [];
  exit: ChildExit | undefined;
  closed: ChildExit | undefined;
  private readonly mapExit: (e: ChildExit) => ChildExit;
  constructor(mapExit: (e: ChildExit) => ChildExit = (e) => e) {
    this.mapExit = mapExit;
  }

  onData(fn: (c: Buffer, s: ChildStream) => void): void {
    this.data.push(fn);
    const early = this.early;
    this.early = [];
    for (const [c, s] of early) fn(c, s);
  }
  emitData(c: Buffer, s: ChildStream): void {
    if (this.data.length === 0) this.early.push([c, s]);
    for (const fn of this.data) fn(c, s);
  }
  onProcessExit(fn: (e: ChildExit) => void): void {
    if (this.exit) fn(this.exit);
    else this.exits.push(fn);
  }
  emitExit(raw: ChildExit): void {
    if (this.exit) return;
    const e = this.mapExit(raw);
    this.exit = e;
    for (const fn of this.exits.splice(0)) fn(e);
  }
  onClose(fn: (e: ChildExit) => void): void {
    if (this.closed) fn(this.closed);
    else this.closes.push(fn);
  }
  emitClose(raw: ChildExit): void {
    if (this.closed) return;
    this.emitExit(raw);
    const e = this.mapExit(raw);
    this.closed = e;
    for (const fn of this.closes.splice(0)) fn(e);
  }
}

function startPipes(
  spec: ChildSpec,
  argv: string[],
  cgroup: PreparedCgroup | undefined,
  wrap?: LocalWrap,
): Promise<Result<ChildHandle, StartFailure>> {
  const [file, ...args] = argv;
  let child: ChildProcess;
  try {
    child = spawn(file!, args, {
      cwd: spec.cwd,
      env: spec.env,
      stdio: ["pipe", "pipe", "pipe"],
      // Its own session and process group: signals reach everything it starts, and nothing of ours.
      detached: true,
    });
  } catch (e) {
    cgroup?.discard();
    return Promise.resolve(fail({ message: `could not start ${spec.file}: ${(e as Error).message}` }));
  }
  // Tracked at once: the registry knows it before it can have started anything.
  if (child.pid) adopt(child.pid, cgroup?.box(child.pid));
  else cgroup?.discard();
  const events = new ChildEvents(wrap?.exit);
  let stdinError: string | undefined;
  child.stdin!.on("error", (e: NodeJS.ErrnoException) => (stdinError = e.code ?? e.message));
  child.stdout!.on("data", (c: Buffer) => events.emitData(c, "stdout"));
  child.stderr!.on("data", (c: Buffer) => events.emitData(c, "stderr"));
  child.on("exit", (code, signal) => events.emitExit({ code, signal }));
  // `close`: the process exited and stdout and stderr reached EOF (a background process may hold them open).
  child.on("close", (code, signal) => events.emitClose({ code, signal }));
  return new Promise((resolve) => {
    child.once("spawn", () =>
      resolve(
        ok({
          pid: child.pid!,
          onData: (fn) => events.onData(fn),
          onProcessExit: (fn) => events.onProcessExit(fn),
          onClose: (fn) => events.onClose(fn),
          pipesOpen: () => [child.stdout!, child.stderr!].some((s) => !s.readableEnded && !s.destroyed),
          write(bytes) {
            const stdin = child.stdin!;
            if (stdinError) return fail(`stdin write failed: ${stdinError}`);
            if (stdin.destroyed || !stdin.writable) return fail("stdin write failed: the process closed its stdin");
            stdin.write(bytes);
            return ok(undefined);
          },
          signalGroup: (signal) => groupSignal(child.pid!, signal, wrap),
          destroy() {
            child.stdout!.destroy();
            child.stderr!.destroy();
            child.stdin!.destroy();
          },
        }),
      ),
    );
    child.once("error", (e: NodeJS.ErrnoException) => {
      if (child.pid === undefined) resolve(fail({ message: `could not start ${spec.file}: ${e.code ?? e.message}` }));
    });
  });
}

/** The handle of a child the spawn server started: `exit` from the server's report (its parent), `close` once that
 * and the EOF of stdout and stderr are in, as child_process's `close`. */
function servedHandle(c: ServedChild): ChildHandle {
  const events = new ChildEvents();
  let stdinError: string | undefined;
  let open = 2;
  let exit: ChildExit | undefined;
  const closeIfDone = () => {
    if (open === 0 && exit) events.emitClose(exit);
  };
  c.stdin.on("error", (e: NodeJS.ErrnoException) => (stdinError = e.code ?? e.message));
  for (const [socket, stream] of [
    [c.stdout, "stdout"],
    [c.stderr, "stderr"],
  ] as const) {
    socket.on("data", (chunk: Buffer) => events.emitData(chunk, stream));
    // A socket that saw its EOF with nothing buffered has closed already (before the server's `started` came in).
    if (socket.closed) open -= 1;
    else
      socket.once("close", () => {
        open -= 1;
        closeIfDone();
      });
  }
  c.onceExit((e) => {
    exit = e;
    // As child_process does at the exit: nothing can read the child's stdin any more.
    c.stdin.destroy();
    events.emitExit(e);
    closeIfDone();
  });
  return {
    pid: c.pid,
    onData: (fn) => events.onData(fn),
    onProcessExit: (fn) => events.onProcessExit(fn),
    onClose: (fn) => events.onClose(fn),
    pipesOpen: () => [c.stdout, c.stderr].some((s) => !s.readableEnded && !s.destroyed),
    write(bytes) {
      if (stdinError) return fail(`stdin write failed: ${stdinError}`);
      if (c.stdin.destroyed || !c.stdin.writable) return fail("stdin write failed: the process closed its stdin");
      c.stdin.write(bytes);
      return ok(undefined);
    },
    signalGroup: (signal) => groupSignal(c.pid, signal),
    destroy() {
      c.stdout.destroy();
      c.stderr.destroy();
      c.stdin.destroy();
    },
  };
}

function startPty(
  spec: ChildSpec,
  tty: { cols: number; rows: number },
  argv: string[],
  cgroup: PreparedCgroup | undefined,
  wrap?: LocalWrap,
): Result<ChildHandle, StartFailure> {
  const pty = loadPty();
  if (!pty.ok) {
    cgroup?.discard();
    return fail({ message: pty.error });
  }
  const [file, ...args] = argv;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(spec.env)) if (v !== undefined) env[k] = v;
  let proc: PtyProcess;
  try {
    proc = pty.value.spawn(file!, args, {
      name: env.TERM || "xterm-256color",
      cols: tty.cols,
      rows: tty.rows,
      cwd: spec.cwd,
      env,
      // Bytes, not text: output is logged exactly as the program wrote it.
      encoding: null,
    });
  } catch (e) {
    cgroup?.discard();
    return fail({ message: `could not start ${spec.file} in a PTY: ${(e as Error).message}` });
  }
  adopt(proc.pid, cgroup?.box(proc.pid));
  const events = new ChildEvents(wrap?.exit);
  let exited = false;
  proc.onData((d) => events.emitData(typeof d === "string" ? Buffer.from(d, "utf8") : d, "stdout"));
  // node-pty reports the exit once the terminal's output is drained (or after its own bound).
  proc.onExit(({ exitCode, signal }) => {
    exited = true;
    const sig = signal ? (signalNames.get(signal) ?? String(signal)) : null;
    events.emitClose({ code: sig ? null : exitCode, signal: sig });
  });
  return ok({
    pid: proc.pid,
    onData: (fn) => events.onData(fn),
    onProcessExit: (fn) => events.onProcessExit(fn),
    onClose: (fn) => events.onClose(fn),
    pipesOpen: () => false,
    write(bytes) {
      if (exited) return fail("stdin write failed: the process has exited");
      try {
        proc.write(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
        return ok(undefined);
      } catch (e) {
        return fail(`stdin write failed: ${(e as Error).message}`);
      }
    },
    signalGroup: (signal) => groupSignal(proc.pid, signal, wrap),
    destroy() {
      try {
        proc.kill("SIGKILL");
      } catch {
        // already gone
      }
    },
  });
}

/** Starts a child on this machine, possibly through a wrapper (bwrap, ssh): pipes, or a PTY. Where cgroups apply
 * it starts inside a cgroup of its own, made before the start (actors/registry/containment.ts `prepareCgroup`), so nothing it ever
 * starts is outside, `setsid` daemons included; elsewhere its session is tracked. Either way the registry tracks
 * it from the start (`adopt`). A plain pipe child is born in its cgroup through the spawn server when one is ready
 * (spawner.ts); otherwise Node spawns it through the joining shell. */
export async function spawnLocalChild(spec: ChildSpec, wrap?: LocalWrap): Promise<Result<ChildHandle, StartFailure>> {
  const program = wrap?.argv ?? [spec.file, ...spec.args];
  const path = findProgram(program[0]!, spec.env.PATH ?? process.env.PATH);
  if (!path) return fail({ message: `could not start ${program[0]}: ENOENT (not found, or not executable)` });
  const cgroup = await prepareCgroup();
  // A plain pipe child (no wrapper, no PTY) goes through the spawn server when one is ready (spawner.ts).
  const served =
    !wrap && !spec.tty ? spawnServed({ path, argv: program, cwd: spec.cwd, env: spec.env, cgroup }) : undefined;
  if (served) {
    const r = await served;
    if (r.ok) return ok(servedHandle(r.child));
    const { stage, code, message } = r.failure;
    const why: Record<string, string> = {
      chdir: ` (working directory ${spec.cwd}: ${message})`,
      cgroup: ` (cannot join the cgroup ${cgroup?.dir}: ${message})`,
      server: ` (${message})`,
    };
    return fail({ message: `could not start ${spec.file}: ${code}${why[stage] ?? ""}` });
  }
  const argv = cgroup ? cgroup.argv(program) : program;
  return spec.tty ? startPty(spec, spec.tty, argv, cgroup, wrap) : startPipes(spec, argv, cgroup, wrap);
}

export interface Collected {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** The time bound ran out and the child was killed. */
  timedOut: boolean;
}

/** Runs a short child to its end through a backend (an interpreter probe), collecting its output (bounded). */
export async function collectChild(
  start: (spec: ChildSpec) => Promise<Result<ChildHandle, StartFailure>>,
  spec: ChildSpec,
  options: { timeoutMs: number; maxBytes?: number },
): Promise<Result<Collected, StartFailure>> {
  const started = await start(spec);
  if (!started.ok) return started;
  const h = started.value;
  const max = options.maxBytes ?? 1 << 20;
  const out: Record<ChildStream, Buffer[]> = { stdout: [], stderr: [] };
  const size: Record<ChildStream, number> = { stdout: 0, stderr: 0 };
  h.onData((c, s) => {
    if (size[s] >= max) return;
    out[s].push(c);
    size[s] += c.length;
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    h.signalGroup("SIGKILL");
    h.destroy();
  }, options.timeoutMs);
  const exit = await new Promise<ChildExit>((done) => h.onClose(done));
  clearTimeout(timer);
  // A short child leaves nothing behind: what it started goes, and the registry lets go of it.
  await stopTracked(h.pid, SHUTDOWN.shortChild);
  const text = (s: ChildStream) => Buffer.concat(out[s]).subarray(0, max).toString("utf8");
  return ok({ ...exit, stdout: text("stdout"), stderr: text("stderr"), timedOut });
}
