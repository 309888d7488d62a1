// The `pi-code-supervisor` command line as the tests run it: spawned by the project's Node from a scratch folder.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { after } from "node:test";
import { tempDir } from "./temp-dir.ts";

export const ROOT = resolve(import.meta.dirname, "../..");
export const CLI = join(ROOT, "bin/pi-code-supervisor.js");
export const LOG = join(ROOT, "test/fixtures/replay/reset.jsonl");
export const scratch = tempDir("pcs-cli-");
after(() => rmSync(scratch, { recursive: true, force: true }));

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI; a command that wrongly starts a server is cut off by the timeout (status null). The timeout only
 * guards against a hang, so it is generous: a loaded machine can take more than 15 s to start Node and load the CLI,
 * and a correct command is never cut off by it. */
export function cli(args: string[], opts: { node?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Run {
  const r = spawnSync(opts.node ?? process.execPath, [CLI, ...args], {
    encoding: "utf8",
    cwd: opts.cwd ?? scratch,
    env: { ...process.env, ...opts.env },
    timeout: 120_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Help: usage on stdout, nothing on stderr, exit 0. */
export function assertHelp(r: Run, usage: RegExp): void {
  assert.equal(r.status, 0, `exit 0\n${r.stdout}${r.stderr}`);
  assert.equal(r.stderr, "");
  assert.match(r.stdout, usage);
}

/** A user error: one line on stderr naming the problem, nothing on stdout, exit 2, no stack trace. */
export function assertUserError(r: Run, message: RegExp): void {
  assert.equal(r.status, 2, `exit 2\n${r.stdout}${r.stderr}`);
  assert.equal(r.stdout, "");
  assert.equal(r.stderr.trimEnd().split("\n").length, 1, `one line:\n${r.stderr}`);
  assert.doesNotMatch(r.stderr, /\bat .*:\d+:\d+|Error \[|node:internal/);
  assert.match(r.stderr, message);
}
