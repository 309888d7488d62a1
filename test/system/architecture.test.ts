// The folders are the design: this test reads the import graph of the source folders (static imports, re-exports
// and dynamic `import()`, parsed with the TypeScript compiler) and fails on an arrow the design forbids. The rules
// are the table below; a change of the design edits one line of it. The tests' folders mirror the source's, checked
// here too. One file, past 400 lines: the rules, their checker and the bad files that prove each rule are one table
// read three ways.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, test } from "node:test";
import ts from "typescript";

/** The extension only reads the store: every write (a script, an output, an image, eval's files, the journal, a
 * settings file moved, where the agent directory is) is asked of the host through host/index.ts (host/artifacts.ts,
 * host/displays.ts, host/journal-link.ts, host/settings-files.ts, host/create.ts), which decides when. So of store/,
 * extension/ imports types, and values only from this list of reads (paths, loading and paging what was saved, the
 * settings as read, digests computed in memory): a name not listed is refused, so a new write cannot slip in (a new
 * read is added here). A module not listed gives types only. Aliases count by the exported name. */
const STORE_READS: Record<string, readonly string[]> = {
  "store/agent-dir.ts": ["agentDir", "configDirName"],
  "store/artifact-fs.ts": ["ArtifactUnavailableError", "PAGE_BYTES"],
  "store/artifacts.ts": ["emittedTranscript", "outputRoot", "readOutputPage"],
  "store/legacy-artifacts.ts": [
    "legacySourcesWithId",
    "loadLegacySource",
    "matchesLegacySource",
    "readLegacyOutputPage",
  ],
  "store/settings.ts": [
    "execEnabled",
    "globalSettingsPath",
    "projectSettingsPath",
    "SETTING_KEYS",
    "SettingsStore",
    "SURFACES",
    "TRUST_HINT",
  ],
  "store/sources.ts": ["loadSource", "pageOf", "readSourcePage", "sourceIdOf", "sourceRoot"],
};

/** Nor does the extension write files past the store: of Node's file system (`node:fs`, `node:fs/promises`), it
 * imports these reads only. */
const FS_READS = [
  "access",
  "constants",
  "existsSync",
  "lstat",
  "lstatSync",
  "readFile",
  "readFileSync",
  "stat",
  "statSync",
];

/** What each folder may import. `folders`: project folders (a path such as `host/index.ts` allows that file only);
 * `packages`: npm packages (`*`: any) and whether `node:` modules are allowed; `typesOnly`: folders whose imports
 * must be `import type`. lib/ holds helpers without project dependencies: every layer but machines/ may import it, and it
 * imports nothing of the project (of npm, the TOML parser that reads PEP 723 metadata, lib/pep723.ts). */
const RULES: Record<string, Rule> = {
  machines: { folders: ["machines"], packages: ["xstate"], node: false, pure: true },
  actors: { deny: ["host", "store", "extension", "inspector"] },
  store: { deny: ["extension", "host", "inspector", "actors"] },
  record: { deny: ["extension", "host", "inspector"] },
  inspector: { deny: ["extension", "host", "actors", "store"] },
  extension: {
    folders: ["extension", "host/index.ts", "store", "lib"],
    typesOnly: ["machines"],
    valuesOnly: { store: [], ...STORE_READS, "node:fs": FS_READS },
  },
  host: { deny: ["extension"] },
  lib: { folders: ["lib"], packages: ["smol-toml"], node: true },
};

/** The extension's tool surfaces, one folder each: none imports another's files. What two surfaces share lives in a
 * folder that serves them all (`SERVING`), which imports no surface; the extension's root files (registration and
 * wiring) may import any. */
const SURFACES = ["code-execution", "python", "eval", "shell"].map((s) => `extension/${s}`);
const SERVING = ["extension/shared", "extension/commands"];
/** Every folder of extension/: a new one must be named here, as a surface or not, so no surface escapes the rule. */
const EXTENSION_FOLDERS = [...SURFACES, ...SERVING, "extension/pi-code-supervisor"];

/** Inside actors/: the floors every job stands on, bottom first (the process-group registry, the process port and its
 * backends, the interpreters). A floor imports only the floors below it; any other folder is a job (calls, deps,
 * prepare, runner, shell: each an actor's effects), which imports floors and never another job (what two jobs share
 * moves down to a floor or lib/, or the host passes it in). */
const ACTOR_FLOORS = ["registry", "process", "interpreter"];

