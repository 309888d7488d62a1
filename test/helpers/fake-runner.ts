// A scriptable stand-in for the `runner` actor (the Python process) and a harness that starts the supervisor with
// it under a SimulatedClock. No process, no real timer: a test advances the clock and sends runner facts by hand.
//
// Every instance of the fake records, in order, the commands it receives (runner.run, runner.interrupt,
// runner.terminate, runner.kill, runner.shutdown) and a final `{type: "stopped"}` when XState stops it (the real
// runner's cleanup kills the process group there). Facts (runner.ready, runner.started, runner.done, runner.exited,
// runner.failed) go back to the owner with `sendBack`, exactly as the real runner does.
// Past 400 lines, one concept: the fake runner and the harness that starts the real supervisor around it are
// used together by every machine test.
import { SimulatedClock, createActor, fromCallback } from "xstate";
import type { AnyActorLogic, AnyActorRef, InspectionEvent } from "xstate";
import type {
  RunnerCommand,
  RunnerFact,
  RunnerInfo,
  RunnerInput,
  Limits,
  RunOutcome,
  RunRequest,
  RunnerError,
} from "../../machines/events.ts";
import { sessionPhase } from "../../machines/session.ts";
import type { SupervisorEvent } from "../../machines/supervisor.ts";
import type { SupervisorInput } from "../../machines/supervisor-context.ts";
import { supervisorWith, type BoundaryActors } from "../../machines/system.ts";

export type RunnerReceived = RunnerCommand | { type: "stopped" };

export const RUNNER_INFO: RunnerInfo = { pid: 4242, python: "3.11.2", executable: "/usr/bin/python3" };

export interface FakeRunnerInstance {
  /** 0-based, in start order over the whole fake. */
  readonly index: number;
  readonly input: RunnerInput;
  /** Commands received, in order, then `{type: "stopped"}` once stopped. */
  readonly received: RunnerReceived[];
  /** `received` as a list of types. */
  types(): string[];
  readonly stopped: boolean;
  /** Sends a fact to the owner. Throws if the instance was stopped (a test sending to a dead runner is a bug in
   * the test; a real late fact is modelled with `sendLate`). */
  send(fact: RunnerFact): void;
  /** Sends even when stopped (XState drops it: a stopped callback actor's `sendBack` is a no-op). */
  sendLate(fact: RunnerFact): void;
  ready(at?: number, info?: RunnerInfo): void;
  started(runId: string, at?: number): void;
  done(runId: string, opts?: { at?: number; exitCode?: number; displayedValue?: boolean; error?: RunnerError }): void;
  exited(opts?: { at?: number; code?: number | null; signal?: string | null }): void;
  failed(message: string, at?: number): void;
}

export interface FakeRunnerOptions {
  /** Time for facts sent without an explicit `at` (the harness passes the simulated clock). */
  now?: () => number;
  /** Called when an instance starts (e.g. to answer `runner.ready` at once). */
  onStart?: (runner: FakeRunnerInstance) => void;
  /** Called after each command is recorded (e.g. to answer `runner.run` with started/done). */
  onCommand?: (command: RunnerCommand, runner: FakeRunnerInstance) => void;
}

export interface FakeRunnerLogEntry {
  index: number;
  owner: string;
  received: RunnerReceived;
}

