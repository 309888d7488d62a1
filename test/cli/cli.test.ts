// The `pi-code-supervisor` command line as a user runs it: every subcommand's --help, one-line errors (exit 2, no
// stack trace) for unknown options, bad values and missing files. The cases run bin/cli.ts's `main` in this process
// (`cliMain`); each way out of a spawned CLI keeps a spawned case (`cli`): the usage on stdout with exit 0, on stderr
// with exit 2, a replay's report with exit 0 and its error with exit 1. The launcher itself:
// test/cli/cli-launcher.test.ts.
import assert from "node:assert/strict";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { assertHelp, assertUserError, cli, cliMain, LOG, ROOT, scratch } from "../helpers/cli.ts";
import { tempDir } from "../helpers/temp-dir.ts";

describe("top level", () => {
  test("--help and -h print the usage on stdout and exit 0", async () => {
    for (const r of [cli(["--help"]), await cliMain(["-h"])]) {
      assertHelp(r, /^usage: pi-code-supervisor <command>/);
      for (const command of ["replay", "logs", "inspect"]) assert.match(r.stdout, new RegExp(`\\n  ${command} `));
    }
  });

  test("help <command> is that command's --help", async () => {
    assert.deepEqual(await cliMain(["help", "inspect"]), await cliMain(["inspect", "--help"]));
  });

  test("--version prints the package's version", async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    const r = await cliMain(["--version"]);
    assert.equal(r.status, 0);
    assert.equal(r.stdout, `${version}\n`);
  });

  test("no command prints the usage on stderr and exits 2", () => {
    const r = cli([]);
    assert.equal(r.status, 2);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /^usage: pi-code-supervisor <command>/);
  });

  test("an unknown command or option is a one-line error", async () => {
    assertUserError(await cliMain(["frob"]), /unknown command 'frob'.*--help/);
    assertUserError(await cliMain(["--frob"]), /unknown option '--frob'/);
    assertUserError(await cliMain(["help", "frob"]), /unknown command 'frob'/);
  });
});

describe("replay", () => {
  test("--help and -h print its usage instead of reading a file named -h", async () => {
    for (const flag of ["--help", "-h"])
      assertHelp(await cliMain(["replay", flag]), /^usage: pi-code-supervisor replay <log.jsonl>/);
    assertHelp(await cliMain(["replay", LOG, "-h"]), /--verbose/);
  });

  test("a file named -h can still be replayed after --", async () => {
    const dir = tempDir("dash-", scratch);
    copyFileSync(LOG, join(dir, "-h"));
    const r = await cliMain(["replay", "--", "-h"], { cwd: dir });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^identical \(/);
  });

  test("options may follow the files", () => {
    const r = cli(["replay", LOG, "--verbose"]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^identical \(/);
  });

  test("no file, a missing file, a directory, an unknown option or a value for --verbose: one-line errors", async () => {
    assertUserError(await cliMain(["replay"]), /replay: no log given/);
    assertUserError(await cliMain(["replay", "nope.jsonl"]), /replay: no such file: .*nope\.jsonl/);
    assertUserError(await cliMain(["replay", LOG, "nope.jsonl"]), /no such file: .*nope\.jsonl/);
    assertUserError(await cliMain(["replay", scratch]), /replay: not a file: /);
    assertUserError(await cliMain(["replay", "--bogus", LOG]), /replay: unknown option '--bogus'.*replay --help/);
    assertUserError(await cliMain(["replay", "-x", LOG]), /replay: unknown option '-x'/);
    assertUserError(await cliMain(["replay", "--verbose=yes", LOG]), /replay: .*'--verbose' does not take a value/);
  });

  test("a file that is not an event log: the reason on stderr, exit 1", () => {
    const path = join(scratch, "notes.jsonl");
    writeFileSync(path, '{"k":"nothing"}\n');
    const r = cli(["replay", path]);
    assert.equal(r.status, 1);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /^error: .*not a pi-code-supervisor event log/);
    assert.equal(r.stderr.trimEnd().split("\n").length, 1);
  });

  test("an input record without its event: the line and what is missing, exit 1 (the other shapes: replay.test.ts)", async () => {
    const lines = readFileSync(LOG, "utf8").trimEnd().split("\n");
    const i = lines.findIndex((l) => (JSON.parse(l) as { k: string }).k === "cmd");
    const record = JSON.parse(lines[i]!) as Record<string, unknown>;
    delete record.event;
    const path = join(scratch, "edited.jsonl");
    writeFileSync(path, [...lines.slice(0, i), JSON.stringify(record), ...lines.slice(i + 1)].join("\n") + "\n");
    const r = await cliMain(["replay", path]);
    assert.equal(r.status, 1, r.stdout);
    assert.match(r.stderr, new RegExp(`^error: .*line ${i + 1} is not a log record: a cmd record without an event`));
    assert.equal(r.stderr.trimEnd().split("\n").length, 1);
  });
});

describe("logs", () => {
  test("--help and -h print its usage instead of the list", async () => {
    for (const flag of ["--help", "-h"]) assertHelp(await cliMain(["logs", flag]), /^usage: pi-code-supervisor logs\n/);
  });

  test("lists the logs of PI_CODE_EXECUTION_LOG_DIR", async () => {
    const dir = tempDir("logs-", scratch);
    copyFileSync(LOG, join(dir, "a.jsonl"));
    const r = await cliMain(["logs"], { env: { PI_CODE_EXECUTION_LOG_DIR: dir } });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^${join(dir, "a.jsonl")}\\t\\d+ bytes\\t`));
  });

  test("arguments and unknown options are one-line errors", async () => {
    assertUserError(await cliMain(["logs", "extra"]), /logs: unexpected argument 'extra'/);
    assertUserError(await cliMain(["logs", "--all"]), /logs: unknown option '--all'/);
  });
});
