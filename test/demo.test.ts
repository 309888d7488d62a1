// scripts/demo.sh as a user runs it: its output quotes each result line once, and its temporary folder goes away
// at the end, on Ctrl-C and on a kill, with no process left behind, unless --keep keeps it and says where.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, describe, test } from "node:test";

const DEMO = resolve(import.meta.dirname, "../scripts/demo.sh");
const CLI = resolve(import.meta.dirname, "../bin/pi-code-supervisor.js");

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
function runDemo(args: string[], interrupt?: "ctrl-c" | "kill"): Promise<Demo> {
  const tmp = mkdtempSync(join(tmpdir(), "pcs-demo-test-"));
  after(() => rmSync(tmp, { recursive: true, force: true }));
  const child = spawn("bash", [DEMO, ...args], {
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
  test("quotes each result line once, no empty quoted lines, and removes its temporary folder", async () => {
    const r = await runDemo([]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.match(/^## /gm)?.length, 6, r.stdout);
    assert.match(r.stdout, /^ {2}\| 42$/m);
    const empty = r.stdout.split("\n").filter((l) => /^\s*\|\s*$/.test(l));
    assert.deepEqual(empty, [], "no empty quoted line after a result");
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
});
