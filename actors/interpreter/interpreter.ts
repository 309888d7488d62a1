// Interpreter discovery. Order: the python_set_interpreter selection, the --python flag, PI_PYTHON,
// $VIRTUAL_ENV/bin/python, a `.venv`/`venv` in the working directory or a parent (stopping after the repository
// root), then python3 on PATH. Paths (absolute, relative to the working directory, `~`) and bare command names are
// accepted; a directory is refused with a hint naming the interpreter inside it. Each interpreter is validated once
// and resolved to the executable it reports (`sys.executable`), so a pyenv shim costs nothing per run.
// The probe runs where code runs, through the backend's `spawn` (a planted interpreter must not run on the host
// when the user chose a sandbox or a remote); its results are kept per backend. Under a remote backend nothing
// local is looked at: a selection is a path or command on the remote side, and the default is `remote.python`.
// Past 400 lines, one concept: the resolver's order of places, the probe that validates what it finds and the
// per-backend memory of answers decide together which interpreter a run gets; split, that order would be read across
// files.
import { accessSync, constants, statSync } from "node:fs";
import { access, stat } from "node:fs/promises";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { fail, ok, type Result } from "../../lib/result.ts";
import type { VenvDiscovery } from "../../lib/setting-types.ts";
import { collectChild } from "../process/children.ts";
import { findProgram } from "../process/program-path.ts";
import { localOperations, type ProcessOperations } from "../process/operations.ts";

export type InterpreterSource = "tool" | "flag" | "PI_PYTHON" | "VIRTUAL_ENV" | "venv" | "PATH" | "remote";

export type { VenvDiscovery };

export const DEFAULT_VENV_DISCOVERY: VenvDiscovery = { enabled: true, parentWalk: true, dirNames: [".venv", "venv"] };

/** What was asked for, before validation. */
export interface InterpreterRequest {
  command: string;
  source: InterpreterSource;
  /** Relative paths resolve from here. */
  base: string;
}

/** A validated interpreter. */
export interface Interpreter {
  /** `sys.executable`: what every runner is started with. */
  executable: string;
  version: string;
  source: InterpreterSource;
  /** The path or command as given. */
  requested: string;
  /** The virtual environment's root (`sys.prefix`) when the interpreter belongs to one. */
  venv?: string;
}

/** Why an interpreter cannot be used, and a backend hint id when the backend says more (remote_python, ...). */
export interface InterpreterFailure {
  message: string;
  hint?: string;
  /** The backend could not start anything (no interpreter was tried). */
  backend?: boolean;
}

export interface Probe {
  executable: string;
  version: string;
  venv?: string;
}

const PROBE =
  "import sys; print(sys.executable); print('%d.%d.%d' % sys.version_info[:3]); print(sys.prefix if sys.prefix != getattr(sys, 'base_prefix', sys.prefix) else '')";

/** The probe's time bound: an interpreter that does not answer within it is refused. */
export const PROBE_TIMEOUT_MS = 15_000;

/** What one backend learnt of interpreters: a result found on this machine says nothing of the same path inside a
 * sandbox or on a remote (and must not validate a run there), so each backend has its own. */
interface BackendCache {
  probes: Map<string, Promise<Result<Probe, InterpreterFailure>>>;
  known: Map<string, { version: string; venv?: string }>;
}
const caches = new WeakMap<ProcessOperations, BackendCache>();
function cacheOf(ops: ProcessOperations): BackendCache {
  let c = caches.get(ops);
  if (!c) caches.set(ops, (c = { probes: new Map(), known: new Map() }));
  return c;
}

/** The version of an executable validated on this backend (probes fill it in). */
export function knownVersion(executable: string, ops: ProcessOperations = localOperations): string | undefined {
  return cacheOf(ops).known.get(executable)?.version;
}

/** What this process knows of an executable on this backend: its version and virtual environment. */
export function knownInterpreter(
  executable: string,
  ops: ProcessOperations = localOperations,
): { version: string; venv?: string } | undefined {
  return cacheOf(ops).known.get(executable);
}

