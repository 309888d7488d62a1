// Drives a host's shell sessions the way the exec tools do (host/exec.ts `start` and `write`), with each test file's
// own defaults; failures throw with the host's message. Shared by the host-level exec tests.
import "./agent-dir.ts";
import type { SupervisorHost } from "../../host/host.ts";

type StartRequest = Parameters<SupervisorHost["exec"]["start"]>[0];
type WriteRequest = Parameters<SupervisorHost["exec"]["write"]>[0];

/** A shell session's start request as the exec tools make one (pipes, 80x24, no wake on exit), with what each
 * call gives; the tests that drive their own hosts build theirs here too. */
export function startRequest(
  command: string,
  more: Partial<StartRequest> & Pick<StartRequest, "cwd" | "yieldMs" | "callId">,
): StartRequest {
  return { command, tty: false, cols: 80, rows: 24, onExit: "none", ...more };
}

export function execDriver(
  host: () => SupervisorHost,
  defaults: { cwd: () => string; cols: number; yieldMs: number; durationMs: number; callPrefix: string },
) {
  let calls = 0;
  const callId = () => `${defaults.callPrefix}-${++calls}`;
  async function start(command: string, more: Partial<StartRequest> = {}) {
    const r = await host().exec.start({
      command,
      cwd: defaults.cwd(),
      tty: false,
      cols: defaults.cols,
      rows: 30,
      yieldMs: defaults.yieldMs,
      onExit: "none",
      callId: callId(),
      ...more,
    });
    if (!r.ok) throw new Error(r.error);
    return r.value;
  }
  async function write(id: number, more: Partial<WriteRequest> = {}) {
    const r = await host().exec.write({
      id,
      until: "full",
      durationMs: defaults.durationMs,
      callId: callId(),
      ...more,
    });
    if (!r.ok) throw new Error(r.error);
    return r.value;
  }
  return { start, write, callId };
}
