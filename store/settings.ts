// Settings: defaults, then the global file `${PI_CODING_AGENT_DIR:-~/.pi/agent}/pi-code-execution/settings.json`,
// then the project file `<cwd>/.pi/pi-code-execution/settings.json`, then environment variables. Every value
// reports where it came from; a malformed file or value becomes a warning and the value falls back to the layer
// below. Both files are watched (chokidar), so edits apply without restarting Pi. docs/settings.md lists the keys.
import { readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { watch, type FSWatcher } from "chokidar";
import { agentDir } from "../record/log-files.ts";
import type { VenvDiscovery } from "../actors/interpreter/interpreter.ts";

export interface Settings {
  /** Seconds, when a call gives no `timeout`. */
  defaultTimeout: number;
  /** The largest `timeout` a call may give, in seconds. */
  maxTimeout: number;
  /** After the one KeyboardInterrupt: how long cleanup may take before the process tree is stopped. */
  interruptGraceMs: number;
  /** SIGTERM -> SIGKILL. */
  killGraceMs: number;
  venvDiscovery: VenvDiscovery;
  /** The journal's path, `off`, or undefined for the default location. */
  journal: string | undefined;
  /** Pre-started runners for fresh runs (read by the spare-runner pool). */
  spareRunners: boolean;
  /** The live inspector (read by the inspector): start it with Pi, and its port (0: a free one). */
  inspector: { autoStart: boolean; port: number };
  /** Reload local modules a session imported when their files change. */
  moduleReload: boolean;
  /** The tool surfaces to offer, by name (`SURFACES`); unknown names are warnings. */
  tools: string[];
  /** Shorthand for `exec` in `tools`. */
  exec: boolean;
  /** Shell sessions' log files (actors/shell/logs.ts). */
  execLogs: { perLogBytes: number; totalBytes: number };
}

/** Tool surfaces this version offers. */
export const SURFACES = ["code_execution", "exec"] as const;
/** Names planned for other surfaces (issue 14): accepted, with a warning that this version lacks them. */
const PLANNED_SURFACES = ["python", "eval"];
export const DEFAULT_TOOLS = ["code_execution"];

/** Whether the shell-session tools (exec_command, write_stdin, ...) are enabled. */
export function execEnabled(values: Pick<Settings, "tools" | "exec">): boolean {
  return values.exec || values.tools.includes("exec");
}

export type SettingSource = "default" | "global" | "project" | "env";

export interface SettingOrigin {
  source: SettingSource;
  /** The file or the environment variable. */
  where?: string;
}

export interface ResolvedSettings {
  values: Settings;
  /** Per key (dotted for nested keys), where its value came from. */
  sources: Record<string, SettingOrigin>;
  warnings: string[];
  files: { global: string; project?: string };
}

type Parse = (raw: unknown, fromEnv: boolean) => { ok: true; value: unknown } | { ok: false; why: string };

interface KeySpec {
  key: string;
  env: string;
  default: unknown;
  parse: Parse;
}

const num = (raw: unknown, fromEnv: boolean): number =>
  fromEnv && typeof raw === "string" && raw.trim() !== "" ? Number(raw) : (raw as number);

function numberIn(min: number, max: number, unit: string, integer = false): Parse {
  return (raw, fromEnv) => {
    const n = num(raw, fromEnv);
    if (typeof n !== "number" || !Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n)))
      return { ok: false, why: `must be ${integer ? "an integer" : "a number"} of ${unit} from ${min} to ${max}` };
    return { ok: true, value: n };
  };
}

const boolean: Parse = (raw, fromEnv) => {
  if (typeof raw === "boolean") return { ok: true, value: raw };
  if (fromEnv && typeof raw === "string") {
    const s = raw.trim().toLowerCase();
    if (["1", "true", "yes", "on"].includes(s)) return { ok: true, value: true };
    if (["0", "false", "no", "off"].includes(s)) return { ok: true, value: false };
  }
  return { ok: false, why: "must be true or false" };
};

const dirNames: Parse = (raw, fromEnv) => {
  const list =
    fromEnv && typeof raw === "string"
      ? raw
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean)
      : raw;
  if (
    !Array.isArray(list) ||
    list.some((s) => typeof s !== "string" || !s || s.includes("/") || s === "." || s === "..")
  )
    return { ok: false, why: 'must be a list of directory names (no slashes), such as [".venv", "venv"]' };
  return { ok: true, value: [...new Set(list as string[])] };
};

const surfaceList: Parse = (raw, fromEnv) => {
  const list = fromEnv && typeof raw === "string" ? raw.split(",") : raw;
  if (!Array.isArray(list) || list.some((x) => typeof x !== "string"))
    return { ok: false, why: `must be a list of tool surface names (${SURFACES.join(", ")})` };
  const names = (list as string[]).map((x) => x.trim().toLowerCase()).filter(Boolean);
  return { ok: true, value: [...new Set(names)] };
};

const journal: Parse = (raw) => {
  if (typeof raw !== "string" || !raw.trim()) return { ok: false, why: 'must be a file path or "off"' };
  return { ok: true, value: raw.trim() };
};

