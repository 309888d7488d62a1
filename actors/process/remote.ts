// The remote backend: a runner on another machine behind a transport command (actors/process/transport.ts). The
// relay (runtime-py/relay.py) multiplexes the runner's stdout, stderr and control channel onto one byte stream
// (actors/process/mux.ts), so user output still cannot reach the control channel. The runtime is shipped on first
// use to a content-addressed, verified cache folder on the remote side. Interrupts and kills travel as relay
// messages; a dropped connection makes the runner `lost` (hint remote_disconnected) and the relay kills the remote
// process group when its stdin ends. Shells and other children run under their own wrapper (remote-shell.ts).
// Artifacts, journal and logs stay on this machine.
import { spawn, type ChildProcess } from "node:child_process";
import { relative, resolve, sep } from "node:path";
import { fail, ok, type Result } from "../../lib/result.ts";
import type { RemoteSettings } from "../../lib/setting-types.ts";
import { encodeFrame, FrameDecoder, type Frame } from "./framing.ts";
import { MUX, MuxDecoder, muxFrame } from "./mux.ts";
import type { ProcessOperations, RunnerExit, RunnerHandle, RunnerSpec, StartFailure } from "./operations.ts";
import { classifyFailure, remoteLabel, transportArgv, withRemoteTty } from "./transport.ts";
import { spawnLocalChild, type ChildHandle, type ChildSpec } from "./children.ts";
import { killCommand, remoteChild, remoteExit, runKill, WRAP } from "./remote-shell.ts";
import { stopGroup } from "../registry/registry.ts";
import { REMOTE_TRANSPORT_DRAIN_MS, SHUTDOWN } from "../registry/shutdown.ts";

import { BOOT, runtimeBundle, START_TIMEOUT_MS } from "./remote-runtime.ts";
import { SshMaster } from "./ssh-master.ts";

export { runtimeBundle } from "./remote-runtime.ts";

/** A transport's output still in flight after it exited is read until EOF for this long (its leftovers get the same
 * grace: shutdown.ts). */
const DRAIN_AFTER_EXIT_MS = REMOTE_TRANSPORT_DRAIN_MS;

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

  /** What every start checks first: a target, the remote directory for `localCwd`, the ssh master (its socket). */
  const preflight = async (
    localCwd: string,
  ): Promise<Result<{ cwd: string; master: string | undefined }, StartFailure>> => {
    if (!remote.host && remote.transport !== "command")
      return fail({
        message: `remote.host is not set for the ${remote.transport} transport`,
        hint: "remote_unreachable",
      });
    if (remote.transport === "command" && remote.argv.length === 0)
      return fail({ message: "remote.argv is empty for the command transport", hint: "remote_unreachable" });
    const cwd = mapCwd(options.localRoot, remote.cwd, localCwd);
    if (cwd === undefined)
      return fail({
        message: `${localCwd} is outside Pi's working directory ${options.localRoot}: no remote directory maps to it`,
        hint: "remote_cwd",
      });
    const master = ssh ? await ssh.ensure() : ok(undefined);
    return master.ok ? ok({ cwd, master: master.value }) : master;
  };

  const start = async (spec: RunnerSpec): Promise<Result<RunnerHandle, StartFailure>> => {
    const ready = await preflight(spec.cwd);
    if (!ready.ok) return ready;
    const { cwd, master } = ready.value;
    const mode = spec.args[spec.args.indexOf("--mode") + 1] ?? "fresh";
    const li = spec.args.indexOf("--limits");
    const limits = li >= 0 ? spec.args[li + 1]! : "";
    // The interpreter the run resolved on the remote side (actors/interpreter: probed there), else remote.python.
    const python = spec.executable || remote.python || "python3";
    const argv = transportArgv(remote, [python, "-c", BOOT, bundle.hash, mode, cwd, limits], master);
    const r = await connect(argv, bundle.files, options.localRoot);
    lastHealth = r.ok ? ok(`connected (Python ${r.value.python})`) : r;
    return r.ok ? ok(r.value.handle) : r;
  };

  /** Another child (a shell, a probe) through the transport, in the mapped working directory, under the wrapper
   * that keeps its process group on the far side signalable and dead once the connection goes (remote-shell.ts). */
  const spawnChild = async (spec: ChildSpec): Promise<Result<ChildHandle, StartFailure>> => {
    const ready = await preflight(spec.cwd);
    if (!ready.ok) return ready;
    const { cwd, master } = ready.value;
    const python = remote.python ?? "python3";
    // ssh hands the command to the login shell: `exec` makes the wrapper the session's leader (the controlling
    // process of a PTY, which a hangup reaches). Other transports start the argv as it is.
    const command = [
      ...(remote.transport === "ssh" ? ["exec"] : []),
      python,
      "-c",
      WRAP,
      cwd,
      spec.tty ? "pty" : "pipe",
      spec.file,
      ...spec.args,
    ];
    let argv = transportArgv(remote, command, master);
    // A PTY on the far side too, so the program sees a terminal (and a dropped connection hangs it up).
    if (spec.tty) argv = withRemoteTty(remote, argv);
    // The transport runs in Pi's working directory, with Pi's environment (the remote side has its own; a PTY's
    // TERM travels with ssh's terminal request).
    const env = { ...process.env, ...(spec.tty ? { TERM: spec.env.TERM || "xterm-256color" } : {}) };
    const started = await spawnLocalChild({ ...spec, cwd: options.localRoot, env }, { argv, exit: remoteExit });
    if (!started.ok) return started;
    const sendKill = async (signal: string, pgid: number) => {
      const m = ssh ? await ssh.ensure() : ok(undefined);
      return m.ok ? runKill(transportArgv(remote, killCommand(signal, pgid), m.value)) : fail(m.error.message);
    };
    return ok(remoteChild(started.value, sendKill));
  };

  return {
    backend: { kind: "remote", label, python: remote.python ?? "python3" },
    start,
    mapCwd: (cwd) => {
      const mapped = mapCwd(options.localRoot, remote.cwd, cwd);
      // Relative to the remote login directory: `~`, for the runner to expand there.
      return mapped === undefined ? undefined : mapped.startsWith("/") ? mapped : mapped ? `~/${mapped}` : "~";
    },
    spawn: spawnChild,
    async health() {
      if (ssh) {
        const m = await ssh.ensure();
        if (!m.ok) return m;
        return ok(`ssh master connection up${lastHealth?.ok ? `; last runner ${lastHealth.value}` : ""}`);
      }
      return lastHealth ?? ok("not used yet (the first run connects)");
    },
    close: async () => ssh?.close(),
    remote: {
      python: remote.python ?? "python3",
      label,
      mapCwd: (cwd) => mapCwd(options.localRoot, remote.cwd, cwd),
      argvFor: async (command) => {
        const master = ssh ? await ssh.ensure() : ok(undefined);
        return master.ok ? ok(transportArgv(remote, command, master.value)) : master;
      },
    },
  };
}

