// The lifecycle of one runner process (a session's interpreter, a fresh run's or a spare's): launching (its
// interpreter and command settled), spawning (started, or a spare's process adopted), up (booting until its `ready`
// frame, then ready), broken (a corrupt control channel: killed, its exit awaited), ended (its exit or failure
// reported), handed over (a spare's process moved to the run that claimed it), and released (its owner stopped it).
// A stop the owner asks for before the process exists is `abandoning`: the process must never run user code.
//
// actors/runner/runner.ts runs this machine privately and is its I/O adapter: it turns the process's life (the
// launch's and spawn's results, the `ready` frame, a protocol break, the exit) into these events and carries out the
// actions named here. A run's own frames (`started`, `done`, nested calls, output) do not pass through it: they are
// the run's facts, routed to the run by the adapter, and which run is executing is the run's and session's state.
import { assertEvent, assign, enqueueActions, setup } from "xstate";
import { placeholderAction } from "./placeholder.ts";

export interface RunnerLifeInput {
  /** The runner belongs to a spare (machines/spare.ts): whoever waits for its process must hear it has none. */
  spare: boolean;
}

/** How the process ended, as its handle tells it. */
export interface RunnerExit {
  code: number | null;
  signal: string | null;
  /** The connection to a remote process was lost (its exit is unknown). */
  lost?: { message: string; hint?: string };
}

export type RunnerLifeEvent =
  | { type: "launch.done" }
  | { type: "launch.failed"; message: string }
  | { type: "spawn.done"; adopted: boolean }
  | { type: "spawn.failed"; message: string; hint?: string }
  /** The spawn did not start anything: the owner stopped the runner before it began. */
  | { type: "spawn.cancelled" }
  | { type: "process.ready" }
  | { type: "process.broke"; why: string; hint?: string }
  | { type: "process.ended"; exit: RunnerExit }
  | { type: "stop"; how: "terminate" | "kill" | "shutdown" }
  | { type: "handover" }
  | { type: "release" };

interface RunnerLifeContext extends RunnerLifeInput {
  /** Why a broken process was killed: its exit is reported as a failure with this reason. */
  broken?: { why: string; hint?: string };
}

/** The effects the adapter provides. */
const unprovided = (name: string) => placeholderAction("machines/runner-process.ts", name, "actors/runner/runner.ts");

