// Local modules a session imported from its working directory are watched; after an edit on disk the next run
// reloads them first and says which. The documented limits hold: objects made from the old module keep the old
// class; a module that no longer compiles stays as it was (and the run says so).
import "../../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { SupervisorHost, type RunResult } from "../../../host/host.ts";
import { tempDir } from "../../helpers/temp-dir.ts";
import { waitUntil } from "../../helpers/procs.ts";

let host: SupervisorHost;
let cwd: string;
const run = (code: string, session = "mods") => host.run({ code, cwd, timeoutMs: 20_000, session });

/** Runs `code` until `seen` holds of its result (the watcher has seen the edit) or 10 s passed: the last run. */
async function runUntil(code: string, session: string, seen: (r: RunResult) => boolean): Promise<RunResult> {
  let r: RunResult | undefined;
  await waitUntil(async () => seen((r = await run(code, session))), 10_000);
  return r!;
}

/** Runs `code` until its output is `want`, returning that run. */
const untilOutput = (code: string, want: string, session = "mods") => runUntil(code, session, (r) => r.stdout === want);

before(() => {
  cwd = tempDir("pcs-mods-");
  host = new SupervisorHost();
});
after(async () => {
  await host.shutdown();
});

describe("module reload in a session", () => {
  test("an edited local module is reloaded before the next run, which says so", async () => {
    writeFileSync(join(cwd, "helper.py"), "VALUE = 1\nclass Thing:\n    pass\n");
    mkdirSync(join(cwd, "pkg"));
    writeFileSync(join(cwd, "pkg", "__init__.py"), "");
    writeFileSync(join(cwd, "pkg", "inner.py"), "def f():\n    return 'old'\n");
    const first = await run(
      "import helper, json\nfrom pkg import inner\nfrom helper import VALUE as copied\nthing = helper.Thing()\nprint(helper.VALUE, inner.f())",
    );
    assert.equal(first.stdout, "1 old\n", first.stderr);
    assert.equal(first.outcome.reloaded, undefined);
    const unchanged = await run("helper.VALUE");
    assert.equal(unchanged.outcome.reloaded, undefined, "nothing changed, nothing reloaded");

    writeFileSync(join(cwd, "helper.py"), "VALUE = 2\nclass Thing:\n    pass\n");
    const r = await untilOutput("helper.VALUE", "2\n");
    assert.equal(r.stdout, "2\n", "the edit was picked up");
    assert.deepEqual(r.outcome.reloaded, ["helper"]);
    // The documented limits of a reload.
    const limits = await run("print(isinstance(thing, helper.Thing), copied)");
    assert.equal(limits.stdout, "False 1\n");
    assert.equal(limits.outcome.reloaded, undefined, "reloaded once per change");

    writeFileSync(join(cwd, "pkg", "inner.py"), "def f():\n    return 'new'\n");
    const nested = await untilOutput("inner.f()", "new\n");
    assert.deepEqual(nested.outcome.reloaded, ["pkg.inner"]);
  });

  test("a module that no longer compiles keeps its old version, and the run says why", async () => {
    writeFileSync(join(cwd, "fragile.py"), "OK = True\n");
    await run("import fragile", "frag");
    writeFileSync(join(cwd, "fragile.py"), "OK = (\n");
    const r = await runUntil("fragile.OK", "frag", (r) => /could not be reloaded/.test(r.stderr));
    assert.match(
      r.stderr,
      /\[module fragile changed on disk but could not be reloaded \(SyntaxError: .*\); the old version stays\]/,
    );
    assert.equal(r.stdout, "True\n");
    assert.equal(r.outcome.status, "success");
  });

  test("standard-library and installed modules are not watched; fresh runs need no reload", async () => {
    const r = await run("import json, email.mime.text\n1", "std");
    assert.equal(r.outcome.status, "success");
    const fresh = await host.run({ code: "import helper\nhelper.VALUE", cwd, timeoutMs: 20_000 });
    assert.equal(fresh.stdout, "2\n");
    assert.equal(fresh.outcome.reloaded, undefined);
  });

  test("module reload can be turned off (setting moduleReload)", async () => {
    const off = new SupervisorHost({ moduleReload: () => false });
    const dir = tempDir("pcs-mods-off-");
    try {
      writeFileSync(join(dir, "m.py"), "V = 1\n");
      await off.run({ code: "import m", cwd: dir, timeoutMs: 20_000, session: "o" });
      writeFileSync(join(dir, "m.py"), "V = 2\n");
      await new Promise((resolve) => setTimeout(resolve, 800));
      const r = await off.run({ code: "m.V", cwd: dir, timeoutMs: 20_000, session: "o" });
      assert.equal(r.stdout, "1\n");
      assert.equal(r.outcome.reloaded, undefined);
    } finally {
      await off.shutdown();
    }
  });
});
