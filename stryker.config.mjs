// Mutation testing with StrykerJS, on demand (not in CI): `npm run mutate [group...]` (scripts/mutate.sh runs one
// Stryker run per group). Each group mutates one part of the scope and runs only the fast test files that exercise
// it, through a command runner over `node --test` (the command runner cannot pick tests per mutant, so the groups
// do). Results: reports/stryker/<group>.json (mutation-testing-report schema), summarised in docs/reliability.md.
// Incremental: a re-run only tests mutants whose code or tests changed.

import { globSync, readFileSync, writeFileSync } from "node:fs";

/** Test files per group: fast (no Pi session, few real processes), and together covering the group's code. */
export const GROUPS = {
  // One group per machine, each running only its machine's test file: the command runner runs the whole command for
  // every mutant, so a group of all machines ran four files per mutant (measured: ~10 s a mutant on the loaded
  // 2-core machine, over an hour for the group). A machine's mutants are detected by its own tests or not at all.
  "machines-run": {
    mutate: [
      "machines/run.ts",
      "machines/run-calls.ts",
      "machines/run-context.ts",
      "machines/run-outcome.ts",
      "machines/events.ts",
    ],
    tests: ["test/machines/run.test.ts"],
  },
  "machines-session": {
    mutate: ["machines/session.ts"],
    tests: ["test/machines/session.test.ts"],
  },
  "machines-spare": {
    mutate: ["machines/spare.ts", "machines/spare-pool.ts"],
    tests: ["test/machines/spare.test.ts", "test/machines/spare-pool.test.ts"],
  },
  "machines-supervisor": {
    mutate: ["machines/supervisor.ts", "machines/supervisor-context.ts"],
    // The supervisor is the root of every machine test: a fresh run's spare (spare-pool.test.ts), a session's routing,
    // busy refusal, stop and release (session.test.ts) and a fresh run's cancel (run.test.ts) are its code too. Its
    // own file runs first; a mutant it kills costs only that file.
    tests: [
      "test/machines/supervisor.test.ts",
      "test/machines/spare-pool.test.ts",
      "test/machines/session.test.ts",
      "test/machines/run.test.ts",
    ],
  },
  // The runner process's lifecycle (spawn, ready, a run's hand-over, interrupt, stop), the Python and JavaScript
  // runners' alike; the I/O adapter around it (actors/process/runner.ts) is tested with real processes in the suite.
  "machines-runner": {
    mutate: ["machines/runner-process.ts"],
    tests: ["test/machines/runner-process.test.ts"],
  },
  // A notebook call's cells (python and eval): the machine and its adapter, each with its own fast file.
  "notebook-call": {
    mutate: ["machines/notebook-call.ts", "host/notebook-call.ts"],
    tests: ["test/machines/notebook-call.test.ts", "test/host/notebook-call-run.test.ts"],
  },
  // The notebook tools' cells as runs, and how each ends in the model's words. The verdicts' own file first (~1 s:
  // every outcome's words and every request's fields), then Pi sessions for the mutants it leaves: the endings' file
  // (~11 s: killed runtimes, a blocked nested call, timeouts, a cancel, a backend that cannot start), then the
  // surfaces' files (batches with per-cell timeouts, pi-python's no-kill grace, live output, a cancel's signal).
  "notebook-ext": {
    mutate: [
      "extension/shared/notebook/python-cells.ts",
      "extension/eval/js-backend.ts",
      "extension/eval/python-backend.ts",
    ],
    tests: [
      "test/extension/shared/cell-verdicts.test.ts",
      "test/extension/eval/cell-endings.test.ts",
      "test/extension/python/notebook-python.test.ts",
      "test/extension/eval/notebook-eval.test.ts",
      "test/extension/eval/eval-js.test.ts",
      "test/extension/python/notebook-batch.test.ts",
      "test/extension/eval/eval-batch.test.ts",
      "test/extension/python/python-compat.test.ts",
      "test/extension/python/notebook-timeouts.test.ts",
    ],
  },
  "tool-machines": {
    mutate: ["machines/tool-call.ts", "machines/tool-events.ts", "machines/tool-records.ts"],
    tests: [
      "test/machines/tool-records.test.ts",
      "test/machines/tool-call.test.ts",
      "test/actors/calls/calls-lifecycle.test.ts",
    ],
  },
  "exec-machines": {
    mutate: ["machines/exec-*.ts"],
    // test/machines/exec-wake-invariant.test.ts (400 generated runs, ~30 s) is left to the suite.
    tests: [
      "test/machines/exec-pool.test.ts",
      "test/machines/exec-session.test.ts",
      "test/machines/exec-wake.test.ts",
      "test/machines/exec-wake-entry.test.ts",
    ],
  },
  output: {
    mutate: ["lib/run-output.ts"],
    tests: ["test/lib/output.test.ts", "test/extension/code-execution/preview.test.ts"],
  },
  artifacts: {
    mutate: ["store/artifacts.ts", "store/artifact-fs.ts"],
    tests: ["test/store/artifact-store.test.ts", "test/security/hostile-artifacts.test.ts"],
    // Pi sessions and the racing process go through the same store functions, far slower.
    skip: "through a Pi session|racing a process",
  },
  calls: {
    mutate: ["actors/calls/*.ts"],
    tests: ["test/actors/calls/calls-lifecycle.test.ts"],
  },
  // The shell sessions' door in the host. The door's own file (~6 s) runs first; host-level shells with real
  // processes (~21 s: kill escalation, a 5 MiB burst, the 64-session cap) and the commands' route (~2 s) only for the
  // mutants it leaves. The tools' Pi sessions (test/extension/shell/exec-*pi*.test.ts, exec-ui, exec-settings) are left
  // to the suite.
  "exec-host": {
    mutate: ["host/exec.ts", "host/exec-reports.ts", "host/exec-events.ts"],
    tests: ["test/host/exec-door.test.ts", "test/actors/shell/exec-host.test.ts", "test/host/host-direct.test.ts"],
  },
  // The exec tools' results and how Pi's terminal shows them: the envelope's own file (~0.5 s, every field of
  // details, text and structured content) and the renderers' (~0.5 s, every banner, footer and colour) first, then
  // the footer and widgets in a scripted UI (~6 s) and the tools through Pi (~36 s) for the mutants they leave.
  "exec-ext": {
    mutate: ["extension/shell/envelope.ts", "extension/shell/render.ts"],
    tests: [
      "test/extension/shell/exec-envelope.test.ts",
      "test/extension/shell/exec-render.test.ts",
      "test/extension/shell/exec-ui.test.ts",
      "test/extension/shell/exec-pi.test.ts",
    ],
  },
  // The exec tools' pure pieces: parameters, the head+tail window, the model-visible text (~1 s).
  "exec-params": {
    mutate: ["extension/shell/params.ts", "extension/shell/text.ts", "actors/shell/window.ts"],
    tests: ["test/extension/shell/exec-params.test.ts"],
  },
  // The JavaScript runtime's side of the host: its runner kind, and the output order its frames' counts keep
  // (output-order.ts and the part of the process wrapper that holds output for it; the rest of those files is the
  // Python runner's too, tested by its own files).
  "js-host": {
    mutate: [
      "actors/process/output-order.ts",
      { file: "actors/runner/kinds.ts", from: /^export function jsKind/, to: /^}/ },
      { file: "actors/process/operations.ts", from: /const held = settleOutput/, to: /control\.on\("error"/ },
    ],
    tests: ["test/actors/process/output-order.test.ts", "test/actors/runner/js-session.test.ts"],
  },
  // The JavaScript runtime's cell semantics (runner side): the rewrite that keeps a cell's top-level declarations
  // in its context and shows its last value, with its lexer and statement splitter. The reading's and the rewrite's
  // own files (~0.2 s) first, then the runner against real processes (~3 s) for the mutants they leave.
  "js-runtime": {
    mutate: ["runtime-js/cell-rewrite.js", "runtime-js/statements.js", "runtime-js/lexer.js"],
    tests: ["test/runtime-js/js-lexer.test.ts", "test/runtime-js/js-cell.test.ts", "test/runtime-js/js-runner.test.ts"],
  },
};

