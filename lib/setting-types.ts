// The shapes of the settings the effects are configured with (store/setting-keys.ts reads these values from the
// settings; actors/ takes them as input): where code runs, the sandbox's and the remote's options, each run's
// resource limits, and how a virtual environment is looked for. Here, below both, so the store knows no effect.

/** Where code runs: this machine, a bubblewrap sandbox, or a remote transport (actors/process/backends.ts). */
export interface BackendSettings {
  backend: "local" | "sandbox" | "remote";
  /** `env`: names of environment variables passed into the sandbox besides its allow-list (sandbox-env.ts). */
  sandbox: { network: boolean; writable: string[]; readable: string[]; env: string[] };
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

/** How a working directory's virtual environment is found (actors/interpreter/interpreter.ts). */
export interface VenvDiscovery {
  enabled: boolean;
  /** Look in parents of the working directory too (up to the repository root). */
  parentWalk: boolean;
  dirNames: string[];
}