/** Pi's packages: only the extension (and bin/, the CLI) import them; everything below is handed what it needs. */
const PI_SCOPE = "@earendil-works/";

interface Rule {
  /** Allowed project folders (when given, anything else is forbidden). */
  folders?: string[];
  /** Forbidden project folders. */
  deny?: string[];
  /** Folders that may be imported for types only (`import type`, `export type`). */
  typesOnly?: string[];
  /** Modules (a project file or folder, or a `node:` module) of which only the named values may be imported, each
   * import naming them (types are free); the most specific key applies: a file's own list, else its folder's. */
  valuesOnly?: Record<string, readonly string[]>;
  /** Allowed npm packages (absent: any). */
  packages?: string[];
  /** Whether `node:` modules may be imported (absent: yes). */
  node?: boolean;
  /** No clock, timer or randomness: `Date.now()`, `new Date()`, `performance`, `Math.random`, timers, `process`. */
  pure?: boolean;
}

const ROOT = resolve(import.meta.dirname, "../..");
const SOURCE_FOLDERS = Object.keys(RULES);

interface Import {
  specifier: string;
  typeOnly: boolean;
  line: number;
  /** The exported names it takes, each type-only or not; undefined when it takes the module unnamed (`import *`,
   * `export *`, a bare or dynamic import). A default import is `default`. */
  names?: { name: string; typeOnly: boolean }[];
}

/** Every import of a source text: static imports and re-exports (type-only or not) and dynamic `import()`. */
function importsOf(path: string, text: string): { imports: Import[]; impure: { what: string; line: number }[] } {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const imports: Import[] = [];
  const impure: { what: string; line: number }[] = [];
  const line = (n: ts.Node) => source.getLineAndCharacterOfPosition(n.getStart(source)).line + 1;
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const named = clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings : undefined;
      const typeOnly = Boolean(
        clause &&
        (clause.isTypeOnly ||
          (!clause.name &&
            named !== undefined &&
            named.elements.length > 0 &&
            named.elements.every((e) => e.isTypeOnly))),
      );
      const names =
        clause && !(clause.namedBindings && ts.isNamespaceImport(clause.namedBindings))
          ? [
              ...(clause.name ? [{ name: "default", typeOnly: clause.isTypeOnly }] : []),
              ...(named?.elements ?? []).map((e) => ({
                name: (e.propertyName ?? e.name).text,
                typeOnly: clause.isTypeOnly || e.isTypeOnly,
              })),
            ]
          : undefined;
      imports.push({ specifier: node.moduleSpecifier.text, typeOnly, line: line(node), ...(names ? { names } : {}) });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const named = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause : undefined;
      const typeOnly = node.isTypeOnly || (named !== undefined && named.elements.every((e) => e.isTypeOnly));
      const names = named?.elements.map((e) => ({
        name: (e.propertyName ?? e.name).text,
        typeOnly: node.isTypeOnly || e.isTypeOnly,
      }));
      imports.push({ specifier: node.moduleSpecifier.text, typeOnly, line: line(node), ...(names ? { names } : {}) });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      imports.push({ specifier: specifierOf(text, node.arguments[0]), typeOnly: false, line: line(node) });
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      imports.push({ specifier: node.argument.literal.text, typeOnly: true, line: line(node) });
    }
    const clock = clockOf(node);
    if (clock) impure.push({ what: clock, line: line(node) });
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { imports, impure };
}

/** A dynamic import's module: a string, or a constant holding one (`const name = "pkg"; import(name)`). */
function specifierOf(text: string, arg: ts.Expression | undefined): string {
  if (arg && ts.isStringLiteralLike(arg)) return arg.text;
  const constant = arg && ts.isIdentifier(arg) ? new RegExp(`const ${arg.text} = "([^"]+)";`).exec(text) : null;
  return constant ? constant[1]! : "<computed>";
}

const TIMERS = new Set(["setTimeout", "setInterval", "setImmediate", "performance", "process"]);

