// The runner actor: one runner process. It turns control frames and process exits into runner facts for the
// machine that owns it, routes the process's output to the run that is executing, and carries out the machine's
// commands (run, interrupt, terminate, kill, shutdown). The process handle lives only in this closure. What differs
// between Python and JavaScript runners (which process, how an interrupt reaches it) is the kind's (kinds.ts).
import { createActor, fromCallback, type AnyActorRef } from "xstate";
import type { RunnerCommand, RunnerFact, RunnerInput } from "../../machines/events.ts";
import type { ToolSpec } from "../../machines/tool-events.ts";
import type { ProcessOperations, RunnerHandle } from "../process/operations.ts";
import { registerGroup, stopGroup } from "../registry/registry.ts";
import { SHUTDOWN } from "../registry/shutdown.ts";
import type { Result } from "../../lib/result.ts";
import type { Channel } from "../../lib/run-output.ts";
import { sendToolResult, toolFrameFact } from "./call-frames.ts";
import type { ModuleWatch } from "./module-watch.ts";
import { ok } from "../../lib/result.ts";
import { runnerLifecycle } from "../../machines/runner-process.ts";
import { handoverKey, offer, take, type Handover } from "./handover.ts";
import { cellOf, displayOf, doneShown, type RunShown } from "./display-frames.ts";
import { backendHint } from "../process/backend-hints.ts";
import type { ResourceLimits } from "../../lib/setting-types.ts";
import type { Probe } from "../interpreter/interpreter.ts";
import { kindsFor, type RunnerKind } from "./kinds.ts";
import { isActor, runActorId } from "../../machines/actor-ids.ts";

export { RUNNER_PATH, limitArgs } from "./kinds.ts";

export interface RunnerDeps {
  ops: ProcessOperations;
  /** The interpreter of a runner started without one (runs name theirs): discovered from its working directory. */
  python: (cwd: string) => Promise<Result<Probe>>;
  /** The runner's environment, for its interpreter (actors/interpreter.ts `runnerEnv`). */
  env: (input: RunnerInput) => NodeJS.ProcessEnv;
  /** A session's local-module watcher (actors/module-watch.ts); none when module reload is off. */
  watchModules?: (cwd: string) => ModuleWatch | undefined;
  /** Output of the run currently executing; output with no run (between runs) is dropped. */
  output: (runId: string, channel: Channel, chunk: Buffer) => void;
  /** What the executing run shows besides output: displays, a notebook cell's value and error text. */
  shown?: (runId: string, item: RunShown) => void;
  now: () => number;
  killMs: number;
  /** Which host owns the processes (two Pi sessions in one process must not stop each other's). */
  hostId: string;
  /** Resource limits for new runners (store/settings.ts `limits`); read when each process starts. */
  resourceLimits?: () => ResourceLimits;
  /** The specs (signatures, descriptions) of the tools a run exposes, from its caller. */
  toolSpecs?: (runId: string) => ToolSpec[] | undefined;
  /** Told just before a session's runner sends a fact straight to the run it concerns (not through its parent, the
   * session): the recorder's input, as a parent's are seen through inspection. */
  onFact?: (from: AnyActorRef, to: AnyActorRef, fact: RunnerFact) => void;
}

type Launch = Extract<Awaited<ReturnType<RunnerKind["start"]>>, { ok: true }>["value"];