export const SETTING_KEYS: readonly KeySpec[] = [
  {
    key: "defaultTimeout",
    env: "PI_CODE_EXECUTION_DEFAULT_TIMEOUT",
    default: 60,
    parse: numberIn(1, 86_400, "seconds"),
  },
  { key: "maxTimeout", env: "PI_CODE_EXECUTION_MAX_TIMEOUT", default: 3600, parse: numberIn(1, 86_400, "seconds") },
  {
    key: "interruptGraceMs",
    env: "PI_CODE_EXECUTION_INTERRUPT_GRACE_MS",
    default: 1000,
    parse: numberIn(0, 600_000, "milliseconds", true),
  },
  {
    key: "killGraceMs",
    env: "PI_CODE_EXECUTION_KILL_GRACE_MS",
    default: 500,
    parse: numberIn(0, 60_000, "milliseconds", true),
  },
  { key: "venvDiscovery.enabled", env: "PI_CODE_EXECUTION_VENV_DISCOVERY", default: true, parse: boolean },
  { key: "venvDiscovery.parentWalk", env: "PI_CODE_EXECUTION_VENV_PARENT_WALK", default: true, parse: boolean },
  { key: "venvDiscovery.dirNames", env: "PI_CODE_EXECUTION_VENV_DIRS", default: [".venv", "venv"], parse: dirNames },
  { key: "journal", env: "PI_CODE_EXECUTION_JOURNAL", default: undefined, parse: journal },
  { key: "spareRunners", env: "PI_CODE_EXECUTION_SPARE_RUNNERS", default: true, parse: boolean },
  { key: "inspector.autoStart", env: "PI_CODE_EXECUTION_INSPECT", default: false, parse: boolean },
  {
    key: "inspector.port",
    env: "PI_CODE_EXECUTION_INSPECT_PORT",
    default: 0,
    parse: numberIn(0, 65_535, "port", true),
  },
  { key: "moduleReload", env: "PI_CODE_EXECUTION_MODULE_RELOAD", default: true, parse: boolean },
  { key: "tools", env: "PI_CODE_EXECUTION_TOOLS", default: DEFAULT_TOOLS, parse: surfaceList },
  { key: "exec", env: "PI_CODE_EXECUTION_EXEC", default: false, parse: boolean },
  {
    key: "execLogs.perLogBytes",
    env: "PI_CODE_EXECUTION_EXEC_LOG_BYTES",
    default: 64 * 1024 * 1024,
    parse: numberIn(1024, 2 ** 40, "bytes", true),
  },
  {
    key: "execLogs.totalBytes",
    env: "PI_CODE_EXECUTION_EXEC_LOGS_TOTAL_BYTES",
    default: 512 * 1024 * 1024,
    parse: numberIn(1024 * 1024, 2 ** 44, "bytes", true),
  },
];

const KNOWN_TOP = new Set(SETTING_KEYS.map((k) => k.key.split(".")[0]));

export function globalSettingsPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(agentDir(env), "pi-code-execution", "settings.json");
}

export function projectSettingsPath(cwd: string): string {
  return join(resolve(cwd), ".pi", "pi-code-execution", "settings.json");
}

function get(obj: Record<string, unknown>, dotted: string): unknown {
  let v: unknown = obj;
  for (const part of dotted.split(".")) {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

function set(obj: Record<string, unknown>, dotted: string, value: unknown): void {
  const parts = dotted.split(".");
  let t = obj;
  for (const p of parts.slice(0, -1)) t = (t[p] ??= {}) as Record<string, unknown>;
  t[parts[parts.length - 1]] = value;
}

/** A settings file as an object, or a warning. A missing file is simply no layer. */
function readLayer(path: string, label: string, warnings: string[]): Record<string, unknown> | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ENOTDIR")
      warnings.push(`${label} settings (${path}) cannot be read: ${code}; ignored`);
    return undefined;
  }
  if (!text.trim()) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    warnings.push(
      `${label} settings (${path}) are not valid JSON (${(e as Error).message}); the whole file is ignored`,
    );
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    warnings.push(`${label} settings (${path}) must be a JSON object; the whole file is ignored`);
    return undefined;
  }
  const obj = parsed as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (!KNOWN_TOP.has(key)) warnings.push(`${label} settings (${path}): unknown key "${key}" is ignored`);
  }
  return obj;
}

