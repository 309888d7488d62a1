// The local journal: a SQLite file (better-sqlite3, WAL) recording every tool invocation, run and session
// lifecycle transition. It never changes a result and never breaks a run: better-sqlite3 is loaded lazily,
// records are queued and written in one transaction after the current turn of the event loop, and any failure
// (addon missing, file unwritable, corrupt, locked) produces one notice and is otherwise swallowed.
import { chmod, mkdir } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { COLUMNS, MIGRATIONS, SCHEMA_VERSION } from "./journal-migrations.ts";
import type { NestedCallRecord, RunRecord, SessionEventRecord, ToolCallRecord } from "./journal-records.ts";
import { afterResults, whenResultsDone } from "../lib/after-results.ts";

/** Where the journal goes: `$PI_CODE_EXECUTION_JOURNAL` (a path, or `off`), else the XDG data directory. */
export function journalPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const set = env.PI_CODE_EXECUTION_JOURNAL?.trim();
  if (set === "off") return undefined;
  if (set) return set === "~" ? homedir() : set.startsWith("~/") ? join(homedir(), set.slice(2)) : set;
  // XDG: a relative XDG_DATA_HOME is invalid and ignored.
  const xdg =
    env.XDG_DATA_HOME && isAbsolute(env.XDG_DATA_HOME) ? env.XDG_DATA_HOME : join(homedir(), ".local", "share");
  return join(xdg, "pi-code-execution", "journal.sqlite");
}

export type { NestedCallRecord, RunRecord, SessionEventRecord, ToolCallRecord } from "./journal-records.ts";

/** The part of better-sqlite3 the journal uses (loaded dynamically, so typed here). */
interface Statement {
  run(params: Record<string, unknown>): unknown;
}
interface Database {
  pragma(source: string, options?: { simple: boolean }): unknown;
  exec(sql: string): unknown;
  prepare(sql: string): Statement;
  transaction<F extends (...args: never[]) => unknown>(fn: F): F & { immediate: F };
  close(): unknown;
}
type DatabaseConstructor = new (path: string, options?: { timeout?: number }) => Database;

/** How long a write waits for another process's lock. It blocks the event loop, so it is short. */
const BUSY_TIMEOUT_MS = 200;
/** After this many failed batches in a row the journal stops trying. */
const MAX_FAILURES = 3;

type Table = keyof typeof COLUMNS;
type Row = Record<string, string | number | null>;

const bit = (b: boolean | undefined) => (b === undefined ? null : b ? 1 : 0);
const opt = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

const loadBetterSqlite3 = async (): Promise<DatabaseConstructor> => {
  const name = "better-sqlite3";
  const mod = (await import(name)) as { default?: DatabaseConstructor };
  return (mod.default ?? mod) as DatabaseConstructor;
};

export interface JournalOptions {
  /** Told once, when the journal stops recording. */
  onNotice?: (message: string) => void;
  /** How better-sqlite3 is loaded (tests replace it to simulate a missing addon). */
  load?: () => Promise<DatabaseConstructor>;
  /** Awaited before each batch is written: rows that name the event log land after the log's own records. */
  beforeBatch?: () => Promise<void>;
}

export class Journal {
  readonly path: string;
  private readonly onNotice: (message: string) => void;
  private readonly load: () => Promise<DatabaseConstructor>;
  private readonly beforeBatch: (() => Promise<void>) | undefined;
  private queue: [Table, Row][] = [];
  private scheduled = false;
  /** Settled by close(): the last batches are written at once, not after pending results (Pi may be quitting
   * mid-call). */
  private closeNow: () => void = () => {};
  private readonly closing = new Promise<void>((resolve) => (this.closeNow = resolve));
  private opening: Promise<Database | undefined> | undefined;
  private db: Database | undefined;
  private insert: Partial<Record<Table, Statement>> = {};
  private disabled = false;
  private noticed = false;
  private failures = 0;
  private openError: unknown;
  private chain: Promise<void> = Promise.resolve();

