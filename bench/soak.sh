#!/usr/bin/env bash
# On-demand host-level soak (bench/soak-host.ts): 64 sessions under mixed load (default 600 s). Usage: bash bench/soak.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
exec node bench/soak-host.ts "$@"
