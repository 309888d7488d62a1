// The event-log recorder: listens to a SystemObserver and writes one JSONL log per Pi session (see docs/replay.md
// for the format). Inputs (commands, runner facts, timer firings) are written whole, in the order the machines got
// them; the trace (actors created, events delivered, snapshots, timers armed) is reduced by record/trace.ts. Both
// are queued as they happen (snapshots and events are immutable) and encoded once no tool result is pending
// (lib/after-results.ts: after Pi has the result, or after a bounded wait), in slices that let the event loop read
// what arrived in between (a runner's next frame, a nested call's next request), then written asynchronously, one
// write in flight, at explicit file positions: on exit whatever is queued or still in flight is written
// synchronously (rewriting an in-flight range at its position is idempotent), so logs stay complete and ordered. A
// failing disk disables the recorder; it never disturbs the supervisor.
// Past 400 lines, one concept: the queue, the sliced encoding and the positioned writes keep one invariant
// together (a log complete and in order, also after a crash), which only reads whole.
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, write, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { basename } from "node:path";
import { nanoid } from "nanoid";
import type { InspectionEvent } from "xstate";
import { DEFAULT_LOG_LIMITS, defaultLogDir, logBase, pruneLogDir, segmentPath, type LogLimits } from "./log-files.ts";
import type { SystemObserver } from "./observe.ts";
import { afterResults, resultsPending } from "../lib/after-results.ts";
import { compact, LOG_FORMAT, LOG_VERSION, ref, TraceEncoder, type HeaderRecord, type LogRecord } from "./trace.ts";

export interface RecorderOptions {
  /** Directory of the logs; default `<agent dir>/pi-code-supervisor/logs` (see actors/log-files.ts). */
  dir?: string;
  /** The Pi session id, used in the file name and header. */
  piSession?: string;
  limits?: Partial<LogLimits>;
  now?: () => number;
  /** How long encoded lines wait for more before a write (default WRITE_BATCH_MS). */
  writeBatchMs?: number;
}

/** Output metadata is coalesced per run and channel, and written at most this often while a run prints. */
const OUTPUT_FLUSH_MS = 250;
/** Encoding done in one go before the event loop may read what arrived meanwhile (the rest goes on next turn). */
export const ENCODE_SLICE_MS = 0.2;
/** The slice when no tool result is pending (lib/after-results.ts): nothing is waiting on the event loop then. */
export const QUIET_SLICE_MS = 5;
/** Queued items past which a turn encodes them all: memory stays bounded when events outpace the slices. */
export const MAX_QUEUED = 50_000;
/** Encoded lines wait up to this long after the previous write for more to join them: one write (a thread-pool round
 * trip and a wake-up of the event loop) per batch, not per event-loop turn, when runs or nested calls come every
 * millisecond. `drained()`, rotation, close and exit write at once. */
export const WRITE_BATCH_MS = 5;
/** Lines pending past this many bytes are written without waiting. */
const WRITE_BATCH_BYTES = 64 * 1024;

function versions(): Record<string, string> {
  const require = createRequire(import.meta.url);
  const own = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  return {
    "pi-code-supervisor": own.version,
    xstate: (require("xstate/package.json") as { version: string }).version,
    node: process.versions.node,
  };
}