/** Starts the transport (in Pi's working directory, like every other child of the remote backend), ships the
 * runtime when asked, and waits for the relay's hello. */
function connect(
  argv: string[],
  files: Record<string, string>,
  cwd: string,
): Promise<Result<{ handle: RunnerHandle; python: string }, StartFailure>> {
  const [program, ...args] = argv;
  const child = spawn(program!, args, { cwd, stdio: ["pipe", "pipe", "pipe"], detached: true });
  // The transport's own exit, for a failure before the relay said hello (the handle's exit is the runner's).
  let transportExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  child.once("exit", (code, signal) => (transportExit = { code, signal }));
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
    handle.beforeOwner((exit) => {
      const code = transportExit?.code ?? exit.code;
      const signal = transportExit?.signal ?? exit.signal;
      const status = signal ? `killed by ${signal}` : `exit code ${code}`;
      const said = stderr.trim().split("\n").slice(-5).join("\n");
      settle(
        fail({
          message: `${program} failed before the runner started (${status})${said ? `: ${said}` : ""}`,
          hint: classifyFailure(stderr, code),
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
  /** What arrived while no owner listened (before the first `onFrame`, or after `detach`), in order: the relay's
   * hello settles the start inside the same read that may carry the runner's `ready` frame and output, before the
   * owner has attached its listeners; dropping them left a session `starting` for ever. */
  private held: (() => void)[] | undefined = [];
  private ended: ((exit: RunnerExit) => void) | undefined;

  private deliver(event: () => void): void {
    if (this.held) this.held.push(event);
    else event();
  }

  constructor(child: ChildProcess) {
    this.child = child;
    this.pid = child.pid!;
    const frames = new FrameDecoder(
      (f) => this.deliver(() => this.listeners.frame.forEach((fn) => fn(f))),
      (m) => this.deliver(() => this.listeners.protocol.forEach((fn) => fn(m))),
    );
    const mux = new MuxDecoder(
      (stream, payload) => {
        if (stream === MUX.stdout) this.deliver(() => this.listeners.stdout.forEach((fn) => fn(payload)));
        else if (stream === MUX.stderr) this.deliver(() => this.listeners.stderr.forEach((fn) => fn(payload)));
        else if (stream === MUX.control) frames.push(payload);
        else this.relayMessage(payload);
      },
      (m) => this.deliver(() => this.listeners.protocol.forEach((fn) => fn(`relay stream: ${m}`))),
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
      this.ended?.(exit);
      this.deliver(() => this.listeners.exit.forEach((fn) => fn(exit)));
    };
    child.stdout!.once("close", () => {
      closed = true;
      report();
    });
    child.once("exit", (c) => {
      code = c;
      exitSeen = true;
      void stopGroup(this.pid, SHUTDOWN.remoteTransport);
      // Output still in flight is read until EOF, bounded like the local backend.
      setTimeout(() => {
        child.stdout!.destroy();
        closed = true;
        report();
      }, DRAIN_AFTER_EXIT_MS).unref();
      report();
    });
  }

  /** The transport ended (start-up's watch: it hears the end at once, unlike an owner's `onExit`, which waits
   * behind what is held). */
  beforeOwner(fn: (exit: RunnerExit) => void): void {
    this.ended = fn;
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
  onFrame = (fn: (f: Frame) => void) => {
    this.listeners.frame.push(fn);
    // The owner attaches its listeners together: what was held goes to all of them, in order, once they are there.
    if (this.held && this.listeners.frame.length === 1)
      queueMicrotask(() => {
        const held = this.held ?? [];
        this.held = undefined;
        for (const event of held) event();
      });
  };
  onProtocolError = (fn: (m: string) => void) => void this.listeners.protocol.push(fn);
  onExit = (fn: (e: RunnerExit) => void) => void this.listeners.exit.push(fn);

  detach(): void {
    for (const list of Object.values(this.listeners)) list.length = 0;
    this.held ??= [];
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
