// A runner that ends before its handle exists keeps what it wrote (actors/process/operations.ts `spawnRunner`): the
// handle is made once the runner has been moved into its cgroup, which goes through libuv's threadpool, and Node
// empties the pipes of an exited child that nobody reads. A runner that fails at start (a bad interpreter, an import
// error) exits at once, and its stderr is the only account of why. Here the move is held back for certain: a
// process with a one-thread pool whose thread is blocked (opening a FIFO for reading) right behind the start's first
// task, until the runner has written, exited and been reaped.
import "../../helpers/agent-dir.ts";
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { tempDir } from "../../helpers/temp-dir.ts";

const root = resolve(import.meta.dirname, "../../..");
const dir = tempDir("pcs-early-exit-");

/** The probe, run in a process of its own with `UV_THREADPOOL_SIZE=1`: prints what the handle received as JSON. */
const probe = `
import ${JSON.stringify(join(root, "test/helpers/agent-dir.ts"))};
import { existsSync, open, openSync, closeSync, constants, readFileSync } from "node:fs";
import { localOperations } from ${JSON.stringify(join(root, "actors/process/operations.ts"))};
const [dir, fifo, marker, script] = process.argv.slice(2);
const starting = localOperations.start({ executable: process.execPath, args: [script], cwd: dir, env: { PATH: process.env.PATH ?? "" }, killMs: 500 });
// Queued right behind the start's check of its directory: the pool's only thread blocks in this open until a writer comes.
open(fifo, "r", (e, fd) => { if (!e) closeSync(fd); });
const release = () => closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
// Released once the runner has written and exited and Node has reaped it (its marker names its pid, whose /proc
// entry goes at the reaping, where Node handles the exit): no clock decides.
const poll = setInterval(() => {
  const pid = existsSync(marker) ? readFileSync(marker, "utf8") : "";
  if (pid && !existsSync(\`/proc/\${pid}\`)) { clearInterval(poll); release(); }
}, 10);
const r = await starting;
if (!r.ok) { console.log(JSON.stringify({ error: r.error.message })); process.exit(0); }
const seen = { stdout: "", stderr: "", exit: null, heldUntilExit: existsSync(marker) };
r.value.onStdout((c) => (seen.stdout += c));
r.value.onStderr((c) => (seen.stderr += c));
// Without the hold, the exit came only from the handle's unref'd drain timer: a 10 s bound keeps the probe alive to say so.
await new Promise((done) => { const t = setTimeout(done, 10000); r.value.onExit((e) => { seen.exit = e; clearTimeout(t); done(); }); });
console.log(JSON.stringify(seen));
process.exit(0);
`;

test("a runner that exited while it was being moved into its cgroup: its stderr and stdout reach the handle", () => {
  const fifo = join(dir, "block");
  execFileSync("mkfifo", [fifo]);
  const marker = join(dir, "exited");
  const script = join(dir, "fails-at-start.cjs");
  writeFileSync(
    script,
    [
      "const fs = require('node:fs');",
      "fs.writeSync(2, 'ModuleNotFoundError: No module named missing\\n');",
      "fs.writeSync(1, 'partial\\n');",
      `fs.writeFileSync(${JSON.stringify(marker)}, String(process.pid));`,
      "process.exit(3);",
    ].join("\n"),
  );
  const probePath = join(dir, "probe.ts");
  writeFileSync(probePath, probe);
  const out = spawnSync(process.execPath, [probePath, dir, fifo, marker, script], {
    env: { ...process.env, UV_THREADPOOL_SIZE: "1" },
    encoding: "utf8",
    timeout: 120_000,
  });
  assert.equal(out.status, 0, out.stderr);
  const seen = JSON.parse(out.stdout.trim().split("\n").at(-1)!);
  assert.equal(seen.error, undefined);
  assert.equal(seen.heldUntilExit, true, "the start must not have finished before the runner exited");
  assert.deepEqual(seen.exit, { code: 3, signal: null });
  assert.equal(seen.stderr, "ModuleNotFoundError: No module named missing\n");
  assert.equal(seen.stdout, "partial\n");
});
