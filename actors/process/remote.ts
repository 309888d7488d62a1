// The remote backend: a runner on another machine behind a transport command (actors/process/transport.ts). The
// relay (runtime-py/relay.py) multiplexes the runner's stdout, stderr and control channel onto one byte stream
// (actors/process/mux.ts), so user output still cannot reach the control channel. The runtime is shipped on first
// use to a content-addressed, verified cache folder on the remote side. Interrupts and kills travel as relay
// messages; a dropped connection makes the runner `lost` (hint remote_disconnected) and the relay kills the remote
// process group when its stdin ends. Artifacts, journal and logs stay on this machine.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve, sep } from "node:path";
import { fail, ok, type Result } from "../../lib/result.ts";
import type { RemoteSettings } from "../../store/settings.ts";
import { encodeFrame, FrameDecoder, type Frame } from "./frames.ts";
import { MUX, MuxDecoder, muxFrame } from "./mux.ts";
import type { ProcessOperations, RunnerExit, RunnerHandle, RunnerSpec, StartFailure } from "./operations.ts";
import { classifyFailure, remoteLabel, sshBase, transportArgv } from "./transport.ts";
import { stopGroup } from "./registry.ts";
import { remoteInstall } from "./remote-install.ts";

const RUNTIME_DIR = new URL("../../runtime-py/", import.meta.url).pathname;
const START_TIMEOUT_MS = 30_000;
const DRAIN_AFTER_EXIT_MS = 500;

/** The runtime's files and their content address: sha256 over `name\0length\0bytes` of each .py, sorted by name
 * (the remote bootstrap computes the same to verify its cache). */
export function runtimeBundle(dir = RUNTIME_DIR): { hash: string; files: Record<string, string> } {
  const h = createHash("sha256");
  const files: Record<string, string> = {};
  for (const name of readdirSync(dir)
    .filter((n) => n.endsWith(".py"))
    .sort()) {
    const bytes = readFileSync(join(dir, name));
    h.update(`${name}\0${bytes.length}\0`).update(bytes);
    files[name] = bytes.toString("utf8");
  }
  return { hash: h.digest("hex"), files };
}

/** Runs on the remote side with `python -c`: verify or receive the runtime, enter the directory, hand over to the
 * relay. Standard library only; any Python 3.9+. */
const BOOT = `
import hashlib, json, os, sys
h, mode, cwd, limits = sys.argv[1:5]
def put(obj):
    b = json.dumps(obj).encode()
    os.write(1, bytes([0]) + len(b).to_bytes(4, "big") + b)
def die(message, hint):
    put({"type": "error", "message": message, "hint": hint}); sys.exit(3)
if sys.version_info < (3, 9):
    die("remote Python %d.%d is too old (3.9 or newer is needed): %s" % (sys.version_info[:2] + (sys.executable,)), "remote_python")
root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
base = os.path.join(root, "pi-code-supervisor", "runtime", h)
def digest(d):
    m = hashlib.sha256()
    for n in sorted(os.listdir(d)):
        if n.endswith(".py"):
            with open(os.path.join(d, n), "rb") as f:
                b = f.read()
            m.update(("%s\\0%d\\0" % (n, len(b))).encode() + b)
    return m.hexdigest()
try:
    good = digest(base) == h
except OSError:
    good = False
if not good:
    put({"type": "ship"})
    head = sys.stdin.buffer.read(5)
    body = sys.stdin.buffer.read(int.from_bytes(head[1:], "big")) if len(head) == 5 else b""
    files = json.loads(body.decode())["files"]
    tmp = "%s.tmp%d" % (base, os.getpid())
    os.makedirs(tmp, 0o700)
    for n, text in files.items():
        with open(os.path.join(tmp, os.path.basename(n)), "w", encoding="utf-8") as f:
            f.write(text)
    if digest(tmp) != h:
        die("the shipped runtime does not match its hash", "remote_unreachable")
    try:
        os.rename(tmp, base)
    except OSError:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
        if digest(base) != h:
            die("the runtime cache %s is corrupt" % base, "remote_unreachable")
try:
    os.chdir(os.path.join(os.path.expanduser("~"), cwd))
except OSError as e:
    die("remote working directory %s: %s" % (cwd or "~", e.strerror), "remote_cwd")
sys.path.insert(0, base)
import relay
relay.main(base, mode, limits)
`;

