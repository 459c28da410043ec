#!/usr/bin/env bash
# Sessions of our own, made by the real GitHub Copilot CLI 1.0.102 through the copilot-oracle kit:
# what the kit's scenarios do not cover (two compactions, forks of forks and a rewind of the
# session they came from, a torn tail the CLI repairs with a backup that a later rewind outlives,
# two images in one prompt, two subagents at once, an interrupted tool call).
#
#   COPILOT_ORACLE_DIR=KIT CPROOT=DIR scripts/copilot-own.sh [SCENARIO...]
#
# KIT is a writable copy of copilot-oracle with `npm ci` done; DIR an empty folder (or one this
# script made before). The sessions land in $CPROOT/.copilot/session-state/, one project folder
# per scenario ($CPROOT/src/<scenario>); scripts/copilot-fixtures packages them.
set -u
KIT=${COPILOT_ORACLE_DIR:?set COPILOT_ORACLE_DIR to a writable copy of copilot-oracle}
source "$KIT/lib.sh" || exit 1
ALL="twocmp forkrew torn imgs subpar tooltui"
SEL=${*:-$ALL}
oracle_guard || exit 1
mkdir -p "$W" "$OUT" "$COPILOT_HOME/session-state"
trap 'stop_server; tm kill-server 2>/dev/null' EXIT
# The kit's replies, and ours.
python3 "$KIT/make_scenario.py" "$W" "$SCEN.kit" >/dev/null || exit 1
python3 - "$SCEN.kit" "$SCEN" "$W" <<'PY'
import json, sys
rules = json.load(open(sys.argv[1]))
W = sys.argv[3]
def msg(t): return {"type": "message", "text": t}
def rs(t): return {"type": "reasoning", "text": t}
def call(cid, tool, **a): return {"type": "tool_call", "id": cid, "name": tool, "arguments": a}
own = [
    {"match": "[[IMGS]]", "items": [rs("Two pictures to compare."), msg("Two pictures: a red one and a green one.")]},
    {"match": "[[SUBPAR]]", "items": [
        msg("Two helpers at once."),
        call("call_sp_01", "task", description="Count files", agent_type="general-purpose", name="counter",
             prompt="[[SUBTASK]] Count the files in the current folder and report the number."),
        call("call_sp_02", "task", description="Say hello", agent_type="general-purpose", name="greeter",
             prompt="[[SUBHELLO]] Say hello in one word.")]},
    {"match": "[[SUBHELLO]]", "items": [msg("Hello.")]},
    {"match": "call_sp_02", "items": [msg("Both helpers are done.")]},
    {"match": "[[SLOWTOOL]]", "items": [msg("Running a slow command."),
        call("call_slow_01", "bash", command="sleep 25; echo done", description="Sleep a while")]},
    {"match": "call_slow_01", "items": [msg("The slow command finished.")]},
]
# Ours first: the kit's "[[SUB" prefix rules must not catch them.
json.dump(own + rules, open(sys.argv[2], "w"), indent=1, ensure_ascii=False)
PY
"$COPILOT" --version >"$OUT/version.txt" 2>/dev/null
P="--allow-all-tools"
fresh() {
  local sid
  while sid=$(sid_for_dir "$W/$1") && [ -n "$sid" ]; do rm -rf "${COPILOT_HOME:?}/session-state/$sid"; done
  rm -rf "${W:?}/$1"; mkdir -p "$W/$1"
}
keep_sid() { sid_for_dir "$W/$1" >"$OUT/$2.sid"; cat "$OUT/$2.sid"; }

# twocmp: two /compacts in one session (the second summary's list of earlier prompts), a -p resume
scen_twocmp() {
  fresh twocmp
  tui_start 50-twocmp "$W/twocmp"
  tui_type "[[QA1]] What is 2+2?"; tui_type "[[QA2]] Multiply by 3."
  tui_cmd "/compact" 6
  tui_type "[[QA3]] Subtract 5."
  tui_cmd "/compact" 6
  tui_type "[[AFTERCOMPACT]] What do you remember?"
  tui_stop
  T=$(keep_sid twocmp TWOCMP)
  cp_run 51-twocmp-resume "$W/twocmp" -p "[[QA4]] Add one." $P --resume="$T"
}

