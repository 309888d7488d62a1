// The event-log recorder: listens to a SystemObserver and writes one JSONL log per Pi session (see docs/replay.md
// for the format). Inputs (commands, runner facts, timer firings) are written whole, in the order the machines got
// them; the trace (actors created, events delivered, snapshots, timers armed) is reduced synchronously, as of each
// inspection event, by actors/trace.ts. Writes are batched per event-loop turn and flushed synchronously on exit.
// A failing disk disables the recorder; it never disturbs the supervisor.
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { basename } from "node:path";
import { nanoid } from "nanoid";
import type { InspectionEvent } from "xstate";
import { DEFAULT_LOG_LIMITS, defaultLogDir, logBase, pruneLogDir, segmentPath, type LogLimits } from "./log-files.ts";
import type { SystemObserver } from "./observe.ts";
import { compact, LOG_FORMAT, LOG_VERSION, ref, TraceEncoder, type HeaderRecord, type LogRecord } from "./trace.ts";

export interface RecorderOptions {
  /** Directory of the logs; default `<agent dir>/pi-code-supervisor/logs` (see actors/log-files.ts). */
  dir?: string;
  /** The Pi session id, used in the file name and header. */
  piSession?: string;
  limits?: Partial<LogLimits>;
  now?: () => number;
}

/** Output metadata is coalesced per run and channel, and written at most this often while a run prints. */
const OUTPUT_FLUSH_MS = 250;

function versions(): Record<string, string> {
  const require = createRequire(import.meta.url);
  const own = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  return {
    "pi-code-supervisor": own.version,
    xstate: (require("xstate/package.json") as { version: string }).version,
    node: process.versions.node,
  };
}

interface PendingOutput {
  run: string;
  ch: string;
  bytes: number;
  chunks: number;
  at: number;
}

export class Recorder {
  readonly dir: string;
  readonly base: string;
  readonly limits: LogLimits;
  /** Set when writing failed; the recorder then stops. */
  error: string | undefined;
  private readonly now: () => number;
  private readonly piSession: string | undefined;
  private segment = 0;
  private fd: number | undefined;
  private bytes = 0;
  private lines: string[] = [];
  private flushScheduled = false;
  private outputs = new Map<string, PendingOutput>();
  private outputTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly kept: string[] = [];
  private readonly unsubscribe: () => void;
  private readonly onExit = () => this.flush();
  private closed = false;
  private encoder = new TraceEncoder();

  private readonly observer: SystemObserver;

  constructor(observer: SystemObserver, options: RecorderOptions = {}) {
    this.observer = observer;
    this.dir = options.dir ?? defaultLogDir();
    this.limits = { ...DEFAULT_LOG_LIMITS, ...options.limits };
    this.now = options.now ?? Date.now;
    this.piSession = options.piSession;
    this.base = logBase(this.now(), options.piSession, nanoid(6).replace(/[^A-Za-z0-9]/g, "x"));
    try {
      mkdirSync(this.dir, { recursive: true });
      this.open(undefined);
      pruneLogDir(this.dir, this.limits, new Set([this.path]));
    } catch (e) {
      this.fail(e);
    }
    this.unsubscribe = observer.on({
      inspection: (event) => this.inspection(event),
      input: (record) => {
        this.writeOutputs();
        this.write(record);
      },
      timer: (record) => this.write(record),
      output: (run, ch, bytes) => this.output(run, ch, bytes),
    });
    process.once("exit", this.onExit);
  }

  /** The segment being written. */
  get path(): string {
    return segmentPath(this.dir, this.base, this.segment);
  }

  /** Every segment of this log still on disk, oldest first. */
  segments(): string[] {
    return [...this.kept];
  }

  /** Writes buffered records now (they are otherwise written at the end of the event-loop turn). */
  flush(): void {
    this.flushScheduled = false;
    if (this.fd === undefined || this.lines.length === 0) return;
    const text = this.lines.join("\n") + "\n";
    this.lines = [];
    try {
      writeSync(this.fd, text);
    } catch (e) {
      return this.fail(e);
    }
    this.maybeRotate();
  }

