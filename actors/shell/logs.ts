// Shell sessions' log files: every byte a session writes, in `<agent dir>/pi-code-supervisor/exec-logs/` (folder
// 0700, files 0600, created exclusively and never through a symlink). Bounded, unlike the peer's: a log stops at
// its per-log quota with a line at the exact cut, and when the folder would pass its total quota the oldest closed
// logs are removed first, each removal recorded in `removed.jsonl` beside them. A closed log is made read-only
// (0400), which is how any Pi process tells closed logs from live ones; a live log is never removed, except one
// left by a process that died (unchanged for a day).
import {
  appendFileSync,
  closeSync,
  constants,
  fchmodSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { fail, ok, type Result } from "../../lib/result.ts";

export interface LogQuota {
  /** One log stops growing here. */
  perLogBytes: number;
  /** All logs together: the oldest closed ones are removed to stay under. */
  totalBytes: number;
}

export const DEFAULT_LOG_QUOTA: LogQuota = { perLogBytes: 64 * 1024 * 1024, totalBytes: 512 * 1024 * 1024 };

const STALE_MS = 24 * 60 * 60 * 1000;
export const REMOVED_FILE = "removed.jsonl";
const REMOVED_MAX_BYTES = 256 * 1024;

export function cutLine(quota: number): string {
  return `\n[pi-code-supervisor: this log reached its quota of ${quota} bytes here; later output was not written to it]\n`;
}

export class LogWriter {
  readonly path: string;
  private fd: number | undefined;
  private readonly quota: number;
  private readonly owner: ExecLogs;
  written = 0;
  /** Bytes past the quota, not written. */
  dropped = 0;
  /** Why writing stopped early (a disk error), if it did. */
  error: string | undefined;

  constructor(path: string, fd: number, quota: number, owner: ExecLogs) {
    this.path = path;
    this.fd = fd;
    this.quota = quota;
    this.owner = owner;
  }

  write(chunk: Uint8Array): void {
    if (this.fd === undefined) return;
    if (this.dropped > 0) {
      this.dropped += chunk.length;
      return;
    }
    const room = this.quota - this.written;
    const part = chunk.length <= room ? chunk : chunk.subarray(0, Math.max(0, room));
    try {
      if (part.length > 0) this.put(part);
      if (part.length < chunk.length) {
        this.dropped = chunk.length - part.length;
        this.put(Buffer.from(cutLine(this.quota), "utf8"));
      }
    } catch (e) {
      this.error = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      this.close();
    }
  }

  private put(bytes: Uint8Array): void {
    let off = 0;
    while (off < bytes.length) off += writeSync(this.fd!, bytes, off, bytes.length - off);
    this.written += bytes.length;
    this.owner.grew(bytes.length);
  }

  /** Ends the log: a last line counts what the quota kept out; the file becomes read-only. */
  close(): void {
    const fd = this.fd;
    if (fd === undefined) return;
    this.fd = undefined;
    try {
      if (this.dropped > 0) writeSync(fd, `[pi-code-supervisor: ${this.dropped} bytes after the cut were not written]\n`);
      fchmodSync(fd, 0o400);
    } catch {
      // A log that cannot be finished is still the log it is.
    }
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
    this.owner.closed(this);
  }
}

/** Appends one line to the removal record, which keeps its newest half once it passes 256 KiB. */
function recordRemoval(path: string, entry: object): void {
  try {
    try {
      const size = statSync(path).size;
      if (size > REMOVED_MAX_BYTES) {
        const text = readFileSync(path, "utf8");
        const keep = text.slice(text.indexOf("\n", text.length - REMOVED_MAX_BYTES / 2) + 1);
        writeFileSync(path, keep, { mode: 0o600 });
      }
    } catch {
      // no record yet
    }
    appendFileSync(path, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
  } catch {
    // The removal stands even if it cannot be recorded.
  }
}

/** A new log file, never one that exists or a symlink. */
const openLog = (path: string) =>
  openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);

export class ExecLogs {
  /** The folder, or how to find it when it is first needed (a host that opens no shell never asks). */
  private where: string | (() => string);
  private readonly quota: () => LogQuota;
  private readonly live = new Set<string>();
  /** Bytes in the folder, as far as this process knows (rescanned when it says the total is passed). */
  private tally: number | undefined;
  /** The folder was made and checked (once, not on every command: each check is syscalls on the call's path). */
  private dirReady = false;

  constructor(dir: string | (() => string), quota: () => LogQuota = () => DEFAULT_LOG_QUOTA) {
    this.where = dir;
    this.quota = quota;
  }

  get dir(): string {
    if (typeof this.where === "function") this.where = this.where();
    return this.where;
  }

  /** A new log file `name` (a plain file name), after making room for it. */
  open(name: string): Result<LogWriter> {
    if (!this.dirReady) {
      const ready = this.ensureDir();
      if (!ready.ok) return ready;
      this.dirReady = true;
    }
    const q = this.quota();
    this.makeRoom(q);
    const path = join(this.dir, name);
    let fd: number;
    try {
      fd = openLog(path);
    } catch (e) {
      // The folder was checked once; removed or replaced since, it is checked (and made) again.
      const code = (e as NodeJS.ErrnoException).code;
      const again = code === "ENOENT" || code === "ENOTDIR" ? this.ensureDir() : undefined;
      if (again && !again.ok) {
        this.dirReady = false;
        return again;
      }
      try {
        if (!again) throw e;
        fd = openLog(path);
      } catch (e2) {
        return fail(`cannot create the log ${path}: ${(e2 as NodeJS.ErrnoException).code ?? (e2 as Error).message}`);
      }
    }
    this.live.add(path);
    return ok(new LogWriter(path, fd, q.perLogBytes, this));
  }

  grew(bytes: number): void {
    if (this.tally !== undefined) this.tally += bytes;
  }

  closed(log: LogWriter): void {
    this.live.delete(log.path);
  }

  private ensureDir(): Result<void> {
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      const st = lstatSync(this.dir);
      if (!st.isDirectory()) return fail(`the log folder ${this.dir} is not a directory`);
      if (typeof process.getuid === "function" && st.uid !== process.getuid())
        return fail(`the log folder ${this.dir} belongs to another user`);
      return ok(undefined);
    } catch (e) {
      return fail(`cannot create the log folder ${this.dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  }

  private scan(): { path: string; name: string; size: number; mtimeMs: number; closed: boolean }[] {
    const out = [];
    for (const name of readdirSync(this.dir)) {
      if (!name.endsWith(".log")) continue;
      const path = join(this.dir, name);
      try {
        const st = statSync(path);
        if (!st.isFile()) continue;
        out.push({ path, name, size: st.size, mtimeMs: st.mtimeMs, closed: (st.mode & 0o200) === 0 });
      } catch {
        // removed meanwhile
      }
    }
    return out;
  }

  /** Removes the oldest closed logs until a new log at its full quota fits under the total. */
  private makeRoom(q: LogQuota): void {
    if (this.tally !== undefined && this.tally + q.perLogBytes <= q.totalBytes) return;
    let files;
    try {
      files = this.scan();
    } catch {
      return;
    }
    this.tally = files.reduce((n, f) => n + f.size, 0);
    const now = Date.now();
    const removable = files
      .filter((f) => !this.live.has(f.path) && (f.closed || now - f.mtimeMs > STALE_MS))
      .sort((a, b) => a.mtimeMs - b.mtimeMs || a.name.localeCompare(b.name));
    for (const f of removable) {
      if (this.tally + q.perLogBytes <= q.totalBytes) break;
      try {
        unlinkSync(f.path);
      } catch {
        continue;
      }
      this.tally -= f.size;
      recordRemoval(join(this.dir, REMOVED_FILE), {
        removedAt: new Date(now).toISOString(),
        log: f.name,
        bytes: f.size,
        reason: "total quota",
      });
    }
  }
}
