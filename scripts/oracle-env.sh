# oracle-env.sh — sourced by make-fixtures.sh and make-large-fixture.sh.
# Sets ORACLE to a writable temp copy of pi-oracle (pi-oracle.mjs, pi-edge-cases.mjs,
# package.json, package-lock.json) with both Pi clients installed:
#   source: $PI_ORACLE_DIR, else <repo root>/../shared/pi-oracle
#   node_modules: linked from the source if it has a complete install, else `npm ci`.
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
export PI_ORACLE_DIR="$ORACLE"
