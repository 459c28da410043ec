#!/usr/bin/env bash
# claude-accepts.sh — does the real Claude Code CLI resume a session after a reply
# written through the mount? (Not run in CI: it needs the CLI.)
#
#   scripts/claude-accepts.sh            # both cases below, with the interactive check
#   NO_TUI=1 scripts/claude-accepts.sh   # print-mode resumes only
#
# For each case, a copy of a fixture session is mounted with the sessionfs built here
# (target/release, else target/debug), a reply is written with `sh -c 'echo … > reply'`,
# the mount is unmounted, and claude-oracle's accepts.sh resumes the file with the
# Claude Code build CLAUDE_VERSION selects in the kit (empty: its default, 2.1.332)
# and checks that it continues from the new line with the old bytes untouched
# (CLAUDE-FORMAT.md §9). The outputs of both builds are committed:
#
#   scripts/claude-accepts.sh > tests/fixtures/claude/accepts-2.1.332.txt
#   CLAUDE_VERSION=2.1.197 scripts/claude-accepts.sh > tests/fixtures/claude/accepts-2.1.197.txt
#
# KEEP=DIR keeps each replied file there as DIR/<case>/<sessionId>.jsonl (how the
# fixtures of tests/fixtures/claude-replies were made).
#
# Files Claude Code 2.1.197 wrote:
#
#   1. at the chain end of `tools` (the plain case: no last-prompt needed);
#   2. at the chain end of `qa`, after its compaction (Claude Code's leaf rule then
#      looks at every terminal node);
#   3. at an entry of `forkbranch` off the current branch (sessionfs adds a last-prompt
#      line so that the resume continues there, not on the old branch);
#   4. at the root of `named` (a new conversation in the file, named by a last-prompt);
#   5. at an entry of `qa` before its compaction (Claude Code re-parents the line: the
#      model gets the summary, the preserved messages, then the reply).
#
# Files Claude Code 2.1.332 wrote (tests/fixtures/claude-2.1.332):
#
#   6. at the leaf of `tools`;
#   7. at an earlier entry of a `forkbranch` fork;
#   8. at an entry of `qa` before its compaction.
#
# The oracle: $CLAUDE_ORACLE_DIR, else <repo>/../claude-oracle, else
# <repo>/../shared/claude-oracle (it needs its node_modules). Exit status 0 when every
# check passed.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -n "${CLAUDE_ORACLE_DIR:-}" ]; then
  ORACLE="$CLAUDE_ORACLE_DIR"
elif [ -d "$REPO/../claude-oracle/node_modules" ]; then
  ORACLE="$REPO/../claude-oracle"
else
  ORACLE="$REPO/../shared/claude-oracle"