export function createFakeRunner(options: FakeRunnerOptions = {}) {
  const now = options.now ?? (() => 0);
  const instances: FakeRunnerInstance[] = [];
  /** Every command to every instance, in global order. */
  const log: FakeRunnerLogEntry[] = [];

  const logic = fromCallback<RunnerCommand, RunnerInput>(({ input, sendBack, receive }) => {
    const received: RunnerReceived[] = [];
    let stopped = false;
    const index = instances.length;
    const record = (r: RunnerReceived) => {
      received.push(r);
      log.push({ index, owner: input.owner, received: r });
    };
    const instance: FakeRunnerInstance = {
      index,
      input,
      received,
      types: () => received.map((r) => r.type),
      get stopped() {
        return stopped;
      },
      send(fact) {
        if (stopped) throw new Error(`fake runner #${index} (${input.owner}) is stopped; cannot send ${fact.type}`);
        sendBack(fact);
      },
      sendLate(fact) {
        sendBack(fact);
      },
      ready(at = now(), info = RUNNER_INFO) {
        instance.send({ type: "runner.ready", at, ...info });
      },
      started(runId, at = now()) {
        instance.send({ type: "runner.started", at, runId });
      },
      done(runId, { at = now(), exitCode = 0, displayedValue = false, error = null } = {}) {
        instance.send({ type: "runner.done", at, runId, exitCode, displayedValue, error });
      },
      exited({ at = now(), code = null, signal = null } = {}) {
        instance.send({ type: "runner.exited", at, code, signal });
      },
      failed(message, at = now()) {
        instance.send({ type: "runner.failed", at, message });
      },
    };
    instances.push(instance);
    receive((command) => {
      record(command);
      options.onCommand?.(command, instance);
    });
    options.onStart?.(instance);
    return () => {
      stopped = true;
      record({ type: "stopped" });
    };
  });

  return {
    logic,
    instances,
    log,
    /** Every instance started for `owner` (`run:<id>` for a fresh run, `session:<name>`), oldest first. */
    all(owner: string): FakeRunnerInstance[] {
      return instances.filter((k) => k.input.owner === owner);
    },
    /** The latest instance for `owner`; throws if there is none. */
    of(owner: string): FakeRunnerInstance {
      const found = instances.filter((k) => k.input.owner === owner);
      const last = found[found.length - 1];
      if (!last)
        throw new Error(`no fake runner for ${owner} (have: ${instances.map((k) => k.input.owner).join(", ")})`);
      return last;
    },
  };
}

export type FakeRunner = ReturnType<typeof createFakeRunner>;

export const TEST_LIMITS: Limits = { interruptWindowMs: 100, graceMs: 1000, killMs: 500 };

/** The supervisor with the fake runner provided to fresh runs, sessions and spares (a session run talks to its
 * session's runner through the session link, which stays as is); requests come prepared by their sender. */
export function provideSupervisor(runner: FakeRunner, boundary: BoundaryActors = {}) {
  return supervisorWith(runner.logic, boundary);
}

/** One `@xstate.snapshot` of any actor in the tree. */
export interface TraceEntry {
  id: string;
  sessionId: string;
  value: unknown;
  status: string;
  event: string;
  snapshot: unknown;
}

/** A delayed event (an `after` timer) scheduled by some actor and not yet delivered or cancelled. */
export interface PendingTimer {
  actorId: string;
  sessionId: string;
  /** `xstate.after.<delay>.<stateId>` */
  type: string;
  due: number;
}

export interface HarnessOptions {
  limits?: Limits;
  runner?: Omit<FakeRunnerOptions, "now">;
  /** The `prepare` actor (default: requests come prepared by their sender). */
  prepare?: AnyActorLogic;
  /** The dependency installer (default: the run's placeholder, which fails). */
  install?: AnyActorLogic;
  /** The shell-session pool's bounds (the supervisor's `exec` input; default DEFAULT_EXEC_POOL). */
  exec?: SupervisorInput["exec"];
}

/** Starts the provided supervisor as the root (`systemId: "supervisor"`) with a SimulatedClock and records what a
 * test wants to assert: emitted outcomes, every snapshot of every actor, every event type delivered anywhere, and
 * root errors. */
