// The settings files' JSON Schemas (schema.json, schema.project.json) are what loading checks a file with: the shipped
// files are the generated ones; every key is there with its default and what it expects in words, a project's schema
// has no boundary key; for every key and a spread of values of every kind, the shipped schema accepts a value exactly
// when loading applies it without a warning, and the warning names the file, the key, what was expected and what was
// found; a variable's text is read and checked by the same schema; unknown keys, a group that is not an object and a
// project's boundary key are said once each; the settings examples of the docs name a schema that accepts them.
import "../helpers/agent-dir.ts";
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, test } from "node:test";
import type { TSchema } from "typebox";
import { Value } from "typebox/value";
import { schemaTexts } from "../../scripts/settings-schema.ts";
import {
  boundaryOf,
  globalSettingsPath,
  loadSettings,
  projectSettingsPath,
  SETTING_KEYS,
  type ResolvedSettings,
} from "../../store/settings.ts";
import { SCHEMA_FILES, SCHEMA_URL, settingsSchema, type SettingsFile } from "../../store/settings-schema.ts";
import { tempDir } from "../helpers/temp-dir.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const global = settingsSchema("global");
const project = settingsSchema("project");
/** The shipped files, as an editor reads them. */
const shipped: Record<SettingsFile, TSchema> = {
  global: JSON.parse(readFileSync(join(ROOT, SCHEMA_FILES.global), "utf8")),
  project: JSON.parse(readFileSync(join(ROOT, SCHEMA_FILES.project), "utf8")),
};

/** The schema of one dotted key inside a file's schema, if it is there. */
function at(schema: TSchema, key: string): TSchema | undefined {
  let node: any = schema;
  for (const part of key.split(".")) node = node?.properties?.[part];
  return node;
}

/** `{ "a.b": 1 }` as `{ a: { b: 1 } }`, the shape of a settings file. */
function nested(dotted: string, value: unknown): Record<string, unknown> {
  const [top, inner] = dotted.split(".");
  return inner === undefined ? { [top]: value } : { [top]: { [inner]: value } };
}

// Values of every kind, good for some key and bad for others.
const SAMPLES: unknown[] = [
  ...[-1, 0, 0.5, 1, 16, 32, 60, 1000, 1024, 3600, 65_535, 65_536, 86_400, 86_401, 2 ** 20, 2 ** 31, 2 ** 45],
  ...["", " ", "x", "off", "/tmp/j.sqlite", " /tmp/j.sqlite", "local", "sandbox", "remote", "LOCAL", "sandbx"],
  ...["ssh", "kubectl", "provider/model", "nomodel", "a /b", "notebook", "..", "my.session", "a".repeat(65), "1"],
  ...[true, false, null, {}, [], [""], [".venv", "venv"], ["../x"], ["a/b"], ["."], ["/abs", "/b"], ["rel"]],
  ...[["HF_TOKEN"], ["1BAD"], ["python", "eval"], ["pyhton"], ["-o", "ConnectTimeout=5"], [1], { a: 1 }],
];

function dirs() {
  const root = tempDir("pcs-schema-");
  const cwd = join(root, "project");
  mkdirSync(cwd);
  process.env.PI_CODING_AGENT_DIR = join(root, "agent");
  return { cwd, env: { PI_CODING_AGENT_DIR: process.env.PI_CODING_AGENT_DIR } as NodeJS.ProcessEnv };
}

function write(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, typeof value === "string" ? value : JSON.stringify(value));
}

