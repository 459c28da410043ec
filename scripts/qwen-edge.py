#!/usr/bin/env python3
"""Hand-made Qwen Code sessions for what the CLI's own runs do not write, made from
the sessions a run_all.sh run wrote (scripts/qwen-fixtures runs this).

usage: qwen-edge.py QROOT

QROOT is the root of a qwen-oracle run (its sessions in QROOT/.qwen/projects). Three
project folders are (re)made beside the run's:

  src/edge     sessions Qwen Code loads: fragments (a second line of a uuid), a gap (a
               record of the chain removed), a record of an unknown type, a dangling
               tool call, a mid-turn user message, a slash command taken back, an image
               for a model that takes none, media a tool returned, a thought-only answer,
               an empty answer beside a call, an MCP tool name, a parent cycle, a long
               conversation (for tree and search), ... Their contexts come from the
               real CLI (package.py runs context.py on every point).
  src/damaged  files Qwen Code refuses or mangles; check reports them (tests compare
               the leaf's context where the CLI loads the file).
  src/edge-images  22 prompts with an image each (one repeated, two more from a tool,
               reference texts naming earlier ones), for a vision model and a text
               model: past 20 images Qwen Code sends references and attaches the last
               three again.

Every record keeps the shape the CLI writes; each session gets a fresh id, and the
records their cwd in the new project, so that the CLI loads them. Deterministic: ids
come from a seeded generator.
"""
import base64
import json
import os
import random
import re
import shutil
import sys

RNG = random.Random(30)


def uid():
    return "%08x-%04x-4%03x-%04x-%012x" % (
        RNG.getrandbits(32), RNG.getrandbits(16), RNG.getrandbits(12),
        0x8000 | RNG.getrandbits(14), RNG.getrandbits(48))


def sanitize(cwd):
    return re.sub(r"[^a-zA-Z0-9]", "-", cwd)


def dumps(d):
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


def load(path):
    out = []
    for line in open(path, "rb").read().decode().splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out


def first_session(root, scen, pred=None):
    d = os.path.join(root, ".qwen", "projects", sanitize(os.path.join(root, "src", scen)), "chats")
    files = sorted(f for f in os.listdir(d) if f.endswith(".jsonl"))
    for f in files:
        recs = load(os.path.join(d, f))
        if pred is None or pred(recs):
            return recs
    raise SystemExit("no %s session" % scen)


class Writer:
    def __init__(self, root, project):
        self.root = root
        self.cwd = os.path.join(root, "src", project)
        os.makedirs(self.cwd, exist_ok=True)
        self.dir = os.path.join(root, ".qwen", "projects", sanitize(self.cwd), "chats")
        shutil.rmtree(os.path.dirname(self.dir), ignore_errors=True)
        os.makedirs(self.dir)

    def rebase(self, recs, sid):
        out = []
        for r in recs:
            r = json.loads(json.dumps(r))
            if "sessionId" in r:
                r["sessionId"] = sid
            if "cwd" in r:
                r["cwd"] = self.cwd
            out.append(r)
        return out

    def write(self, name, lines):
        """`lines`: records (dicts) or raw strings (written as they are)."""
        sid = self.sid
        path = os.path.join(self.dir, sid + ".jsonl")
        with open(path, "w") as f:
            for l in lines:
                f.write(l if isinstance(l, str) else dumps(l) + "\n")
        with open(os.path.join(self.dir, "..", "NAMES.txt"), "a") as f:
            f.write("%s %s\n" % (sid, name))
        return path

    def new(self):
        self.sid = uid()
        return self.sid


def rec(base, **kw):
    """A record with the head of `base` (sessionId, cwd, version) and the fields given."""
    r = {"uuid": kw.pop("uuid", uid()), "parentUuid": kw.pop("parentUuid"), "sessionId": base["sessionId"],
         "timestamp": kw.pop("timestamp", base.get("timestamp")), "type": kw.pop("type")}
    for k in ("provenance", "cwd", "version"):
        if k in kw:
            r[k] = kw.pop(k)
        elif k in base and k != "provenance":
            r[k] = base[k]
    r.update(kw)
    return r


