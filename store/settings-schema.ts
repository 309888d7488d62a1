// The settings files' JSON Schemas, one per file, built with typebox from the key table (store/setting-keys.ts: each
// key's schema): `schema.json` for the global file and `schema.project.json` for a project's, which has no boundary
// key. The same schemas check the files when they are loaded (`checkFile`, through typebox's compiled validator) and
// are written out by scripts/settings-schema.ts (test/store/settings-schema.test.ts checks that the shipped files are
// these), so what an editor flags and what Pi ignores cannot drift apart.
import { Type, type TSchema } from "typebox";
import { Compile } from "typebox/compile";
import { Value } from "typebox/value";
import { didYouMean } from "../lib/closest.ts";
import { boundaryOf, SETTING_KEYS, type KeySpec } from "./setting-keys.ts";

export type SettingsFile = "global" | "project";

export const SCHEMA_FILES: Record<SettingsFile, string> = { global: "schema.json", project: "schema.project.json" };

/** Where the shipped schemas are published (settings files name them in `$schema`). */
export const SCHEMA_URL = "https://raw.githubusercontent.com/pi-code-supervisor/pi-code-supervisor/main/";

const TITLES: Record<SettingsFile, string> = {
  global: "pi-code-supervisor settings: the global file, <Pi's agent directory>/pi-code-execution/settings.json",
  project: "pi-code-supervisor settings: a project's file, <project>/.pi/pi-code-execution/settings.json",
};

/** The keys a file may set: all of them globally; a project's file never sets a boundary key. */
export function keysOf(file: SettingsFile): KeySpec[] {
  return SETTING_KEYS.filter((spec) => file === "global" || boundaryOf(spec) !== true);
}

/** One key's schema: its spec's, with its default and description. */
function keySchema(spec: KeySpec, file: SettingsFile, descriptions: ReadonlyMap<string, string>): TSchema {
  const notes = [descriptions.get(spec.key)];
  const boundary = boundaryOf(spec);
  if (boundary === true) notes.push("Read only from the global file, flags and the environment, never from a project.");
  if (boundary === "lower" && file === "project") notes.push("A project may only tighten it (lower, or off).");
  const description = notes
    .filter(Boolean)
    .map((n) => n!.replace(/\.$/, ""))
    .join(". ");
  return {
    ...spec.schema,
    ...(spec.default !== undefined ? { default: spec.default } : {}),
    ...(description ? { description } : {}),
  } as TSchema;
}

/** The schema of one settings file: nested objects as the dotted keys say, no other key (a typo is flagged). The
 * descriptions only annotate it (scripts/settings-schema.ts passes docs/settings.md's); what it accepts is the same. */
export function settingsSchema(file: SettingsFile, descriptions: ReadonlyMap<string, string> = new Map()): TSchema {
  const properties: Record<string, TSchema> = {
    $schema: Type.Optional(
      Type.String({ description: "This schema, for editors", errorMessage: "must be a string (this schema's URL)" }),
    ),
  };
  const groups = new Map<string, Record<string, TSchema>>();
  for (const spec of keysOf(file)) {
    const [top, inner] = spec.key.split(".");
    const schema = Type.Optional(keySchema(spec, file, descriptions));
    if (inner === undefined) properties[top] = schema;
    else {
      // A placeholder keeps the key table's order; the group's object replaces it below.
      if (!groups.has(top)) properties[top] = Type.Object({});
      groups.set(top, { ...groups.get(top), [inner]: schema });
    }
  }
  for (const [top, inner] of groups)
    properties[top] = Type.Optional(
      Type.Object(inner, {
        additionalProperties: false,
        errorMessage: `must be an object with only the keys ${Object.keys(inner).join(", ")}`,
      }),
    );
  return Type.Object(properties, {
    $schema: "http://json-schema.org/draft-07/schema#",
    $id: SCHEMA_URL + SCHEMA_FILES[file],
    title: TITLES[file],
    description: "Every key, its default and its environment variable: docs/settings.md.",
    additionalProperties: false,
  });
}

/** The schema as JSON: typebox's own markers (`~optional`, ...) are not JSON Schema and are left out. */
export function schemaJson(schema: TSchema): string {
  return `${JSON.stringify(schema, (key, value) => (key.startsWith("~") ? undefined : value), 2)}\n`;
}

/** A value checked with its key's schema: the value to use, or what was expected. `unknown`: a name outside a fixed
 * set (a typo, most likely), which loading also says at start-up. */
export type Verdict = { ok: true; value: unknown } | { ok: false; why: string; unknown?: true };

/** The names of a fixed set (`enum`), if the schema is one. */
function namesOf(schema: TSchema | undefined): string[] | undefined {
  const names = (schema as { enum?: unknown[] } | undefined)?.enum;
  return Array.isArray(names) && names.every((n) => typeof n === "string") ? (names as string[]) : undefined;
}

