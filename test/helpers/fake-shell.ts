// A scriptable stand-in for the `shell` boundary actor (a shell session's process) and a harness that runs the
// supervisor with it under a SimulatedClock: a test sends the process's facts by hand and advances the clock.
import { SimulatedClock, createActor, fromCallback, type AnyActorRef, type InspectionEvent } from "xstate";
import type { ShellCommand, ShellFact, ShellInput } from "../../machines/exec-session.ts";
import type { ExecCommand, ExecEmitted, ExecPoolInput, ExecRecord } from "../../machines/exec-pool.ts";
import { DEFAULT_EXEC_POOL, EXEC_POOL_ID, poolRecords } from "../../machines/exec-pool.ts";
import { supervisorWith } from "../../machines/system.ts";
import { DEFAULT_LIMITS } from "../../machines/events.ts";

export interface FakeShell {
  input: ShellInput;
  /** Signals received, in order; `stopped` once XState stopped it. */
  signals: string[];
  stopped: boolean;
  send(fact: ShellFact): void;
}

export function startExec(config: Partial<ExecPoolInput> = {}, inspect?: (e: InspectionEvent) => void) {
  const clock = new SimulatedClock();
  const shells = new Map<number, FakeShell>();
  const shell = fromCallback<ShellCommand, ShellInput>(({ input, sendBack, receive }) => {
    const s: FakeShell = { input, signals: [], stopped: false, send: (f) => sendBack(f) };
    shells.set(input.id, s);
    receive((c) => s.signals.push(c.signal));
    return () => {
      s.stopped = true;
    };
  });
  const runner = fromCallback(() => {});
  const errors: unknown[] = [];
  const actor = createActor(supervisorWith(runner, { shell }), {
    id: "supervisor",
    systemId: "supervisor",
    input: { limits: DEFAULT_LIMITS, exec: { ...DEFAULT_EXEC_POOL, ...config } },
    clock,
    ...(inspect ? { inspect } : {}),
  });
  actor.subscribe({ error: (e) => errors.push(e) });
  actor.start();
  actor.send({ type: "exec.open", at: 0 });
  const pool = actor.system.get(EXEC_POOL_ID) as AnyActorRef;
  const emitted: ExecEmitted[] = [];
  pool.on("*", (e: ExecEmitted) => emitted.push(e));
  const at = () => clock.now();
  const h = {
    actor,
    clock,
    shells,
    emitted,
    errors,
    send(cmd: ExecCommand | { type: "supervisor.shutdown"; at: number }) {
      actor.send(cmd as never);
    },
    start(id: number, callId = `start-${id}`, extra: { command?: string } = {}) {
      h.send({
        type: "exec.start",
        at: at(),
        id,
        callId,
        command: extra.command ?? `cmd ${id}`,
        shell: "/bin/bash",
        cwd: "/w",
        tty: false,
        cols: 120,
        rows: 30,
        logPath: `/logs/${id}.log`,
      });
    },
    spawned(id: number, pid = 1000 + id) {
      shells.get(id)!.send({ type: "shell.spawned", at: at(), pid });
    },
    closed(id: number, code: number | null = 0, signal: string | null = null) {
      shells.get(id)!.send({ type: "shell.closed", at: at(), code, signal });
    },
    /** After a SIGKILL (or a signal that found no process): none of the group is left; `outputOpen`, one outside it
     * holds the output. */
    groupGone(id: number, outputOpen: boolean) {
      shells.get(id)!.send({ type: "shell.group_gone", at: at(), outputOpen });
    },
    /** exec_command started `id` and it is still running at the end of the window: it goes to the background. */
    background(id: number, onExit: "none" | "wake" = "none", callId = `start-${id}`) {
      h.send({ type: "exec.background", at: at(), id, callId, onExit });
    },
    running(id: number, onExit: "none" | "wake" = "none") {
      h.start(id);
      h.spawned(id);
      h.background(id, onExit);
    },
    records(): Record<string, ExecRecord> {
      return poolRecords(pool.getSnapshot() as Parameters<typeof poolRecords>[0]);
    },
    sessionState(id: number): unknown {
      return actor.system.get(`exec:${id}`)?.getSnapshot().value;
    },
    wakeState(id: number): { value: unknown; armed: boolean } | undefined {
      const s = actor.system.get(`wake:${id}`)?.getSnapshot() as
        { value: unknown; context: { armed: boolean } } | undefined;
      return s ? { value: s.value, armed: s.context.armed } : undefined;
    },
    coordinator(): unknown {
      return actor.system.get("exec:wake")?.getSnapshot().value;
    },
    wakes(): Extract<ExecEmitted, { type: "exec.wake" }>[] {
      return emitted.filter((e): e is Extract<ExecEmitted, { type: "exec.wake" }> => e.type === "exec.wake");
    },
    /** Asks set_on_exit and returns the answer (emitted synchronously). */
    setOnExit(id: number, onExit: "none" | "wake") {
      const requestId = `r${emitted.length}`;
      h.send({ type: "exec.set_on_exit", at: at(), id, onExit, requestId });
      return emitted.find((e) => e.type === "exec.answer" && e.requestId === requestId) as Extract<
        ExecEmitted,
        { type: "exec.answer" }
      >;
    },
    advance(ms: number) {
      clock.increment(ms);
    },
  };
  return h;
}
