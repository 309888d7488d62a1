// The ssh master connection of a remote backend (actors/process/remote.ts): runs multiplex over one connection.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fail, ok, type Result } from "../../lib/result.ts";
import type { RemoteSettings } from "../../lib/setting-types.ts";
import type { StartFailure } from "./operations.ts";
import { START_TIMEOUT_MS } from "./remote-runtime.ts";
import { classifyFailure, sshBase } from "./transport.ts";

/** One ssh master connection per backend: runs multiplex over it (no handshake per run). Started on first use and
 * again after it died (a dropped connection); closed with the backend. */
export class SshMaster {
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
