// The extension's view of where Python runs: settings (files + environment, hot-reloaded), the interpreter
// resolver with the `--python` flag and the python_set_interpreter selection, and how both reach the host (limits,
// module reload) and the code_execution tool (timeouts) without restarting Pi.
import { getAgentDir, type ExtensionAPI, type ExtensionContext } from "@earendil-works/pi-coding-agent";
import {
  brokenBackend,
  chooseOperations,
  execLogDir,
  InterpreterResolver,
  moveLegacySettings,
  type HostOptions,
  type ProcessOperations,
  type SupervisorHost,
} from "../host/index.ts";
import { SettingsStore, type ResolvedSettings, type ResourceLimits } from "../store/settings.ts";

export const PYTHON_FLAG = "python";
export const SANDBOX_FLAG = "sandbox";
export const SSH_FLAG = "ssh";
export const SET_INTERPRETER_TOOL = "python_set_interpreter";

export class CodeEnvironment {
  readonly interpreter: InterpreterResolver;
  private store: SettingsStore | undefined;
  private readonly pi: ExtensionAPI;
  private readonly env: () => NodeJS.ProcessEnv;
  private readonly listeners = new Set<(s: ResolvedSettings) => void>();
  /** The backend of this Pi session (one per session: settings changes apply to the next one). */
  private ops: ProcessOperations | undefined;
  private cwd: string | undefined;
  /** A `--python` value that failed its check at start: discovery goes on without it (pi-python). */
  private rejectedFlag: string | undefined;
  /** Why it was rejected, for /code-status (/python-status). */
  flagWarning: string | undefined;

  constructor(pi: ExtensionAPI, env: () => NodeJS.ProcessEnv = () => process.env) {
    this.pi = pi;
    this.env = env;
    this.interpreter = new InterpreterResolver({
      // Probes run on this Pi session's backend (a sandbox's or a remote's interpreter is checked there).
      ops: () => this.operations(),
      env,
      venv: () => this.settings().values.venvDiscovery,
      flag: () => this.flag(),
    });
  }

  /** The `--python` flag's value (Pi gives it from session_start on). */
  flag(): string | undefined {
    const flag = this.stringFlag(PYTHON_FLAG);
    return flag === this.rejectedFlag ? undefined : flag;
  }

  /** Checks `--python` where code runs, once at start (pi-python does): a bad value is said, with why, and the
   * usual discovery is used instead of failing every run. Undefined when there is no flag or it is good. */
  async checkFlag(cwd: string): Promise<string | undefined> {
    const flag = this.stringFlag(PYTHON_FLAG);
    this.rejectedFlag = undefined;
    this.flagWarning = undefined;
    if (!flag || this.operations().backend.kind === "remote") return undefined; // remote: remote.python is used
    const probe = await this.interpreter.validate(flag, cwd);
    if (probe.ok) return undefined;
    this.rejectedFlag = flag;
    this.interpreter.invalidate();
    this.flagWarning = `--python ${flag} cannot be used: ${probe.error}. The usual interpreter discovery is used instead.`;
    return this.flagWarning;
  }

  /** The settings in force (read for Pi's working directory once a session started, else the process's, whose
   * project files are not read: Pi has not said yet whether it trusts them). */
  settings(): ResolvedSettings {
    this.store ??= this.newStore(process.cwd(), false);
    return this.store.get();
  }

