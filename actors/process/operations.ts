// The process boundary. Machines and tools never touch child processes: they go through this small interface so
// that other backends (SSH, a bubblewrap sandbox) can plug in. Failures are values.
import type { Job, Outcome } from "../deps/installer.ts";
import { spawn } from "node:child_process";
import { stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import { encodeFrame, FrameDecoder, type Frame } from "./framing.ts";
import { OutputOrder } from "./output-order.ts";
import { fail, ok, type Result } from "../../lib/result.ts";
import { signalGroup as signalTracked, stopTracked, track } from "./registry.ts";
import { forkRunner } from "./fork-server.ts";

export interface RunnerSpec {
  executable: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Decode control frames one event-loop turn after they arrive, and hold a frame whose `out` names output not
   * read yet: for a runner whose blocking writes put its output in the pipes before each frame
   * (docs/protocol-js.md). */
  settleOutput?: boolean;
  /** What the runner leaves behind when it exits gets SIGTERM, then SIGKILL after this many ms. */
  killMs: number;
  /** A fresh Python runner: the local backend may fork it from a fork server (fork-server.ts) that `host` owns,
   * starting one for a spare's runner (`start`) or only using a ready one (`use`). */
  fork?: "start" | "use";
  host?: string;
}

/** Where runs execute, as status lines and the inspector show it. */
export interface BackendInfo {
  kind: "local" | "sandbox" | "remote";
  /** `local`, `sandbox (bwrap, no network)`, `remote ssh user@host:/srv/work`, ... */
  label: string;
}

/** A backend that could not start a runner: its own message, and a stable hint id (actors/process/backend-hints.ts). */
export interface StartFailure {
  message: string;
  hint?: string;
}

export interface RunnerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The backend lost the process without seeing it exit (a dropped connection): why, and a hint id. */
  lost?: StartFailure;
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
  readonly backend: BackendInfo;
  start(spec: RunnerSpec): Promise<Result<RunnerHandle, StartFailure>>;
  /** Whether the backend can start runners now (for /code-status); a short description of what it checked. */
  health(): Promise<Result<string, StartFailure>>;
  /** Releases what the backend holds (an SSH master connection); runners are stopped by their owners. */
  close(): Promise<void>;
  /** PEP 723 installs where the runner runs (remote); absent: they happen on this machine. */
  install?(job: Job): Promise<Outcome>;
}

/** After the runner exits, output still in flight is read until EOF, but a descendant that keeps the pipes open
 * cannot hold the result back longer than this. */
const DRAIN_AFTER_EXIT_MS = 500;

export const localOperations: ProcessOperations = {
  backend: { kind: "local", label: "local" },
  start: async (spec) => {
    if (!spec.fork) return spawnRunner(spec, { interrupt: "signal" });
    const where = await checkCwd(spec.cwd);
    if (!where.ok) return where;
    const forked = await forkRunner(spec);
    if (!forked) return spawnRunner(spec, { interrupt: "signal" });
    const handle = wrap(
      forked.pid,
      forked.stdout,
      forked.stderr,
      forked.control,
      forked.onceExit,
      "signal",
      false,
      spec.killMs,
    );
    for (const stream of [forked.stdout, forked.stderr, forked.control]) stream.resume();
    return ok(handle);
  },
  health: async () => ok("runs start on this machine"),
  close: async () => {},
};

export interface SpawnOptions {
  /** How the interrupt reaches the runner: SIGINT to its pid, or a `signal` control frame (the pid is a wrapper's,
   * such as bwrap's, which a SIGINT would kill). */
  interrupt: "signal" | "frame";
  /** The program actually started, when it wraps the runner (bwrap): [executable, ...args]. */
  wrapper?: string[];
}

async function checkCwd(cwd: string): Promise<Result<void, StartFailure>> {
  try {
    const info = await stat(cwd);
    if (!info.isDirectory()) return fail({ message: `Working directory ${cwd} is not a directory.` });
  } catch {
    return fail({ message: `Working directory ${cwd} does not exist.` });
  }
  return ok(undefined);
}

