// Paths generated from the machine graphs (`xstate/graph`) and replayed against real actors.
//
// How the run machine is analysed standalone. `getShortestPaths`/`getSimplePaths` call `machine.transition` with a
// mock actor scope whose `self` has no parent, so the run's `notifyPhase` (a `sendParent`) throws "Unable to send
// event to actor '#_parent'" as soon as a path enters `running`; giving it merely a system without a supervisor is
// not enough. So the analysed logic is the real provided machine (fake kernel) with `getInitialSnapshot`/`transition`
// bound to a scope of our own: `self` is an unstarted actor whose parent is an unstarted stub (sendParent resolves,
// nothing is delivered: the scope's `actionExecutor` and `defer` are no-ops, so the kernel child is never started),
// and its system has no "supervisor" (`report` resolves to a no-op). The machine definition itself is untouched.
//
// How paths are replayed. Each path is driven on a real actor: a fresh run `g` spawned by the real supervisor root
// (`startSupervisor`: fake kernel, SimulatedClock), so sendParent, report, the emitted `run.finished` and the pruning
// of the done child are the production ones. `steps[0]` (`xstate.init`) is the run's spawn; kernel facts go through
// the fake kernel's `sendBack`; `run.cancel` goes through the supervisor; an `xstate.after.<delay>.<state>` edge
// becomes a SimulatedClock move to the due time of that pending timer (recorded from the `xstate.raise` action).
// After every step the real run's state value and its guard-relevant context equal the graph's prediction; at the
// end the emitted outcome equals the predicted `context.outcome` exactly.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { __unsafe_getAllOwnEventDescriptors, createActor, fromCallback } from "xstate";
import type { AnyActorScope, AnyEventObject, AnyMachineSnapshot, AnyStateMachine, EventObject } from "xstate";
import { getAdjacencyMap, getShortestPaths, getSimplePaths } from "xstate/graph";
import type { AdjacencyValue, StatePath } from "xstate/graph";
import type { KernelFact, RunOutcome, RunStartEvent } from "../machines/events.ts";
import { runMachine } from "../machines/run.ts";
import type { RunInput } from "../machines/run.ts";
import { spareMachine } from "../machines/spare.ts";
import { sessionMachine } from "../machines/session.ts";
import type { SessionInput } from "../machines/session.ts";
import { supervisorMachine } from "../machines/supervisor.ts";
import { KERNEL_INFO, TEST_LIMITS, createFakeKernel, startSupervisor } from "./helpers/fake-kernel.ts";

type Path = StatePath<AnyMachineSnapshot, EventObject>;
type Table = Record<string, readonly AnyEventObject[]>;
type Adjacency = Record<string, AdjacencyValue<AnyMachineSnapshot, EventObject>>;

/** The machine, analysable by xstate/graph: transitions resolve against a scope with a parent and no supervisor. */
function analysable(machine: AnyStateMachine): AnyStateMachine {
  const parent = createActor(fromCallback(() => {})); // never started
  const self = createActor(fromCallback(() => {}), { parent }); // never started
  const scope = {
    self,
    id: "graph",
    sessionId: "graph",
    logger: () => {},
    defer: () => {},
    emit: () => {},
    system: self.system,
    stopChild: () => {},
    actionExecutor: () => {},
  } as unknown as AnyActorScope;
  return Object.assign(Object.create(machine) as AnyStateMachine, {
    getInitialSnapshot: (_scope: AnyActorScope, input: unknown) => machine.getInitialSnapshot(scope, input),
    transition: (snapshot: AnyMachineSnapshot, event: EventObject) => machine.transition(snapshot, event, scope),
  });
}

/** The events to try in a state: its own event descriptors (root included), with explicit payloads from `table`.
 * Wildcard descriptors (`xstate.done.actor.*`) are never sent literally: only the concrete events listed under the
 * pattern are. Delays become their `xstate.after.*` event. Any other descriptor without a payload is an error, so a
 * new event in a machine shows up here. */
