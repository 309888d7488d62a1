// The bubblewrap backend: each runner starts under Debian's `bwrap` with a read-only system, its working directory
// (and `sandbox.writable`) writable but its `.pi`, `.venv` and `venv` read-only, a private /tmp, $HOME hidden except
// `sandbox.readable`/`writable` paths, no capabilities even as root, an allow-listed environment (sandbox-env.ts),
// no network unless allowed (then also /run hidden and unix sockets refused by a seccomp filter, seccomp.ts), and
// new PID and IPC namespaces. docs/sandbox.md lists each promise with its test. The interrupt travels as a control
// frame: SIGINT to bwrap would kill the sandbox and the session with it. Stopping the process group (SIGTERM/
// SIGKILL) stops bwrap, whose PID namespace takes every process inside with it, so no child outlives the run.
// Past 400 lines, one concept: the bwrap command line is one list of promises (docs/sandbox.md), each mount or
// flag beside the rule it keeps; the environment and the seccomp filter are already apart (sandbox-env.ts,
// seccomp.ts).
import { spawn, spawnSync } from "node:child_process";
import {
  accessSync,
  closeSync,
  openSync,
  constants as fs,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { constants, homedir, tmpdir } from "node:os";
import { basename, dirname, join, resolve, sep } from "node:path";
import { fail, ok, type Result } from "../../lib/result.ts";
import {
  spawnRunner,
  type ProcessOperations,
  type RunnerExit,
  type RunnerHandle,
  type StartFailure,
} from "./operations.ts";
import { spawnLocalChild, type ChildExit } from "./children.ts";
import { installerNames, sandboxEnv } from "./sandbox-env.ts";
import { unixSocketFilter } from "./seccomp.ts";

export interface SandboxSettings {
  /** Paths writable inside besides the working directory. */
  writable: string[];
  /** Paths readable inside that would otherwise be hidden (under $HOME or /tmp). */
  readable: string[];
  network: boolean;
  /** Names of environment variables passed in besides the allow-list (sandbox-env.ts); absent: none. */
  env?: string[];
}

export interface SandboxOptions extends SandboxSettings {
  /** Folders the runner needs to read that may be hidden: its own code, PEP 723 environments, session packages. */
  support: string[];
  /** Pi's project folder name (CONFIG_DIR_NAME), kept read-only inside; `.pi` when not given. */
  configDir?: string;
  bwrap?: string;
  home?: string;
}

/** What runs in the sandbox: a program (a path, or a name looked up on PATH inside), its arguments, its directory. */
export interface SandboxedCommand {
  executable: string;
  args: string[];
  cwd: string;
}

/** How a child other than a runner goes through the same sandbox. */
export interface SandboxChildOptions {
  /** A terminal's shell: keeps the controlling terminal (no `--new-session`; the pty is the sandbox's own, so
   * TIOCSTI reaches nothing outside). */
  tty?: boolean;
  /** Replaces the writable set (the working directory and `sandbox.writable`): a dependency install that may write
   * only its environment directory. Empty: nothing is writable but the private /tmp. */
  writable?: string[];
}

/** Entries of a writable directory the host acts on (Pi's project folder with its settings, interpreter discovery):
 * read-only inside, and held by an empty read-only mount when absent so that sandboxed code cannot create them.
 * Pi's project folder is `configDir` (Pi's CONFIG_DIR_NAME, handed down; `.pi` by default). */
export function protectedNames(configDir = ".pi"): string[] {
  return [configDir, ".venv", "venv"];
}

const real = (p: string): string => {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
};

const inside = (p: string, dir: string) => p === dir || p.startsWith(dir.endsWith(sep) ? dir : dir + sep);

/** The seccomp program's file (read by bwrap on fd 9, so any spawner can start the argv, a PTY included): written
 * once per process into a private directory, removed when the process exits. */
let filterFile: string | undefined;
const FILTER_FD = "9";
/** The seccomp filter's file under no network (undefined with the network on, or on an architecture it cannot be
 * built for: health says so), or why it could not be written (then nothing runs). */
function seccompFilter(network: boolean): Result<string | undefined, StartFailure> {
  if (network) return ok(undefined);
  const filter = unixSocketFilter();
  if (!filter.ok) return ok(undefined);
  try {
    return ok(seccompFile(filter.program));
  } catch (e) {
    return fail({
      message: `Cannot write the sandbox's seccomp filter: ${(e as Error).message}`,
      hint: "sandbox_unavailable",
    });
  }
}

function seccompFile(program: Buffer): string {
  if (filterFile && existsSync(filterFile)) return filterFile;
  const dir = mkdtempSync(join(tmpdir(), "pcs-seccomp-"));
  filterFile = join(dir, "unix-sockets.bpf");
  writeFileSync(filterFile, program, { mode: 0o400 });
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  return filterFile;
}

/** The interpreter as it runs inside: a virtual environment keeps its own path (Python finds its pyvenv.cfg next to
 * the path it was started as), anything else is started by its real path, so a symlink (`~/bin/python3`) never
 * decides what is shown. Its roots (the venv, the installation) are shown read-only; one that holds a hidden area
 * ($HOME, /tmp, or `/`) is refused rather than shown whole. */
function interpreterRoots(
  spec: SandboxedCommand,
  hiddenAreas: string[],
): Result<{ executable: string; roots: string[] }, StartFailure> {
  if (!spec.executable.includes("/")) return ok({ executable: spec.executable, roots: [] });
  const given = resolve(spec.cwd, spec.executable);
  const resolved = real(given);
  const dir = real(dirname(given));
  const venv = existsSync(join(dirname(dir), "pyvenv.cfg")) ? dirname(dir) : undefined;
  const roots = [...(venv ? [venv] : []), dirname(dirname(resolved))];
  for (const root of roots) {
    const area = hiddenAreas.find((a) => inside(a, root));
    if (area !== undefined) {
      return fail({
        message:
          `The sandbox will not start ${given}${resolved === given ? "" : ` (${resolved})`}: its root ${root} ` +
          `holds ${area}, which the sandbox hides; showing the root would show all of it.`,
        hint: "sandbox_interpreter_root",
      });
    }
  }
  return ok({ executable: venv ? join(dir, basename(given)) : resolved, roots });
}

/** Mount arguments that keep `protectedNames()` of each writable directory on the way to the working directory
 * read-only (an existing entry bound onto itself; an absent one held by an empty read-only tmpfs, whose mount point
 * bwrap creates on the host as an empty directory). A name inside an explicitly writable path stays writable. */
function protectedMounts(cwd: string, writable: string[], configDir?: string): string[] {
  const args: string[] = [];
  const dirs: string[] = [];
  for (let d = cwd; ; d = dirname(d)) {
    if (writable.some((w) => inside(d, w))) dirs.push(d);
    if (dirname(d) === d) break;
  }
  for (const d of dirs.reverse()) {
    for (const name of protectedNames(configDir)) {
      const p = join(d, name);
      if (writable.some((w) => inside(w, p))) continue;
      let entry: ReturnType<typeof lstatSync> | undefined;
      try {
        entry = lstatSync(p);
      } catch {
        entry = undefined;
      }
      if (entry?.isSymbolicLink()) {
        // A mount follows the link: binding it would show its target wherever it points (a hostile repository's
        // `.pi -> ~/.ssh`). Only a target in a writable path is kept read-only; the link itself stays replaceable.
        const target = real(p);
        if (target !== p && existsSync(target) && writable.some((w) => inside(target, w)))
          args.push("--ro-bind", target, target);
        continue;
      }
      if (entry) {
        args.push("--ro-bind", p, p);
        continue;
      }
      try {
        accessSync(d, fs.W_OK);
      } catch {
        continue; // the directory cannot be written here: nor from inside
      }
      args.push("--tmpfs", p, "--remount-ro", p);
    }
  }
  return args;
}

/**
 * The command line that runs `spec` in the sandbox: bwrap's argv (started by any spawner: the seccomp program comes
 * from a file through `/bin/sh`), or why the sandbox refuses it (an interpreter whose root holds $HOME). Start it
 * with the environment `sandboxEnv(env, options.env ?? [], { home: options.home ?? homedir() })`: bwrap passes its own
 * environment on, and a filtered one keeps values out of argv.
 */
export function bwrapArgv(
  options: SandboxOptions,
  spec: SandboxedCommand,
  child: SandboxChildOptions = {},
): Result<string[], StartFailure> {
  const home = real(options.home ?? homedir());
  const tmp = real(tmpdir());
  const hiddenAreas = [...new Set([home, tmp, "/tmp", ...(options.network ? [] : ["/run"])])];
  const hidden = (p: string) => hiddenAreas.some((a) => inside(p, a));
  const target = interpreterRoots(spec, hiddenAreas);
  if (!target.ok) return target;
  const cwd = real(spec.cwd);
  const argv = [options.bwrap ?? "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"];
  argv.push("--tmpfs", "/tmp");
  if (tmp !== "/tmp") argv.push("--tmpfs", tmp);
  argv.push("--tmpfs", home);
  if (!options.network) {
    // Sockets of the host's services (the session bus, docker.sock, ...) live here.
    argv.push("--tmpfs", "/run");
    if (isDirectory("/var/run")) argv.push("--tmpfs", "/var/run");
  }
  const writable = [...new Set((child.writable ?? [...options.writable, cwd]).map(real))];
  // A working directory that is not writable (an install's) is still shown: the run starts in it.
  const shown = writable.some((w) => inside(cwd, w)) ? [] : [cwd];
  const readOnly = [...options.support, ...target.value.roots, ...options.readable, ...shown].map(real).filter(hidden);
  // Parents before children (a later bind of a child shows through an earlier one of its parent); a path both
  // readable and writable is writable.
  const mounts = new Map<string, "--ro-bind-try" | "--bind">(readOnly.map((p) => [p, "--ro-bind-try"]));
  for (const p of writable) mounts.set(p, "--bind");
  for (const p of [...mounts.keys()].sort()) argv.push(mounts.get(p)!, p, p);
  argv.push(...protectedMounts(cwd, writable, options.configDir));
  argv.push("--unshare-pid", "--unshare-ipc", "--unshare-uts");
  if (!options.network) argv.push("--unshare-net");
  // Root outside keeps every capability inside unless told: remount / read-write, unmount the tmpfs over $HOME. A
  // user namespace of its own (uid 0 stays 0) empties even the bounding set, and no further one can be made inside
  // (they open much of the kernel to unprivileged code).
  argv.push("--unshare-user");
  if (canDisableUserns(argv[0]!)) argv.push("--disable-userns");
  argv.push("--cap-drop", "ALL");
  argv.push("--die-with-parent");
  if (!child.tty) argv.push("--new-session");
  argv.push("--chdir", cwd);
  const filter = seccompFilter(options.network);
  if (!filter.ok) return filter;
  if (filter.value) argv.push("--seccomp", FILTER_FD);
  argv.push("--", target.value.executable, ...spec.args);
  const prefix = filter.value ? ["/bin/sh", "-c", `exec "$@" ${FILTER_FD}<"$0"`, filter.value] : [];
  return ok([...prefix, ...argv]);
}

/** Whether this bwrap can refuse user namespaces inside (`--disable-userns`, bubblewrap 0.8): asked once per path
 * from its `--help`. Older ones still run, with nested user namespaces allowed (health() says so). */
const disableUserns = new Map<string, boolean>();
function canDisableUserns(bwrap: string): boolean {
  let known = disableUserns.get(bwrap);
  if (known === undefined) {
    const help = spawnSync(bwrap, ["--help"], { encoding: "utf8", timeout: 10_000 });
    known = `${help.stdout ?? ""}`.includes("--disable-userns");
    if (!help.error) disableUserns.set(bwrap, known); // a bwrap missing now may be installed later
  }
  return known;
}

function isDirectory(p: string): boolean {
  try {
    return lstatSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Runs `bwrap` once with the same isolation: a host without it (or without user namespaces) is found out before
 * any run, with bwrap's own message. */
function probe(bwrap: string, network: boolean): Promise<Result<string, StartFailure>> {
  const args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-ipc"];
  if (!network) args.push("--unshare-net");
  const nested = canDisableUserns(bwrap);
  args.push("--unshare-user", ...(nested ? ["--disable-userns"] : []));
  args.push("--cap-drop", "ALL", "--die-with-parent");
  // The seccomp filter too, as runs get it (a kernel without seccomp is found out here), on the same fd.
  const filter = seccompFilter(network);
  if (!filter.ok) return Promise.resolve(filter);
  let fd: number | undefined;
  if (filter.value) {
    try {
      fd = openSync(filter.value, "r");
      args.push("--seccomp", FILTER_FD);
    } catch (e) {
      return Promise.resolve(
        fail({
          message: `Cannot read the sandbox's seccomp filter: ${(e as Error).message}`,
          hint: "sandbox_unavailable",
        }),
      );
    }
  }
  args.push("--", "/bin/true");
  const extra = fd === undefined ? [] : [...Array(Number(FILTER_FD) - 3).fill("ignore"), fd];
  return new Promise((done) => {
    let err = "";
    const child = spawn(bwrap, args, { stdio: ["ignore", "ignore", "pipe", ...extra] });
    if (fd !== undefined) closeSync(fd);
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    child.once("error", (e: NodeJS.ErrnoException) =>
      done(
        fail({ message: `Cannot start the sandbox: ${bwrap}: ${e.code ?? e.message}`, hint: "sandbox_unavailable" }),
      ),
    );
    child.once("close", (code) => {
      if (code !== 0) {
        return done(
          fail({
            message: `Cannot start the sandbox: ${err.trim() || `bwrap exited with ${code}`}`,
            hint: "sandbox_unavailable",
          }),
        );
      }
      const notes = nested
        ? []
        : ["this bwrap cannot refuse nested user namespaces (--disable-userns: bubblewrap 0.8)"];
      if (network) notes.unshift("network allowed: unix sockets on the host reachable");
      else {
        const filter = unixSocketFilter();
        notes.unshift(filter.ok ? "no network, no unix sockets" : `no network; ${filter.why}`);
      }
      done(ok(`bwrap works (${notes.join("; ")})`));
    });
  });
}

/** How a PTY child runs inside the sandbox: as the foreground job of `sh -m` (see `spawn` below). dash, leaving job
 * control at its exit, hands the terminal back to the process group it started in; bwrap's is outside the sandbox's
 * pid namespace, so that fails and dash exits 2, whatever the program's own exit code ("Cannot set tty process
 * group"). So a process group inside the namespace is made first and given the terminal, then `sh -m` starts from
 * it: Perl's POSIX module does that where /usr/bin/perl exists (perl-base is Essential on Debian and Ubuntu);
 * elsewhere the shell's exit code is reported as dash leaves it. */
const FOREGROUND_JOB = existsSync("/usr/bin/perl")
  ? [
      "/usr/bin/perl",
      "-MPOSIX",
      "-e",
      'POSIX::setpgid(0, 0); $SIG{TTOU} = "IGNORE"; POSIX::tcsetpgrp(0, POSIX::getpgrp()); $SIG{TTOU} = "DEFAULT"; ' +
        'exec { "/bin/sh" } "sh", "-mc", q{"$@"}, "sh", @ARGV or exit 127',
    ]
  : ["/bin/sh", "-mc", '"$@"', "sh"];

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
      const wrapper = bwrapArgv(options, spec);
      if (!wrapper.ok) return wrapper;
      const env = sandboxEnv(spec.env, options.env ?? [], { home: options.home ?? homedir() });
      const started = await spawnRunner({ ...spec, env }, { interrupt: "frame", wrapper: wrapper.value });
      return started.ok ? ok(throughBwrap(started.value)) : started;
    },
    async spawn(spec) {
      const usable = await check();
      if (!usable.ok) return usable;
      const wrapper = bwrapArgv(
        options,
        { executable: spec.file, args: spec.args, cwd: spec.cwd },
        { tty: spec.tty !== undefined, ...(spec.writable ? { writable: spec.writable } : {}) },
      );
      if (!wrapper.ok) return wrapper;
      let argv = wrapper.value;
      if (spec.tty) {
        // A PTY child keeps its terminal (the session's own PTY, never Pi's, so TIOCSTI can only type into itself)
        // and runs as the foreground job of `sh -m`: a process group of its own, so ^C typed as a byte interrupts
        // the program rather than killing the sandbox's init.
        const end = argv.indexOf("--");
        argv = [...argv.slice(0, end + 1), ...FOREGROUND_JOB, ...argv.slice(end + 1)];
      }
      const pass = [...(options.env ?? []), ...(spec.purpose === "install" ? installerNames(spec.env) : [])];
      const env = sandboxEnv(spec.env, pass, { home: options.home ?? homedir() });
      return spawnLocalChild(
        { ...spec, env },
        {
          argv,
          exit: (e) => bwrapExit(e as RunnerExit) as ChildExit,
          // A PTY child's signals go where its terminal's would (the foreground job): the init is not a group there.
          signalTarget: spec.tty ? (pid) => foregroundGroup(pid) ?? sandboxInit(pid) : sandboxInit,
        },
      );
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

/** The foreground process group of a PTY child's terminal (tpgid, field 8 of /proc/<pid>/stat) when it is not the
 * wrapper's own group: where a ^C typed there would go. */
function foregroundGroup(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const tpgid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[5]);
    return tpgid > 0 && tpgid !== pid ? tpgid : undefined;
  } catch {
    return undefined;
  }
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
