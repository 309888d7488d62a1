// The process boundary of shell sessions: start `<shell> -c <command>` in its own process group, with pipes
// (stdout and stderr merged in arrival order, stdin a pipe) or a PTY, and give back a small handle. Machines and
// tools never touch the process; other backends can plug in here. Failures are values.
import { spawn, type ChildProcess } from "node:child_process";
import { constants } from "node:os";
import { fail, ok, type Result } from "../../lib/result.ts";
import { loadPty, type PtyProcess } from "./pty.ts";

export interface ShellSpec {
  /** The shell's absolute path. */
  file: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  tty: boolean;
  cols: number;
  rows: number;
}

export interface ShellExit {
  code: number | null;
  signal: string | null;
}

export interface ShellHandle {
  /** The shell's pid, which is also its process group id. */
  readonly pid: number;
  /** Output, in order. Chunks that came before a listener are given to the first one. */
  onData(fn: (chunk: Buffer) => void): void;
  /** The shell process exited (its output may still be open). Called at once if that already happened. */
  onProcessExit(fn: (exit: ShellExit) => void): void;
  /** The process exited and its output closed: nothing more will come. Called at once if that already happened. */
  onClose(fn: (exit: ShellExit) => void): void;
  write(bytes: Uint8Array): Result<void>;
  /** A signal to the whole process group. */
  signalGroup(signal: string): Result<void>;
  /** Stop reading: the output is closed from our side (used when the actor goes away). */
  destroy(): void;
}

export interface ShellOperations {
  start(spec: ShellSpec): Promise<Result<ShellHandle>>;
}

const signalNames = new Map<number, string>(Object.entries(constants.signals).map(([name, n]) => [n, name]));

function groupSignal(pid: number, signal: string): Result<void> {
  try {
    process.kill(-pid, signal as NodeJS.Signals);
    return ok(undefined);
  } catch (e) {
    return fail((e as NodeJS.ErrnoException).code ?? (e as Error).message);
  }
}

/** Listener lists that remember what already happened, so late listeners miss nothing. */
class Events {
  private data: ((c: Buffer) => void)[] = [];
  private early: Buffer[] = [];
  private exits: ((e: ShellExit) => void)[] = [];
  private closes: ((e: ShellExit) => void)[] = [];
  exit: ShellExit | undefined;
  closed: ShellExit | undefined;

  onData(fn: (c: Buffer) => void): void {
    this.data.push(fn);
    const early = this.early;
    this.early = [];
    for (const c of early) fn(c);
  }
  emitData(c: Buffer): void {
    if (this.data.length === 0) this.early.push(c);
    for (const fn of this.data) fn(c);
  }
  onProcessExit(fn: (e: ShellExit) => void): void {
    if (this.exit) fn(this.exit);
    else this.exits.push(fn);
  }
  emitExit(e: ShellExit): void {
    if (this.exit) return;
    this.exit = e;
    for (const fn of this.exits.splice(0)) fn(e);
  }
  onClose(fn: (e: ShellExit) => void): void {
    if (this.closed) fn(this.closed);
    else this.closes.push(fn);
  }
  emitClose(e: ShellExit): void {
    if (this.closed) return;
    this.emitExit(e);
    this.closed = e;
    for (const fn of this.closes.splice(0)) fn(e);
  }
}

function startPipes(spec: ShellSpec): Promise<Result<ShellHandle>> {
  let child: ChildProcess;
  try {
    child = spawn(spec.file, spec.args, {
      cwd: spec.cwd,
      env: spec.env,
      stdio: ["pipe", "pipe", "pipe"],
      // Its own session and process group: signals reach everything it starts, and nothing of ours.
      detached: true,
    });
  } catch (e) {
    return Promise.resolve(fail(`could not start ${spec.file}: ${(e as Error).message}`));
  }
  const events = new Events();
  let stdinError: string | undefined;
  child.stdin!.on("error", (e: NodeJS.ErrnoException) => (stdinError = e.code ?? e.message));
  child.stdout!.on("data", (c: Buffer) => events.emitData(c));
  child.stderr!.on("data", (c: Buffer) => events.emitData(c));
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
          write(bytes) {
            const stdin = child.stdin!;
            if (stdinError) return fail(`stdin write failed: ${stdinError}`);
            if (stdin.destroyed || !stdin.writable) return fail("stdin write failed: the process closed its stdin");
            stdin.write(bytes);
            return ok(undefined);
          },
          signalGroup: (signal) => groupSignal(child.pid!, signal),
          destroy() {
            child.stdout!.destroy();
            child.stderr!.destroy();
            child.stdin!.destroy();
          },
        }),
      ),
    );
    child.once("error", (e: NodeJS.ErrnoException) => {
      if (child.pid === undefined) resolve(fail(`could not start ${spec.file}: ${e.code ?? e.message}`));
    });
  });
}

function startPty(spec: ShellSpec): Result<ShellHandle> {
  const pty = loadPty();
  if (!pty.ok) return pty;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(spec.env)) if (v !== undefined) env[k] = v;
  let proc: PtyProcess;
  try {
    proc = pty.value.spawn(spec.file, spec.args, {
      name: env.TERM || "xterm-256color",
      cols: spec.cols,
      rows: spec.rows,
      cwd: spec.cwd,
      env,
      // Bytes, not text: output is logged exactly as the program wrote it.
      encoding: null,
    });
  } catch (e) {
    return fail(`could not start ${spec.file} in a PTY: ${(e as Error).message}`);
  }
  const events = new Events();
  let exited = false;
  proc.onData((d) => events.emitData(typeof d === "string" ? Buffer.from(d, "utf8") : d));
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
    write(bytes) {
      if (exited) return fail("stdin write failed: the process has exited");
      try {
        proc.write(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
        return ok(undefined);
      } catch (e) {
        return fail(`stdin write failed: ${(e as Error).message}`);
      }
    },
    signalGroup: (signal) => groupSignal(proc.pid, signal),
    destroy() {
      try {
        proc.kill("SIGKILL");
      } catch {
        // already gone
      }
    },
  });
}

export const localShellOperations: ShellOperations = {
  start: (spec) => (spec.tty ? Promise.resolve(startPty(spec)) : startPipes(spec)),
};
