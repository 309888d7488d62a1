// Settings: defaults, then the global file `<Pi's agent directory>/pi-code-execution/settings.json`,
// then the project file `<cwd>/.pi/pi-code-execution/settings.json`, then environment variables. Every value
// reports where it came from; a malformed file or value becomes a warning and the value falls back to the layer
// below. Both files are watched (chokidar), so edits apply without restarting Pi. docs/settings.md lists the keys.
import { readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { watch, type FSWatcher } from "chokidar";
import { getAgentDir } from "@earendil-works/pi-coding-agent";
import {
  KNOWN_TOP,
  SETTING_KEYS,
  SURFACES,
  type KeySpec,
  type ResolvedSettings,
  type SettingOrigin,
  type Settings,
  type SettingSource,
} from "./setting-keys.ts";

export * from "./setting-keys.ts";

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
    warnings.push(
      `pi-python ${layer.source} settings (${layer.where}): ${key} ${r.why} (got ${JSON.stringify(v)}); ignored`,
    );
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
