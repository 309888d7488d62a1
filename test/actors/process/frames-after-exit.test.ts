// A runner's frames that Node has not read yet when it learns of the runner's exit still reach the handle
// (actors/process/operations.ts `wrap`). A fresh Python run under load ended `setup_error`, "Python exited during
// start-up (exit code 0)", after 642 ms: its `started` and `done` were lost. Traced at load ~15, the fork server's
// `exited` frame was handled before the runner's channel was read in about half of 1800 fresh runs (up to 212 ms
// before), and the handle then waited for stdout and stderr only, its drain timer (500 ms) destroying the channel: an
// event loop that stalls past the window runs that timer before the poll that would read the frames. Here the order
// is held for certain: the runner exits at once, leaving a descendant that holds its stdout, stderr and channel (it
// ignores the SIGTERM that follows the exit); once Node has reaped the runner (the handle knows the exit), the
// probe's event loop blocks; only then does the descendant write a frame, and the loop stays blocked until the drain
// window is over. When it wakes, the frame is readable and the drain timer is due. And a runner whose stdout and
// stderr ended and whose exit is known before its last frame is read: its channel, still open, is read to its end.
import "../../helpers/agent-dir.ts";
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { tempDir } from "../../helpers/temp-dir.ts";

const root = resolve(import.meta.dirname, "../../..");
const dir = tempDir("pcs-frames-after-exit-");

/** The probe, run in a process of its own: prints what the handle received as JSON. */
const probe = `
import ${JSON.stringify(join(root, "test/helpers/agent-dir.ts"))};
import { existsSync, writeFileSync } from "node:fs";
import { localOperations, DRAIN_AFTER_EXIT_MS } from ${JSON.stringify(join(root, "actors/process/operations.ts"))};
const [dir, script, mode] = process.argv.slice(2);
const blocking = dir + "/blocking";
const written = dir + "/written";
// killMs: the descendant (which ignores SIGTERM) outlives the stop that follows the runner's exit.
const r = await localOperations.start({ executable: process.execPath, args: [script, dir], cwd: dir, env: { PATH: process.env.PATH ?? "" }, killMs: 60000 });
if (!r.ok) { console.log(JSON.stringify({ error: r.error.message })); process.exit(0); }
const h = r.value;
const seen = { frames: [], exit: null, blocked: false };
h.onFrame((f) => seen.frames.push(f));
const poll = setInterval(() => {
  // The runner's /proc entry goes when Node reaps it, where the handle is told of the exit (its drain window starts).
  if (existsSync("/proc/" + h.pid)) return;
  clearInterval(poll);
  const knownAt = Date.now();
  // No block: the descendant writes once a poll has passed since (the runner's stdout and stderr, at their end since it
  // exited, were read in it).
  if (mode !== "block") return void setImmediate(() => writeFileSync(blocking, ""));
  // Blocked in the check phase: the loop's next step is its timers, then its poll (a timer callback that blocked
  // would be followed by the poll: the timers phase does not look at the clock again).
  setImmediate(() => {
    seen.blocked = true;
    writeFileSync(blocking, "");
    const cell = new Int32Array(new SharedArrayBuffer(4));
    while (!existsSync(written)) Atomics.wait(cell, 0, 0, 5);
    const left = DRAIN_AFTER_EXIT_MS + 300 - (Date.now() - knownAt);
    if (left > 0) Atomics.wait(cell, 0, 0, left);
  });
}, 5);
await new Promise((done) => { const t = setTimeout(done, 20000); h.onExit((e) => { seen.exit = e; clearTimeout(t); done(); }); });
console.log(JSON.stringify(seen));
process.exit(0);
`;

/** Runs the probe on a runner that exits at once, leaving a descendant (it ignores the SIGTERM that follows the exit)
 * with fds `held` of the runner's, which writes a `done` frame on fd 3 once the probe knows the exit, and exits
 * `lingerMs` later. */
function probeRun(name: string, held: string, mode: "block" | "no-block", lingerMs: number) {
  const at = join(dir, name);
  mkdirSync(at);
  const descendant = join(at, "descendant.cjs");
  writeFileSync(
    descendant,
    [
      "const fs = require('node:fs');",
      "process.on('SIGTERM', () => {});",
      "const dir = process.argv[2];",
      "fs.writeFileSync(dir + '/armed', '');",
      "const body = Buffer.from(JSON.stringify({ type: 'done', id: 'r1', exitCode: 0 }));",
      "const head = Buffer.alloc(4); head.writeUInt32BE(body.length);",
      "const wait = setInterval(() => {",
      "  if (!fs.existsSync(dir + '/blocking')) return;",
      "  clearInterval(wait);",
      "  fs.writeSync(3, Buffer.concat([head, body]));",
      "  fs.writeFileSync(dir + '/written', '');",
      `  setTimeout(() => process.exit(0), ${lingerMs});`,
      "}, 5);",
    ].join("\n"),
  );
  const script = join(at, "exits-first.cjs");
  writeFileSync(
    script,
    [
      "const { spawn } = require('node:child_process');",
      "const { existsSync } = require('node:fs');",
      `spawn(process.execPath, [${JSON.stringify(descendant)}, process.argv[2]], { stdio: ${held} }).unref();`,
      "// Exits once the descendant can outlive the SIGTERM that the runner's exit sends its group.",
      "setInterval(() => existsSync(process.argv[2] + '/armed') && process.exit(0), 5);",
    ].join("\n"),
  );
  const probePath = join(at, "probe.ts");
  writeFileSync(probePath, probe);
  const out = spawnSync(process.execPath, [probePath, at, script, mode], { encoding: "utf8", timeout: 120_000 });
  assert.equal(out.status, 0, out.stderr);
  const seen = JSON.parse(out.stdout.trim().split("\n").at(-1)!);
  assert.equal(seen.error, undefined);
  assert.deepEqual(seen.exit, { code: 0, signal: null });
  return seen as { frames: unknown[]; blocked: boolean };
}

test("a frame still unread when the runner's exit is known and the drain window ends reaches the handle", () => {
  const seen = probeRun("stalled", "['ignore', 1, 2, 3]", "block", 3000);
  assert.equal(seen.blocked, true, "the probe must have blocked after the exit was known");
  assert.deepEqual(seen.frames, [{ type: "done", id: "r1", exitCode: 0 }]);
});

test("a runner whose exit and end of output are known before its last frame is read: its channel is read to its end", () => {
  const seen = probeRun("closed", "['ignore', 'ignore', 'ignore', 3]", "no-block", 100);
  assert.deepEqual(seen.frames, [{ type: "done", id: "r1", exitCode: 0 }]);
});
