// The `pi-code-supervisor` command line as the tests run it: spawned by the project's Node from a scratch folder
// (`cli`), or its `main` called in this process (`cliMain`). Each spawn costs about 1.4 s of CPU (Node starts and
// loads Pi's package), which a loaded machine multiplies past the per-file timeout; so the argument matrix runs in
// process, and each way out of the process (stdout, stderr, each exit status) keeps a spawned case.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { after } from "node:test";
import { format } from "node:util";
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

/** bin/cli.ts's `main` in this process, from `cwd` (default: the scratch folder) with `env` added to process.env,
 * what it printed through console.log and console.error as stdout and stderr, and its exit status. The tests of a
 * file run one at a time, so nothing else prints meanwhile; both are put back however `main` ends. */
export async function cliMain(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  const { main } = await import("../../bin/cli.ts");
  const out = { stdout: "", stderr: "" };
  const { log, error } = console;
  const cwd = process.cwd();
  const saved = Object.entries(opts.env ?? {}).map(([k]) => [k, process.env[k]] as const);
  console.log = (...a: unknown[]) => void (out.stdout += `${format(...a)}\n`);
  console.error = (...a: unknown[]) => void (out.stderr += `${format(...a)}\n`);
  try {
    Object.assign(process.env, opts.env);
    process.chdir(opts.cwd ?? scratch);
    return { status: await main(args), ...out };
  } finally {
    console.log = log;
    console.error = error;
    process.chdir(cwd);
    for (const [k, v] of saved)
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
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
