// What the journal records, one interface per table (store/journal.ts writes them; docs/journal.md describes the
// columns).

export interface ToolCallRecord {
  toolCallId?: string;
  tool: string;
  piSessionId?: string;
  cwd?: string;
  startedAt: number;
  finishedAt: number;
  /** `ok`; `tool_error` (a result marked as error, e.g. a failed run); `error` (the call threw). */
  outcome: "ok" | "tool_error" | "error";
  error?: string;
  /** The parameters, without script text (the run's `source_id` names the script). */
  arguments: Record<string, unknown>;
  runId?: string;
}

export interface RunRecord {
  runId: string;
  toolCallId?: string;
  piSessionId?: string;
  status: string;
  requestedAt: number;
  finishedAt: number;
  durationMs: number;
  exitCode?: number;
  signal?: string;
  killed: boolean;
  stopReason?: string;
  message?: string;
  stdoutBytes: number;
  stderrBytes: number;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  sourceId?: string;
  outputId?: string;
  sessionName?: string;
  /** The run's ordinal within its session process (1 for the run that started it). */
  sessionOrdinal?: number;
  /** Which process of the session ran it (1, 2, ... as it is reset, lost or replaced). */
  sessionIncarnation?: number;
  sessionStarted?: boolean;
  isLost?: boolean;
  /** `python` (absent) or `js`: for `js`, the version and executable are the Node runtime's. */
  language?: "python" | "js";
  pythonVersion?: string;
  pythonExecutable?: string;
  /** The event log that recorded the run (actors/recorder.ts). */
  eventLog?: string;
  hintIds?: string[];
  surface?: string;
  /** Images and JSON outputs the run displayed. */
  images?: number;
  jsonOutputs?: number;
}

export interface SessionEventRecord {
  at: number;
  piSessionId?: string;
  sessionName: string;
  incarnation: number;
  event: "started" | "reset" | "lost" | "closed";
  detail?: string;
}

export interface NestedCallRecord {
  runId: string;
  callId?: string;
  tool: string;
  startedAt: number;
  finishedAt?: number;
  durationMs?: number;
  status: string;
  error?: string;
}
