// `pi-code-supervisor inspect` as a user runs it: --help, one-line errors for bad ports, files and options, and a
// server on the given port until it is stopped.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { describe, test } from "node:test";
import { assertHelp, assertUserError, cli, CLI, LOG, scratch } from "../helpers/cli.ts";

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