/** A read of a clock, a timer, randomness or the process, if `node` is one. */
function clockOf(node: ts.Node): string | undefined {
  if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression)) {
    const what = `${node.expression.text}.${node.name.text}`;
    if (what === "Date.now" || what === "Math.random") return what;
  }
  if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === "Date") {
    if (!node.arguments?.length) return "new Date()";
  }
  if (ts.isIdentifier(node) && TIMERS.has(node.text)) {
    const parent = node.parent;
    // A property named like a timer (`x.process`, `{ process: 1 }`) is not the global.
    const isName =
      (ts.isPropertyAccessExpression(parent) && parent.name === node) ||
      ((ts.isPropertyAssignment(parent) || ts.isPropertySignature(parent) || ts.isMethodDeclaration(parent)) &&
        parent.name === node);
    if (!isName) return node.text;
  }
  return undefined;
}

/** The project folder (or file) an import of `from` reaches, or the package it names. */
function target(
  from: string,
  specifier: string,
): { kind: "project"; path: string } | { kind: "package"; name: string } {
  if (specifier.startsWith("."))
    return { kind: "project", path: relative(ROOT, resolve(dirname(resolve(ROOT, from)), specifier)) };
  const parts = specifier.split("/");
  return { kind: "package", name: specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]! };
}

const within = (path: string, folder: string) => path === folder || path.startsWith(`${folder}/`);

/** The forbidden arrows among `files` (path relative to the root -> text), as readable lines. */
export function violations(files: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [path, text] of files) {
    const folder = path.split("/")[0]!;
    const rule = RULES[folder];
    if (!rule) continue;
    const { imports, impure } = importsOf(path, text);
    for (const { specifier, typeOnly, line, names } of imports) {
      const where = `${path}:${line} imports ${specifier}`;
      const t = target(path, specifier);
      const refused = typeOnly ? undefined : refusedValues(rule, t.kind === "project" ? t.path : t.name, names);
      if (refused) out.push(`${where}: ${refused}`);
      if (t.kind === "package") {
        if (t.name.startsWith(PI_SCOPE) && folder !== "extension") {
          out.push(`${where}: Pi's packages are imported by extension/ only (hand what Pi knows down)`);
        } else if (t.name.startsWith("node:")) {
          if (rule.node === false) out.push(`${where}: ${folder}/ may not use node: modules`);
        } else if (specifier === "<computed>") {
          out.push(`${where}: imports must name their module`);
        } else if (rule.packages && !rule.packages.includes(t.name)) {
          out.push(`${where}: ${folder}/ may import ${rule.packages.join(", ") || "no package"} only`);
        }
        continue;
      }
      const surface = SURFACES.find((s) => within(path, s));
      const reached = SURFACES.find((s) => within(t.path, s));
      if (reached && surface && reached !== surface) {
        out.push(
          `${where}: ${surface}/ may not import another surface's files (${reached}/); shared ones go to extension/shared/`,
        );
        continue;
      }
      const serving = SERVING.find((s) => within(path, s));
      if (reached && serving) {
        out.push(`${where}: ${serving}/ serves every surface and may not import one (${reached}/)`);
        continue;
      }
      if (folder === "actors" && within(t.path, folder)) {
        const problem = actorArrow(path.split("/")[1]!, t.path.split("/")[1]!);
        if (problem) out.push(`${where}: ${problem}`);
        continue;
      }
      if (within(t.path, folder)) continue;
      if (rule.deny?.some((d) => within(t.path, d))) {
        out.push(`${where}: ${folder}/ may not import ${t.path.split("/")[0]}/`);
      } else if (rule.typesOnly?.some((d) => within(t.path, d))) {
        if (!typeOnly) out.push(`${where}: ${folder}/ may import ${t.path.split("/")[0]}/ for types only`);
      } else if (rule.folders && !rule.folders.some((d) => within(t.path, d))) {
        out.push(`${where}: ${folder}/ may import ${[...rule.folders, ...(rule.typesOnly ?? [])].join(", ")} only`);
      }
    }
    if (rule.pure)
      for (const { what, line } of impure) out.push(`${path}:${line} uses ${what}: ${folder}/ reads no clock`);
  }
  return out;
}

/** Why the values an import takes of a `valuesOnly` module are refused, if they are. */
function refusedValues(
  rule: Rule,
  module: string,
  names: { name: string; typeOnly: boolean }[] | undefined,
): string | undefined {
  const key = Object.keys(rule.valuesOnly ?? {})
    .filter((k) => module === k || within(module, k))
    .sort((a, b) => b.length - a.length)[0];
  if (key === undefined) return undefined;
  const allowed = rule.valuesOnly![key]!;
  const what = module.startsWith("node:")
    ? "writes no files itself"
    : "only reads the store (writes go through the host)";
  if (!names) return `the extension ${what}: name what it imports (reads: ${allowed.join(", ") || "none, types only"})`;
  const bad = names.filter((n) => !n.typeOnly && !allowed.includes(n.name)).map((n) => n.name);
  if (!bad.length) return undefined;
  return `the extension ${what}: ${bad.join(", ")} ${bad.length > 1 ? "are" : "is"} not among its reads of ${module} (${allowed.join(", ") || "none, types only"})`;
}

