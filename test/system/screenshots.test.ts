// The inspector screenshots in docs/ show machines that exist (issue 29: both once showed `kernel.*` events and a flat
// `grace` the machines no longer had). scripts/screenshots.ts writes docs/inspector-screenshots.json beside the PNGs:
// the machine states and event types visible in each shot, read from the page at capture time. This test walks every
// machine in machines/*.ts (its state nodes and the event types they handle) and fails when a shot names a state or
// an event they no longer have, or when a PNG is not the one the manifest was written with.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import type { AnyStateMachine, AnyStateNode } from "xstate";
import type { Manifest } from "../../scripts/screenshots.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const DOCS = join(ROOT, "docs");
const MACHINES_DIR = join(ROOT, "machines");
const MANIFEST_PATH = join(DOCS, "inspector-screenshots.json");
/** Events every actor receives without a machine naming them. */
const BUILT_IN = new Set(["xstate.init", "xstate.stop"]);

export interface MachineFacts {
  /** Machine id -> its state node ids (`run.stopping.grace`) and the event types its states handle. */
  machines: Map<string, { states: Set<string>; events: Set<string> }>;
  /** Event types the machines' sources name (`type: "runner.interrupt"`): what they send to boundary actors. */
  named: Set<string>;
}

function isMachine(v: unknown): v is AnyStateMachine {
  const m = v as { root?: { states?: unknown }; id?: unknown; events?: unknown; transition?: unknown };
  return !!m && typeof m === "object" && typeof m.id === "string" && !!m.root?.states && Array.isArray(m.events);
}

/** Every machine exported by machines/*.ts, walked state node by state node. */
export async function machineFacts(): Promise<MachineFacts> {
  const machines: MachineFacts["machines"] = new Map();
  const named = new Set<string>();
  for (const file of readdirSync(MACHINES_DIR).filter((f) => f.endsWith(".ts"))) {
    const source = readFileSync(join(MACHINES_DIR, file), "utf8");
    for (const [, type] of source.matchAll(/\btype:\s*"([\w.*:-]+)"/g)) named.add(type);
    const mod = await import(join(MACHINES_DIR, file));
    for (const value of Object.values(mod)) {
      if (!isMachine(value) || machines.has(value.id)) continue;
      const states = new Set<string>();
      const events = new Set<string>();
      const visit = (node: AnyStateNode) => {
        states.add(node.id);
        for (const type of (node.transitions as Map<string, unknown>).keys()) events.add(type);
        for (const child of Object.values(node.states)) visit(child as AnyStateNode);
      };
      visit(value.root);
      machines.set(value.id, { states, events });
    }
  }
  return { machines, named };
}

/** Whether `type` is one of `handled`, directly or through a wildcard (`xstate.done.actor.*`). */
function handles(handled: Set<string>, type: string): boolean {
  if (BUILT_IN.has(type) || handled.has(type)) return true;
  return [...handled].some((h) => h.endsWith(".*") && type.startsWith(h.slice(0, -1)));
}

/** What a manifest names that the machines do not have, one line each. */
export function staleNames(manifest: Manifest, facts: MachineFacts): string[] {
  const problems: string[] = [];
  for (const shot of manifest.shots) {
    for (const s of shot.states) {
      const m = facts.machines.get(s.machine);
      if (!m) problems.push(`${shot.file}: machine "${s.machine}" (state ${s.state}) is not in machines/`);
      else if (!m.states.has(s.state))
        problems.push(
          `${shot.file}: state "${s.state}"${s.actor ? ` (of ${s.actor})` : ""} is not in the ${s.machine} machine`,
        );
    }
    for (const e of shot.events) {
      const where = e.to ? ` (to ${e.to})` : "";
      if (e.machine) {
        const m = facts.machines.get(e.machine);
        if (!m) problems.push(`${shot.file}: machine "${e.machine}" (event ${e.type}) is not in machines/`);
        else if (!handles(m.events, e.type))
          problems.push(`${shot.file}: event "${e.type}"${where} is not handled by the ${e.machine} machine`);
        // A boundary actor's events (a runner's commands) are what the machines send: their sources name them.
      } else if (!BUILT_IN.has(e.type) && !facts.named.has(e.type))
        problems.push(`${shot.file}: event "${e.type}"${where} is named nowhere in machines/`);
    }
  }
  return problems;
}

