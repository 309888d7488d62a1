// Transport presets of the remote backend: the argv that runs a program on the other side with its stdin, stdout
// and stderr (ssh, kubectl exec -i, docker/podman exec -i, or any argv prefix), and what a transport's failure
// means (hint ids in actors/process/backend-hints.ts).
import type { RemoteSettings } from "../../lib/setting-types.ts";

/** POSIX shell quoting: ssh hands its command to the remote user's shell as one string. */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** ssh options shared by the master connection and its clients. */
export function sshBase(remote: RemoteSettings): string[] {
  return [
    "-T",
    "-o",
    "BatchMode=yes",
    "-o",
    "ConnectTimeout=10",
    ...(remote.port ? ["-p", String(remote.port)] : []),
    ...(remote.user ? ["-l", remote.user] : []),
    ...(remote.identityFile ? ["-i", remote.identityFile] : []),
    ...remote.options,
  ];
}

/** The argv that runs `command` (program and arguments) on the remote side. `controlPath`: the ssh master's socket. */
export function transportArgv(remote: RemoteSettings, command: string[], controlPath?: string): string[] {
  const target = remote.host ?? "";
  switch (remote.transport) {
    case "ssh":
      return [
        "ssh",
        ...sshBase(remote),
        ...(controlPath ? ["-o", "ControlMaster=no", "-o", `ControlPath=${controlPath}`] : []),
        target,
        "--",
        command.map(shellQuote).join(" "),
      ];
    case "kubectl":
      return ["kubectl", "exec", "-i", ...remote.options, target, "--", ...command];
    case "docker":
    case "podman":
      return [remote.transport, "exec", "-i", ...remote.options, target, ...command];
    case "command":
      return [...remote.argv, ...command];
  }
}

/** The same transport argv asking for a terminal on the far side (ssh -tt, kubectl/docker exec -t). */
export function withRemoteTty(remote: RemoteSettings, argv: string[]): string[] {
  switch (remote.transport) {
    case "ssh":
      return argv.map((a) => (a === "-T" ? "-tt" : a));
    case "kubectl":
    case "docker":
    case "podman":
      return argv.map((a, i) => (i <= 2 && a === "-i" ? "-it" : a));
    case "command":
      return argv;
  }
}

/** What a transport's failure output means. */
export function classifyFailure(stderr: string, code: number | null): string {
  if (
    /Permission denied|Authentication failed|Too many authentication failures|Host key verification failed|Unauthorized|Forbidden/i.test(
      stderr,
    )
  )
    return "remote_auth";
  if (
    code === 127 ||
    code === 126 ||
    /python[0-9.]*: (command )?not found|python[0-9.]*: No such file|executable file not found/i.test(stderr)
  )
    return "remote_python";
  return "remote_unreachable";
}

/** A label for status lines and the inspector. */
export function remoteLabel(remote: RemoteSettings): string {
  const who = remote.transport === "ssh" && remote.user ? `${remote.user}@` : "";
  const where = remote.transport === "command" ? remote.argv.join(" ") : `${who}${remote.host ?? "?"}`;
  return `remote ${remote.transport} ${where}${remote.cwd ? `:${remote.cwd}` : ""}`;
}