describe("settings schemas", () => {
  test("the shipped schema.json and schema.project.json are the generated ones (node scripts/settings-schema.ts)", () => {
    const generated = schemaTexts();
    for (const file of ["global", "project"] as const)
      assert.equal(readFileSync(join(ROOT, SCHEMA_FILES[file]), "utf8"), generated[file], SCHEMA_FILES[file]);
    assert.equal(JSON.parse(generated.global).$id, `${SCHEMA_URL}schema.json`);
  });

  test("every key is in the global schema with its default and what it expects; a project's has all but the boundary keys", () => {
    for (const spec of SETTING_KEYS) {
      const node = at(global, spec.key) as any;
      assert.ok(node, spec.key);
      if (spec.default !== undefined) assert.deepEqual(node.default, spec.default, spec.key);
      if (spec.default !== undefined) assert.ok(Value.Check(node, spec.default), `${spec.key}'s default`);
      assert.match(node.errorMessage ?? "", /^must be /, `${spec.key} says what it expects`);
      assert.equal(at(project, spec.key) !== undefined, boundaryOf(spec) !== true, `${spec.key} in the project schema`);
    }
    for (const group of ["venvDiscovery", "sandbox", "remote", "limits", "eval"])
      assert.match((at(global, group) as any).errorMessage, /^must be an object with only the keys /, group);
    assert.equal(at(project, "sandbox"), undefined, "no group of boundary keys in a project's schema");
    assert.equal(at(project, "remote"), undefined);
  });

  test("whole files: typos and misplaced keys fail the schema; a project's boundary key fails only its schema", () => {
    const good = {
      $schema: `${SCHEMA_URL}schema.json`,
      tools: ["code_execution", "python"],
      defaultTimeout: 120,
      sandbox: { network: true, writable: ["/srv/data"] },
      limits: { memoryMiB: 2048 },
    };
    assert.ok(Value.Check(global, good));
    assert.ok(!Value.Check(global, { defaultTimout: 120 }), "a top-level typo");
    assert.ok(!Value.Check(global, { sandbox: { netwrok: true } }), "a nested typo");
    assert.ok(!Value.Check(global, { backend: "sandbx" }), "a backend that does not exist");
    assert.ok(!Value.Check(global, { tools: ["pyhton"] }), "a surface that does not exist");
    assert.ok(!Value.Check(project, { backend: "sandbox" }), "a project cannot choose the backend");
    assert.ok(!Value.Check(project, { tools: ["exec"] }), "nor the tools");
    assert.ok(Value.Check(project, { $schema: `${SCHEMA_URL}schema.project.json`, limits: { memoryMiB: 512 } }));
  });
});