/** What is wrong with an import from `actors/<from>/` into `actors/<to>/`, if anything. */
function actorArrow(from: string, to: string): string | undefined {
  if (from === to) return undefined;
  const floor = ACTOR_FLOORS.indexOf(to);
  if (floor < 0) return `actors/${from}/ may not import another job (actors/${to}/)`;
  const own = ACTOR_FLOORS.indexOf(from);
  if (own >= 0 && own < floor) return `actors/${from}/ is a floor below actors/${to}/`;
  return undefined;
}

function sourceFiles(): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (/\.(ts|js)$/.test(entry.name)) files.set(path, readFileSync(join(ROOT, path), "utf8"));
    }
  };
  for (const folder of SOURCE_FOLDERS) walk(folder);
  return files;
}

/** Test folders that mirror no source folder: tests that cross every floor on purpose, named for what they check
 * (`cli` is bin/'s, named for what a user runs). Any other folder under test/ is a source folder's path. */
const CROSS_TEST_FOLDERS = ["cli", "memory", "security", "system"];

/** Where each test file (a path relative to the root) stands against the layout: in a folder under test/ that says
 * what it tests, the path of a source folder (`test/actors/process/` for actors/process/) or a cross folder. */
export function misplacedTests(files: string[], isSourceFolder: (path: string) => boolean): string[] {
  const out: string[] = [];
  for (const file of files) {
    const folder = dirname(file);
    if (folder === "test") {
      out.push(`${file}: a test lives in a folder that says what it tests (test/<source folder>/ or test/system/ ...)`);
      continue;
    }
    const under = relative("test", folder);
    if (CROSS_TEST_FOLDERS.includes(under.split("/")[0]!) || isSourceFolder(under)) continue;
    out.push(
      `${file}: test/${under}/ mirrors no source folder (${under}/) and is not one of ${CROSS_TEST_FOLDERS.join(", ")}`,
    );
  }
  return out;
}

/** Test files that share a file name: the index of the states each test entered (test/helpers/state-coverage.ts, the
 * inspector's "tests that cover it") keys a file's part by its name and titles a test `<name> › <test>`, so two of a
 * name would overwrite each other's part and read as one file. */
export function sharedNames(files: string[]): string[] {
  const byName = new Map<string, string[]>();
  for (const f of files) {
    const name = f.slice(f.lastIndexOf("/") + 1);
    byName.set(name, [...(byName.get(name) ?? []), f]);
  }
  return [...byName].filter(([, same]) => same.length > 1).map(([name, same]) => `${name}: ${same.join(", ")}`);
}

/** Every test file of the checkout, relative to the root. */
function testFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".test.ts")) files.push(path);
    }
  };
  walk("test");
  return files;
}

/** Actor ids are built and read back in machines/actor-ids.ts alone (the page imports it too): an id's prefix written
 * into a template, concatenated, or matched with `startsWith` anywhere else is a second copy of that logic. */
const ID_KINDS = "run|session|spare|tool|exec|wake";
const ID_LITERAL = new RegExp(
  [
    `[\`"'](?:${ID_KINDS}):\\$\\{`,
    `["'\`](?:${ID_KINDS}):["'\`]\\s*\\+`,
    `startsWith\\(\\s*["'\`](?:${ID_KINDS}):`,
  ].join("|"),
);
export const idLiterals = (files: Map<string, string>): string[] =>
  offendingLines(files, "machines/actor-ids.ts", (line) =>
    ID_LITERAL.test(line) ? ["builds or reads an actor id itself (machines/actor-ids.ts)"] : [],
  );

/** Every process group is stopped as its kind declares (actors/registry/shutdown.ts `SHUTDOWN`): a grace written at
 * the call is a second place that decides escalation. registry.ts, the one implementation, passes a spec on. */