/** Records an interpreter validated another way (a PEP 723 environment's, built from a known base). */
export function rememberInterpreter(
  executable: string,
  info: { version: string; venv?: string },
  ops: ProcessOperations = localOperations,
): void {
  cacheOf(ops).known.set(executable, info);
}

function expandHome(p: string): string {
  return p === "~" ? homedir() : p.startsWith("~/") ? join(homedir(), p.slice(2)) : p;
}

const isFile = async (p: string) => (await stat(p).catch(() => undefined))?.isFile() === true;
/** Discovery's checks are a handful of stats: synchronous, so the host can re-check a cached answer at the door. */
const isFileNow = (p: string) => statSync(p, { throwIfNoEntry: false })?.isFile() === true;
const existsNow = (p: string) => statSync(p, { throwIfNoEntry: false }) !== undefined;

/** The interpreter inside a directory a user named (a venv, its bin/, a Python prefix), if one is there. */
async function interpreterInside(dir: string): Promise<string | undefined> {
  for (const rel of ["bin/python3", "bin/python", "python3", "python"]) {
    const p = join(dir, rel);
    if (await isFile(p)) return p;
  }
  return undefined;
}

/** Validates a path or command on a backend (default: this machine) and resolves it to the executable it reports.
 * Cached per backend and resolved path (or per command and PATH); a failure is not cached, so fixing the
 * interpreter needs no restart. The checks before the probe read this machine's filesystem, which the sandbox
 * shares; under a remote backend they are skipped (the path is the remote side's) and the probe says what is wrong. */
export async function validateInterpreter(
  command: string,
  base: string,
  env: NodeJS.ProcessEnv = process.env,
  ops: ProcessOperations = localOperations,
): Promise<Result<Probe>> {
  const r = await checkInterpreter(command, base, env, ops);
  return r.ok ? r : fail(r.error.message);
}

/** validateInterpreter, with the backend's hint id of a failure. */
export async function checkInterpreter(
  command: string,
  base: string,
  env: NodeJS.ProcessEnv = process.env,
  ops: ProcessOperations = localOperations,
): Promise<Result<Probe, InterpreterFailure>> {
  const given = command.trim();
  if (!given) return fail({ message: "the interpreter is empty: give a path or a command name such as python3" });
  const remote = ops.backend.kind === "remote";
  let target = remote ? given : expandHome(given);
  // A bare name is a command on PATH, unless it names a directory here (`.venv`): that is refused below with a hint.
  if (!remote && !target.includes("/") && (await stat(resolve(base, target)).catch(() => undefined))?.isDirectory()) {
    target = resolve(base, target);
  }
  // The sandbox sees this machine's files, but not what lives under $HOME (pyenv, ~/.local/bin) unless an
  // interpreter's own folders are shown to it: a command is looked up on PATH here (no program runs for that) and
  // the sandbox is given its path.
  if (ops.backend.kind === "sandbox" && !target.includes("/")) {
    const found = findProgram(target, env.PATH);
    if (!found) return fail({ message: `Python interpreter "${given}" was not found on PATH` });
    target = found;
  }
  if (!remote && target.includes("/")) {
    target = isAbsolute(target) ? target : resolve(base, target);
    const info = await stat(target).catch((e: NodeJS.ErrnoException) => e);
    if (info instanceof Error) {
      return fail({
        message:
          info.code === "ENOENT"
            ? `Python interpreter "${given}" not found (${target} does not exist)`
            : `${target}: ${info.message}`,
      });
    }
    if (info.isDirectory()) {
      const inside = await interpreterInside(target);
      return fail({
        message:
          `"${given}" is a directory, not an interpreter` +
          (inside ? `; use the interpreter inside it: ${inside}` : " (no bin/python3 or bin/python inside it)"),
      });
    }
    if (
      await access(target, constants.X_OK).then(
        () => false,
        () => true,
      )
    ) {
      return fail({ message: `Python interpreter "${given}" is not executable (${target})` });
    }
  }
  // Remote: a relative path is relative to the remote working directory `base` maps to.
  const key = remote
    ? `${target.startsWith("/") ? "" : base}\0${target}`
    : target.includes("/")
      ? target
      : `${target}\0${env.PATH ?? ""}`;
  const cache = cacheOf(ops);
  let found = cache.probes.get(key);
  if (!found) {
    found = probe(target, given, base, env, ops);
    cache.probes.set(key, found);
    found.then((r) => {
      if (!r.ok) cache.probes.delete(key);
      else
        cache.known.set(r.value.executable, {
          version: r.value.version,
          ...(r.value.venv ? { venv: r.value.venv } : {}),
        });
    });
  }
  return found;
}

