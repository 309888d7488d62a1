// Where dependencies go. Fresh runs: a virtual environment cached under the agent dir, keyed by the normalized
// dependency set and the interpreter, built once even when processes race for it (proper-lockfile: a builder keeps
// its lock fresh, and one that died or froze is taken over once its lock is stale). Sessions: a `--target` package
// directory per session incarnation, removed when the host shuts down. Under the sandbox the installer may write only
// the directory being built (created here first), takes wheels only, and builds environments of their own (keyed
// apart from this machine's, so a run on the local backend never picks up what a sandboxed install wrote).
import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import type * as ProperLockfile from "proper-lockfile";
import { join } from "node:path";
import type { InstallSummary } from "../../machines/events.ts";
import { HINT_IDS } from "./hints.ts";
import { failure, run, runPip, venvPython, type Job, type Outcome } from "./installer.ts";
import { knownVersion, rememberInterpreter } from "../interpreter/interpreter.ts";
import { normalizeDependencies } from "../../lib/pep723.ts";
import { wheelsOnly } from "./sandbox-policy.ts";
import { fail, ok, type Result } from "../../lib/result.ts";

// Loaded with Node's own require, once per process: Pi loads this module afresh for every Pi session, and
// proper-lockfile registers an exit handler (signal-exit) each time it is evaluated.
const lockfile = createRequire(import.meta.url)("proper-lockfile") as typeof ProperLockfile;

/** A builder's lock older than this (not refreshed) is stale: its builder died or froze, and a waiter takes over.
 * proper-lockfile refreshes a held lock every half of it. */
export const LOCK_STALE_MS = 10_000;

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
  const root = job.deps.envRoot;
  const version = knownVersion(python, job.ops);
  const key = environmentKey(sandboxed(job) ? `${python} (sandbox)` : python, version, input.dependencies);
  const dir = join(root, key);
  const installer = job.installer!.kind;
  if (version) rememberInterpreter(venvPython(dir), { version, venv: dir }, job.ops);
  const cached = await readMarker(dir);
  if (cached) return { ok: true, value: summary(cached, true, { python: venvPython(dir) }) };
  await mkdir(root, { recursive: true, mode: 0o700 });
  // One builder per environment: others wait for its marker, or take over once its lock is stale.
  let lost: Error | undefined;
  let release: (() => Promise<void>) | undefined;
  for (let waited = false; ;) {
    if (job.stopped()) return { ok: false, error: "stopped" };
    const held = await tryBuildLock(root, key, job.deps.lockStaleMs ?? LOCK_STALE_MS, (e) => (lost = e));
    if (!held.ok) return { ok: false, error: held.error };
    if (held.value) {
      release = held.value;
      break;
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
    // Created here, so that it exists to be the one writable path of a sandboxed installer.
    await mkdir(dir, { recursive: true, mode: 0o700 });
    job.writable = [dir];
    const made = await createVenv(job, python, dir);
    if (!made.ok) return made;
    const installed = await installInto(job, python, dir);
    // The lock went stale under this builder (it was frozen past the stale time, or the lock was removed): another
    // run may be building the same directory now, so this one leaves it alone.
    if (lost) return { ok: false, error: `the lock on ${dir} was lost while building it (${lost.message}); run again` };
    if (!installed.ok) {
      await rm(dir, { recursive: true, force: true });
      return installed;
    }
    const modules = await topLevelModules(await sitePackages(dir));
    const marker: ReadyMarker = { requirements: input.dependencies, modules, installer };
    await writeFile(join(dir, READY), JSON.stringify(marker));
    return { ok: true, value: summary(marker, false, { python: venvPython(dir) }) };
  } finally {
    await release().catch(() => {});
  }
}

/**
 * The build lock of environment `key` (its release), or undefined while another builder holds it. Locks are
 * taken through a gate, a second lock held only for the attempt: two waiters that find a dead builder's lock stale
 * at once cannot both remove it and build (proper-lockfile's stale removal is a stat, then an rmdir).
 */
async function tryBuildLock(
  root: string,
  key: string,
  staleMs: number,
  onLost: (e: Error) => void,
): Promise<Result<(() => Promise<void>) | undefined>> {
  const options = { realpath: false, stale: staleMs, retries: 0 };
  const busy = (e: unknown) => (e as NodeJS.ErrnoException).code === "ELOCKED";
  const why = (e: unknown) => `cannot lock the environment ${join(root, key)}: ${(e as Error).message}`;
  let gate: () => Promise<void>;
  try {
    gate = await lockfile.lock(join(root, `${key}.gate`), { ...options, onCompromised: () => {} });
  } catch (e) {
    return busy(e) ? ok(undefined) : fail(why(e));
  }
  try {
    const release = await lockfile.lock(join(root, key), {
      ...options,
      lockfilePath: join(root, `${key}.build.lock`),
      onCompromised: onLost,
    });
    return ok(release);
  } catch (e) {
    return busy(e) ? ok(undefined) : fail(why(e));
  } finally {
    await gate().catch(() => {});
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

const sandboxed = (job: Job) => job.ops?.backend.kind === "sandbox";

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
  const deps = [...wheelsOnly(inst, sandboxed(job)), ...job.input.dependencies];
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
  job.writable = [target];
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
  const deps = [...wheelsOnly(inst, sandboxed(job)), ...input.dependencies];
  const ran =
    inst.kind === "uv"
      ? await run(job, inst.uv, ["pip", "install", "--python", python, "--target", target, ...deps])
      : await runPip(job, python, ["install", "--upgrade", "--target", target, ...deps]);
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
