// The bubblewrap backend: each runner starts under Debian's `bwrap` with a read-only system, its working directory
// (and `sandbox.writable`) writable, a private /tmp, $HOME hidden except `sandbox.readable`/`writable` paths, no
// network unless allowed, and new PID and IPC namespaces. The interrupt travels as a control frame: SIGINT to bwrap
// would kill the sandbox and the session with it. Stopping the process group (SIGTERM/SIGKILL) stops bwrap, whose
// PID namespace takes every process inside with it, so no child outlives the run.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, realpathSync } from "node:fs";
import { constants, homedir, tmpdir } from "node:os";
import { dirname, resolve, sep } from "node:path";
import { fail, ok, type Result } from "../../lib/result.ts";
import {
  spawnRunner,
  type ProcessOperations,
  type RunnerExit,
  type RunnerHandle,
  type StartFailure,
} from "./operations.ts";

export interface SandboxSettings {
  /** Paths writable inside besides the working directory. */
  writable: string[];
  /** Paths readable inside that would otherwise be hidden (under $HOME or /tmp). */
  readable: string[];
  network: boolean;
}

export interface SandboxOptions extends SandboxSettings {
  /** Folders the runner needs to read that may be hidden: its own code, PEP 723 environments, session packages. */
  support: string[];
  bwrap?: string;
  home?: string;
}

const real = (p: string): string => {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
};

const inside = (p: string, dir: string) => p === dir || p.startsWith(dir.endsWith(sep) ? dir : dir + sep);

/** The bwrap command line for one runner (exported for tests). */
export function bwrapArgv(
  options: SandboxOptions,
  spec: { executable: string; args: string[]; cwd: string },
): string[] {
  const home = real(options.home ?? homedir());
  const tmp = real(tmpdir());
  const hidden = (p: string) => inside(p, home) || inside(p, tmp) || inside(p, "/tmp");
  const argv = [options.bwrap ?? "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"];
  argv.push("--tmpfs", "/tmp");
  if (tmp !== "/tmp") argv.push("--tmpfs", tmp);
  argv.push("--tmpfs", home);
  // The interpreter (a venv's and the installation it links to) may live under $HOME (pyenv) or /tmp.
  const exe = spec.executable.includes("/") ? resolve(spec.cwd, spec.executable) : undefined;
  const roots = exe ? [dirname(dirname(exe)), dirname(dirname(real(exe)))] : [];
  const readOnly = [...options.support, ...roots, ...options.readable].map(real).filter(hidden);
  // Parents before children: a later bind of a child shows through an earlier one of its parent.
  for (const p of [...new Set(readOnly)].sort()) argv.push("--ro-bind-try", p, p);
  for (const p of [...new Set([...options.writable.map(real), real(spec.cwd)])].sort()) argv.push("--bind", p, p);
  argv.push("--unshare-pid", "--unshare-ipc", "--unshare-uts");
  if (!options.network) argv.push("--unshare-net");
  argv.push("--die-with-parent", "--new-session", "--chdir", real(spec.cwd), "--setenv", "TMPDIR", "/tmp");
  argv.push("--", spec.executable, ...spec.args);
  return argv;
}

/** Runs `bwrap` once with the same isolation: a host without it (or without user namespaces) is found out before
 * any run, with bwrap's own message. */
function probe(bwrap: string, network: boolean): Promise<Result<string, StartFailure>> {
  const args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-ipc"];
  if (!network) args.push("--unshare-net");
  args.push("--die-with-parent", "--", "/bin/true");
  return new Promise((done) => {
    let err = "";
    const child = spawn(bwrap, args, { stdio: ["ignore", "ignore", "pipe"] });
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    child.once("error", (e: NodeJS.ErrnoException) =>
      done(
        fail({ message: `Cannot start the sandbox: ${bwrap}: ${e.code ?? e.message}`, hint: "sandbox_unavailable" }),
      ),
    );
    child.once("close", (code) =>
      done(
        code === 0
          ? ok(`bwrap works${network ? " (network allowed)" : " (no network)"}`)
          : fail({
              message: `Cannot start the sandbox: ${err.trim() || `bwrap exited with ${code}`}`,
              hint: "sandbox_unavailable",
            }),
      ),
    );
  });
}

export function sandboxOperations(options: SandboxOptions): ProcessOperations {
  const bwrap = options.bwrap ?? "bwrap";
  let works: Promise<Result<string, StartFailure>> | undefined;
  const check = () => {
    works ??= probe(bwrap, options.network).then((r) => {
      if (!r.ok) works = undefined; // try again next time: the user may install it meanwhile
      return r;
    });
    return works;
  };
  return {
    backend: { kind: "sandbox", label: `sandbox (bwrap, ${options.network ? "network" : "no network"})` },
    async start(spec) {
      const usable = await check();
      if (!usable.ok) return usable;
      const started = await spawnRunner(spec, { interrupt: "frame", wrapper: bwrapArgv(options, spec) });
      return started.ok ? ok(throughBwrap(started.value)) : started;
    },
    health: check,
    close: async () => {},
  };
}

const SIGNALS = new Map(Object.entries(constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));

/** bwrap reports a command killed by signal N as exit status 128+N (its init passes the status on, and
 * `--json-status-fd` says no more than that), so the status is read back as the signal, as shells do. A runner
 * that itself exits with 129..192 is indistinguishable and is reported as that signal (documented). */
export function bwrapExit(exit: RunnerExit): RunnerExit {
  if (exit.signal || exit.code === null || exit.code <= 128) return exit;
  const signal = SIGNALS.get(exit.code - 128);
  return signal ? { ...exit, code: null, signal } : exit;
}

/** The sandbox's init (bwrap's child, pid 1 inside): it leads the process group of everything inside
 * (`--new-session`), and as a namespace's init it ignores signals from outside other than SIGKILL. */
function sandboxInit(bwrapPid: number): number | undefined {
  try {
    const first = readFileSync(`/proc/${bwrapPid}/task/${bwrapPid}/children`, "utf8").trim().split(" ")[0];
    if (first) return Number(first);
  } catch {
    // a kernel without CONFIG_PROC_CHILDREN: look through the process table
  }
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === bwrapPid) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** The runner's handle as seen through bwrap: exits carry the runner's signal, and the grace signals (SIGTERM,
 * SIGHUP...) reach the processes inside rather than bwrap, which would die of them at once and take the runner with
 * it, so code that ignores SIGTERM is still seen to need the SIGKILL. SIGKILL stops bwrap, and with it the sandbox. */
function throughBwrap(handle: RunnerHandle): RunnerHandle {
  return {
    ...handle,
    onExit: (fn) => handle.onExit((exit) => fn(bwrapExit(exit))),
    signalGroup(signal) {
      if (signal !== "SIGKILL") {
        // Looked up each time (never cached): a pid of a sandbox that has gone may belong to someone else by now.
        const init = sandboxInit(handle.pid);
        if (init !== undefined) {
          try {
            process.kill(-init, signal);
            return ok(undefined);
          } catch {
            // the sandbox is going away: signal bwrap as before
          }
        }
      }
      return handle.signalGroup(signal);
    },
  };
}
