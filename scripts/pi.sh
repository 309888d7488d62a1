#!/usr/bin/env bash
# Launches Pi (the project's pinned version, on the project's Node 22) with this extension loaded, setting the
# checkout up first when needed (scripts/setup.sh: a quick no-op once done). `--demo [--keep]` runs the offline demo
# instead (scripts/demo.sh: a scripted model, no API key).
#   bash scripts/pi.sh [pi flags]      e.g. --code-tools code_execution,python,eval,exec or --code-inspect
#   bash scripts/pi.sh --demo [--keep]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
for arg in "$@"; do
  if [ "$arg" = --demo ]; then
    rest=()
    for a in "$@"; do [ "$a" = --demo ] || rest+=("$a"); done
    exec bash "$root/scripts/demo.sh" "${rest[@]}"
  fi
done
bash "$root/scripts/setup.sh" --quiet
source "$root/scripts/env.sh"
exec "$root/node_modules/.bin/pi" -e "$root/extension/pi-code-supervisor/index.ts" "$@"