/** The probe's child: the interpreter itself (`-I`: a PYTHONPATH or PYTHONHOME meant for another interpreter
 * cannot break it). On a remote, `~/...` is the remote home, expanded there by a shell. */
function probeCommand(target: string, remote: boolean): { file: string; args: string[] } {
  const args = ["-I", "-c", PROBE];
  if (remote && (target === "~" || target.startsWith("~/")))
    return { file: "sh", args: ["-c", 'p="$0"; exec "$HOME/${p#"~/"}" "$@"', target, ...args] };
  return { file: target, args };
}

async function probe(
  target: string,
  given: string,
  base: string,
  env: NodeJS.ProcessEnv,
  ops: ProcessOperations,
): Promise<Result<Probe, InterpreterFailure>> {
  const where = ops.backend.kind === "local" ? "" : ` on the ${ops.backend.label} backend`;
  const path = target.includes("/");
  const ran = await collectChild(
    (spec) => ops.spawn(spec),
    {
      ...probeCommand(target, ops.backend.kind === "remote"),
      cwd: base,
      env,
      purpose: "probe",
    },
    { timeoutMs: PROBE_TIMEOUT_MS, maxBytes: 64 * 1024 },
  );
  if (!ran.ok) {
    // A sandbox or remote that cannot start anything: the backend's own failure, said as it is.
    if (ops.backend.kind !== "local")
      return fail({ message: ran.error.message, ...(ran.error.hint ? { hint: ran.error.hint } : {}), backend: true });
    const m = ran.error.message;
    const why = /ENOENT/.test(m)
      ? path
        ? "could not be started"
        : "was not found on PATH"
      : /EACCES/.test(m)
        ? "is not executable"
        : `could not be started: ${m}`;
    return fail({ message: `Python interpreter "${given}" ${why}` });
  }
  const r = ran.value;
  if (r.timedOut)
    return fail({
      message: `Python interpreter "${given}" did not answer within ${PROBE_TIMEOUT_MS / 1000} s${where}`,
    });
  if (r.code !== 0) {
    const last = r.stderr.trim().split("\n").pop() ?? "";
    // The shell (remote) or bwrap (sandbox) that was to start it says it is not there.
    const missing = r.code === 127 || /(execvp|exec): .*(No such file|not found)|: not found$/.test(last);
    const denied = r.code === 126 || /(execvp|exec): .*Permission denied/.test(last);
    const why = missing
      ? path
        ? `could not be started (not found${where})`
        : `was not found on PATH${where}`
      : denied
        ? `is not executable${where}`
        : `failed${where} (${r.signal ? `killed by ${r.signal}` : `exit code ${r.code}`})${last ? `: ${last}` : ""}`;
    return fail({ message: `Python interpreter "${given}" ${why}`, ...remoteHint(ops, missing || denied, r) });
  }
  const [executable, version, venv] = r.stdout.split("\n").map((s) => s.trim());
  if (!executable || !version) return fail({ message: `"${given}" did not report itself as a Python interpreter` });
  const [major, minor] = version.split(".").map(Number);
  if (!Number.isFinite(major) || !Number.isFinite(minor))
    return fail({ message: `"${given}" did not report itself as a Python interpreter` });
  if (major! < 3 || (major === 3 && minor! < 9)) {
    return fail({
      message: `Python ${version} at ${executable} is too old: code_execution needs Python 3.9 or newer`,
      ...(ops.backend.kind === "remote" ? { hint: "remote_python" } : {}),
    });
  }
  return ok({ executable, version, ...(venv ? { venv } : {}) });
}

/** A remote probe's failure as a backend hint: no such interpreter there, or the transport's own failure (ssh's
 * login refused, the host unreachable: ssh exits 255). */
