// Interpreter resolution: `PI_PYTHON`, else `python3` on PATH, resolved once to the real executable. A pyenv shim
// costs ~0.5 s per spawn, so every runner is started with the path the interpreter reports for itself.
import { execFile } from "node:child_process";
import { fail, ok, type Result } from "../../lib/result.ts";

export interface PythonInfo {
  executable: string;
  version: string;
}

const cache = new Map<string, Promise<Result<PythonInfo>>>();

export function pythonCommand(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.PI_PYTHON?.trim();
  return configured ? configured : "python3";
}

const PROBE = "import sys; print(sys.executable); print('%d.%d.%d' % sys.version_info[:3])";

export function resolvePython(command: string, env: NodeJS.ProcessEnv = process.env): Promise<Result<PythonInfo>> {
  let found = cache.get(command);
  if (!found) {
    found = probe(command, env);
    cache.set(command, found);
    // A failure is not cached: the user may install Python or fix PI_PYTHON without restarting Pi.
    found.then((r) => {
      if (!r.ok) cache.delete(command);
    });
  }
  return found;
}

function probe(command: string, env: NodeJS.ProcessEnv): Promise<Result<PythonInfo>> {
  return new Promise((resolve) => {
    execFile(command, ["-c", PROBE], { env, timeout: 15_000, encoding: "utf8" }, (error, stdout, stderr) => {
      if (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const why =
          code === "ENOENT"
            ? "not found"
            : code === "EACCES"
              ? "not executable"
              : (stderr.trim().split("\n").pop() ?? error.message);
        return resolve(fail(`Python interpreter "${command}" ${why}. Set PI_PYTHON to a Python 3.9+ interpreter.`));
      }
      const [executable, version] = stdout.trim().split("\n");
      if (!executable || !version) return resolve(fail(`Python interpreter "${command}" did not report itself.`));
      const [major, minor] = version.split(".").map(Number);
      if (major < 3 || (major === 3 && minor < 9)) {
        return resolve(
          fail(`Python ${version} at ${executable} is too old: code_execution needs Python 3.9 or newer.`),
        );
      }
      resolve(ok({ executable, version }));
    });
  });
}