export function createRunnerLogic(deps: RunnerDeps) {
  const kinds = kindsFor(deps);
  return fromCallback<RunnerCommand, RunnerInput>(({ input, sendBack, receive, self, system }) => {
    const kind = kinds[input.language ?? "python"];
    const session = input.mode === "session";
    const spare = isActor(input.owner, "spare");
    let proc: RunnerHandle | undefined;
    /** The runner's command, once launched. */
    let launched: Launch | undefined;
    /** What the runner said when it became ready (a spare hands it on with its process). */
    let readyInfo: Handover["ready"] | undefined;
    /** The owner stopped this runner: no fact is told after that. */
    const released = () => life.getSnapshot().status !== "active";
    const send = (fact: RunnerFact) => {
      if (released()) return;
      // A session's runner tells a run's own facts (started, done, nested calls) to that run, by its system id: the
      // session has nothing to do with them, and relaying would cost it a step per fact. The process's facts (ready,
      // exited, failed) and any fact whose run is gone go to the session.
      const run =
        session && "runId" in fact ? (system.get(runActorId(fact.runId)) as AnyActorRef | undefined) : undefined;
      if (!run) return sendBack(fact);
      deps.onFact?.(self, run, fact);
      run.send(fact);
    };

    // The process's lifecycle is machines/runner-process.ts; this closure is its I/O: the events below are the process's
    // life, the actions the effects the machine names.
    const life = createActor(
      runnerLifecycle.provide({
        actions: {
          spawnProcess: () => void spawn(),
          reportReady: () => send({ type: "runner.ready", at: deps.now(), pid: proc!.pid, ...readyInfo! }),
          reportFailure: (_, { message, hint }) =>
            send({ type: "runner.failed", at: deps.now(), message, ...(hint ? { hint: backendHint(hint) } : {}) }),
          reportExit: (_, { code, signal }) => send({ type: "runner.exited", at: deps.now(), code, signal }),
          signalGroup: (_, { signal }) => proc!.signalGroup(signal),
          askShutdown: () => proc!.send({ type: "shutdown" }),
          stopProcess: () => void stopGroup(proc!.pid, SHUTDOWN.runner(deps.killMs)),
          killAdopted: () => proc!.signalGroup("SIGKILL"),
          handOver: () => {
            proc!.detach();
            offer(handoverKey(deps.hostId, input.owner), { handle: proc!, ready: readyInfo! });
          },
          offerNoProcess: () => offer(handoverKey(deps.hostId, input.owner), undefined),
        },
      }),
      { input: { spare } },
    ).start();

    let currentRun: string | undefined;
    let startedRun: string | undefined;
    /** The current run has a batch of cells: its interrupts go as frames (docs/protocol.md, "Notebook cells"). */
    let batched = false;
    /** The executing batch's further cells started so far, when its run is told of each (`cellStarts`). */
    let cellsStarted: number | undefined;
    /** An interrupt for the run sent to the runner, waiting until the runner takes that run up (Python: installs its
     * SIGINT handler). The run's own state is `stopping`; this is only where the signal waits. */
    let pendingInterrupt: string | undefined;
    /** Call ids of the executing run that await an answer. The runner never reuses an id, so a second `tool.call`
     * with one of them is forged by user code: it is dropped unanswered (an answer would reach the real call). */
    const waitingCalls = new Set<string>();
    /** The tool set this process holds: a run with the same set sends its id only (docs/protocol.md). */
    let sentToolSet: string | undefined;
    /** A `started` not reported yet (see the `started` frame). */
    let unreported: Extract<RunnerFact, { type: "runner.started" }> | undefined;
    const reportStarted = () => {
      const fact = unreported;
      unreported = undefined;
      if (fact) send(fact);
    };

    const modules = input.mode === "session" && kind.watchesModules ? deps.watchModules?.(input.cwd) : undefined;
    const limits = deps.resourceLimits?.();
    const outputCap = limits?.outputMiB ? limits.outputMiB * 1024 * 1024 : Infinity;

    void (async () => {
      const launch = await kind.start(input, limits, deps.ops.backend);
      if (!launch.ok) return life.send({ type: "launch.failed", message: launch.error });
      launched = launch.value;
      life.send({ type: "launch.done" });
    })();

    /** Starts the launched command, or adopts the claimed spare's process, and listens to it. */
    async function spawn() {
      // A spare replacing a claimed one is started at claim time: its (synchronous) spawn waits one turn, so the
      // claiming run's frame is written first and the run does not wait for it. A stop in that turn starts nothing.
      if (spare) {
        await new Promise((r) => setImmediate(r));
        if (!life.getSnapshot().matches("spawning")) return life.send({ type: "spawn.cancelled" });
      }
      // A claimed spare's process, already started and ready; if it has none to give, start one.
      const adopted = input.adopt ? await take(handoverKey(deps.hostId, input.adopt)) : undefined;
      const started = adopted
        ? ok(adopted.handle)
        : await deps.ops.start({ ...launched!.spec, cwd: input.cwd, killMs: deps.killMs, host: deps.hostId });
      if (!started.ok)
        return life.send({
          type: "spawn.failed",
          message: started.error.message,
          ...(started.error.hint ? { hint: started.error.hint } : {}),
        });
      const p = started.value;
      registerGroup(p.pid, { host: deps.hostId, owner: input.owner });
      proc = p;
      if (adopted) readyInfo = adopted.ready;
      listen(p);
      life.send({ type: "spawn.done", adopted: adopted !== undefined });
    }

    function listen(p: RunnerHandle) {
      // A corrupt control channel cannot be trusted again: the machine kills the process tree; its exit (after the
      // output drained) reports why.
      const breakWith = (why: string, hint?: string) =>
        life.send({ type: "process.broke", why, ...(hint ? { hint } : {}) });
      // limits.outputMiB: a run that writes more loses its process tree (what it wrote so far is kept).
      let written = 0;
      let countedRun: string | undefined;
      const output = (channel: "stdout" | "stderr", chunk: Buffer) => {
        if (!currentRun) return;
        if (countedRun !== currentRun) {
          countedRun = currentRun;
          written = 0;
        }
        written += chunk.length;
        deps.output(currentRun, channel, chunk);
        if (written > outputCap)
          breakWith(`the run wrote more than ${limits!.outputMiB} MiB of output`, "limit_output");
      };
      p.onStdout((chunk) => output("stdout", chunk));
      p.onStderr((chunk) => output("stderr", chunk));
      p.onProtocolError((message) => breakWith(`the runner broke the control protocol (${message})`));
      p.onFrame((frame) => {
        const at = deps.now();
        switch (frame.type) {
          case "ready":
            readyInfo = {
              python: kind.version(frame) ?? launched!.version,
              executable: String(frame.executable ?? launched!.spec.executable),
              ...(kind.language ? { language: kind.language } : {}),
            };
            return life.send({ type: "process.ready" });
          case "started": {
            const runId = String(frame.id);
            startedRun = runId;
            waitingCalls.clear();
            // Reported once this read's frames are handled: a quick run's `done` in the same read stands for both
            // (the run goes from starting to its end on one event, not two relayed through its session).
            unreported = { type: "runner.started", at, runId };
            queueMicrotask(reportStarted);
            if (pendingInterrupt === runId) {
              pendingInterrupt = undefined;
              kind.interrupt(p, runId, batched);
            }
            return;
          }
          case "done": {
            const runId = String(frame.id);
            if (unreported?.runId === runId) unreported = undefined;
            if (runId === startedRun) for (const item of doneShown(frame)) deps.shown?.(runId, item);
            currentRun = undefined;
            startedRun = undefined;
            return send({
              type: "runner.done",
              at,
              runId,
              exitCode: Number(frame.exitCode ?? 1),
              displayedValue: frame.displayedValue === true,
              error: (frame.error ?? null) as Extract<RunnerFact, { type: "runner.done" }>["error"],
              ...doneExtras(frame, modules),
            });
          }
          case "tool.call":
          case "tool.cancel": {
            reportStarted();
            // Nested tool calls: only the executing run may call; other frames are answered without a fact.
            if (frame.type === "tool.call" && waitingCalls.has(frame.id as string)) return;
            const fact = toolFrameFact(frame, at, startedRun);
            if (fact.ok && fact.value.type === "runner.tool_call") waitingCalls.add(fact.value.callId);
            if (fact.ok) return send(fact.value);
            if (fact.error) p.send(fact.error);
            return;
          }
          case "cell": {
            // The next cell starts on this ack. Sent first: none of the next cell's output can be handled before
            // this handler returns, and the runner goes on while the host does its work for the cell that ended.
            p.send({ type: "cell.ack", id: frame.id });
            // A batch's cell ended (not its last): the output before it is that cell's (the runner drained first).
            if (frame.id !== startedRun || !startedRun) return;
            deps.shown?.(startedRun, cellOf(frame));
            // Its cells have their own timeouts: the run starts the next one's (after its start, if not told yet).
            if (cellsStarted === undefined) return;
            reportStarted();
            return send({ type: "runner.cell", at, runId: startedRun, cell: (cellsStarted += 1) });
          }
          case "display": {
            // Only the executing run's; the runner drained fd 1 and 2 first, so it lands after the output before it.
            const item = frame.id === startedRun && startedRun ? displayOf(frame) : undefined;
            if (item) deps.shown?.(startedRun!, item);
            return;
          }
          case "fatal":
            return breakWith(`the runner failed: ${String(frame.message ?? "no reason given")}`);
        }
      });
      p.onExit((exit) => {
        reportStarted();
        currentRun = undefined;
        life.send({
          type: "process.ended",
          exit: { code: exit.code, signal: exit.signal, ...(exit.lost ? { lost: exit.lost } : {}) },
        });
      });
    }

    /** A run frame's tools: the specs the first time this process sees a set, its id alone after that. */
    const toolsOf = (toolSet: string | undefined) => {
      if (toolSet === undefined || currentRun === undefined || !proc) return {};
      if (toolSet === sentToolSet) return { tools_id: toolSet };
      sentToolSet = toolSet;
      return { tools: deps.toolSpecs?.(currentRun) ?? [], tools_id: toolSet };
    };
    receive((command) => {
      switch (command.type) {
        case "runner.run":
          currentRun = command.runId;
          batched = command.batch !== undefined && command.batch.length > 0;
          cellsStarted = batched && command.cellStarts ? 0 : undefined;
          proc?.send({
            type: "run",
            id: command.runId,
            code: command.code,
            filename: command.filename,
            ...(batched ? { batch: command.batch } : {}),
            ...toolsOf(command.toolSet),
            // The directory where the runner is (a remote's: remote.cwd; host.ts refused one that maps nowhere).
            ...(command.chdir ? { chdir: deps.ops.mapCwd?.(command.chdir) ?? command.chdir } : {}),
            ...(command.result ? { result: command.result } : {}),
            ...runExtras(command, modules),
          });
          return;
        case "runner.tool_result":
          waitingCalls.delete(command.callId);
          if (proc) sendToolResult(proc, command);
          return;
        case "runner.interrupt":
          // Only once the runner has taken up this run (Python: installed its SIGINT handler); before, it waits.
          if (proc && startedRun === command.runId) kind.interrupt(proc, command.runId, batched);
          else pendingInterrupt = command.runId;
          return;
        case "runner.terminate":
          return life.send({ type: "stop", how: "terminate" });
        case "runner.kill":
          return life.send({ type: "stop", how: "kill" });
        case "runner.shutdown":
          return life.send({ type: "stop", how: "shutdown" });
        case "runner.handover":
          // A spare's process moves to the run that claimed it (only a ready one: machines/runner-process.ts).
          return life.send({ type: "handover" });
      }
    });

    // The owner ended (run finished, session closed or reset, supervisor stopped): the process tree goes too, unless
    // it was handed over (machines/runner-process.ts `released`).
    return () => {
      modules?.close();
      life.send({ type: "release" });
    };
  });
}

/** Optional run-frame fields: package directories, installed modules to check, changed local modules to reload. */
function runExtras(command: Extract<RunnerCommand, { type: "runner.run" }>, modules: ModuleWatch | undefined) {
  const reload = modules?.take() ?? [];
  return {
    ...(command.sysPath?.length ? { sysPath: command.sysPath } : {}),
    ...(command.checkLoaded?.length ? { checkLoaded: command.checkLoaded } : {}),
    ...(reload.length ? { reload } : {}),
  };
}

const strings = (v: unknown): string[] | undefined =>
  Array.isArray(v) && v.length > 0 ? v.filter((x): x is string => typeof x === "string") : undefined;

/** What `done` says besides the outcome: modules reloaded or already loaded; newly imported local modules are
 * handed to the watcher. */
function doneExtras(frame: Record<string, unknown>, modules: ModuleWatch | undefined) {
  modules?.track(frame.modules);
  const reloaded = strings(frame.reloaded);
  const alreadyLoaded = strings(frame.alreadyLoaded);
  return { ...(reloaded ? { reloaded } : {}), ...(alreadyLoaded ? { alreadyLoaded } : {}) };
}