  constructor(path: string, options: JournalOptions = {}) {
    this.path = path;
    this.onNotice = options.onNotice ?? (() => {});
    this.load = options.load ?? loadBetterSqlite3;
    this.beforeBatch = options.beforeBatch;
  }

  get enabled(): boolean {
    return !this.disabled;
  }

  toolCall(r: ToolCallRecord): void {
    this.push("tool_calls", {
      tool_call_id: opt(r.toolCallId),
      tool: r.tool,
      pi_session_id: opt(r.piSessionId),
      cwd: opt(r.cwd),
      started_at: r.startedAt,
      finished_at: r.finishedAt,
      duration_ms: Math.max(0, r.finishedAt - r.startedAt),
      outcome: r.outcome,
      error: opt(r.error),
      arguments: JSON.stringify(r.arguments),
      run_id: opt(r.runId),
    });
  }

  run(r: RunRecord): void {
    this.push("runs", {
      run_id: r.runId,
      tool_call_id: opt(r.toolCallId),
      pi_session_id: opt(r.piSessionId),
      status: r.status,
      requested_at: r.requestedAt,
      finished_at: r.finishedAt,
      duration_ms: r.durationMs,
      exit_code: opt(r.exitCode),
      signal: opt(r.signal),
      killed: bit(r.killed),
      stop_reason: opt(r.stopReason),
      message: opt(r.message),
      stdout_bytes: r.stdoutBytes,
      stderr_bytes: r.stderrBytes,
      stdout_truncated: bit(r.stdoutTruncated),
      stderr_truncated: bit(r.stderrTruncated),
      source_id: opt(r.sourceId),
      output_id: opt(r.outputId),
      session_name: opt(r.sessionName),
      session_ordinal: opt(r.sessionOrdinal),
      session_incarnation: opt(r.sessionIncarnation),
      session_started: bit(r.sessionStarted),
      is_lost: bit(r.isLost),
      python_version: opt(r.pythonVersion),
      python_executable: opt(r.pythonExecutable),
      hint_ids: JSON.stringify(r.hintIds ?? []),
      event_log: opt(r.eventLog),
      surface: opt(r.surface),
      images: r.images ?? 0,
      json_outputs: r.jsonOutputs ?? 0,
      language: r.language ?? "python",
    });
  }

  sessionEvent(r: SessionEventRecord): void {
    this.push("session_events", {
      at: r.at,
      pi_session_id: opt(r.piSessionId),
      session_name: r.sessionName,
      incarnation: r.incarnation,
      event: r.event,
      detail: opt(r.detail),
    });
  }

  nestedCall(r: NestedCallRecord): void {
    this.push("nested_calls", {
      run_id: r.runId,
      call_id: opt(r.callId),
      tool: r.tool,
      started_at: r.startedAt,
      finished_at: opt(r.finishedAt),
      duration_ms: opt(r.durationMs),
      status: r.status,
      error: opt(r.error),
    });
  }

  /** Resolves when everything recorded so far is written (or dropped because the journal failed). */
  flush(): Promise<void> {
    this.chain = this.chain.then(() => this.writeBatch());
    return this.chain;
  }

  /** Writes what is queued and closes the database. Later records are dropped. */
  async close(): Promise<void> {
    this.closeNow();
    await this.flush();
    this.disabled = true;
    this.queue = [];
    try {
      this.db?.close();
    } catch {
      // Closing can only fail on a database already broken; nothing is left to save.
    }
    this.db = undefined;
  }

