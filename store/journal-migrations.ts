// The journal's schema, as ordered migrations. `PRAGMA user_version` holds the number of migrations applied;
// each migration runs in one transaction with the version bump. Never edit a released migration: add one.
// docs/journal.md documents the tables.

export interface Migration {
  version: number;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE tool_calls (
        id INTEGER PRIMARY KEY,
        tool_call_id TEXT,
        tool TEXT NOT NULL,
        pi_session_id TEXT,
        cwd TEXT,
        started_at INTEGER NOT NULL,
        finished_at INTEGER NOT NULL,
        duration_ms INTEGER NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'tool_error', 'error')),
        error TEXT,
        arguments TEXT NOT NULL,
        run_id TEXT
      );
      CREATE INDEX tool_calls_started ON tool_calls (started_at);
      CREATE INDEX tool_calls_tool ON tool_calls (tool, started_at);

      CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        tool_call_id TEXT,
        pi_session_id TEXT,
        status TEXT NOT NULL,
        requested_at INTEGER NOT NULL,
        finished_at INTEGER NOT NULL,
        duration_ms INTEGER NOT NULL,
        exit_code INTEGER,
        signal TEXT,
        killed INTEGER NOT NULL,
        stop_reason TEXT,
        message TEXT,
        stdout_bytes INTEGER NOT NULL,
        stderr_bytes INTEGER NOT NULL,
        stdout_truncated INTEGER NOT NULL,
        stderr_truncated INTEGER NOT NULL,
        source_id TEXT,
        output_id TEXT,
        session_name TEXT,
        session_ordinal INTEGER,
        session_started INTEGER,
        is_lost INTEGER,
        python_version TEXT,
        python_executable TEXT,
        hint_ids TEXT NOT NULL DEFAULT '[]'
      );
      CREATE INDEX runs_requested ON runs (requested_at);
      CREATE INDEX runs_session ON runs (session_name, session_ordinal);
      CREATE INDEX runs_source ON runs (source_id);

      CREATE TABLE session_events (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        pi_session_id TEXT,
        session_name TEXT NOT NULL,
        ordinal INTEGER NOT NULL,
        event TEXT NOT NULL CHECK (event IN ('started', 'reset', 'lost', 'closed')),
        detail TEXT
      );
      CREATE INDEX session_events_name ON session_events (session_name, at);

      CREATE TABLE nested_calls (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        call_id TEXT,
        tool TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        finished_at INTEGER,
        duration_ms INTEGER,
        status TEXT NOT NULL,
        error TEXT
      );
      CREATE INDEX nested_calls_run ON nested_calls (run_id);
    `,
  },
  {
    // The event log (actors/recorder.ts) that recorded the run, so a journal row leads to its replayable trace.
    version: 2,
    sql: `ALTER TABLE runs ADD COLUMN event_log TEXT;`,
  },
  {
    // `session_ordinal` becomes the run's ordinal within its session process (seed-compatible); what it held until
    // now, the session's incarnation, moves to its own column. Older rows' run ordinals are unknown (NULL).
    version: 3,
    sql: `
      ALTER TABLE runs ADD COLUMN session_incarnation INTEGER;
      UPDATE runs SET session_incarnation = session_ordinal, session_ordinal = NULL WHERE session_ordinal IS NOT NULL;
      DROP INDEX runs_session;
      CREATE INDEX runs_session ON runs (session_name, session_incarnation, session_ordinal);
      ALTER TABLE session_events RENAME COLUMN ordinal TO incarnation;
    `,
  },
  {
    // Which tool surface asked for the run (code_execution, python, eval), and what it displayed: images and JSON
    // outputs (display(), rich trailing values, matplotlib figures). Older rows: NULL surface, 0 and 0.
    version: 4,
    sql: `
      ALTER TABLE runs ADD COLUMN surface TEXT;
      ALTER TABLE runs ADD COLUMN images INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE runs ADD COLUMN json_outputs INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    // Which language ran: `python`, or `js` for eval's JavaScript cells, whose python_version and python_executable
    // name the Node runtime. Older rows ran Python only.
    version: 5,
    sql: `
      ALTER TABLE runs ADD COLUMN language TEXT NOT NULL DEFAULT 'python';
    `,
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

/** The columns the journal inserts, per table, in the current schema. */
export const COLUMNS = {
  tool_calls: [
    "tool_call_id",
    "tool",
    "pi_session_id",
    "cwd",
    "started_at",
    "finished_at",
    "duration_ms",
    "outcome",
    "error",
    "arguments",
    "run_id",
  ],
  runs: [
    "run_id",
    "tool_call_id",
    "pi_session_id",
    "status",
    "requested_at",
    "finished_at",
    "duration_ms",
    "exit_code",
    "signal",
    "killed",
    "stop_reason",
    "message",
    "stdout_bytes",
    "stderr_bytes",
    "stdout_truncated",
    "stderr_truncated",
    "source_id",
    "output_id",
    "session_name",
    "session_ordinal",
    "session_incarnation",
    "session_started",
    "is_lost",
    "python_version",
    "python_executable",
    "hint_ids",
    "event_log",
    "surface",
    "images",
    "json_outputs",
    "language",
  ],
  session_events: ["at", "pi_session_id", "session_name", "incarnation", "event", "detail"],
  nested_calls: ["run_id", "call_id", "tool", "started_at", "finished_at", "duration_ms", "status", "error"],
} as const;