/** What happened, in order, not yet encoded: an inspection event or a whole record, with its time. */
type Queued = { ev: InspectionEvent; at: number } | { record: LogRecord };

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
  /** The next write's file position. */
  private position = 0;
  private queue: Queued[] = [];
  private lines: string[] = [];
  /** Bytes in `lines`. */
  private pendingBytes = 0;
  /** Lines encoded in this segment, and how many of them are on disk (in order). */
  private linesEncoded = 0;
  private linesLanded = 0;
  /** When the last asynchronous write started, and the timer of a batch waiting to be written. */
  private lastWriteAt = -Infinity;
  private batchTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly writeBatchMs: number;
  /** Asynchronous writes started: one per batch of lines. */
  writes = 0;
  /** The asynchronous write in flight (its bytes and position), if any. */
  private inFlight: { buf: Buffer; at: number; fd: number; upTo: number } | undefined;
  /** An fd closed when its write in flight lands (closing under it could let that write hit a reused fd). */
  private closeWhenLanded: number | undefined;
  private flushScheduled = false;
  private outputs = new Map<string, PendingOutput>();
  private outputTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly kept: string[] = [];
  private readonly unsubscribe: () => void;
  private readonly onExit = () => this.flushSync();
  private closed = false;
  private encoder = new TraceEncoder(true);

  private readonly observer: SystemObserver;

  constructor(observer: SystemObserver, options: RecorderOptions = {}) {
    this.observer = observer;
    this.dir = options.dir ?? defaultLogDir();
    this.limits = { ...DEFAULT_LOG_LIMITS, ...options.limits };
    this.now = options.now ?? Date.now;
    this.piSession = options.piSession;
    this.writeBatchMs = options.writeBatchMs ?? WRITE_BATCH_MS;
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

  /** Writes everything queued or in flight before returning (readers of the file now, exit, close, rotation). */
  flush(): void {
    this.flushSync();
  }

  /** Encodes what is queued and starts writing it: once no tool result is pending (lib/after-results.ts). One
   * slice at a time: what is left waits for the next turn, after the event loop has read what arrived meanwhile. */
  private flushAsync(): void {
    this.flushScheduled = false;
    const more = this.encodeQueued(resultsPending() ? ENCODE_SLICE_MS : QUIET_SLICE_MS);
    this.maybeRotate();
    this.writeNext();
    if (more) this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    afterResults(() => this.flushAsync());
  }

  private flushSync(): void {
    this.flushScheduled = false;
    this.encodeQueued();
    if (this.fd === undefined) return;
    try {
      const f = this.inFlight;
      if (f?.fd === this.fd) writeSync(f.fd, f.buf, 0, f.buf.length, f.at);
      if (this.lines.length) {
        const buf = this.takeLines();
        writeSync(this.fd, buf, 0, buf.length, this.position);
        this.position += buf.length;
      }
      this.linesLanded = this.linesEncoded;
    } catch (e) {
      this.fail(e);
    }
  }

  /** Resolves once everything recorded so far is on disk. What is recorded meanwhile is neither waited for nor
   * encoded ahead of its turn (the journal awaits this while the next tool call may be running). */
  async drained(): Promise<void> {
    this.encodeQueued();
    this.maybeRotate();
    const fd = this.fd;
    const target = this.linesEncoded;
    this.writeNext(true);
    while (this.fd !== undefined && this.fd === fd && this.linesLanded < target) {
      await new Promise((r) => setImmediate(r));
      this.writeNext(true);
    }
  }

  /** Encodes queued items in order, for at most `budgetMs` (unless too many are queued); true if some are left. */
  private encodeQueued(budgetMs = Infinity): boolean {
    if (this.queue.length === 0) return false;
    const queue = this.queue;
    this.queue = [];
    const until = budgetMs === Infinity || queue.length > MAX_QUEUED ? Infinity : performance.now() + budgetMs;
    for (let i = 0; i < queue.length; i++) {
      const q = queue[i]!;
      if ("record" in q) {
        this.encoder.input(q.record);
        this.encodeLine(q.record);
      } else this.encodeInspection(q.ev, q.at);
      if (this.fd === undefined) return false;
      // The clock is read every 8 items: an item takes microseconds.
      if ((i & 7) === 7 && i + 1 < queue.length && performance.now() >= until) {
        // Encoding enqueues nothing, so nothing came in meanwhile; the rest keeps its place at the front.
        this.queue = queue.slice(i + 1);
        return true;
      }
    }
    return false;
  }

  private writeNext(now = false): void {
    if (this.fd === undefined || this.inFlight || this.lines.length === 0) return;
    const wait = this.lastWriteAt + this.writeBatchMs - performance.now();
    if (!now && wait > 0 && this.pendingBytes < WRITE_BATCH_BYTES) {
      this.batchTimer ??= setTimeout(() => {
        this.batchTimer = undefined;
        this.writeNext(true);
      }, wait).unref();
      return;
    }
    clearTimeout(this.batchTimer);
    this.batchTimer = undefined;
    this.lastWriteAt = performance.now();
    this.writes += 1;
    const buf = this.takeLines();
    const fd = this.fd;
    const flight = { buf, at: this.position, fd, upTo: this.linesEncoded };
    this.inFlight = flight;
    this.position += buf.length;
    write(fd, buf, 0, buf.length, flight.at, (err) => {
      if (this.inFlight === flight) this.inFlight = undefined;
      if (!err && this.fd === fd) this.linesLanded = Math.max(this.linesLanded, flight.upTo);
      if (this.closeWhenLanded === fd) {
        this.closeWhenLanded = undefined;
        this.closeFdNow(fd);
      }
      if (this.fd === undefined) return;
      if (err && this.fd === fd) return this.fail(err);
      this.maybeRotate();
      this.writeNext();
    });
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
      this.flushSync();
      this.closeFd();
    }
  }

  private inspection(event: InspectionEvent): void {
    // Microsteps and actions are not traced (record/trace.ts traceOf): half the events of a run, not even queued.
    if (this.fd === undefined || event.type === "@xstate.microstep" || event.type === "@xstate.action") return;
    this.enqueue({ ev: event, at: this.now() });
  }

  private encodeInspection(event: InspectionEvent, at: number): void {
    // The root's input, written whole: replay builds the supervisor from it.
    if (event.type === "@xstate.event" && event.event.type === "xstate.init" && !ref(event.actorRef)._parent) {
      this.encodeLine({ k: "start", input: compact((event.event as { input?: unknown }).input, Infinity), at });
    }
    if (event.type === "@xstate.event") return this.pushLine(this.encoder.eventLine(event, at));
    const record = this.encoder.encode(event);
    if (record) this.encodeLine({ ...record, at });
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
    this.enqueue({ record: record.at === undefined ? { ...record, at: this.now() } : record });
  }

  private enqueue(q: Queued): void {
    this.queue.push(q);
    this.scheduleFlush();
  }

  private encodeLine(record: LogRecord): void {
    let line: string;
    try {
      line = JSON.stringify(record.at === undefined ? { ...record, at: this.now() } : record);
    } catch (e) {
      line = JSON.stringify({ k: "end", reason: `unserializable record: ${String(e)}`, at: this.now() });
    }
    this.pushLine(line);
  }

  private pushLine(line: string): void {
    this.linesEncoded += 1;
    this.lines.push(line);
    this.bytes += line.length + 1;
    this.pendingBytes += line.length + 1;
  }

  /** The pending lines as one buffer, taken off the list. */
  private takeLines(): Buffer {
    const buf = Buffer.from(this.lines.join("\n") + "\n");
    this.lines = [];
    this.pendingBytes = 0;
    return buf;
  }

  private open(continues: string | undefined): void {
    const path = this.path;
    this.fd = openSync(path, "w", 0o600);
    this.bytes = 0;
    this.position = 0;
    this.linesEncoded = 0;
    this.linesLanded = 0;
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
    // Everything that happened up to the checkpoint belongs to the old segment.
    this.encodeQueued();
    this.encodeLine({ k: "end", reason: "rotated", next: basename(this.path), at: this.now() });
    try {
      this.flushSync();
      this.closeFd();
      this.open(previous);
      this.encoder = new TraceEncoder(true);
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
    const fd = this.fd;
    this.fd = undefined;
    clearTimeout(this.batchTimer);
    this.batchTimer = undefined;
    if (this.inFlight?.fd === fd) this.closeWhenLanded = fd;
    else this.closeFdNow(fd);
  }

  private closeFdNow(fd: number): void {
    try {
      closeSync(fd);
    } catch {
      // Closing cannot lose data already handed to the kernel.
    }
  }

  private fail(e: unknown): void {
    this.error = e instanceof Error ? e.message : String(e);
    this.lines = [];
    this.pendingBytes = 0;
    this.queue = [];
    this.closeFd();
  }
}
