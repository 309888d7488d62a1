// PEP 723 installs for the remote backend: they happen on the remote machine, through the same transport, with the
// remote interpreter's own pip (`-m pip install --target`), the user's PIP_* settings carried over as an argument
// (a transport does not forward the environment), and the result cached there per the same key as local
// environments. pip's lines stream back as install progress; the outcome is one JSON line on stdout. The
// backend (actors/process/remote.ts) only says how to reach its far side (`ops.remote`); installing is this job's.
import { spawn } from "node:child_process";
import type { Hint } from "../../machines/events.ts";
import { HINT_IDS } from "./hints.ts";
import { environmentKey } from "./install-targets.ts";
import { installerProgress, type Job, type Outcome } from "./installer.ts";
import { normalizeDependencies } from "../../lib/pep723.ts";
import type { RemoteSide, StartFailure } from "../process/operations.ts";

/** Runs on the remote side with `python -c`. Fresh runs: `<cache>/pi-code-supervisor/envs/<key>-<python tag>`,
 * built once under an flock and renamed into place when complete. Sessions: a package folder per session
 * incarnation under the remote temporary directory. Standard library only. */
const INSTALL = `
import fcntl, json, os, shutil, subprocess, sys, tempfile
mode, key, session, env_json, cwd = sys.argv[1:6]
deps = sys.argv[6:]
def out(obj):
    sys.stdout.write("\\n" + json.dumps(obj) + "\\n"); sys.stdout.flush(); sys.exit(0)
def modules(d, only=None):
    names = set()
    infos = only if only is not None else [n for n in os.listdir(d) if n.endswith(".dist-info")]
    for info in infos:
        try:
            with open(os.path.join(d, info, "top_level.txt")) as f:
                names.update(l.strip().split("/")[0] for l in f if l.strip()); continue
        except OSError:
            pass
        try:
            with open(os.path.join(d, info, "RECORD")) as f:
                for line in f:
                    first = line.split(",")[0].split("/")[0]
                    if not first or first.startswith((".", "/")) or first.endswith((".dist-info", ".data", ".pth")) or first == "__pycache__":
                        continue
                    m = first.split(".")[0]
                    if m.isidentifier(): names.add(m)
        except OSError:
            pass
    return sorted(names)
def pip(target, upgrade):
    env = dict(os.environ); env.update(json.loads(env_json)); env.pop("PYTHONPATH", None)
    try:
        os.chdir(os.path.join(os.path.expanduser("~"), cwd))
    except OSError:
        pass
    args = [sys.executable, "-m", "pip", "install", "--target", target] + (["--upgrade"] if upgrade else []) + deps
    p = subprocess.run(args, env=env, stdout=sys.stderr, stderr=sys.stderr)
    if p.returncode != 0:
        out({"ok": False, "code": p.returncode})
tag = "py%d%d" % sys.version_info[:2]
if mode == "fresh":
    root = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "pi-code-supervisor", "envs")
    os.makedirs(root, 0o700, exist_ok=True)
    d = os.path.join(root, "%s-%s" % (key, tag))
    marker = os.path.join(d, ".pi-code-execution.json")
    def ready():
        try:
            with open(marker) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None
    m = ready()
    if m: out({"ok": True, "cached": True, "sysPath": d, "modules": m["modules"]})
    with open(d + ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            sys.stderr.write("waiting for another run that is building the same environment\\n"); sys.stderr.flush()
            fcntl.flock(lock, fcntl.LOCK_EX)
        m = ready()
        if m: out({"ok": True, "cached": True, "sysPath": d, "modules": m["modules"]})
        tmp = tempfile.mkdtemp(prefix=os.path.basename(d) + ".tmp", dir=root)
        try:
            pip(tmp, False)
            mods = modules(tmp)
            with open(os.path.join(tmp, ".pi-code-execution.json"), "w") as f:
                json.dump({"requirements": deps, "modules": mods, "installer": "pip"}, f)
            shutil.rmtree(d, ignore_errors=True)
            os.rename(tmp, d)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    out({"ok": True, "cached": False, "sysPath": d, "modules": mods})
d = os.path.join(tempfile.gettempdir(), "pi-code-execution-%d" % os.getuid(), session)
os.makedirs(d, 0o700, exist_ok=True)
record = os.path.join(d, ".pi-code-execution-installed.json")
try:
    with open(record) as f:
        done = json.load(f)
except (OSError, ValueError):
    done = []
wanted = json.loads(key)
if all(w in done for w in wanted):
    out({"ok": True, "cached": True, "sysPath": d, "modules": []})
before = set(n for n in os.listdir(d) if n.endswith(".dist-info"))
pip(d, True)
fresh = [n for n in os.listdir(d) if n.endswith(".dist-info") and n not in before]
with open(record, "w") as f:
    json.dump(sorted(set(done + wanted)), f)
out({"ok": True, "cached": False, "sysPath": d, "modules": modules(d, fresh)})
`;

