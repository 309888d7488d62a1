// The settings' keys: each key's type, default, environment variable (and pi-python's name for it, where it has one),
// and the JSON Schema (typebox) of the values it takes, with what is expected in words (`errorMessage`). The settings
// files' schemas are made of these (store/settings-schema.ts): a file is checked with its schema, a variable's text is
// read into a value and checked with its key's, and the shipped schema.json is the same schema written out.
// store/settings.ts layers the files and the environment over the defaults; docs/settings.md lists the keys.
// Past 400 lines, one concept: one table, a row per key.
import type { BackendSettings, RemoteSettings, ResourceLimits, VenvDiscovery } from "../lib/setting-types.ts";
import { Type, type TSchema } from "typebox";

export type { RemoteSettings, ResourceLimits } from "../lib/setting-types.ts";

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
  /** The longest empty relative write_stdin poll, in ms (undefined: no cap; below 5000 acts as 5000). */
  execMaxEmptyPollMs: number | undefined;
  /** Where code runs (actors/process/backends.ts): this machine, a bubblewrap sandbox, or a remote transport. */
  backend: BackendSettings["backend"];
  sandbox: BackendSettings["sandbox"];
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
  eval: { py: boolean; js: boolean; poolWidth: number; agentDepth: number };
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

/** A value (or a whole file) of a project layer that was not applied, and why (also one of the warnings). */
export interface IgnoredSetting {
  /** The project file. */
  file: string;
  /** The dotted key; absent when the whole file was ignored (an untrusted project). */
  key?: string;
  why: string;
}

export interface ResolvedSettings {
  values: Settings;
  /** Per key (dotted for nested keys), where its value came from. */
  sources: Record<string, SettingOrigin>;
  warnings: string[];
  /** The warnings about a name that is not known (a setting key, a tool surface, a value of a fixed set such as the
   * backend), each naming the closest known one: the extension says these at start-up, not only in /code-status. */
  unknown: string[];
  files: { global: string; project?: string };
  /** Whether Pi trusts the project: only then are the project layers read (and even then no boundary key). */
  trusted: boolean;
  /** Project values and files that were not applied (untrusted project, boundary keys). */
  ignored: IgnoredSetting[];
  /** Where-code-runs settings (`backend`, `sandbox.*`, `remote.*`, or the global file holding them) written so that
   * they cannot be read: nothing runs until they are fixed, rather than on a backend the user did not choose. */
  broken: BrokenSetting[];
  /** Keys whose explicit value (a file's or a variable's) was refused and not overridden by a later layer, with the
   * warning: a key whose fallback would silently remove a protection (an empty-poll cap) can refuse to act instead. */
  refused?: Record<string, string>;
}

/** A where-code-runs setting that could not be read (also one of the warnings). */
export interface BrokenSetting {
  /** The dotted key, or undefined for a global settings file that could not be read at all. */
  key?: string;
  /** The file or the environment variable. */
  where: string;
  why: string;
}

/** The settings that say where code runs: a bad value of one never falls back to the layer below (which could be
 * this machine instead of the sandbox the user chose). */
export function saysWhereCodeRuns(key: string): boolean {
  return key === "backend" || key.startsWith("sandbox.") || key.startsWith("remote.");
}

/** How a variable's text becomes a value for the key's schema (a number, a switch, a list). Text that is no such value
 * is passed on as it is, so that the schema refuses it with the key's own message. */
export type EnvForm = (text: string) => unknown;

export interface KeySpec {
  key: string;
  env: string;
  default: unknown;
  /** The values a settings file may give (a JSON Schema, built with typebox), its `errorMessage` saying what is
   * expected in words. The settings files' schemas are made of these (store/settings-schema.ts): they are what a file
   * is checked with, and what the shipped schema.json says. */
  schema: TSchema;
  /** The environment variable's text as a value for `schema`, which then checks it like a file's. */
  fromEnv: EnvForm;
  /** The same setting in pi-python's files and variables, used when ours is not set (extension compatibility). */
  piPython?: { key: string; env: string };
  /** The same setting's variable in the peer extension whose surface this key serves (pi-unified-exec's
   * `PI_UNIFIED_EXEC_*`), read when neither a file nor our own variable sets the key, so a user's environment keeps
   * working. A value it refuses is a warning like ours, and is kept in `refused`. */
  peerEnv?: string;
  /** The key decides how far the model's code reaches (where it runs, what it sees, which tools exist, which host
   * files Pi writes): a project file, which a cloned repository or sandboxed code can write, must not set it.
   * `true`: read only from the global file, flags and the environment (the project's schema has no such key).
   * `"lower"`: a project may only tighten the value below it (a smaller resource limit; a language of eval turned
   * off, never on). Keys under `sandbox.` and `remote.` are boundary keys even without it (`boundaryOf`), so a new one
   * cannot be forgotten. */
  boundary?: true | "lower";
}

