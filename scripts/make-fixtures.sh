#!/usr/bin/env bash
# make-fixtures.sh — regenerate everything under tests/fixtures/ (and, with REAL=1,
# examples/demo.jsonl and the real Pi 1.6 sessions) with Pi's own code.
#
#   scripts/make-fixtures.sh            # sessions, goldens, damaged files (~5 min)
#   REAL=1 scripts/make-fixtures.sh     # also remake the real 1.6 sessions and the demo
#   VERIFY=1 scripts/make-fixtures.sh   # also cross-check goldens against the pi-oracle CLI
#
# Oracle: $PI_ORACLE_DIR or <repo>/../shared/pi-oracle, used through a temp copy
# (see oracle-env.sh; runs `npm ci` there if the source has no node_modules).
# Needs Node 20 (`node`) and, for the real sessions, the Node 22 that Pi 1.6.0's
# package installs (oracle-env.sh sets NODE22).
#
# - The generated sessions (small, medium, ...) are written by Pi 0.81.1's
#   SessionManager (`gen --pi earendil`): they stand for the files older Pi versions
#   wrote, which Pi 1.6.0 reads by its own rules. Deterministic.
# - tour.jsonl: Pi 1.6.0's feature tour (pi-1.6/tour.mjs). Deterministic.
# - real-1.6-*.jsonl and examples/demo.jsonl: real Pi 1.6.0 agents with a scripted
#   model (make-pi16-sessions.mjs, make-example.mjs, pi-1.6/real-session.mjs). Ids are
#   seeded, but timestamps and tool timings move between runs, so they are remade only
#   with REAL=1 (or when missing); the goldens follow whatever is committed.
# - Every golden is Pi 1.6.0's, for every entry; what 0.81.1 and 0.73.1 build
#   differently is kept as a record (golden/pi-*-differences.json).
# - The damaged cases are run with all three clients.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/oracle-env.sh"
SCRIPTS="$REPO_ROOT/scripts"
FIX="$REPO_ROOT/tests/fixtures"
S="$FIX/sessions"
G="$FIX/golden"
D="$FIX/damaged"
DEMO="$REPO_ROOT/examples/demo.jsonl"
mkdir -p "$S" "$G" "$D" "$REPO_ROOT/examples"

oracle() { (cd "$ORACLE" && node pi-oracle.mjs "$@"); }
goldens() { node "$SCRIPTS/pi-goldens.mjs" "$@"; }

echo "== sessions written by Pi 0.81.1" >&2
gen() { oracle gen "$@" --pi earendil >/dev/null; }
gen "$S/small.jsonl"       --entries 30   --seed 1  --branches 3
gen "$S/medium.jsonl"      --entries 2000 --seed 2  --branches 12
gen "$S/legacy-v1.jsonl"   --entries 60   --seed 4  --format v1
gen "$S/legacy-v2.jsonl"   --entries 60   --seed 5  --branches 2 --format v2
gen "$S/bushy.jsonl"       --entries 300  --seed 11 --branches 25
gen "$S/linear.jsonl"      --entries 800  --seed 12 --branches 0
gen "$S/mixed.jsonl"       --entries 150  --seed 13 --branches 8
gen "$S/legacy-v1-b.jsonl" --entries 120  --seed 14 --format v1
gen "$S/legacy-v2-b.jsonl" --entries 120  --seed 15 --branches 4 --format v2
OLD=(small medium legacy-v1 legacy-v2 bushy linear mixed legacy-v1-b legacy-v2-b)

echo "== sessions written by Pi 1.6.0" >&2
(cd "$ORACLE/pi-1.6" && node tour.mjs "$S/tour.jsonl" >/dev/null)
if [ "${REAL:-0}" = 1 ] || [ ! -f "$S/real-1.6-bugfix.jsonl" ]; then
  PI_ORACLE_DIR="$ORACLE" "$NODE22" "$SCRIPTS/make-pi16-sessions.mjs" "$S" >&2
  (cd "$ORACLE/pi-1.6" && "$NODE22" real-session.mjs "$S/real-1.6-generator.jsonl" --variant b >/dev/null)