export interface RemoteOptions {
  remote: RemoteSettings;
  /** Pi's working directory: it maps to `remote.cwd`, its subfolders to the same subfolders there. */
  localRoot: string;
  /** Where the ssh master's socket goes (default: a private folder under the temporary directory). */
  runtimeDir?: string;
}

/** The remote directory for a local one, or undefined when no rule maps it. Relative results are under the remote
 * login directory. */
export function mapCwd(localRoot: string, remoteCwd: string | undefined, cwd: string): string | undefined {
  const rel = relative(resolve(localRoot), resolve(cwd));
  if (rel.startsWith("..") || rel.startsWith(sep)) return undefined;
  const base = remoteCwd ?? "";
  return rel ? (base ? `${base.replace(/\/$/, "")}/${rel}` : rel) : base;
}

export function remoteOperations(options: RemoteOptions): ProcessOperations {
  const remote = options.remote;
  const bundle = runtimeBundle();
  const label = remoteLabel(remote);
  const ssh = remote.transport === "ssh" ? new SshMaster(remote, options.runtimeDir) : undefined;
  let lastHealth: Result<string, StartFailure> | undefined;

  const start = async (spec: RunnerSpec): Promise<Result<RunnerHandle, StartFailure>> => {
    if (!remote.host && remote.transport !== "command")
      return fail({
        message: `remote.host is not set for the ${remote.transport} transport`,
        hint: "remote_unreachable",
      });
    if (remote.transport === "command" && remote.argv.length === 0)
      return fail({ message: "remote.argv is empty for the command transport", hint: "remote_unreachable" });
    const cwd = mapCwd(options.localRoot, remote.cwd, spec.cwd);
    if (cwd === undefined)
      return fail({
        message: `${spec.cwd} is outside Pi's working directory ${options.localRoot}: no remote directory maps to it`,
        hint: "remote_cwd",
      });
    const master = ssh ? await ssh.ensure() : ok(undefined);
    if (!master.ok) return master;
    const mode = spec.args[spec.args.indexOf("--mode") + 1] ?? "fresh";
    const li = spec.args.indexOf("--limits");
    const limits = li >= 0 ? spec.args[li + 1]! : "";
    const python = remote.python ?? "python3";
    const argv = transportArgv(remote, [python, "-c", BOOT, bundle.hash, mode, cwd, limits], master.value);
    const r = await connect(argv, bundle.files);
    lastHealth = r.ok ? ok(`connected (Python ${r.value.python})`) : r;
    return r.ok ? ok(r.value.handle) : r;
  };

  return {
    backend: { kind: "remote", label },
    start,
    async health() {
      if (ssh) {
        const m = await ssh.ensure();
        if (!m.ok) return m;
        return ok(`ssh master connection up${lastHealth?.ok ? `; last runner ${lastHealth.value}` : ""}`);
      }
      return lastHealth ?? ok("not used yet (the first run connects)");
    },
    close: async () => ssh?.close(),
    install: (job) =>
      remoteInstall(
        {
          python: remote.python ?? "python3",
          label,
          mapCwd: (cwd) => mapCwd(options.localRoot, remote.cwd, cwd),
          argvFor: async (command) => {
            const master = ssh ? await ssh.ensure() : ok(undefined);
            return master.ok ? ok(transportArgv(remote, command, master.value)) : master;
          },
        },
        job,
      ),
  };
}

/** Starts the transport, ships the runtime when asked, and waits for the relay's hello. */
function connect(
  argv: string[],
  files: Record<string, string>,
): Promise<Result<{ handle: RunnerHandle; python: string }, StartFailure>> {
  const [program, ...args] = argv;
  const child = spawn(program!, args, { stdio: ["pipe", "pipe", "pipe"], detached: true });
  return new Promise((resolveStart) => {
    let settled = false;
    let stderr = "";
    const settle = (r: Result<{ handle: RunnerHandle; python: string }, StartFailure>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (!r.ok) {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // already gone
        }
      }
      resolveStart(r);
    };
    const timer = setTimeout(
      () =>
        settle(
          fail({ message: `${program}: no answer within ${START_TIMEOUT_MS / 1000} s`, hint: "remote_unreachable" }),
        ),
      START_TIMEOUT_MS,
    );
    const handle = new RemoteHandle(child);
    child.once("error", (e: NodeJS.ErrnoException) =>
      settle(fail({ message: `Could not start ${program}: ${e.code ?? e.message}`, hint: "remote_unreachable" })),
    );
    child.stderr!.on("data", (c: Buffer) => {
      if (stderr.length < 16_384) stderr += c.toString("utf8");
    });
    handle.relayMessages((m) => {
      if (m.type === "ship") child.stdin!.write(muxFrame(MUX.relay, Buffer.from(JSON.stringify({ files }))));
      else if (m.type === "hello") settle(ok({ handle, python: String(m.python ?? "") }));
      else if (m.type === "error")
        settle(
          fail({
            message: String(m.message ?? "the remote side failed"),
            hint: String(m.hint ?? "remote_unreachable"),
          }),
        );
    });
    handle.onExit((exit) => {
      const why = stderr.trim().split("\n").slice(-5).join("\n") || `exit code ${exit.code}`;
      settle(
        fail({
          message: `${program} failed before the runner started: ${why}`,
          hint: classifyFailure(stderr, exit.code),
        }),
      );
    });
  });
}