/** Checks one value with its key's schema; the failure says what the schema's `errorMessage` says, and for a name
 * outside a fixed set, the closest known one. A list of names (`tools`) with a name it does not know still applies:
 * its reader skips such a name, and loading warns about it with its guess (store/settings.ts). */
export function checkValue(schema: TSchema, raw: unknown): Verdict {
  if (accepts(schema, raw)) return { ok: true, value: raw };
  const why = (schema as { errorMessage?: string }).errorMessage ?? "is not a valid value";
  const names = namesOf(schema);
  if (names && typeof raw === "string") return { ok: false, why: `${why}${didYouMean(raw, names)}`, unknown: true };
  const items = (schema as { items?: TSchema }).items;
  if (namesOf(items) && Array.isArray(raw) && raw.every((item) => typeof item === "string"))
    return { ok: true, value: raw };
  return { ok: false, why };
}

/** Value.Check as a plain boolean (as a type guard it would leave `raw` typed `never` after a refusal). */
const accepts = (schema: TSchema, value: unknown): boolean => Value.Check(schema, value);

/** What a settings file says, by its schema. */
export interface FileCheck {
  /** Each key of the file's schema that the file sets (dotted), with its value and verdict; a group that is not an
   * object (`"sandbox": 1`) is here under its own name. */
  values: Map<string, { raw: unknown; verdict: Verdict }>;
  /** Keys no settings file has, each with the known keys beside it (for a guess). */
  unknown: { key: string; known: string[] }[];
  /** Keys of the global file that this file may not set (a project's boundary keys), dotted. */
  elsewhere: string[];
}

const validators = new Map<SettingsFile, ReturnType<typeof Compile>>();
const schemas = new Map<SettingsFile, TSchema>();

function schemaOf(file: SettingsFile): TSchema {
  let schema = schemas.get(file);
  if (!schema) schemas.set(file, (schema = settingsSchema(file)));
  return schema;
}

/** Checks a settings file (a JSON object) with its file's schema. The whole file is checked first (typebox's compiled
 * validator); when that fails, each key the file sets is checked with its own part of the same schema, so that a bad
 * value is ignored alone and the others apply. */
export function checkFile(file: SettingsFile, data: Record<string, unknown>): FileCheck {
  let validator = validators.get(file);
  if (!validator) validators.set(file, (validator = Compile(schemaOf(file))));
  const valid = validator.Check(data);
  const out: FileCheck = { values: new Map(), unknown: [], elsewhere: [] };
  walk(schemaOf(file), schemaOf("global"), data, "");
  return out;

  /** `own`: this file's schema at this level (absent where it has no such group); `all`: the global file's. */
  function walk(own: TSchema | undefined, all: TSchema, data: Record<string, unknown>, prefix: string): void {
    const ownKeys = (own as { properties?: Record<string, TSchema> } | undefined)?.properties ?? {};
    const allKeys = (all as { properties: Record<string, TSchema> }).properties;
    for (const [name, raw] of Object.entries(data)) {
      const key = prefix + name;
      if (!Object.hasOwn(allKeys, name)) {
        const known = Object.keys(allKeys).filter((k) => !k.startsWith("$"));
        out.unknown.push({ key, known: known.map((k) => prefix + k) });
      } else if (isObject(raw) && (allKeys[name] as { type?: string }).type === "object")
        walk(Object.hasOwn(ownKeys, name) ? ownKeys[name] : undefined, allKeys[name], raw, `${key}.`);
      else if (!Object.hasOwn(ownKeys, name)) out.elsewhere.push(key);
      else out.values.set(key, { raw, verdict: valid ? { ok: true, value: raw } : checkValue(ownKeys[name], raw) });
    }
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The key descriptions of docs/settings.md's "Keys" table (`| \`key\` | default | variable | meaning |`); a row
 * may name several keys (`eval.py`, `eval.js`; `remote.port / user / identityFile`). Links and backticks dropped. */
export function keyDescriptions(settingsDoc: string): Map<string, string> {
  const out = new Map<string, string>();
  const start = settingsDoc.indexOf("\n## Keys\n");
  if (start < 0) return out;
  const end = settingsDoc.indexOf("\n## ", start + 1);
  for (const line of settingsDoc.slice(start, end < 0 ? undefined : end).split("\n")) {
    const cells = line.split(/(?<!\\)\|/).map((c) => c.trim());
    if (cells.length < 6 || !cells[1].startsWith("`")) continue;
    const meaning = cells[4]
      .replace(/\[([^\]]+)\]\([^)]+\)/g, "$1")
      .replace(/`/g, "")
      .replace(/\\\|/g, "|");
    for (const [, named] of cells[1].matchAll(/`([^`]+)`/g)) {
      const [first, ...more] = named.split(" / ");
      const prefix = first.includes(".") ? first.slice(0, first.lastIndexOf(".") + 1) : "";
      for (const key of [first, ...more.map((m) => prefix + m)]) out.set(key, meaning);
    }
  }
  return out;
}