fi
[ -d "$ORACLE/node_modules" ] || { echo "no node_modules in $ORACLE (CLAUDE_ORACLE_DIR)" >&2; exit 2; }
BIN="$REPO/target/release/sessionfs"
[ -x "$BIN" ] || BIN="$REPO/target/debug/sessionfs"
[ -x "$BIN" ] || { echo "build sessionfs first (cargo build)" >&2; exit 2; }
FIX="$REPO/tests/fixtures/claude/projects"
FIX332="$REPO/tests/fixtures/claude-2.1.332/projects"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/sessionfs-accepts.XXXXXX")"
cleanup() {
  mountpoint -q "$TMP/mnt" 2>/dev/null && umount "$TMP/mnt" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
REPLY_FLAG=(--reply)
[ -n "${NO_TUI:-}" ] && REPLY_FLAG=()

status=0
echo "Claude Code $(cd "$ORACLE" && CLAUDE_VERSION="${CLAUDE_VERSION:-}" bash -c 'source lib.sh && "$CLAUDE" --version')"
# case NAME FIXTURES PROJECT SESSION ENTRY TEXT   (ENTRY: a uuid, - for the root, leaf)
case_() {
  local name=$1 fix=$2 project=$3 sid=$4 entry=$5 text=$6
  local dir="$TMP/$name"
  mkdir -p "$dir" "$TMP/mnt"
  cp "$fix/$project/$sid.jsonl" "$dir/"
  [ -d "$fix/$project/$sid" ] && cp -a "$fix/$project/$sid" "$dir/"
  local file="$dir/$sid.jsonl"
  local before; before=$(wc -c <"$file")
  "$BIN" mount --background "$file" "$TMP/mnt"
  if [ "$entry" = - ]; then
    sh -c "echo '$text' > '$TMP/mnt/reply'"
  elif [ "$entry" = leaf ]; then
    sh -c "echo '$text' > '$TMP/mnt/leaf/reply'"
  else
    sh -c "echo '$text' > '$TMP/mnt/.id/$entry/reply'"
  fi
  local leaf; leaf=$(readlink "$TMP/mnt/leaf")
  umount "$TMP/mnt"
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP/$name" && cp "$file" "$KEEP/$name/"; fi
  echo "== $name: replied at $entry; the mount's leaf is now ${leaf#.id/}; the file grew by $(( $(wc -c <"$file") - before )) bytes:"
  tail -c +"$((before + 1))" "$file" | cut -c1-240
  echo "-- accepts.sh $sid.jsonl --text … ${REPLY_FLAG[*]:-}"
  local out="$dir/accepts.json"
  if (cd "$ORACLE" && ./accepts.sh "$file" --text "$text" "${REPLY_FLAG[@]}") >"$out"; then
    echo "   exit status 0"
  else
    echo "   exit status $?"; status=1
  fi
  python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
def show(label, x):
    keys = ["ok", "prefixIntact", "endsWithAppendedText", "continuesFromAppendedLine",
            "syntheticNoResponseAfterIt", "copiedUuids", "otherFiles"]
    print("   %-6s %s" % (label, ", ".join("%s=%s" % (k, json.dumps(x.get(k))) for k in keys if k in x)))
    lines = x.get("appendedLines") or []
    print("          Claude Code appended: %s" % ", ".join(
        (l.get("type") or "?") + ("/" + l["subtype"] if l.get("subtype") else "") for l in lines))
show("probe", r)
if "reply" in r:
    show("reply", r["reply"])
PY
}

case_ chain-end "$FIX" -home-dev-src-tools 644750c6-819f-4bc1-8d96-f535db009ee8 \
  ad8b588c-631c-411f-9f86-3717ad0a4ee7 "[[APPENDED]] Written through the sessionfs mount: what is 6*7?"
case_ after-compaction "$FIX" -home-dev-src-qa 07d0e045-3cdc-4eca-a398-7147bce4b33f \
  fc3c573d-a06a-4e14-82a3-13e8112455a4 "[[APPENDED]] Written through the mount at the leaf"
case_ earlier-entry "$FIX" -home-dev-src-forkbranch 0e2eb63c-9c5f-432a-89ee-f32abc7b1bc4 \
  bc6d00c6-f6df-4fd9-8d7c-557cd1e6fb6c "[[APPENDED]] Back on the first branch: and now?"
case_ root "$FIX" -home-dev-src-named 0b0898a8-e004-4c82-a942-53f14841e021 \
  - "[[APPENDED]] A new conversation at the root"
case_ before-compaction "$FIX" -home-dev-src-qa 07d0e045-3cdc-4eca-a398-7147bce4b33f \
  9ba33512-7657-4a32-a658-144e046afaf2 "[[APPENDED]] Written at 4x3=12, before the compaction"
case_ new-leaf "$FIX332" -home-dev-src-tools 99e63c98-28d4-4efc-aa51-a0d27ef6eb70 \
  leaf "[[APPENDED]] Written through the mount at the leaf of a 2.1.332 file"
case_ new-earlier-entry "$FIX332" -home-dev-src-forkbranch 6ca0dea1-68aa-43d3-a687-1563ce5a3a82 \
  a1732376-1c14-457a-a136-8d2aec9454d4 "[[APPENDED]] Back at the first answer of a 2.1.332 fork"
case_ new-before-compaction "$FIX332" -home-dev-src-qa d01acf0b-9e63-4d85-aae9-b6c73faa23e4 \
  9dd3adca-be50-4928-92c9-6c6657838d36 "[[APPENDED]] Written at 4x3=12 of a 2.1.332 file, before the compaction"
exit $status