const STOP_CALL = /\b(?:stopGroup|stopTracked)\(\s*[^,()]+(?:\([^()]*\))?\s*,\s*([^)]*)\)/g;
export const undeclaredShutdowns = (files: Map<string, string>): string[] =>
  offendingLines(files, "actors/registry/registry.ts", (line) =>
    [...line.matchAll(STOP_CALL)]
      .map((m) => m[1]!.trim())
      .filter((grace) => !grace.startsWith("SHUTDOWN."))
      .map((grace) => `stops a group with its own grace (${grace}): name its kind in SHUTDOWN`),
  );

/** One concept per file, not a line cap: a file past 400 lines says in its header (its first 30 lines) why it is
 * whole, with the words "past 400 lines". Test files (`*.test.ts`) are exempt: one per machine or source file, a
 * describe per state, their length follows what they test. */
export const LONG_FILE = 400;
export const unexplainedLengths = (files: Map<string, string>): string[] =>
  [...files]
    .filter(([path]) => !path.endsWith(".test.ts"))
    .map(([path, text]) => [path, text.replace(/\n$/, "").split("\n")] as const)
    .filter(([, lines]) => lines.length > LONG_FILE && !/past 400 lines/i.test(lines.slice(0, 30).join("\n")))
    .map(([path, lines]) => `${path}: ${lines.length} lines, and its header does not say why it is one file`);

/** Every file of the package's code, not only the floors': the runtimes, benches, scripts, bin and test helpers. */
function codeFiles(): Map<string, string> {
  const files = sourceFiles();
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (/\.(ts|js|mjs|py|sh)$/.test(entry.name)) files.set(path, readFileSync(join(ROOT, path), "utf8"));
    }
  };
  for (const folder of ["runtime-py", "runtime-js", "bench", "scripts", "bin", "test/helpers", "machines"])
    if (isSourceFolder(folder)) walk(folder);
  return files;
}

/** Each line of every source file but `owner` (the one place allowed to) that breaks a rule: `path:line why`. */
function offendingLines(files: Map<string, string>, owner: string, why: (line: string) => string[]): string[] {
  const out: string[] = [];
  for (const [path, text] of files) {
    if (path === owner) continue;
    text.split("\n").forEach((line, i) => out.push(...why(line).map((w) => `${path}:${i + 1} ${w}`)));
  }
  return out;
}

const isSourceFolder = (path: string) => existsSync(join(ROOT, path)) && statSync(join(ROOT, path)).isDirectory();

describe("the tests' layout", () => {
  test("every test lives in a folder named for the source folder it tests, or for what it checks across them; no two share a name", () => {
    const files = testFiles();
    assert.ok(files.length > 100, `read the tests (${files.length} files)`);
    assert.deepEqual(misplacedTests(files, isSourceFolder), []);
    assert.deepEqual(sharedNames(files), []);
  });

  test("a test directly under test/, in a folder that mirrors nothing, or sharing a name, is caught", () => {
    const found = misplacedTests(
      [
        "test/loose.test.ts",
        "test/misc/a.test.ts",
        "test/actors/nojob/b.test.ts",
        "test/host/c.test.ts",
        "test/extension/shell/d.test.ts",
        "test/security/e.test.ts",
        "test/machines/f.test.ts",
      ],
      isSourceFolder,
    );
    assert.equal(found.length, 3, found.join("\n"));
    assert.match(found[0]!, /^test\/loose\.test\.ts: a test lives in a folder that says what it tests/);
    assert.match(found[1]!, /^test\/misc\/a\.test\.ts: test\/misc\/ mirrors no source folder/);
    assert.match(found[2]!, /^test\/actors\/nojob\/b\.test\.ts: test\/actors\/nojob\/ mirrors no source folder/);
    assert.deepEqual(
      sharedNames(["test/host/render.test.ts", "test/lib/a.test.ts", "test/extension/shell/render.test.ts"]),
      ["render.test.ts: test/host/render.test.ts, test/extension/shell/render.test.ts"],
    );
  });
});

