# sessionfs's own Codex scenario `own` (scripts/codex-fixtures appends this to a copy of
# codex-oracle's run_all.sh): an exec thread with a non-ASCII multi-line prompt and a
# five-call tool loop; an `exec fork` of it; the fork resumed in the TUI for two turns,
# then a TUI rewind INSIDE the fork (a page whose base is the fork's first page, itself
# based on the parent); one more turn; then an `exec resume` of the fork.
scen_own() {
  fresh own
  cx 50-own-loop "$W/own" $X $BYPASS "[[LOOP]] Héllo wörld — 日本語, «quotes» and \"escapes\".
Second line,	a tab; third line: ✓"; O=$(keep_sid 50-own-loop OWN)
  cx 51-own-fork "$W/own" $X $BYPASS fork "$O" "[[OWN1]] Fork it (fourchette)."; F=$(keep_sid 51-own-fork OWNFORK)
  tui_start 52-own-fork-tui "$W/own" resume "$F"
  tui_type "[[OWN2]] Deux, in the TUI."
  tui_type "[[QA1]] What is 2+2?"
  tui_rewind 0                        # before [[QA1]]: a page of the fork, based on the fork's first page
  tui_type "[[OWN3]] Trois after the rewind."
  tui_stop; stop_daemons
  cx 53-own-fork-resume "$W/own" $X resume "$F" "[[QA4]] Add one."
}
