#!/usr/bin/env bash
# Offline demo (scripts/demo.ts): a real Pi session driven by a scripted model, showing every tool surface once. It
# sets the checkout up first when needed (scripts/setup.sh). Everything it writes (Pi's agent directory with the
# event log and journal, the working directory, temporary files) goes into one temporary folder, removed at the end,
# also on failure or interrupt, unless --keep keeps it (and says where). Also: bash scripts/pi.sh --demo [--keep].
set -euo pipefail
usage="usage: bash scripts/demo.sh [--keep]
  --keep      keep the demo's temporary folder (event log, journal, saved scripts) and print where it is
  -h, --help  this help"
keep=0
for arg in "$@"; do
  case "$arg" in
    --keep) keep=1 ;;
    -h | --help) echo "$usage" && exit 0 ;;
    *) echo "demo.sh: unknown argument '$arg' (see bash scripts/demo.sh --help)" >&2 && exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
bash scripts/setup.sh --quiet
source scripts/env.sh

work="$(mktemp -d "${TMPDIR:-/tmp}/pcs-demo-XXXXXX")"
demo=""
finish() {
  trap '' INT TERM # a second Ctrl-C must not cut the clean-up short
  # The demo stops its sessions' processes on SIGTERM; wait for that before removing their folders.
  if [ -n "$demo" ]; then
    kill -TERM "$demo" 2>/dev/null || true
    wait "$demo" 2>/dev/null || true
  fi
  if [ "$keep" = 1 ]; then
    echo "kept the demo's files in $work" >&2
    find "$work" -path '*/logs/*.jsonl' -exec echo "its event log (for npx pi-code-supervisor replay or inspect): {}" \; >&2
  else
    rm -rf "$work"
  fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The demo's journal and event log go into its folder, not where the user's settings point.
unset PI_CODE_EXECUTION_JOURNAL PI_CODE_EXECUTION_LOG_DIR PI_CODE_EXECUTION_LOG
# In the background, so that a signal to this script runs its traps at once instead of after the demo.
TMPDIR="$work" node scripts/demo.ts &
demo=$!
status=0
wait "$demo" || status=$?
demo=""
exit "$status"
