// What the process backends are configured with (store/setting-keys.ts reads these values from the settings): where
// code runs, the sandbox's and the remote's options, and each run's resource limits.

/** Where code runs: this machine, a bubblewrap sandbox, or a remote transport (actors/process/backends.ts). */
export interface BackendSettings {
  backend: "local" | "sandbox" | "remote";
  sandbox: { network: boolean; writable: string[]; readable: string[] };
  remote: RemoteSettings;
}

export interface RemoteSettings {
  transport: "ssh" | "kubectl" | "docker" | "podman" | "command";
  /** ssh: the host; kubectl: the pod; docker/podman: the container. */
  host?: string;
  port?: number;
  user?: string;
  identityFile?: string;
  /** The remote directory Pi's working directory maps to (default: the remote login directory). */
  cwd?: string;
  /** The remote interpreter (default: the remote's python3). */
  python?: string;
  /** Extra transport arguments (ssh: `-o` options; kubectl: `-n ns`, `-c container`, ...). */
  options: string[];
  /** The argv prefix of the `command` transport. */
  argv: string[];
}

/** Resource limits of each run (setrlimit in the runner; outputMiB on the host); absent: none. */
export interface ResourceLimits {
  memoryMiB?: number;
  cpuSeconds?: number;
  processes?: number;
  fileSizeMiB?: number;
  openFiles?: number;
  outputMiB?: number;
}
