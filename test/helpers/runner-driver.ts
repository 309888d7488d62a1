// Test driver for runtime-py/runner.py: spawns a real Python runner the way the host does (docs/protocol.md),
// speaks the frame protocol on fd 3 and collects fd 1/2 bytes. No mocks: real processes, pipes and signals.
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import type { Socket } from "node:net";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PYTHON } from "./pythons.ts";

export const RUNNER_PATH = fileURLToPath(new URL("../../runtime-py/runner.py", import.meta.url));
export { PYTHON } from "./pythons.ts";
export const MAX_FRAME = 64 * 1024 * 1024;

export type Mode = "fresh" | "session";
export type RunError = null | "syntax" | "exception" | "exit" | "interrupt";
export type Frame = { type: string; [key: string]: unknown };
export type DoneFrame = Frame & {
  type: "done";
  id: string;
  exitCode: number;
  displayedValue: boolean;
  error: RunError;
};
export type ExitInfo = { code: number | null; signal: NodeJS.Signals | null };
export type RunResult = { done: DoneFrame; stdout: string; stderr: string; stdoutBytes: Buffer; stderrBytes: Buffer };
export type FrameMatch = string | ((frame: Frame) => boolean);

export type StartOptions = {
  mode?: Mode;
  python?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Spawn this instead of `<python> runner.py --mode <mode>` (e.g. a shell that adjusts signals, then execs). */
  command?: string;
  args?: string[];
  /** Wait for the `ready` frame before returning (default true). */
  waitReady?: boolean;
  timeoutMs?: number;
};

export function encodeFrame(value: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(value), "utf8");
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length);
  return Buffer.concat([head, body]);
}

/** Incremental decoder: 4-byte big-endian length, then that many bytes of UTF-8 JSON. */
export class FrameDecoder {
  private buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Frame[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const out: Frame[] = [];
    while (this.buf.length >= 4) {
      const n = this.buf.readUInt32BE(0);
      if (n > MAX_FRAME) throw new Error(`frame of ${n} bytes exceeds the limit`);
      if (this.buf.length < 4 + n) break;
      const frame = JSON.parse(this.buf.subarray(4, 4 + n).toString("utf8")) as Frame;
      if (typeof frame !== "object" || frame === null || typeof frame.type !== "string") {
        throw new Error(`bad frame: ${JSON.stringify(frame)}`);
      }
      out.push(frame);
      this.buf = this.buf.subarray(4 + n);
    }
    return out;
  }
}

type Waiter = { match: (f: Frame) => boolean; resolve: (f: Frame) => void; reject: (e: Error) => void };

function matcher(match: FrameMatch): (f: Frame) => boolean {
  return typeof match === "string" ? (f) => f.type === match : match;
}

