// The kernel actor: one runner process. It turns control frames and process exits into kernel facts for the
// machine that owns it, routes the process's output to the run that is executing, and carries out the machine's
// commands (run, interrupt, terminate, kill, shutdown). The process handle lives only in this closure.
import { fileURLToPath } from "node:url";
import { fromCallback } from "xstate";
import type { KernelCommand, KernelFact, KernelInput } from "../machines/events.ts";
import type { ProcessOperations, RunnerHandle } from "./operations.ts";
import type { PythonInfo } from "./python.ts";
import { registerGroup, stopGroup } from "./registry.ts";
import type { Result } from "./result.ts";
import type { Channel } from "./output.ts";

export const RUNNER_PATH = fileURLToPath(new URL("../runtime-py/runner.py", import.meta.url));

export interface KernelDeps {
  ops: ProcessOperations;
  python: () => Promise<Result<PythonInfo>>;
  env: () => NodeJS.ProcessEnv;
  /** Output of the run currently executing; output with no run (between runs) is dropped. */
  output: (runId: string, channel: Channel, chunk: Buffer) => void;
  now: () => number;
  killMs: number;
  /** Which host owns the processes (two Pi sessions in one process must not stop each other's). */
  hostId: string;
  /** Sees every fact just before the owner (`input.owner`) receives it: the recorder logs it as an input. */
  onFact?: (owner: string, fact: KernelFact) => void;
}

export function createKernelLogic(deps: KernelDeps) {
  return fromCallback<KernelCommand, KernelInput>(({ input, sendBack, receive }) => {
    const send = (fact: KernelFact) => {
      if (stopped) return;
      deps.onFact?.(input.owner, fact);
      sendBack(fact);
    };
    let proc: RunnerHandle | undefined;
    let stopped = false;
    let ended = false;
    /** Stop requested before the process existed: it must not start at all. */
    let abandoned = false;
    let currentRun: string | undefined;
    let startedRun: string | undefined;
    let pendingInterrupt: string | undefined;

    const end = (fact: KernelFact) => {
      if (ended) return;
      ended = true;
      send(fact);
    };

    void (async () => {
      const python = await deps.python();
      if (stopped) return;
      if (!python.ok) return end({ type: "kernel.failed", at: deps.now(), message: python.error });
      if (abandoned) return end({ type: "kernel.exited", at: deps.now(), code: null, signal: null });
      const started = await deps.ops.start({
        executable: python.value.executable,
        args: [RUNNER_PATH, "--mode", input.mode],
        cwd: input.cwd,
        env: deps.env(),
      });
      if (!started.ok) return end({ type: "kernel.failed", at: deps.now(), message: started.error });
      const p = started.value;
      registerGroup(p.pid, { host: deps.hostId, owner: input.owner });
      proc = p;
      if (stopped || abandoned) {
        void stopGroup(p.pid, deps.killMs);
        if (abandoned) end({ type: "kernel.exited", at: deps.now(), code: null, signal: null });
        return;
      }
      p.onStdout((chunk) => currentRun && deps.output(currentRun, "stdout", chunk));
      p.onStderr((chunk) => currentRun && deps.output(currentRun, "stderr", chunk));
      let broken: string | undefined;
      const breakWith = (why: string) => {
        // A corrupt control channel cannot be trusted again: the process tree is killed; its exit (after the
        // output drained) reports why.
        broken ??= why;
        p.signalGroup("SIGKILL");
      };
      p.onProtocolError((message) => breakWith(`the runner broke the control protocol (${message})`));
      p.onFrame((frame) => {
        const at = deps.now();
        switch (frame.type) {
          case "ready":
            return send({
              type: "kernel.ready",
              at,
              pid: p.pid,
              python: String(frame.python ?? python.value.version),
              executable: String(frame.executable ?? python.value.executable),
            });
          case "started": {
            const runId = String(frame.id);
            startedRun = runId;
            send({ type: "kernel.started", at, runId });
            if (pendingInterrupt === runId) {
              pendingInterrupt = undefined;
              p.signal("SIGINT");
            }
            return;
          }
          case "done": {
            const runId = String(frame.id);
            currentRun = undefined;
            startedRun = undefined;
            return send({
              type: "kernel.done",
              at,
              runId,
              exitCode: Number(frame.exitCode ?? 1),
              displayedValue: frame.displayedValue === true,
              error: (frame.error ?? null) as Extract<KernelFact, { type: "kernel.done" }>["error"],
            });
          }
          case "fatal":
            return breakWith(`the runner failed: ${String(frame.message ?? "no reason given")}`);
        }
      });
      p.onExit((exit) => {
        currentRun = undefined;
        if (broken) end({ type: "kernel.failed", at: deps.now(), message: `${broken}; its process was killed` });
        else end({ type: "kernel.exited", at: deps.now(), code: exit.code, signal: exit.signal });
      });
    })();

    receive((command) => {
      switch (command.type) {
        case "kernel.run":
          currentRun = command.runId;
          proc?.send({ type: "run", id: command.runId, code: command.code, filename: command.filename });
          return;
        case "kernel.interrupt":
          // SIGINT only once the runner has installed its handler for this run; before that it is deferred.
          if (proc && startedRun === command.runId) proc.signal("SIGINT");
          else pendingInterrupt = command.runId;
          return;
        case "kernel.terminate":
          if (proc) proc.signalGroup("SIGTERM");
          else abandoned = true;
          return;
        case "kernel.kill":
          if (proc) proc.signalGroup("SIGKILL");
          else abandoned = true;
          return;
        case "kernel.shutdown":
          if (proc) proc.send({ type: "shutdown" });
          else abandoned = true;
          return;
      }
    });

    return () => {
      // The owner ended (run finished, session closed or reset, supervisor stopped): the process tree goes too.
      stopped = true;
      if (proc && !ended) void stopGroup(proc.pid, deps.killMs);
    };
  });
}
