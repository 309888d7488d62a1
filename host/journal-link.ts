// The tools' link to the journal: opened on first use, records each tool invocation around its execute function,
// each run, and each session lifecycle transition it reads from the supervisor's snapshots. Built by the composition
// root (host/create.ts); the tools only hand it what happened, the rows are written here. A journal problem is told to
// the user once (Pi's UI when there is one, else stderr) and never reaches a result.
import type { SupervisorHost } from "./host.ts";
import type { RunResult } from "./requests.ts";
import { Journal, journalPath, type JournalOptions } from "../store/journal.ts";
import type { SessionEntry } from "../machines/supervisor.ts";
import { holdResult } from "../lib/after-results.ts";

/** What the link reads of a tool call's context: Pi's `ExtensionContext` has it (host/ names no Pi type). */
export interface CallContext {
  cwd: string;
  hasUI: boolean;
  ui: { notify(message: string, type?: "info" | "warning" | "error"): void };
  sessionManager: { getSessionId(): string };
}

export interface JournalSettings {
  /** A database path, or `off`. Default: `PI_CODE_EXECUTION_JOURNAL`, else the XDG data directory. */
  path?: string;
  load?: JournalOptions["load"];
  /** Where the one notice goes; default Pi's UI notification, or stderr without a UI. */
  onNotice?: (message: string) => void;
}

type Outcome = "ok" | "tool_error" | "error";

export class JournalLink {
  private readonly path: string | undefined;
  private readonly settings: JournalSettings;
  private journal: Journal | undefined;
  private ctx: CallContext | undefined;
  private piSessionId: string | undefined;
  private closed = false;
  /** Where the current event log is (set by the composition root when recording is on). */
  eventLog: () => string | undefined = () => undefined;
  /** Resolves when the event log holds everything recorded so far (rows naming it are written after). */
  eventLogWritten: () => Promise<void> = async () => {};

  constructor(settings: JournalSettings = {}) {
    this.settings = settings;
    this.path = settings.path === "off" ? undefined : (settings.path ?? journalPath());
  }

  /** The journal's file; undefined when it is off. */
  where(): string | undefined {
    return this.path;
  }

  /** The journal, opened on first use; undefined when it is off. */
  get(): Journal | undefined {
    if (!this.path || this.closed) return undefined;
    return (this.journal ??= new Journal(this.path, {
      onNotice: (m) => this.notice(m),
      beforeBatch: () => this.eventLogWritten(),
      ...(this.settings.load ? { load: this.settings.load } : {}),
    }));
  }

  /** The context notices go to, and Pi's session ID for the rows. */
  private remember(ctx: CallContext): void {
    this.ctx = ctx;
    try {
      this.piSessionId = ctx.sessionManager.getSessionId();
    } catch {
      // Not every context has a session manager; the column stays empty.
    }
  }

  /**
   * Runs a tool's execute function and records the invocation (outcome, duration, arguments without script
   * text). The result or the error passes through unchanged.
   */
  async record<T extends { content: unknown; isError?: boolean }>(
    tool: string,
    toolCallId: string,
    args: Record<string, unknown>,
    ctx: CallContext,
    execute: (note: { runId?: string }) => Promise<T>,
  ): Promise<T> {
    const startedAt = Date.now();
    const note: { runId?: string } = {};
    this.remember(ctx);
    const log = (outcome: Outcome, error?: string) => {
      try {
        this.get()?.toolCall({
          toolCallId,
          tool,
          ...(this.piSessionId ? { piSessionId: this.piSessionId } : {}),
          cwd: ctx.cwd,
          startedAt,
          finishedAt: Date.now(),
          outcome,
          ...(error !== undefined ? { error } : {}),
          arguments: args,
          ...(note.runId ? { runId: note.runId } : {}),
        });
      } catch {
        // The journal never changes a result.
      }
    };
    // While the result is pending, work it does not need waits (lib/after-results.ts).
    const release = holdResult();
    try {
      const result = await execute(note);
      log(result.isError ? "tool_error" : "ok");
      return result;
    } catch (e) {
      log("error", e instanceof Error ? e.message : String(e));
      throw e;
    } finally {
      release();
    }
  }

