#!/usr/bin/env bash
# Launches Pi (the project's pinned version, on the project's Node 22) with this extension loaded.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/scripts/env.sh"
exec "$root/node_modules/.bin/pi" -e "$root/extension/pi-code-supervisor/index.ts" "$@"