  private push(table: Table, row: Row): void {
    if (this.disabled) return;
    this.queue.push([table, row]);
    if (this.scheduled) return;
    this.scheduled = true;
    // Off the hot path: the tool result goes back to Pi first, the write happens once no result is pending.
    afterResults(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async writeBatch(): Promise<void> {
    if (this.queue.length === 0 || this.disabled) return;
    if (this.beforeBatch) {
      await this.beforeBatch().catch(() => {});
      // The event log's write landed on some later turn, maybe inside the next tool call: the rows wait again.
      await Promise.race([whenResultsDone(), this.closing]);
    }
    const db = await (this.opening ??= this.open());
    const batch = this.queue;
    this.queue = [];
    if (!db) {
      // A lock held while opening is passing; anything else stopped the journal in open().
      if (!this.disabled) {
        this.opening = undefined;
        this.failed(this.openError, batch.length);
      }
      return;
    }
    try {
      db.transaction(() => {
        for (const [table, row] of batch) this.statement(db, table).run(row);
      })();
      this.failures = 0;
    } catch (e) {
      this.failed(e, batch.length);
    }
  }

  private failed(e: unknown, dropped: number): void {
    this.failures += 1;
    const why = describe(e);
    if (this.failures >= MAX_FAILURES) this.stop(`writes keep failing (${why})`);
    else this.notice(`a write failed (${why}); ${dropped} record(s) were dropped`);
  }

  private statement(db: Database, table: Table): Statement {
    const cols = COLUMNS[table];
    return (this.insert[table] ??= db.prepare(
      `INSERT INTO ${table} (${cols.join(", ")}) VALUES (${cols.map((c) => `@${c}`).join(", ")})`,
    ));
  }

  private async open(): Promise<Database | undefined> {
    let Database: DatabaseConstructor;
    try {
      Database = await this.load();
    } catch (e) {
      this.stop(`better-sqlite3 cannot be loaded (${describe(e)})`);
      return undefined;
    }
    let db: Database | undefined;
    try {
      await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
      db = new Database(this.path, { timeout: BUSY_TIMEOUT_MS });
      // Private like the artifacts (SQLite gives its -wal and -shm files the database's mode).
      await chmod(this.path, 0o600).catch(() => {});
      const mode = db.pragma("journal_mode = WAL", { simple: true });
      if (String(mode).toLowerCase() !== "wal") throw new Error(`WAL mode unavailable (journal_mode is ${mode})`);
      db.pragma("synchronous = NORMAL");
      migrate(db);
      this.db = db;
      return db;
    } catch (e) {
      try {
        db?.close();
      } catch {
        // Already unusable.
      }
      if (isBusy(e)) this.openError = e;
      else this.stop(`${this.path} cannot be used (${describe(e)})`);
      return undefined;
    }
  }

  private stop(why: string): void {
    this.disabled = true;
    this.queue = [];
    this.notice(`${why}; runs go on, but are no longer recorded`);
  }

  private notice(why: string): void {
    if (this.noticed) return;
    this.noticed = true;
    try {
      this.onNotice(`code_execution journal: ${why}.`);
    } catch {
      // A failing notice must not break anything either.
    }
  }
}

/** Applies pending migrations; each in an IMMEDIATE transaction that re-reads the version (two Pi processes). */
export function migrate(db: Database): void {
  const version = () => Number(db.pragma("user_version", { simple: true }));
  if (version() > SCHEMA_VERSION)
    throw new Error(`its schema version ${version()} is newer than this extension's (${SCHEMA_VERSION})`);
  for (const m of MIGRATIONS) {
    if (version() >= m.version) continue; // no write lock needed when nothing is pending
    db.transaction(() => {
      if (version() >= m.version) return;
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    }).immediate();
  }
}

/** Another connection holds the lock: worth trying again later. */
function isBusy(e: unknown): boolean {
  const code = (e as { code?: string })?.code ?? "";
  return code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED");
}

function describe(e: unknown): string {
  const err = e as { code?: string; message?: string };
  const msg = (err?.message ?? String(e)).split("\n")[0];
  return err?.code && !msg.includes(err.code) ? `${err.code}: ${msg}` : msg;
}
