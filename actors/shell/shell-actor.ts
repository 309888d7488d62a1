// The `shell` boundary actor of a shell session (machines/exec-session.ts): starts the process through the process
// port of the backend the user chose (local, sandbox, remote), which tracks it from before it ran (its own cgroup,
// actors/registry/registry.ts); names itself the owner of that group (so nothing outlives Pi, whatever happens to the
// actors), pours its output into the session's I/O, and tells its session the facts: spawned, process exited, closed,
// a signal that could not be sent, and after a SIGKILL (or a signal that found no process) the group's end. Signals
// arrive as `shell.signal`. Stopped while the process lives, it kills the group.
import { fromCallback } from "xstate";
import type { ShellCommand, ShellFact, ShellInput } from "../../machines/exec-session.ts";
import { registerGroup, stopTracked, unregisterWhenEmpty, whenEmpty } from "../registry/registry.ts";
import { SHUTDOWN } from "../registry/shutdown.ts";
import type { ChildHandle } from "../process/children.ts";
import type { ProcessOperations } from "../process/operations.ts";
import type { SessionIO } from "./session-io.ts";
import { shellArgs } from "./shell-path.ts";

export interface ShellPorts {
  /** The backend's process port (its `spawn`). */
  ops: () => Pick<ProcessOperations, "spawn">;
  /** The session's I/O, created by the host before it asks for the session. */
  io(id: number): SessionIO | undefined;
  env(): NodeJS.ProcessEnv;
  hostId: string;
  now(): number;
}

export function createShellLogic(ports: ShellPorts) {
  return fromCallback<ShellCommand, ShellInput>(({ input, sendBack, receive }) => {
    const send = (fact: ShellFact) => sendBack(fact);
    let handle: ChildHandle | undefined;
    let closed = false;
    let stopped = false;
    let watching = false;
    const io = ports.io(input.id);
    // After SIGKILL the group's end is the fact the session waits for (the registry's looks tell it), once per
    // SIGKILL (a kill that failed may be asked again). Told two event-loop turns (setImmediate) later: a member closes
    // its descriptors before it leaves its group, so the end of output it held is already in the kernel when the
    // group is found empty, and Node reads it in the next poll phase, which comes before the second turn whichever
    // phase the look ran in. Output still open after that is held by a process outside the group.
    const watchGroup = (h: ChildHandle) => {
      if (watching) return;
      watching = true;
      whenEmpty(h.pid, () =>
        setImmediate(() =>
          setImmediate(() => {
            watching = false;
            if (!closed && !stopped) send({ type: "shell.group_gone", at: ports.now(), outputOpen: h.pipesOpen() });
          }),
        ),
      );
    };
    void ports
      .ops()
      .spawn({
        file: input.shell,
        args: shellArgs(input.shell, input.command),
        cwd: input.cwd,
        env: ports.env(),
        purpose: "shell",
        ...(input.tty ? { tty: { cols: input.cols, rows: input.rows } } : {}),
      })
      .then((started) => {
        if (!started.ok) return send({ type: "shell.spawn_failed", at: ports.now(), message: started.error.message });
        const h = started.value;
        registerGroup(h.pid, { host: ports.hostId, owner: input.owner });
        if (stopped) {
          // The session went away while the process was starting.
          h.signalGroup("SIGKILL");
          h.destroy();
          void stopTracked(h.pid, SHUTDOWN.shell);
          return;
        }
        handle = h;
        io?.started(h);
        h.onData((chunk) => io?.write(chunk));
        send({ type: "shell.spawned", at: ports.now(), pid: h.pid });
        h.onProcessExit((e) => {
          if (!stopped) send({ type: "shell.process_exited", at: ports.now(), code: e.code, signal: e.signal });
        });
        h.onClose((e) => {
          closed = true;
          // Background processes that let go of the output may live on in the group, and a killed group's members
          // may still be exiting: it stays registered (and is stopped at shutdown) until it is empty, then goes with
          // its cgroup (before, a group not empty at this moment kept its cgroup until Pi quit: the soak's
          // growing count of empty cgroups).
          unregisterWhenEmpty(h.pid);
          if (!stopped) send({ type: "shell.closed", at: ports.now(), code: e.code, signal: e.signal });
        });
      });
    receive((command) => {
      if (command.type !== "shell.signal" || !handle) return;
      const r = handle.signalGroup(command.signal);
      // A signal that found no process (ESRCH) found the group gone already: the fact a SIGKILL waits for, told the
      // same way. Any signal: a group that ended by itself just as a kill came (Node not yet past the end of its
      // output and the exit report) is no failed stop, unless a process outside it holds the output.
      if (r.ok ? command.signal === "SIGKILL" : r.error === "ESRCH") watchGroup(handle);
      else if (!r.ok) send({ type: "shell.signal_failed", at: ports.now(), signal: command.signal, message: r.error });
    });
    return () => {
      stopped = true;
      if (handle && !closed) {
        handle.signalGroup("SIGKILL");
        handle.destroy();
        // Whatever is left goes too, and the registry lets go of the group once it is empty.
        void stopTracked(handle.pid, SHUTDOWN.shell);
      }
    };
  });
}
