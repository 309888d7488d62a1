// The wake invariant under generated event orders. Each run drives the real pool (sessions, coordinator, entries)
// with a seeded random interleaving of starts, exits, observations (write_stdin leases that return the exit or
// not, finalized as success or error), list_sessions, set_on_exit, kills that land or fail, evictions at a small
// cap, debounce and delivery timing, failed deliveries and agent_settled; then brings everything to rest and checks:
//
// - every completion ends exactly one way: delivered, consumed, quiet or ended (suppressed);
// - a completion is in at most one delivered prompt, and never both in a prompt and consumed by a result;
// - an exit that happened while armed, by itself (not by a kill or eviction), and was neither disarmed nor consumed
//   by a finalized result that returned it, is delivered: exactly one prompt;
// - an exit while not armed never prompts.
//
// And, from the machine's graph (xstate/graph), every shortest path of the wake entry keeps the same promises.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { AnyActorRef, InspectionEvent } from "xstate";
import { getShortestPaths } from "xstate/graph";
import type { AnyMachineSnapshot } from "xstate";
import { startExec } from "../helpers/fake-shell.ts";
import { analysable } from "../helpers/machine-graph.ts";
import { wakeEntryMachine, type WakeEntryEvent, type WakeEntryOutput } from "../../machines/exec-wake-entry.ts";

function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Model {
  armed: boolean;
  exited: boolean;
  natural?: boolean;
  armedAtExit?: boolean;
  disarmedAfterExit: boolean;
  /** Calls whose result carried this exit (forget/listed with their id). */
  reportedBy: Set<string>;
}

