// Running an installer: which one (uv when PI_CODE_EXECUTION_UV names it or it is on PATH, else pip), its
// environment (the user's, which both honour: UV_*, PIP_*), one command in its own process group with its lines
// streamed as progress, and a failure explained with the installer's last lines and a hint id. Installers start
// through the backend's `spawn` (purpose "install"): under the sandbox they run inside bwrap with only the
// environment being built writable, and from wheels only (sandbox-policy.ts).
import { constants } from "node:fs";
import { access, readFile } from "node:fs/promises";
import { delimiter, dirname, join } from "node:path";
import type { Hint, InstallInput, InstallSummary } from "../../machines/events.ts";
import { installHint } from "./hints.ts";
import { localOperations, type ProcessOperations } from "../process/operations.ts";

export interface InstallProgress {
  installer: "uv" | "pip";
  /** The installer's latest line. */
  line: string;
  /** The package it is working on, when the line names one. */
  package?: string;
}

export type Installer = { kind: "uv"; uv: string } | { kind: "pip" };

async function executable(p: string): Promise<boolean> {
  return access(p, constants.X_OK).then(
    () => true,
    () => false,
  );
}

/** uv if PI_CODE_EXECUTION_UV names it or it is on PATH, else pip; or why neither can be used. */
export async function findInstaller(
  env: NodeJS.ProcessEnv,
): Promise<{ ok: true; value: Installer } | { ok: false; error: string }> {
  const named = env.PI_CODE_EXECUTION_UV?.trim();
  if (named) {
    if (named.includes("/")) {
      return (await executable(named))
        ? { ok: true, value: { kind: "uv", uv: named } }
        : { ok: false, error: `PI_CODE_EXECUTION_UV is ${named}, which is not an executable file` };
    }
    const found = await onPath(named, env);
    return found
      ? { ok: true, value: { kind: "uv", uv: found } }
      : { ok: false, error: `PI_CODE_EXECUTION_UV is ${named}, which is not on PATH` };
  }
  const uv = await onPath("uv", env);
  return { ok: true, value: uv ? { kind: "uv", uv } : { kind: "pip" } };
}

async function onPath(name: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, name);
    if (await executable(p)) return p;
  }
  return undefined;
}

/** One installation: what to install, for whom, and how its processes are tracked. */
export interface Job {
  input: InstallInput;
  deps: {
    hostId: string;
    progress?: (runId: string, progress: InstallProgress) => void;
    /** Cached fresh-run environments (the host's default: host/backend.ts `defaultEnvRoot`). */
    envRoot: string;
    sessionRoot?: string;
    /** When a dead builder's environment lock counts as stale (default LOCK_STALE_MS in install-targets.ts). */
    lockStaleMs?: number;
  };
  env: NodeJS.ProcessEnv;
  installer?: Installer;
  /** Where the installer runs (default: this machine). */
  ops?: ProcessOperations;
  /** The only paths an install may write inside a sandbox (the environment being built). */
  writable?: string[];
  stopped: () => boolean;
  track: (pid: number) => void;
  untrack: (pid: number) => void;
}

export type Outcome = { ok: true; value: InstallSummary } | { ok: false; error: string; hint?: Hint };

/** Installer processes see the user's environment minus PYTHONPATH (it may point at another interpreter's
 * packages and would confuse what counts as installed), with pip's chatter turned down. */
export function installerEnv(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...base,
    PIP_DISABLE_PIP_VERSION_CHECK: "1",
    PIP_NO_INPUT: "1",
    PIP_ROOT_USER_ACTION: "ignore",
    PIP_PROGRESS_BAR: "off",
  };
  delete env.PYTHONPATH;
  return env;
}

export interface Ran {
  code: number | null;
  signal: string | null;
  output: string;
  error?: string;
}

/** `python -m <module> ...` without the working directory on sys.path: installers run there (relative requirements
 * resolve from it), and a user's token.py must not shadow what pip and venv import. Unlike PYTHONSAFEPATH, this
 * leaves the processes they start (sdist builds) as they were, and works on Python 3.9 and 3.10. */
const RUN_MODULE =
  "import sys\nif sys.path and sys.path[0] == '':\n    del sys.path[0]\nimport runpy\nrunpy._run_module_as_main(sys.argv.pop(1))";