function remoteHint(ops: ProcessOperations, missing: boolean, r: { stderr: string; code: number | null }) {
  if (ops.backend.kind !== "remote") return {};
  if (missing) return { hint: "remote_python" };
  if (/Permission denied|Authentication failed|Host key verification failed|Unauthorized|Forbidden/i.test(r.stderr))
    return { hint: "remote_auth" };
  return r.code === 255 ? { hint: "remote_unreachable" } : {};
}

/** The repository root at or above `dir` (a directory holding `.git`), if any. */
function repositoryRoot(dir: string): string | undefined {
  for (let d = dir; ; d = dirname(d)) {
    if (existsNow(join(d, ".git"))) return d;
    if (dirname(d) === d) return undefined;
  }
}

/** A `.venv`/`venv` interpreter in `cwd` or, with `parentWalk`, a parent: up to the repository root, or outside a
 * repository up to the home directory (never the filesystem root). */
export function findVenv(cwd: string, discovery: VenvDiscovery): string | undefined {
  if (!discovery.enabled || discovery.dirNames.length === 0) return undefined;
  const start = resolve(cwd);
  const root = discovery.parentWalk ? repositoryRoot(start) : start;
  const home = homedir();
  for (let d = start; ; d = dirname(d)) {
    for (const name of discovery.dirNames) {
      for (const exe of ["bin/python", "bin/python3"]) {
        const p = join(d, name, exe);
        if (isFileNow(p)) return p;
      }
    }
    if (!discovery.parentWalk || d === root || d === home || dirname(d) === d) return undefined;
    if (!root && dirname(d) === dirname(dirname(d))) return undefined; // outside a repository: never the root
  }
}

export interface DiscoveryInput {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The python_set_interpreter selection. */
  selected?: string;
  /** The --python flag. */
  flag?: string;
  venv: VenvDiscovery;
  /** A remote backend: its default interpreter (`remote.python`, else python3). The flag, PI_PYTHON, $VIRTUAL_ENV
   * and `.venv` discovery name interpreters of this machine, and are not used. */
  remote?: { python: string };
}

/** The first configured interpreter in discovery order; validation happens separately. */
export async function discoverInterpreter(input: DiscoveryInput): Promise<InterpreterRequest & { notes: string[] }> {
  return discoverInterpreterNow(input);
}

/** discoverInterpreter, synchronously (a few stats: see `isFileNow`). */
export function discoverInterpreterNow(input: DiscoveryInput): InterpreterRequest & { notes: string[] } {
  const notes: string[] = [];
  const { cwd, env } = input;
  if (input.selected) return { command: input.selected, source: "tool", base: cwd, notes };
  if (input.remote) {
    const local = [
      ...(input.flag ? ["--python"] : []),
      ...(env.PI_PYTHON?.trim() ? ["PI_PYTHON"] : []),
      ...(env.VIRTUAL_ENV?.trim() ? ["VIRTUAL_ENV"] : []),
    ];
    if (local.length)
      notes.push(
        `${local.join(", ")} ${local.length === 1 ? "names" : "name"} a local interpreter: not used by the remote backend (remote.python is)`,
      );
    return { command: input.remote.python, source: "remote", base: cwd, notes };
  }
  if (input.flag) return { command: input.flag, source: "flag", base: cwd, notes };
  const fromEnv = env.PI_PYTHON?.trim();
  if (fromEnv) return { command: fromEnv, source: "PI_PYTHON", base: cwd, notes };
  const venvEnv = env.VIRTUAL_ENV?.trim();
  if (venvEnv) {
    const p = join(expandHome(venvEnv), "bin", "python");
    if (isFileNow(p)) return { command: p, source: "VIRTUAL_ENV", base: cwd, notes };
    notes.push(`VIRTUAL_ENV is set to ${venvEnv}, but ${p} does not exist; it was skipped`);
  }
  const found = findVenv(cwd, input.venv);
  if (found) return { command: found, source: "venv", base: cwd, notes };
  return { command: "python3", source: "PATH", base: cwd, notes };
}