const name = process.env.MUTATE_GROUP ?? "output";
const group = GROUPS[name];
if (!group) throw new Error(`unknown MUTATE_GROUP ${name}; one of ${Object.keys(GROUPS).join(", ")}`);

// The TypeScript checker checks every mutant against this program: the group's mutated files, its test files and
// what they import, not the whole project (the machines' tests import ~25 files of 265; on the loaded 2 cores the two
// checkers over the whole project took more CPU than the tests, ~8 s a mutant). A mutant that breaks only code
// outside it is then tested rather than counted as a compile error: the score can only get stricter.
// Written here (before Stryker copies the project to its sandbox); gitignored.
writeFileSync(
  "tsconfig.mutate.json",
  `${JSON.stringify({ extends: "./tsconfig.json", include: [...group.mutate.map((m) => m.file ?? m), ...group.tests] }, null, 2)}\n`,
);

// Stryker 10.1's instrumenter places a mutant inside a destructuring declaration's computed key
// (`let { [run.claimed ?? ""]: _taken, ...spares } = c.spares;`) as an if/else around the declaration, so the
// declared names go out of scope and the unmutated code breaks (the dry run fails). Such lines are left out of the
// mutation ranges (today one: machines/spare-pool.ts, `run.claimed ?? ""`), and listed in docs/reliability.md.
const UNINSTRUMENTABLE = /^\s*(let|const|var) \{[^}]*\[[^\]]*(\?\?|\|\||&&|["'`])[^\]]*\]:/;
// A group's `mutate` entry is a glob, or `{ file, from, to }`: the lines of one file from the first that matches
// `from` through the next that matches `to` (a part of a file another runtime shares), found again at each run so the
// range follows edits.
function mutationRanges(entry) {
  const files = typeof entry === "string" ? globSync(entry) : [entry.file];
  return files.flatMap((file) => {
    const lines = readFileSync(file, "utf8").split("\n");
    let first = 1;
    let last = lines.length;
    if (typeof entry !== "string") {
      first = lines.findIndex((line) => entry.from.test(line)) + 1;
      const after = first ? lines.slice(first).findIndex((line) => entry.to.test(line)) : -1;
      if (after < 0) throw new Error(`${file}: no lines from ${entry.from} to ${entry.to}`);
      last = first + 1 + after;
    }
    const skip = lines.flatMap((line, i) =>
      i + 1 >= first && i + 1 <= last && UNINSTRUMENTABLE.test(line) ? [i + 1] : [],
    );
    if (!skip.length && typeof entry === "string") return [file];
    const ranges = [];
    let from = first;
    for (const n of [...skip, last + 1]) {
      if (n > from) ranges.push(`${file}:${from}-${n - 1}`);
      from = n + 1;
    }
    return ranges;
  });
}

// `MUTATE_RETEST=1` (npm run mutate -- --retest <group>): only the mutants the group's last full report left
// undetected, after tests were added. Their new results go to <group>.retest.json and scripts/mutation-summary.ts
// overrides the full report's entries with them (a test added never revives a killed mutant; a full run re-checks).
const retest = process.env.MUTATE_RETEST === "1";
function undetectedRanges() {
  const report = JSON.parse(readFileSync(`reports/stryker/${name}.json`, "utf8"));
  // Whole lines (other mutants on them are re-tested too, harmlessly): column bases differ between the two formats.
  const ranges = Object.entries(report.files).flatMap(([file, { mutants }]) =>
    mutants
      .filter((m) => m.status === "Survived" || m.status === "NoCoverage")
      .map(({ location: { start, end } }) => `${file}:${start.line}-${end.line}`),
  );
  return [...new Set(ranges)];
}

export default {
  mutate: retest ? undetectedRanges() : group.mutate.flatMap(mutationRanges),
  testRunner: "command",
  commandRunner: {
    // Each file run directly (`node file`, in-process, no `--test` child per file: ~25-45% less per mutant,
    // measured), the next only if it passed; node:test exits 1 when a test fails.
    command: group.tests
      .map((file) => `node --test-reporter=dot${group.skip ? ` --test-skip-pattern="${group.skip}"` : ""} ${file}`)
      .join(" && "),
  },
  checkers: ["typescript"],
  tsconfigFile: "tsconfig.mutate.json",
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  // Two cores: Stryker starts two TypeScript checkers and one test runner, then three test runners once every mutant
  // is checked (the tests wait on processes and files much of the time).
  concurrency: Number(process.env.MUTATE_CONCURRENCY ?? 3),
  // A mutant that makes a test loop forever is a timeout (counted as detected). Not shorter: on the loaded shared
  // machine (under nice) one `node --test` of a file that takes 0.5 s alone took over the 3.6 s a 3000 ms allowance
  // gives, and a slow run counted as detected inflates the score (8 of the spare machine's 60 mutants, measured).
  timeoutMS: 10000,
  incremental: !retest,
  incrementalFile: `reports/stryker/${name}.incremental.json`,
  reporters: ["clear-text", "progress-append-only", "json"],
  jsonReporter: { fileName: `reports/stryker/${name}${retest ? ".retest" : ""}.json` },
  clearTextReporter: { allowColor: false, logTests: false },
  tempDirName: ".stryker-tmp",
  ignorePatterns: [".tools", "reports", "test-artifacts"],
  cleanTempDir: "always",
};