function run(seed: number, steps: number) {
  const random = rng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)];
  const ends = new Map<number, WakeEntryOutput["end"]>();
  const inspect = (ev: InspectionEvent) => {
    if (ev.type !== "@xstate.snapshot") return;
    const id = (ev.actorRef as AnyActorRef).id;
    const snap = ev.snapshot as { status: string; output?: WakeEntryOutput };
    if (id.startsWith("wake:") && snap.status === "done" && snap.output) ends.set(snap.output.id, snap.output.end);
  };
  const h = startExec({ maxSessions: 3, protectedCount: 1, debounceMs: 250 }, inspect);
  const model = new Map<number, Model>();
  const open = new Map<string, { id: number; reported: boolean }>();
  const finalized: { callId: string; ok: boolean }[] = [];
  let nextId = 1;
  let nextCall = 1;
  const acked = new Map<number, number>(); // id -> delivered prompts containing it
  const pendingBatches: number[] = [];
  let seenWakes = 0;
  const log: string[] = [];
  const at = () => h.clock.now();

  const live = () => Object.values(h.records()).filter((r) => ["running", "held"].includes(r.status));
  const exited = () => Object.values(h.records()).filter((r) => r.status === "exited");
  const collectWakes = () => {
    for (const w of h.wakes().slice(seenWakes)) pendingBatches.push(w.batch);
    seenWakes = h.wakes().length;
  };
  const close = (id: number) => {
    const r = h.records()[id];
    const m = model.get(id)!;
    if (!r || m.exited) return;
    m.exited = true;
    m.natural = r.status !== "stopping";
    m.armedAtExit = m.armed;
    h.closed(id, 0);
  };
  const finalize = (callId: string, ok: boolean) => {
    open.delete(callId);
    finalized.push({ callId, ok });
    h.send({ type: "exec.finalize", at: at(), callId, ok });
    if (ok) for (const m of model.values()) if (m.reportedBy.has(callId)) m.reportedBy.add(`${callId}:ok`);
  };

  const ops: Record<string, () => void> = {
    start() {
      if (nextId > 8) return;
      const id = nextId++;
      const onExit = random() < 0.6 ? "wake" : "none";
      model.set(id, { armed: false, exited: false, disarmedAfterExit: false, reportedBy: new Set() });
      h.start(id, `c${id}`);
      h.spawned(id);
      if (random() < 0.15) {
        // Exits inside exec_command's window: returned by that call.
        close(id);
        h.send({ type: "exec.forget", at: at(), id, callId: `c${id}` });
        model.get(id)!.reportedBy.add(`c${id}`);
        finalize(`c${id}`, random() < 0.8);
        return;
      }
      h.background(id, onExit, `c${id}`);
      model.get(id)!.armed = onExit === "wake";
      finalize(`c${id}`, true);
      log.push(`start ${id} ${onExit}`);
    },
    exit() {
      const r = pick(live());
      if (r) close(r.id);
    },
    observe() {
      const r = pick([...live(), ...exited()]);
      if (!r) return;
      const callId = `w${nextCall++}`;
      h.send({ type: "exec.observe", at: at(), id: r.id, callId });
      open.set(callId, { id: r.id, reported: false });
    },
    returnCall() {
      const [callId, call] = pick([...open.entries()]) ?? [];
      if (!callId || call!.reported) return;
      const r = h.records()[call!.id];
      if (r && (r.status === "exited" || r.status === "failed")) {
        h.send({ type: "exec.forget", at: at(), id: call!.id, callId });
        model.get(call!.id)!.reportedBy.add(callId);
        call!.reported = true;
      } else {
        h.send({ type: "exec.release", at: at(), id: call!.id, callId });
        open.delete(callId);
        finalize(callId, random() < 0.5);
      }
    },
    finalizeCall() {
      const [callId, call] = pick([...open.entries()]) ?? [];
      if (callId && call!.reported) finalize(callId, random() < 0.7);
    },
    list() {
      const ids = exited().map((r) => r.id);
      if (!ids.length) return;
      const callId = `l${nextCall++}`;
      h.send({ type: "exec.listed", at: at(), ids, callId });
      for (const id of ids) model.get(id)!.reportedBy.add(callId);
      finalize(callId, random() < 0.8);
    },
    set() {
      const ids = [...model.keys()];
      if (!ids.length) return;
      const id = pick(ids);
      const a = h.setOnExit(id, random() < 0.5 ? "none" : "wake");
      const m = model.get(id)!;
      if (a.status === "disarmed" && m.exited) m.disarmedAfterExit = true;
      if (a.status === "disarmed" || a.status === "already_none") m.armed = false;
      if (a.status === "armed" || a.status === "already_armed") m.armed = true;
    },
    kill() {
      const r = pick(live());
      if (r) h.send({ type: "exec.kill", at: at(), id: r.id, signal: "SIGTERM" });
    },
    killLands() {
      const r = pick(Object.values(h.records()).filter((x) => x.status === "stopping"));
      if (r) close(r.id);
    },
    time() {
      h.advance(Math.floor(random() * 700));
      collectWakes();
    },
    deliver() {
      collectWakes();
      const batch = pendingBatches.shift();
      if (batch === undefined) return;
      const w = h.wakes().find((x) => x.batch === batch)!;
      if (random() < 0.75) {
        for (const n of w.notices) acked.set(n.id, (acked.get(n.id) ?? 0) + 1);
        h.send({ type: "exec.wake_delivered", at: at(), batch });
      } else h.send({ type: "exec.wake_failed", at: at(), batch, message: "x" });
    },
    settle() {
      h.send({ type: "exec.agent_settled", at: at() });
      collectWakes();
    },
  };
  const names = Object.keys(ops);
  for (let i = 0; i < steps; i++) {
    const name = pick(names);
    log.push(name);
    ops[name]();
    collectWakes();
  }
  // Bring everything to rest: kills resolve (land or fail), every process exits, every call is finalized,
  // every prompt is delivered.
  h.advance(5000);
  for (const r of Object.values(h.records())) if (["running", "held", "stopping"].includes(r.status)) close(r.id);
  for (const [callId, call] of [...open.entries()]) {
    if (!call.reported) h.send({ type: "exec.release", at: at(), id: call.id, callId });
    finalize(callId, random() < 0.5);
  }
  for (let round = 0; round < 10; round++) {
    h.send({ type: "exec.agent_settled", at: at() });
    h.advance(1000);
    collectWakes();
    while (pendingBatches.length) {
      const batch = pendingBatches.shift()!;
      const w = h.wakes().find((x) => x.batch === batch)!;
      for (const n of w.notices) acked.set(n.id, (acked.get(n.id) ?? 0) + 1);
      h.send({ type: "exec.wake_delivered", at: at(), batch });
    }
  }
  return { h, model, ends, acked, log, seed };
}