def user(base, parent, text, **kw):
    return rec(base, parentUuid=parent, type="user", provenance="real_user",
               message={"role": "user", "parts": [{"text": text}]}, **kw)


def assistant(base, parent, parts, model="qwen3-coder-plus", **kw):
    return rec(base, parentUuid=parent, type="assistant", provenance="assistant_output", model=model,
               message={"role": "model", "parts": parts}, **kw)


def tool_result(base, parent, call_id, name, response, parts=None):
    fr = {"id": call_id, "name": name, "response": response}
    if parts is not None:
        fr["parts"] = parts
    return rec(base, parentUuid=parent, type="tool_result", provenance="tool_result",
               message={"role": "user", "parts": [{"functionResponse": fr}]},
               toolCallResult={"callId": call_id, "status": "success"})


PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c636060f80f0000010100005f4d2f2b0000000049454e44ae426082")).decode()


def edge(root):
    w = Writer(root, "edge")
    qa = first_session(root, "qa", lambda rs: not any("forkedFrom" in r for r in rs)
                       and sum(1 for r in rs if r.get("type") == "user") >= 4)
    tools = first_session(root, "tools")
    image = first_session(root, "image")

    # 1. A fragment: a second line with the uuid of the last answer (its parts join it).
    sid = w.new()
    rs = w.rebase(qa, sid)
    last_a = [r for r in rs if r["type"] == "assistant"][-1]
    frag = dict(last_a)
    frag["message"] = {"role": "model", "parts": [{"text": " (and a fragment, written later)"}]}
    w.write("fragment-of-the-last-answer", rs + [frag])

    # 2. A fragment of an earlier user record: it becomes the leaf (the answer after it is lost).
    sid = w.new()
    rs = w.rebase(qa, sid)
    u = [r for r in rs if r["type"] == "user"][1]
    frag = dict(u)
    frag["message"] = {"role": "user", "parts": [{"text": "[[FRAG]] a second part"}]}
    w.write("fragment-of-an-earlier-prompt", rs + [frag])

    # 3. A gap: the third prompt removed (the records after it lose what came before).
    sid = w.new()
    rs = w.rebase(qa, sid)
    third = [r for r in rs if r["type"] == "user"][2]
    w.write("gap", [r for r in rs if r is not third])

    # 4. A record of an unknown type inside the chain, a prompt under it.
    sid = w.new()
    rs = w.rebase(qa, sid)
    odd = rec(rs[-1], parentUuid=rs[-1]["uuid"], type="future_record", payload={"x": 1})
    w.write("unknown-type-in-the-chain", rs + [odd, user(rs[-1], odd["uuid"], "[[AFTERODD]] Under an unknown record.")])

    # 5. An unknown subtype as the leaf.
    sid = w.new()
    rs = w.rebase(qa, sid)
    w.write("unknown-subtype-leaf", rs + [rec(rs[-1], parentUuid=rs[-1]["uuid"], type="system",
                                                provenance="system", subtype="future_subtype",
                                                systemPayload={"n": 1})])

    # 6. A dangling tool call (the process died before the result), then a prompt.
    sid = w.new()
    rs = w.rebase(tools, sid)
    k = next(i for i, r in enumerate(rs) if r["type"] == "assistant"
             and any("functionCall" in p for p in r["message"]["parts"]))
    cut = rs[:k + 1]
    w.write("dangling-call", cut + [user(cut[-1], cut[-1]["uuid"], "[[AFTERCRASH]] Go on.")])

    # 7. A mid-turn user message after a tool result (it joins the result's content).
    sid = w.new()
    rs = w.rebase(tools, sid)
    k = next(i for i, r in enumerate(rs) if r["type"] == "tool_result")
    mid = rec(rs[k], parentUuid=rs[k]["uuid"], type="user", provenance="real_user",
              subtype="mid_turn_user_message",
              message={"role": "user", "parts": [{"text": "[[MIDTURN]] also look at b.txt"}]},
              systemPayload={"displayText": "also look at b.txt"})
    rest = rs[k + 1:]
    if rest:
        rest[0] = dict(rest[0], parentUuid=mid["uuid"])
    w.write("mid-turn-message", rs[:k + 1] + [mid] + rest)

    # 8. A slash command whose invocation Qwen Code takes back (nothing was sent).
    sid = w.new()
    rs = w.rebase(qa, sid)
    cmd = user(rs[-1], rs[-1]["uuid"], "/stats")
    inv = rec(cmd, parentUuid=cmd["uuid"], type="system", provenance="system", subtype="slash_command",
              systemPayload={"phase": "invocation", "rawCommand": "/stats", "sentToModel": False,
                             "hiddenInvocation": False})
    res = rec(cmd, parentUuid=inv["uuid"], type="system", provenance="system", subtype="slash_command",
              systemPayload={"phase": "result", "rawCommand": "/stats", "sentToModel": False,
                             "outputHistoryItems": [{"type": "assistant", "text": "Session stats: 4 turns."}]})
    w.write("slash-command-taken-back", rs + [cmd, inv, res,
                                               user(res, res["uuid"], "[[AFTERSLASH]] And now?")])

    # 9. An image for a model that takes none: the image becomes Qwen Code's placeholder.
    sid = w.new()
    rs = w.rebase(image, sid)
    for r in rs:
        if r.get("model"):
            r["model"] = "qwen3-coder-plus"
    w.write("image-for-a-text-model", rs)

    # 10. Media a tool returned (read_file of an image, a vision model): split into a
    #     user message after the tool message.
    sid = w.new()
    rs = w.rebase(image, sid)
    a = assistant(rs[-1], rs[-1]["uuid"], [{"text": "Let me read it."},
                                           {"functionCall": {"id": "call_img_1", "name": "read_file",
                                                             "args": {"file_path": w.cwd + "/pic.png"}}}],
                  model="qwen3.6-plus")
    t = tool_result(a, a["uuid"], "call_img_1", "read_file", {"output": "Read image file: pic.png"},
                    parts=[{"inlineData": {"mimeType": "image/png", "data": PNG}}])
    b = assistant(t, t["uuid"], [{"text": "It is one pixel."}], model="qwen3.6-plus")
    w.write("media-from-a-tool", rs + [a, t, b])

    # 11. A reply of thought alone, then a prompt.
    sid = w.new()
    rs = w.rebase(qa, sid)
    th = assistant(rs[-1], rs[-1]["uuid"], [{"text": "Only thinking here.", "thought": True}])
    th_u = user(th, rs[-1]["uuid"], "[[QA5]] Anything?")
    th_u["parentUuid"] = th["uuid"]
    w.write("thought-only-answer", rs + [th, th_u])

    # 12. An empty answer beside a call (as a subagent writes them), its result, an answer.
    sid = w.new()
    rs = w.rebase(qa, sid)
    e1 = assistant(rs[-1], rs[-1]["uuid"], [], usageMetadata={"promptTokenCount": 10, "candidatesTokenCount": 2,
                                                             "thoughtsTokenCount": 0, "totalTokenCount": 12,
                                                             "cachedContentTokenCount": 0})
    e2 = assistant(e1, e1["uuid"], [{"functionCall": {"id": "call_e_1", "name": "glob", "args": {"pattern": "*"}}}])
    e3 = tool_result(e2, e2["uuid"], "call_e_1", "glob", {"output": "a.txt"})
    e4 = assistant(e3, e3["uuid"], [{"text": "One file."}])
    w.write("empty-answer-beside-a-call", rs + [e1, e2, e3, e4])

    # 13. An MCP tool with a long name, and two calls with one id.
    sid = w.new()
    rs = w.rebase(qa, sid)
    name = "mcp__my.server__" + "x" * 60
    m1 = assistant(rs[-1], rs[-1]["uuid"], [{"functionCall": {"id": "call_m_1", "name": name, "args": {"q": 1}}},
                                             {"functionCall": {"id": "call_m_1", "name": name, "args": {"q": 2}}}])
    m2 = tool_result(m1, m1["uuid"], "call_m_1", name, {"output": "done"})
    m3 = assistant(m2, m2["uuid"], [{"text": "MCP done."}])
    w.write("mcp-tool", rs + [m1, m2, m3])

    # 14. A parent cycle beside the chain: the leaf's chain walks into it and stops.
    sid = w.new()
    rs = w.rebase(qa, sid)
    c1, c2 = uid(), uid()
    x1 = user(rs[-1], c2, "[[CYC1]] in a cycle", uuid=c1)
    x2 = assistant(rs[-1], c1, [{"text": "[[CYC2]] in a cycle"}], uuid=c2)
    x3 = user(rs[-1], c2, "[[CYC3]] under the cycle")
    w.write("cycle", rs + [x1, x2, x3])

    # 15. An error result and a prompt on a user-role record (a prompt answered nothing:
    #     two user contents merge into one message).
    sid = w.new()
    rs = w.rebase(qa, sid)
    u1 = user(rs[-1], rs[-1]["uuid"], "[[NOANSWER]] first prompt")
    u2 = user(u1, u1["uuid"], "[[SECOND]] second prompt")
    w.write("two-prompts-in-a-row", rs + [u1, u2])

    # 16. A long conversation: 40 turns with tool calls, a branch every 10 turns.
    sid = w.new()
    base = w.rebase(qa, sid)[0]
    lines = []
    parent = None
    fork_points = []
    for n in range(40):
        u = user(base, parent, "[[LONG%d]] step %d of a long task" % (n, n))
        a = assistant(u, u["uuid"], [{"text": "Working on step %d." % n},
                                     {"functionCall": {"id": "call_l_%d" % n, "name": "run_shell_command",
                                                       "args": {"command": "echo %d" % n}}}])
        t = tool_result(a, a["uuid"], "call_l_%d" % n, "run_shell_command",
                        {"output": "Command: echo %d\nOutput: %d\nExit Code: 0" % (n, n)})
        d = assistant(t, t["uuid"], [{"text": "Step %d done." % n}])
        lines += [u, a, t, d]
        if n % 10 == 5:
            fork_points.append(d["uuid"])
        parent = d["uuid"]
    for k, p in enumerate(fork_points):
        rw = rec(base, parentUuid=p, type="system", provenance="system", subtype="rewind",
                 systemPayload={"truncatedCount": 2})
        lines += [rw, user(base, rw["uuid"], "[[BRANCH%d]] another way" % k)]
    # the leaf goes back to the main line
    rw = rec(base, parentUuid=parent, type="system", provenance="system", subtype="rewind",
             systemPayload={"truncatedCount": 0})
    lines += [rw, user(base, rw["uuid"], "[[LONGEND]] that is all")]
    w.write("long-branchy", lines)


