// Which tests enter which states, for the inspector's "tests that cover it" (inspector/charts.ts reads the index).
// Loaded before each test file by scripts/test.sh (`node --import ./test/helpers/state-coverage.ts --test ...`):
// every machine snapshot computed while a test runs (XState's `StateMachine.transition`/`getInitialSnapshot`, so
// actors, replay and `xstate/graph` paths alike) adds that test's title to each active state. The prototype is
// patched before any machine exists (machines bind these methods when they are created). At exit the file's part of
// the index is written to test-artifacts/state-tests/<file>.json; snapshots outside a test (hooks) are not counted.
// A file's part and its tests' titles go by the file's name, which test/system/architecture.test.ts keeps unique
// across the test tree's folders.
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { basename, relative, resolve } from "node:path";
import { afterEach, beforeEach } from "node:test";
import { getStateNodes, StateMachine } from "xstate";
import type { AnyMachineSnapshot, AnyStateMachine, AnyStateNode } from "xstate";

/** `PCS_STATE_TESTS_DIR` moves it (the helper's own test). */
export const STATE_TESTS_DIR =
  process.env.PCS_STATE_TESTS_DIR ?? resolve(import.meta.dirname, "../../test-artifacts/state-tests");

const file = process.argv[1] ?? "";
const root = resolve(import.meta.dirname, "../..");
let current: string | undefined;
/** machine id → state id → test titles */
const seen = new Map<string, Map<string, Set<string>>>();

function note(machine: AnyStateMachine, snapshot: AnyMachineSnapshot | undefined): void {
  if (!current || !snapshot || snapshot.value === undefined) return;
  let states = seen.get(machine.id);
  if (!states) seen.set(machine.id, (states = new Map()));
  let nodes: AnyStateNode[];
  try {
    nodes = getStateNodes(machine.root, snapshot.value) as AnyStateNode[];
  } catch {
    return; // a value this machine does not have (a test feeding foreign snapshots)
  }
  for (const node of nodes) {
    let titles = states.get(node.id);
    if (!titles) states.set(node.id, (titles = new Set()));
    titles.add(current);
  }
}

if (file.endsWith(".test.ts")) {
  const proto = StateMachine.prototype as unknown as {
    transition: (this: AnyStateMachine, ...args: unknown[]) => AnyMachineSnapshot;
    getInitialSnapshot: (this: AnyStateMachine, ...args: unknown[]) => AnyMachineSnapshot;
  };
  const transition = proto.transition;
  const initial = proto.getInitialSnapshot;
  proto.transition = function (...args) {
    const next = transition.apply(this, args);
    note(this, next);
    return next;
  };
  proto.getInitialSnapshot = function (...args) {
    const first = initial.apply(this, args);
    note(this, first);
    return first;
  };
  const name = relative(root, file);
  beforeEach((t) => {
    current = `${basename(file)} › ${(t as { fullName?: string }).fullName ?? t.name}`;
  });
  afterEach(() => {
    current = undefined;
  });
  process.on("exit", () => {
    if (!seen.size) return;
    const machines: Record<string, Record<string, string[]>> = {};
    for (const [id, states] of [...seen].sort(([a], [b]) => a.localeCompare(b))) {
      machines[id] = {};
      for (const [state, titles] of [...states].sort(([a], [b]) => a.localeCompare(b))) {
        machines[id][state] = [...titles].sort();
      }
    }
    mkdirSync(STATE_TESTS_DIR, { recursive: true });
    const out = resolve(STATE_TESTS_DIR, `${basename(file, ".test.ts")}.json`);
    writeFileSync(`${out}.tmp`, `${JSON.stringify({ file: name, machines }, null, 1)}\n`);
    renameSync(`${out}.tmp`, out);
  });
}