/** Runs one installer command in its own process group on the job's backend, streaming its lines as progress. */
export async function run(job: Job, command: string, args: string[]): Promise<Ran> {
  const argv = args[0] === "-m" ? ["-c", RUN_MODULE, ...args.slice(1)] : args;
  if (job.stopped()) return { code: null, signal: "SIGKILL", output: "" };
  const ops = job.ops ?? localOperations;
  const progress = installerProgress(job, job.installer!.kind);
  const started = await ops.spawn({
    file: command,
    args: argv,
    cwd: job.input.cwd,
    env: job.env,
    purpose: "install",
    ...(job.writable ? { writable: job.writable } : {}),
  });
  if (!started.ok) {
    const m = started.error.message;
    const why = /: (E[A-Z]+)$/.exec(m)?.[1] ?? m;
    return { code: null, signal: null, output: "", error: `${command} could not be started (${why})` };
  }
  const child = started.value;
  // Tracked at once, with everything it starts (a wrapper's pid, bwrap's, leads the group: SIGKILL to it stops the
  // sandbox and everything inside).
  job.track(child.pid);
  if (job.stopped()) child.signalGroup("SIGKILL");
  child.onData((chunk) => progress.feed(chunk));
  return new Promise((done) =>
    child.onClose(({ code, signal }) => {
      job.untrack(child.pid);
      done({ code, signal, output: progress.output() });
    }),
  );
}

/** An installer's output as it streams: each non-empty line goes out as progress (with the package it names), and
 * the last 64 KiB are kept, bounded, because the tail explains failures. */
export function installerProgress(job: Job, installer: "uv" | "pip") {
  let output = "";
  let partial = "";
  return {
    feed(chunk: Buffer): void {
      const text = chunk.toString("utf8");
      output = (output + text).slice(-64 * 1024);
      const lines = (partial + text).split(/\r?\n|\r/);
      partial = lines.pop() ?? "";
      for (const raw of lines) {
        const line = raw.trim();
        if (!line) continue;
        const pkg = packageOf(line);
        job.deps.progress?.(job.input.runId, { installer, line, ...(pkg ? { package: pkg } : {}) });
      }
    },
    output: () => output,
  };
}

/** The package a progress line is about (pip: Collecting/Downloading/Processing; uv: ` + name==version`). */
export function packageOf(line: string): string | undefined {
  const m =
    /^Collecting (\S+)/.exec(line) ??
    /^Downloading (\S+)/.exec(line) ??
    /^Processing \S*?([^/\s]+?)(?:-py\d.*\.whl|\.tar\.gz|\.zip)?$/.exec(line) ??
    /^Installing collected packages: (.+)$/.exec(line) ??
    /^[+~] (\S+)/.exec(line) ??
    /^Building wheels? for (\S+)/.exec(line);
  return m?.[1];
}

export function failure(job: Job, what: string, ran: Ran): { ok: false; error: string; hint?: Hint } {
  const installer = job.installer!.kind;
  if (ran.error) return { ok: false, error: `${what}: ${ran.error}` };
  const tail = ran.output.trim().split("\n").slice(-25).join("\n").slice(-4000);
  const how = ran.signal ? `killed by ${ran.signal}` : `exit code ${ran.code}`;
  const hint = installHint(ran.output, installer);
  return { ok: false, error: `${what} (${installer}, ${how}):\n${tail}`, ...(hint ? { hint } : {}) };
}

export const venvPython = (dir: string) => join(dir, "bin", "python");

const NO_PIP = /No module named pip|no such option: --python/;

/** The interpreter a virtual environment was made from (`home` in its pyvenv.cfg), if `python` is a venv's. */
async function baseInterpreter(python: string): Promise<string | undefined> {
  const cfg = await readFile(join(dirname(dirname(python)), "pyvenv.cfg"), "utf8").catch(() => undefined);
  const home = cfg && /^home\s*=\s*(.+)$/m.exec(cfg)?.[1]?.trim();
  if (!home) return undefined;
  for (const name of ["python3", "python"]) {
    const p = join(home, name);
    if (await executable(p)) return p;
  }
  return undefined;
}

/** pip for the interpreter `target`: its own, else (a venv made without pip, or by uv) its base interpreter's pip
 * driving it with `--python` (pip >= 22.3). */
export async function runPip(job: Job, target: string, args: string[]): Promise<Ran> {
  const own = await run(job, target, ["-m", "pip", ...args]);
  if (own.code === 0 || job.stopped() || !NO_PIP.test(own.output)) return own;
  const base = await baseInterpreter(target);
  if (!base || base === target) return own;
  return run(job, base, ["-m", "pip", "--python", target, ...args]);
}