function alphabet(table: Table) {
  return (snapshot: AnyMachineSnapshot): EventObject[] => {
    const out: EventObject[] = [];
    for (const type of __unsafe_getAllOwnEventDescriptors(snapshot) as string[]) {
      const payloads = table[type];
      if (payloads) out.push(...payloads);
      else if (type.startsWith("xstate.after.")) out.push({ type });
      else if (!type.endsWith("*")) throw new Error(`no payload for event ${type} in ${JSON.stringify(snapshot.value)}`);
    }
    return out;
  };
}

/** Only events the state really handles (a target or actions after guards): the rest are not edges. */
const handled = (snapshot: AnyMachineSnapshot, event: EventObject) => snapshot.status === "active" && snapshot.can(event);

// ---------------------------------------------------------------------------------------------------------------
// run machine

const RUN_ID = "g";
const CODE = "print('graph')";
const CWD = "/work";
const TIMEOUT_MS = 1000;
const RUN_INPUT: RunInput = {
  runId: RUN_ID,
  code: CODE,
  filename: "script.py",
  cwd: CWD,
  timeoutMs: TIMEOUT_MS,
  requestedAt: 0,
  limits: TEST_LIMITS,
};

// Kernel facts with fixed payloads, and run.cancel as the supervisor forwards it.
const RUN_EVENTS = {
  "kernel.ready": [{ type: "kernel.ready", at: 10, ...KERNEL_INFO }],
  "kernel.started": [{ type: "kernel.started", at: 20, runId: RUN_ID }],
  "kernel.done": [
    { type: "kernel.done", at: 30, runId: RUN_ID, exitCode: 0, displayedValue: true, error: null },
    { type: "kernel.done", at: 30, runId: RUN_ID, exitCode: 1, displayedValue: false, error: "exception" },
  ],
  "kernel.exited": [{ type: "kernel.exited", at: 40, code: 1, signal: null }],
  "kernel.failed": [{ type: "kernel.failed", at: 40, message: "fatal: bad frame" }],
  "run.cancel": [{ type: "run.cancel", at: 5, runId: RUN_ID }],
  // Nested tool calls spawn children of their own: test/tool-call-machine.test.ts drives them.
  "kernel.tool_call": [],
  "kernel.tool_cancel": [],
} satisfies Record<string, Array<KernelFact | { type: "run.cancel"; at: number; runId: string }>>;

const RUN_STATES = [
  "starting",
  "running",
  "interrupted",
  "grace",
  "killed",
  "success",
  "runtime_error",
  "setup_error",
  "timeout",
  "cancelled",
];

const fake = createFakeKernel();
const runLogic = analysable(runMachine.provide({ actors: { kernel: fake.logic } }));

/** The notes' serialization: the state value only. */
const byValue = (s: AnyMachineSnapshot) => JSON.stringify(s.value);
/** The value plus the context the guards and the outcome depend on (still a finite graph with fixed payloads). */
const byValueAndFlags = (s: AnyMachineSnapshot) =>
  JSON.stringify([s.value, s.context.kernelReady, s.context.stopReason ?? null, s.context.killed]);

const runOptions = (serializeState: (s: AnyMachineSnapshot) => string) => ({
  input: RUN_INPUT,
  serializeState,
  events: alphabet(RUN_EVENTS),
  filterEvents: handled,
});

/** What a step predicts and what the replay observes, compared as one object. */
function project(s: AnyMachineSnapshot) {
  return {
    value: s.value,
    status: s.status,
    kernelReady: s.context.kernelReady,
    stopReason: s.context.stopReason,
    killed: s.context.killed,
    outcome: s.context.outcome,
  };
}

function describePath(path: Path): string {
  return path.steps.map((s) => s.event.type.replace(/^xstate\.after\.(\w+)\..*$/, "after($1)")).join(" > ");
}

/** Replays `path` on a real run `g` under the real supervisor; returns the emitted outcome if the path ends.
 *
 * A path's step states are vertex representatives: with a coarse serialization, two snapshots with the same key
 * are one vertex, and the stored snapshot may come from another route (another `at`, another exit code). So the
 * exact prediction is recomputed along the path with the machine's pure `transition`; each recomputed snapshot
 * must serialize to the graph's vertex for that step, and the real actor must match it exactly (value, status,
 * guard context and outcome). */
