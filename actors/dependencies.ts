// The dependency installer actor: installs a script's PEP 723 dependencies with uv (PI_CODE_EXECUTION_UV, else uv
// on PATH) or pip, then reports `install.done` (the environment) or `install.failed` (why, with a hint id) to its run.
// Fresh runs get a virtual environment cached under the agent dir, keyed by the normalized dependency set and the
// interpreter, built once even when runs race for it (a lock file). Sessions get `--target` package directories,
// one per session incarnation, removed when the host shuts down. The installer's process group is stopped with
// the actor (deadline, cancellation). Both installers honour their own environment (UV_*, PIP_*).
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { access, mkdir, open, readdir, readFile, rm, stat, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fromCallback } from "xstate";
import type { Hint, InstallFact, InstallInput, InstallSummary } from "../machines/events.ts";
import { agentDir } from "./log-files.ts";
import { installHint, HINT_IDS } from "./hints.ts";
import { knownVersion, rememberInterpreter } from "./interpreter.ts";
import { normalizeDependencies } from "./pep723.ts";
import { registerGroup, stopGroup } from "./registry.ts";

export interface InstallProgress {
  installer: "uv" | "pip";
  /** The installer's latest line. */
  line: string;
  /** The package it is working on, when the line names one. */
  package?: string;
}

export interface InstallDeps {
  env: () => NodeJS.ProcessEnv;
  now: () => number;
  hostId: string;
  killMs: () => number;
  /** Live progress for the user (not a machine input). */
  progress?: (runId: string, progress: InstallProgress) => void;
  /** Cached fresh-run environments (default `<agent dir>/pi-code-execution/envs`). */
  envRoot?: string;
  /** Session package directories (default `<tmp>/pi-code-execution-<uid>`). */
  sessionRoot?: string;
}

export function defaultEnvRoot(env: NodeJS.ProcessEnv = process.env): string {
  return join(agentDir(env), "pi-code-execution", "envs");
}

export function defaultSessionRoot(): string {
  return join(tmpdir(), `pi-code-execution-${process.getuid?.() ?? "user"}`);
}

/** The directory of a host's session packages (removed at its shutdown). */
export function sessionPackagesDir(root: string, hostId: string): string {
  return join(root, `host-${hostId}`);
}

type Installer = { kind: "uv"; uv: string } | { kind: "pip" };

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

/** The cache key of a fresh-run environment: the normalized requirements and the interpreter (path and version). */
export function environmentKey(python: string, version: string | undefined, deps: readonly string[]): string {
  return createHash("sha256")
    .update(JSON.stringify({ python, version: version ?? "", deps: normalizeDependencies(deps) }))
    .digest("hex")
    .slice(0, 20);
}

const READY = ".pi-code-execution.json";

interface ReadyMarker {
  requirements: string[];
  modules: string[];
  installer: "uv" | "pip";
}

export function createInstallLogic(deps: InstallDeps) {
  return fromCallback<{ type: string }, InstallInput>(({ input, sendBack }) => {
    let stopped = false;
    const groups = new Set<number>();
    const send = (fact: InstallFact) => {
      if (!stopped) sendBack(fact);
    };
    const fail = (message: string, hint?: Hint) =>
      send({ type: "install.failed", at: deps.now(), message, ...(hint ? { hint } : {}) });
    const ctx: Job = {
      input,
      deps,
      env: installerEnv(deps.env()),
      stopped: () => stopped,
      track: (pid) => {
        groups.add(pid);
        registerGroup(pid, { host: deps.hostId, owner: input.owner });
      },
      untrack: (pid) => groups.delete(pid),
    };
    void (async () => {
      const found = await findInstaller(ctx.env);
      if (!found.ok) return fail(found.error, { id: HINT_IDS.installerUnavailable, text: found.error });
      ctx.installer = found.value;
      const result = input.mode === "fresh" ? await freshEnvironment(ctx) : await sessionPackages(ctx);
      if (stopped) return;
      if (!result.ok) return fail(result.error, result.hint);
      send({ type: "install.done", at: deps.now(), ...result.value });
    })().catch((e: Error) => fail(`dependency installation failed: ${e.message}`));
    return () => {
      stopped = true;
      for (const pid of groups) void stopGroup(pid, deps.killMs());
    };
  });
}

interface Job {
  input: InstallInput;
  deps: InstallDeps;
  env: NodeJS.ProcessEnv;
  installer?: Installer;
  stopped: () => boolean;
  track: (pid: number) => void;
  untrack: (pid: number) => void;
}

type Outcome = { ok: true; value: InstallSummary } | { ok: false; error: string; hint?: Hint };

/** Installer processes see the user's environment minus PYTHONPATH (it may point at another interpreter's
 * packages and would confuse what counts as installed), with pip's chatter turned down. */
