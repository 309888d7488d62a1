// The floor extension (bench/floor/, its variants written by bench/floors.ts) and the timing marks bench/pi-marks.ts
// reads (lib/marks.ts), through real Pi sessions, so both keep measuring what they claim as the code changes. Nothing
// here is timed.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, describe, test } from "node:test";
import { listenToMarks, mark } from "../../lib/marks.ts";
import { peerManifest, startPeer, type Peer } from "../../bench/pi-peers.ts";
import { spans } from "../../bench/pi-spans.ts";
import { startPi, textOf, type PiHarness } from "../helpers/pi-session.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const floors = (dir: string, ...specs: string[]) =>
  spawnSync(process.execPath, [join(ROOT, "bench/floors.ts"), dir, ...specs], { encoding: "utf8" });

const open: (Peer | PiHarness)[] = [];
after(async () => {
  for (const p of open) await ("pi" in p ? p.pi : p).dispose();
});

describe("floor extension", () => {
  test("floors.ts writes one Pi package per variant and prints the --peer arguments for them", () => {
    const dir = tempDir();
    const r = floors(dir, "0:0", "2:5");
    assert.equal(r.status, 0, r.stderr);
    const bare = join(dir, "floor-bare");
    const two = join(dir, "floor-2-actors-5-events");
    assert.equal(r.stdout.trim(), `--peer ${bare} --peer ${two}`);
    assert.equal(peerManifest(two).name, "floor-2-actors-5-events");
    const { floor } = JSON.parse(readFileSync(join(two, "package.json"), "utf8"));
    assert.equal(floor.actors, 2);
    assert.equal(floor.events, 5);
    // The interpreter found once, not the pyenv shim on PATH.
    assert.equal(
      floor.python,
      execFileSync(floor.python, ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).trim(),
    );
  });

  test("a variant that is not actors:events is refused, and nothing is written", () => {
    const dir = tempDir();
    for (const [spec, why] of [
      ["two:3", "expected actors:events, two whole numbers"],
      ["1:", "expected actors:events, two whole numbers"],
      ["1:2:3", "expected actors:events, two whole numbers"],
      ["-1:2", "expected actors:events, two whole numbers"],
      ["0:4", "events need an actor to go to"],
      ["2:1", "an actor's events are at least its go and done (2)"],
    ]) {
      const r = floors(dir, "1:2", spec!);
      assert.notEqual(r.status, 0, spec);
      assert.ok(r.stderr.includes(`${spec}: ${why}`), r.stderr);
    }
    assert.deepEqual(readdirSync(dir), []);
  });

  test("through Pi, a variant's python tool runs cells in one process, with its actors, and reports a cell's error", async () => {
    const dir = tempDir();
    assert.equal(floors(dir, "3:6").status, 0);
    const peer = await startPeer(join(dir, "floor-3-actors-6-events"));
    open.push(peer);
    assert.ok(peer.tools.includes("python"));
    const { results } = await spans(peer.pi, [
      ["python", { cells: [{ code: "x = 1" }, { code: "print('not the protocol'); x += 1" }] }],
      ["python", { cells: [{ code: "assert x == 2, x" }] }],
      ["python", { cells: [{ code: "assert x == 3, x" }] }],
    ]);
    assert.deepEqual(
      results.map((r) => r.isError === true),
      [false, false, true],
    );
    assert.equal(results[0]!.details?.actors, 3);
    assert.match(textOf(results[2]!), /AssertionError: 2/);
  });
});

describe("timing marks", () => {
  test("with no listener a mark does nothing; a listener hears each mark until it is removed", () => {
    mark("nobody.listens");
    const heard: string[] = [];
    listenToMarks((name) => heard.push(name));
    mark("a");
    mark("b");
    listenToMarks(undefined);
    mark("c");
    assert.deepEqual(heard, ["a", "b"]);
  });

  test("a warm python cell through Pi names its path in order, from the tool to the notebook call's end", async () => {
    process.env.PI_CODE_EXECUTION_TOOLS = "python";
    const pi = await startPi({ extensionPaths: [ROOT] }).finally(() => delete process.env.PI_CODE_EXECUTION_TOOLS);
    open.push(pi);
    await spans(pi, [["python", { cells: [{ code: "x = 1" }] }]]);
    const heard: string[] = [];
    listenToMarks((name) => heard.push(name));
    try {
      const { results } = await spans(pi, [["python", { cells: [{ code: "x += 1" }] }]]);
      assert.ok(!results[0]!.isError, textOf(results[0]!));
    } finally {
      listenToMarks(undefined);
    }
    assert.deepEqual(
      heard.filter((n) => !n.startsWith("runner.read") && n !== "runner.handled"),
      [
        "tool.execute",
        "notebook.start",
        "notebook.cell",
        "host.run",
        "host.send",
        "runner.write",
        "runner.written",
        "run.finished",
        "host.outcome",
        "host.result",
        "notebook.end",
      ],
    );
    // The runner's `started` and `done` come in one read of its channel or two, each handled before the next.
    const reads = heard.filter((n) => n.startsWith("runner.read") || n === "runner.handled");
    assert.ok(
      ["read handled", "read handled read handled"].includes(reads.join(" ").replaceAll("runner.", "")),
      reads.join(" "),
    );
    assert.ok(heard.indexOf("runner.read") > heard.indexOf("runner.written"));
    assert.ok(heard.lastIndexOf("runner.read") < heard.indexOf("run.finished"));
  });
});