const manifest = JSON.parse(readFileSync(MANIFEST_PATH, "utf8")) as Manifest;

describe("the inspector screenshots name only states and events the machines have", () => {
  test("the manifest describes every screenshot docs/inspector.md shows, and each PNG is the one it was written with", () => {
    const pngs = readdirSync(DOCS).filter((f) => /^inspector-.*\.png$/.test(f));
    assert.deepEqual(manifest.shots.map((s) => s.file).sort(), pngs.sort(), "one manifest entry per PNG");
    const page = readFileSync(join(DOCS, "inspector.md"), "utf8");
    for (const shot of manifest.shots) {
      assert.ok(page.includes(`(${shot.file})`), `docs/inspector.md shows ${shot.file}`);
      const sha256 = createHash("sha256")
        .update(readFileSync(join(DOCS, shot.file)))
        .digest("hex");
      assert.equal(sha256, shot.sha256, `${shot.file} changed since the manifest: run scripts/screenshots.ts`);
      assert.ok(shot.states.length > 0 && shot.events.length > 0, `${shot.file}: the manifest lists what it shows`);
    }
    assert.ok(existsSync(join(ROOT, manifest.fixture)), `the fixture ${manifest.fixture}`);
    // The moment the shots exist for: the chart's selected, lit state.
    const chart = manifest.shots.find((s) => s.view === "chart");
    assert.ok(chart?.states.some((s) => s.state === manifest.state && !s.actor));
  });

  test("every state and event a screenshot shows is in machines/", async () => {
    const facts = await machineFacts();
    assert.ok(facts.machines.has("run") && facts.machines.has("session") && facts.machines.has("supervisor"));
    assert.deepEqual(staleNames(manifest, facts), []);
  });

  test("the check catches what the old screenshots showed (kernel.* events, a flat grace), beside current names", async () => {
    const facts = await machineFacts();
    const shot = (states: Manifest["shots"][0]["states"], events: Manifest["shots"][0]["events"]) => ({
      fixture: manifest.fixture,
      state: manifest.state,
      shots: [{ file: "old.png", sha256: "", view: "sequence" as const, actor: "run:x", states, events }],
    });
    const old = shot(
      [
        { machine: "run", state: "run.grace", actor: "run:x" },
        { machine: "kernel", state: "kernel.busy" },
      ],
      [
        { type: "kernel.interrupt", to: "session:s/runner" },
        { type: "kernel.started", to: "run:x", machine: "run" },
      ],
    );
    assert.deepEqual(staleNames(old, facts), [
      'old.png: state "run.grace" (of run:x) is not in the run machine',
      'old.png: machine "kernel" (state kernel.busy) is not in machines/',
      'old.png: event "kernel.interrupt" (to session:s/runner) is named nowhere in machines/',
      'old.png: event "kernel.started" (to run:x) is not handled by the run machine',
    ]);
    const current = shot(
      [{ machine: "run", state: "run.stopping.grace", actor: "run:x" }],
      [
        { type: "runner.interrupt", to: "session:s/runner" },
        { type: "runner.started", to: "run:x", machine: "run" },
        { type: "xstate.done.actor.run:x", to: "session:s", machine: "session" },
        { type: "xstate.init", to: "run:x", machine: "run" },
      ],
    );
    assert.deepEqual(staleNames(current, facts), []);
    // A real event sent to the wrong machine is caught too: the supervisor does not handle runner.started.
    assert.equal(
      staleNames(shot([], [{ type: "runner.started", to: "supervisor", machine: "supervisor" }]), facts).length,
      1,
    );
  });
});
