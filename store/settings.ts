// Settings: defaults, then the global file `<Pi's agent directory>/pi-code-execution/settings.json`,
// then the project file `<cwd>/.pi/pi-code-execution/settings.json`, then environment variables. Every value
// reports where it came from; a malformed file or value becomes a warning and the value falls back to the layer
// below. Both files are watched (chokidar), so edits apply without restarting Pi. docs/settings.md lists the keys.
import { readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { watch, type FSWatcher } from "chokidar";
import { getAgentDir } from "@earendil-works/pi-coding-agent";
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
  /** The tool surfaces to offer, by name (`SURFACES`; extension/surfaces.ts registers them); unknown names are
   * warnings. */
  tools: string[];
  /** Shorthand for `exec` in `tools`. */
  exec: boolean;
  /** Shell sessions' log files (actors/shell/logs.ts). */
  execLogs: { perLogBytes: number; totalBytes: number };
  /** Where code runs (actors/process/backends.ts): this machine, a bubblewrap sandbox, or a remote transport. */
  backend: "local" | "sandbox" | "remote";
  sandbox: { network: boolean; writable: string[]; readable: string[] };
  remote: RemoteSettings;
  /** Resource limits of each run (setrlimit in the runner; outputMiB on the host); absent: none. */
  limits: ResourceLimits;
  /** The session the `python` tool and `eval`'s Python cells run in (code_execution reaches it by this name). */
  notebookSession: string;
  /** Rich display: images sent to the model per call, and the largest one (larger ones are saved as files). */
  display: { maxImages: number; maxImageBytes: number };
  /** completion(model="smol"|"slow") in Python: `provider/model` ids (absent: the session's current model). */
  completionModels: { smol: string | undefined; slow: string | undefined };
  /** eval's language backends (a disabled one is a tool error naming it). */
  eval: { py: boolean; js: boolean };
}

export interface RemoteSettings {
  transport: "ssh" | "kubectl" | "docker" | "podman" | "command";
  /** ssh: the host; kubectl: the pod; docker/podman: the container. */
  host?: string;
  port?: number;
  user?: string;
  identityFile?: string;
  /** The remote directory Pi's working directory maps to (default: the remote login directory). */
  cwd?: string;
  /** The remote interpreter (default: the remote's python3). */
  python?: string;
  /** Extra transport arguments (ssh: `-o` options; kubectl: `-n ns`, `-c container`, ...). */
  options: string[];
  /** The argv prefix of the `command` transport. */
  argv: string[];
}

export interface ResourceLimits {
  memoryMiB?: number;
  cpuSeconds?: number;
  processes?: number;
  fileSizeMiB?: number;
  openFiles?: number;
  outputMiB?: number;
}

/** Tool surfaces this version offers. */
export const SURFACES = ["code_execution", "python", "eval", "exec"] as const;
export const DEFAULT_TOOLS = ["code_execution"];

/** Whether the shell-session tools (exec_command, write_stdin, ...) are enabled by the settings. */
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
  /** The same setting in pi-python's files and variables, used when ours is not set (extension compatibility). */
  piPython?: { key: string; env: string };
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

const SESSION_NAME = /^(?!\.+$)[A-Za-z0-9._-]{1,64}$/;
const sessionName: Parse = (raw) =>
  typeof raw === "string" && SESSION_NAME.test(raw.trim())
    ? { ok: true, value: raw.trim() }
    : { ok: false, why: "must be a session name (1-64 of A-Z a-z 0-9 . _ -, not only dots)" };

const modelId: Parse = (raw) =>
  typeof raw === "string" && /^[^/\s]+\/\S+$/.test(raw.trim())
    ? { ok: true, value: raw.trim() }
    : { ok: false, why: 'must be a model as "provider/model-id"' };

const journal: Parse = (raw) => {
  if (typeof raw !== "string" || !raw.trim()) return { ok: false, why: 'must be a file path or "off"' };
  return { ok: true, value: raw.trim() };
};