  onChange(fn: (s: ResolvedSettings) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Pi's session started in `cwd`: settings are read for it (its project files only when `trusted`, Pi's
   * `ctx.isProjectTrusted()`) and the files are watched. Returns notices for the start (pi-python's file moved). */
  async start(cwd: string, trusted: boolean): Promise<string[]> {
    this.cwd = cwd;
    // pi-python's old global file moves to its new place first, so the new store reads it there.
    const migrated = moveLegacySettings();
    const before = this.store?.get();
    await this.store?.close();
    this.store = this.newStore(cwd, trusted);
    await this.store.watch();
    if (before && JSON.stringify(before.values) !== JSON.stringify(this.store.get().values))
      this.changed(this.store.get());
    return migrated ? [migrated] : [];
  }

  async close(): Promise<void> {
    // The host that used the backend closed it at its shutdown; the next Pi session chooses again.
    this.ops = undefined;
    const s = this.store;
    this.store = undefined;
    await s?.close();
  }

  private stringFlag(name: string): string | undefined {
    try {
      const v = this.pi.getFlag(name);
      return typeof v === "string" && v.trim() ? v.trim() : undefined;
    } catch {
      return undefined;
    }
  }

  /** Where runs execute: `--ssh` and `--sandbox` over the `backend` setting. Built once per Pi session: a settings
   * reload never changes it (and the settings it reads come from no project file: `boundaryOf`). */
  operations(): ProcessOperations {
    if (this.ops) return this.ops;
    let sandbox = false;
    try {
      sandbox = this.pi.getFlag(SANDBOX_FLAG) === true;
    } catch {
      // flags not available yet
    }
    const ssh = this.stringFlag(SSH_FLAG);
    const refused = brokenBackend(this.settings(), ssh ? "remote" : sandbox ? "sandbox" : undefined);
    if (refused) return (this.ops = refused);
    this.ops = chooseOperations(this.settings().values, {
      cwd: this.cwd ?? process.cwd(),
      env: this.env(),
      ...(ssh ? { ssh } : {}),
      sandbox,
    });
    return this.ops;
  }

  /** The resource limits in force (read when each runner starts). */
  resourceLimits(): ResourceLimits {
    const l = this.settings().values.limits;
    return Object.fromEntries(Object.entries(l ?? {}).filter(([, n]) => n !== undefined)) as ResourceLimits;
  }

  /** Options for a new host: this resolver, the limits and module reload from settings. */
  hostOptions(base: HostOptions = {}): HostOptions {
    const v = this.settings().values;
    return {
      interpreter: this.interpreter,
      ops: this.operations(),
      resourceLimits: () => this.resourceLimits(),
      moduleReload: () => this.settings().values.moduleReload,
      spareRunners: () => this.settings().values.spareRunners,
      exec: { logDir: execLogDir(getAgentDir()), logQuota: () => this.settings().values.execLogs },
      ...base,
      limits: { graceMs: v.interruptGraceMs, killMs: v.killGraceMs, ...base.limits },
    };
  }

  /** Keeps a host's limits in step with the settings. */
  attach(host: SupervisorHost): () => void {
    return this.onChange((s) => host.setLimits({ graceMs: s.values.interruptGraceMs, killMs: s.values.killGraceMs }));
  }

  timeouts(): { defaultSeconds: number; maxSeconds: number } {
    const v = this.settings().values;
    return { defaultSeconds: v.defaultTimeout, maxSeconds: v.maxTimeout };
  }

  /** Rebuilds the python_set_interpreter selection from the current branch (resume, /tree, fork). */
  restoreSelection(ctx: ExtensionContext): void {
    let selected: string | undefined;
    try {
      for (const entry of ctx.sessionManager.getBranch()) {
        if (entry.type !== "message") continue;
        const m = entry.message as {
          role: string;
          toolName?: string;
          isError?: boolean;
          details?: { selected?: unknown };
        };
        if (m.role !== "toolResult" || m.toolName !== SET_INTERPRETER_TOOL || m.isError) continue;
        const s = m.details?.selected;
        selected = typeof s === "string" ? s : undefined;
      }
    } catch {
      return;
    }
    if (selected !== this.interpreter.selection) this.interpreter.select(selected);
  }

  private newStore(cwd: string, trusted: boolean): SettingsStore {
    const store = new SettingsStore(cwd, this.env, { trusted });
    store.onChange((s) => this.changed(s));
    return store;
  }

  private changed(s: ResolvedSettings): void {
    this.interpreter.invalidate();
    for (const fn of this.listeners) {
      try {
        fn(s);
      } catch {
        // One listener's failure does not stop the others.
      }
    }
  }
}
