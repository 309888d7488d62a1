// A scriptable stand-in for the `dispatch` actor of a nested tool call, and a harness that starts the supervisor with
// it and the fake runner under a SimulatedClock: no process, no Pi, no real timer. The supervisor is the one the host
// runs (machines/system.ts `supervisorWith`), so the wiring into fresh runs and session runs is the production one.
import assert from "node:assert/strict";
import { SimulatedClock, createActor, fromCallback } from "xstate";
import type { AnyActorRef, InspectionEvent } from "xstate";
import type { RunnerCommand, RunOutcome, RunRequest } from "../../machines/events.ts";
import type {
  DispatchCommand,
  DispatchInput,
  NestedCallRecord,
  NestedCallStatus,
  ToolReply,
  ToolSpec,
} from "../../machines/tool-events.ts";
import { callRecord, preview } from "../../machines/tool-records.ts";
import type { ToolCallInput } from "../../machines/tool-call.ts";
import { supervisorWith } from "../../machines/system.ts";
import { stateName, TEST_LIMITS, createFakeRunner } from "./fake-runner.ts";

export interface FakeDispatch {
  input: DispatchInput;
  received: DispatchCommand[];
  stopped: boolean;
  validated(at?: number): void;
  finish(status: NestedCallStatus, opts?: { text?: string; at?: number; durationMs?: number }): void;
}

export function createFakeDispatch(now: () => number, options: { throwOnStart?: string } = {}) {
  const instances: FakeDispatch[] = [];
  const logic = fromCallback<DispatchCommand, DispatchInput>(({ input, sendBack, receive }) => {
    if (options.throwOnStart) throw new Error(options.throwOnStart);
    const d: FakeDispatch = {
      input,
      received: [],
      stopped: false,
      validated: (at = now()) => sendBack({ type: "dispatch.validated", at }),
      finish(status, { text = `${status} text`, at = now(), durationMs = 7 } = {}) {
        const record = callRecord(input, {
          status,
          at,
          durationMs,
          ...(status === "succeeded" ? {} : { error: preview(text) }),
        });
        const reply: ToolReply =
          status === "succeeded" ? { status: "ok", text } : { status: status === "failed" ? "error" : status, text };
        sendBack({
          type: "dispatch.finished",
          at,
          record: status === "succeeded" ? { ...record, result: preview(text) } : record,
          reply,
        });
      },
    };
    instances.push(d);
    receive((c) => d.received.push(c));
    return () => {
      d.stopped = true;
    };
  });
  return { logic, instances, of: (childId: string) => instances.find((d) => d.input.childId === childId)! };
}

/** One call of `read`, as a run spawns it (`tool:r1:1`). */
export const CALL: ToolCallInput = {
  runId: "r1",
  callId: "c1",
  seq: 1,
  childId: "tool:r1:1",
  parentId: "call_1",
  name: "read",
  python: "read",
  args: { path: "a.txt" },
  at: 1000,
};

export const TOOLS: ToolSpec[] = [
  { name: "read", python: "read", signature: "read(*, path: str)" },
  { name: "grep", python: "grep", signature: "grep(*, pattern: str)" },
];

export function startSystem() {
  const clock = new SimulatedClock();
  clock.set(10_000);
  const runner = createFakeRunner({ now: () => clock.now() });
  const dispatch = createFakeDispatch(() => clock.now());
  const finished: RunOutcome[] = [];
  const records: NestedCallRecord[] = [];
  const spawned: string[] = [];
  const inspect = (ev: InspectionEvent) => {
    if (ev.type === "@xstate.actor") {
      const id = (ev.actorRef as AnyActorRef).id;
      if (id.startsWith("tool:")) spawned.push(id);
    }
  };
  const actor = createActor(supervisorWith(runner.logic, { dispatch: dispatch.logic }), {
    id: "supervisor",
    systemId: "supervisor",
    input: { limits: TEST_LIMITS },
    clock,
    inspect,
  });
  actor.on("run.finished", (e) => finished.push(e.outcome));
  actor.on("run.nested_call", (e) => records.push(e.record));
  actor.start();
  const h = {
    actor,
    clock,
    runner,
    dispatch,
    finished,
    records,
    /** The records of a run's calls, in start order (the host orders them the same way). */
    calls: (runId: string) => records.filter((r) => r.runId === runId).sort((a, b) => a.seq - b.seq),
    spawned,
    start(req: Partial<RunRequest> & { runId: string }) {
      actor.send({ type: "run.start", at: clock.now(), code: "x", cwd: "/w", timeoutMs: 1000, ...req });
    },
    value: (id: string) => stateName((actor.system.get(id)?.getSnapshot() as { value: unknown } | undefined)?.value),
    /** A fresh run with tools exposed (null: without any), running. */
    running(runId = "r1", calls: RunRequest["calls"] | null = { callerId: "call_1", toolSet: "t1", tools: TOOLS }, timeoutMs = 1000) {
      h.start({ runId, timeoutMs, ...(calls ? { calls } : {}) });
      const k = runner.of(`run:${runId}`);
      clock.increment(10);
      k.ready();
      clock.increment(10);
      k.started(runId);
      assert.equal(h.value(`run:${runId}`), "running");
      return k;
    },
    call(
      k: ReturnType<typeof runner.of>,
      runId: string,
      callId: string,
      name = "read",
      args: Record<string, unknown> = { path: "a" },
    ) {
      k.send({ type: "runner.tool_call", at: clock.now(), runId, callId, name, args });
    },
    results(k: ReturnType<typeof runner.of>) {
      return k.received.filter(
        (c): c is Extract<RunnerCommand, { type: "runner.tool_result" }> => c.type === "runner.tool_result",
      );
    },
  };
  return h;
}
