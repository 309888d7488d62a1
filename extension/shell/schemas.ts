// Parameters and output schemas of the five exec tools, as pi-unified-exec names them. String enums are plain
// `{type: "string", enum}` (a TypeBox literal union becomes anyOf/const, which some providers reject).
import { Type, type TUnsafe } from "typebox";
import { DEFAULT_EXEC_YIELD_MS, DEFAULT_POLL_MS, DEFAULT_WRITE_YIELD_MS, MAX_YIELD_MS, MIN_YIELD_MS, PTY_COLS, PTY_ROWS } from "./params.ts";

function StringEnum<T extends readonly string[]>(values: T, description: string): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: "string", enum: [...values], description });
}

export const execCommandParams = Type.Object({
  cmd: Type.String({ description: "Shell command to execute." }),
  workdir: Type.Optional(Type.String({ description: "Working directory. Defaults to Pi's working directory." })),
  shell: Type.Optional(
    Type.String({ description: "Shell binary (bash by default), run as `<shell> -c cmd`; a bare name is looked up on PATH." }),
  ),
  tty: Type.Optional(Type.Boolean({ description: "Allocate a PTY (REPLs, password prompts, TUIs). Default false: pipes." })),
  cols: Type.Optional(
    Type.Number({ description: `PTY width (tty only). Default ${PTY_COLS.default}, clamped to [${PTY_COLS.min}, ${PTY_COLS.max}].` }),
  ),
  rows: Type.Optional(
    Type.Number({ description: `PTY height (tty only). Default ${PTY_ROWS.default}, clamped to [${PTY_ROWS.min}, ${PTY_ROWS.max}].` }),
  ),
  yield_time_ms: Type.Optional(
    Type.Number({
      description: `How long this call stays attached before yielding (ms): an attachment window, not a timeout. Default ${DEFAULT_EXEC_YIELD_MS}, clamped to [${MIN_YIELD_MS}, ${MAX_YIELD_MS}]. Returns early when the command exits.`,
    }),
  ),
  on_exit: Type.Optional(
    StringEnum(
      ["none", "wake"] as const,
      '"none" (default): no auto-resume. "wake": ONE follow-up prompt when the backgrounded process exits unobserved; only when the human wants auto-resume. Change later with set_on_exit.',
    ),
  ),
});

export const writeStdinParams = Type.Object({
  session_id: Type.Number({ description: "Session id from exec_command." }),
  chars: Type.Optional(
    Type.String({
      description:
        "Text to write, with C-style escapes: \\xHH (a byte), \\uHHHH, \\u{H…}, \\n \\r \\t \\0 \\a \\e \\b \\f \\v \\\\ \\\". Unknown escapes are kept as written. Mutually exclusive with chars_b64.",
    }),
  ),
  chars_b64: Type.Optional(Type.String({ description: "Exact bytes to write, base64. Mutually exclusive with chars." })),
  yield_time_ms: Type.Optional(
    Type.Number({
      description: `Attachment window (ms), never a process timeout. With input: without it the call returns as soon as the process answers (at most ${DEFAULT_WRITE_YIELD_MS} ms); with it, output is collected for that long ([${MIN_YIELD_MS}, ${MAX_YIELD_MS}]), returning early on exit. Empty polls: default and minimum ${DEFAULT_POLL_MS}, no built-in maximum (an operator cap, PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS, refuses larger values); fractional ms round down. Mutually exclusive with yield_until.`,
    }),
  ),
  yield_until: Type.Optional(
    Type.String({
      description:
        'Absolute UTC deadline for an EMPTY poll, strict RFC 3339 ("2026-07-21T18:30:00Z", optional .mmm, uppercase Z, no offsets). Only when the human asks for a long attached wait on a finite command. Returns at once when the process exits.',
    }),
  ),
});

export const killSessionParams = Type.Object({
  session_id: Type.Number({ description: "Session to terminate." }),
  signal: Type.Optional(Type.String({ description: 'Initial signal (default "SIGTERM"): SIGINT, SIGHUP, SIGKILL, "term", …' })),
});

export const listSessionsParams = Type.Object({});

export const setOnExitParams = Type.Object({
  session_id: Type.Number({ description: "Session id from exec_command." }),
  on_exit: StringEnum(["none", "wake"] as const, '"none": disarm the wake (the process keeps running). "wake": arm it if the process still runs.'),
});

const opt = Type.Optional;

export const processOutputSchema = Type.Object({
  status: StringEnum(["running", "exited"] as const, "running or exited"),
  running: Type.Boolean(),
  output: Type.String({ description: "The bounded, terminal-inert output tail." }),
  truncated: Type.Boolean(),
  session_id: opt(Type.Number()),
  exit_code: opt(Type.Number()),
  signal: opt(Type.String()),
  failure_message: opt(Type.String()),
  log_path: opt(Type.String()),
  wall_time_seconds: Type.Number(),
  note: opt(Type.String()),
  wait_status: opt(Type.String()),
  on_exit: opt(Type.String()),
  tool_time_utc: opt(Type.String()),
});

export const killOutputSchema = Type.Object({
  status: StringEnum(["killed", "kill_failed", "already_exited", "not_found"] as const, "what the kill did"),
  found: Type.Boolean(),
  running: Type.Boolean(),
  killed: Type.Boolean(),
  escalated: Type.Boolean(),
  session_id: Type.Number(),
  requested_signal: opt(Type.String()),
  pid: opt(Type.Number()),
  exit_code: opt(Type.Number()),
  signal: opt(Type.String()),
  failure_message: opt(Type.String()),
  log_path: opt(Type.String()),
  wall_time_seconds: Type.Number(),
  output_bytes_total: opt(Type.Number()),
  omitted_bytes: opt(Type.Number()),
  tty: opt(Type.Boolean()),
  output: Type.String(),
  truncated: Type.Boolean(),
  tool_time_utc: Type.String(),
});

export const sessionEntrySchema = Type.Object({
  session_id: Type.Number(),
  command: Type.String(),
  cwd: Type.String(),
  tty: Type.Boolean(),
  pid: opt(Type.Number()),
  started_at_ms: Type.Number(),
  elapsed_ms: Type.Number(),
  running: Type.Boolean(),
  state: Type.String({ description: "starting, running, held (shell exited, output held), stopping, exited, failed" }),
  wake_armed: Type.Boolean(),
  exit_code: opt(Type.Number()),
  signal: opt(Type.String()),
  failure_message: opt(Type.String()),
  output_bytes_total: Type.Number(),
  log_path: opt(Type.String()),
});

export const listOutputSchema = Type.Object({
  sessions: Type.Array(sessionEntrySchema),
  active_count: Type.Number(),
  just_exited_count: Type.Number(),
  tool_time_utc: Type.String(),
});

export const setOnExitOutputSchema = Type.Object({
  session_id: Type.Number(),
  found: Type.Boolean(),
  on_exit: opt(Type.String()),
  status: opt(StringEnum(["disarmed", "already_none", "armed", "already_armed", "too_late"] as const, "the outcome")),
  running: opt(Type.Boolean()),
  wake_armed: opt(Type.Boolean()),
  command: opt(Type.String()),
  log_path: opt(Type.String()),
  tool_time_utc: Type.String(),
});