function installerEnv(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
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

interface Ran {
  code: number | null;
  signal: string | null;
  output: string;
  error?: string;
}

/** Runs one installer command in its own process group, streaming its lines as progress. */
function run(job: Job, command: string, args: string[]): Promise<Ran> {
  return new Promise((done) => {
    if (job.stopped()) return done({ code: null, signal: "SIGKILL", output: "" });
    const child = spawn(command, args, {
      env: job.env,
      cwd: job.input.cwd,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let output = "";
    let partial = "";
    const installer = job.installer!.kind;
    const onData = (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      // Bounded: the tail explains failures.
      output = (output + text).slice(-64 * 1024);
      const lines = (partial + text).split(/\r?\n|\r/);
      partial = lines.pop() ?? "";
      for (const line of lines) {
        const trimmed = line.trim();
        if (!trimmed) continue;
        const pkg = packageOf(trimmed);
        job.deps.progress?.(job.input.runId, { installer, line: trimmed, ...(pkg ? { package: pkg } : {}) });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("spawn", () => job.track(child.pid!));
    child.once("error", (e: NodeJS.ErrnoException) =>
      done({ code: null, signal: null, output, error: `${command} could not be started (${e.code ?? e.message})` }),
    );
    child.once("close", (code, signal) => {
      if (child.pid) job.untrack(child.pid);
      done({ code, signal, output });
    });
  });
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

function failure(job: Job, what: string, ran: Ran): { ok: false; error: string; hint?: Hint } {
  const installer = job.installer!.kind;
  if (ran.error) return { ok: false, error: `${what}: ${ran.error}` };
  const tail = ran.output.trim().split("\n").slice(-25).join("\n").slice(-4000);
  const how = ran.signal ? `killed by ${ran.signal}` : `exit code ${ran.code}`;
  const hint = installHint(ran.output, installer);
  return { ok: false, error: `${what} (${installer}, ${how}):\n${tail}`, ...(hint ? { hint } : {}) };
}

const venvPython = (dir: string) => join(dir, "bin", "python");

async function freshEnvironment(job: Job): Promise<Outcome> {
  const { input } = job;
  const python = input.python ?? "python3";
  const root = job.deps.envRoot ?? defaultEnvRoot(job.env);
  const key = environmentKey(python, knownVersion(python), input.dependencies);
  const dir = join(root, key);
  const installer = job.installer!.kind;
  const version = knownVersion(python);
  if (version) rememberInterpreter(venvPython(dir), { version, venv: dir });
  const cached = await readMarker(dir);
  if (cached) return { ok: true, value: summary(cached, true, { python: venvPython(dir) }) };
  await mkdir(root, { recursive: true, mode: 0o700 });
  const lock = join(root, `${key}.lock`);
  // One builder per environment: others wait for its marker (or take over from a builder that died).
  for (let waited = false; ;) {
    if (job.stopped()) return { ok: false, error: "stopped" };
    const held = await open(lock, "wx").catch((e: NodeJS.ErrnoException) => e);
    if (!(held instanceof Error)) {
      await held.writeFile(String(process.pid));
      await held.close();
      break;
    }
    if (held.code !== "EEXIST") return { ok: false, error: `cannot lock ${lock}: ${held.message}` };
    const owner = Number(await readFile(lock, "utf8").catch(() => ""));
    if (owner > 0 && !alive(owner)) {
      await unlink(lock).catch(() => {});
      continue;
    }
    if (!waited) {
      waited = true;
      job.deps.progress?.(input.runId, {
        installer,
        line: "waiting for another run that is building the same environment",
      });
    }
    await new Promise((r) => setTimeout(r, 100));
    const ready = await readMarker(dir);
    if (ready) return { ok: true, value: summary(ready, true, { python: venvPython(dir) }) };
  }
  try {
    const again = await readMarker(dir);
    if (again) return { ok: true, value: summary(again, true, { python: venvPython(dir) }) };
    await rm(dir, { recursive: true, force: true });
    const made = await createVenv(job, python, dir);
    if (!made.ok) return made;
    const installed = await installInto(job, python, dir);
    if (!installed.ok) {
      await rm(dir, { recursive: true, force: true });
      return installed;
    }
    const modules = await topLevelModules(await sitePackages(dir));
    const marker: ReadyMarker = { requirements: input.dependencies, modules, installer };
    await writeFile(join(dir, READY), JSON.stringify(marker));
    return { ok: true, value: summary(marker, false, { python: venvPython(dir) }) };
  } finally {
    await unlink(lock).catch(() => {});
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function readMarker(dir: string): Promise<ReadyMarker | undefined> {
  try {
    const marker = JSON.parse(await readFile(join(dir, READY), "utf8")) as ReadyMarker;
    if (!(await stat(venvPython(dir)).catch(() => undefined))) return undefined;
    return marker;
  } catch {
    return undefined;
  }
}

function summary(m: ReadyMarker, cached: boolean, where: { python?: string; sysPath?: string }): InstallSummary {
  return { installer: m.installer, requirements: m.requirements, cached, modules: m.modules, ...where };
}

async function createVenv(job: Job, python: string, dir: string): Promise<Outcome | { ok: true }> {
  const inst = job.installer!;
  const ran =
    inst.kind === "uv"
      ? await run(job, inst.uv, ["venv", "--quiet", "--python", python, dir])
      : await run(job, python, ["-m", "venv", "--without-pip", dir]);
  if (ran.code === 0) return { ok: true };
  return failure(job, "creating the environment failed", ran);
}

async function installInto(job: Job, python: string, dir: string): Promise<Outcome | { ok: true }> {
  const inst = job.installer!;
  const deps = job.input.dependencies;
  if (inst.kind === "uv") {
    const ran = await run(job, inst.uv, ["pip", "install", "--python", venvPython(dir), ...deps]);
    return ran.code === 0 ? { ok: true } : failure(job, "installing the dependencies failed", ran);
  }
  // The base interpreter's pip installs into the environment (pip >= 22.3), sparing a pip copy per environment.
  const ran = await run(job, python, ["-m", "pip", "--python", venvPython(dir), "install", ...deps]);
  if (ran.code === 0) return { ok: true };
  if (job.stopped() || !/No module named pip|no such option: --python/.test(ran.output))
    return failure(job, "installing the dependencies failed", ran);
  // No usable pip in the base interpreter: give the environment its own.
  const seeded = await run(job, venvPython(dir), ["-m", "ensurepip", "--default-pip"]);
  if (seeded.code !== 0) {
    return {
      ok: false,
      error: `pip is not available for ${python} (install pip, or uv and set PI_CODE_EXECUTION_UV)`,
      hint: {
        id: HINT_IDS.installerUnavailable,
        text: "Install uv (and set PI_CODE_EXECUTION_UV or put it on PATH) or pip.",
      },
    };
  }
  const again = await run(job, venvPython(dir), ["-m", "pip", "install", ...deps]);
  return again.code === 0 ? { ok: true } : failure(job, "installing the dependencies failed", again);
}

async function sitePackages(dir: string): Promise<string> {
  const lib = join(dir, "lib");
  const versions = await readdir(lib).catch(() => [] as string[]);
  const py = versions.find((v) => v.startsWith("python"));
  return py ? join(lib, py, "site-packages") : lib;
}

const INSTALLED = ".pi-code-execution-installed.json";

async function sessionPackages(job: Job): Promise<Outcome> {
  const { input } = job;
  const python = input.python ?? "python3";
  const root = job.deps.sessionRoot ?? defaultSessionRoot();
  const session = input.session ?? { name: "session", ordinal: 0 };
  const target = join(sessionPackagesDir(root, job.deps.hostId), `${session.name}-${session.ordinal}`);
  await mkdir(target, { recursive: true, mode: 0o700 });
  const installer = job.installer!.kind;
  // Requirements installed before in this incarnation need no second install.
  const record = join(target, INSTALLED);
  const done: string[] = JSON.parse(await readFile(record, "utf8").catch(() => "[]"));
  const wanted = normalizeDependencies(input.dependencies);
  if (wanted.every((d) => done.includes(d))) {
    return {
      ok: true,
      value: { installer, requirements: input.dependencies, cached: true, sysPath: target, modules: [] },
    };
  }
  const before = new Set(await distInfos(target));
  const inst = job.installer!;
  const ran =
    inst.kind === "uv"
      ? await run(job, inst.uv, ["pip", "install", "--python", python, "--target", target, ...input.dependencies])
      : await run(job, python, ["-m", "pip", "install", "--upgrade", "--target", target, ...input.dependencies]);
  if (ran.code !== 0) return failure(job, "installing the dependencies failed", ran);
  const fresh = (await distInfos(target)).filter((d) => !before.has(d));
  const modules = await topLevelModules(target, fresh);
  await writeFile(record, JSON.stringify([...new Set([...done, ...wanted])]));
  return { ok: true, value: { installer, requirements: input.dependencies, cached: false, sysPath: target, modules } };
}

async function distInfos(dir: string): Promise<string[]> {
  return (await readdir(dir).catch(() => [] as string[])).filter((d) => d.endsWith(".dist-info"));
}

/** Top-level import names of the distributions in `dir` (all, or those named): `top_level.txt`, else RECORD. */
export async function topLevelModules(dir: string, only?: string[]): Promise<string[]> {
  const names = new Set<string>();
  for (const info of only ?? (await distInfos(dir))) {
    const top = await readFile(join(dir, info, "top_level.txt"), "utf8").catch(() => undefined);
    if (top !== undefined) {
      for (const n of top.split("\n")) if (n.trim()) names.add(n.trim().split("/")[0]);
      continue;
    }
    const recordText = await readFile(join(dir, info, "RECORD"), "utf8").catch(() => "");
    for (const line of recordText.split("\n")) {
      const path = line.split(",")[0];
      if (!path || path.startsWith("..") || path.startsWith("/")) continue;
      const first = path.split("/")[0];
      if (first.endsWith(".dist-info") || first.endsWith(".data") || first === "__pycache__" || first.endsWith(".pth"))
        continue;
      const mod = first.replace(/\.(py|pyc|so|pyd)$/, "").replace(/\..*$/, "");
      if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(mod)) names.add(mod);
    }
  }
  return [...names].sort();
}

/** Removes a host's session package directories (its shutdown). */
export async function removeSessionPackages(hostId: string, root: string = defaultSessionRoot()): Promise<void> {
  await rm(sessionPackagesDir(root, hostId), { recursive: true, force: true }).catch(() => {});
}
