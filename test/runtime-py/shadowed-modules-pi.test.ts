// Issue 19: a user's token.py in Pi's working directory must not destroy the session or hide the user's error.
// Through a real Pi agent session (faux provider): what the model sees.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startPi, textOf, type PiHarness } from "../helpers/pi-session.ts";
import { tempDir } from "../helpers/temp-dir.ts";

let pi: PiHarness;
before(async () => {
  const cwd = tempDir("pcs-token-");
  writeFileSync(join(cwd, "token.py"), 'API_TOKEN = "sk-not-a-real-token"\n');
  pi = await startPi({ cwd });
});
after(async () => {
  await pi.dispose();
});

test("with token.py in the working directory the model sees its ZeroDivisionError and the session stays", async () => {
  const [boom, kept, quiet, fresh, mine] = await pi.callTools([
    { code: "x = 1\n1/0", session: "s" },
    { code: "x", session: "s" },
    { code: "x = 5\nx;", session: "s" },
    { code: "x = 1\n1/0" },
    { code: "import token\ntoken.API_TOKEN", session: "s" },
  ]);
  assert.equal(boom.isError, true);
  assert.equal(boom.details.status, "runtime_error");
  assert.match(textOf(boom), /Traceback \(most recent call last\):\n {2}File "[^"]+", line 2, in <module>\n {4}1\/0\n/);
  assert.match(textOf(boom), /ZeroDivisionError: division by zero/);
  assert.doesNotMatch(textOf(boom), /runner internal error|EXACT_TOKEN_TYPES/);
  assert.equal(boom.details.session.isLost, false);
  assert.doesNotMatch(textOf(boom), /lost its state/);

  assert.equal(kept.isError, false);
  assert.equal(textOf(kept), "1\n");
  assert.equal(kept.details.session.incarnation, 1, "the same session process");
  assert.equal(quiet.isError, false);
  assert.equal(textOf(quiet), "[no output]", "`;` suppressed the value");

  assert.equal(fresh.details.status, "runtime_error");
  assert.match(textOf(fresh), /1\/0\n[\s\S]*ZeroDivisionError: division by zero/);

  // The user's own import finds the user's file, as `python3 script.py` would.
  assert.equal(textOf(mine), "sk-not-a-real-token\n");
});
