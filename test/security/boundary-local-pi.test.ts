// The boundary through a real Pi session on the local backend, the control of
// test/security/boundary-sandbox-pi.test.ts: every hostile action of test/helpers/boundary.ts works from every surface
// here (so blocking it elsewhere means something).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { PiHarness } from "../helpers/pi-session.ts";
import { ACTIONS, SURFACES, boundaryFixtures, clearEnv, hostDir, isRoot, probe, session } from "../helpers/boundary.ts";

boundaryFixtures();

describe("local (the control): every action works from every surface", () => {
  let pi: PiHarness;
  before(async () => (pi = await session({})));
  after(async () => {
    await pi?.dispose();
    clearEnv({});
  });
  for (const surface of SURFACES) {
    test(surface, async () => {
      const { verdicts, text } = await probe(pi, surface);
      for (const action of ACTIONS) {
        if (action === "caps" && !isRoot) continue;
        assert.equal(verdicts[action], "OK", `${surface} ${action} on local:\n${text}`);
      }
      assert.ok(existsSync(join(hostDir, `written-${surface}`)));
    });
  }
});
