// `pi-code-supervisor inspect` as a user runs it: --help, one-line errors for bad ports, files and options, and a
// server on the given port until it is stopped. Argument cases run bin/cli.ts's `main` in this process (`cliMain`,
// test/helpers/cli.ts); a spawned CLI keeps one help, one user error and the server.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { describe, test } from "node:test";
import { assertHelp, assertUserError, cli, CLI, cliMain, LOG, scratch } from "../helpers/cli.ts";

describe("inspect", () => {
  test("--help and -h print its usage instead of starting a server", async () => {
    assertHelp(cli(["inspect", "--help"]), /^usage: pi-code-supervisor inspect/);
    assertHelp(await cliMain(["inspect", "-h"]), /^usage: pi-code-supervisor inspect/);
    assertHelp(await cliMain(["inspect", LOG, "--port", "0", "-h"]), /--port/);
  });

  test("a port that is not an integer from 0 to 65535 is a one-line error", async () => {
    assertUserError(cli(["inspect", LOG, "--port=abc"]), /inspect: --port must be an integer from 0 to 65535/);
    for (const bad of ["abc", "99999", "65536", "-1", "1.5", "", "0x50", "1e3", " 80"]) {
      assertUserError(
        await cliMain(["inspect", LOG, `--port=${bad}`]),
        /inspect: --port must be an integer from 0 to 65535/,
      );
    }
    assertUserError(await cliMain(["inspect", LOG, "--port", "abc"]), /not 'abc'/);
    assertUserError(await cliMain(["inspect", LOG, "-p", "99999"]), /not '99999'/);
    assertUserError(await cliMain(["inspect", LOG, "--port"]), /inspect: .*--port.* needs a value/);
  });

  test("a missing file, a directory, two files or an unknown option are one-line errors", async () => {
    assertUserError(await cliMain(["inspect", "nope.jsonl"]), /inspect: no such file: .*nope\.jsonl/);
    assertUserError(await cliMain(["inspect", scratch]), /inspect: not a file: /);
    assertUserError(await cliMain(["inspect", LOG, LOG]), /inspect: unexpected argument/);
    assertUserError(await cliMain(["inspect", "--bogus"]), /inspect: unknown option '--bogus'/);
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