/** Reads both files and the environment, in precedence order. Synchronous: two small files. */
export function loadSettings(cwd: string | undefined, env: NodeJS.ProcessEnv = process.env): ResolvedSettings {
  const warnings: string[] = [];
  const globalPath = globalSettingsPath(env);
  const projectPath = cwd ? projectSettingsPath(cwd) : undefined;
  const layers: { source: SettingSource; where: string; data: Record<string, unknown> | undefined }[] = [
    { source: "global", where: globalPath, data: readLayer(globalPath, "global", warnings) },
    ...(projectPath
      ? [{ source: "project" as const, where: projectPath, data: readLayer(projectPath, "project", warnings) }]
      : []),
  ];
  const values: Record<string, unknown> = {};
  const sources: Record<string, SettingOrigin> = {};
  for (const spec of SETTING_KEYS) {
    let value = spec.default;
    let origin: SettingOrigin = { source: "default" };
    for (const layer of layers) {
      const raw = layer.data ? get(layer.data, spec.key) : undefined;
      if (raw === undefined) continue;
      const r = spec.parse(raw, false);
      if (r.ok) {
        value = r.value;
        origin = { source: layer.source, where: layer.where };
      } else {
        warnings.push(
          `${layer.source} settings (${layer.where}): ${spec.key} ${r.why} (got ${JSON.stringify(raw)}); using ${describe(value)} from ${origin.source}`,
        );
      }
    }
    const fromEnv = env[spec.env];
    if (fromEnv !== undefined && fromEnv.trim() !== "") {
      const r = spec.parse(fromEnv, true);
      if (r.ok) {
        value = r.value;
        origin = { source: "env", where: spec.env };
      } else {
        warnings.push(
          `${spec.env}: ${spec.key} ${r.why} (got ${JSON.stringify(fromEnv)}); using ${describe(value)} from ${origin.source}`,
        );
      }
    }
    set(values, spec.key, value);
    sources[spec.key] = origin;
  }
  const s = values as unknown as Settings;
  for (const name of s.tools) {
    if ((SURFACES as readonly string[]).includes(name)) continue;
    const o = sources.tools;
    const where = o.source === "env" ? o.where : `${o.source} settings (${o.where})`;
    warnings.push(
      PLANNED_SURFACES.includes(name)
        ? `${where}: tools: "${name}" is not available in this version; ignored`
        : `${where}: tools: unknown surface "${name}" is ignored (known: ${SURFACES.join(", ")})`,
    );
  }
  if (s.defaultTimeout > s.maxTimeout) {
    warnings.push(
      `defaultTimeout ${s.defaultTimeout} s is above maxTimeout ${s.maxTimeout} s; the default is lowered to ${s.maxTimeout} s`,
    );
    s.defaultTimeout = s.maxTimeout;
  }
  return {
    values: s,
    sources,
    warnings,
    files: { global: globalPath, ...(projectPath ? { project: projectPath } : {}) },
  };
}

function describe(v: unknown): string {
  return v === undefined ? "the built-in default" : JSON.stringify(v);
}

/** The settings in force, reloaded when either file changes. `onChange` listeners get every new resolution. */
export class SettingsStore {
  private current: ResolvedSettings;
  private readonly cwd: string | undefined;
  private readonly env: () => NodeJS.ProcessEnv;
  private readonly listeners = new Set<(s: ResolvedSettings) => void>();
  private watcher: FSWatcher | undefined;
  private ready: Promise<void> = Promise.resolve();

  constructor(cwd: string | undefined, env: () => NodeJS.ProcessEnv = () => process.env) {
    this.cwd = cwd;
    this.env = env;
    this.current = loadSettings(cwd, env());
  }

  get(): ResolvedSettings {
    return this.current;
  }

  get values(): Settings {
    return this.current.values;
  }

  onChange(fn: (s: ResolvedSettings) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Reads the files again now (the watcher calls this; so may a command). */
  reload(): ResolvedSettings {
    this.current = loadSettings(this.cwd, this.env());
    for (const fn of this.listeners) {
      try {
        fn(this.current);
      } catch {
        // A listener's failure must not stop the others.
      }
    }
    return this.current;
  }

  /** Starts watching both files, including their directories being created later. Resolves once watching. */
  watch(): Promise<void> {
    if (this.watcher) return this.ready;
    const files = [this.current.files.global, ...(this.current.files.project ? [this.current.files.project] : [])];
    // chokidar does not notice a file whose directory does not exist yet: watch the nearest existing ancestor,
    // ignoring everything that is not on the way to a settings file.
    const pairs = files.map((f) => [f, nearestExisting(f)] as const);
    const roots = [...new Set(pairs.map(([, root]) => root))];
    const onPath = (p: string) => files.some((f) => f === p || f.startsWith(p.endsWith("/") ? p : `${p}/`));
    const depth = Math.max(...pairs.map(([f, root]) => f.split("/").length - root.split("/").length));
    const watcher = watch(roots, {
      ignoreInitial: true,
      depth: Math.max(1, depth),
      ignored: (p: string) => !onPath(p),
    });
    this.watcher = watcher;
    let timer: ReturnType<typeof setTimeout> | undefined;
    watcher.on("all", (_event, path) => {
      if (!files.includes(path)) return;
      // Editors write in bursts: one reload per burst.
      clearTimeout(timer);
      timer = setTimeout(() => this.reload(), 50);
    });
    watcher.on("error", () => {});
    this.ready = new Promise((done) => watcher.once("ready", () => done()));
    return this.ready;
  }

  async close(): Promise<void> {
    const w = this.watcher;
    this.watcher = undefined;
    this.listeners.clear();
    await w?.close();
  }
}

function nearestExisting(file: string): string {
  for (let d = dirname(file); ; d = dirname(d)) {
    try {
      if (statSync(d).isDirectory()) return d;
    } catch {
      // keep climbing
    }
    if (dirname(d) === d) return d;
  }
}
