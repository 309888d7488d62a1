// The first five minutes, as the README tells them: a clone is set up (its npm dependencies) before Pi is pointed
// at it, and nothing promises commands that do not work while the package is unpublished. Every command-line
// example the documents show runs as written from the checkout. The README is the first five minutes only (issue 29):
// what it is, install, the surfaces turned on, a backend, the demo, update and uninstall, then one page per subject in
// docs/, every link of which resolves.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, resolve } from "node:path";
import { describe, test } from "node:test";
import { SETTING_KEYS } from "../../store/setting-keys.ts";

const ROOT = resolve(import.meta.dirname, "../..");
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

describe("README: the first five minutes, then one page per subject", () => {
  test("its sections, in the order a newcomer needs them", () => {
    const headings = [...README.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    assert.deepEqual(headings, [
      "What it is",
      "Install into Pi",
      "Turn the surfaces on",
      "Pick a backend",
      "Try it",
      "Update and uninstall",
      "Documentation",
    ]);
    assert.ok(README.split("\n").length <= 200, "short: the details live in docs/");
  });

  test("what it is names every surface and links its page; the contents link one page per subject", () => {
    const what = section(README, "What it is");
    for (const name of [
      "code_execution",
      "python",
      "eval",
      "exec_command",
      "write_stdin",
      "local",
      "sandbox",
      "remote",
    ])
      assert.ok(what.includes(`\`${name}\``), name);
    const contents = section(README, "Documentation");
    for (const page of [
      "code-execution",
      "python",
      "eval",
      "exec",
      "backends",
      "inspector",
      "replay",
      "settings",
      "journal",
      "development",
    ])
      assert.ok(contents.includes(`(docs/${page}.md)`), `docs/${page}.md in the contents`);
  });

  test("turning surfaces on names the three places; picking a backend names its setting, variable and flags", () => {
    const on = section(README, "Turn the surfaces on");
    for (const place of ['"tools"', "PI_CODE_EXECUTION_TOOLS", "--code-tools"]) assert.ok(on.includes(place), place);
    const backend = section(README, "Pick a backend");
    for (const name of ['"backend"', "PI_CODE_EXECUTION_BACKEND", "--sandbox", "--ssh"])
      assert.ok(backend.includes(name), name);
    assert.match(section(README, "Update and uninstall"), /pi remove /);
  });

  test("every relative link in the README and docs/ reaches a file, and a heading when it names one", () => {
    const slug = (h: string) =>
      h
        .trim()
        .toLowerCase()
        .replace(/[^\w\- ]/g, "")
        .replace(/ /g, "-");
    const headings = (text: string) =>
      new Set([...text.replace(/```[\s\S]*?```/g, "").matchAll(/^#+ (.+)$/gm)].map((m) => slug(m[1])));
    const broken: string[] = [];
    for (const [name, text] of DOCS) {
      for (const [, link] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(link)) continue;
        const [path, anchor] = link.split("#");
        const target = path ? normalize(join(dirname(join(ROOT, name)), path)) : join(ROOT, name);
        if (!existsSync(target)) broken.push(`${name}: ${link} (no such file)`);
        else if (anchor && target.endsWith(".md") && !headings(readFileSync(target, "utf8")).has(anchor))
          broken.push(`${name}: ${link} (no such heading)`);
      }
    }
    assert.deepEqual(broken, []);
  });

  test("docs/settings.md names every setting's variable and PI_CODE_EXECUTION_BACKEND, each variable once in its table", () => {
    const settings = readFileSync(join(ROOT, "docs", "settings.md"), "utf8");
    for (const spec of SETTING_KEYS) assert.ok(settings.includes(`\`${spec.env}\``), spec.env);
    const env = settings.slice(settings.indexOf("\n## Environment variables\n"));
    const rows = [...env.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]);
    assert.ok(rows.includes("PI_CODE_EXECUTION_BACKEND"));
    assert.deepEqual(rows, [...new Set(rows)], "no variable twice");
  });

  test("a Python example that uses asyncio imports it", () => {
    for (const [name, text] of DOCS) {
      for (const [, code] of text.matchAll(/```python[^\n]*\n([\s\S]*?)```/g)) {
        if (/\basyncio\./.test(code)) assert.match(code, /^import asyncio/m, `${name}: ${code.slice(0, 80)}`);
      }
    }
  });
});
