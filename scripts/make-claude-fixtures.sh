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
#   contexts/<sessionId>.contexts.json: {uuid: {messages, via, [leaf, chainEnd, inserted,
#   probeMerged]}} for every entry of every main session file (context.sh --all plus every
#   other node uuid), without the "system" blocks, which come from the CLI, not the file.
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
  rm -rf "$OUT/projects" "$OUT/contexts"
  mkdir -p "$OUT/projects" "$OUT/contexts"
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

echo "== expected contexts (context.sh, one CLI run per entry)" >&2
mkdir -p "$OUT/contexts"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/claude-contexts.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
for f in "$OUT"/projects/*/*.jsonl; do
  sid="$(basename "$f" .jsonl)"
  # every node uuid of the file (user/assistant lines are added by --all)
  mapfile -t uuids < <(python3 - "$f" <<'PY'
import json, sys
seen = []
for raw in open(sys.argv[1], "rb"):
    try:
        d = json.loads(raw)
    except Exception:
        continue
    u = d.get("uuid") if isinstance(d, dict) else None
    if u and d.get("type") in ("system", "attachment") and u not in seen:
        seen.append(u)
print("\n".join(seen))
PY
)
  echo "-- $f (${#uuids[@]} system/attachment entries besides --all)" >&2
  "$ORACLE/context.sh" "$f" --all "${uuids[@]}" --home-as "$HOME_AS" --out "$TMP/$sid.json" >&2 || true
  python3 - "$TMP/$sid.json" "$OUT/contexts/$sid.contexts.json" "$SAMPLES/contexts/$sid.contexts.json" <<'PY'
import json, os, sys
src, dst, sample = sys.argv[1:4]
d = json.load(open(src))
keep = ("messages", "via", "leaf", "chainEnd", "inserted", "probeMerged", "error", "warning")
out = {u: {k: v[k] for k in keep if k in v} for u, v in d.items()}
with open(dst, "w") as f:
    json.dump(out, f, indent=1, ensure_ascii=False)
    f.write("\n")
errors = [u for u, v in out.items() if "error" in v]
if errors:
    print("   no context for %d entries (the CLI refused them): %s" % (len(errors), " ".join(errors)), file=sys.stderr)
# The shared samples' own expected contexts must agree with this run's.
if os.path.exists(sample):
    s = json.load(open(sample))
    differ = [u for u, v in s.items() if u in out and out[u].get("messages") != v.get("messages")]
    print("   %d entries; %d also in the samples, %d differ %s" % (len(out), len([u for u in s if u in out]), len(differ), differ), file=sys.stderr)
else:
    print("   %d entries" % len(out), file=sys.stderr)
PY
done
echo "done: $OUT" >&2