/** True while `pid` exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class RunnerDriver {
  readonly child: ChildProcess;
  readonly control: Socket;
  readonly pid: number;
  /** Every frame received, in order. */
  readonly frames: Frame[] = [];
  ready: Frame | null = null;
  exit: ExitInfo | null = null;
  readonly exited: Promise<ExitInfo>;
  /** Resolves once fd 1 and fd 2 both reached end-of-file (every process holding them is gone). */
  readonly outputEnded: Promise<void>;
  /** Set when the runner sent malformed frames or the control channel failed. */
  protocolError: Error | null = null;

  private readonly stdoutChunks: Buffer[] = [];
  private readonly stderrChunks: Buffer[] = [];
  private stdoutLen = 0;
  private stderrLen = 0;
  private readonly unclaimed: Frame[] = [];
  private readonly waiters: Waiter[] = [];
  private controlClosed = false;
  private runCount = 0;
  /** Whether a batch's `cell` frames are acknowledged as they come, as the host does (docs/protocol.md). */
  private ackCells = true;
  private readonly heldAcks: string[] = [];

  private constructor(opts: StartOptions) {
    const mode = opts.mode ?? "session";
    const command = opts.command ?? opts.python ?? PYTHON;
    const args = opts.args ?? [RUNNER_PATH, "--mode", mode];
    this.child = spawn(command, args, {
      stdio: ["ignore", "pipe", "pipe", "pipe"],
      detached: true,
      cwd: opts.cwd,
      env: opts.env ?? process.env,
    });
    if (this.child.pid === undefined) throw new Error(`could not spawn ${command}`);
    this.pid = this.child.pid;
    this.control = this.child.stdio[3] as Socket;
    const decoder = new FrameDecoder();
    const ended = (s: NodeJS.ReadableStream) => new Promise<void>((r) => s.once("close", () => r()));
    this.outputEnded = Promise.all([ended(this.child.stdout!), ended(this.child.stderr!)]).then(() => undefined);
    this.child.stdout!.on("data", (c: Buffer) => {
      this.stdoutChunks.push(c);
      this.stdoutLen += c.length;
    });
    this.child.stderr!.on("data", (c: Buffer) => {
      this.stderrChunks.push(c);
      this.stderrLen += c.length;
    });
    this.control.on("data", (c: Buffer) => {
      let frames: Frame[];
      try {
        frames = decoder.push(c);
      } catch (e) {
        this.fail(e as Error);
        return;
      }
      for (const f of frames) this.deliver(f);
    });
    const closed = () => {
      this.controlClosed = true;
      this.rejectAll(new Error("control channel closed"));
    };
    this.control.on("close", closed);
    this.control.on("error", () => closed());
    this.exited = new Promise((resolve) => {
      this.child.on("exit", (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
  }

  static async start(opts: StartOptions = {}): Promise<RunnerDriver> {
    const d = new RunnerDriver(opts);
    if (opts.waitReady ?? true) {
      try {
        d.ready = await d.waitFrame("ready", opts.timeoutMs ?? 5000);
      } catch (e) {
        await d.close();
        throw new Error(`runner did not become ready: ${(e as Error).message}\nstderr: ${d.stderrText()}`);
      }
    }
    return d;
  }

  private deliver(f: Frame): void {
    this.frames.push(f);
    if (f.type === "cell") {
      if (this.ackCells) this.send({ type: "cell.ack", id: f.id });
      else this.heldAcks.push(String(f.id));
    }
    const i = this.waiters.findIndex((w) => w.match(f));
    if (i >= 0) {
      const [w] = this.waiters.splice(i, 1);
      w.resolve(f);
    } else {
      this.unclaimed.push(f);
    }
  }

  private fail(e: Error): void {
    this.protocolError = e;
    this.rejectAll(e);
  }

  private rejectAll(e: Error): void {
    for (const w of this.waiters.splice(0)) w.reject(e);
  }

  /** Holds back the `cell.ack` of the `cell` frames that come from now on, until `releaseCellAcks`. */
  holdCellAcks(): void {
    this.ackCells = false;
  }

  /** Sends the held `cell.ack`s and acknowledges later `cell` frames at once again. */
  releaseCellAcks(): void {
    this.ackCells = true;
    for (const id of this.heldAcks.splice(0)) this.send({ type: "cell.ack", id });
  }

  /** The first not yet claimed frame that matches (by type or predicate), waiting for it if needed. */
  waitFrame(match: FrameMatch, timeoutMs = 5000): Promise<Frame> {
    const m = matcher(match);
    const i = this.unclaimed.findIndex(m);
    if (i >= 0) return Promise.resolve(this.unclaimed.splice(i, 1)[0]);
    if (this.controlClosed) return Promise.reject(new Error("control channel closed"));
    if (this.protocolError) return Promise.reject(this.protocolError);
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        match: m,
        resolve: (f) => {
          clearTimeout(timer);
          resolve(f);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      const timer = setTimeout(() => {
        const k = this.waiters.indexOf(w);
        if (k >= 0) this.waiters.splice(k, 1);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for a frame; stderr: ${this.stderrText()}`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  send(frame: unknown): void {
    this.control.write(encodeFrame(frame));
  }

  /** Sends a run; returns its id and the stdout/stderr byte offsets at that moment. */
  startRun(
    code: string,
    opts: { id?: string; filename?: string; extra?: Record<string, unknown> } = {},
  ): { id: string; out: number; err: number } {
    this.runCount += 1;
    const id = opts.id ?? `r${this.runCount}`;
    const filename = opts.filename ?? `<run-${this.runCount}>`;
    const mark = { id, out: this.stdoutLen, err: this.stderrLen };
    this.send({ type: "run", id, code, filename, ...opts.extra });
    return mark;
  }

  /** Waits for the run's `done`; output is everything received on fd 1/2 since the mark. */
  async finishRun(mark: { id: string; out: number; err: number }, timeoutMs = 10000): Promise<RunResult> {
    const done = (await this.waitFrame((f) => f.type === "done" && f.id === mark.id, timeoutMs)) as DoneFrame;
    const stdoutBytes = this.stdoutBytes().subarray(mark.out);
    const stderrBytes = this.stderrBytes().subarray(mark.err);
    return {
      done,
      stdoutBytes,
      stderrBytes,
      stdout: stdoutBytes.toString("utf8"),
      stderr: stderrBytes.toString("utf8"),
    };
  }

  async run(
    code: string,
    opts: { id?: string; filename?: string; timeoutMs?: number; extra?: Record<string, unknown> } = {},
  ): Promise<RunResult> {
    const mark = this.startRun(code, opts);
    await this.waitFrame((f) => f.type === "started" && f.id === mark.id, opts.timeoutMs ?? 10000);
    return this.finishRun(mark, opts.timeoutMs);
  }

  /** Stop reading fd 1 and fd 2 (the bytes stay in the kernel buffer), as a slow host would. */
  pauseOutput(): void {
    this.child.stdout!.pause();
    this.child.stderr!.pause();
  }

  resumeOutput(): void {
    this.child.stdout!.resume();
    this.child.stderr!.resume();
  }

  stdoutBytes(): Buffer {
    return Buffer.concat(this.stdoutChunks);
  }

  stderrBytes(): Buffer {
    return Buffer.concat(this.stderrChunks);
  }

  stdoutText(): string {
    return this.stdoutBytes().toString("utf8");
  }

  stderrText(): string {
    return this.stderrBytes().toString("utf8");
  }

  /** Signal the runner's pid (what the host does for SIGINT). */
  signal(sig: NodeJS.Signals): void {
    process.kill(this.pid, sig);
  }

  /** Signal the runner's whole process group. */
  signalGroup(sig: NodeJS.Signals): void {
    process.kill(-this.pid, sig);
  }

  /** Resolves with the exit info, or rejects if the runner is still alive after timeoutMs. */
  async waitExit(timeoutMs = 5000): Promise<ExitInfo> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`runner still alive after ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Kills the process group (if still there) and waits for the exit. Safe to call twice. */
  async close(): Promise<ExitInfo> {
    try {
      process.kill(-this.pid, "SIGKILL"); // also background children left in the group
    } catch {
      // group already gone
    }
    const info = await this.exited;
    this.control.destroy();
    return info;
  }
}