  /** Writes what is pending and an `end` record, and stops listening. Call after the host shut down. */
  close(reason = "closed"): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    process.removeListener("exit", this.onExit);
    if (this.outputTimer) clearTimeout(this.outputTimer);
    this.writeOutputs();
    if (this.fd !== undefined) {
      this.write({ k: "end", reason });
      this.flush();
      this.closeFd();
    }
  }

  private inspection(event: InspectionEvent): void {
    if (this.fd === undefined) return;
    // The root's input, written whole: replay builds the supervisor from it.
    if (event.type === "@xstate.event" && event.event.type === "xstate.init" && !ref(event.actorRef)._parent) {
      this.write({ k: "start", input: compact((event.event as { input?: unknown }).input, Infinity) });
    }
    const record = this.encoder.encode(event);
    if (record) this.write(record);
  }

  private output(run: string, ch: string, bytes: number): void {
    if (this.fd === undefined) return;
    const key = `${run}\u0000${ch}`;
    const pending = this.outputs.get(key);
    if (pending) {
      pending.bytes += bytes;
      pending.chunks += 1;
    } else {
      this.outputs.set(key, { run, ch, bytes, chunks: 1, at: this.now() });
    }
    this.outputTimer ??= setTimeout(() => {
      this.outputTimer = undefined;
      this.writeOutputs();
    }, OUTPUT_FLUSH_MS).unref();
  }

  private writeOutputs(): void {
    if (this.outputs.size === 0) return;
    for (const o of this.outputs.values()) this.write({ k: "out", ...o });
    this.outputs.clear();
  }

  private write(record: LogRecord): void {
    if (this.fd === undefined) return;
    let line: string;
    try {
      line = JSON.stringify(record.at === undefined ? { ...record, at: this.now() } : record);
    } catch (e) {
      line = JSON.stringify({ k: "end", reason: `unserializable record: ${String(e)}`, at: this.now() });
    }
    this.lines.push(line);
    this.bytes += line.length + 1;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private open(continues: string | undefined): void {
    const path = this.path;
    this.fd = openSync(path, "a");
    this.bytes = 0;
    this.kept.push(path);
    const header: HeaderRecord = {
      k: "header",
      format: LOG_FORMAT,
      v: LOG_VERSION,
      segment: this.segment,
      ...(continues ? { continues } : {}),
      ...(this.piSession ? { piSession: this.piSession } : {}),
      pid: process.pid,
      startedAt: this.now(),
      versions: versions(),
    };
    this.write(header);
  }

  /** Rotation happens between event-loop turns, where no transition is in progress. A segment after the first
   * starts with the supervisor's persisted snapshot; taken with no timer pending it replays exactly (persisted
   * snapshots do not re-arm `after` timers, xstate#5331), otherwise it is marked `quiescent: false`. */
  private maybeRotate(): void {
    if (this.bytes < this.limits.segmentBytes || this.closed) return;
    const quiescent = this.observer.pendingTimers() === 0;
    if (!quiescent && this.bytes < this.limits.hardSegmentBytes) return;
    const root = this.observer.root;
    if (!root) return;
    const previous = basename(this.path);
    this.segment += 1;
    this.write({ k: "end", reason: "rotated", next: basename(this.path) });
    const text = this.lines.join("\n") + "\n";
    this.lines = [];
    try {
      writeSync(this.fd!, text);
      this.closeFd();
      this.open(previous);
      this.encoder = new TraceEncoder();
      this.write({
        k: "checkpoint",
        snapshot: root.getPersistedSnapshot(),
        nextTimer: this.observer.nextTimer(),
        quiescent,
      });
      this.observer.checkpoint();
      while (this.kept.length > this.limits.segmentsPerLog) unlinkSync(this.kept.shift()!);
    } catch (e) {
      this.fail(e);
    }
  }

  private closeFd(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      // Closing cannot lose data that writeSync already handed to the kernel.
    }
    this.fd = undefined;
  }

  private fail(e: unknown): void {
    this.error = e instanceof Error ? e.message : String(e);
    this.lines = [];
    this.closeFd();
  }
}