describe("loading checks each file with its schema", () => {
  test("for every key and sample, the shipped schema accepts the value exactly when loading applies it silently", () => {
    const { cwd, env } = dirs();
    const mismatches: string[] = [];
    let refused = 0;
    for (const file of ["global", "project"] as const) {
      const path = file === "global" ? globalSettingsPath() : projectSettingsPath(cwd);
      write(globalSettingsPath(), {});
      for (const spec of SETTING_KEYS) {
        for (const value of SAMPLES) {
          // The other timeout leaves room for any valid value (a default above the maximum is lowered, with a warning).
          const room = { defaultTimeout: { maxTimeout: 86_400 }, maxTimeout: { defaultTimeout: 1 } }[
            spec.key as string
          ];
          const data = { $schema: SCHEMA_URL + SCHEMA_FILES[file], ...room, ...nested(spec.key, value) };
          write(path, data);
          const s = loadSettings(cwd, env, { trusted: true });
          const accepted = Value.Check(shipped[file], data);
          const applied = s.warnings.length === 0 && s.sources[spec.key].source === file;
          if (accepted !== applied)
            mismatches.push(`${file} ${spec.key}=${JSON.stringify(value)}: schema ${accepted}, ${s.warnings}`);
          if (accepted) continue;
          refused++;
          // The one warning names the file, the key, what was expected and what was found.
          const expected = (at(shipped.global, spec.key) as any).errorMessage as string;
          const said = s.warnings.join("\n");
          const prefix = `${file} settings (${path}): `;
          const named =
            said.startsWith(`${prefix}${spec.key} ${expected}`) ||
            said.startsWith(`${prefix}${spec.key} is a boundary setting`) ||
            said.startsWith(`${prefix}tools: unknown surface`);
          if (!named || (said.includes(" must be ") && !said.includes(`(got ${JSON.stringify(value)})`)))
            mismatches.push(`${file} ${spec.key}=${JSON.stringify(value)}: ${said}`);
        }
      }
    }
    assert.deepEqual(mismatches, []);
    assert.ok(refused > 1000, `not vacuous: ${refused} refused`);
  });

  test("a refused value falls back to the layer below, with the fallback named", () => {
    const { cwd, env } = dirs();
    write(globalSettingsPath(), { killGraceMs: 700, backend: "sandbox" });
    write(projectSettingsPath(cwd), { killGraceMs: 1.5, notebookSession: "..", completionModels: { smol: "nomodel" } });
    const s = loadSettings(cwd, env, { trusted: true });
    assert.equal(s.values.killGraceMs, 700);
    assert.equal(s.values.notebookSession, "notebook");
    assert.equal(s.values.completionModels.smol, undefined);
    const file = projectSettingsPath(cwd);
    assert.deepEqual(s.warnings, [
      `project settings (${file}): killGraceMs must be an integer of milliseconds from 0 to 60000 (got 1.5); using 700 from global`,
      `project settings (${file}): notebookSession must be a session name (1-64 of A-Z a-z 0-9 . _ -, not only dots) (got ".."); using "notebook" from default`,
      `project settings (${file}): completionModels.smol must be a model as "provider/model-id" (got "nomodel"); using the built-in default from default`,
    ]);
  });

  test("unknown keys at each level, a group that is not an object, $schema that is no string: one warning each", () => {
    const { cwd, env } = dirs();
    const file = globalSettingsPath();
    write(file, {
      $schema: 42,
      venvDiscovery: "yes",
      sandbox: { netwrok: true, network: true },
      limtis: { memoryMiB: 64 },
      inspector: { port: 8123, autoStrat: true },
    });
    const s = loadSettings(cwd, env);
    assert.deepEqual(s.warnings.toSorted(), [
      `global settings (${file}): $schema must be a string (this schema's URL) (got 42); ignored`,
      `global settings (${file}): unknown key "inspector.autoStrat" is ignored; did you mean "inspector.autoStart"?`,
      `global settings (${file}): unknown key "limtis" is ignored; did you mean "limits"?`,
      `global settings (${file}): unknown key "sandbox.netwrok" is ignored; did you mean "sandbox.network"?`,
      `global settings (${file}): venvDiscovery must be an object with only the keys enabled, parentWalk, dirNames (got "yes"); ignored`,
    ]);
    assert.deepEqual(s.unknown.length, 3, "the unknown names are said at start-up too");
    // The good keys beside them apply.
    assert.equal(s.values.sandbox.network, true);
    assert.equal(s.values.inspector.port, 8123);
    assert.equal(s.values.venvDiscovery.enabled, true, "the default");
  });

  test("a project's boundary key is said once, whatever its value or shape; an unknown key there is unknown", () => {
    const { cwd, env } = dirs();
    const file = projectSettingsPath(cwd);
    write(file, { sandbox: "open", remote: { host: 1, hots: "x" }, tools: 5, defaultTimeout: 30 });
    const s = loadSettings(cwd, env, { trusted: true });
    const why = "is a boundary setting and is read only from the global settings, flags or the environment; ignored";
    assert.deepEqual(s.warnings.toSorted(), [
      `project settings (${file}): remote.host ${why}`,
      `project settings (${file}): sandbox ${why}`,
      `project settings (${file}): tools ${why}`,
      `project settings (${file}): unknown key "remote.hots" is ignored; did you mean "remote.host"?`,
    ]);
    assert.deepEqual(s.ignored.map((i) => i.key).toSorted(), ["remote.host", "sandbox", "tools"]);
    assert.equal(s.values.defaultTimeout, 30);
  });

  test("a file is checked as written: text with spaces around is refused, and a fixed-set name in another case too", () => {
    const { cwd, env } = dirs();
    const file = globalSettingsPath();
    write(file, { backend: "Sandbox", journal: " /tmp/j.sqlite", remote: { host: "h " } });
    const s = loadSettings(cwd, env);
    // Not guessed, and not a fall back to local either: where code runs is broken until written as the schema says.
    assert.deepEqual(
      s.broken.map((b) => b.key),
      ["backend", "remote.host"],
    );
    assert.equal(s.values.journal, undefined);
    const said = s.warnings.join("\n");
    assert.match(
      said,
      /backend must be one of local, sandbox, remote.*\(got "Sandbox"\); nothing runs until it is fixed/,
    );
    assert.match(said, /journal must be a file path or "off" \(no spaces around it\) \(got " \/tmp\/j\.sqlite"\)/);
    assert.match(said, /remote\.host must be a non-empty string \(no spaces around it\) \(got "h "\)/);
    // Control: the same values as the schema wants them apply.
    write(file, { backend: "sandbox", journal: "/tmp/j.sqlite", remote: { host: "h" } });
    const right = loadSettings(cwd, env);
    assert.deepEqual(right.warnings, []);
    assert.deepEqual(right.broken, []);
    assert.equal(right.values.backend, "sandbox");
    assert.equal(right.values.remote.host, "h");
  });
});

