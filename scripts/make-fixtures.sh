#!/usr/bin/env bash
# make-fixtures.sh — regenerate everything under tests/fixtures/ and examples/demo.jsonl
# with Pi's own code (needs node >= 20; Node 20.20.2 was used).
#
#   scripts/make-fixtures.sh            # everything
#   VERIFY=1 scripts/make-fixtures.sh   # also cross-check goldens against the pi-oracle CLI
#
# Oracle: $PI_ORACLE_DIR or <repo>/../shared/pi-oracle, used through a temp copy
# (see oracle-env.sh; runs `npm ci` there if the source has no node_modules).
# Sessions and goldens use Pi 0.81.1 (@earendil-works, `--pi earendil`); the damaged
# cases are run with both 0.81.1 and 0.73.1. Output is deterministic: re-running gives
# byte-identical files. The 100k-entry large fixture is separate: make-large-fixture.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/oracle-env.sh"
SCRIPTS="$REPO_ROOT/scripts"
FIX="$REPO_ROOT/tests/fixtures"
S="$FIX/sessions"
G="$FIX/golden"
PI=earendil
mkdir -p "$S" "$G" "$FIX/damaged" "$REPO_ROOT/examples"

oracle() { (cd "$ORACLE" && node pi-oracle.mjs "$@" --pi "$PI"); }
goldens() { node "$SCRIPTS/pi-goldens.mjs" --pi "$PI" "$@"; }

echo "== sessions" >&2
oracle gen "$S/small.jsonl"       --entries 30   --seed 1  --branches 3             >/dev/null
oracle gen "$S/medium.jsonl"      --entries 2000 --seed 2  --branches 12            >/dev/null
oracle gen "$S/legacy-v1.jsonl"   --entries 60   --seed 4  --format v1              >/dev/null
oracle gen "$S/legacy-v2.jsonl"   --entries 60   --seed 5  --branches 2 --format v2 >/dev/null
oracle gen "$S/bushy.jsonl"       --entries 300  --seed 11 --branches 25            >/dev/null
oracle gen "$S/linear.jsonl"      --entries 800  --seed 12 --branches 0             >/dev/null
oracle gen "$S/mixed.jsonl"       --entries 150  --seed 13 --branches 8             >/dev/null
oracle gen "$S/legacy-v1-b.jsonl" --entries 120  --seed 14 --format v1              >/dev/null
oracle gen "$S/legacy-v2-b.jsonl" --entries 120  --seed 15 --branches 4 --format v2 >/dev/null

echo "== demo session" >&2
node "$SCRIPTS/make-example.mjs" "$REPO_ROOT/examples/demo.jsonl" --pi "$PI" >/dev/null
(cd "$ORACLE" && node pi-oracle.mjs check "$REPO_ROOT/examples/demo.jsonl" --pi earendil >/dev/null)
(cd "$ORACLE" && node pi-oracle.mjs check "$REPO_ROOT/examples/demo.jsonl" --pi mariozechner >/dev/null)

echo "== context goldens" >&2
for n in small legacy-v2 legacy-v2-b mixed; do
  goldens "$S/$n.jsonl" "$G/$n.contexts.jsonl" --all >&2
done
for n in legacy-v1 legacy-v1-b; do
  goldens "$S/$n.jsonl" "$G/$n.contexts.jsonl" --all --migrated-out "$G/$n.migrated.jsonl" >&2
done
for n in medium bushy linear; do
  goldens "$S/$n.jsonl" "$G/$n.contexts.jsonl" --inner 30 >&2
done
goldens "$REPO_ROOT/examples/demo.jsonl" "$G/demo.contexts.jsonl" --all >&2

echo "== where Pi 0.73.1 differs from the 0.81.1 context goldens" >&2
T073="$(mktemp -d "${TMPDIR:-/tmp}/goldens-073.XXXXXX")"
pairs=()
for f in "$G"/*.contexts.jsonl; do
  n="$(basename "$f" .contexts.jsonl)"
  src="$S/$n.jsonl"; [ "$n" = demo ] && src="$REPO_ROOT/examples/demo.jsonl"
  mode=(--all); case "$n" in medium|bushy|linear) mode=(--inner 30);; esac
  node "$SCRIPTS/pi-goldens.mjs" --pi mariozechner "$src" "$T073/$n.contexts.jsonl" "${mode[@]}" >/dev/null
  pairs+=("$n=$f:$T073/$n.contexts.jsonl")
done
node "$SCRIPTS/diff-goldens.mjs" "$G/contexts-0.73.1-differences.json" "${pairs[@]}" >&2
rm -rf "$T073"

echo "== tree goldens" >&2
for f in "$S"/*.jsonl "$REPO_ROOT/examples/demo.jsonl"; do
  n="$(basename "$f" .jsonl)"
  src="$f"
  [ -f "$G/$n.migrated.jsonl" ] && src="$G/$n.migrated.jsonl"   # v1: Pi's ids only exist after migration
  oracle tree "$src" > "$G/$n.tree.json"
done

echo "== damaged files and edge cases" >&2
# Seeded randomness (scripts/seeded-preload.mjs, inherited by the child processes) keeps
# the ids Pi appends, and UUID v7 session ids, stable between runs.
for p in earendil mariozechner; do
  (cd "$ORACLE" && NODE_OPTIONS="--import=$SCRIPTS/seeded-preload.mjs" node pi-edge-cases.mjs --pi "$p") > "$G/edge-cases-$p.json"
done
node "$SCRIPTS/make-damaged.mjs" "$FIX/damaged" --raw-earendil "$G/edge-cases-earendil.json" --raw-mariozechner "$G/edge-cases-mariozechner.json" 2>/dev/null

if [ "${VERIFY:-0}" = 1 ]; then
  echo "== verify goldens against the pi-oracle CLI" >&2
  for f in "$G"/*.contexts.jsonl; do
    n="$(basename "$f" .contexts.jsonl)"
    src="$S/$n.jsonl"
    [ "$n" = demo ] && src="$REPO_ROOT/examples/demo.jsonl"
    [ -f "$G/$n.migrated.jsonl" ] && src="$G/$n.migrated.jsonl"
    node "$SCRIPTS/verify-goldens.mjs" "$src" "$f" --pi "$PI" --max 12
  done
fi
echo "done" >&2