export const runnerLifecycle = setup({
  types: {
    context: {} as RunnerLifeContext,
    input: {} as RunnerLifeInput,
    events: {} as RunnerLifeEvent,
  },
  actions: {
    /** Start the process from the launched command, or take the claimed spare's. */
    spawnProcess: unprovided("spawnProcess"),
    /** Tell the owner the process is ready (a `runner.ready` fact). */
    reportReady: unprovided("reportReady"),
    /** Tell the owner the process could not start or was lost (a `runner.failed` fact). */
    reportFailure: unprovided("reportFailure") as (_: unknown, params: { message: string; hint?: string }) => void,
    /** Tell the owner the process exited (a `runner.exited` fact). */
    reportExit: unprovided("reportExit") as (_: unknown, params: RunnerExit) => void,
    /** A signal to the whole process group (the owner's terminate and kill). */
    signalGroup: unprovided("signalGroup") as (_: unknown, params: { signal: "SIGTERM" | "SIGKILL" }) => void,
    /** The runner's own `shutdown` frame: it exits after the run in progress. */
    askShutdown: unprovided("askShutdown"),
    /** The process group stopped as a runner's is (actors/registry/shutdown.ts). */
    stopProcess: unprovided("stopProcess"),
    /** An adopted spare's process, idle: killed at once. */
    killAdopted: unprovided("killAdopted"),
    /** The process moves to the run that claimed the spare: listeners off, the handle offered, nothing stopped. */
    handOver: unprovided("handOver"),
    /** A spare with no process to give: whoever waits for one starts its own. */
    offerNoProcess: unprovided("offerNoProcess"),
    /** Only a spare's waiter needs telling (a run's or a session's runner has none). */
    offerNoProcessIfSpare: enqueueActions(({ context, enqueue }) => {
      if (context.spare) enqueue("offerNoProcess");
    }),
    killIfAdopted: enqueueActions(({ event, enqueue }) => {
      if (event.type === "spawn.done" && event.adopted) enqueue("killAdopted");
    }),
    noteBroken: assign({
      broken: ({ event }) => {
        assertEvent(event, "process.broke");
        return { why: event.why, ...(event.hint ? { hint: event.hint } : {}) };
      },
    }),
  },
  guards: {
    isShutdown: ({ event }) => event.type === "stop" && event.how === "shutdown",
    wasAdopted: ({ event }) => event.type === "spawn.done" && event.adopted,
    connectionLost: ({ event }) => event.type === "process.ended" && event.exit.lost !== undefined,
  },
}).createMachine({
  id: "runner",
  context: ({ input }) => ({ ...input }),
  initial: "launching",
  states: {
    launching: {
      description: "Settling the interpreter and the runner's command (a discovery or probe may run).",
      on: {
        "launch.done": { target: "spawning", actions: "spawnProcess" },
        "launch.failed": {
          target: "ended",
          actions: { type: "reportFailure", params: launchFailureOf },
        },
        stop: "abandoning.launching",
        release: { target: "released", actions: "offerNoProcessIfSpare" },
      },
    },
    spawning: {
      description: "The process is being started, or a claimed spare's process adopted.",
      on: {
        "spawn.done": [{ guard: "wasAdopted", target: "up.ready", actions: "reportReady" }, { target: "up.booting" }],
        "spawn.failed": { target: "ended", actions: { type: "reportFailure", params: failureOf } },
        stop: "abandoning.spawning",
        release: "releasing",
      },
    },
    abandoning: {
      description:
        "The owner asked for a stop before the process existed: once the launch or spawn settles, whatever started " +
        "is stopped at once and reported as exited, without running anything.",
      initial: "launching",
      states: {
        launching: {
          description: "The stop came while the command was being settled: nothing will be started.",
          on: {
            "launch.done": { target: "#runner.ended", actions: { type: "reportExit", params: nothingRan } },
            "launch.failed": {
              target: "#runner.ended",
              actions: { type: "reportFailure", params: launchFailureOf },
            },
          },
        },
        spawning: {
          description: "The stop came while the process was starting: it is stopped as soon as it exists.",
          on: {
            "spawn.done": {
              target: "#runner.ended",
              actions: ["killIfAdopted", "stopProcess", { type: "reportExit", params: nothingRan }],
            },
            "spawn.failed": { target: "#runner.ended", actions: { type: "reportFailure", params: failureOf } },
            "spawn.cancelled": { target: "#runner.ended", actions: { type: "reportExit", params: nothingRan } },
          },
        },
      },
      on: { stop: {}, release: "releasing" },
    },
    up: {
      description: "The process is alive and its control channel is sound.",
      initial: "booting",
      states: {
        booting: {
          description: "Started; the interpreter has not said `ready` yet (a run sent now waits in the pipe).",
          on: { "process.ready": { target: "ready", actions: "reportReady" } },
        },
        ready: {
          description: "Ready: runs go to it; a spare's process can be handed to the run that claimed it.",
          on: { handover: { target: "#runner.handedOver", actions: "handOver" } },
        },
      },
      on: {
        stop: [
          { guard: "isShutdown", actions: "askShutdown" },
          {
            actions: {
              type: "signalGroup",
              params: ({ event }) => {
                assertEvent(event, "stop");
                return { signal: event.how === "kill" ? "SIGKILL" : "SIGTERM" };
              },
            },
          },
        ],
        "process.broke": {
          target: "broken",
          actions: ["noteBroken", { type: "signalGroup", params: { signal: "SIGKILL" } }],
        },
        "process.ended": [
          {
            guard: "connectionLost",
            target: "ended",
            actions: {
              type: "reportFailure",
              params: ({ event }) => {
                assertEvent(event, "process.ended");
                return event.exit.lost!;
              },
            },
          },
          {
            target: "ended",
            actions: {
              type: "reportExit",
              params: ({ event }) => {
                assertEvent(event, "process.ended");
                return { code: event.exit.code, signal: event.exit.signal };
              },
            },
          },
        ],
        release: { target: "released", actions: ["stopProcess", "offerNoProcessIfSpare"] },
      },
    },
    broken: {
      description:
        "The control channel was corrupt (a bad frame, a `fatal`, output past its limit): the process tree was " +
        "killed and cannot be trusted again; its exit, once its output drained, is reported as a failure saying why.",
      on: {
        "process.ended": {
          target: "ended",
          actions: {
            type: "reportFailure",
            params: ({ context }) => ({
              message: `${context.broken!.why}; its process was killed`,
              ...(context.broken!.hint ? { hint: context.broken!.hint } : {}),
            }),
          },
        },
        release: { target: "released", actions: ["stopProcess", "offerNoProcessIfSpare"] },
      },
    },
    ended: {
      description: "The process is gone and its owner was told how (exited, or failed and why).",
      on: { release: { target: "released", actions: "offerNoProcessIfSpare" } },
    },
    handedOver: {
      description: "A spare's process now belongs to the run that claimed it: nothing of it is stopped here.",
      on: { release: "released" },
    },
    releasing: {
      description:
        "The owner stopped this runner while its process was starting: the process is stopped once it exists.",
      entry: "offerNoProcessIfSpare",
      on: {
        "spawn.done": { target: "released", actions: ["killIfAdopted", "stopProcess"] },
        "spawn.failed": "released",
        "spawn.cancelled": "released",
      },
    },
    released: {
      type: "final",
      description:
        "The owner ended (run finished, session closed or reset, supervisor stopped): nothing more is reported.",
    },
  },
});

/** A process stopped before it ran anything: no exit code or signal to tell. */
function nothingRan(): RunnerExit {
  return { code: null, signal: null };
}

function launchFailureOf({ event }: { event: RunnerLifeEvent }) {
  assertEvent(event, "launch.failed");
  return { message: event.message };
}

function failureOf({ event }: { event: RunnerLifeEvent }) {
  assertEvent(event, "spawn.failed");
  return { message: event.message, ...(event.hint ? { hint: event.hint } : {}) };
}