fi
if [ "${REAL:-0}" = 1 ] || [ ! -f "$DEMO" ]; then
  echo "== demo session" >&2
  PI_ORACLE_DIR="$ORACLE" "$NODE22" "$SCRIPTS/make-example.mjs" "$DEMO" >&2
fi
for pi in 1.6 earendil mariozechner; do
  for f in "$S"/tour.jsonl "$S"/real-1.6-*.jsonl "$DEMO"; do
    oracle check "$f" --pi "$pi" >/dev/null || { echo "Pi ($pi) does not accept $f" >&2; exit 1; }
  done
done

echo "== damaged files and edge cases" >&2
# Seeded randomness (scripts/seeded-preload.mjs, inherited by the child processes) keeps
# the ids Pi appends, and UUID v7 session ids, stable between runs.
for p in 1.6 earendil mariozechner; do
  (cd "$ORACLE" && NODE_OPTIONS="--import=$SCRIPTS/seeded-preload.mjs" node pi-edge-cases.mjs --pi "$p") > "$G/edge-cases-$p.json"
done
node "$SCRIPTS/make-damaged.mjs" "$D" --raw-1.6 "$G/edge-cases-1.6.json" --raw-earendil "$G/edge-cases-earendil.json" --raw-mariozechner "$G/edge-cases-mariozechner.json" 2>/dev/null

echo "== context goldens (Pi 1.6.0, every entry)" >&2
rm -f "$G"/*.contexts.jsonl "$G"/*.messages.jsonl
for f in "$S"/*.jsonl "$DEMO" "$D"/1-6-*.jsonl "$D"/second-compaction-keeps-range-containing-first.jsonl "$D"/compaction-firstkept-not-on-path.jsonl; do
  n="$(basename "$f" .jsonl)"
  case "$n" in
    legacy-v1|legacy-v1-b) goldens "$f" "$G/$n" --migrated-out "$G/$n.migrated.jsonl" >&2 ;;
    *) goldens "$f" "$G/$n" >&2 ;;
  esac
done

echo "== where Pi 0.81.1 and 0.73.1 differ from the 1.6.0 goldens (a record)" >&2
T="$(mktemp -d "${TMPDIR:-/tmp}/goldens-older.XXXXXX")"
for pi in earendil mariozechner; do
  version=$( [ "$pi" = earendil ] && echo 0.81.1 || echo 0.73.1 )
  pairs=()
  for n in "${OLD[@]}"; do
    goldens "$S/$n.jsonl" "$T/$n-$pi" --pi "$pi" >/dev/null
    pairs+=("$n=$G/$n:$T/$n-$pi")
  done
  node "$SCRIPTS/diff-goldens.mjs" "$G/pi-$version-differences.json" "$version" "${pairs[@]}" >&2
done
rm -rf "$T"

echo "== tree goldens" >&2
for f in "$S"/*.jsonl "$DEMO"; do
  n="$(basename "$f" .jsonl)"
  src="$f"
  [ -f "$G/$n.migrated.jsonl" ] && src="$G/$n.migrated.jsonl"   # v1: Pi's ids only exist after migration
  oracle tree "$src" --pi 1.6 > "$G/$n.tree.json"
done

if [ "${VERIFY:-0}" = 1 ]; then
  echo "== verify goldens against the pi-oracle CLI" >&2
  for f in "$G"/*.contexts.jsonl; do
    n="$(basename "$f" .contexts.jsonl)"
    src="$S/$n.jsonl"
    [ -f "$src" ] || src="$D/$n.jsonl"
    [ "$n" = demo ] && src="$DEMO"
    [ -f "$G/$n.migrated.jsonl" ] && src="$G/$n.migrated.jsonl"
    node "$SCRIPTS/verify-goldens.mjs" "$src" "$G/$n" --pi 1.6 --max 12
  done
fi
echo "done" >&2