/** Key prefixes whose every key is a boundary key, whatever its spec says. */
export const BOUNDARY_PREFIXES = ["sandbox.", "remote."] as const;

/** How a project layer may set this key: `undefined` freely, `true` never, `"lower"` only to tighten. */
export function boundaryOf(spec: Pick<KeySpec, "key" | "boundary">): true | "lower" | undefined {
  if (spec.boundary) return spec.boundary;
  return BOUNDARY_PREFIXES.some((p) => spec.key.startsWith(p)) ? true : undefined;
}

// The variables' forms. Each returns text it cannot read as it is, for the schema to refuse.
const envNumber: EnvForm = (text) => (text.trim() !== "" && !Number.isNaN(Number(text)) ? Number(text) : text);
const envSwitch: EnvForm = (text) => {
  const s = text.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(s)) return true;
  if (["0", "false", "no", "off"].includes(s)) return false;
  return text;
};
const envText: EnvForm = (text) => text.trim();
/** A name of a fixed set, in any case. */
const envName: EnvForm = (text) => text.trim().toLowerCase();
/** Items split at `separator`, trimmed, empty ones and duplicates dropped. */
const envList =
  (separator: string, item: EnvForm = envText): EnvForm =>
  (text) => [...new Set(text.split(separator).map(item).filter(Boolean))];
const envJson: EnvForm = (text) => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

type Form = Pick<KeySpec, "schema" | "fromEnv">;

function numberIn(min: number, max: number, unit: string, integer = false): Form {
  const options = {
    minimum: min,
    maximum: max,
    errorMessage: `must be ${integer ? "an integer" : "a number"} of ${unit} from ${min} to ${max}`,
  };
  return { schema: integer ? Type.Integer(options) : Type.Number(options), fromEnv: envNumber };
}

const boolean: Form = { schema: Type.Boolean({ errorMessage: "must be true or false" }), fromEnv: envSwitch };

/** Something besides white space, and none around it. */
const TRIMMED = "^\\S(?:[\\s\\S]*\\S)?$";

const dirNames: Form = {
  schema: Type.Array(Type.String({ pattern: "^(?!\\.\\.?$)[^/]+$" }), {
    errorMessage: 'must be a list of directory names (no slashes), such as [".venv", "venv"]',
  }),
  fromEnv: envList(","),
};

// The schema names the known surfaces (an editor offers them); loading warns about an unknown one and keeps the
// rest (store/settings-schema.ts, `checkValue`).
const surfaceList: Form = {
  schema: Type.Array(Type.Enum([...SURFACES]), {
    errorMessage: `must be a list of tool surface names (${SURFACES.join(", ")})`,
  }),
  fromEnv: envList(",", envName),
};

const sessionName: Form = {
  schema: Type.String({
    pattern: "^(?!\\.+$)[A-Za-z0-9._-]{1,64}$",
    errorMessage: "must be a session name (1-64 of A-Z a-z 0-9 . _ -, not only dots)",
  }),
  fromEnv: envText,
};

const modelId: Form = {
  schema: Type.String({ pattern: "^[^/\\s]+\\/\\S+$", errorMessage: 'must be a model as "provider/model-id"' }),
  fromEnv: envText,
};

const journal: Form = {
  schema: Type.String({ pattern: TRIMMED, errorMessage: 'must be a file path or "off" (no spaces around it)' }),
  fromEnv: envText,
};

function oneOf(...names: string[]): Form {
  return { schema: Type.Enum(names, { errorMessage: `must be one of ${names.join(", ")}` }), fromEnv: envName };
}

const text: Form = {
  schema: Type.String({ pattern: TRIMMED, errorMessage: "must be a non-empty string (no spaces around it)" }),
  fromEnv: envText,
};

const paths: Form = {
  schema: Type.Array(Type.String({ pattern: "^/" }), { errorMessage: "must be a list of absolute paths" }),
  fromEnv: envList(":"),
};

const envNames: Form = {
  schema: Type.Array(Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]*$" }), {
    errorMessage: 'must be a list of environment variable names, such as ["HF_TOKEN", "CUDA_VISIBLE_DEVICES"]',
  }),
  fromEnv: envList(","),
};

const strings: Form = {
  schema: Type.Array(Type.String(), {
    errorMessage: 'must be a list of strings (its variable: a JSON list, such as ["-o", "ConnectTimeout=5"])',
  }),
  fromEnv: envJson,
};

