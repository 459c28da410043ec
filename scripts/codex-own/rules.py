# Scripted replies of sessionfs's own Codex scenario `own` (scripts/codex-fixtures inserts
# this into a copy of codex-oracle's make_scenario.py, before its json.dump line).
# A non-ASCII, multi-line prompt; a tool loop of five sequential calls with reasoning
# between them; a multi-line non-ASCII answer.
rule("[[LOOP]]", rs("Première étape : lister."), call("call_loop_01", "ls"))
rule("call_loop_01", rs("Deuxième étape."), call("call_loop_02", "printf 'Grüße\\n日本語\\n' > u.txt && cat u.txt"))
rule("call_loop_02", call("call_loop_03", "wc -c u.txt"))
rule("call_loop_03", rs("Une erreur, exprès."), call("call_loop_04", "cat nope.txt"))
rule("call_loop_04", call("call_loop_05", "echo done"))
rule("call_loop_05", msg("Fini — five steps:\n1. ls\n2. wrote u.txt (Grüße, 日本語)\n3. counted bytes\n4. a failure\n5. done"))
rule("[[OWN1]]", msg("Réponse une: ça marche."))
rule("[[OWN2]]", msg("Réponse deux."))
rule("[[OWN3]]", msg("Réponse trois, after the rewind inside the fork."))
