// Observability of one supervisor: the event-log recorder (always on unless disabled) and the live inspector,
// started on demand. Both feed from one SystemObserver that is part of the host when it is built (`observe` gives
// the host's options): the composition root (host/create.ts) wires them, the extension only asks
// (extension/commands/inspect.ts).
import { SystemObserver } from "../record/observe.ts";
import { Recorder, type RecorderOptions } from "../record/recorder.ts";
import { CLI_COMMAND, defaultLogDir } from "../record/log-files.ts";
import type { Result } from "../lib/result.ts";
import { startInspector, type Inspector } from "../inspector/server.ts";
import { startStatelyLink, type StatelyLink } from "../inspector/stately.ts";
import type { HostOptions } from "./requests.ts";

export type { RecorderOptions };

export interface ObservabilitySettings {
  /** Event-log recording: on by default; `false` (or `PI_CODE_EXECUTION_LOG=0`) turns it off. */
  record?: false | RecorderOptions;
  env?: NodeJS.ProcessEnv;
}

export class Observability {
  private observer: SystemObserver | undefined;
  private recorder: Recorder | undefined;
  private inspector: Inspector | undefined;
  private stately: StatelyLink | undefined;
  private piSession: string | undefined;
  private readonly settings: ObservabilitySettings;
  private readonly env: NodeJS.ProcessEnv;
  /** The inspector's stop-session action: stops a named session of the current host (false: none such). */
  private readonly stopSession: (name: string) => Promise<boolean>;

  constructor(
    settings: ObservabilitySettings = {},
    stopSession: (name: string) => Promise<boolean> = async () => false,
  ) {
    this.settings = settings;
    this.env = settings.env ?? process.env;
    this.stopSession = stopSession;
  }

  sessionStarted(piSession: string | undefined): void {
    this.piSession = piSession;
  }

  /** A new host's options, observed: a fresh observer (and log) per host; a caller's own `inspect` still gets
   * events. Called once per host, as it is built. */
  observe(base: HostOptions = {}): HostOptions {
    this.recorder?.close("replaced");
    this.observer = new SystemObserver();
    this.recorder = this.recordingEnabled()
      ? new Recorder(this.observer, {
          ...(this.settings.record || {}),
          ...(this.piSession ? { piSession: this.piSession } : {}),
        })
      : undefined;
    const observed = this.observer.hostOptions();
    const own = base.inspect;
    return {
      ...base,
      ...observed,
      ...(own
        ? {
            inspect: (event) => {
              observed.inspect(event);
              if (typeof own === "function") own(event);
              else own.next?.(event);
            },
          }
        : {}),
    };
  }

  /** The event logs' directory; undefined when recording is off. */
  logDir(): string | undefined {
    if (this.recorder) return this.recorder.dir;
    if (!this.recordingEnabled()) return undefined;
    return (this.settings.record || {}).dir ?? defaultLogDir(this.env);
  }

  /** The segment of this session's event log being written, if recording (its records land asynchronously:
   * await `logWritten()` before a reader may open it). */
  logPath(): string | undefined {
    if (!this.recorder || this.recorder.error) return undefined;
    return this.recorder.path;
  }

  /** Resolves when the event log holds everything recorded so far. */
  async logWritten(): Promise<void> {
    await this.recorder?.drained();
  }

  async openInspector(options: { port?: number; actions?: boolean } = {}): Promise<Result<Inspector>> {
    if (this.inspector && (options.actions === undefined || options.actions === !this.inspector.readOnly)) {
      return { ok: true, value: this.inspector };
    }
    await this.closeInspector();
    const envPort = Number(this.env.PI_CODE_EXECUTION_INSPECT_PORT);
    const actions = options.actions ?? /^(1|true|yes|on)$/i.test(this.env.PI_CODE_EXECUTION_INSPECT_ACTIONS ?? "");
    const started = await startInspector({
      ...(this.observer ? { observer: this.observer } : {}),
      port: options.port ?? (Number.isInteger(envPort) && envPort > 0 ? envPort : 0),
      // The inspector reads the file at once: it gets everything recorded so far, written synchronously.
      logPath: () => (this.recorder?.flush(), this.logPath()),
      ...(actions ? { stopSession: this.stopSession } : {}),
    });
    if (started.ok) this.inspector = started.value;
    return started;
  }

  async openStately(options: { port?: number; url?: string }): Promise<Result<StatelyLink>> {
    await this.stately?.close();
    this.stately = undefined;
    if (!this.observer) return { ok: false, error: "the supervisor has not started" };
    const started = await startStatelyLink({ observer: this.observer, ...options });
    if (started.ok) this.stately = started.value;
    return started;
  }

  async closeInspector(): Promise<void> {
    const inspector = this.inspector;
    this.inspector = undefined;
    await inspector?.close();
  }

  /** `/code-inspect stop`: closes the inspector and the Stately link (its relay with it); says which were running. */
  async stopInspection(): Promise<{ inspector: boolean; stately: boolean }> {
    const was = { inspector: this.inspector !== undefined, stately: this.stately !== undefined };
    await this.closeInspector();
    const stately = this.stately;
    this.stately = undefined;
    await stately?.close();
    return was;
  }

  /** After the host shut down: the log gets its last records, the servers close. */
  async shutdown(): Promise<void> {
    this.recorder?.close("shutdown");
    this.recorder = undefined;
    await this.closeInspector();
    await this.stately?.close();
    this.stately = undefined;
  }

  status(): string {
    const lines: string[] = [];
    if (this.inspector) {
      lines.push(
        `Inspector: ${this.inspector.url} (${this.inspector.readOnly ? "read-only" : "stop-session action enabled"}; loopback only; the URL's token is the key)`,
      );
    } else lines.push("Inspector: not running (/code-inspect starts it)");
    if (this.stately) {
      lines.push(`Stately Inspector: ${this.stately.pageUrl ?? this.stately.wsUrl} (needs stately.ai online)`);
      if (this.stately.warning) lines.push(`  note: ${this.stately.warning}`);
    }
    const log = this.recorder && !this.recorder.error ? this.recorder.path : undefined;
    if (log) lines.push(`Event log: ${log} (replay: ${CLI_COMMAND} replay <log>)`);
    else if (this.recorder?.error) lines.push(`Event log: recording stopped: ${this.recorder.error}`);
    else lines.push("Event log: recording is off");
    return lines.join("\n");
  }

  private recordingEnabled(): boolean {
    if (this.settings.record === false) return false;
    return !/^(0|false|no|off)$/i.test(this.env.PI_CODE_EXECUTION_LOG ?? "");
  }
}
