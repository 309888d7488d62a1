// The process boundary. Machines and tools never touch child processes: they go through this small interface so
// that other backends (SSH, a bubblewrap sandbox) can plug in. Failures are values.
import { spawn } from "node:child_process";
import { stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import { encodeFrame, FrameDecoder, type Frame } from "./frames.ts";
import { fail, ok, type Result } from "../../lib/result.ts";
import { signalGroup as signalTracked, stopGroup, track } from "./registry.ts";

export interface RunnerSpec {
  executable: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** What the runner leaves behind when it exits gets SIGTERM, then SIGKILL after this many ms. */
  killMs: number;
}

export interface RunnerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface RunnerHandle {
  readonly pid: number;
  onStdout(fn: (chunk: Buffer) => void): void;
  onStderr(fn: (chunk: Buffer) => void): void;
  onFrame(fn: (frame: Frame) => void): void;
  onProtocolError(fn: (message: string) => void): void;
  /** Fires once, after the process exited and its output streams were drained (bounded). */
  onExit(fn: (exit: RunnerExit) => void): void;
  send(frame: Frame): Result<void>;
  /** Signal the runner process itself (the interrupt). */
  signal(signal: NodeJS.Signals): Result<void>;
  /** Signal the runner and everything it started, whatever process group it moved to (registry.ts). */
  signalGroup(signal: NodeJS.Signals): Result<void>;
  /** Drop every listener (the handle moves to a new owner, which attaches its own). */
  detach(): void;
}

export interface ProcessOperations {
  start(spec: RunnerSpec): Promise<Result<RunnerHandle>>;
}

/** After the runner exits, output still in flight is read until EOF, but a descendant that keeps the pipes open
 * cannot hold the result back longer than this. */
const DRAIN_AFTER_EXIT_MS = 500;

export const localOperations: ProcessOperations = {
  async start(spec) {
    try {
      const info = await stat(spec.cwd);
      if (!info.isDirectory()) return fail(`Working directory ${spec.cwd} is not a directory.`);
    } catch {
      return fail(`Working directory ${spec.cwd} does not exist.`);
    }
    const child = spawn(spec.executable, spec.args, {
      cwd: spec.cwd,
      env: spec.env,
      stdio: ["ignore", "pipe", "pipe", "pipe"],
      detached: true,
    });
    // Tracked before the runner has read a single frame (no frame can be sent before the handle exists), so
    // before any user code can start a process.
    const tracked = child.pid ? track(child.pid) : undefined;
    const spawned = await new Promise<Result<void>>((resolve) => {
      child.once("spawn", () => resolve(ok(undefined)));
      child.once("error", (e: NodeJS.ErrnoException) =>
        resolve(fail(`Could not start ${spec.executable}: ${e.code ?? e.message}`)),
      );
    });
    if (!spawned.ok) return spawned;
    await tracked;
    return ok(
      wrap(
        child.pid!,
        child.stdout!,
        child.stderr!,
        child.stdio[3] as unknown as NodeJS.ReadWriteStream & Readable,
        child,
        spec.killMs,
      ),
    );
  },
};

function wrap(
  pid: number,
  stdout: Readable,
  stderr: Readable,
  control: NodeJS.ReadWriteStream & Readable,
  child: import("node:child_process").ChildProcess,
  killMs: number,
): RunnerHandle {
  const listeners = {
    stdout: [] as ((c: Buffer) => void)[],
    stderr: [] as ((c: Buffer) => void)[],
    frame: [] as ((f: Frame) => void)[],
    protocol: [] as ((m: string) => void)[],
    exit: [] as ((e: RunnerExit) => void)[],
  };
  const decoder = new FrameDecoder(
    (f) => listeners.frame.forEach((fn) => fn(f)),
    (m) => listeners.protocol.forEach((fn) => fn(m)),
  );
  stdout.on("data", (c: Buffer) => listeners.stdout.forEach((fn) => fn(c)));
  stderr.on("data", (c: Buffer) => listeners.stderr.forEach((fn) => fn(c)));
  control.on("data", (c: Buffer) => decoder.push(c));
  control.on("error", () => {});
  stdout.on("error", () => {});
  stderr.on("error", () => {});

  let exit: RunnerExit | undefined;
  let reported = false;
  let open = 2;
  const report = () => {
    if (reported || !exit) return;
    reported = true;
    control.destroy();
    listeners.exit.forEach((fn) => fn(exit!));
  };
  const closed = () => {
    open -= 1;
    if (open === 0) report();
  };
  stdout.once("close", closed);
  stderr.once("close", closed);
  const exited = (code: number | null, signal: NodeJS.Signals | null) => {
    exit = { code, signal };
    // Whatever the runner left behind goes with it. The result goes first when its output is complete; else the
    // stop releases the pipes that leftovers hold.
    if (open === 0) {
      report();
      return void stopGroup(pid, killMs);
    }
    void stopGroup(pid, killMs);
    setTimeout(() => {
      stdout.destroy();
      stderr.destroy();
      report();
    }, DRAIN_AFTER_EXIT_MS).unref();
  };
  // A runner that died while it was being moved into its cgroup exited before this listener: its exit is reported
  // once the owner has attached its listeners.
  if (child.exitCode !== null || child.signalCode !== null)
    setImmediate(() => exited(child.exitCode, child.signalCode));
  else child.once("exit", exited);

  return {
    pid,
    onStdout: (fn) => void listeners.stdout.push(fn),
    onStderr: (fn) => void listeners.stderr.push(fn),
    onFrame: (fn) => void listeners.frame.push(fn),
    onProtocolError: (fn) => void listeners.protocol.push(fn),
    onExit: (fn) => void listeners.exit.push(fn),
    detach() {
      for (const list of Object.values(listeners)) list.length = 0;
    },
    send(frame) {
      if (exit || control.destroyed) return fail("runner is not running");
      try {
        control.write(encodeFrame(frame));
        return ok(undefined);
      } catch (e) {
        return fail((e as Error).message);
      }
    },
    signal(signal) {
      try {
        process.kill(pid, signal);
        return ok(undefined);
      } catch (e) {
        return fail((e as Error).message);
      }
    },
    signalGroup(signal) {
      try {
        if (!signalTracked(pid, signal)) process.kill(-pid, signal);
        return ok(undefined);
      } catch (e) {
        return fail((e as Error).message);
      }
    },
  };
}
