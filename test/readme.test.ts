// The first five minutes, as the README tells them: a clone is set up (its npm dependencies) before Pi is pointed
// at it, and nothing promises commands that do not work while the package is unpublished. Every command-line
// example the documents show runs as written from the checkout.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";

const ROOT = resolve(import.meta.dirname, "..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");
const DOCS = [
  ["README.md", README],
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => [`docs/${f}`, readFileSync(join(ROOT, "docs", f), "utf8")]),
];

function section(text: string, heading: string): string {
  const start = text.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `a "## ${heading}" section`);
  const end = text.indexOf("\n## ", start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

/** The shell code blocks (```sh, ```bash or no language) of a Markdown text. */
function codeBlocks(text: string): string[] {
  const blocks: string[] = [];
  let open: { shell: boolean; lines: string[] } | undefined;
  for (const line of text.split("\n")) {
    const fence = /^```(\w*)/.exec(line);
    if (fence && !open) open = { shell: ["", "sh", "bash"].includes(fence[1]), lines: [] };
    else if (fence && open) {
      if (open.shell) blocks.push(open.lines.join("\n"));
      open = undefined;
    } else open?.lines.push(line);
  }
  return blocks;
}

describe("README: Install into Pi", () => {
  const install = section(README, "Install into Pi");

  test("the dependencies are installed before `pi install`, and it says what happens otherwise", () => {
    const commands = codeBlocks(install).join("\n");
    const setup = commands.search(/bash scripts\/setup\.sh|npm ci/);
    const pointed = commands.search(/pi install /);
    assert.ok(setup >= 0, "scripts/setup.sh or npm ci is shown");
    assert.ok(pointed > setup, "before pi install");
    assert.match(install, /Cannot find module 'nanoid'/);
  });

  test("it names the entry Pi loads, and that entry is the package's `pi.extensions`", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    const [entry] = pkg.pi.extensions as string[];
    assert.ok(install.includes(`\`${entry.replace(/^\.\//, "")}\``), `the README names ${entry}`);
    assert.match(entry, /\/pi-code-supervisor\/index\.ts$/, "a folder named for the package: Pi lists it so");
  });
});

describe("nothing is promised that does not work while the package is unpublished", () => {
  test("`pi install npm:` and `npx pi-code-supervisor` appear only as what works once it is published", () => {
    for (const [name, text] of DOCS) {
      for (const block of codeBlocks(text)) {
        assert.doesNotMatch(block, /pi install npm:/, `${name}: a command that fails today`);
        assert.doesNotMatch(block, /^\s*npx pi-code-supervisor/m, `${name}: npx from anywhere fails today`);
      }
      for (const paragraph of text.split(/\n\s*\n/)) {
        if (/npm:pi-code-supervisor|npx pi-code-supervisor/.test(paragraph) && !paragraph.startsWith("```"))
          assert.match(paragraph, /published/, `${name}: ${paragraph.slice(0, 120)}`);
      }
    }
  });

  test("the command-line examples run from the checkout as shown", () => {
    const examples = DOCS.flatMap(([, text]) => codeBlocks(text))
      .flatMap((b) => b.split("\n"))
      .filter((l) => l.startsWith("node bin/pi-code-supervisor.js "));
    assert.ok(examples.length >= 3, "replay, logs and inspect are shown");
    for (const sub of new Set(examples.map((l) => l.split(/\s+/)[2]))) {
      const r = spawnSync(process.execPath, ["bin/pi-code-supervisor.js", sub, "--help"], {
        cwd: ROOT,
        encoding: "utf8",
      });
      assert.equal(r.status, 0, `${sub} --help: ${r.stderr}`);
    }
  });
});