export function startSupervisor(options: HarnessOptions = {}) {
  const limits = options.limits ?? TEST_LIMITS;
  const clock = new SimulatedClock();
  const runner = createFakeRunner({ ...options.runner, now: () => clock.now() });
  const finished: RunOutcome[] = [];
  const trace: TraceEntry[] = [];
  const eventTypes: string[] = [];
  const errors: unknown[] = [];
  let timers: PendingTimer[] = [];

  const inspect = (ev: InspectionEvent) => {
    if (ev.type === "@xstate.event") {
      eventTypes.push(ev.event.type);
      timers = timers.filter((t) => !(t.sessionId === ev.actorRef.sessionId && t.type === ev.event.type));
    } else if (ev.type === "@xstate.action") {
      const { type, params } = ev.action as { type: string; params: Record<string, unknown> };
      if (type === "xstate.raise" && typeof params.delay === "number") {
        const event = params.event as { type: string };
        timers.push({
          actorId: (ev.actorRef as AnyActorRef).id,
          sessionId: ev.actorRef.sessionId,
          type: event.type,
          due: clock.now() + params.delay,
        });
      } else if (type === "xstate.cancel") {
        timers = timers.filter((t) => !(t.sessionId === ev.actorRef.sessionId && t.type === params.sendId));
      }
    } else if (ev.type === "@xstate.snapshot") {
      const snap = ev.snapshot as { value?: unknown; status: string };
      trace.push({
        id: (ev.actorRef as AnyActorRef).id,
        sessionId: ev.actorRef.sessionId,
        value: snap.value,
        status: snap.status,
        event: ev.event.type,
        snapshot: ev.snapshot,
      });
      // A stopped actor's timers are cancelled with it.
      if (snap.status !== "active") timers = timers.filter((t) => t.sessionId !== ev.actorRef.sessionId);
    }
  };

  const actor = createActor(
    provideSupervisor(runner, {
      ...(options.prepare ? { prepare: options.prepare } : {}),
      ...(options.install ? { install: options.install } : {}),
    }),
    {
      id: "supervisor",
      systemId: "supervisor",
      input: { limits, ...(options.exec ? { exec: options.exec } : {}) },
      clock,
      inspect,
    },
  );
  actor.on("run.finished", (e) => finished.push(e.outcome));
  actor.subscribe({ error: (err) => errors.push(err) });
  actor.start();

  const h = {
    actor,
    clock,
    runner,
    limits,
    finished,
    trace,
    eventTypes,
    errors,
    now: () => clock.now(),
    /** Moves simulated time forward (fires due timers in order). */
    advance(ms: number) {
      clock.increment(ms);
    },
    /** Pending `after` timers of every actor in the tree, soonest first. */
    timers(): PendingTimer[] {
      return [...timers].sort((a, b) => a.due - b.due);
    },
    /** Advances the clock exactly to the due time of the pending `after` timer whose event is `type` (e.g.
     * `xstate.after.deadline.run.running`) so that it fires; throws if no such timer is pending or if another
     * timer would fire first. */
    fire(type: string) {
      const timer = timers.findLast((t) => t.type === type);
      if (!timer)
        throw new Error(`no pending timer ${type} (pending: ${timers.map((t) => t.type).join(", ") || "none"})`);
      const earlier = timers.filter((t) => t !== timer && t.due < timer.due);
      if (earlier.length)
        throw new Error(`${type} is due at ${timer.due}, after ${earlier.map((t) => t.type).join(", ")}`);
      clock.set(Math.max(clock.now(), timer.due));
    },
    send(event: SupervisorEvent) {
      actor.send(event);
    },
    /** `run.start` with defaults (`at` = now, 1 s timeout, cwd /work). */
    start(req: Partial<RunRequest> & { runId: string }) {
      actor.send({
        type: "run.start",
        at: clock.now(),
        code: `print(${JSON.stringify(req.runId)})`,
        cwd: "/work",
        timeoutMs: 1000,
        ...req,
      });
    },
    cancel(runId: string) {
      actor.send({ type: "run.cancel", at: clock.now(), runId });
    },
    stopSession(name: string) {
      actor.send({ type: "session.stop", at: clock.now(), name });
    },
    shutdown() {
      actor.send({ type: "supervisor.shutdown", at: clock.now() });
    },
    /** A live actor by systemId (`run:<id>`, `session:<name>`), or undefined. */
    ref(systemId: string): AnyActorRef | undefined {
      return actor.system.get(systemId);
    },
    /** The current state of a live actor by systemId, as the tests name it (`stateName`; a session's phase reads
     * its active run, machines/session.ts `sessionPhase`). */
    value(systemId: string): unknown {
      const ref = actor.system.get(systemId);
      if (!ref) throw new Error(`no live actor ${systemId}`);
      const snap = ref.getSnapshot() as { value: unknown; context?: { activeRunId?: string } };
      if (!systemId.startsWith("session:")) return stateName(snap.value);
      const runId = snap.context?.activeRunId;
      const run = runId
        ? (actor.system.get(`run:${runId}`)?.getSnapshot() as { value: unknown } | undefined)
        : undefined;
      return sessionPhase(snap.value, run?.value);
    },
    /** The distinct successive states of actor `id` as `value` names them (all incarnations in order, or only those
     * of the `incarnation`-th, 0-based). Consecutive duplicates are collapsed. A session's phase is taken after each
     * snapshot of it, and after each snapshot of a run unless the session's own snapshot follows at once (the run
     * moved within the session's step, so the session's new state is what counts); a run's last active state counts
     * until its session lets it go. */
    values(id: string, incarnation?: number): unknown[] {
      const sessions = [...new Set(trace.filter((t) => t.id === id).map((t) => t.sessionId))];
      const wanted = incarnation === undefined ? sessions : [sessions[incarnation]];
      const own = (t: TraceEntry) => t.id === id && wanted.includes(t.sessionId) && t.status !== "stopped";
      if (!id.startsWith("session:")) {
        const out: unknown[] = [];
        for (const t of trace.filter(own)) {
          const v = stateName(t.value);
          if (JSON.stringify(out[out.length - 1]) !== JSON.stringify(v)) out.push(v);
        }
        return out;
      }
      return phasesOf(
        trace.map((t) => ({
          own: own(t),
          ...(t.id.startsWith("run:") && t.status === "active" ? { run: t.id } : {}),
          value: t.value,
          activeRunId: (t.snapshot as { context?: { activeRunId?: string } }).context?.activeRunId,
        })),
      );
    },
    /** Ids of the root's current children. */
    children(): string[] {
      return Object.keys(actor.getSnapshot().children);
    },
    /** The last emitted outcome for a run id. */
    outcome(runId: string): RunOutcome {
      const found = finished.filter((o) => o.runId === runId);
      const last = found[found.length - 1];
      if (!last) throw new Error(`no outcome for ${runId}`);
      return last;
    },
  };
  return h;
}

