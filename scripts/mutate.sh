#!/usr/bin/env bash
# Mutation testing, on demand (not in CI): `npm run mutate [group...]` (default: every group in stryker.config.mjs,
# one Stryker run each), then the summary table (scripts/mutation-summary.ts) for docs/reliability.md.
# Incremental: a group's mutants are re-tested only where its mutated files changed. The command runner cannot tell
# Stryker which tests changed, so when a group's test files (or the config) change, the group is re-run in full.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
# `--retest`: re-test only the mutants each group's last report left undetected (stryker.config.mjs).
retest=0
if [ "${1:-}" = "--retest" ]; then
  retest=1
  shift
fi
groups=("$@")
if [ ${#groups[@]} -eq 0 ]; then
  mapfile -t groups < <(node -e 'import("./stryker.config.mjs").then((m) => console.log(Object.keys(m.GROUPS).join("\n")))')
fi
mkdir -p reports/stryker
for g in "${groups[@]}"; do
  echo "== mutation group $g"
  tests=$(MUTATE_GROUP="$g" node -e 'import("./stryker.config.mjs").then((m) => console.log(m.GROUPS[process.env.MUTATE_GROUP].tests.join(" ")))')
  # shellcheck disable=SC2086
  if [ "$retest" = 1 ]; then
    MUTATE_GROUP="$g" MUTATE_RETEST=1 npx stryker run stryker.config.mjs 2>&1 | tee "reports/stryker/$g.retest.log"
    continue
  fi
  stamp=$(cat stryker.config.mjs $tests | sha256sum | cut -c1-16)
  force=()
  if [ "$(cat "reports/stryker/$g.tests" 2>/dev/null)" != "$stamp" ]; then force=(--force); fi
  # The stamp names the tests the incremental results were made with, written as the run starts: a run stopped
  # part-way leaves results made with these tests, and the next run with the same tests resumes from them.
  echo "$stamp" > "reports/stryker/$g.tests"
  MUTATE_GROUP="$g" npx stryker run stryker.config.mjs "${force[@]}" 2>&1 | tee "reports/stryker/$g.log"
done
node scripts/mutation-summary.ts "${groups[@]}"
