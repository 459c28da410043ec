#!/usr/bin/env python3
"""Does the real Gemini CLI 0.61.0 take a reply that sessionfs wrote through a mount?

usage: gemini-accepts.py KIT ORIGINAL REPLIED TEXT POINT CONTEXT_JSON

  KIT           the gemini-oracle folder (with its node_modules)
  ORIGINAL      the session file before the reply (inside its CLI folder: .../tmp/<slug>/chats/)
  REPLIED       the same file after sessionfs appended the reply
  TEXT          the reply's text
  POINT         the entry replied at (a message id), or "leaf", or "root"
  CONTEXT_JSON  the new entry's context.json, read through the mount before unmounting

The replied file is installed in a scratch HOME of the kit (paths of /home/dev mapped to it);
`gemini --list-sessions` and `gemini -p PROBE --resume <sessionId>` run against the kit's fake
API. Prints a JSON report:

  rc                    the exit status of the resume
  listed                --list-sessions lists the session
  endsWithReply         the request's last content ends with {"text": TEXT} right before the probe
  equalsMountContext    the request's contents without the probe are the new entry's
                        context.json: what the mount said the CLI would send is what it sent
  historyMatches        the kit's own test: the request without the reply equals context.py's
                        answer for POINT in ORIGINAL (after a tool response the CLI's placeholder
                        turn and signatures differ: equalsMountContext is the test then)
  prefixIntact          the CLI only appended to the file
  cliAppended           the kinds of the lines the CLI appended
  ok                    rc 0, listed, endsWithReply, equalsMountContext, prefixIntact
"""
import json
import os
import sys


def main():
    kit, original, replied, text, point, ctx_json = sys.argv[1:7]
    sys.path.insert(0, kit)
    from gemini_common import PROBE, Scratch, Session, gemini_dir_of, probe_request, strip_request
    import context

    home_as = "/home/dev"
    gd = gemini_dir_of(original)
    orig = Session(original)
    new = Session(replied)
    sc = Scratch(gd, home_as=home_as)
    res = {"point": point, "text": text}
    try:
        sc.fresh()
        data = open(replied, "rb").read()
        path, cwd = context.install_session(sc, new, data)
        before = open(path, "rb").read()
        n0 = len(Session(path).lines)
        rc, out, err, _ = sc.run(["--list-sessions"], cwd)
        res["listed"] = new.session_id in out + err
        rc, out, err, reqs = sc.run(["-p", PROBE, "--resume", new.session_id], cwd)
        res["rc"] = rc
        after = open(path, "rb").read()
        res["prefixIntact"] = after.startswith(before)
        res["cliAppended"] = Session(path).kinds[n0:]
        body = probe_request(reqs)
        if body is None:
            res["error"] = "no request with the probe: " + (out + err).strip().replace("\n", " ")[-500:]
            res["ok"] = False
            print(json.dumps(res, indent=1, ensure_ascii=False))
            return 1
        got = sc.unmap(strip_request(body))["contents"]
        last = got[-1] if got else {}
        parts = last.get("parts") or []
        res["endsWithReply"] = last.get("role") == "user" and bool(parts) and parts[-1] == {"text": text}
        mount_ctx = json.load(open(ctx_json))
        res["equalsMountContext"] = (json.dumps(got, ensure_ascii=False) == json.dumps(mount_ctx, ensure_ascii=False))
        if not res["equalsMountContext"]:
            res["requestContents"] = got
            res["mountContext"] = mount_ctx
        rest = got[:-1] + ([dict(last, parts=parts[:-1])] if len(parts) > 1 else [])
        if point == "root":
            want = []
        else:
            target = ("leaf",) if point == "leaf" else ("point", point)
            want = context.run_target(sc, orig, target, "set" if point != "leaf" else "rewind").get("contents")
        res["historyMatches"] = want is not None and rest == want
        res["ok"] = bool(rc == 0 and res["listed"] and res["endsWithReply"] and res["equalsMountContext"]
                         and res["prefixIntact"])
    finally:
        sc.close()
    print(json.dumps(res, indent=1, ensure_ascii=False))
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
