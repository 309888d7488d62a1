// The bubblewrap backend: each runner starts under Debian's `bwrap` with a read-only system, its working directory
// (and `sandbox.writable`) writable, a private /tmp, $HOME hidden except `sandbox.readable`/`writable` paths, no
// network unless allowed, and new PID and IPC namespaces. The interrupt travels as a control frame: SIGINT to bwrap
// would kill the sandbox and the session with it. Stopping the process group (SIGTERM/SIGKILL) stops bwrap, whose
// PID namespace takes every process inside with it, so no child outlives the run.
import { spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, resolve, sep } from "node:path";
import { fail, ok, type Result } from "../../lib/result.ts";
import { spawnRunner, type ProcessOperations, type StartFailure } from "./operations.ts";

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
      done(fail({ message: `Cannot start the sandbox: ${bwrap}: ${e.code ?? e.message}`, hint: "sandbox_unavailable" })),
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
      return spawnRunner(spec, { interrupt: "frame", wrapper: bwrapArgv(options, spec) });
    },
    health: check,
    close: async () => {},
  };
}
