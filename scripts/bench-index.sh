#!/usr/bin/env bash
# bench-index.sh — indexing time of a session file, this build against another one.
#
#   scripts/bench-index.sh FILE.jsonl OTHER_SESSIONFS [RUNS]
#
# Runs `sessionfs check --json FILE` RUNS times (default 9) with each binary, taking
# turns so that the machine's load falls on both alike, and prints the median of the
# `indexMs` each reports (the time `Session::open` took: read, parse, index, link) and
# their ratio. The binary of this build is target/release/sessionfs (`cargo build
# --release` first). Typical use: the 100k-entry Pi fixture
# (scripts/make-large-fixture.sh) against main's build, to see that a change to the
# index costs Pi nothing.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 FILE.jsonl OTHER_SESSIONFS [RUNS]" >&2; exit 2; }
FILE=$1
OTHER=$2
RUNS=${3:-9}
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
THIS="$REPO/target/release/sessionfs"
[ -x "$THIS" ] || { echo "build first: cargo build --release" >&2; exit 2; }
index_ms() { "$1" check --json "$FILE" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["indexMs"])'; }
# One warm-up each: the file is in the page cache for both.
index_ms "$THIS" >/dev/null
index_ms "$OTHER" >/dev/null
a=(); b=()
for _ in $(seq "$RUNS"); do
  a+=("$(index_ms "$THIS")")
  b+=("$(index_ms "$OTHER")")
done
python3 - "$FILE" "$RUNS" "${a[*]}" "${b[*]}" <<'PY'
import os, statistics, sys
f, runs, a, b = sys.argv[1], int(sys.argv[2]), [float(x) for x in sys.argv[3].split()], [float(x) for x in sys.argv[4].split()]
size = os.path.getsize(f)
ma, mb = statistics.median(a), statistics.median(b)
print("%s: %.1f MB, %d runs each, taking turns" % (f, size / 1e6, runs))
print("  this build : median %8.1f ms  (%.2f GB/s)  min %.1f max %.1f" % (ma, size / ma / 1e6, min(a), max(a)))
print("  other build: median %8.1f ms  (%.2f GB/s)  min %.1f max %.1f" % (mb, size / mb / 1e6, min(b), max(b)))
print("  ratio this/other: %.3f" % (ma / mb))
PY
