// The environment variables that choose a backend and the surfaces, saved before a test file sets them and put back
// after (a test process runs one file; still, nothing leaks into the next test of the file after `restore`).
import type { RemoteSettings } from "../../store/settings.ts";

export const BACKEND_ENV_KEYS = [
  "PI_CODE_EXECUTION_BACKEND",
  "PI_CODE_EXECUTION_REMOTE_TRANSPORT",
  "PI_CODE_EXECUTION_REMOTE_HOST",
  "PI_CODE_EXECUTION_REMOTE_PORT",
  "PI_CODE_EXECUTION_REMOTE_USER",
  "PI_CODE_EXECUTION_REMOTE_IDENTITY_FILE",
  "PI_CODE_EXECUTION_REMOTE_OPTIONS",
  "PI_CODE_EXECUTION_REMOTE_CWD",
  "PI_CODE_EXECUTION_REMOTE_ARGV",
  "PI_CODE_EXECUTION_TOOLS",
  "PI_CODE_EXECUTION_SPARE_RUNNERS",
] as const;

/** Saves the backend variables as they are now; the returned function puts them back. */
export function savedBackendEnv(): () => void {
  const saved = Object.fromEntries(BACKEND_ENV_KEYS.map((k) => [k, process.env[k]]));
  return () => {
    for (const k of BACKEND_ENV_KEYS) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  };
}

/** The variables that make Pi's sessions run on the remote backend `r` (spares off: a test sees its own runs). */
export function remoteBackendEnv(r: RemoteSettings, cwd: string): Record<string, string> {
  if (!r.host || !r.user || !r.identityFile)
    throw new Error("remoteBackendEnv: host, user and identity file are needed");
  return {
    PI_CODE_EXECUTION_BACKEND: "remote",
    PI_CODE_EXECUTION_REMOTE_TRANSPORT: "ssh",
    PI_CODE_EXECUTION_REMOTE_HOST: r.host,
    PI_CODE_EXECUTION_REMOTE_PORT: String(r.port),
    PI_CODE_EXECUTION_REMOTE_USER: r.user,
    PI_CODE_EXECUTION_REMOTE_IDENTITY_FILE: r.identityFile,
    PI_CODE_EXECUTION_REMOTE_OPTIONS: JSON.stringify(r.options ?? []),
    PI_CODE_EXECUTION_REMOTE_CWD: cwd,
    PI_CODE_EXECUTION_SPARE_RUNNERS: "false",
  };
}
