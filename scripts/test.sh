#!/usr/bin/env bash
# Runs every test with the project's own Node 22, setting the checkout up first when needed (scripts/setup.sh: a
# quick no-op once done). Extra arguments go to node --test (e.g. --test-name-pattern).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --quiet
source scripts/env.sh
# Where shell start-up files run `pyenv rehash` (pyenv's `init`), a shell killed in the middle of it leaves pyenv's
# lock behind and every later login shell waits 60 s for it; the shell tests then fail on time. A lock older than a
# minute is stale: it goes.
pyenv_lock="${PYENV_ROOT:-$HOME/.pyenv}/shims/.pyenv-shim"
if [[ -e "$pyenv_lock" && -n "$(find "$pyenv_lock" -mmin +1 2>/dev/null)" ]]; then rm -f "$pyenv_lock"; fi
# A shell the tests kill in the middle of that rehash leaves the lock during the run: each later login shell then
# waits at most this long for it (pyenv's own setting; `pyenv init` hides the rehash's complaint), not 60 s.
export PYENV_REHASH_TIMEOUT="${PYENV_REHASH_TIMEOUT:-2}"
npx tsc -p tsconfig.json
# state-coverage.ts records which tests enter which machine states (the inspector's "tests that cover it").
# The timeout bounds each test and also each test file as a whole: 300 s, so a file of many real Pi sessions (the
# 50-session leak check takes ~2 minutes on a loaded 2-core machine) does not fail for the machine's load.
exec node --import ./test/helpers/state-coverage.ts --test --test-concurrency=2 --test-timeout=300000 "$@" 'test/**/*.test.ts'