function oneOf(...names: string[]): Parse {
  return (raw) => {
    const v = typeof raw === "string" ? raw.trim().toLowerCase() : raw;
    return typeof v === "string" && names.includes(v)
      ? { ok: true, value: v }
      : { ok: false, why: `must be one of ${names.join(", ")}` };
  };
}

const text: Parse = (raw) =>
  typeof raw === "string" && raw.trim() ? { ok: true, value: raw.trim() } : { ok: false, why: "must be a non-empty string" };

const paths: Parse = (raw, fromEnv) => {
  const list = fromEnv && typeof raw === "string" ? raw.split(":").filter(Boolean) : raw;
  if (!Array.isArray(list) || list.some((p) => typeof p !== "string" || !p.startsWith("/")))
    return { ok: false, why: "must be a list of absolute paths" };
  return { ok: true, value: [...new Set(list as string[])] };
};

const strings: Parse = (raw, fromEnv) => {
  let list = raw;
  if (fromEnv && typeof raw === "string") {
    try {
      list = JSON.parse(raw);
    } catch {
      return { ok: false, why: 'must be a JSON list of strings, such as ["-o", "ConnectTimeout=5"]' };
    }
  }
  if (!Array.isArray(list) || list.some((p) => typeof p !== "string"))
    return { ok: false, why: "must be a list of strings" };
  return { ok: true, value: list };
};

const optionalLimit = (max: number, unit: string, min = 1): Parse => numberIn(min, max, unit, true);