function replayRun(path: Path, serialize: (s: AnyMachineSnapshot) => string): RunOutcome | undefined {
  const where = describePath(path);
  const h = startSupervisor();
  h.start({ runId: RUN_ID, code: CODE, cwd: CWD, timeoutMs: TIMEOUT_MS });
  const kernel = h.kernel.of(`run:${RUN_ID}`);
  const observe = () => {
    const last = h.trace.filter((t) => t.id === `run:${RUN_ID}`).at(-1);
    assert.ok(last, `${where}: the run has a snapshot`);
    return project(last.snapshot as AnyMachineSnapshot);
  };
  assert.equal(path.steps[0]?.event.type, "xstate.init");
  let predicted: AnyMachineSnapshot = runLogic.getInitialSnapshot(undefined as unknown as AnyActorScope, RUN_INPUT);
  assert.equal(serialize(predicted), serialize(path.steps[0]!.state), `${where}: initial vertex`);
  assert.deepEqual(observe(), project(predicted), `${where}: initial state`);
  for (const [i, step] of path.steps.entries()) {
    if (i === 0) continue; // xstate.init: the spawn above
    const event = step.event;
    predicted = runLogic.transition(predicted, event, undefined as unknown as AnyActorScope);
    assert.equal(serialize(predicted), serialize(step.state), `${where}: vertex after step ${i}`);
    if (event.type.startsWith("xstate.after.")) {
      const before = h.eventTypes.length;
      h.fire(event.type);
      assert.ok(h.eventTypes.slice(before).includes(event.type), `${where}: ${event.type} fired`);
    } else if (event.type === "run.cancel") {
      h.send(event as { type: "run.cancel"; at: number; runId: string });
    } else {
      kernel.send(event as KernelFact);
    }
    assert.deepEqual(observe(), project(predicted), `${where}: after step ${i} (${event.type})`);
  }
  assert.equal(serialize(predicted), serialize(path.state), `${where}: final vertex`);
  assert.deepEqual(h.errors, [], where);
  assert.deepEqual(h.eventTypes.filter((t) => t.startsWith("xstate.error")), [], where);
  if (predicted.status === "done") {
    assert.deepEqual(h.finished, [predicted.context.outcome], `${where}: emitted outcome`);
    assert.equal(predicted.context.outcome.status, predicted.value, where);
    const last = h.trace.filter((t) => t.id === `run:${RUN_ID}`).at(-1)!.snapshot as AnyMachineSnapshot;
    assert.deepEqual(last.output, predicted.context.outcome, `${where}: the run's output is its outcome`);
    assert.deepEqual(h.children(), [], `${where}: done run pruned`);
    assert.equal(kernel.stopped, true, `${where}: kernel stopped`);
    assert.deepEqual(h.actor.getSnapshot().context.active, {}, where);
    return h.finished[0];
  }
  assert.deepEqual(h.finished, [], `${where}: no outcome yet`);
  assert.deepEqual(h.children(), [`run:${RUN_ID}`], where);
  return undefined;
}

