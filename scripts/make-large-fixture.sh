#!/usr/bin/env bash
# make-large-fixture.sh OUT.jsonl — regenerate the 100k-entry "large" session
# (about 98 MB, too big to commit) with Pi's own SessionManager:
#   node pi-oracle.mjs gen OUT --pi earendil --entries 100000 --seed 3 --branches 150
# Same parameters as shared/pi-oracle/make-fixtures.sh. Deterministic: expect
# 98,007,762 bytes, 100,004 lines, sha256 d9cc9e6a0499239b… (0.73.1 and 0.81.1 agree).
# Oracle: $PI_ORACLE_DIR or <repo>/../shared/pi-oracle, copied to a temp dir (npm ci if
# it has no node_modules; needs network then). Client: $PI_ORACLE_PKG (default earendil).
# Takes ~5 s and ~0.5 GB RAM.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT.jsonl" >&2; exit 2; }
OUT="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
source "$(dirname "${BASH_SOURCE[0]}")/oracle-env.sh"
(cd "$ORACLE" && node pi-oracle.mjs gen "$OUT" --pi "${PI_ORACLE_PKG:-earendil}" --entries 100000 --seed 3 --branches 150) >&2
sha256sum "$OUT"