export const SETTING_KEYS: readonly KeySpec[] = [
  {
    key: "defaultTimeout",
    env: "PI_CODE_EXECUTION_DEFAULT_TIMEOUT",
    default: 60,
    parse: numberIn(1, 86_400, "seconds"),
  },
  {
    key: "maxTimeout",
    env: "PI_CODE_EXECUTION_MAX_TIMEOUT",
    default: 3600,
    parse: numberIn(1, 86_400, "seconds"),
    piPython: { key: "maxTimeoutSeconds", env: "PI_PYTHON_MAX_TIMEOUT_SECONDS" },
  },
  {
    key: "interruptGraceMs",
    env: "PI_CODE_EXECUTION_INTERRUPT_GRACE_MS",
    default: 1000,
    parse: numberIn(0, 600_000, "milliseconds", true),
    piPython: { key: "interruptGraceMs", env: "PI_PYTHON_INTERRUPT_GRACE_MS" },
  },
  {
    key: "killGraceMs",
    env: "PI_CODE_EXECUTION_KILL_GRACE_MS",
    default: 500,
    parse: numberIn(0, 60_000, "milliseconds", true),
  },
  { key: "venvDiscovery.enabled", env: "PI_CODE_EXECUTION_VENV_DISCOVERY", default: true, parse: boolean },
  {
    key: "venvDiscovery.parentWalk",
    env: "PI_CODE_EXECUTION_VENV_PARENT_WALK",
    default: true,
    parse: boolean,
    piPython: { key: "venvParentWalk", env: "PI_PYTHON_VENV_PARENT_WALK" },
  },
  {
    key: "venvDiscovery.dirNames",
    env: "PI_CODE_EXECUTION_VENV_DIRS",
    default: [".venv", "venv"],
    parse: dirNames,
    piPython: { key: "venvDirNames", env: "PI_PYTHON_VENV_DIR_NAMES" },
  },
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
  { key: "notebookSession", env: "PI_CODE_EXECUTION_NOTEBOOK_SESSION", default: "notebook", parse: sessionName },
  {
    key: "display.maxImages",
    env: "PI_CODE_EXECUTION_MAX_IMAGES",
    default: 8,
    parse: numberIn(0, 64, "images", true),
  },
  {
    key: "display.maxImageBytes",
    env: "PI_CODE_EXECUTION_MAX_IMAGE_BYTES",
    default: 5 * 1024 * 1024,
    parse: numberIn(1024, 32 * 1024 * 1024, "bytes", true),
  },
  { key: "completionModels.smol", env: "PI_CODE_EXECUTION_SMOL_MODEL", default: undefined, parse: modelId },
  { key: "completionModels.slow", env: "PI_CODE_EXECUTION_SLOW_MODEL", default: undefined, parse: modelId },
  { key: "eval.py", env: "PI_CODE_EXECUTION_EVAL_PY", default: true, parse: boolean },
  { key: "eval.js", env: "PI_CODE_EXECUTION_EVAL_JS", default: true, parse: boolean },
  { key: "backend", env: "PI_CODE_EXECUTION_BACKEND", default: "local", parse: oneOf("local", "sandbox", "remote") },
  { key: "sandbox.network", env: "PI_CODE_EXECUTION_SANDBOX_NETWORK", default: false, parse: boolean },
  { key: "sandbox.writable", env: "PI_CODE_EXECUTION_SANDBOX_WRITABLE", default: [], parse: paths },
  { key: "sandbox.readable", env: "PI_CODE_EXECUTION_SANDBOX_READABLE", default: [], parse: paths },
  {
    key: "remote.transport",
    env: "PI_CODE_EXECUTION_REMOTE_TRANSPORT",
    default: "ssh",
    parse: oneOf("ssh", "kubectl", "docker", "podman", "command"),
  },
  { key: "remote.host", env: "PI_CODE_EXECUTION_REMOTE_HOST", default: undefined, parse: text },
  { key: "remote.port", env: "PI_CODE_EXECUTION_REMOTE_PORT", default: undefined, parse: numberIn(1, 65_535, "port", true) },
  { key: "remote.user", env: "PI_CODE_EXECUTION_REMOTE_USER", default: undefined, parse: text },
  { key: "remote.identityFile", env: "PI_CODE_EXECUTION_REMOTE_IDENTITY_FILE", default: undefined, parse: text },
  { key: "remote.cwd", env: "PI_CODE_EXECUTION_REMOTE_CWD", default: undefined, parse: text },
  { key: "remote.python", env: "PI_CODE_EXECUTION_REMOTE_PYTHON", default: undefined, parse: text },
  { key: "remote.options", env: "PI_CODE_EXECUTION_REMOTE_OPTIONS", default: [], parse: strings },
  { key: "remote.argv", env: "PI_CODE_EXECUTION_REMOTE_ARGV", default: [], parse: strings },
  { key: "limits.memoryMiB", env: "PI_CODE_EXECUTION_LIMIT_MEMORY_MIB", default: undefined, parse: optionalLimit(2 ** 30, "MiB", 32) },
  { key: "limits.cpuSeconds", env: "PI_CODE_EXECUTION_LIMIT_CPU_SECONDS", default: undefined, parse: optionalLimit(2 ** 30, "seconds") },
  { key: "limits.processes", env: "PI_CODE_EXECUTION_LIMIT_PROCESSES", default: undefined, parse: optionalLimit(2 ** 22, "processes") },
  { key: "limits.fileSizeMiB", env: "PI_CODE_EXECUTION_LIMIT_FILE_SIZE_MIB", default: undefined, parse: optionalLimit(2 ** 30, "MiB") },
  { key: "limits.openFiles", env: "PI_CODE_EXECUTION_LIMIT_OPEN_FILES", default: undefined, parse: optionalLimit(2 ** 20, "files", 16) },
  { key: "limits.outputMiB", env: "PI_CODE_EXECUTION_LIMIT_OUTPUT_MIB", default: undefined, parse: optionalLimit(2 ** 20, "MiB") },
];

const KNOWN_TOP = new Set(SETTING_KEYS.map((k) => k.key.split(".")[0]));

/** In Pi's agent directory (`$PI_CODING_AGENT_DIR`, `~` expanded, or `~/.pi/agent`), as Pi resolves it. */
export function globalSettingsPath(): string {
  return join(getAgentDir(), "pi-code-execution", "settings.json");
}

