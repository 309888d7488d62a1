// A throwaway OpenSSH server on a loopback port for the remote backend's tests: its own host key, an authorized key
// made for the test, no other way in. Started and stopped by the test itself; a server that cannot start fails the
// test with sshd's own words (nothing is skipped).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect } from "node:net";
import { userInfo } from "node:os";
import { join } from "node:path";
import type { RemoteSettings } from "../../store/settings.ts";
import { waitUntil } from "./procs.ts";
import { tempDir } from "./temp-dir.ts";

export interface TestSshd {
  port: number;
  dir: string;
  /** XDG_CACHE_HOME of every session of this server (the remote runtime and environments go under it). */
  cache: string;
  proc: ChildProcess;
  /** Remote settings that reach this server with the test's key and known_hosts. */
  remote(extra?: Partial<RemoteSettings>): RemoteSettings;
  /** The per-connection sshd children (the connection processes), for a test that drops a connection. */
  connectionPids(): number[];
  stop(): Promise<void>;
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const c = connect(port, "127.0.0.1");
    c.once("connect", () => (c.destroy(), resolve(true)));
    c.once("error", () => resolve(false));
  });

export async function startSshd(): Promise<TestSshd> {
  const sshd = "/usr/sbin/sshd";
  const dir = tempDir("pcs-sshd-");
  const keygen = (file: string) => {
    const r = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", file]);
    if (r.status !== 0) throw new Error(`ssh-keygen failed: ${r.stderr}`);
  };
  keygen(join(dir, "host_key"));
  keygen(join(dir, "client_key"));
  spawnSync("cp", [join(dir, "client_key.pub"), join(dir, "authorized_keys")]);
  mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
  const port = await freePort();
  writeFileSync(
    join(dir, "sshd_config"),
    [
      `Port ${port}`,
      "ListenAddress 127.0.0.1",
      `HostKey ${join(dir, "host_key")}`,
      `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
      `PidFile ${join(dir, "sshd.pid")}`,
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "PermitRootLogin prohibit-password",
      "StrictModes no",
      "UsePAM no",
      "MaxSessions 100",
      "MaxStartups 100",
      "LogLevel ERROR",
      // Bash sources ~/.bashrc for a command run by sshd unless it is a nested shell: SHLVL=1 makes it one, so a
      // user's rc file (here root's `pyenv init`, whose rehash lock, left stale by a killed shell elsewhere, hangs
      // every login for a minute) never runs in the tests' remote sessions.
      // Its own cache folder (the shipped runtime, remote environments): test files running at once never share,
      // or delete, another's.
      `SetEnv SHLVL=1 XDG_CACHE_HOME=${join(dir, "cache")}`,
    ].join("\n") + "\n",
  );
  const hostPub = spawnSync("cat", [join(dir, "host_key.pub")])
    .stdout.toString()
    .trim();
  writeFileSync(join(dir, "known_hosts"), `[127.0.0.1]:${port} ${hostPub}\n`);
  let log = "";
  const proc = spawn(sshd, ["-D", "-e", "-f", join(dir, "sshd_config")], { stdio: ["ignore", "ignore", "pipe"] });
  proc.stderr!.on("data", (c: Buffer) => (log += c.toString()));
  const up = await waitUntil(async () => proc.exitCode === null && (await accepts(port)), 10_000);
  if (!up) {
    proc.kill("SIGKILL");
    throw new Error(`sshd could not start on port ${port}: ${log.trim() || `exit ${proc.exitCode}`}`);
  }
  return {
    port,
    dir,
    cache: join(dir, "cache"),
    proc,
    remote: (extra = {}) => ({
      transport: "ssh",
      host: "127.0.0.1",
      port,
      user: userInfo().username,
      identityFile: join(dir, "client_key"),
      options: [
        "-o",
        `UserKnownHostsFile=${join(dir, "known_hosts")}`,
        "-o",
        "StrictHostKeyChecking=yes",
        "-F",
        "/dev/null",
      ],
      argv: [],
      ...extra,
    }),
    connectionPids() {
      const out = spawnSync("pgrep", ["-P", String(proc.pid)]).stdout.toString();
      return out.split("\n").filter(Boolean).map(Number);
    },
    async stop() {
      proc.kill("SIGTERM");
      if (proc.exitCode === null) await new Promise((r) => proc.once("exit", r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
