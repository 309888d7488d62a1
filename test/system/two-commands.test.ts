// The two commands a newcomer needs (issue 32): the README's first screen shows exactly `bash scripts/pi.sh` and
// `bash scripts/test.sh`; CI is a call of the second; the first, on a set-up checkout, starts Pi with the extension
// loaded and prints nothing of the set-up (its no-op is silent).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";

const ROOT = resolve(import.meta.dirname, "../..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");

describe("two commands", () => {
  test("the README's first screen: one paragraph, then a block of exactly the two commands", () => {
    const lines = README.split("\n");
    const open = lines.findIndex((l) => l.startsWith("```"));
    const close = lines.findIndex((l, i) => i > open && l.startsWith("```"));
    assert.ok(open > 0 && close > open, "a code block");
    assert.ok(close < 24, `it ends by line 24, on the first screen (it ends on line ${close + 1})`);
    const before = lines.slice(0, open).join("\n");
    assert.doesNotMatch(before, /^## /m, "no section before it");
    assert.equal(before.trim().split(/\n\s*\n/).length, 2, "the title and one paragraph before it");
    const commands = lines.slice(open + 1, close).map((l) => l.replace(/\s+#.*$/, "").trim());
    assert.deepEqual(commands, ["bash scripts/pi.sh", "bash scripts/test.sh"]);
  });

  test(".ci/run is a call of scripts/test.sh", () => {
    const run = readFileSync(join(ROOT, ".ci", "run"), "utf8");
    const commands = run.split("\n").filter((l) => l.trim() && !l.startsWith("#") && !/^(set|cd) /.test(l));
    assert.deepEqual(commands, ['exec bash scripts/test.sh "$@"']);
  });

  // Only where the set-up is recorded as done: otherwise pi.sh would set the checkout up, under the running tests.
  const ready = spawnSync("bash", [join(ROOT, "scripts", "setup.sh"), "--check"], { encoding: "utf8" });
  test(
    "bash scripts/pi.sh starts Pi with the extension loaded, the set-up's no-op silent",
    { skip: ready.status === 0 ? false : `the checkout is not set up: ${ready.stderr.trim()}` },
    () => {
      const r = spawnSync("bash", [join(ROOT, "scripts", "pi.sh"), "--help"], {
        cwd: ROOT,
        encoding: "utf8",
        env: { ...process.env, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" },
        timeout: 110_000,
      });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /^pi - /m, "Pi's own help");
      assert.match(r.stdout, /^ {2}--code-tools <value> /m, "the extension's flags: it is loaded");
      assert.doesNotMatch(r.stdout + r.stderr, /^setup: /m, "nothing of the set-up when it is done");
    },
  );
});