const optionalLimit = (max: number, unit: string, min = 1): Form => numberIn(min, max, unit, true);

export const SETTING_KEYS: readonly KeySpec[] = [
  {
    key: "defaultTimeout",
    env: "PI_CODE_EXECUTION_DEFAULT_TIMEOUT",
    default: 60,
    ...numberIn(1, 86_400, "seconds"),
  },
  {
    key: "maxTimeout",
    env: "PI_CODE_EXECUTION_MAX_TIMEOUT",
    default: 3600,
    ...numberIn(1, 86_400, "seconds"),
    piPython: { key: "maxTimeoutSeconds", env: "PI_PYTHON_MAX_TIMEOUT_SECONDS" },
  },
  {
    key: "interruptGraceMs",
    env: "PI_CODE_EXECUTION_INTERRUPT_GRACE_MS",
    default: 1000,
    ...numberIn(0, 600_000, "milliseconds", true),
    piPython: { key: "interruptGraceMs", env: "PI_PYTHON_INTERRUPT_GRACE_MS" },
  },
  {
    key: "killGraceMs",
    env: "PI_CODE_EXECUTION_KILL_GRACE_MS",
    default: 500,
    ...numberIn(0, 60_000, "milliseconds", true),
  },
  { key: "venvDiscovery.enabled", env: "PI_CODE_EXECUTION_VENV_DISCOVERY", default: true, ...boolean },
  {
    key: "venvDiscovery.parentWalk",
    env: "PI_CODE_EXECUTION_VENV_PARENT_WALK",
    default: true,
    ...boolean,
    piPython: { key: "venvParentWalk", env: "PI_PYTHON_VENV_PARENT_WALK" },
  },
  {
    key: "venvDiscovery.dirNames",
    env: "PI_CODE_EXECUTION_VENV_DIRS",
    default: [".venv", "venv"],
    ...dirNames,
    piPython: { key: "venvDirNames", env: "PI_PYTHON_VENV_DIR_NAMES" },
  },
  { key: "journal", env: "PI_CODE_EXECUTION_JOURNAL", default: undefined, ...journal, boundary: true },
  { key: "spareRunners", env: "PI_CODE_EXECUTION_SPARE_RUNNERS", default: true, ...boolean },
  { key: "inspector.autoStart", env: "PI_CODE_EXECUTION_INSPECT", default: false, ...boolean },
  {
    key: "inspector.port",
    env: "PI_CODE_EXECUTION_INSPECT_PORT",
    default: 0,
    ...numberIn(0, 65_535, "port", true),
  },
  { key: "moduleReload", env: "PI_CODE_EXECUTION_MODULE_RELOAD", default: true, ...boolean },
  { key: "tools", env: "PI_CODE_EXECUTION_TOOLS", default: DEFAULT_TOOLS, ...surfaceList, boundary: true },
  { key: "exec", env: "PI_CODE_EXECUTION_EXEC", default: false, ...boolean, boundary: true },
  {
    key: "execLogs.perLogBytes",
    env: "PI_CODE_EXECUTION_EXEC_LOG_BYTES",
    default: 64 * 1024 * 1024,
    ...numberIn(1024, 2 ** 40, "bytes", true),
  },
  {
    key: "execLogs.totalBytes",
    env: "PI_CODE_EXECUTION_EXEC_LOGS_TOTAL_BYTES",
    default: 512 * 1024 * 1024,
    ...numberIn(1024 * 1024, 2 ** 44, "bytes", true),
  },
  {
    key: "execMaxEmptyPollMs",
    env: "PI_CODE_EXECUTION_EXEC_MAX_EMPTY_POLL_MS",
    peerEnv: "PI_UNIFIED_EXEC_MAX_EMPTY_POLL_MS",
    default: undefined,
    schema: Type.Number({
      exclusiveMinimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      errorMessage: `must be a positive number of milliseconds up to ${Number.MAX_SAFE_INTEGER} (below 5000 acts as 5000)`,
    }),
    fromEnv: envNumber,
  },
  { key: "notebookSession", env: "PI_CODE_EXECUTION_NOTEBOOK_SESSION", default: "notebook", ...sessionName },
  {
    key: "display.maxImages",
    env: "PI_CODE_EXECUTION_MAX_IMAGES",
    default: 8,
    ...numberIn(0, 64, "images", true),
  },
  {
    key: "display.maxImageBytes",
    env: "PI_CODE_EXECUTION_MAX_IMAGE_BYTES",
    default: 5 * 1024 * 1024,
    ...numberIn(1024, 32 * 1024 * 1024, "bytes", true),
  },
  { key: "completionModels.smol", env: "PI_CODE_EXECUTION_SMOL_MODEL", default: undefined, ...modelId },
  { key: "completionModels.slow", env: "PI_CODE_EXECUTION_SLOW_MODEL", default: undefined, ...modelId },
  { key: "eval.py", env: "PI_CODE_EXECUTION_EVAL_PY", default: true, ...boolean, boundary: "lower" },
  { key: "eval.js", env: "PI_CODE_EXECUTION_EVAL_JS", default: true, ...boolean, boundary: "lower" },
  {
    key: "eval.poolWidth",
    env: "PI_CODE_EXECUTION_EVAL_POOL_WIDTH",
    default: 32,
    ...numberIn(0, 1024, "items", true),
  },
  {
    key: "eval.agentDepth",
    env: "PI_CODE_EXECUTION_EVAL_AGENT_DEPTH",
    default: 3,
    ...numberIn(0, 16, "levels", true),
  },
  {
    key: "backend",
    env: "PI_CODE_EXECUTION_BACKEND",
    default: "local",
    ...oneOf("local", "sandbox", "remote"),
    boundary: true,
  },
  { key: "sandbox.network", env: "PI_CODE_EXECUTION_SANDBOX_NETWORK", default: false, ...boolean, boundary: true },
  { key: "sandbox.writable", env: "PI_CODE_EXECUTION_SANDBOX_WRITABLE", default: [], ...paths, boundary: true },
  { key: "sandbox.readable", env: "PI_CODE_EXECUTION_SANDBOX_READABLE", default: [], ...paths, boundary: true },
  { key: "sandbox.env", env: "PI_CODE_EXECUTION_SANDBOX_ENV", default: [], ...envNames, boundary: true },
  {
    key: "remote.transport",
    env: "PI_CODE_EXECUTION_REMOTE_TRANSPORT",
    default: "ssh",
    ...oneOf("ssh", "kubectl", "docker", "podman", "command"),
    boundary: true,
  },
  { key: "remote.host", env: "PI_CODE_EXECUTION_REMOTE_HOST", default: undefined, ...text, boundary: true },
  {
    key: "remote.port",
    env: "PI_CODE_EXECUTION_REMOTE_PORT",
    default: undefined,
    ...numberIn(1, 65_535, "port", true),
    boundary: true,
  },
  { key: "remote.user", env: "PI_CODE_EXECUTION_REMOTE_USER", default: undefined, ...text, boundary: true },
  {
    key: "remote.identityFile",
    env: "PI_CODE_EXECUTION_REMOTE_IDENTITY_FILE",
    default: undefined,
    ...text,
    boundary: true,
  },
  { key: "remote.cwd", env: "PI_CODE_EXECUTION_REMOTE_CWD", default: undefined, ...text, boundary: true },
  { key: "remote.python", env: "PI_CODE_EXECUTION_REMOTE_PYTHON", default: undefined, ...text, boundary: true },
  { key: "remote.options", env: "PI_CODE_EXECUTION_REMOTE_OPTIONS", default: [], ...strings, boundary: true },
  { key: "remote.argv", env: "PI_CODE_EXECUTION_REMOTE_ARGV", default: [], ...strings, boundary: true },
  {
    key: "limits.memoryMiB",
    env: "PI_CODE_EXECUTION_LIMIT_MEMORY_MIB",
    default: undefined,
    ...optionalLimit(2 ** 30, "MiB", 32),
    boundary: "lower",
  },
  {
    key: "limits.cpuSeconds",
    env: "PI_CODE_EXECUTION_LIMIT_CPU_SECONDS",
    default: undefined,
    ...optionalLimit(2 ** 30, "seconds"),
    boundary: "lower",
  },
  {
    key: "limits.processes",
    env: "PI_CODE_EXECUTION_LIMIT_PROCESSES",
    default: undefined,
    ...optionalLimit(2 ** 22, "processes"),
    boundary: "lower",
  },
  {
    key: "limits.fileSizeMiB",
    env: "PI_CODE_EXECUTION_LIMIT_FILE_SIZE_MIB",
    default: undefined,
    ...optionalLimit(2 ** 30, "MiB"),
    boundary: "lower",
  },
  {
    key: "limits.openFiles",
    env: "PI_CODE_EXECUTION_LIMIT_OPEN_FILES",
    default: undefined,
    ...optionalLimit(2 ** 20, "files", 16),
    boundary: "lower",
  },
  {
    key: "limits.outputMiB",
    env: "PI_CODE_EXECUTION_LIMIT_OUTPUT_MIB",
    default: undefined,
    ...optionalLimit(2 ** 20, "MiB"),
    boundary: "lower",
  },
];
