#!/usr/bin/env bash
# On-demand memory benchmark. Usage: bash bench/memory.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
exec node --expose-gc bench/memory.ts "$@"