describe("run machine graph", () => {
  test("the analysis has no side effects: no kernel started", () => {
    getShortestPaths(runLogic, runOptions(byValueAndFlags));
    assert.equal(fake.instances.length, 0);
  });

  test("value-only serialization: shortest paths reach every state but `timeout`, and all replay", () => {
    const paths = getShortestPaths(runLogic, runOptions(byValue));
    const reached = paths.map((p) => p.state.value as string);
    // The stop reason lives in context: with the value alone, `killed`/`interrupted` are first reached by
    // run.cancel, and the deadline edges into them are merged away, so `timeout` has no representative.
    assert.deepEqual([...reached].sort(), RUN_STATES.filter((s) => s !== "timeout").sort());
    assert.ok(!reached.includes("finished"), "`finished` is transient");
    for (const path of paths) replayRun(path, byValue);
  });

  test("value + guard context: shortest paths reach every state of the run machine, and all replay", () => {
    const paths = getShortestPaths(runLogic, runOptions(byValueAndFlags));
    const reached = new Set(paths.map((p) => p.state.value as string));
    assert.deepEqual([...reached].sort(), [...RUN_STATES].sort());
    const statuses = new Map<string, Set<string>>();
    for (const path of paths) {
      const outcome = replayRun(path, byValueAndFlags);
      if (outcome) {
        const set = statuses.get(outcome.status) ?? new Set<string>();
        set.add(`${outcome.stopReason ?? "-"}/${outcome.killed ? "killed" : "not killed"}`);
        statuses.set(outcome.status, set);
      }
    }
    // Both stop reasons end killed and unkilled.
    assert.deepEqual([...(statuses.get("timeout") ?? [])].sort(), ["timeout/killed", "timeout/not killed"]);
    assert.deepEqual([...(statuses.get("cancelled") ?? [])].sort(), ["cancelled/killed", "cancelled/not killed"]);
  });

  test("the guarded branches of `starting` exist as predicted", () => {
    const adjacency = getAdjacencyMap(runLogic, runOptions(byValueAndFlags)) as Adjacency;
    const from = (ready: boolean) => adjacency[JSON.stringify(["starting", ready, null, false])]!.transitions;
    const target = (ready: boolean, type: string) =>
      Object.values(from(ready)).find((t) => t.event.type === type)?.state.value;
    assert.equal(target(false, "xstate.after.deadline.run.starting"), "killed");
    assert.equal(target(true, "xstate.after.deadline.run.starting"), "interrupted");
    assert.equal(target(false, "run.cancel"), "killed");
    assert.equal(target(true, "run.cancel"), "interrupted");
    assert.equal(target(false, "kernel.ready"), "starting");
  });

  test("every edge of the graph (value + guard context) replays: shortest path to its source, then the edge", () => {
    const options = runOptions(byValueAndFlags);
    const adjacency = getAdjacencyMap(runLogic, options) as Adjacency;
    const toSource = new Map(getShortestPaths(runLogic, options).map((p) => [byValueAndFlags(p.state), p]));
    let edges = 0;
    const afterEdges = new Set<string>();
    for (const [source, { transitions }] of Object.entries(adjacency)) {
      const head = toSource.get(source);
      assert.ok(head, `a path to ${source}`);
      for (const { event, state } of Object.values(transitions)) {
        edges++;
        if (event.type.startsWith("xstate.after.")) afterEdges.add(event.type);
        replayRun({ state, weight: head.weight + 1, steps: [...head.steps, { event, state }] }, byValueAndFlags);
      }
    }
    assert.ok(edges >= 60, `edges: ${edges}`);
    // Every delay of the machine, including the target-less kill bound in `killed`, was driven by the clock.
    assert.deepEqual([...afterEdges].sort(), [
      "xstate.after.deadline.run.running",
      "xstate.after.deadline.run.starting",
      "xstate.after.grace.run.grace",
      "xstate.after.interruptWindow.run.interrupted",
      "xstate.after.killBound.run.killed",
    ]);
  });

  test("simple paths (value + guard context) to every final state replay", () => {
    const paths = getSimplePaths(runLogic, runOptions(byValueAndFlags));
    assert.ok(paths.length > 30, `simple paths: ${paths.length}`);
    const finals = new Set<string>();
    for (const path of paths) {
      replayRun(path, byValueAndFlags);
      if (path.state.status === "done") finals.add(path.state.value as string);
    }
    assert.deepEqual([...finals].sort(), ["cancelled", "runtime_error", "setup_error", "success", "timeout"]);
  });

  test("value-only serialization is unsound here: some simple paths predict the wrong final state", () => {
    // The final state is chosen from `context.stopReason`; merging snapshots by value keeps one representative per
    // vertex (stopReason "cancelled" for `interrupted`), so a deadline path is predicted to end `cancelled`.
    const wrong = getSimplePaths(runLogic, runOptions(byValue)).filter((path) => {
      let s: AnyMachineSnapshot = runLogic.getInitialSnapshot(undefined as unknown as AnyActorScope, RUN_INPUT);
      for (const step of path.steps.slice(1)) s = runLogic.transition(s, step.event, undefined as unknown as AnyActorScope);
      return byValue(s) !== byValue(path.state);
    });
    assert.ok(wrong.length > 0);
    assert.ok(
      wrong.some((p) => describePath(p) === "xstate.init > kernel.started > after(deadline) > kernel.done" && p.state.value === "cancelled"),
      wrong.map(describePath).join("\n"),
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------
// session and supervisor machines: reachability (analysis only; a session's facts also drive its real run child, so
// its graph, where run.phase and done events are independent inputs, cannot be replayed one event at a time).

const FIRST_RUN: RunStartEvent = { type: "run.start", at: 0, runId: "s1", code: "x = 1", cwd: CWD, timeoutMs: 1000, session: "s" };
const SESSION_INPUT: SessionInput = { name: "s", incarnation: 1, cwd: CWD, limits: TEST_LIMITS, firstRun: FIRST_RUN };
const SESSION_EVENTS: Table = {
  "kernel.ready": [{ type: "kernel.ready", at: 10, ...KERNEL_INFO }],
  "kernel.started": [{ type: "kernel.started", at: 20, runId: "s1" }],
  "kernel.done": [{ type: "kernel.done", at: 30, runId: "s1", exitCode: 0, displayedValue: false, error: null }],
  "kernel.exited": [{ type: "kernel.exited", at: 40, code: 1, signal: null }],
  "kernel.failed": [{ type: "kernel.failed", at: 40, message: "fatal" }],
  "kernel.run": [{ type: "kernel.run", runId: "s1", code: "x = 1", filename: "script-1.py" }],
  "kernel.interrupt": [{ type: "kernel.interrupt", runId: "s1" }],
  "kernel.terminate": [{ type: "kernel.terminate" }],
  "kernel.kill": [{ type: "kernel.kill" }],
  "run.start": [{ ...FIRST_RUN, at: 50, runId: "s2" }],
  "run.phase": (["running", "interrupted", "grace", "killed"] as const).map((phase) => ({ type: "run.phase", runId: "s1", phase })),
  "session.close": [{ type: "session.close", at: 60 }],
  "xstate.done.actor.*": [{ type: "xstate.done.actor.run:s1", actorId: "run:s1", output: undefined }],
  // The tool bridge only passes through the session (test/tool-call-machine.test.ts).
  "kernel.tool_call": [],
  "kernel.tool_cancel": [],
  "kernel.tool_result": [],
};

describe("session and supervisor graphs", () => {
  test("every state of the session machine is reachable", () => {
    const sessionFake = createFakeKernel();
    const logic = analysable(sessionMachine.provide({ actors: { kernel: sessionFake.logic } }));
    const paths = getShortestPaths(logic, {
      input: SESSION_INPUT,
      serializeState: byValue,
      events: alphabet(SESSION_EVENTS),
      filterEvents: handled,
    });
    const byState = new Map(paths.map((p) => [p.state.value as string, describePath(p)]));
    assert.deepEqual(
      [...byState.keys()].sort(),
      ["starting", "idle", "running", "interrupted", "grace", "killed", "closing", "lost", "closed"].sort(),
    );
    assert.equal(byState.get("idle"), "xstate.init > xstate.done.actor.run:s1");
    assert.equal(byState.get("closing"), "xstate.init > session.close");
    assert.equal(sessionFake.instances.length, 0);
  });

  test("every state of the supervisor machine is reachable", () => {
    const supFake = createFakeKernel();
    const logic = analysable(
      supervisorMachine.provide({
        actors: {
          run: runMachine.provide({ actors: { kernel: supFake.logic } }),
          session: sessionMachine.provide({ actors: { kernel: supFake.logic } }),
          spare: spareMachine.provide({ actors: { kernel: supFake.logic } }),
        },
      }),
    );
    const paths = getShortestPaths(logic, {
      input: { limits: TEST_LIMITS },
      serializeState: byValue,
      events: alphabet({
        "run.start": [{ ...FIRST_RUN, session: undefined }, FIRST_RUN],
        "run.cancel": [{ type: "run.cancel", at: 1, runId: "s1" }],
        "run.finished": [],
        "run.nested_call": [],
        "spare.ready": [],
        "session.stop": [{ type: "session.stop", at: 1, name: "s" }],
        "supervisor.shutdown": [{ type: "supervisor.shutdown", at: 2 }],
        // Opens the shell-session pool (a child of its own; test/exec-machines.test.ts drives it).
        "exec.open": [],
      }),
      filterEvents: handled,
    });
    assert.deepEqual(paths.map((p) => [p.state.value, describePath(p)]), [
      ["serving", "xstate.init"],
      ["stopping", "xstate.init > supervisor.shutdown"],
    ]);
  });
});