def damaged(root):
    w = Writer(root, "damaged")
    qa = first_session(root, "qa", lambda rs: not any("forkedFrom" in r for r in rs)
                       and sum(1 for r in rs if r.get("type") == "user") >= 4)

    def raw(rs):
        return [dumps(r) + "\n" for r in rs]

    sid = w.new()
    lines = raw(w.rebase(qa, sid))
    lines[-1] = lines[-1][:len(lines[-1]) // 2]
    w.write("torn-last-line", lines)

    sid = w.new()
    lines = raw(w.rebase(qa, sid))
    lines.insert(len(lines) // 2, "this is not json {\n")
    w.write("garbage-line", lines)

    sid = w.new()
    lines = raw(w.rebase(qa, sid))
    lines.insert(3, "[1, 2, 3]\n")
    lines.insert(5, "\n")
    w.write("not-an-object-and-blank", lines)

    sid = w.new()
    rs = w.rebase(qa, sid)
    bad = dict(rs[4])
    del bad["sessionId"]
    rs[4] = bad
    w.write("record-without-session-id", rs)

    sid = w.new()
    rs = w.rebase(qa, sid)
    rs.append(user(rs[-1], rs[-1]["uuid"], "[[OTHER]] from another session"))
    rs[-1]["sessionId"] = uid()
    w.write("mixed-session-ids", rs)

    sid = w.new()
    rs = w.rebase(qa, sid)
    rs.append(user(rs[-1], uid(), "[[ORPHAN]] parent missing"))
    w.write("orphan-tail", rs)

    sid = w.new()
    rs = w.rebase(qa, sid)
    me = uid()
    rs.append(user(rs[-1], me, "[[SELF]] my own parent", uuid=me))
    w.write("self-parent-tail", rs)

    sid = w.new()
    rs = w.rebase(qa, sid)
    w.write("crlf", [dumps(r) + "\r\n" for r in rs])

    sid = w.new()
    w.write("empty", [])


def images(root):
    """src/edge-images: past 20 inline images Qwen Code sends references and attaches
    the last three again; with a model that takes no images, placeholders."""
    import hashlib
    w = Writer(root, "edge-images")
    image = first_session(root, "image")
    rng = random.Random(3020)

    def pic():
        return base64.b64encode(bytes(rng.getrandbits(8) for _ in range(24))).decode()

    def ref(data, mime="image/png"):
        h = hashlib.sha256(mime.encode() + b"\0" + data.encode()).hexdigest()[:12]
        n = len(data)
        pad = 2 if data.endswith("==") else 1 if data.endswith("=") else 0
        return "[Image #%s: %s, %d bytes]" % (h, mime, n * 3 // 4 - pad)

    for name, model in (("twenty-images", "qwen3.6-plus"), ("twenty-images-text-model", "qwen3-coder-plus")):
        sid = w.new()
        base = w.rebase(image, sid)[0]
        lines, parent, seen = [], None, []
        for n in range(22):
            data = seen[3] if n == 12 else pic()   # turn 12 repeats turn 3's image
            seen.append(data)
            parts = [{"text": "[[PIC%d]] what is this?" % n},
                     {"inlineData": {"mimeType": "image/png", "data": data}}]
            if n == 15:
                parts.insert(1, {"text": "compare with %s" % ref(seen[1])})
            u = user(base, parent, "")
            u["message"]["parts"] = parts
            lines.append(u)
            if n == 8:
                # a tool returns two images (nested in its response)
                a = assistant(u, u["uuid"], [{"functionCall": {"id": "call_pics", "name": "read_many_files",
                                                                 "args": {"paths": ["a.png", "b.png"]}}}], model=model)
                t = tool_result(a, a["uuid"], "call_pics", "read_many_files", {"output": "Read 2 images"},
                                parts=[{"inlineData": {"mimeType": "image/png", "data": pic()}},
                                       {"inlineData": {"mimeType": "image/jpeg", "data": pic()}}])
                lines += [a, t]
                u = t
            d = assistant(u, u["uuid"], [{"text": "Picture %d." % n}], model=model)
            lines.append(d)
            parent = d["uuid"]
        last = user(base, parent, "")
        last["message"]["parts"] = [{"text": "[[PICEND]] and this one, again like %s" % ref(seen[20])},
                                    {"inlineData": {"mimeType": "image/png", "data": pic()}}]
        lines.append(last)
        w.write(name, lines)


def main():
    root = os.path.abspath(sys.argv[1])
    edge(root)
    damaged(root)
    images(root)


if __name__ == "__main__":
    main()