export interface ResolverOptions {
  /** Where interpreters are probed and runs start (default: this machine). */
  ops?: () => ProcessOperations;
  env?: () => NodeJS.ProcessEnv;
  venv?: () => VenvDiscovery;
  flag?: () => string | undefined;
  /** How long a discovery result per working directory is reused (a venv created meanwhile is seen after it). */
  cacheMs?: number;
}

/** A cached discovery for one working directory. */
interface Discovery {
  at: number;
  key: string;
  ops: ProcessOperations;
  value: Promise<Result<Interpreter, InterpreterFailure>>;
  /** The value, once it has settled. */
  settled?: Result<Interpreter, InterpreterFailure>;
}

/** Discovery plus validation, with the tool's selection held here. One per host. */
export class InterpreterResolver {
  private selected: string | undefined;
  private readonly options: ResolverOptions;
  private readonly cache = new Map<string, Discovery>();
  /** Notes from the latest discovery (a stale VIRTUAL_ENV, ...), shown by /code-status. */
  notes: string[] = [];

  constructor(options: ResolverOptions = {}) {
    this.options = options;
  }

  get selection(): string | undefined {
    return this.selected;
  }

  /** The python_set_interpreter selection (validated by the caller first); undefined clears it. */
  select(executable: string | undefined): void {
    this.selected = executable;
    this.cache.clear();
  }

  /** Forget cached discoveries (settings changed). */
  invalidate(): void {
    this.cache.clear();
  }

  /** The backend interpreters are probed on. */
  operations(): ProcessOperations {
    return this.options.ops?.() ?? localOperations;
  }

  /** Validates an interpreter where code runs (python_set_interpreter's check before it selects). */
  validate(command: string, base: string): Promise<Result<Probe>> {
    return validateInterpreter(command, base, this.options.env?.() ?? process.env, this.operations());
  }

  /** The interpreter for runs in `cwd`, or why there is none. */
  async resolve(cwd: string): Promise<Result<Interpreter>> {
    const r = await this.resolveForRun(cwd);
    return r.ok ? r : fail(r.error.message);
  }

  /** resolve, with the backend's hint id of a failure (a run's setup_error carries it). */
  resolveForRun(cwd: string): Promise<Result<Interpreter, InterpreterFailure>> {
    const { key, ops, env, venv, flag, remote } = this.lookup();
    const hit = this.cache.get(cwd);
    const now = Date.now();
    if (hit && hit.key === key && hit.ops === ops && now - hit.at < (this.options.cacheMs ?? 1000)) return hit.value;
    const value = (async (): Promise<Result<Interpreter, InterpreterFailure>> => {
      const request = await discoverInterpreter(this.discoveryInput(cwd, { env, venv, flag, remote }));
      this.notes = request.notes;
      const probed = await checkInterpreter(request.command, request.base, env, ops);
      if (!probed.ok)
        return probed.error.backend
          ? probed
          : fail({ ...probed.error, message: `${probed.error.message} (from ${describeSource(request.source)}).` });
      return ok({ ...probed.value, source: request.source, requested: request.command });
    })();
    const entry: Discovery = { at: now, key, ops, value };
    this.cache.set(cwd, entry);
    value.then((r) => {
      if (!r.ok) this.cache.delete(cwd);
      else entry.settled = r;
    });
    return value;
  }

  /** resolveForRun's answer at once, when a fresh one has settled (a run's preparation then needs no wait);
   * "pending" otherwise. Failures are never cached, so they are always "pending". */
  resolvedNow(cwd: string): Result<Interpreter, InterpreterFailure> | "pending" {
    const hit = this.cache.get(cwd);
    if (!hit?.settled) return "pending";
    const { key, ops, env, venv, flag, remote } = this.lookup();
    if (hit.key !== key || hit.ops !== ops) return "pending";
    const now = Date.now();
    if (now - hit.at < (this.options.cacheMs ?? 1000)) return hit.settled;
    // Older than the cache's bound (a run after the model thought for a while): discovery again, synchronously (a
    // few stats). The same command as before, still an executable file where it is a path, keeps the answer (its
    // probe is cached per command anyway), so the run needs no wait; anything else is resolved anew, off the door.
    if (!hit.settled.ok) return "pending";
    const request = discoverInterpreterNow(this.discoveryInput(cwd, { env, venv, flag, remote }));
    if (request.command !== hit.settled.value.requested || !stillThere(request.command, request.base, ops))
      return "pending";
    this.notes = request.notes;
    hit.at = now;
    return hit.settled;
  }