describe("environment variables are read into values and checked by the same schema", () => {
  const load = (vars: Record<string, string>): ResolvedSettings => {
    const { cwd, env } = dirs();
    return loadSettings(cwd, { ...env, ...vars });
  };

  test("numbers, switches, names in any case, comma, colon and JSON lists", () => {
    const s = load({
      PI_CODE_EXECUTION_KILL_GRACE_MS: " 250 ",
      PI_CODE_EXECUTION_EVAL_JS: "Off",
      PI_CODE_EXECUTION_BACKEND: " Sandbox ",
      PI_CODE_EXECUTION_TOOLS: "Python, eval,python",
      PI_CODE_EXECUTION_SANDBOX_WRITABLE: "/srv/a:/srv/b:/srv/a",
      PI_CODE_EXECUTION_SANDBOX_ENV: "HF_TOKEN, CUDA_VISIBLE_DEVICES",
      PI_CODE_EXECUTION_REMOTE_OPTIONS: '["-o", "ConnectTimeout=5"]',
      PI_CODE_EXECUTION_REMOTE_HOST: " box ",
    });
    assert.deepEqual(s.warnings, []);
    assert.equal(s.values.killGraceMs, 250);
    assert.equal(s.values.eval.js, false);
    assert.equal(s.values.backend, "sandbox");
    assert.deepEqual(s.values.tools, ["python", "eval"]);
    assert.deepEqual(s.values.sandbox.writable, ["/srv/a", "/srv/b"]);
    assert.deepEqual(s.values.sandbox.env, ["HF_TOKEN", "CUDA_VISIBLE_DEVICES"]);
    assert.deepEqual(s.values.remote.options, ["-o", "ConnectTimeout=5"]);
    assert.equal(s.values.remote.host, "box");
    assert.deepEqual(s.sources.backend, { source: "env", where: "PI_CODE_EXECUTION_BACKEND" });
  });

  test("text that is no such value is refused with the key's own words", () => {
    const s = load({
      PI_CODE_EXECUTION_KILL_GRACE_MS: "soon",
      PI_CODE_EXECUTION_EVAL_JS: "maybe",
      PI_CODE_EXECUTION_REMOTE_TRANSPORT: "sssh",
      PI_CODE_EXECUTION_SANDBOX_WRITABLE: "relative:/abs",
      PI_CODE_EXECUTION_REMOTE_ARGV: "sh -c id",
      PI_CODE_EXECUTION_LIMIT_MEMORY_MIB: "1e12",
    });
    assert.deepEqual(s.warnings.toSorted(), [
      'PI_CODE_EXECUTION_EVAL_JS: eval.js must be true or false (got "maybe"); using true from default',
      'PI_CODE_EXECUTION_KILL_GRACE_MS: killGraceMs must be an integer of milliseconds from 0 to 60000 (got "soon"); using 500 from default',
      `PI_CODE_EXECUTION_LIMIT_MEMORY_MIB: limits.memoryMiB must be an integer of MiB from 32 to ${2 ** 30} (got "1e12"); using the built-in default from default`,
      'PI_CODE_EXECUTION_REMOTE_ARGV: remote.argv must be a list of strings (its variable: a JSON list, such as ["-o", "ConnectTimeout=5"]) (got "sh -c id"); nothing runs until it is fixed (where code runs never falls back to another backend)',
      'PI_CODE_EXECUTION_REMOTE_TRANSPORT: remote.transport must be one of ssh, kubectl, docker, podman, command; did you mean "ssh"? (got "sssh"); nothing runs until it is fixed (where code runs never falls back to another backend)',
      'PI_CODE_EXECUTION_SANDBOX_WRITABLE: sandbox.writable must be a list of absolute paths (got "relative:/abs"); nothing runs until it is fixed (where code runs never falls back to another backend)',
    ]);
    assert.equal(s.unknown.length, 1, "the transport's name is an unknown name");
  });
});

describe("the docs' settings examples", () => {
  const files = [
    "README.md",
    ...readdirSync(join(ROOT, "docs")).flatMap((f) => (f.endsWith(".md") ? [`docs/${f}`] : [])),
  ];
  const examples = files.flatMap((file) =>
    [...readFileSync(join(ROOT, file), "utf8").matchAll(/^```json runnable=settings\n([\s\S]*?)^```/gm)].map((m) => ({
      where: file,
      code: m[1],
    })),
  );

  test("each names one of the shipped schemas in $schema, and that schema accepts it", () => {
    assert.ok(examples.length >= 2, `${examples.length} examples`);
    const byUrl = new Map(
      (["global", "project"] as const).map((file) => [SCHEMA_URL + SCHEMA_FILES[file], shipped[file]] as const),
    );
    for (const { where, code } of examples) {
      const data = JSON.parse(code);
      const schema = byUrl.get(data.$schema);
      assert.ok(schema, `${where}: $schema ${data.$schema} is one of ${[...byUrl.keys()].join(", ")}`);
      assert.ok(Value.Check(schema, data), `${where}: ${code}`);
    }
  });
});
