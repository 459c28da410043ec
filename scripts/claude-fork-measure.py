#!/usr/bin/env python3
"""What `claude --resume SID --resume-session-at ENTRY --fork-session -p PROMPT` writes.

Usage: CLAUDE_ORACLE=/path/to/claude-oracle scripts/claude-fork-measure.py SESSION.jsonl ENTRY OUT.jsonl [--rewind]

With --rewind, the copy first gets the line a rewind to ENTRY writes
(`{"type":"last-prompt","leafUuid":ENTRY,"explicit":true,"sessionId":SID}`), which makes ENTRY's
branch the current one: the CLI forks only on the current chain.

Runs the real CLI (through the claude-oracle kit's scratch HOME and fake API) on a copy of
SESSION, finds the new session file the fork wrote in the project folder, and saves it as OUT
with the scratch paths mapped back to the session's own. Prints a JSON summary on stdout: the
new session id, and per line of the fork whether it is a copy of a source line (same uuid) and
which fields differ from the source's line.
"""
import json, os, sys, glob

sys.path.insert(0, os.environ.get("CLAUDE_ORACLE", "/work/shared/claude-oracle"))
from oracle_common import Scratch, encode_cwd  # noqa: E402

PROMPT = "[[FORK-PROBE]] sessionfs fork probe"


def main():
    src, entry, out = sys.argv[1], sys.argv[2], sys.argv[3]
    rewind = "--rewind" in sys.argv[4:]
    sc = Scratch(src)
    try:
        if rewind:
            data = open(src, "rb").read()
            if data and not data.endswith(b"\n"):
                data += b"\n"
            data += (json.dumps({"type": "last-prompt", "leafUuid": entry, "explicit": True,
                                 "sessionId": sc.sid}, separators=(",", ":")) + "\n").encode()
            sc.install(data)
        else:
            sc.install()
        before = set(glob.glob(os.path.join(sc.projdir, "*.jsonl")))
        rc, o, e, _ = sc.run(["--resume", sc.sid, "--resume-session-at", entry, "--fork-session",
                              "-p", PROMPT, "--output-format", "json"])
        new = sorted(set(glob.glob(os.path.join(sc.projdir, "*.jsonl"))) - before)
        if rc != 0 or len(new) != 1:
            raise SystemExit("rc=%d new=%r %s %s" % (rc, new, o[-400:], e[-400:]))
        raw = open(new[0], "rb").read()
        # The scratch paths mapped back, in the bytes as the CLI wrote them.
        pairs = [(os.path.join(sc.home, ".claude", "projects", encode_cwd(sc.cwd)),
                  os.path.join(sc.orig_home, ".claude", "projects", encode_cwd(sc.orig_cwd or "/"))),
                 (sc.cwd, sc.orig_cwd or sc.cwd), (sc.home, sc.orig_home),
                 (encode_cwd(sc.cwd), encode_cwd(sc.orig_cwd or "/"))]
        for a, b in pairs:
            raw = raw.replace(a.encode(), b.encode())
        if sc.root.encode() in raw:
            raise SystemExit("a scratch path is left in the fork")
        with open(out, "wb") as f:
            f.write(raw)
        lines = [json.loads(l) for l in raw.splitlines() if l.strip()]
        srcl = [json.loads(l) for l in open(src, "rb").read().splitlines() if l.strip()]
        by = {d["uuid"]: d for d in srcl if isinstance(d, dict) and d.get("uuid")}
        rows = []
        for d in lines:
            u = d.get("uuid")
            if u in by:
                s = by[u]
                rows.append({"copy": u, "type": d.get("type"),
                             "changed": sorted(k for k in s if k in d and s[k] != d[k]),
                             "added": [k for k in d if k not in s],
                             "removed": [k for k in s if k not in d],
                             "sameKeyOrder": [k for k in s if k in d] == [k for k in d if k in s]})
            else:
                rows.append({"new": d.get("type"), "uuid": u, "sub": d.get("subtype") or d.get("operation")})
        print(json.dumps({"sessionId": os.path.basename(new[0])[:-6], "lines": rows}, indent=1))
    finally:
        sc.close()


if __name__ == "__main__":
    main()
