#!/usr/bin/env bash
# Runs the whole test suite with the project's own Node 22 (run scripts/setup.sh once first).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
if ! command -v node >/dev/null || [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
  echo "Node 22 missing: run scripts/setup.sh first" >&2
  exit 1
fi
npx tsc -p tsconfig.json
# state-coverage.ts records which tests enter which machine states (the inspector's "tests that cover it").
exec node --import ./test/helpers/state-coverage.ts --test --test-concurrency=2 --test-timeout=120000 "$@" 'test/**/*.test.ts'
