// Observability of this Pi session's supervisor: the event-log recorder (always on unless disabled) and the live
// inspector, started on demand by `/code-inspect` or at start-up by `--code-inspect`. Both feed from one
// SystemObserver handed to the host when it is created; this file only wires them and talks to the user.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { HostOptions, SupervisorHost } from "../../host/host.ts";
import { SystemObserver } from "../../record/observe.ts";
import { Recorder, type RecorderOptions } from "../../record/recorder.ts";
import { CLI_COMMAND, defaultLogDir } from "../../record/log-files.ts";
import type { Result } from "../../lib/result.ts";
import { startInspector, type Inspector } from "../../inspector/server.ts";
import { startStatelyBridge, type StatelyBridge } from "../../inspector/stately.ts";

export interface ObservabilitySettings {
  /** Event-log recording: on by default; `false` (or `PI_CODE_EXECUTION_LOG=0`) turns it off. */
  record?: false | RecorderOptions;
  env?: NodeJS.ProcessEnv;
}

const USAGE =
  "usage: /code-inspect [port] [actions] | stop | stately [port | ws://host:port] | status — the live inspector of this session's Python supervisor";

export class Observability {
  private observer: SystemObserver | undefined;
  private recorder: Recorder | undefined;
  private inspector: Inspector | undefined;
  private stately: StatelyBridge | undefined;
  private host: SupervisorHost | undefined;
  private piSession: string | undefined;
  private readonly settings: ObservabilitySettings;
  private readonly env: NodeJS.ProcessEnv;

  constructor(settings: ObservabilitySettings = {}) {
    this.settings = settings;
    this.env = settings.env ?? process.env;
  }

  sessionStarted(piSession: string | undefined): void {
    this.piSession = piSession;
  }

  /** Options for a new host: a fresh observer (and log) per host; a caller's own `inspect` still gets events. */
  hostOptions(base: HostOptions = {}): HostOptions {
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

  attach(host: SupervisorHost): void {
    this.host = host;
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
      ...(actions ? { stopSession: (name: string) => this.host?.stopSession(name) ?? Promise.resolve(false) } : {}),
    });
    if (started.ok) this.inspector = started.value;
    return started;
  }

  async openStately(options: { port?: number; url?: string }): Promise<Result<StatelyBridge>> {
    await this.stately?.close();
    this.stately = undefined;
    if (!this.observer) return { ok: false, error: "the supervisor has not started" };
    const started = await startStatelyBridge({ observer: this.observer, ...options });
    if (started.ok) this.stately = started.value;
    return started;
  }

  async closeInspector(): Promise<void> {
    const inspector = this.inspector;
    this.inspector = undefined;
    await inspector?.close();
  }

  /** After the host shut down: the log gets its last records, the servers close. */
  async shutdown(): Promise<void> {
    this.recorder?.close("shutdown");
    this.recorder = undefined;
    this.host = undefined;
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

function tell(ctx: ExtensionContext, text: string, level: "info" | "error" = "info"): void {
  if (ctx.hasUI) ctx.ui.notify(text, level);
  else process.stderr.write(`${text}\n`);
}

/** Registers `/code-inspect` and `--code-inspect`; `ensureHost` creates the supervisor so the page has a tree. */
export function registerInspect(
  pi: ExtensionAPI,
  observability: Observability,
  ensureHost: () => SupervisorHost,
): void {
  pi.registerFlag("code-inspect", {
    type: "boolean",
    default: false,
    description: "Start the live inspector of the Python supervisor (prints its loopback URL)",
  });

  const start = async (ctx: ExtensionContext, options: { port?: number; actions?: boolean }) => {
    ensureHost();
    const started = await observability.openInspector(options);
    if (!started.ok) return tell(ctx, `code-inspect: ${started.error}`, "error");
    if (ctx.hasUI) ctx.ui.setStatus("code-inspect", `inspector ${started.value.url}`);
    tell(ctx, observability.status());
  };

  pi.on("session_start", async (_event, ctx) => {
    observability.sessionStarted(ctx.sessionManager.getSessionId());
    if (pi.getFlag("code-inspect") === true) await start(ctx, {});
  });

  pi.registerCommand("code-inspect", {
    description: "Open the live inspector of the Python supervisor (actor tree, states, events, timeline)",
    getArgumentCompletions: (prefix) =>
      ["stop", "actions", "stately", "status"]
        .filter((v) => v.startsWith(prefix.trim()))
        .map((value) => ({ value, label: value })),
    handler: async (args, ctx) => {
      const words = args.trim().split(/\s+/).filter(Boolean);
      const port = words.map(Number).find((n) => Number.isInteger(n) && n > 0 && n < 65536);
      if (words[0] === "stop") {
        await observability.closeInspector();
        if (ctx.hasUI) ctx.ui.setStatus("code-inspect", undefined);
        return tell(ctx, "code-inspect: inspector stopped");
      }
      if (words[0] === "status") return tell(ctx, observability.status());
      if (words[0] === "stately") {
        ensureHost();
        const url = words.find((w) => /^wss?:\/\//.test(w));
        const started = await observability.openStately({
          ...(url ? { url } : {}),
          ...(port !== undefined ? { port } : {}),
        });
        if (!started.ok) return tell(ctx, `code-inspect: ${started.error}`, "error");
        return tell(ctx, observability.status());
      }
      const unknown = words.filter((w) => w !== "actions" && Number(w) !== port);
      if (unknown.length) return tell(ctx, USAGE, "error");
      return start(ctx, {
        ...(port !== undefined ? { port } : {}),
        ...(words.includes("actions") ? { actions: true } : {}),
      });
    },
  });
}
