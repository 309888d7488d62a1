#!/usr/bin/env bash
# On-demand benchmarks (not in CI). --quick for a short run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
exec node bench/run.ts "$@"
