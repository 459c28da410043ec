#!/usr/bin/env python3
"""Damaged and unusual Claude Code session files, made from a real one.

usage: scripts/make-claude-damaged.py [OUT_DIR]   (default tests/fixtures/claude/damaged)

Each case starts from the fork session of the `qa` sample (written by Claude Code
2.1.197: 20 lines, one linear conversation of 13 nodes) and damages it the way a crash,
a newer Claude Code or a careless tool could. The output is deterministic.

The contexts Claude Code sends at the damaged lines of two cases are committed in
tests/fixtures/claude/damaged-contexts-VERSION/ (scripts/claude-goldens re-captures them), made with claude-oracle's context.sh on a copy
of the case named <sessionId>.jsonl:

  ./context.sh COPY UUID... --leaf --map --home-as /home/dev --out OUT.json

then kept to {uuid: {messages, via, [leaf]}} as scripts/make-claude-fixtures.sh keeps
them (missing-parent-bridged: the four lines it adds; parent-cycle: the three).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SRC = os.path.join(REPO, "tests/fixtures/claude/projects/-home-dev-src-qa/034d3153-8c13-4469-9665-5948bffe2026.jsonl")
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "tests/fixtures/claude/damaged")

with open(SRC, "rb") as f:
    RAW = f.read().splitlines(keepends=True)
LINES = [json.loads(r) for r in RAW]


def dump(d):
    return (json.dumps(d, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def node(uuid, parent, text, ts, ty="user", **extra):
    d = {"parentUuid": parent, "isSidechain": False, "type": ty,
         "message": {"role": "user", "content": text}, "uuid": uuid, "timestamp": ts,
         "userType": "external", "entrypoint": "cli", "cwd": "/home/dev/src/qa",
         "sessionId": "034d3153-8c13-4469-9665-5948bffe2026", "version": "2.1.197", "gitBranch": "HEAD"}
    d.update(extra)
    return d


def assistant(uuid, parent, text, ts, msg_id):
    """A one-block assistant line, shaped as the sample's own."""
    a = next(d for d in reversed(LINES) if d.get("type") == "assistant")
    m = dict(a["message"], id=msg_id, content=[{"type": "text", "text": text}])
    return dict(a, parentUuid=parent, uuid=uuid, timestamp=ts, message=m, requestId="req_" + msg_id[-6:])


LAST = next(d for d in reversed(LINES) if d.get("uuid"))["uuid"]
T = "2026-12-01T07:00:0%d.000Z"
U = "00000000-0000-4000-8000-0000000000%02d"

CASES = {
    # The last line was cut short by a crash: no newline, incomplete JSON.
    "torn-last-line": RAW + [dump(node(U % 1, LAST, "cut short", T % 1))[:60]],
    # Lines of types this Claude Code does not know, with and without a uuid, and an old
    # build's progress line, whose child hangs under the progress line's parent.
    "unknown-types": RAW + [
        dump({"parentUuid": LAST, "isSidechain": False, "type": "future_node", "uuid": U % 2,
              "timestamp": T % 2, "payload": {"x": 1}}),
        dump({"type": "future-meta", "sessionId": "034d3153-8c13-4469-9665-5948bffe2026", "data": [1, 2]}),
        dump({"parentUuid": LAST, "isSidechain": False, "type": "progress", "uuid": U % 3,
              "timestamp": T % 3, "data": {"type": "hook_progress"}}),
        dump(node(U % 4, U % 3, "[[AFTERPROGRESS]] under a progress line", T % 4)),
    ],
    # A line whose parent is not in the file.
    "missing-parent": RAW + [dump(node(U % 5, "ffffffff-ffff-4fff-8fff-ffffffffffff", "[[ORPHAN]] my parent is gone", T % 5))],
    # Lines whose parent is not in the file, answered: Claude Code bridges a missing
    # parent to the newest line written at most 5 s before (the first), not further
    # (the second, a minute later, is a root); the last-prompt names the first answer.
    "missing-parent-bridged": RAW + [
        dump(node(U % 10, "ffffffff-ffff-4fff-8fff-00000000dead",
                  "[[BRIDGED]] my parent is gone, but I came 2 s after the last line",
                  "2026-12-01T06:11:19.000Z")),
        dump(assistant(U % 11, U % 10, "Answer to the bridged prompt.", "2026-12-01T06:11:19.100Z",
                       "msg_01BRIDGEDaaaaaaaaaaaaaaa")),
        dump(node(U % 12, "ffffffff-ffff-4fff-8fff-00000000beef",
                  "[[FARORPHAN]] my parent is gone, and I came a minute later",
                  "2026-12-01T06:12:19.000Z")),
        dump(assistant(U % 13, U % 12, "Answer to the far orphan.", "2026-12-01T06:12:19.100Z",
                       "msg_01FARORPHANaaaaaaaaaaaaa")),
        dump({"type": "last-prompt", "lastPrompt": "[[BRIDGED]] my parent is gone, but I came 2 s after the last line",
              "leafUuid": U % 11, "sessionId": "034d3153-8c13-4469-9665-5948bffe2026"}),
    ],
    # Two lines that are each other's parent, and one that is its own.
    "parent-cycle": RAW + [
        dump(node(U % 6, U % 7, "[[CYCLE-A]]", T % 6)),
        dump(node(U % 7, U % 6, "[[CYCLE-B]]", T % 7)),
        dump(node(U % 8, U % 8, "[[SELF]] my own parent", T % 8)),
    ],
    # The same uuid twice: the later line wins, as in Claude Code's map.
    "duplicate-uuid": RAW + [dump(node(LINES[3]["uuid"], None, "[[DUPLICATE]] the same uuid again", T % 9))],
    # Blank lines, text that is not JSON, JSON that is not an object.
    "garbage-lines": RAW[:5] + [b"\n", b"   \n", b"not json at all\n", b"[1,2,3]\n", b"{\"half\":\n"] + RAW[5:],
    # Only metadata: a session Claude Code started but never wrote a node to.
    "metadata-only": [l for l in RAW if b'"uuid"' not in l],
    # Nothing at all.
    "empty": [],
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, lines in CASES.items():
        with open(os.path.join(OUT, name + ".jsonl"), "wb") as f:
            f.write(b"".join(lines))
    print("wrote %d files to %s" % (len(CASES), OUT))


if __name__ == "__main__":
    main()
