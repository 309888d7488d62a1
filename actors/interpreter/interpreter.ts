// Interpreter discovery. Order: the python_set_interpreter selection, the --python flag, PI_PYTHON,
// $VIRTUAL_ENV/bin/python, a `.venv`/`venv` in the working directory or a parent (stopping after the repository
// root), then python3 on PATH. Paths (absolute, relative to the working directory, `~`) and bare command names are
// accepted; a directory is refused with a hint naming the interpreter inside it. Each interpreter is validated once
// and resolved to the executable it reports (`sys.executable`), so a pyenv shim costs nothing per run.
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { fail, ok, type Result } from "../../lib/result.ts";

export type InterpreterSource = "tool" | "flag" | "PI_PYTHON" | "VIRTUAL_ENV" | "venv" | "PATH";

export interface VenvDiscovery {
  enabled: boolean;
  /** Look in parents of the working directory too (up to the repository root). */
  parentWalk: boolean;
  dirNames: string[];
}

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

export interface Probe {
  executable: string;
  version: string;
  venv?: string;
}

const PROBE =
  "import sys; print(sys.executable); print('%d.%d.%d' % sys.version_info[:3]); print(sys.prefix if sys.prefix != getattr(sys, 'base_prefix', sys.prefix) else '')";

const probes = new Map<string, Promise<Result<Probe>>>();
const known = new Map<string, { version: string; venv?: string }>();

/** The version of an executable validated in this process (probes fill it in). */
export function knownVersion(executable: string): string | undefined {
  return known.get(executable)?.version;
}

/** What this process knows of an executable: its version and virtual environment. */
export function knownInterpreter(executable: string): { version: string; venv?: string } | undefined {
  return known.get(executable);
}

/** Records an interpreter validated another way (a PEP 723 environment's, built from a known base). */
export function rememberInterpreter(executable: string, info: { version: string; venv?: string }): void {
  known.set(executable, info);
}

function expandHome(p: string): string {
  return p === "~" ? homedir() : p.startsWith("~/") ? join(homedir(), p.slice(2)) : p;
}

const isFile = async (p: string) => (await stat(p).catch(() => undefined))?.isFile() === true;
const exists = async (p: string) => (await stat(p).catch(() => undefined)) !== undefined;

/** The interpreter inside a directory a user named (a venv, its bin/, a Python prefix), if one is there. */
async function interpreterInside(dir: string): Promise<string | undefined> {
  for (const rel of ["bin/python3", "bin/python", "python3", "python"]) {
    const p = join(dir, rel);
    if (await isFile(p)) return p;
  }
  return undefined;
}

/** Validates a path or command and resolves it to the executable it reports. Cached per resolved path (or per
 * command and PATH); a failure is not cached, so fixing the interpreter needs no restart. */
