// Settings: defaults, then the global file `<Pi's agent directory>/pi-code-execution/settings.json`,
// then the project file `<cwd>/.pi/pi-code-execution/settings.json` (`.pi`: Pi's CONFIG_DIR_NAME), then environment
// variables. Every value reports where it came from; a malformed file or value becomes a warning and the value falls
// back to the layer below. Each file is checked with its JSON Schema (store/settings-schema.ts: the shipped schema.json and
// schema.project.json), each variable with its key's part of it. Both files are watched (a stat of each, four
// times a second), so edits apply without restarting Pi. docs/settings.md lists the keys.
// Trust: the project files are read only when Pi trusts the project, and never for a boundary key (backend,
// sandbox, remote, tools, exec, journal; limits and eval's languages only tightened): a cloned repository or code in
// the sandbox can write them, and must not move the boundary. docs/settings.md, "Trust and boundary keys".
// Past 400 lines, one concept: layering, trust and watching decide together which value wins and where it came
// from; the keys are store/setting-keys.ts and the schemas store/settings-schema.ts.
import { existsSync, mkdirSync, readFileSync, renameSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { agentDir, configDirName } from "./agent-dir.ts";
import { didYouMean } from "../lib/closest.ts";
import {
  boundaryOf,
  SETTING_KEYS,
  saysWhereCodeRuns,
  SURFACES,
  type BrokenSetting,
  type IgnoredSetting,
  type KeySpec,
  type ResolvedSettings,
  type SettingOrigin,
  type Settings,
  type SettingSource,
} from "./setting-keys.ts";
import { checkFile, checkValue, type FileCheck } from "./settings-schema.ts";

export * from "./setting-keys.ts";

export function globalSettingsPath(): string {
  return join(agentDir(), "pi-code-execution", "settings.json");
}

export function projectSettingsPath(cwd: string): string {
  return join(resolve(cwd), configDirName(), "pi-code-execution", "settings.json");
}

/** pi-python's own files (global, project): its users' configuration applies where ours says nothing. */
export function piPythonSettingsPaths(cwd: string | undefined) {
  return {
    global: join(agentDir(), "pi-python", "settings.json"),
    ...(cwd ? { project: join(resolve(cwd), configDirName(), "pi-python", "settings.json") } : {}),
  };
}

/** Where pi-python kept its global file before it moved under Pi's agent directory (`~/.pi`, whatever Pi's folder
 * is called now: pi-python's own rule). */
export function legacyPiPythonSettingsPath(): string {
  return join(homedir(), ".pi", "pi-python", "settings.json");
}

/** Moves pi-python's old global file (`~/.pi/pi-python/settings.json`) to its place under Pi's agent directory when
 * the new one does not exist, as pi-python does on upgrade. Returns what happened, for a notice; a failure leaves the
 * old file in place, and `loadSettings` keeps reading it and warns (so /python-status says it). */
export function migratePiPythonSettings(): string | undefined {
  const legacy = legacyPiPythonSettingsPath();
  const target = piPythonSettingsPaths(undefined).global;
  if (resolve(legacy) === resolve(target) || !existsSync(legacy) || existsSync(target)) return undefined;
  try {
    mkdirSync(dirname(target), { recursive: true });
    renameSync(legacy, target);
    return `pi-python's settings moved: ${legacy} -> ${target}`;
  } catch (e) {
    return `pi-python's settings could not be moved from ${legacy} to ${target} (${(e as Error).message}); the old file is still read`;
  }
}

function set(obj: Record<string, unknown>, dotted: string, value: unknown): void {
  const parts = dotted.split(".");
  let t = obj;
  for (const p of parts.slice(0, -1)) t = (t[p] ??= {}) as Record<string, unknown>;
  t[parts[parts.length - 1]] = value;
}

/** A settings file as an object, or a warning. A missing file is simply no layer. */
/** A settings file's object; undefined when it is missing or empty, or (said in `warnings`, and passed to
 * `unreadable` when given) when it cannot be read or is not a JSON object. */
function readJson(
  path: string,
  label: string,
  warnings: string[],
  unreadable?: (why: string) => void,
): Record<string, unknown> | undefined {
  const refuse = (why: string, what: string) => {
    warnings.push(`${label} settings (${path}) ${why}; ${unreadable ? UNREADABLE_GLOBAL : what}`);
    unreadable?.(why);
    return undefined;
  };
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ENOTDIR") return refuse(`cannot be read: ${code}`, "ignored");
    return undefined;
  }
  if (!text.trim()) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    return refuse(`are not valid JSON (${(e as Error).message})`, "the whole file is ignored");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    return refuse("must be a JSON object", "the whole file is ignored");
  return parsed as Record<string, unknown>;
}

