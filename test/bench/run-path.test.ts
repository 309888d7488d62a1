// The warm path of a session run stays short (docs/design.md): one actor (the run), no preparation actor, the run's
// command straight to the session's process, no `runner.ready` relayed each run, one fact for a quick run; and a
// fresh run's spare goes through the spare pool without a step more for the supervisor. Counted on the inspection
// stream of the real machines and host, on the scripted process port (no timing involved).
import { test } from "node:test";
import assert from "node:assert/strict";
import { freshRunPath, warmRunPath } from "../../bench/run-path.ts";

test("a warm session run: 5 events, one actor (the run), no supervisor on its path, nothing relayed that need not be", async () => {
  const path = await warmRunPath();
  const text = path.lines.join("\n");
  assert.deepEqual(
    path.lines.filter((l) => l.startsWith("actor")).map((l) => l.split(" ")[1]!.replace(/:.*/, ":<id>")),
    ["run:<id>"],
    text,
  );
  assert.ok(!text.includes("prepare"), `no prepare actor and no prepare fact from one:\n${text}`);
  assert.ok(!/runner\.ready/.test(text), `the run starts with the runner it finds up:\n${text}`);
  assert.ok(/event runner\.run -> runner/.test(text), `the command goes to the session's process:\n${text}`);
  assert.ok(!/runner\.run -> session/.test(text), `not through the session:\n${text}`);
  assert.ok(!/runner\.started/.test(text), `a quick run's started and done are one fact:\n${text}`);
  assert.ok(!/-> supervisor/.test(text), `the supervisor is not on a warm run's path:\n${text}`);
  assert.ok(/event run\.start -> session:/.test(text), `the request goes straight to its session:\n${text}`);
  assert.ok(/event runner\.done -> run:/.test(text), `the runner tells the run, not the session:\n${text}`);
  assert.ok(path.events <= 5, `${path.events} events:\n${text}`);
  assert.ok(path.snapshots <= 5, `${path.snapshots} snapshots:\n${text}`);
});

test("a fresh run that takes a ready spare: the supervisor picks it in one step and tells the pool, whose spare reports to it", async () => {
  const path = await freshRunPath();
  const text = path.lines.join("\n");
  assert.ok(/event spares\.run -> spare:pool/.test(text), `the pool hears of the run:\n${text}`);
  assert.ok(/event spare\.claim -> spare:1/.test(text), `the ready spare is claimed:\n${text}`);
  assert.ok(/event xstate\.done\.actor\.spare:1 -> spare:pool/.test(text), `it reports to the pool:\n${text}`);
  assert.ok(!/spare[^\n]* -> supervisor/.test(text), `no spare event reaches the supervisor:\n${text}`);
  assert.equal(text.match(/-> supervisor/g)?.length, 2, `run.start and the run's end only:\n${text}`);
  assert.ok(/actor spare:2/.test(text), `a replacement starts at claim time:\n${text}`);
  // Measured 2026-12-03 (bench/run-path.ts): 13 events, 4 actors, 15 snapshots (12/4/14 when the supervisor kept
  // the spares itself: the pool adds its one event and its snapshot of it).
  assert.ok(path.events <= 13, `${path.events} events:\n${text}`);
  assert.ok(path.snapshots <= 15, `${path.snapshots} snapshots:\n${text}`);
});
