#!/usr/bin/env bash
# Appends through a real mount (replies at the leaf, at a root, at another branch, a
# 40 KB reply, a new root, the session name, labels set and cleared), unmounts, and
# asks Pi 1.6.0, 0.81.1 and 0.73.1 (through ../shared/pi-oracle, or $PI_ORACLE_DIR)
# whether they still accept the file. Needs root (or fusermount3), /dev/fuse, Node 20.
#
#   scripts/pi-accepts.sh [SESSION.jsonl]     (default: tests/fixtures/sessions/medium.jsonl)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-$root/tests/fixtures/sessions/medium.jsonl}
. "$root/scripts/oracle-env.sh"   # sets ORACLE (a writable oracle with node_modules)

cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin=$root/target/release/sessionfs
work=$(mktemp -d)
trap 'umount -l "$work/m" 2>/dev/null || true; rm -rf "$work" "$ORACLE"' EXIT
mkdir "$work/m"
cp "$src" "$work/s.jsonl"
"$bin" mount --background "$work/s.jsonl" "$work/m"
(
    cd "$work/m"
    leaf=$(readlink leaf); leaf=${leaf#.id/}
    first_root=$(find . -mindepth 1 -maxdepth 1 -type d ! -name branches ! -name labels ! -name .id | head -1)
    other=$(ls branches | head -1)
    echo "a reply at the leaf" > ".id/$leaf/reply"
    echo "a new root" > reply
    printf '%s' "$(head -c 30000 /dev/urandom | base64 -w 100)" > "$first_root/reply"
    echo "a reply on another branch" >> ".id/$other/reply"
    echo "renamed through sessionfs" > name
    ln -s "$first_root" labels/start
    ln -s "$PWD/.id/$leaf" labels/end
    rm labels/start
)
umount "$work/m"
"$bin" check "$work/s.jsonl"
for pi in 1.6 earendil mariozechner; do
    node "$ORACLE/pi-oracle.mjs" check "$work/s.jsonl" --pi "$pi" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(json.dumps({k: d.get(k) for k in ["pi", "ok", "problems", "rewrittenByPi", "entries", "leafId", "sessionName", "labelledEntries", "contextLlmMessages", "error"]}))
sys.exit(0 if d.get("ok") else 1)'
done
