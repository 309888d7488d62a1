#!/usr/bin/env bash
# The whole suite on a busy machine: every core kept busy by stress-ng (from apt) while scripts/test.sh runs, three
# times in a row by default. A test that passes only on a quiet machine hides a race or a bound not measured against
# a same-run baseline; this is how they are found. Each round's TAP goes to test-artifacts/under-load/round-N.tap,
# and the failing test names are printed at the end. Exits non-zero when any round had a failure.
#
#   bash scripts/test-under-load.sh [--rounds N] [--cpu N] [-- extra node --test arguments]
#
# --cpu defaults to the number of cores (stress-ng --cpu 0 means "one per core"), so the suite shares every core with
# a process that never yields.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3
cpu=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --cpu) cpu="$2"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-under-load: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "test-under-load: --rounds wants a positive number, not '$rounds'" >&2; exit 2; }
[[ "$cpu" =~ ^[0-9]+$ ]] || { echo "test-under-load: --cpu wants a number, not '$cpu'" >&2; exit 2; }
command -v stress-ng >/dev/null || {
  echo "test-under-load: stress-ng is missing: apt-get install -y stress-ng (scripts/setup.sh does, as root)" >&2
  exit 1
}
bash scripts/setup.sh --quiet

out=test-artifacts/under-load
mkdir -p "$out"
stress_pid=""
stop_stress() { [[ -n "$stress_pid" ]] && kill "$stress_pid" 2>/dev/null && wait "$stress_pid" 2>/dev/null; stress_pid=""; }
trap stop_stress EXIT INT TERM

failed_rounds=0
for ((round = 1; round <= rounds; round++)); do
  stress-ng --cpu "$cpu" --quiet >/dev/null 2>&1 &
  stress_pid=$!
  tap="$out/round-$round.tap"
  start=$(date +%s)
  echo "test-under-load: round $round of $rounds (stress-ng --cpu $cpu, pid $stress_pid) -> $tap"
  status=0
  bash scripts/test.sh --test-reporter=tap "$@" >"$tap" 2>&1 || status=$?
  stop_stress
  summary=$(grep -E '^# (tests|pass|fail|skipped) ' "$tap" | tr '\n' ' ')
  echo "test-under-load: round $round: exit $status after $(($(date +%s) - start)) s: $summary"
  if [[ $status -ne 0 ]]; then
    failed_rounds=$((failed_rounds + 1))
    grep -E '^ *not ok ' "$tap" | sed 's/^ */  /' || true
  fi
done
echo "test-under-load: $failed_rounds of $rounds rounds failed"
[[ $failed_rounds -eq 0 ]]