describe("architecture", () => {
  test("no source file imports across a forbidden arrow", () => {
    const files = sourceFiles();
    assert.ok(files.size > 60, `read the source folders (${files.size} files)`);
    assert.deepEqual(violations(files), []);
  });

  test("actor ids are built and read only in machines/actor-ids.ts", () => {
    assert.deepEqual(idLiterals(sourceFiles()), []);
    const bad = new Map<string, string>([
      ["host/a.ts", "const id = `run:${runId}`;\nconst ok = runActorId(runId);"],
      ["inspector/page/a.js", 'if (id.startsWith("session:")) show();\nconst s = "exec:" + n;'],
      ["machines/actor-ids.ts", "export const runActorId = (runId) => `run:${runId}`;"],
      ["record/a.ts", "// a comment naming `run:<id>` and `session:<name>` is no copy"],
    ]);
    assert.deepEqual(idLiterals(bad), [
      "host/a.ts:1 builds or reads an actor id itself (machines/actor-ids.ts)",
      "inspector/page/a.js:1 builds or reads an actor id itself (machines/actor-ids.ts)",
      "inspector/page/a.js:2 builds or reads an actor id itself (machines/actor-ids.ts)",
    ]);
  });

  test("every process group is stopped as its kind declares in actors/registry/shutdown.ts", () => {
    assert.deepEqual(undeclaredShutdowns(sourceFiles()), []);
    const bad = new Map<string, string>([
      ["host/a.ts", "await stopGroup(pgid, 1000);\nvoid stopTracked(h.pid, SHUTDOWN.shell);"],
      ["actors/x/a.ts", "void stopTracked(handle.pid, 0);\nvoid stopGroup(p.pid, SHUTDOWN.runner(deps.killMs));"],
      ["actors/x/b.ts", "void stopGroup(child.pid(), { graceMs: 5 });"],
    ]);
    assert.deepEqual(undeclaredShutdowns(bad), [
      "host/a.ts:1 stops a group with its own grace (1000): name its kind in SHUTDOWN",
      "actors/x/a.ts:1 stops a group with its own grace (0): name its kind in SHUTDOWN",
      "actors/x/b.ts:1 stops a group with its own grace ({ graceMs: 5 }): name its kind in SHUTDOWN",
    ]);
  });

  test("a file past 400 lines says in its header why it is one file", () => {
    const files = codeFiles();
    assert.ok(
      [...files.keys()].some((p) => p.endsWith(".py")),
      "the runtimes were read",
    );
    assert.deepEqual(unexplainedLengths(files), []);
    const long = (header: string) => `${header}\n${"x;\n".repeat(LONG_FILE)}`;
    const bad = new Map<string, string>([
      ["host/a.ts", long("// The door.")],
      ["host/b.ts", long("// The door.\n// Past 400 lines, one concept: one class.")],
      ["runtime-py/c.py", long('"""The runner."""')],
      ["test/machines/d.test.ts", long("// A describe per state.")],
      ["host/e.ts", "// Short.\n"],
    ]);
    assert.deepEqual(unexplainedLengths(bad), [
      `host/a.ts: ${LONG_FILE + 1} lines, and its header does not say why it is one file`,
      `runtime-py/c.py: ${LONG_FILE + 1} lines, and its header does not say why it is one file`,
    ]);
  });

  test("every folder of the extension is a surface or serves them", () => {
    const folders = [...sourceFiles().keys()]
      .filter((p) => p.startsWith("extension/") && p.split("/").length > 2)
      .map((p) => p.split("/").slice(0, 2).join("/"));
    assert.deepEqual([...new Set(folders)].sort(), [...EXTENSION_FOLDERS].sort());
  });

  test("each rule catches a deliberately bad file", () => {
    const bad = new Map<string, string>([
      ["machines/a.ts", 'import { readFileSync } from "node:fs";\nimport { ok } from "../lib/result.ts";'],
      ["machines/b.ts", 'import { nanoid } from "nanoid";\nexport const t = () => Date.now() + Math.random();'],
      ["machines/c.ts", "export const d = new Date();\nsetTimeout(() => {}, 1);\nconst e = performance.now();"],
      ["actors/x/a.ts", 'import { SupervisorHost } from "../../host/host.ts";\nimport "../../store/journal.ts";'],
      ["actors/x/b.ts", 'export const later = () => import("../../extension/index.ts");'],
      ["actors/x/c.ts", 'const where = "../../inspector/server.ts";\nexport const late = () => import(where);'],
      ["store/a.ts", 'import type { CodeEnvironment } from "../extension/environment.ts";'],
      ["record/a.ts", 'export { x } from "../extension/session-status.ts";'],
      ["inspector/a.ts", 'import { SupervisorHost } from "../host/index.ts";\nimport "../extension/index.ts";'],
      ["extension/a.ts", 'import { createRunnerLogic } from "../actors/runner/runner.ts";'],
      [
        "extension/b.ts",
        'import { Recorder } from "../record/recorder.ts";\nimport { tapCommands } from "../host/command-taps.ts";',
      ],
      ["extension/c.ts", 'import { runMachine } from "../machines/run.ts";'],
      ["extension/python/a.ts", 'import { jsBackend } from "../eval/js-backend.ts";'],
      [
        "extension/shell/a.ts",
        'import type { LiveDetails } from "../code-execution/render.ts";\nexport const later = () => import("../python/result.ts");',
      ],
      ["extension/eval/a.ts", 'export { EXEC_TOOLS } from "../shell/register.ts";'],
      ["extension/shared/a.ts", 'import { resultText } from "../code-execution/result.ts";'],
      ["extension/commands/a.ts", 'import { ExecStatus } from "../shell/status.ts";'],
      ["lib/a.ts", 'import { placeholder } from "../machines/placeholder.ts";'],
      ["store/b.ts", 'import { countNewlines } from "../actors/process/output.ts";'],
      ["host/a.ts", 'import { getAgentDir } from "@earendil-works/pi-coding-agent";'],
      ["record/b.ts", 'import type { Theme } from "@earendil-works/pi-tui";'],
      [
        "actors/deps/a.ts",
        'import { knownVersion } from "../interpreter/interpreter.ts";\nimport "../prepare/prepare.ts";',
      ],
      ["actors/process/a.ts", 'import type { Job } from "../deps/installer.ts";'],
      ["actors/registry/a.ts", 'import { localOperations } from "../process/operations.ts";'],
      ["actors/interpreter/a.ts", 'import { getAgentDir } from "@earendil-works/pi-coding-agent";'],
      // The extension reads the store; a write (under any alias, re-exported, unnamed or late) is the host's.
      [
        "extension/f.ts",
        'import { loadSource, saveSource as keep } from "../store/sources.ts";\nimport { Journal } from "../store/journal.ts";',
      ],
      [
        "extension/code-execution/f.ts",
        'export { readOutputPage, writeOutputArtifact } from "../../store/artifacts.ts";\nimport * as fs from "../../store/artifact-fs.ts";',
      ],
      [
        "extension/shared/f.ts",
        'import "../../store/images.ts";\nexport const later = () => import("../../store/sources.ts");',
      ],
      [
        "extension/eval/f.ts",
        'import { writeFile } from "node:fs/promises";\nimport { mkdirSync, statSync } from "node:fs";',
      ],
    ]);
    const found = violations(bad);
    const expect = [
      "machines/a.ts:1 imports node:fs",
      "machines/a.ts:2 imports ../lib/result.ts",
      "machines/b.ts:1 imports nanoid",
      "machines/b.ts:2 uses Date.now",
      "machines/b.ts:2 uses Math.random",
      "machines/c.ts:1 uses new Date()",
      "machines/c.ts:2 uses setTimeout",
      "machines/c.ts:3 uses performance",
      "actors/x/a.ts:1 imports ../../host/host.ts",
      "actors/x/a.ts:2 imports ../../store/journal.ts",
      "actors/x/b.ts:1 imports ../../extension/index.ts",
      "actors/x/c.ts:2 imports ../../inspector/server.ts",
      "store/a.ts:1 imports ../extension/environment.ts",
      "record/a.ts:1 imports ../extension/session-status.ts",
      "inspector/a.ts:1 imports ../host/index.ts",
      "inspector/a.ts:2 imports ../extension/index.ts",
      "extension/a.ts:1 imports ../actors/runner/runner.ts",
      "extension/b.ts:1 imports ../record/recorder.ts",
      "extension/b.ts:2 imports ../host/command-taps.ts",
      "extension/c.ts:1 imports ../machines/run.ts",
      "extension/python/a.ts:1 imports ../eval/js-backend.ts",
      "extension/shell/a.ts:1 imports ../code-execution/render.ts",
      "extension/shell/a.ts:2 imports ../python/result.ts",
      "extension/eval/a.ts:1 imports ../shell/register.ts",
      "extension/shared/a.ts:1 imports ../code-execution/result.ts",
      "extension/commands/a.ts:1 imports ../shell/status.ts",
      "lib/a.ts:1 imports ../machines/placeholder.ts",
      "store/b.ts:1 imports ../actors/process/output.ts",
      "host/a.ts:1 imports @earendil-works/pi-coding-agent",
      "record/b.ts:1 imports @earendil-works/pi-tui",
      "actors/deps/a.ts:2 imports ../prepare/prepare.ts",
      "actors/process/a.ts:1 imports ../deps/installer.ts",
      "actors/registry/a.ts:1 imports ../process/operations.ts",
      "actors/interpreter/a.ts:1 imports @earendil-works/pi-coding-agent",
      "extension/f.ts:1 imports ../store/sources.ts: the extension only reads the store (writes go through the host): saveSource is not",
      "extension/f.ts:2 imports ../store/journal.ts: the extension only reads the store (writes go through the host): Journal is not",
      "extension/code-execution/f.ts:1 imports ../../store/artifacts.ts: the extension only reads the store (writes go through the host): writeOutputArtifact is not",
      "extension/code-execution/f.ts:2 imports ../../store/artifact-fs.ts: the extension only reads the store (writes go through the host): name what it imports",
      "extension/shared/f.ts:1 imports ../../store/images.ts: the extension only reads the store (writes go through the host): name what it imports (reads: none, types only)",
      "extension/shared/f.ts:2 imports ../../store/sources.ts: the extension only reads the store (writes go through the host): name what it imports",
      "extension/eval/f.ts:1 imports node:fs/promises: the extension writes no files itself: writeFile is not",
      "extension/eval/f.ts:2 imports node:fs: the extension writes no files itself: mkdirSync is not",
    ];
    for (const e of expect)
      assert.ok(
        found.some((f) => f.startsWith(e)),
        `${e}\n  found:\n  ${found.join("\n  ")}`,
      );
    assert.equal(found.length, expect.length, found.join("\n"));
    // What is allowed stays allowed: a machine's own imports, the door, store, lib, machine types.
    const good = new Map<string, string>([
      [
        "machines/d.ts",
        'import { setup } from "xstate";\nimport type { X } from "./events.ts";\nexport const iso = (ms: number) => new Date(ms);',
      ],
      [
        "extension/d.ts",
        'import { SupervisorHost } from "../host/index.ts";\nimport type { RunOutcome } from "../machines/events.ts";\nimport { ok } from "../lib/result.ts";\nimport { loadSource } from "../store/sources.ts";',
      ],
      // The store's reads, and any of its types (a write's too); Node's file reads.
      [
        "extension/g.ts",
        'import { type SourcePage, readSourcePage, sourceIdOf as idOf } from "../store/sources.ts";\nimport type { Journal } from "../store/journal.ts";\nimport { type OutputArtifact, readOutputPage } from "../store/artifacts.ts";\nexport type { RunRecord } from "../store/journal.ts";\nimport { readFile } from "node:fs/promises";\nimport { existsSync } from "node:fs";\nimport { join } from "node:path";',
      ],
      // A surface reaches its own files, what is shared, the extension's root and the door; the root reaches surfaces.
      [
        "extension/eval/d.ts",
        'import { evalRenderers } from "../shared/notebook/render.ts";\nimport type { CodeEnvironment } from "../environment.ts";\nimport { LANGUAGE_NAMES } from "./backend.ts";\nimport { show } from "../commands/show.ts";\nimport type { RunResult } from "../../host/index.ts";',
      ],
      [
        "extension/e.ts",
        'import { registerExec } from "./shell/register.ts";\nimport { jsBackend } from "./eval/js-backend.ts";',
      ],
      [
        "actors/y/a.ts",
        'import type { RunnerFact } from "../../machines/events.ts";\nimport { fail } from "../../lib/result.ts";',
      ],
      // A job stands on the floors; a floor on the floors below it; Pi is the extension's.
      [
        "actors/shell/a.ts",
        'import { registerGroup } from "../registry/registry.ts";\nimport type { ProcessOperations } from "../process/operations.ts";\nimport { findVenv } from "../interpreter/interpreter.ts";',
      ],
      ["actors/interpreter/b.ts", 'import { findProgram } from "../process/children.ts";'],
      [
        "actors/runner/b.ts",
        'import type { Probe } from "../interpreter/interpreter.ts";\nimport { RUNNER_PATH } from "../process/runtimes.ts";',
      ],
      ["actors/process/b.ts", 'import { stopGroup } from "../registry/registry.ts";'],
      ["extension/e.ts", 'import { getAgentDir, type ExtensionAPI } from "@earendil-works/pi-coding-agent";'],
    ]);
    assert.deepEqual(violations(good), []);
  });
});
