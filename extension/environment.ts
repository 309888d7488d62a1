// The extension's view of where Python runs: settings (files + environment, hot-reloaded), the interpreter
// resolver with the `--python` flag and the python_set_interpreter selection, and how both reach the host (limits,
// module reload) and the code_execution tool (timeouts) without restarting Pi.
import { getAgentDir, type ExtensionAPI, type ExtensionContext } from "@earendil-works/pi-coding-agent";
import { execLogDir } from "../host/exec.ts";
import type { HostOptions, SupervisorHost } from "../host/host.ts";
import { InterpreterResolver } from "../actors/interpreter/interpreter.ts";
import { SettingsStore, type ResolvedSettings } from "../store/settings.ts";

export const PYTHON_FLAG = "python";
export const SET_INTERPRETER_TOOL = "python_set_interpreter";

export class CodeEnvironment {
  readonly interpreter: InterpreterResolver;
  private store: SettingsStore | undefined;
  private readonly pi: ExtensionAPI;
  private readonly env: () => NodeJS.ProcessEnv;
  private readonly listeners = new Set<(s: ResolvedSettings) => void>();

  constructor(pi: ExtensionAPI, env: () => NodeJS.ProcessEnv = () => process.env) {
    this.pi = pi;
    this.env = env;
    this.interpreter = new InterpreterResolver({
      env,
      venv: () => this.settings().values.venvDiscovery,
      flag: () => this.flag(),
    });
  }

  /** The `--python` flag's value (Pi gives it from session_start on). */
  flag(): string | undefined {
    try {
      const v = this.pi.getFlag(PYTHON_FLAG);
      return typeof v === "string" && v.trim() ? v.trim() : undefined;
    } catch {
      return undefined;
    }
  }

  /** The settings in force (read for Pi's working directory once a session started, else the process's). */
  settings(): ResolvedSettings {
    this.store ??= this.newStore(process.cwd());
    return this.store.get();
  }

  onChange(fn: (s: ResolvedSettings) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Pi's session started in `cwd`: settings are read for it and both files are watched. */
  async start(cwd: string): Promise<void> {
    const before = this.store?.get();
    await this.store?.close();
    this.store = this.newStore(cwd);
    await this.store.watch();
    if (before && JSON.stringify(before.values) !== JSON.stringify(this.store.get().values))
      this.changed(this.store.get());
  }

  async close(): Promise<void> {
    const s = this.store;
    this.store = undefined;
    await s?.close();
  }

  /** Options for a new host: this resolver, the limits and module reload from settings. */
  hostOptions(base: HostOptions = {}): HostOptions {
    const v = this.settings().values;
    return {
      interpreter: this.interpreter,
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

  private newStore(cwd: string): SettingsStore {
    const store = new SettingsStore(cwd, this.env);
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