/** The user's pip settings for the remote pip (PIP_*), with the same chatter turned down as locally. */
function pipEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (k.startsWith("PIP_") && v !== undefined) picked[k] = v;
  return picked;
}

export async function remoteInstall(ctx: RemoteSide, job: Job): Promise<Outcome> {
  const { input } = job;
  const cwd = ctx.mapCwd(input.cwd);
  if (cwd === undefined) return { ok: false, error: `${input.cwd} has no remote directory to install from` };
  const session = input.session ?? { name: "session", incarnation: 0 };
  // The run's interpreter (probed on the remote side: a python_set_interpreter selection), else remote.python.
  const python = input.python ?? ctx.python;
  const key =
    input.mode === "fresh"
      ? environmentKey(`${ctx.label} ${python}`, undefined, input.dependencies)
      : JSON.stringify(normalizeDependencies(input.dependencies));
  const sessionDir = `host-${job.deps.hostId}/${session.name}-${session.incarnation}`;
  const command = [python, "-c", INSTALL, input.mode, key, sessionDir, JSON.stringify(pipEnv(job.env)), cwd];
  const argv = await ctx.argvFor([...command, ...input.dependencies]);
  if (!argv.ok) return { ok: false, error: argv.error.message, hint: backendHint(argv.error) };
  if (job.stopped()) return { ok: false, error: "stopped" };
  const [program, ...args] = argv.value;
  return new Promise((done) => {
    const child = spawn(program!, args, { stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    const progress = installerProgress(job, "pip");
    child.stdout!.on("data", (c: Buffer) => (stdout += c.toString("utf8")));
    child.stderr!.on("data", (c: Buffer) => progress.feed(c));
    child.once("spawn", () => job.track(child.pid!));
    child.once("error", (e: NodeJS.ErrnoException) =>
      done({
        ok: false,
        error: `${program} could not be started (${e.code ?? e.message})`,
        hint: remoteHint("remote_unreachable"),
      }),
    );
    child.once("close", (code, signal) => {
      if (child.pid) job.untrack(child.pid);
      const last = stdout.trim().split("\n").pop() ?? "";
      let r: { ok: boolean; cached?: boolean; sysPath?: string; modules?: string[]; code?: number } | undefined;
      try {
        r = JSON.parse(last);
      } catch {
        r = undefined;
      }
      const output = progress.output();
      const tail = output.trim().split("\n").slice(-25).join("\n").slice(-4000);
      if (r?.ok)
        return done({
          ok: true,
          value: {
            installer: "pip",
            requirements: input.dependencies,
            cached: !!r.cached,
            sysPath: r.sysPath!,
            modules: r.modules ?? [],
          },
        });
      if (r) {
        const noPip = /No module named pip/.test(output);
        return done({
          ok: false,
          error: `installing the dependencies on ${ctx.label} failed (pip, exit code ${r.code}):\n${tail}`,
          ...(noPip
            ? { hint: { id: HINT_IDS.installerUnavailable, text: `Install pip for ${python} on the remote side.` } }
            : {}),
        });
      }
      const how = signal ? `killed by ${signal}` : `exit code ${code}`;
      done({
        ok: false,
        error: `the remote install on ${ctx.label} did not finish (${how}):\n${tail}`,
        hint: remoteHint("remote_dependencies"),
      });
    });
  });
}

function remoteHint(id: string): Hint {
  return { id, text: "PEP 723 dependencies are installed on the remote side with its pip; see the message." };
}
function backendHint(f: StartFailure): Hint {
  return { id: f.hint ?? "remote_unreachable", text: f.message };
}
