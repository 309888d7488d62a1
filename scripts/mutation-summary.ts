// Summarises Stryker's JSON reports (reports/stryker/<group>.json) for docs/reliability.md: the score per group and
// in total, and every surviving (or uncovered) mutant with its place and replacement.
// `node scripts/mutation-summary.ts [group...]`
import { existsSync, readFileSync, statSync } from "node:fs";

interface Mutant {
  id: string;
  mutatorName: string;
  replacement?: string;
  status: string;
  location: { start: { line: number; column: number }; end: { line: number; column: number } };
}
interface Report {
  files: Record<string, { source: string; mutants: Mutant[] }>;
}

const DETECTED = new Set(["Killed", "Timeout"]);
const UNDETECTED = new Set(["Survived", "NoCoverage"]);
const groups = process.argv.slice(2);
let detected = 0;
let undetected = 0;
const rows: string[] = [];
const survivors: string[] = [];
for (const group of groups) {
  const path = `reports/stryker/${group}.json`;
  if (!existsSync(path)) {
    rows.push(`| ${group} | (no report) | | | |`);
    continue;
  }
  const report = JSON.parse(readFileSync(path, "utf8")) as Report;
  // A re-test of the undetected mutants (`npm run mutate -- --retest`) overrides their entries.
  const retestPath = `reports/stryker/${group}.retest.json`;
  if (existsSync(retestPath) && statSync(retestPath).mtimeMs > statSync(path).mtimeMs) {
    const retest = JSON.parse(readFileSync(retestPath, "utf8")) as Report;
    const key = (m: Mutant) =>
      `${JSON.stringify(m.location)}:${m.mutatorName}:${m.replacement ?? ""}`;
    for (const [file, { mutants }] of Object.entries(retest.files)) {
      const now = new Map(mutants.map((m) => [key(m), m.status]));
      for (const m of report.files[file]?.mutants ?? []) m.status = now.get(key(m)) ?? m.status;
    }
  }
  const count: Record<string, number> = {};
  for (const [file, { source, mutants }] of Object.entries(report.files)) {
    const lines = source.split("\n");
    for (const m of mutants) {
      count[m.status] = (count[m.status] ?? 0) + 1;
      if (!UNDETECTED.has(m.status)) continue;
      const { line, column } = m.location.start;
      const original = lines[line - 1]?.trim().slice(0, 90) ?? "";
      survivors.push(
        `| ${file}:${line}:${column} | ${m.mutatorName} | \`${(m.replacement ?? "").replace(/\s+/g, " ").slice(0, 60).replace(/\|/g, "\\|")}\` | \`${original.replace(/\|/g, "\\|")}\` | ${m.status} |`,
      );
    }
  }
  const d = [...DETECTED].reduce((n, s) => n + (count[s] ?? 0), 0);
  const u = [...UNDETECTED].reduce((n, s) => n + (count[s] ?? 0), 0);
  detected += d;
  undetected += u;
  const other = Object.entries(count)
    .filter(([s]) => !DETECTED.has(s) && !UNDETECTED.has(s))
    .map(([s, n]) => `${n} ${s}`)
    .join(", ");
  rows.push(`| ${group} | ${d + u} | ${d} | ${u} | ${((100 * d) / Math.max(1, d + u)).toFixed(1)}% | ${other} |`);
}
console.log("| group | mutants (valid) | detected | undetected | score | not counted |");
console.log("|---|---|---|---|---|---|");
for (const r of rows) console.log(r);
console.log(
  `| total | ${detected + undetected} | ${detected} | ${undetected} | ${((100 * detected) / Math.max(1, detected + undetected)).toFixed(1)}% | |`,
);
console.log("\n| where | mutator | replacement | original line | status |\n|---|---|---|---|---|");
for (const s of survivors) console.log(s);