export type Harness = ReturnType<typeof startSupervisor>;

/** One snapshot in a stream that `phasesOf` reads: of the session (`own`), of a run (`run`: its id), or another. */
export interface PhaseEntry {
  own: boolean;
  run?: string;
  value: unknown;
  /** The session's active run (for its own snapshots). */
  activeRunId?: string | undefined;
}

/** A session's successive phases over a stream of snapshots in the order they happened (machines/session.ts
 * `sessionPhase`): taken after each snapshot of the session, and after each snapshot of a run unless the session's
 * own snapshot follows at once (the run moved within the session's step, so the session's new state is what
 * counts); a run's last active state counts until its session lets it go. */
export function phasesOf(stream: Iterable<PhaseEntry>): string[] {
  const out: string[] = [];
  const push = (phase: string | undefined) => {
    if (phase !== undefined && out[out.length - 1] !== phase) out.push(phase);
  };
  const runs = new Map<string, unknown>();
  let session: PhaseEntry | undefined;
  let pending: string | undefined;
  for (const e of stream) {
    if (e.run) runs.set(e.run, e.value);
    if (e.own) session = e;
    if (!session || !(e.own || e.run)) continue;
    const phase = sessionPhase(session.value, session.activeRunId ? runs.get(`run:${session.activeRunId}`) : undefined);
    if (e.own) {
      // A run that moved on its own step (a runner's fact goes straight to the run) and was then let go by its
      // session: its last state was a phase of its own.
      if (!session.activeRunId) push(pending);
      pending = undefined;
      push(phase);
    } else {
      push(pending);
      pending = phase;
    }
  }
  push(pending);
  return out;
}

/** A state value by the name of its innermost state (`{stopping: "interrupted"}` is `interrupted`). */
export function stateName(value: unknown): unknown {
  if (value && typeof value === "object") {
    const entries = Object.entries(value);
    if (entries.length === 1) return stateName(entries[0]![1]);
  }
  return value;
}
