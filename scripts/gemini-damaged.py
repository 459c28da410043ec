#!/usr/bin/env python3
"""Make tests/fixtures/gemini/damaged/: damaged copies of the Gemini CLI samples, and what the
real CLI 0.61.0 sends when it resumes each (the kit's context.py at every point).

usage: scripts/gemini-damaged.py [--no-contexts] [--only VARIANT...]

Each file is a copy of a sample session (tests/fixtures/gemini/samples/) under a session id of
its own (every occurrence of the sample's id replaced), damaged one way (GEMINI-FORMAT.md §10):

  torn            the last line cut in half, no newline (a crash mid-write)
  garbage         a line that is not JSON, a JSON line of no kind, an array and a blank line
                  in the middle of a tool loop
  rewind-unknown  a $rewindTo naming an id that was never written (the CLI empties the list)
  odd-records     a $set.messages holding a string, a number, a record without id and one of
                  an unknown type; a record whose type is a number; a user record without content
  no-metadata     every metadata line removed (no sessionId or projectHash: the CLI cannot
                  read it; no contexts)
  stub            a start-up stub alone (metadata and <session_context>: no conversation)
  no-call-ids     the tool session with every call's and response's id removed (the CLI
                  derives ids from a hash of where they are, `ensureStableToolIds`)

The kit: $GEMINI_ORACLE_DIR (with its node_modules), else ../kits/gemini*. Contexts are
measured with `context.py FILE --all --home-as /home/dev`, 2 jobs at a time.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(REPO, "tests", "fixtures", "gemini")
SAMPLES = os.path.join(FIX, "samples", "gemini-home")
OUT = os.path.join(FIX, "damaged")


def kit():
    k = os.environ.get("GEMINI_ORACLE_DIR")
    if k:
        return k
    for d in [os.path.join(REPO, "..", "..", "kits", "gemini"), os.path.join(REPO, "..", "kits", "gemini")]:
        if os.path.isdir(os.path.join(d, "node_modules")):
            return os.path.abspath(d)
    raise SystemExit("no gemini-oracle with node_modules: set GEMINI_ORACLE_DIR")


def lines_of(slug, name):
    with open(os.path.join(SAMPLES, "tmp", slug, "chats", name), "rb") as f:
        return f.read().split(b"\n")[:-1]


def new_sid(variant):
    return str(uuid.UUID(hashlib.sha256(variant.encode()).hexdigest()[:32], version=4))


def write(variant, slug, lines, old_sid, torn_tail=None):
    sid = new_sid(variant)
    proj = "/home/dev/src/dmg-" + variant
    slug2 = "dmg-" + variant
    data = b"".join(l + b"\n" for l in lines)
    if torn_tail is not None:
        data += torn_tail
    data = data.replace(old_sid.encode(), sid.encode())
    data = data.replace(("/home/dev/src/" + slug).encode(), proj.encode())
    data = data.replace(("/home/dev/.gemini/tmp/" + slug).encode(), ("/home/dev/.gemini/tmp/" + slug2).encode())
    old_hash = hashlib.sha256(("/home/dev/src/" + slug).encode()).hexdigest()
    data = data.replace(old_hash.encode(), hashlib.sha256(proj.encode()).hexdigest().encode())
    chats = os.path.join(OUT, "gemini-home", "tmp", slug2, "chats")
    os.makedirs(chats, exist_ok=True)
    name = "session-2026-12-05T08-00-%s.jsonl" % sid[:8]
    with open(os.path.join(chats, name), "wb") as f:
        f.write(data)
    with open(os.path.join(OUT, "gemini-home", "tmp", slug2, ".project_root"), "w") as f:
        f.write(proj)
    return os.path.join(chats, name), proj, slug2


def main():
    only = sys.argv[sys.argv.index("--only") + 1:] if "--only" in sys.argv else None
    if os.path.isdir(OUT) and not only:
        shutil.rmtree(OUT)
    os.makedirs(os.path.join(OUT, "gemini-home"), exist_ok=True)
    projects = {}
    made = []

    qa_sid = "7fb7d652-217c-47ce-af29-36bb75378f8d"
    qa = lines_of("qa", "session-2026-12-05T07-36-7fb7d652.jsonl")
    tools_sid = "ac5699fe-16fb-4346-9e5e-3700a4f37493"
    tools = lines_of("tools", "session-2026-12-05T07-36-ac5699fe.jsonl")

    # torn: the last line (the leaf's lastUpdated) and half of the reply before it.
    last = qa[-2]
    made.append(("torn",) + write("torn", "qa", qa[:-2], qa_sid, torn_tail=last[: len(last) // 2]))

    # garbage: in the middle of the tool loop.
    g = tools[:12] + [b"{this is not JSON", b'{"hello":"a JSON line of no kind"}', b"[1,2,3]", b""] + tools[12:]
    made.append(("garbage",) + write("garbage", "tools", g, tools_sid))

    # rewind-unknown: the conversation emptied at the end.
    made.append(("rewind-unknown",) + write("rewind-unknown", "qa", qa + [b'{"$rewindTo":"no-such-message"}'], qa_sid))

    # odd-records
    odd = qa[:6] + [
        b'{"$set":{"messages":["a string",42,{"type":"user","content":[{"text":"no id"}]},'
        + qa[2] + b',' + qa[4] + b',{"id":"odd-system","type":"system","content":"an unknown type"}]}}',
        b'{"id":"odd-number-type","timestamp":"2026-12-05T07:36:27.000Z","type":5,"content":"a type that is a number"}',
        b'{"id":"odd-no-content","timestamp":"2026-12-05T07:36:27.500Z","type":"user"}',
        b'{"id":"odd-after","timestamp":"2026-12-05T07:36:28.000Z","type":"user","content":[{"text":"[[ODD]] After the odd records."}]}',
    ]
    made.append(("odd-records",) + write("odd-records", "qa", odd, qa_sid))

    # no-metadata
    nm = [l for l in qa if not (l.startswith(b'{"sessionId"'))]
    made.append(("no-metadata",) + write("no-metadata", "qa", nm, qa_sid))

    # stub: the compress session's second file.
    stub_sid = "76c200a5-bb70-4eb2-9fbe-4d44e0877585"
    stub = lines_of("compress", "session-2026-12-05T07-38-76c200a5.jsonl")
    made.append(("stub",) + write("stub", "compress", stub, stub_sid))

    # no-call-ids
    import re
    nid = [re.sub(rb'"id":"[a-z_]+__call_tools_[0-9]+",', b"", l) for l in tools]
    made.append(("no-call-ids",) + write("no-call-ids", "tools", nid, tools_sid))

    for variant, path, proj, slug in made:
        projects[proj] = slug
    with open(os.path.join(OUT, "gemini-home", "projects.json"), "w") as f:
        json.dump({"projects": projects}, f, indent=2)
    shutil.copy(os.path.join(SAMPLES, "settings.json"), os.path.join(OUT, "gemini-home", "settings.json"))

    if "--no-contexts" in sys.argv:
        return
    k = kit()
    os.makedirs(os.path.join(OUT, "contexts"), exist_ok=True)
    for variant, path, proj, slug in made:
        if variant in ("no-metadata", "stub") or (only and variant not in only):
            continue
        sid = new_sid(variant)
        out = os.path.join(OUT, "contexts", sid + ".contexts.json")
        r = subprocess.run([sys.executable, os.path.join(k, "context.py"), path, "--all", "--home-as", "/home/dev",
                            "--out", out], capture_output=True, text=True)
        print(variant, "rc", r.returncode, r.stderr.strip().splitlines()[-1:] if r.stderr else "")
        # The system instructions are kept in the samples' set only.
        with open(out) as f:
            d = json.load(f)
        with open(out, "w") as f:
            json.dump(d, f, indent=1, ensure_ascii=False)
            f.write("\n")


if __name__ == "__main__":
    main()