  /** Discovery's input for `cwd`, from a `lookup()`. */
  private discoveryInput(
    cwd: string,
    l: Pick<ReturnType<InterpreterResolver["lookup"]>, "env" | "venv" | "flag" | "remote">,
  ): DiscoveryInput {
    return {
      cwd,
      env: l.env,
      venv: l.venv,
      ...(this.selected ? { selected: this.selected } : {}),
      ...(l.flag ? { flag: l.flag } : {}),
      ...(l.remote ? { remote: l.remote } : {}),
    };
  }

  /** What a cached discovery must match: the selection, the flag, the environment, the backend. */
  private lookup() {
    const env = this.options.env?.() ?? process.env;
    const venv = this.options.venv?.() ?? DEFAULT_VENV_DISCOVERY;
    const flag = this.options.flag?.();
    const ops = this.operations();
    const remote = ops.backend.kind === "remote" ? { python: ops.backend.python ?? "python3" } : undefined;
    const key = JSON.stringify([this.selected, flag, env.PI_PYTHON, env.VIRTUAL_ENV, env.PATH, venv, remote]);
    return { key, ops, env, venv, flag, remote };
  }
}

/** A path command is still an executable file (a command name is looked up by its cached probe, per PATH). */
function stillThere(command: string, base: string, ops: ProcessOperations): boolean {
  if (ops.backend.kind === "remote") return true;
  const target = expandHome(command.trim());
  if (!target.includes("/")) return true;
  const path = isAbsolute(target) ? target : resolve(base, target);
  try {
    accessSync(path, constants.X_OK);
    return isFileNow(path);
  } catch {
    return false;
  }
}

export function describeSource(source: InterpreterSource): string {
  switch (source) {
    case "tool":
      return "the python_set_interpreter selection";
    case "flag":
      return "the --python flag";
    case "PI_PYTHON":
      return "PI_PYTHON";
    case "VIRTUAL_ENV":
      return "$VIRTUAL_ENV";
    case "venv":
      return "a virtual environment found from the working directory";
    case "PATH":
      return "python3 on PATH";
    case "remote":
      return "remote.python (the remote backend's interpreter)";
  }
}

const VERSION_SEGMENT = /(?:^|\/)python(\d+)\.(\d+)(?=\/|$)/;

/** Whether a PYTHONPATH was built for another interpreter: one of its entries names a `pythonX.Y` directory (as in
 * `lib/python3.8/site-packages`) whose X.Y differs from `version`. */
export function foreignPythonPath(pythonPath: string | undefined, version: string): string | undefined {
  if (!pythonPath) return undefined;
  const [major, minor] = version.split(".");
  for (const entry of pythonPath.split(delimiter)) {
    const m = VERSION_SEGMENT.exec(entry);
    if (m && (m[1] !== major || m[2] !== minor)) return entry;
  }
  return undefined;
}

/** The environment a runner gets for an interpreter: a foreign PYTHONPATH left out, and for a virtual environment
 * its bin/ first on PATH and VIRTUAL_ENV set, so subprocesses (pip, console scripts) use the same environment. */
export function runnerEnv(
  base: NodeJS.ProcessEnv,
  interpreter: { version?: string; venv?: string },
): { env: NodeJS.ProcessEnv; dropped?: string } {
  const env = { ...base };
  let dropped: string | undefined;
  if (interpreter.version) {
    const foreign = foreignPythonPath(env.PYTHONPATH, interpreter.version);
    if (foreign) {
      dropped = foreign;
      delete env.PYTHONPATH;
    }
  }
  if (interpreter.venv) {
    const bin = join(interpreter.venv, "bin");
    env.VIRTUAL_ENV = interpreter.venv;
    const parts = (env.PATH ?? "").split(delimiter).filter((p) => p && p !== bin);
    env.PATH = [bin, ...parts].join(delimiter);
  }
  return { env, ...(dropped ? { dropped } : {}) };
}
