#!/usr/bin/env python3
"""Fixtures for the Claude Code fork tests, made with the real CLI (claude-oracle kit).

Usage: CLAUDE_ORACLE=/path/to/claude-oracle scripts/claude-fork-fixtures.py OUTDIR NAME=SESSION@UUID-PREFIX…

For each case:
  1. `claude --resume SID --resume-session-at UUID --fork-session -p PROBE` on a copy
     (scripts/claude-fork-measure.py): the lines of the CLI's fork that copy source lines,
     byte for byte, saved as OUTDIR/NAME.cli.jsonl (the new turn after them is left out);
  2. `sessionfs fork` on another copy: our fork, checked with the kit's `accepts.sh` (the CLI
     resumes it) and `context.sh` (its context at the leaf, compared with the source's context
     at UUID);
  3. OUTDIR/NAME.json: the case, the CLI's new session id and promptId, and the results.
Exit 1 if a check fails.
"""
import json, os, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
KIT = os.environ.get("CLAUDE_ORACLE", "/work/shared/claude-oracle")
BIN = os.environ.get("SESSIONFS", os.path.join(REPO, "target", "debug", "sessionfs"))


def full_uuid(path, prefix):
    for l in open(path, "rb"):
        try:
            d = json.loads(l)
        except ValueError:
            continue
        if isinstance(d, dict) and str(d.get("uuid", "")).startswith(prefix):
            return d["uuid"]
    raise SystemExit("no uuid %s in %s" % (prefix, path))


def context(path, uuid=None):
    args = [os.path.join(KIT, "context.sh"), path] + ([uuid] if uuid else [])
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return {"error": p.stderr[-500:]}
    return json.loads(p.stdout)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    bad = 0
    for case in sys.argv[2:]:
        name, rest = case.split("=", 1)
        src, prefix = rest.rsplit("@", 1)
        src = os.path.abspath(src)
        uuid = full_uuid(src, prefix)
        cli_file = os.path.join(out, name + ".cli.jsonl")
        # A case named rewind-… forks an entry of another branch: the CLI is shown it after a
        # rewind to it (claude-fork-measure.py --rewind).
        extra = ["--rewind"] if name.startswith("rewind-") else []
        m = subprocess.run([sys.executable, os.path.join(HERE, "claude-fork-measure.py"), src, uuid, cli_file] + extra,
                           capture_output=True, text=True, timeout=300, env=dict(os.environ, CLAUDE_ORACLE=KIT))
        if m.returncode != 0:
            raise SystemExit("%s: measure failed: %s" % (name, m.stderr[-800:]))
        measured = json.loads(m.stdout)
        # Keep only the lines the CLI copied from the source (the new turn is not ours).
        raw = open(cli_file, "rb").read().splitlines(keepends=True)
        raw = [l for l in raw if l.strip()]
        with open(cli_file, "wb") as fh:
            fh.writelines(l for l, r in zip(raw, measured["lines"]) if "copy" in r)
        cli_lines = [json.loads(l) for l in open(cli_file, "rb")]  # the copies
        prompt_ids = {d.get("promptId") for d in cli_lines if isinstance(d, dict) and d.get("promptId")}
        # Our fork, on a copy laid out as Claude Code keeps it (the kit reads the home from the path).
        tmp = tempfile.mkdtemp(prefix="fork-fixture-")
        try:
            proj = os.path.join(tmp, "home", ".claude", "projects", os.path.basename(os.path.dirname(src)))
            os.makedirs(proj)
            copy = os.path.join(proj, os.path.basename(src))
            shutil.copyfile(src, copy)
            side = src[:-len(".jsonl")]
            if os.path.isdir(side):
                shutil.copytree(side, copy[:-len(".jsonl")])
            f = subprocess.run([BIN, "fork", copy, uuid], capture_output=True, text=True)
            if f.returncode != 0:
                raise SystemExit("%s: sessionfs fork failed: %s" % (name, f.stderr))
            ours = f.stdout.strip()
            acc = subprocess.run([os.path.join(KIT, "accepts.sh"), ours], capture_output=True, text=True, timeout=300)
            try:
                accepts = json.loads(acc.stdout)
            except ValueError:
                accepts = {"ok": False, "error": (acc.stdout + acc.stderr)[-500:]}
            c_src = context(copy, uuid)
            c_fork = context(ours)
            same = "messages" in c_src and c_src.get("messages") == c_fork.get("messages")
            rec = {"source": os.path.relpath(src, REPO), "entry": uuid,
                   "cliSessionId": measured["sessionId"], "cliPromptId": sorted(prompt_ids),
                   "cliLines": measured["lines"],
                   "accepts": {k: accepts.get(k) for k in ("ok", "prefixIntact", "copiedUuids", "otherFiles",
                                                             "continuesFromAppendedLine", "error")},
                   "contextAtForkLeafEqualsSourceAtEntry": same,
                   "sourceContextMessages": len(c_src.get("messages", [])),
                   "forkContextMessages": len(c_fork.get("messages", [])),
                   "forkContextVia": c_fork.get("via"), "forkInserted": c_fork.get("inserted")}
            if not same:
                rec["sourceContext"] = c_src.get("messages")
                rec["forkContext"] = c_fork.get("messages")
            if not accepts.get("ok") or not same:
                bad += 1
            with open(os.path.join(out, name + ".json"), "w") as fh:
                json.dump(rec, fh, indent=1, ensure_ascii=False)
                fh.write("\n")
            print("%s: accepts %s, same context %s (%d messages)" % (name, accepts.get("ok"), same,
                                                                    rec["sourceContextMessages"]), file=sys.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