/** What an unreadable global file means: it may say where code runs, so nothing runs until it is fixed. */
const UNREADABLE_GLOBAL =
  "the whole file is ignored, and as it may say where code runs (backend, sandbox, remote), nothing runs until it is fixed";
/** What a bad where-code-runs value means. */
const NOTHING_RUNS = "nothing runs until it is fixed (where code runs never falls back to another backend)";

export interface LoadOptions {
  /** Pi's trust decision for the project (`ctx.isProjectTrusted()`): the project files are read only when true. */
  trusted?: boolean;
}

/** A layer's file: pi-python's as read (`data`), ours checked with its schema (`checked`). */
type Layer = { source: SettingSource; where: string; data?: Record<string, unknown>; checked?: FileCheck };

/** How to trust a project, for the messages that say its files were ignored. */
export const TRUST_HINT = "/trust in Pi, then restart it; or start Pi with --approve";

const BOUNDARY_WHY = "is a boundary setting and is read only from the global settings, flags or the environment";

/** Reads both files (the project's only for a trusted project) and the environment, in precedence order.
 * Synchronous: small files. A project never sets a boundary key (`boundaryOf`): what it says there is ignored,
 * with a warning naming the key, the file and why. */
export function loadSettings(
  cwd: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  options: LoadOptions = {},
): ResolvedSettings {
  const trusted = options.trusted === true;
  const warnings: string[] = [];
  const unknown: string[] = [];
  const ignored: IgnoredSetting[] = [];
  const broken: BrokenSetting[] = [];
  const globalPath = globalSettingsPath();
  const projectPath = cwd ? projectSettingsPath(cwd) : undefined;
  const py = piPythonSettingsPaths(cwd);
  // An untrusted project's files are not even parsed: one line per file that exists says so.
  const project = (path: string | undefined, label: string, ours: boolean): Layer[] => {
    if (!path) return [];
    if (trusted)
      return [
        ours ? ourFile("project", path) : { source: "project", where: path, data: readJson(path, label, warnings) },
      ];
    if (isFile(path)) {
      const why = `the project is not trusted (${TRUST_HINT})`;
      ignored.push({ file: path, why });
      warnings.push(`${label} settings (${path}) are ignored: ${why}`);
    }
    return [];
  };
  const layers: Layer[] = [ourFile("global", globalPath), ...project(projectPath, "project", true)];
  // pi-python's files: only the keys it shares with us are read (its other keys are its own business).
  // pi-python's old global file is read while it could not be moved to the new place (migratePiPythonSettings).
  const legacy = legacyPiPythonSettingsPath();
  const stuck = resolve(legacy) !== resolve(py.global) && !existsSync(py.global) && existsSync(legacy);
  const pyGlobal = stuck ? legacy : py.global;
  if (stuck)
    warnings.push(
      `pi-python's settings are still at their old place (${legacy}): they could not be moved to ${py.global}; move the file there`,
    );
  const pyLayers: Layer[] = [
    { source: "global", where: pyGlobal, data: readJson(pyGlobal, "pi-python global", warnings) },
    ...project(py.project, "pi-python project", false),
  ];
  const values: Record<string, unknown> = {};
  const sources: Record<string, SettingOrigin> = {};
  const refused: Record<string, string> = {};
  for (const spec of SETTING_KEYS) {
    const boundary = boundaryOf(spec);
    let value = spec.default;
    let origin: SettingOrigin = { source: "default" };
    // An explicit value that was refused and not overridden by a later layer: the key's `refused` warning, and for a
    // where-code-runs key its `broken` entry.
    let refusal: { where: string; why: string; warning: string } | undefined;
    for (const layer of layers) {
      // A project's boundary key is not in its schema: said (and ignored) when the file was read.
      const entry = layer.checked?.values.get(spec.key);
      if (!entry) continue;
      const r = entry.verdict;
      if (!r.ok) {
        const got = `${spec.key} ${r.why} (got ${JSON.stringify(entry.raw)})`;
        const w = saysWhereCodeRuns(spec.key)
          ? `${layer.source} settings (${layer.where}): ${got}; ${NOTHING_RUNS}`
          : `${layer.source} settings (${layer.where}): ${got}; using ${describe(value)} from ${origin.source}`;
        warnings.push(w);
        refusal = { where: layer.where!, why: got, warning: w };
        if (r.unknown) unknown.push(w);
      } else if (layer.source === "project" && boundary === "lower" && !lowers(r.value, value)) {
        ignore(
          layer.where,
          spec.key,
          `${JSON.stringify(r.value)} would loosen ${JSON.stringify(value)} from ${origin.source}, and a project may only tighten it (lower a limit, turn a switch off)`,
        );
      } else {
        value = r.value;
        origin = { source: layer.source, where: layer.where };
        refusal = undefined;
      }
    }
    // Ours first; the peer's variable (pi-unified-exec's) only where nothing of ours set the key.
    for (const variable of [spec.env, ...(spec.peerEnv ? [spec.peerEnv] : [])]) {
      if (variable !== spec.env && origin.source !== "default") break;
      const fromEnv = env[variable];
      if (fromEnv === undefined || fromEnv.trim() === "") continue;
      const r = checkValue(spec.schema, spec.fromEnv(fromEnv));
      if (r.ok) {
        value = r.value;
        origin = { source: "env", where: variable };
        refusal = undefined;
      } else {
        const got = `${spec.key} ${r.why} (got ${JSON.stringify(fromEnv)})`;
        const w = saysWhereCodeRuns(spec.key)
          ? `${variable}: ${got}; ${NOTHING_RUNS}`
          : `${variable}: ${got}; using ${describe(value)} from ${origin.source}`;
        warnings.push(w);
        refusal = { where: variable, why: got, warning: w };
        if (r.unknown) unknown.push(w);
      }
    }
    if (refusal) {
      refused[spec.key] = refusal.warning;
      if (saysWhereCodeRuns(spec.key)) broken.push({ key: spec.key, where: refusal.where, why: refusal.why });
    }
    if (origin.source === "default" && spec.piPython) {
      // A boundary key would come from pi-python's global file or variable only (none is shared today).
      const found = fromPiPython(
        spec,
        boundary ? pyLayers.filter((l) => l.source !== "project") : pyLayers,
        env,
        warnings,
      );
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
    const w = `${where}: tools: unknown surface "${name}" is ignored (known: ${SURFACES.join(", ")})${didYouMean(name, SURFACES)}`;
    warnings.push(w);
    unknown.push(w);
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
    unknown,
    files: { global: globalPath, ...(projectPath ? { project: projectPath } : {}) },
    trusted,
    ignored,
    broken,
    refused,
  };

  function ignore(file: string, key: string, why: string): void {
    ignored.push({ file, key, why });
    warnings.push(`project settings (${file}): ${key} ${why}; ignored`);
  }

  /** One of our files, checked with its schema. What is not a key of it is said here, once: an unknown key (with the
   * closest known one), a project's boundary key (ignored), a group that is not an object. Each key's value is judged
   * in the loop above, where a bad one falls back to the layer below. */
  function ourFile(file: "global" | "project", path: string): Layer {
    const unreadable = (why: string) => broken.push({ where: path, why: `the file ${why}` });
    const data = readJson(path, file, warnings, file === "global" ? unreadable : undefined);
    const checked = data ? checkFile(file, data) : undefined;
    for (const { key, known } of checked?.unknown ?? []) {
      const prefix = key.slice(0, key.lastIndexOf(".") + 1);
      const w = `${file} settings (${path}): unknown key "${key}" is ignored${didYouMean(key.slice(prefix.length), known, prefix)}`;
      warnings.push(w);
      unknown.push(w);
    }
    for (const key of checked?.elsewhere ?? []) ignore(path, key, BOUNDARY_WHY);
    for (const [key, { raw, verdict }] of checked?.values ?? [])
      if (!verdict.ok && !SETTING_KEYS.some((spec) => spec.key === key))
        warnings.push(`${file} settings (${path}): ${key} ${verdict.why} (got ${JSON.stringify(raw)}); ignored`);
    return { source: file, where: path, checked };
  }
}

/** A project's value tightens the one below: a limit where there was none or a smaller one, a switch turned off. */
function lowers(next: unknown, current: unknown): boolean {
  if (typeof next === "boolean") return next === false || current === true;
  return current === undefined || (typeof next === "number" && typeof current === "number" && next <= current);
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** pi-python's value for a key we do not set: its environment variable, else its project file, else its global one. */
function fromPiPython(
  spec: KeySpec,
  layers: Layer[],
  env: NodeJS.ProcessEnv,
  warnings: string[],
): { value: unknown; origin: SettingOrigin } | undefined {
  const { key, env: variable } = spec.piPython!;
  const raw = env[variable];
  if (raw !== undefined && (raw.trim() !== "" || spec.key === "venvDiscovery.dirNames")) {
    // pi-python: an explicitly empty PI_PYTHON_VENV_DIR_NAMES disables directory discovery.
    const r = checkValue(spec.schema, spec.fromEnv(raw));
    if (r.ok) return { value: r.value, origin: { source: "env", where: variable } };
    warnings.push(`${variable}: ${r.why} (got ${JSON.stringify(raw)}); ignored`);
  }
  for (const layer of [...layers].reverse()) {
    const v = layer.data?.[key];
    if (v === undefined) continue;
    const r = checkValue(spec.schema, v);
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
  private readonly options: LoadOptions;
  private readonly listeners = new Set<(s: ResolvedSettings) => void>();
  private poll: ReturnType<typeof setInterval> | undefined;

  /** `options.trusted` is fixed for the store's life (Pi decides trust once per session). */
  constructor(cwd: string | undefined, env: () => NodeJS.ProcessEnv = () => process.env, options: LoadOptions = {}) {
    this.cwd = cwd;
    this.env = env;
    this.options = { ...options };
    this.current = loadSettings(cwd, env(), this.options);
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
    this.current = loadSettings(this.cwd, this.env(), this.options);
    for (const fn of this.listeners) {
      try {
        fn(this.current);
      } catch {
        // A listener's failure must not stop the others.
      }
    }
    return this.current;
  }

  /** Starts watching the files (the four of ours and pi-python's, whether or not they or their directories exist
   * yet): every POLL_MS each is stat'ed, and one whose identity, size or modification time changed (written, created,
   * removed, replaced by a rename) is read again, once per burst of writes. Nothing else is looked at, so a settings
   * directory missing under a busy folder (the system's temp directory) costs the same four stats; and no change is
   * missed, as a file-system watcher could miss a write while it was still setting up a directory that had just
   * appeared. An untrusted project's files are watched too, only so that the warning saying they are ignored stays
   * current. */
  watch(): Promise<void> {
    if (this.poll) return Promise.resolve();
    const py = piPythonSettingsPaths(this.cwd);
    const files = [
      this.current.files.global,
      ...(this.current.files.project ? [this.current.files.project] : []),
      py.global,
      ...(py.project ? [py.project] : []),
    ];
    const signature = (f: string) => {
      try {
        const st = statSync(f);
        return `${st.ino}:${st.size}:${st.mtimeMs}`;
      } catch {
        return "missing";
      }
    };
    const seen = new Map(files.map((f) => [f, signature(f)]));
    let burst = false;
    this.poll = setInterval(() => {
      let changed = false;
      for (const f of files) {
        const now = signature(f);
        if (seen.get(f) !== now) changed = true;
        seen.set(f, now);
      }
      // Editors write in bursts: the file is read once it held still for a poll.
      if (changed) burst = true;
      else if (burst) {
        burst = false;
        this.reload();
      }
    }, POLL_MS);
    this.poll.unref();
    return Promise.resolve();
  }

  async close(): Promise<void> {
    clearInterval(this.poll);
    this.poll = undefined;
    this.listeners.clear();
  }
}

/** How often the settings files are stat'ed (a change applies within two of these). */
export const POLL_MS = 250;
