#!/usr/bin/env bash
# On-demand mixed soak (bench/soak.ts): every surface at once through real Pi sessions, local and sandbox, default 30
# minutes. Usage: bash bench/soak-all.sh [--minutes N] [--seed N] [--backends local,sandbox]
# After the soak's own checks, the process-wide spawn server it reported as lingering must be gone within 5 s of the
# soak's exit (it ends with its host process).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
out=$(mktemp)
node --expose-gc bench/soak.ts "$@" | tee "$out"
status=${PIPESTATUS[0]}
pids=$(sed -n 's/^LINGERING //p' "$out")
rm -f "$out"
if [ -n "$pids" ]; then
  for _ in $(seq 50); do
    alive=""
    for p in $pids; do [ -e "/proc/$p" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ] && alive="$alive $p"; done
    [ -z "$alive" ] && break
    sleep 0.1
  done
  if [ -n "$alive" ]; then
    echo "spawn server still alive 5 s after the soak exited:$alive"
    status=1
  else
    echo "spawn server gone after the soak exited"
  fi
fi
exit "$status"