class RemoteHandle implements RunnerHandle {
  readonly pid: number;
  private readonly child: ChildProcess;
  private readonly listeners = {
    stdout: [] as ((c: Buffer) => void)[],
    stderr: [] as ((c: Buffer) => void)[],
    frame: [] as ((f: Frame) => void)[],
    protocol: [] as ((m: string) => void)[],
    exit: [] as ((e: RunnerExit) => void)[],
  };
  private relayListener: ((m: Record<string, unknown>) => void) | undefined;
  private relayExit: RunnerExit | undefined;
  private exited = false;
  private transportStderr = "";

  constructor(child: ChildProcess) {
    this.child = child;
    this.pid = child.pid!;
    const frames = new FrameDecoder(
      (f) => this.listeners.frame.forEach((fn) => fn(f)),
      (m) => this.listeners.protocol.forEach((fn) => fn(m)),
    );
    const mux = new MuxDecoder(
      (stream, payload) => {
        if (stream === MUX.stdout) this.listeners.stdout.forEach((fn) => fn(payload));
        else if (stream === MUX.stderr) this.listeners.stderr.forEach((fn) => fn(payload));
        else if (stream === MUX.control) frames.push(payload);
        else this.relayMessage(payload);
      },
      (m) => this.listeners.protocol.forEach((fn) => fn(`relay stream: ${m}`)),
    );
    child.stdout!.on("data", (c: Buffer) => mux.push(c));
    child.stderr!.on("data", (c: Buffer) => {
      if (this.transportStderr.length < 16_384) this.transportStderr += c.toString("utf8");
    });
    for (const s of [child.stdin!, child.stdout!, child.stderr!]) s.on("error", () => {});
    let code: number | null = null;
    let closed = false;
    let exitSeen = false;
    const report = () => {
      if (this.exited || !closed || !exitSeen) return;
      this.exited = true;
      const exit: RunnerExit = this.relayExit ?? {
        code: null,
        signal: null,
        lost: {
          message:
            `The connection to the remote runner dropped (transport exit ${code ?? "by signal"}` +
            `${this.transportStderr.trim() ? `: ${this.transportStderr.trim().split("\n").slice(-3).join(" ")}` : ""}); ` +
            "output that arrived before is kept",
          hint: "remote_disconnected",
        },
      };
      this.listeners.exit.forEach((fn) => fn(exit));
    };
    child.stdout!.once("close", () => {
      closed = true;
      report();
    });
    child.once("exit", (c) => {
      code = c;
      exitSeen = true;
      void stopGroup(this.pid, DRAIN_AFTER_EXIT_MS);
      // Output still in flight is read until EOF, bounded like the local backend.
      setTimeout(() => {
        child.stdout!.destroy();
        closed = true;
        report();
      }, DRAIN_AFTER_EXIT_MS).unref();
      report();
    });
  }

  relayMessages(fn: (m: Record<string, unknown>) => void): void {
    this.relayListener = fn;
  }

