// The boundary through a real Pi session under the sandbox: every hostile action of test/helpers/boundary.ts (a
// secret in $HOME, loopback, a unix socket on the host, signalling Pi, writing outside, capabilities, Pi's
// credentials) is blocked from every surface: code_execution, python, eval's Python and JavaScript cells,
// exec_command and write_stdin into a shell. The control is test/security/boundary-local-pi.test.ts.
import assert from "node:assert/strict";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { PiHarness } from "../helpers/pi-session.ts";
import { ACTIONS, SURFACES, boundaryFixtures, clearEnv, hostDir, probe, session, turn } from "../helpers/boundary.ts";
import { textOf } from "../helpers/pi-session.ts";

boundaryFixtures();

describe("sandbox: every action is blocked from every surface", () => {
  const env = { PI_CODE_EXECUTION_BACKEND: "sandbox" };
  let pi: PiHarness;
  before(async () => (pi = await session(env)));
  after(async () => {
    await pi?.dispose();
    clearEnv(env);
  });
  for (const surface of SURFACES) {
    test(surface, async () => {
      rmSync(join(hostDir, `written-${surface}`), { force: true });
      const { verdicts, text } = await probe(pi, surface);
      for (const action of ACTIONS)
        assert.match(verdicts[action] ?? "", /^NO/, `${surface} ${action} in the sandbox:\n${text}`);
      assert.equal(existsSync(join(hostDir, `written-${surface}`)), false);
    });
  }
});

describe("a where-code-runs setting that cannot be read: nothing runs, on any surface (never local instead)", () => {
  // The user meant the sandbox and mistyped it. The control is the describe above: written right, the same calls run
  // in the sandbox.
  const env = { PI_CODE_EXECUTION_BACKEND: "sandbx" };
  let pi: PiHarness;
  before(async () => (pi = await session(env)));
  after(async () => {
    await pi?.dispose();
    clearEnv(env);
  });
  const marker = (surface: string) => join(hostDir, `ran-${surface}`);
  const calls: [string, string, Record<string, unknown>][] = [
    ["code_execution", "code_execution", { code: `open(${JSON.stringify(marker("code_execution"))}, "w")` }],
    ["python", "python", { cells: [{ code: `open(${JSON.stringify(marker("python"))}, "w")` }] }],
    [
      "eval-js",
      "eval",
      { cells: [{ language: "js", code: `require("node:fs").writeFileSync(${JSON.stringify(marker("eval-js"))}, "")` }] },
    ],
    ["exec_command", "exec_command", { cmd: `touch ${marker("exec_command")}`, yield_time_ms: 5000 }],
  ];
  for (const [surface, tool, args] of calls) {
    test(surface, async () => {
      const [r] = await turn(pi, [[tool, args]]);
      const text = textOf(r!);
      assert.match(text, /where code runs is not settled, so nothing runs: PI_CODE_EXECUTION_BACKEND: backend must be/);
      assert.equal(existsSync(marker(surface)), false, `${surface} ran on this machine:\n${text}`);
    });
  }
});
