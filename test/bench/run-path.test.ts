// The warm path of a session run stays short (docs/design.md): one actor (the run), no preparation actor, the run's
// command straight to the session's process, no `runner.ready` relayed each run, one fact for a quick run. Counted
// on the inspection stream of the real machines and host, on the scripted process port (no timing involved).
import { test } from "node:test";
import assert from "node:assert/strict";
import { warmRunPath } from "../../bench/run-path.ts";

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