export function projectSettingsPath(cwd: string): string {
  return join(resolve(cwd), ".pi", "pi-code-execution", "settings.json");
}

/** pi-python's own files (global, project): its users' configuration applies where ours says nothing. */
export function piPythonSettingsPaths(cwd: string | undefined) {
  return {
    global: join(getAgentDir(), "pi-python", "settings.json"),
    ...(cwd ? { project: join(resolve(cwd), ".pi", "pi-python", "settings.json") } : {}),
  };
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
function readLayer(
  path: string,
  label: string,
  warnings: string[],
  knownKeys: Set<string> | undefined = KNOWN_TOP,
): Record<string, unknown> | undefined {
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
    if (knownKeys && !knownKeys.has(key)) warnings.push(`${label} settings (${path}): unknown key "${key}" is ignored`);
  }
  return obj;
}

/** Reads both files and the environment, in precedence order. Synchronous: two small files. */
export function loadSettings(cwd: string | undefined, env: NodeJS.ProcessEnv = process.env): ResolvedSettings {
  const warnings: string[] = [];
  const globalPath = globalSettingsPath();
  const projectPath = cwd ? projectSettingsPath(cwd) : undefined;
  const layers: { source: SettingSource; where: string; data: Record<string, unknown> | undefined }[] = [
    { source: "global", where: globalPath, data: readLayer(globalPath, "global", warnings) },
    ...(projectPath
      ? [{ source: "project" as const, where: projectPath, data: readLayer(projectPath, "project", warnings) }]
      : []),
  ];
  // pi-python's files: only the keys it shares with us are read (its other keys are its own business).
  const py = piPythonSettingsPaths(cwd);
  const pyLayers: { source: SettingSource; where: string; data: Record<string, unknown> | undefined }[] = [
    { source: "global", where: py.global, data: readLayer(py.global, "pi-python global", warnings, undefined) },
    ...(py.project
      ? [
          {
            source: "project" as const,
            where: py.project,
            data: readLayer(py.project, "pi-python project", warnings, undefined),
          },
        ]
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
    if (origin.source === "default" && spec.piPython) {
      const found = fromPiPython(spec, pyLayers, env, warnings);
      if (found) {
        value = found.value;
        origin = found.origin;
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
    warnings.push(`${where}: tools: unknown surface "${name}" is ignored (known: ${SURFACES.join(", ")})`);
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

/** pi-python's value for a key we do not set: its environment variable, else its project file, else its global one. */
function fromPiPython(
  spec: KeySpec,
  layers: { source: SettingSource; where: string; data: Record<string, unknown> | undefined }[],
  env: NodeJS.ProcessEnv,
  warnings: string[],
): { value: unknown; origin: SettingOrigin } | undefined {
  const { key, env: variable } = spec.piPython!;
  const raw = env[variable];
  if (raw !== undefined && (raw.trim() !== "" || spec.key === "venvDiscovery.dirNames")) {
    // pi-python: an explicitly empty PI_PYTHON_VENV_DIR_NAMES disables directory discovery.
    const r = spec.parse(raw, true);
    if (r.ok) return { value: r.value, origin: { source: "env", where: variable } };
    warnings.push(`${variable}: ${r.why} (got ${JSON.stringify(raw)}); ignored`);
  }
  for (const layer of [...layers].reverse()) {
    const v = layer.data?.[key];
    if (v === undefined) continue;
    const r = spec.parse(v, false);
    if (r.ok) return { value: r.value, origin: { source: layer.source, where: layer.where } };
    warnings.push(`pi-python ${layer.source} settings (${layer.where}): ${key} ${r.why} (got ${JSON.stringify(v)}); ignored`);
  }
  return undefined;
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
    const py = piPythonSettingsPaths(this.cwd);
    const files = [
      this.current.files.global,
      ...(this.current.files.project ? [this.current.files.project] : []),
      py.global,
      ...(py.project ? [py.project] : []),
    ];
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