# forkrew: three prompts, /fork, a prompt in the fork, /fork again (a fork of the fork), a prompt;
# then the first session resumed in the TUI and rewound to before its second prompt (its copy of
# the rewound turns lives on in the forks), a prompt; a -p resume of the middle fork
scen_forkrew() {
  fresh forkrew
  tui_start 52-forkrew "$W/forkrew"
  tui_type "[[QA1]] What is 2+2?"; tui_type "[[QA2]] Multiply by 3."; tui_type "[[QA3]] Subtract 5."
  A=$(sid_for_dir "$W/forkrew"); echo "$A" >"$OUT/FORKREW_A.sid"
  tui_cmd "/fork" 4
  tui_type "[[FORK1]] First turn in the fork."
  B=$(sid_for_dir "$W/forkrew"); echo "$B" >"$OUT/FORKREW_B.sid"
  tui_cmd "/fork" 4
  tui_type "[[FORK2]] Again in the fork."
  tui_stop
  C=$(sid_for_dir "$W/forkrew"); echo "$C" >"$OUT/FORKREW_C.sid"
  tui_start 53-forkrew-rewind "$W/forkrew" --resume="$A"
  tui_rewind 1
  tui_type "[[AFTER]] What now?"
  tui_stop
  cp_run 54-forkrew-resume-b "$W/forkrew" -p "[[QA4]] Add one." $P --resume="$B"
}

# torn: two -p turns, half a line left at the end (a crash), a -p resume (the CLI drops it and keeps
# events.jsonl.backup-before-recovery-*), then the TUI rewinds to before the second prompt: the
# backup still holds the turn the rewind deleted
scen_torn() {
  fresh torn
  cp_run 55-torn-1 "$W/torn" -p "[[QA1]] What is 2+2?" $P; T=$(keep_sid torn TORN)
  cp_run 56-torn-2 "$W/torn" -p "[[QA2]] Multiply by 3." $P --resume="$T"
  printf '{"type":"user.message","data":{"content":"[[TORN]] half a li' >>"$(events_of "$T")"
  cp_run 57-torn-3 "$W/torn" -p "[[QA3]] Subtract 5." $P --resume="$T"
  tui_start 58-torn-rewind "$W/torn" --resume="$T"
  tui_rewind 1
  tui_type "[[AFTER]] What now?"
  tui_stop
}

# imgs: two images in one prompt (two assets), then the first again on a resume
scen_imgs() {
  fresh imgs
  python3 "$KIT/make_png.py" "$W/imgs/red.png"
  python3 - "$W/imgs/green.png" <<'PY'
import struct, sys, zlib
w = h = 8
raw = b"".join(b"\x00" + b"\x00\xc0\x00" * w for _ in range(h))
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + \
      chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png)
PY
  cp_run 59-imgs "$W/imgs" -p "[[IMGS]] Compare these two pictures." $P --attachment "$W/imgs/red.png" --attachment "$W/imgs/green.png"
  I=$(keep_sid imgs IMGS)
  cp_run 60-imgs-resume "$W/imgs" -p "[[IMG2]] And this one?" $P --resume="$I" --attachment "$W/imgs/red.png"
}

# subpar: two subagents started by one reply (their events interleave in the parent's file)
scen_subpar() {
  fresh subpar
  touch "$W/subpar/a.txt" "$W/subpar/b.txt" "$W/subpar/c.txt"
  cp_run 61-subpar "$W/subpar" -p "[[SUBPAR]] Use two helpers." $P; keep_sid subpar SUBPAR >/dev/null
}

# tooltui: a slow tool call interrupted in the TUI (Esc Esc while the command runs), a prompt; a -p resume
scen_tooltui() {
  fresh tooltui
  tui_start 62-tooltui "$W/tooltui" --allow-all-tools
  tui_type "[[QA1]] What is 2+2?"
  local n0; n0=$(nreq)
  tui_type "[[SLOWTOOL]] Run something slow." nowait; tui_wait_req "$n0" 30; sleep 4
  tui_interrupt
  tui_type "[[QA2]] Multiply by 3."
  tui_stop
  T=$(keep_sid tooltui TOOLTUI)
  cp_run 63-tooltui-resume "$W/tooltui" -p "[[QA3]] Subtract 5." $P --resume="$T"
}

for s in $SEL; do "scen_$s"; done
echo "done. sessions: $COPILOT_HOME/session-state"
