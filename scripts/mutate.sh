#!/usr/bin/env bash
# Mutation testing, on demand (not in CI): `npm run mutate [group...]` (default: every group in stryker.config.mjs,
# one Stryker run each, incremental), then the summary table (scripts/mutation-summary.ts) for docs/reliability.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
groups=("$@")
if [ ${#groups[@]} -eq 0 ]; then
  mapfile -t groups < <(node -e 'import("./stryker.config.mjs").then((m) => console.log(Object.keys(m.GROUPS).join("\n")))')
fi
mkdir -p reports/stryker
for g in "${groups[@]}"; do
  echo "== mutation group $g"
  MUTATE_GROUP="$g" npx stryker run stryker.config.mjs 2>&1 | tee "reports/stryker/$g.log"
done
node scripts/mutation-summary.ts "${groups[@]}"