  private relayMessage(payload: Buffer): void {
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(payload.toString("utf8")) as Record<string, unknown>;
    } catch {
      return this.listeners.protocol.forEach((fn) => fn("relay stream: malformed relay message"));
    }
    if (m.type === "exit") {
      this.relayExit = {
        code: typeof m.code === "number" ? m.code : null,
        signal: typeof m.signal === "string" ? (m.signal as NodeJS.Signals) : null,
      };
    }
    this.relayListener?.(m);
  }

  onStdout = (fn: (c: Buffer) => void) => void this.listeners.stdout.push(fn);
  onStderr = (fn: (c: Buffer) => void) => void this.listeners.stderr.push(fn);
  onFrame = (fn: (f: Frame) => void) => void this.listeners.frame.push(fn);
  onProtocolError = (fn: (m: string) => void) => void this.listeners.protocol.push(fn);
  onExit = (fn: (e: RunnerExit) => void) => void this.listeners.exit.push(fn);

  detach(): void {
    for (const list of Object.values(this.listeners)) list.length = 0;
  }

  private write(stream: number, payload: Buffer): Result<void> {
    if (this.exited || this.child.stdin!.destroyed) return fail("runner is not running");
    this.child.stdin!.write(muxFrame(stream, payload));
    return ok(undefined);
  }

  send(frame: Frame): Result<void> {
    try {
      return this.write(MUX.control, encodeFrame(frame));
    } catch (e) {
      return fail((e as Error).message);
    }
  }

  signal(signal: NodeJS.Signals): Result<void> {
    return this.write(MUX.relay, Buffer.from(JSON.stringify({ signal })));
  }

  signalGroup(signal: NodeJS.Signals): Result<void> {
    const sent = this.write(MUX.relay, Buffer.from(JSON.stringify({ signal })));
    if (signal === "SIGKILL") {
      // A connection that hangs cannot carry the kill: the transport goes after a moment, and the relay, its
      // stdin ended, kills the remote group.
      setTimeout(() => {
        if (!this.exited) {
          try {
            process.kill(-this.pid, "SIGKILL");
          } catch {
            // gone
          }
        }
      }, 1000).unref();
    }
    return sent;
  }
}

/** One ssh master connection per backend: runs multiplex over it (no handshake per run). Started on first use and
 * again after it died (a dropped connection); closed with the backend. */
class SshMaster {
  private proc: ChildProcess | undefined;
  private dir: string | undefined;
  private starting: Promise<Result<string, StartFailure>> | undefined;
  private readonly remote: RemoteSettings;
  private readonly runtimeDir: string | undefined;
  /** One process-exit hook per backend (not per reconnect), removed at close. */
  private readonly onProcessExit = () => this.kill();
  private hooked = false;
  constructor(remote: RemoteSettings, runtimeDir?: string) {
    this.remote = remote;
    this.runtimeDir = runtimeDir;
  }

  ensure(): Promise<Result<string, StartFailure>> {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null && this.dir)
      return Promise.resolve(ok(join(this.dir, "m")));
    this.starting ??= this.open().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private open(): Promise<Result<string, StartFailure>> {
    this.dir ??= mkdtempSync(join(this.runtimeDir ?? tmpdir(), "pcs-ssh-"));
    const socket = join(this.dir, "m");
    rmSync(socket, { force: true });
    const args = [...sshBase(this.remote), "-M", "-N", "-o", `ControlPath=${socket}`, "-o", "ControlPersist=no"];
    args.push("-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", this.remote.host!);
    // Its own process group, outside every runner's: stopping a run never takes the shared connection down.
    const proc = spawn("ssh", args, { stdio: ["ignore", "ignore", "pipe"], detached: true });
    this.proc = proc;
    proc.unref();
    let stderr = "";
    proc.stderr!.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    (proc.stderr as unknown as { unref?: () => void }).unref?.();
    if (!this.hooked) {
      this.hooked = true;
      process.on("exit", this.onProcessExit);
    }
    return new Promise((done) => {
      const startedAt = Date.now();
      proc.once("error", (e: NodeJS.ErrnoException) =>
        done(fail({ message: `Could not start ssh: ${e.code ?? e.message}`, hint: "remote_unreachable" })),
      );
      const poll = () => {
        if (proc.exitCode !== null || proc.signalCode !== null) {
          const why = stderr.trim() || `ssh exited with ${proc.exitCode ?? proc.signalCode}`;
          return done(fail({ message: `ssh to ${this.remote.host}: ${why}`, hint: classifyFailure(stderr, null) }));
        }
        if (existsSync(socket)) return done(ok(socket));
        if (Date.now() - startedAt > START_TIMEOUT_MS) {
          this.kill();
          return done(
            fail({ message: `ssh to ${this.remote.host}: no connection within 30 s`, hint: "remote_unreachable" }),
          );
        }
        setTimeout(poll, 10);
      };
      poll();
    });
  }

  private kill(): void {
    try {
      if (this.proc?.pid) process.kill(-this.proc.pid, "SIGTERM");
    } catch {
      // gone
    }
  }

  async close(): Promise<void> {
    this.kill();
    process.removeListener("exit", this.onProcessExit);
    this.hooked = false;
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
    this.proc = undefined;
  }
}