  run(
    result: RunResult,
    extra: {
      toolCallId: string;
      sourceId?: string;
      outputId?: string;
      surface?: string;
      images?: number;
      jsonOutputs?: number;
    },
  ): void {
    try {
      const journal = this.get();
      if (!journal) return;
      const o = result.outcome;
      journal.run({
        runId: o.runId,
        toolCallId: extra.toolCallId,
        ...(this.piSessionId ? { piSessionId: this.piSessionId } : {}),
        status: o.status,
        requestedAt: o.requestedAt,
        finishedAt: o.finishedAt,
        durationMs: o.durationMs,
        ...(o.exitCode !== undefined ? { exitCode: o.exitCode } : {}),
        ...(o.signal ? { signal: o.signal } : {}),
        killed: o.killed,
        ...(o.stopReason ? { stopReason: o.stopReason } : {}),
        ...(o.message ? { message: o.message } : {}),
        stdoutBytes: result.stdoutBytes,
        stderrBytes: result.stderrBytes,
        stdoutTruncated: result.stdoutTruncated,
        stderrTruncated: result.stderrTruncated,
        ...(extra.sourceId ? { sourceId: extra.sourceId } : {}),
        ...(extra.outputId ? { outputId: extra.outputId } : {}),
        ...(o.session
          ? {
              sessionName: o.session.name,
              sessionOrdinal: o.session.ordinal,
              sessionIncarnation: o.session.incarnation,
              sessionStarted: o.session.started,
              isLost: o.session.isLost,
            }
          : {}),
        ...(o.runner ? { pythonVersion: o.runner.python, pythonExecutable: o.runner.executable } : {}),
        ...(o.runner?.language === "js" ? { language: "js" as const } : {}),
        hintIds: hintIdsOf(o),
        ...(extra.surface ? { surface: extra.surface } : {}),
        images: extra.images ?? 0,
        jsonOutputs: extra.jsonOutputs ?? 0,
        ...eventLogOf(this.eventLog()),
      });
      for (const call of o.nestedCalls ?? []) {
        const started = Date.parse(call.startedAt);
        journal.nestedCall({
          runId: o.runId,
          callId: call.toolCallId ?? call.childId,
          tool: call.registeredName,
          startedAt: started,
          finishedAt: Math.round(started + call.durationMs),
          durationMs: Math.round(call.durationMs),
          status: call.status,
          ...(call.error ? { error: call.error.text } : {}),
        });
      }
    } catch {
      // The journal never changes a result.
    }
  }

  /** Records session transitions (started, reset, lost, closed) by comparing the supervisor's snapshots. */
  watch(host: SupervisorHost): void {
    if (!this.path) return;
    host.onSessionsChange((sessions, prev) => {
      try {
        for (const [name, entry] of Object.entries(sessions)) this.transition(name, prev[name], entry);
      } catch {
        // The journal never disturbs the supervisor.
      }
    });
  }

  private transition(name: string, before: SessionEntry | undefined, after: SessionEntry): void {
    const event = (incarnation: number, kind: "started" | "reset" | "lost" | "closed", detail?: string) =>
      this.get()?.sessionEvent({
        at: Date.now(),
        ...(this.piSessionId ? { piSessionId: this.piSessionId } : {}),
        sessionName: name,
        incarnation,
        event: kind,
        ...(detail ? { detail } : {}),
      });
    if (!before || before.incarnation !== after.incarnation) {
      if (before?.status === "alive") event(before.incarnation, "reset");
      if (after.status === "alive")
        event(after.incarnation, "started", before?.status === "lost" ? "replaces a lost process" : undefined);
      return;
    }
    if (before.status !== after.status && after.status !== "alive") event(after.incarnation, after.status);
  }

  /** Writes what is queued and closes the journal (Pi's session_shutdown). */
  async close(): Promise<void> {
    const j = this.journal;
    this.closed = true;
    this.journal = undefined;
    await j?.close();
  }

  /** For tests and shutdown: resolves when everything recorded so far is written. */
  async flush(): Promise<void> {
    await this.journal?.flush();
  }

  private notice(message: string): void {
    if (this.settings.onNotice) return this.settings.onNotice(message);
    const ctx = this.ctx;
    if (ctx?.hasUI) ctx.ui.notify(message, "warning");
    else process.stderr.write(`${message}\n`);
  }
}

/** Hint ids, once run outcomes carry hints (the hints issue); none until then. */
function hintIdsOf(outcome: RunResult["outcome"]): string[] {
  const hints = (outcome as { hints?: { id?: unknown }[] }).hints;
  return Array.isArray(hints) ? hints.map((h) => String(h?.id ?? "")).filter(Boolean) : [];
}

const eventLogOf = (path: string | undefined) => (path ? { eventLog: path } : {});
