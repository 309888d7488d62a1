// Stable hint ids for backends and resource limits (the journal records the ids; texts may improve). A backend
// names the id with its failure; the advice lives here, next to the ids.
import type { Hint } from "../../machines/events.ts";

export const BACKEND_HINTS = {
  sandbox_unavailable:
    "The bubblewrap sandbox could not start (is `bwrap` installed and are user namespaces allowed?). Install it " +
    "(Debian: apt-get install bubblewrap) or choose another backend (setting `backend`, PI_CODE_EXECUTION_BACKEND). " +
    "Nothing ran; runs never fall back to this machine unsandboxed.",
  sandbox_interpreter_root:
    "The interpreter's installation (or virtual environment) is rooted at or above $HOME or /tmp, so the sandbox " +
    "would have to show all of it. Choose an interpreter installed in its own directory (a venv, pyenv, /usr/bin/" +
    "python3) with python_set_interpreter, --python or PI_PYTHON. A symlink is followed first: ~/bin/python3 -> " +
    "/usr/bin/python3 is fine. Nothing ran.",
  settings_unreadable:
    "A setting that says where code runs (`backend`, `sandbox.*`, `remote.*`, in the global settings file or a " +
    "PI_CODE_EXECUTION_* variable) could not be read. Nothing ran: a run never falls back to another backend, such " +
    "as this machine instead of the sandbox. Fix the value, then start Pi again (the backend is chosen once per " +
    "Pi session).",
  remote_unreachable:
    "The remote host could not be reached (name, port, network or a firewall). Check `remote.host`/`remote.port` " +
    "or the transport (ssh, kubectl, docker, podman) by hand. Nothing ran.",
  remote_auth:
    "The remote host refused the login. Check the user, `remote.identityFile`, your SSH agent and known_hosts " +
    "(the ssh preset runs your own OpenSSH client in batch mode: it cannot ask for a password). Nothing ran.",
  remote_python:
    "No usable Python was found on the remote side. Set `remote.python` to an interpreter there (3.9 or newer) or " +
    "install python3. Nothing ran.",
  remote_cwd:
    "The working directory has no remote counterpart: it must be Pi's working directory or inside it, which maps to " +
    "`remote.cwd` (or the remote login directory). Nothing ran.",
  remote_disconnected:
    "The connection to the remote host dropped during the run. Output that arrived before is kept; the remote " +
    "process group was killed when the connection went, so a session's state is gone.",
  limit_memory:
    "The run hit the memory limit (`limits.memoryMiB`): an allocation failed (MemoryError) or the process was killed.",
  limit_cpu: "The run used up its CPU time (`limits.cpuSeconds`): the process got SIGXCPU and ended.",
  limit_processes: "The run hit the process limit (`limits.processes`): starting another process or thread failed.",
  limit_file_size: "A write hit the file size limit (`limits.fileSizeMiB`): the write failed with 'File too large'.",
  limit_output: "The run wrote more than `limits.outputMiB` of output: its process tree was killed.",
} as const;

export type BackendHintId = keyof typeof BACKEND_HINTS;

/** The hint for an id a backend named, with its own message kept in the outcome's `message`. */
export function backendHint(id: string, _message?: string): Hint {
  const text = (BACKEND_HINTS as Record<string, string>)[id] ?? "The execution backend failed.";
  return { id, text };
}