/** Starts a runner as a local child in its own process group, fd 3 the control channel. */
export async function spawnRunner(
  spec: RunnerSpec,
  options: SpawnOptions,
): Promise<Result<RunnerHandle, StartFailure>> {
  const where = await checkCwd(spec.cwd);
  if (!where.ok) return where;
  const [program, ...args] = options.wrapper ?? [spec.executable, ...spec.args];
  const child = spawn(program!, args, {
    cwd: spec.cwd,
    env: spec.env,
    stdio: ["ignore", "pipe", "pipe", "pipe"],
    detached: true,
  });
  // Tracked before the runner has read a single frame (no frame can be sent before the handle exists), so
  // before any user code can start a process.
  const tracked = child.pid ? track(child.pid) : undefined;
  const spawned = await new Promise<Result<void, StartFailure>>((resolve) => {
    child.once("spawn", () => resolve(ok(undefined)));
    child.once("error", (e: NodeJS.ErrnoException) =>
      resolve(fail({ message: `Could not start ${program}: ${e.code ?? e.message}` })),
    );
  });
  if (!spawned.ok) return spawned;
  await tracked;
  // A runner that died while it was being moved into its cgroup exited before a listener: its exit is reported
  // once the owner has attached its listeners.
  const onceExit = (fn: (exit: RunnerExit) => void) => {
    if (child.exitCode !== null || child.signalCode !== null)
      setImmediate(() => fn({ code: child.exitCode, signal: child.signalCode }));
    else child.once("exit", (code, signal) => fn({ code, signal }));
  };
  return ok(
    wrap(
      child.pid!,
      child.stdout!,
      child.stderr!,
      child.stdio[3] as unknown as NodeJS.ReadWriteStream & Readable,
      onceExit,
      options.interrupt,
      spec.settleOutput === true,
      spec.killMs,
    ),
  );
}

function wrap(
  pid: number,
  stdout: Readable,
  stderr: Readable,
  control: NodeJS.ReadWriteStream & Readable,
  onceExit: (fn: (exit: RunnerExit) => void) => void,
  interrupt: SpawnOptions["interrupt"],
  settleOutput: boolean,
  killMs: number,
): RunnerHandle {
  const listeners = {
    stdout: [] as ((c: Buffer) => void)[],
    stderr: [] as ((c: Buffer) => void)[],
    frame: [] as ((f: Frame) => void)[],
    protocol: [] as ((m: string) => void)[],
    exit: [] as ((e: RunnerExit) => void)[],
  };
  const emit = (f: Frame) => listeners.frame.forEach((fn) => fn(f));
  // settleOutput: a frame that says how much output its runner wrote before it (`out`, the JS runner's display and
  // done) waits until that much has arrived, and the frames after it wait behind it (output-order.ts).
  const held = settleOutput ? new OutputOrder(emit) : undefined;
  const decoder = new FrameDecoder(held ? (f) => held.frame(f) : emit, (m) =>
    listeners.protocol.forEach((fn) => fn(m)),
  );
  stdout.on("data", (c: Buffer) => {
    listeners.stdout.forEach((fn) => fn(c));
    held?.output(0, c.length);
  });
  stderr.on("data", (c: Buffer) => {
    listeners.stderr.forEach((fn) => fn(c));
    held?.output(1, c.length);
  });
  // libuv reads the readable descriptors of one poll in no fixed order: frames are decoded in the next turn, and one
  // that names output not yet read waits for it.
  let settling: Buffer[] = [];
  const settle = () => {
    const chunks = settling;
    settling = [];
    for (const c of chunks) decoder.push(c);
  };
  control.on("data", (c: Buffer) => {
    if (!settleOutput) return decoder.push(c);
    if (settling.push(c) === 1) setImmediate(settle);
  });
  control.on("error", () => {});
  stdout.on("error", () => {});
  stderr.on("error", () => {});

  let exit: RunnerExit | undefined;
  let reported = false;
  let open = 2;
  const report = () => {
    if (reported || !exit) return;
    reported = true;
    settle();
    held?.release(); // the process is gone and its output drained: nothing more will come
    control.destroy();
    listeners.exit.forEach((fn) => fn(exit!));
  };
  const closed = () => {
    open -= 1;
    if (open === 0) report();
  };
  stdout.once("close", closed);
  stderr.once("close", closed);
  const exited = (how: RunnerExit) => {
    exit = how;
    // Whatever the runner left behind goes with it. The result goes first when its output is complete; else the
    // stop releases the pipes that leftovers hold.
    if (open === 0) {
      report();
      return void stopTracked(pid, killMs);
    }
    void stopTracked(pid, killMs);
    setTimeout(() => {
      stdout.destroy();
      stderr.destroy();
      report();
    }, DRAIN_AFTER_EXIT_MS).unref();
  };
  onceExit(exited);

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
      if (interrupt === "frame") {
        if (exit || control.destroyed) return fail("runner is not running");
        control.write(encodeFrame({ type: "signal", signal }));
        return ok(undefined);
      }
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