export async function validateInterpreter(
  command: string,
  base: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Result<Probe>> {
  const given = command.trim();
  if (!given) return fail("the interpreter is empty: give a path or a command name such as python3");
  let target = expandHome(given);
  // A bare name is a command on PATH, unless it names a directory here (`.venv`): that is refused below with a hint.
  if (!target.includes("/") && (await stat(resolve(base, target)).catch(() => undefined))?.isDirectory()) {
    target = resolve(base, target);
  }
  if (target.includes("/")) {
    target = isAbsolute(target) ? target : resolve(base, target);
    const info = await stat(target).catch((e: NodeJS.ErrnoException) => e);
    if (info instanceof Error) {
      return fail(
        info.code === "ENOENT"
          ? `Python interpreter "${given}" not found (${target} does not exist)`
          : `${target}: ${info.message}`,
      );
    }
    if (info.isDirectory()) {
      const inside = await interpreterInside(target);
      return fail(
        `"${given}" is a directory, not an interpreter` +
          (inside ? `; use the interpreter inside it: ${inside}` : " (no bin/python3 or bin/python inside it)"),
      );
    }
    if (
      await access(target, constants.X_OK).then(
        () => false,
        () => true,
      )
    ) {
      return fail(`Python interpreter "${given}" is not executable (${target})`);
    }
  }
  const key = target.includes("/") ? target : `${target}\0${env.PATH ?? ""}`;
  let found = probes.get(key);
  if (!found) {
    found = probe(target, given, env);
    probes.set(key, found);
    found.then((r) => {
      if (!r.ok) probes.delete(key);
      else known.set(r.value.executable, { version: r.value.version, ...(r.value.venv ? { venv: r.value.venv } : {}) });
    });
  }
  return found;
}

function probe(target: string, given: string, env: NodeJS.ProcessEnv): Promise<Result<Probe>> {
  return new Promise((done) => {
    // -I: a PYTHONPATH or PYTHONHOME meant for another interpreter cannot break the probe.
    execFile(target, ["-I", "-c", PROBE], { env, timeout: 15_000, encoding: "utf8" }, (error, stdout, stderr) => {
      if (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const why =
          code === "ENOENT"
            ? target.includes("/")
              ? "could not be started"
              : "was not found on PATH"
            : code === "EACCES"
              ? "is not executable"
              : `failed: ${stderr.trim().split("\n").pop() || error.message}`;
        return done(fail(`Python interpreter "${given}" ${why}`));
      }
      const [executable, version, venv] = stdout.split("\n").map((s) => s.trim());
      if (!executable || !version) return done(fail(`"${given}" did not report itself as a Python interpreter`));
      const [major, minor] = version.split(".").map(Number);
      if (major < 3 || (major === 3 && minor < 9)) {
        return done(fail(`Python ${version} at ${executable} is too old: code_execution needs Python 3.9 or newer`));
      }
      done(ok({ executable, version, ...(venv ? { venv } : {}) }));
    });
  });
}

/** The repository root at or above `dir` (a directory holding `.git`), if any. */
async function repositoryRoot(dir: string): Promise<string | undefined> {
  for (let d = dir; ; d = dirname(d)) {
    if (await exists(join(d, ".git"))) return d;
    if (dirname(d) === d) return undefined;
  }
}

/** A `.venv`/`venv` interpreter in `cwd` or, with `parentWalk`, a parent: up to the repository root, or outside a
 * repository up to the home directory (never the filesystem root). */
export async function findVenv(cwd: string, discovery: VenvDiscovery): Promise<string | undefined> {
  if (!discovery.enabled || discovery.dirNames.length === 0) return undefined;
  const start = resolve(cwd);
  const root = discovery.parentWalk ? await repositoryRoot(start) : start;
  const home = homedir();
  for (let d = start; ; d = dirname(d)) {
    for (const name of discovery.dirNames) {
      for (const exe of ["bin/python", "bin/python3"]) {
        const p = join(d, name, exe);
        if (await isFile(p)) return p;
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
}

/** The first configured interpreter in discovery order; validation happens separately. */
export async function discoverInterpreter(input: DiscoveryInput): Promise<InterpreterRequest & { notes: string[] }> {
  const notes: string[] = [];
  const { cwd, env } = input;
  if (input.selected) return { command: input.selected, source: "tool", base: cwd, notes };
  if (input.flag) return { command: input.flag, source: "flag", base: cwd, notes };
  const fromEnv = env.PI_PYTHON?.trim();
  if (fromEnv) return { command: fromEnv, source: "PI_PYTHON", base: cwd, notes };
  const venvEnv = env.VIRTUAL_ENV?.trim();
  if (venvEnv) {
    const p = join(expandHome(venvEnv), "bin", "python");
    if (await isFile(p)) return { command: p, source: "VIRTUAL_ENV", base: cwd, notes };
    notes.push(`VIRTUAL_ENV is set to ${venvEnv}, but ${p} does not exist; it was skipped`);
  }
  const found = await findVenv(cwd, input.venv);
  if (found) return { command: found, source: "venv", base: cwd, notes };
  return { command: "python3", source: "PATH", base: cwd, notes };
}

export interface ResolverOptions {
  env?: () => NodeJS.ProcessEnv;
  venv?: () => VenvDiscovery;
  flag?: () => string | undefined;
  /** How long a discovery result per working directory is reused (a venv created meanwhile is seen after it). */
  cacheMs?: number;
}

/** Discovery plus validation, with the tool's selection held here. One per host. */
export class InterpreterResolver {
  private selected: string | undefined;
  private readonly options: ResolverOptions;
  private readonly cache = new Map<string, { at: number; key: string; value: Promise<Result<Interpreter>> }>();
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

  resolve(cwd: string): Promise<Result<Interpreter>> {
    const env = this.options.env?.() ?? process.env;
    const venv = this.options.venv?.() ?? DEFAULT_VENV_DISCOVERY;
    const flag = this.options.flag?.();
    const key = JSON.stringify([this.selected, flag, env.PI_PYTHON, env.VIRTUAL_ENV, env.PATH, venv]);
    const hit = this.cache.get(cwd);
    const now = Date.now();
    if (hit && hit.key === key && now - hit.at < (this.options.cacheMs ?? 1000)) return hit.value;
    const value = (async (): Promise<Result<Interpreter>> => {
      const request = await discoverInterpreter({
        cwd,
        env,
        venv,
        ...(this.selected ? { selected: this.selected } : {}),
        ...(flag ? { flag } : {}),
      });
      this.notes = request.notes;
      const probed = await validateInterpreter(request.command, request.base, env);
      if (!probed.ok) return fail(`${probed.error} (from ${describeSource(request.source)}).`);
      return ok({ ...probed.value, source: request.source, requested: request.command });
    })();
    this.cache.set(cwd, { at: now, key, value });
    value.then((r) => {
      if (!r.ok) this.cache.delete(cwd);
    });
    return value;
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

