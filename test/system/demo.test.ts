// scripts/demo.sh as a user runs it: every surface shows once (code_execution's session, interrupt and kill; a python
// cell; eval's Python and JS cells with a display; a shell session; the inspector's URL, which answers), its output
// quotes each result line once, and its temporary folder goes away at the end, on Ctrl-C and on a kill, with no
// process left behind, unless --keep keeps it and says where. `scripts/pi.sh --demo` is the same demo.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import { after, describe, test } from "node:test";
import { tempDir } from "../helpers/temp-dir.ts";

const DEMO = resolve(import.meta.dirname, "../../scripts/demo.sh");
const PI = resolve(import.meta.dirname, "../../scripts/pi.sh");
const CLI = resolve(import.meta.dirname, "../../bin/pi-code-supervisor.js");

interface Demo {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The TMPDIR the demo ran with: its own folder goes inside. */
  tmp: string;
}

/**
 * Runs the demo in its own process group (as a terminal runs a command). `interrupt`, once the first result is
 * printed (a Python session is running then), sends SIGINT to the group, as Ctrl-C does, or SIGTERM to the script.
 */
function runDemo(args: string[], interrupt?: "ctrl-c" | "kill", script = DEMO): Promise<Demo> {
  const tmp = tempDir("pcs-demo-test-");
  after(() => rmSync(tmp, { recursive: true, force: true }));
  const child = spawn("bash", [script, ...args], {
    detached: true,
    env: { ...process.env, TMPDIR: tmp },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  let sent = false;
  child.stdout.on("data", (d) => {
    stdout += d;
    if (interrupt && !sent && /\n## [^\n]*\n[\s\S]*\n {2}\| /.test(stdout)) {
      sent = true;
      if (interrupt === "ctrl-c") process.kill(-child.pid!, "SIGINT");
      else child.kill("SIGTERM");
    }
  });
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((done) => child.once("close", (status, signal) => done({ status, signal, stdout, stderr, tmp })));
}

/** Processes still running in, or with temporary files in, `dir`. */
function processesUsing(dir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      const env = readFileSync(`/proc/${pid}/environ`, "latin1");
      if (cwd.startsWith(dir) || env.includes(`TMPDIR=${dir}/`)) {
        found.push(`${pid}: ${readFileSync(`/proc/${pid}/cmdline`, "latin1").replace(/\0/g, " ")}`);
      }
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

describe("scripts/demo.sh", () => {
  test("shows every surface once, quotes each result line once, and removes its temporary folder", async () => {
    const r = await runDemo([]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.match(/^## /gm)?.length, 11, r.stdout);
    const calls = r.stdout.match(/^> \S+/gm)?.map((c) => c.slice(2));
    assert.deepEqual(
      [...new Set(calls)],
      ["code_execution", "python", "eval", "exec_command", "write_stdin", "/code-inspect"],
      "each surface, in this order",
    );
    // code_execution: state across calls, kept after an interrupt, lost after a kill.
    assert.match(r.stdout, /^ {2}\| 42$/m);
    assert.match(r.stdout, /^ {2}\| \[session "demo" kept its state\]$/m);
    assert.match(r.stdout, /^ {2}\| \[session "demo" lost its state/m);
    assert.match(r.stdout, /^ {2}\| False$/m);
    // python: the cells ran in the notebook session; eval: its Python cell sees them and displays, then a JS cell.
    assert.match(r.stdout, /^isError=false cells=\["ok","ok"\] session=\{"name":"notebook"/m);
    assert.match(r.stdout, /^ {2}\| => 3\.875$/m);
    assert.match(r.stdout, /^isError=false languages=\["py","js"\] cells=\["complete","complete"\]$/m);
    assert.match(r.stdout, /^ {2}\| {3}"max": 9$/m, "the Python cell's display");
    assert.match(r.stdout, /^ {2}\| {3}"squares": \[$/m, "the JS cell's display");
    // The shell session: running when exec_command returns, answering and exiting after write_stdin.
    assert.match(r.stdout, /^status=running isError=false session_id=\d+$/m);
    assert.match(r.stdout, /^status=exited isError=false exit_code=0$/m);
    assert.match(r.stdout, /^ {2}\| hello, demo$/m);
    // The inspector: its loopback URL, which answered, and the CLI for the recorded log.
    assert.match(r.stdout, /^the page answered HTTP 200$/m);
    assert.match(r.stdout, /^ {2}\| Inspector: http:\/\/127\.0\.0\.1:\d+\/\S+\/ \(read-only/m);
    assert.match(r.stdout, /node bin\/pi-code-supervisor\.js inspect \S+\.jsonl/);
    // Blank lines inside a result (between cells) are quoted as they are; none is added after its last line.
    const all = r.stdout.split("\n");
    const endsEmpty = all.filter((l, i) => /^\s*\|\s*$/.test(l) && !/^ {2}\|/.test(all[i + 1] ?? ""));
    assert.deepEqual(endsEmpty, [], "no empty quoted line after a result");
    assert.deepEqual(readdirSync(r.tmp), [], "nothing left in TMPDIR");
    assert.deepEqual(processesUsing(r.tmp), []);
  });

  test("Ctrl-C mid-run: exit 130, the folder and the session's process are gone", async () => {
    const r = await runDemo([], "ctrl-c");
    assert.equal(r.status, 130, `${r.signal} ${r.stderr}`);
    assert.deepEqual(readdirSync(r.tmp), []);
    assert.deepEqual(processesUsing(r.tmp), []);
  });

  test("SIGTERM to the script alone: exit 143, the folder and the session's process are gone", async () => {
    const r = await runDemo([], "kill");
    assert.equal(r.status, 143, `${r.signal} ${r.stderr}`);
    assert.deepEqual(readdirSync(r.tmp), []);
    assert.deepEqual(processesUsing(r.tmp), []);
  });

  test("--keep keeps the folder, even on Ctrl-C, and says where it and the event log are", async () => {
    const r = await runDemo(["--keep"], "ctrl-c");
    assert.equal(r.status, 130, `${r.signal} ${r.stderr}`);
    const kept = /^kept the demo's files in (\S+)$/m.exec(r.stderr)?.[1];
    assert.ok(kept, r.stderr);
    assert.ok(kept.startsWith(`${r.tmp}/`) && existsSync(kept), kept);
    const log = /^its event log \(for npx pi-code-supervisor replay or inspect\): (\S+\.jsonl)$/m.exec(r.stderr)?.[1];
    assert.ok(log && log.startsWith(kept) && existsSync(log), r.stderr);
    const replay = spawnSync(process.execPath, [CLI, "replay", log], { encoding: "utf8" });
    assert.match(replay.stdout, /^identical \(/, `the kept log replays: ${replay.stdout}${replay.stderr}`);
    assert.deepEqual(processesUsing(r.tmp), [], "the kept folder's processes are stopped all the same");
  });

  test("an unknown argument is an error before anything runs; --help prints the usage", async () => {
    const bad = await runDemo(["--frob"]);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /^demo\.sh: unknown argument '--frob'/);
    assert.equal(bad.stdout, "");
    assert.deepEqual(readdirSync(bad.tmp), []);
    const help = await runDemo(["--help"]);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /^usage: bash scripts\/demo\.sh \[--keep\]/);
  });

  test("scripts/pi.sh --demo is the demo, with its arguments and their errors", async () => {
    const help = await runDemo(["--demo", "--help"], undefined, PI);
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^usage: bash scripts\/demo\.sh \[--keep\]/);
    const bad = await runDemo(["--frob", "--demo"], undefined, PI);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /^demo\.sh: unknown argument '--frob'/);
    assert.deepEqual(readdirSync(bad.tmp), []);
  });
});
