#!/usr/bin/env bash
# make-claude-fixtures.sh — regenerate tests/fixtures/claude/ with the real Claude Code CLI.
#
#   scripts/make-claude-fixtures.sh                  # sessions and expected contexts (~15 min)
#   scripts/make-claude-fixtures.sh --contexts-only  # only the expected contexts, for the
#                                                    # sessions already in tests/fixtures/claude
#
# Sources (both outside the repo):
#   CLAUDE_SAMPLES_DIR  the shared samples (default <repo>/../shared/claude-samples): their
#                       sessions are copied as they are (scenarios qa forkbranch tools image sub
#                       big named).
#   CLAUDE_ORACLE_DIR   a writable copy of claude-oracle with its node_modules installed
#                       (default <repo>/../claude-oracle, else <repo>/../shared/claude-oracle).
#                       Its run_all.sh makes the TUI scenarios the samples lack (tui tui2 tui3
#                       ooo) under CC_ROOT (default /home/dev, as the samples), and its
#                       context.sh gives the expected context of every entry.
#
# Output (tests/fixtures/claude/, see tests/fixtures/README.md):
#   projects/<encoded cwd>/<sessionId>.jsonl (+ side folders <sessionId>/subagents,
#   <sessionId>/tool-results), laid out as ~/.claude/projects;
#   contexts-<version>/<sessionId>.contexts.json: {uuid: {messages, via, [leaf, chainEnd,
#   inserted, probeMerged, …]}} for every entry of every main session file, made by
#   scripts/claude-goldens with the kit's CLI build (CLAUDE_VERSION picks another).
#
# A TUI run gives new uuids, session ids and timestamps each time: commit the regenerated
# sessions and contexts together.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$REPO_ROOT/tests/fixtures/claude"
SAMPLES="${CLAUDE_SAMPLES_DIR:-$REPO_ROOT/../shared/claude-samples}"
if [ -n "${CLAUDE_ORACLE_DIR:-}" ]; then
  ORACLE="$CLAUDE_ORACLE_DIR"
elif [ -d "$REPO_ROOT/../claude-oracle/node_modules" ]; then
  ORACLE="$REPO_ROOT/../claude-oracle"
else
  ORACLE="$REPO_ROOT/../shared/claude-oracle"
fi
CC_ROOT="${CC_ROOT:-/home/dev}"
HOME_AS=/home/dev
SAMPLE_SCENARIOS="qa forkbranch tools image sub big named"
TUI_SCENARIOS="tui tui2 tui3 ooo"
CONTEXTS_ONLY=0
[ "${1:-}" = "--contexts-only" ] && CONTEXTS_ONLY=1

[ -d "$ORACLE/node_modules" ] || { echo "no node_modules in $ORACLE: run npm ci there (CLAUDE_ORACLE_DIR)" >&2; exit 1; }

if [ "$CONTEXTS_ONLY" = 0 ]; then
  echo "== sessions from $SAMPLES" >&2
  rm -rf "$OUT/projects"
  mkdir -p "$OUT/projects"
  for s in $SAMPLE_SCENARIOS; do
    cp -a "$SAMPLES/claude-home/.claude/projects/-home-dev-src-$s" "$OUT/projects/"
  done
  echo "== TUI sessions ($TUI_SCENARIOS) with the real CLI, CC_ROOT=$CC_ROOT" >&2
  (cd "$ORACLE" && CC_ROOT="$CC_ROOT" bash run_all.sh $TUI_SCENARIOS >&2)
  for s in $TUI_SCENARIOS; do
    src="$CC_ROOT/.claude/projects/-home-dev-src-$s"
    [ "$CC_ROOT" = /home/dev ] || src="$CC_ROOT/.claude/projects/$(echo "$CC_ROOT/src/$s" | sed 's/[^a-zA-Z0-9]/-/g')"
    cp -a "$src" "$OUT/projects/-home-dev-src-$s"
    # memory/ is empty in every run; git keeps no empty folder, so give it what a real one holds.
    if [ -d "$OUT/projects/-home-dev-src-$s/memory" ]; then
      printf '# Memory\n\nNothing remembered yet.\n' >"$OUT/projects/-home-dev-src-$s/memory/MEMORY.md"
    fi
  done
  find "$OUT/projects" -name '*.jsonl' -exec chmod 0644 {} +
fi

echo "== expected contexts (scripts/claude-goldens: context.sh, one CLI run per entry)" >&2
CLAUDE_ORACLE_DIR="$ORACLE" "$REPO_ROOT/scripts/claude-goldens" --set claude
echo "done: $OUT" >&2
