// Writes the settings files' JSON Schemas, schema.json (the global file) and schema.project.json (a project's): the
// schemas Pi checks the files with (store/settings-schema.ts), annotated with docs/settings.md's descriptions. Run
// after changing a key: `source scripts/env.sh && node scripts/settings-schema.ts`; test/store/settings-schema.test.ts
// fails until then.
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  keyDescriptions,
  SCHEMA_FILES,
  schemaJson,
  settingsSchema,
  type SettingsFile,
} from "../store/settings-schema.ts";

const ROOT = resolve(import.meta.dirname, "..");

/** Each schema file's text, as it is shipped. */
export function schemaTexts(): Record<SettingsFile, string> {
  const descriptions = keyDescriptions(readFileSync(join(ROOT, "docs", "settings.md"), "utf8"));
  const text = (file: SettingsFile) => schemaJson(settingsSchema(file, descriptions));
  return { global: text("global"), project: text("project") };
}

if (import.meta.main) {
  for (const [file, text] of Object.entries(schemaTexts()) as [SettingsFile, string][]) {
    writeFileSync(join(ROOT, SCHEMA_FILES[file]), text);
    console.log(`wrote ${SCHEMA_FILES[file]}`);
  }
}
