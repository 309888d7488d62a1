// The settings' keys: each key's type, default, environment variable (and pi-python's name for it, where it has one)
// and how a raw value is checked (store/settings.ts layers the files and the environment over these). docs/settings.md
// lists them.
import type { VenvDiscovery } from "../actors/interpreter/interpreter.ts";
import type { BackendSettings, RemoteSettings, ResourceLimits } from "../actors/process/backend-settings.ts";

export type { RemoteSettings, ResourceLimits } from "../actors/process/backend-settings.ts";

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
  eval: { py: boolean; js: boolean };
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

export interface KeySpec {
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
  typeof raw === "string" && raw.trim()
    ? { ok: true, value: raw.trim() }
    : { ok: false, why: "must be a non-empty string" };

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
  {
    key: "remote.port",
    env: "PI_CODE_EXECUTION_REMOTE_PORT",
    default: undefined,
    parse: numberIn(1, 65_535, "port", true),
  },
  { key: "remote.user", env: "PI_CODE_EXECUTION_REMOTE_USER", default: undefined, parse: text },
  { key: "remote.identityFile", env: "PI_CODE_EXECUTION_REMOTE_IDENTITY_FILE", default: undefined, parse: text },
  { key: "remote.cwd", env: "PI_CODE_EXECUTION_REMOTE_CWD", default: undefined, parse: text },
  { key: "remote.python", env: "PI_CODE_EXECUTION_REMOTE_PYTHON", default: undefined, parse: text },
  { key: "remote.options", env: "PI_CODE_EXECUTION_REMOTE_OPTIONS", default: [], parse: strings },
  { key: "remote.argv", env: "PI_CODE_EXECUTION_REMOTE_ARGV", default: [], parse: strings },
  {
    key: "limits.memoryMiB",
    env: "PI_CODE_EXECUTION_LIMIT_MEMORY_MIB",
    default: undefined,
    parse: optionalLimit(2 ** 30, "MiB", 32),
  },
  {
    key: "limits.cpuSeconds",
    env: "PI_CODE_EXECUTION_LIMIT_CPU_SECONDS",
    default: undefined,
    parse: optionalLimit(2 ** 30, "seconds"),
  },
  {
    key: "limits.processes",
    env: "PI_CODE_EXECUTION_LIMIT_PROCESSES",
    default: undefined,
    parse: optionalLimit(2 ** 22, "processes"),
  },
  {
    key: "limits.fileSizeMiB",
    env: "PI_CODE_EXECUTION_LIMIT_FILE_SIZE_MIB",
    default: undefined,
    parse: optionalLimit(2 ** 30, "MiB"),
  },
  {
    key: "limits.openFiles",
    env: "PI_CODE_EXECUTION_LIMIT_OPEN_FILES",
    default: undefined,
    parse: optionalLimit(2 ** 20, "files", 16),
  },
  {
    key: "limits.outputMiB",
    env: "PI_CODE_EXECUTION_LIMIT_OUTPUT_MIB",
    default: undefined,
    parse: optionalLimit(2 ** 20, "MiB"),
  },
];

export const KNOWN_TOP = new Set(SETTING_KEYS.map((k) => k.key.split(".")[0]));

/** In Pi's agent directory (`$PI_CODING_AGENT_DIR`, `~` expanded, or `~/.pi/agent`), as Pi resolves it. */
