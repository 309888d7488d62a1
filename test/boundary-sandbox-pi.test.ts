// The boundary through a real Pi session under the sandbox: every hostile action of test/helpers/boundary.ts (a
// secret in $HOME, loopback, a unix socket on the host, signalling Pi, writing outside, capabilities, Pi's
// credentials) is blocked from every surface: code_execution, python, eval's Python and JavaScript cells,
// exec_command and write_stdin into a shell. The control is test/boundary-local-pi.test.ts.
import assert from "node:assert/strict";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { PiHarness } from "./helpers/pi-session.ts";
import { ACTIONS, SURFACES, boundaryFixtures, clearEnv, hostDir, probe, session } from "./helpers/boundary.ts";

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
