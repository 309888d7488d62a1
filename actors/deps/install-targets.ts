// Where dependencies go. Fresh runs: a virtual environment cached under the agent dir, keyed by the normalized
// dependency set and the interpreter, built once even when runs race for it (a lock file; a builder that died is
// taken over). Sessions: a `--target` package directory per session incarnation, removed when the host shuts down.
import { createHash } from "node:crypto";
import { mkdir, open, readdir, readFile, rm, stat, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { InstallSummary } from "../../machines/events.ts";
import { HINT_IDS } from "./hints.ts";
import { failure, run, runPip, venvPython, type Job, type Outcome } from "./installer.ts";
import { knownVersion, rememberInterpreter } from "../interpreter/interpreter.ts";
import { getAgentDir } from "@earendil-works/pi-coding-agent";
import { normalizeDependencies } from "./pep723.ts";

/** In Pi's agent directory, as Pi resolves it (`getAgentDir()`). */
export function defaultEnvRoot(): string {
  return join(getAgentDir(), "pi-code-execution", "envs");
}

export function defaultSessionRoot(): string {
  return join(tmpdir(), `pi-code-execution-${process.getuid?.() ?? "user"}`);
}

/** The directory of a host's session packages (removed at its shutdown). */
export function sessionPackagesDir(root: string, hostId: string): string {
  return join(root, `host-${hostId}`);
}

/** The cache key of a fresh-run environment: the normalized requirements and the interpreter (path and version). */
export function environmentKey(python: string, version: string | undefined, deps: readonly string[]): string {
  return createHash("sha256")
    .update(JSON.stringify({ python, version: version ?? "", deps: normalizeDependencies(deps) }))
    .digest("hex")
    .slice(0, 20);
}

/** Written last: an environment without it is incomplete (a failed or interrupted build) and is rebuilt. */
const READY = ".pi-code-execution.json";

interface ReadyMarker {
  requirements: string[];
  modules: string[];
  installer: "uv" | "pip";
}

export async function freshEnvironment(job: Job): Promise<Outcome> {
  const { input } = job;
  const python = input.python ?? "python3";
  const root = job.deps.envRoot ?? defaultEnvRoot();
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
  // The environment has no pip of its own: its base interpreter's pip installs into it (pip >= 22.3).
  const ran = await runPip(job, venvPython(dir), ["install", ...deps]);
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

export async function sessionPackages(job: Job): Promise<Outcome> {
  const { input } = job;
  const python = input.python ?? "python3";
  const root = job.deps.sessionRoot ?? defaultSessionRoot();
  const session = input.session ?? { name: "session", incarnation: 0 };
  const target = join(sessionPackagesDir(root, job.deps.hostId), `${session.name}-${session.incarnation}`);
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
      : await runPip(job, python, ["install", "--upgrade", "--target", target, ...input.dependencies]);
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
