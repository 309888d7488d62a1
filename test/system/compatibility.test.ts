// docs/compatibility.md is a promise with its evidence: every row names the test that shows it (issue 27). This
// file reads the table and fails on a row whose status is not one of the three words, or whose test file or test
// title does not exist, so the table cannot drift from the suite.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";

const ROOT = resolve(import.meta.dirname, "../..");
const DOC = join(ROOT, "docs", "compatibility.md");

export type Row = { section: string; line: number; feature: string; status: string; tests: string };

/** The rows of every table in the document, each with its section and line. */
export function rowsOf(text: string): Row[] {
  const rows: Row[] = [];
  let section = "";
  for (const [i, line] of text.split("\n").entries()) {
    if (line.startsWith("## ")) section = line.slice(3).trim();
    if (!line.startsWith("|") || /^\|\s*(feature|-+)\s*\|/.test(line)) continue;
    const cells = line
      .slice(1, line.endsWith("|") ? -1 : undefined)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim());
    rows.push({ section, line: i + 1, feature: cells[0], status: cells[1] ?? "", tests: cells[2] ?? "" });
  }
  return rows;
}

/** The titles of every test, describe and it call in a test file (string literals only). */
export function titlesOf(source: string): string[] {
  const titles: string[] = [];
  for (const m of source.matchAll(/\b(?:test|describe|it)(?:\.\w+)?\(\s*(["'`])((?:\\.|(?!\1)[^\\])*)\1/g)) {
    titles.push(m[2].replace(/\\(.)/g, "$1"));
  }
  return titles;
}

/** What is wrong with one row, or [] when it holds. */
export function problemsOf(row: Row, readTest: (file: string) => string | undefined): string[] {
  const where = `docs/compatibility.md:${row.line} (${row.feature})`;
  const problems: string[] = [];
  if (!/^(implemented|differs: \S.*|not applicable: \S.*)$/.test(row.status)) {
    problems.push(`${where}: the status is "${row.status}", not implemented, differs: <why> or not applicable: <why>`);
  }
  if (row.tests === "-") {
    if (!row.status.startsWith("not applicable")) problems.push(`${where}: no test (only a not-applicable row may say -)`);
    return problems;
  }
  const refs = row.tests.split(/\s*;\s*/);
  for (const ref of refs) {
    const m = /^`(test\/[\w./-]+\.test\.ts)`\s*›\s*(.+)$/.exec(ref);
    if (!m) {
      problems.push(`${where}: "${ref}" is not \`test/<file>.test.ts\` › <words of a test's title>`);
      continue;
    }
    const source = readTest(m[1]);
    if (source === undefined) {
      problems.push(`${where}: ${m[1]} does not exist`);
      continue;
    }
    const words = m[2].trim();
    if (!titlesOf(source).some((t) => t.includes(words))) problems.push(`${where}: no test in ${m[1]} is titled "${words}"`);
  }
  return problems;
}

const readTest = (file: string) => (existsSync(join(ROOT, file)) ? readFileSync(join(ROOT, file), "utf8") : undefined);

describe("docs/compatibility.md", () => {
  test("every row has a status and names tests that exist", () => {
    const rows = rowsOf(readFileSync(DOC, "utf8"));
    const problems = rows.flatMap((r) => problemsOf(r, readTest));
    assert.deepEqual(problems, []);
  });

  test("the checker catches a missing file, a missing title, a bad status and a row without a test", () => {
    const doc = [
      "## s",
      "| feature | status | test |",
      "| --- | --- | --- |",
      "| a | implemented | `test/system/compatibility.test.ts` › the checker catches |",
      "| b | implemented | `test/nowhere.test.ts` › anything |",
      "| c | implemented | `test/system/compatibility.test.ts` › no such title here |",
      "| d | done | `test/system/compatibility.test.ts` › the checker catches |",
      "| e | differs: private logs | - |",
      "| f | not applicable: no such thing here | - |",
    ].join("\n");
    const problems = rowsOf(doc).map((r) => problemsOf(r, readTest));
    assert.deepEqual(
      problems.map((p) => p.length),
      [0, 1, 1, 1, 1, 0],
    );
    assert.match(problems[1][0], /test\/nowhere\.test\.ts does not exist/);
    assert.match(problems[2][0], /no test in test\/system\/compatibility\.test\.ts is titled "no such title here"/);
    assert.match(problems[3][0], /the status is "done"/);
    assert.match(problems[4][0], /no test \(only a not-applicable row may say -\)/);
  });
});
