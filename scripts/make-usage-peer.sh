#!/usr/bin/env bash
# make-usage-peer.sh — ccusage's figures for the usage fixtures, so that
# tests/usage_peer.rs can compare `sessionfs usage` with them without Node.
#
#   scripts/make-usage-peer.sh            # writes tests/fixtures/usage/ccusage/*.json
#   COPY_SAMPLES=1 scripts/make-usage-peer.sh   # also re-copies the 2.1.332 samples
#
# ccusage 20.0.24 (npm, its native binary) is installed in $CCUSAGE_KIT (default
# /tmp/sessionfs-ccusage) unless it is there already. Every run is offline (its bundled
# LiteLLM prices) and in UTC.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KIT="${CCUSAGE_KIT:-/tmp/sessionfs-ccusage}"
VERSION=20.0.24
OUT="$REPO/tests/fixtures/usage/ccusage"
SAMPLES="${CLAUDE_SAMPLES_332:-$REPO/../shared/claude-samples-2.1.332}"
mkdir -p "$KIT" "$OUT"
if [ "$(node -p "require('$KIT/node_modules/ccusage/package.json').version" 2>/dev/null)" != "$VERSION" ]; then
  (cd "$KIT" && npm i --no-save "ccusage@$VERSION" >/dev/null)
fi
CC="$KIT/node_modules/.bin/ccusage"
export TZ=UTC NO_COLOR=1

if [ "${COPY_SAMPLES:-}" = 1 ]; then
  # The 2.1.332 samples without their api-request-shape and api-request-blob lines
  # (the system prompt and tool definitions, ~38 KB each, no usage in them).
  dst="$REPO/tests/fixtures/usage/claude-2.1.332/projects"
  rm -rf "$dst"; mkdir -p "$dst"
  (cd "$SAMPLES/claude-home/.claude/projects" && find . -name '*.jsonl' -o -name '*.meta.json') |
  while read -r f; do
    mkdir -p "$dst/$(dirname "$f")"
    case "$f" in
      *.jsonl) grep -v -e '^{"type":"api-request-shape"' -e '^{"type":"api-request-blob"' \
                 "$SAMPLES/claude-home/.claude/projects/$f" > "$dst/$f" || true ;;
      *) cp "$SAMPLES/claude-home/.claude/projects/$f" "$dst/$f" ;;
    esac
  done
fi

claude() { # NAME CLAUDE_CONFIG_DIR
  CLAUDE_CONFIG_DIR="$2" "$CC" claude session --json --offline > "$OUT/$1.json"
}
claude claude-2.1.197 "$REPO/tests/fixtures/claude"
claude claude-2.1.332 "$REPO/tests/fixtures/usage/claude-2.1.332"
claude claude-priced "$REPO/tests/fixtures/usage/claude-priced"

# Pi: ccusage reads a sessions directory (--pi-path); each file is a session named by
# its file name.
PI="$(mktemp -d "${TMPDIR:-/tmp}/usage-pi.XXXXXX")"
trap 'rm -rf "$PI"' EXIT
mkdir -p "$PI/--home-dev-src-fixtures--"
cp "$REPO"/tests/fixtures/sessions/*.jsonl "$REPO/examples/demo.jsonl" "$PI/--home-dev-src-fixtures--/"
"$CC" pi session --json --offline --pi-path "$PI" > "$OUT/pi.json"
"$CC" --version > "$OUT/VERSION" 2>/dev/null || echo "$VERSION" > "$OUT/VERSION"
echo "wrote $OUT"