describe("wake: generated event orders", () => {
  test("exactly once over 400 random runs", () => {
    for (let seed = 1; seed <= 400; seed++) {
      const { h, model, ends, acked, log } = run(seed, 60);
      const where = `seed ${seed}: ${log.join(" ")}`;
      assert.deepEqual(h.errors, [], where);
      for (const [id, m] of model) {
        const end = ends.get(id);
        const prompts = acked.get(id) ?? 0;
        if (!m.exited) continue;
        assert.ok(end, `${where}\nsession ${id} exited but its wake entry never ended`);
        assert.ok(prompts <= 1, `${where}\nsession ${id}: ${prompts} prompts`);
        if (end === "delivered") assert.equal(prompts, 1, `${where}\nsession ${id} delivered without a prompt`);
        else assert.equal(prompts, 0, `${where}\nsession ${id} ended ${end} but was prompted`);
        if (end === "consumed")
          assert.ok(
            [...m.reportedBy].some((c) => m.reportedBy.has(`${c}:ok`)),
            `${where}\nsession ${id} consumed without a finalized result that returned it`,
          );
        if (!m.armedAtExit) assert.equal(prompts, 0, `${where}\nsession ${id} was not armed at its exit`);
        if (m.natural && m.armedAtExit && !m.disarmedAfterExit && end !== "consumed")
          assert.equal(end, "delivered", `${where}\nsession ${id}: armed natural exit ended ${end}`);
        if (!m.natural) assert.equal(prompts, 0, `${where}\nsession ${id} was killed but prompted`);
      }
    }
  });
});

// ---- the entry's graph ----

describe("wake entry: paths from the graph", () => {
  test("every shortest path keeps the promises", () => {
    const events: WakeEntryEvent[] = [
      { type: "entry.set", id: 1, onExit: "wake" },
      { type: "entry.set", id: 1, onExit: "none" },
      { type: "entry.observe", id: 1, callId: "a" },
      { type: "entry.observe", id: 1, callId: "b" },
      { type: "entry.release", id: 1, callId: "a" },
      { type: "entry.report", id: 1, callId: "a" },
      { type: "entry.finalize", callId: "a", ok: true },
      { type: "entry.finalize", callId: "a", ok: false },
      { type: "entry.finalize", callId: "b", ok: true },
      { type: "entry.suppress", id: 1 },
      { type: "entry.restore", id: 1 },
      { type: "entry.exit", id: 1, at: 1, code: 0, signal: null },
      { type: "entry.handoff", id: 1 },
      { type: "entry.delivered", id: 1 },
      { type: "entry.failed", id: 1 },
      { type: "entry.shutdown" },
    ];
    const paths = getShortestPaths(analysable(wakeEntryMachine), {
      input: { notice: { id: 1, command: "x", cwd: "/", startedAt: 0 }, armed: false, leases: [] },
      events,
      serializeState: (s) => {
        const snap = s as AnyMachineSnapshot;
        const c = snap.context as { armed: boolean; leases: string[]; reported: string[] };
        return JSON.stringify([snap.value, snap.status, c.armed, c.leases, c.reported]);
      },
    });
    assert.ok(paths.length > 50, `only ${paths.length} paths`);
    let checked = 0;
    for (const path of paths) {
      const types = path.steps.map((s) => (s.event as WakeEntryEvent).type);
      const snap = path.state as AnyMachineSnapshot;
      const end = snap.status === "done" ? String(snap.value) : undefined;
      const label = types.join(" ");
      if (end === "delivered") assert.ok(types.includes("entry.handoff") && types.includes("entry.delivered"), label);
      if (end === "consumed") {
        const finals = path.steps.filter((s) => (s.event as WakeEntryEvent).type === "entry.finalize");
        assert.ok(types.includes("entry.report") && finals.some((s) => (s.event as { ok: boolean }).ok), label);
        assert.ok(!types.includes("entry.handoff"), `consumed after a handoff: ${label}`);
      }
      if (end === "ended") assert.ok(types.includes("entry.suppress") || types.includes("entry.shutdown"), label);
      if (snap.value === "due") {
        assert.ok(types.includes("entry.exit"), label);
        assert.equal((snap.context as { armed: boolean }).armed, true, `due while not armed: ${label}`);
        assert.equal((snap.context as { leases: string[] }).leases.length, 0, `due while observed: ${label}`);
      }
      checked++;
    }
    assert.equal(checked, paths.length);
  });
});
