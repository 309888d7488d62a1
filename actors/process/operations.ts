// The process port. Machines and tools never touch child processes: every child (runners and spares here; shells,
// PTYs, interpreter probes and installers through `spawn`, children.ts) goes through this small interface, which
// each backend (this machine, a bubblewrap sandbox, a remote transport) implements. Failures are values.
import { spawn } from "node:child_process";
import { stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import { encodeFrame, FrameDecoder, type Frame } from "./framing.ts";
import { OutputOrder } from "./output-order.ts";
import { fail, ok, type Result } from "../../lib/result.ts";
import { signalGroup as signalTracked, stopTracked, track } from "../registry/registry.ts";
import { SHUTDOWN } from "../registry/shutdown.ts";
import { forkRunner } from "./fork-server.ts";
import { mark } from "../../lib/marks.ts";
import { spawnLocalChild, type ChildHandle, type ChildSpec } from "./children.ts";

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
  /** A remote backend's default interpreter there (`remote.python`, else python3 on its PATH). */
  python?: string;
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
  /** Signal the runner and everything it started, whatever process group it moved to (actors/registry/registry.ts). */
  signalGroup(signal: NodeJS.Signals): Result<void>;
  /** Drop every listener (the handle moves to a new owner, which attaches its own). */
  detach(): void;
}

export interface ProcessOperations {
  readonly backend: BackendInfo;
  start(spec: RunnerSpec): Promise<Result<RunnerHandle, StartFailure>>;
  /** A remote backend's directory for a local one (`remote.cwd` and the same subfolders; relative ones start with
   * `~`), undefined when none maps to it. Absent: paths are the same where code runs. Every surface that names a
   * directory to the far side (a run's cwd, a notebook cell's `chdir`) goes through it. */
  mapCwd?(cwd: string): string | undefined;
  /** Any other child (a shell, a PTY, an interpreter probe, an installer), where this backend runs code. */
  spawn(spec: ChildSpec): Promise<Result<ChildHandle, StartFailure>>;
  /** Whether the backend can start runners now (for /code-status); a short description of what it checked. */
  health(): Promise<Result<string, StartFailure>>;
  /** Releases what the backend holds (an SSH master connection); runners are stopped by their owners. */
  close(): Promise<void>;
  /** A remote backend's far side, where PEP 723 installs happen too (actors/deps/remote-install.ts); absent: they
   * happen on this machine. */
  remote?: RemoteSide;
}

/** What a remote backend tells an installer about its far side. */
export interface RemoteSide {
  /** The argv that runs a command on the remote side (through the ssh master when there is one). */
  argvFor(command: string[]): Promise<Result<string[], StartFailure>>;
  /** The remote's default interpreter (`remote.python`, else python3). */
  python: string;
  label: string;
  /** The remote directory for a local one (undefined: no rule maps it). */
  mapCwd(cwd: string): string | undefined;
}

/** After the runner exits, output and frames still in flight are read until EOF, but a descendant that keeps the
 * pipes open cannot hold the result back longer than this. */
export const DRAIN_AFTER_EXIT_MS = 500;

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
  spawn: (spec) => spawnLocalChild(spec),
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
  // The pipes are held (a 'readable' listener that reads nothing) until the handle listens: Node empties the pipes of
  // an exited child that nobody reads, so a runner that ended while it was moved into its cgroup (a bad interpreter,
  // an import error) would lose the output that says why.
  const pipes = [child.stdout!, child.stderr!, child.stdio[3] as unknown as Readable];
  const hold = () => {};
  for (const p of pipes) p.on("readable", hold);
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
  const handle = wrap(
    child.pid!,
    child.stdout!,
    child.stderr!,
    child.stdio[3] as unknown as NodeJS.ReadWriteStream & Readable,
    onceExit,
    options.interrupt,
    spec.settleOutput === true,
    spec.killMs,
  );
  // The handle listens now: what the pipes held flows to it (on the next tick, after its owner's listeners are on).
  for (const p of pipes) p.off("readable", hold);
  return ok(handle);
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
  const deliver = (channel: 0 | 1, c: Buffer) =>
    (channel === 0 ? listeners.stdout : listeners.stderr).forEach((fn) => fn(c));
  // settleOutput: a frame that says how much output its runner wrote before it (`out`, the JS runner's display and
  // done) waits until that much has arrived, the frames after it wait behind it, and output written after it waits
  // for it (output-order.ts).
  const held = settleOutput ? new OutputOrder(emit, deliver) : undefined;
  const decoder = new FrameDecoder(held ? (f) => held.frame(f) : emit, (m) =>
    listeners.protocol.forEach((fn) => fn(m)),
  );
  // libuv reads the readable descriptors of one poll in no fixed order, and one read of stdout can take bytes written
  // after a frame that is only read in the next poll (it was not readable yet when the poll began). So output waits
  // here one poll longer than it was read: by then every frame written before it has been read, and output-order.ts
  // puts each byte on its side of each frame by the frame's counts. Frames are decoded as they are read: one that
  // counts output still waiting here waits in output-order.ts until that output is poured.
  /** Output read before the latest poll, and output read since. */
  let older: { channel: 0 | 1; chunk: Buffer }[] = [];
  let newer: { channel: 0 | 1; chunk: Buffer }[] = [];
  let scheduled = false;
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(settle);
  };
  const pour = (items: { channel: 0 | 1; chunk: Buffer }[]) => {
    for (const { channel, chunk } of items) held!.output(channel, chunk);
  };
  const settle = () => {
    scheduled = false;
    const ready = older;
    older = newer;
    newer = [];
    pour(ready);
    if (older.length) schedule();
  };
  /** Everything read goes now, in order (the runner is gone). */
  const settleAll = () => {
    const items = [...older, ...newer];
    older = [];
    newer = [];
    pour(items);
  };
  stdout.on("data", (c: Buffer) => {
    if (!held) return deliver(0, c);
    newer.push({ channel: 0, chunk: c });
    schedule();
  });
  stderr.on("data", (c: Buffer) => {
    if (!held) return deliver(1, c);
    newer.push({ channel: 1, chunk: c });
    schedule();
  });
  control.on("data", (c: Buffer) => {
    mark("runner.read");
    decoder.push(c);
    mark("runner.handled");
  });
  control.on("error", () => {});
  stdout.on("error", () => {});
  stderr.on("error", () => {});

  let exit: RunnerExit | undefined;
  let reported = false;
  /** stdout, stderr and the control channel, until each closed. The exit can be known before the frames the runner
   * wrote ahead of it are read (the fork server's `exited` frame, or SIGCHLD, handled in an earlier poll than the
   * channel): the result waits for the channel's end too, or its `started` and `done` would be lost. */
  let open = 3;
  const report = () => {
    if (reported || !exit) return;
    reported = true;
    if (held) settleAll();
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
  control.once("close", closed);
  const exited = (how: RunnerExit) => {
    exit = how;
    // Whatever the runner left behind goes with it. The result goes first when its output is complete; else the
    // stop releases the pipes that leftovers hold.
    if (open === 0) {
      report();
      return void stopTracked(pid, SHUTDOWN.runner(killMs));
    }
    void stopTracked(pid, SHUTDOWN.runner(killMs));
    // A loop that stalled past the window runs this timer before the poll that reads what arrived meanwhile (frames
    // written before the exit among it): one poll first, then what is still open goes.
    setTimeout(
      () =>
        setImmediate(() => {
          stdout.destroy();
          stderr.destroy();
          report();
        }),
      DRAIN_AFTER_EXIT_MS,
    ).unref();
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
        mark("runner.write");
        control.write(encodeFrame(frame));
        mark("runner.written");
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
