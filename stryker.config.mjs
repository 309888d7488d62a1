// Mutation testing with StrykerJS, on demand (not in CI): `npm run mutate [group...]` (scripts/mutate.sh runs one
// Stryker run per group). Each group mutates one part of the scope and runs only the fast test files that exercise
// it, through a command runner over `node --test` (the command runner cannot pick tests per mutant, so the groups
// do). Results: reports/stryker/<group>.json (mutation-testing-report schema), summarised in docs/reliability.md.
// Incremental: a re-run only tests mutants whose code or tests changed.

/** Test files per group: fast (no Pi session, few real processes), and together covering the group's code. */
export const GROUPS = {
  machines: {
    mutate: [
      "machines/run.ts",
      "machines/run-calls.ts",
      "machines/run-context.ts",
      "machines/run-outcome.ts",
      "machines/session.ts",
      "machines/spare.ts",
      "machines/supervisor.ts",
      "machines/supervisor-context.ts",
      "machines/events.ts",
    ],
    tests: [
      "test/machines/run.test.ts",
      "test/machines/session.test.ts",
      "test/machines/supervisor.test.ts",
      "test/machines/spare.test.ts",
    ],
  },
  "tool-machines": {
    mutate: ["machines/tool-call.ts", "machines/tool-events.ts", "machines/tool-records.ts"],
    tests: ["test/machines/tool-call.test.ts", "test/calls-lifecycle.test.ts"],
  },
  "exec-machines": {
    mutate: ["machines/exec-*.ts"],
    // test/exec-wake-invariant.test.ts (400 generated runs, ~30 s) is left to the suite.
    tests: [
      "test/machines/exec-pool.test.ts",
      "test/machines/exec-session.test.ts",
      "test/machines/exec-wake.test.ts",
      "test/machines/exec-wake-entry.test.ts",
    ],
  },
  output: {
    mutate: ["actors/process/output.ts"],
    tests: ["test/output.test.ts", "test/preview.test.ts"],
  },
  artifacts: {
    mutate: ["store/artifacts.ts", "store/artifact-fs.ts"],
    tests: ["test/artifact-store.test.ts", "test/hostile-artifacts.test.ts"],
    // Pi sessions and the racing process go through the same store functions, far slower.
    skip: "through a Pi session|racing a process",
  },
  calls: {
    mutate: ["actors/calls/*.ts"],
    tests: ["test/calls-lifecycle.test.ts"],
  },
};

const name = process.env.MUTATE_GROUP ?? "output";
const group = GROUPS[name];
if (!group) throw new Error(`unknown MUTATE_GROUP ${name}; one of ${Object.keys(GROUPS).join(", ")}`);

export default {
  mutate: group.mutate,
  testRunner: "command",
  commandRunner: {
    command: `node --test --test-reporter=dot${group.skip ? ` --test-skip-pattern="${group.skip}"` : ""} ${group.tests.join(" ")}`,
  },
  checkers: ["typescript"],
  tsconfigFile: "tsconfig.json",
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  // Two cores: Stryker makes one TypeScript checker process and two test runners of three (the tests wait on
  // processes and files much of the time).
  concurrency: Number(process.env.MUTATE_CONCURRENCY ?? 3),
  // A mutant that makes a test loop forever is a timeout (counted as detected); do not wait long for it.
  timeoutMS: 3000,
  incremental: true,
  incrementalFile: `reports/stryker/${name}.incremental.json`,
  reporters: ["clear-text", "progress-append-only", "json"],
  jsonReporter: { fileName: `reports/stryker/${name}.json` },
  clearTextReporter: { allowColor: false, logTests: false },
  tempDirName: ".stryker-tmp",
  ignorePatterns: [".tools", "reports", "test-artifacts"],
  cleanTempDir: "always",
};
