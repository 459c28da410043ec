#!/usr/bin/env python3
"""Makes the inputs of scripts/hostile-memory (issue 27, points 3, 4 and 7) in DIR.

    make-hostile-memory.py DIR [WHAT...]

WHAT (all by default):
  sparse    a Codex home holding a page of 3 GiB apparent size, 4 KB on disk
  million   a Codex home holding one plain page of a million lines (~120 MB)
  bombs     a Codex home holding six .jsonl.zst pages of 33 KB to 1 MB, each 1 GiB
            decompressed (empty lines; one line of blanks; entries padded with blanks)
  threads   a Codex home of 2,000 one-page threads and a state_5.sqlite naming them
  cost      a Pi session of ~150 MB (assistant messages with usage)
  branches  a Pi session of 100,000 branches (one root, 100,000 children)
  keys      a Pi session holding a 58 MB line of 4.5 million distinct keys
  deep      a Pi session: a chain of 200,000 entries, each holding "needle"
  comb      a Pi session: 20,000 forks deep (each entry a leaf and the next fork)
  chain     a Pi session: a chain of 100,000 entries, every other one with usage

Zstd frames are written by hand (RLE blocks), so nothing but Python is needed.
"""
import json
import os
import sqlite3
import sys

THREAD = "01a2331d-0000-7000-8000-{:012x}"
INSTR = "You are a coding agent. " * 800  # ~20 KB, as Codex writes


def meta(tid, cwd="/p/hostile"):
    return json.dumps({
        "timestamp": "2026-12-01T10:00:00.000Z", "ordinal": 0, "type": "session_meta",
        "payload": {"id": tid, "timestamp": "2026-12-01T10:00:00.000Z", "cwd": cwd,
                    "originator": "codex_cli_rs", "cli_version": "0.171.0",
                    "base_instructions": {"text": INSTR}},
    }, separators=(",", ":")) + "\n"


def item(o, text, role="user"):
    kind = "input_text" if role == "user" else "output_text"
    return json.dumps({
        "timestamp": "2026-12-01T10:00:01.000Z", "ordinal": o, "type": "response_item",
        "payload": {"type": "message", "role": role,
                    "content": [{"type": kind, "text": text}]},
    }, separators=(",", ":")) + "\n"


def page_path(home, n, day="2026/12/01"):
    d = os.path.join(home, "sessions", day)
    os.makedirs(d, exist_ok=True)
    tid = THREAD.format(n)
    return tid, os.path.join(d, f"rollout-2026-12-01T10-00-{n % 60:02d}-{tid}.jsonl")


def sparse(out):
    home = os.path.join(out, "sparse")
    tid, p = page_path(home, 1)
    with open(p, "w") as f:
        f.write(meta(tid))
        f.write(item(1, "before the hole"))
    os.truncate(p, 3 << 30)
    # A second, ordinary thread: the rest of the mount must live on.
    tid, p = page_path(home, 2)
    with open(p, "w") as f:
        f.write(meta(tid) + item(1, "an ordinary thread") + item(2, "its answer", "assistant"))


def million(out):
    home = os.path.join(out, "million")
    tid, p = page_path(home, 1)
    with open(p, "w") as f:
        f.write(meta(tid))
        buf = []
        for o in range(1, 1_000_001):
            buf.append(item(o, f"line {o} " + "x" * 40, "user" if o % 2 else "assistant"))
            if len(buf) == 10_000:
                f.write("".join(buf))
                buf = []
        f.write("".join(buf))


def block(last, ty, size):
    h = int(last) | (ty << 1) | (size << 3)
    return bytes([h & 255, (h >> 8) & 255, (h >> 16) & 255])


def raw_blocks(raw: bytes, last=False) -> bytes:
    """`raw` as raw blocks (at most 128 KiB each)."""
    chunks = [raw[i:i + (128 << 10)] for i in range(0, len(raw), 128 << 10)] or [b""]
    return b"".join(block(last and k == len(chunks) - 1, 0, len(c)) + c
                    for k, c in enumerate(chunks))


def rle(byte: int, last=False) -> bytes:
    """128 KiB of `byte` in four bytes."""
    return block(last, 1, 128 << 10) + bytes([byte])


FRAME = b"\x28\xb5\x2f\xfd\x00\x38"  # magic, no flags, a window of 128 KiB


def bombs(out):
    """Three shapes, twice each: a gigabyte of empty lines; one line of a gigabyte of
    blanks; 8,192 entries, each padded with 128 KiB of blanks (a gigabyte of entries)."""
    home = os.path.join(out, "bombs")
    for n in range(1, 7):
        tid, p = page_path(home, n)
        head = (meta(tid) + item(1, "bomb")).encode()
        shape = n % 3
        f = bytearray(FRAME) + raw_blocks(head)
        if shape == 0:
            f += b"".join(rle(ord("\n"), k == 8191) for k in range(8192))
        elif shape == 1:
            f += raw_blocks(b'{"type":"response_item","payload":')
            f += b"".join(rle(ord(" "), k == 8191) for k in range(8192))
        else:
            for o in range(2, 8194):
                line = item(o, f"entry {o}").encode()
                f += raw_blocks(line[:-2]) + rle(ord(" ")) + raw_blocks(line[-2:], o == 8193)
        with open(p + ".zst", "wb") as w:
            w.write(f)
    # An ordinary thread beside them.
    tid, p = page_path(home, 9)
    with open(p, "w") as f:
        f.write(meta(tid) + item(1, "an ordinary thread") + item(2, "its answer", "assistant"))


def threads(out, n=2000):
    home = os.path.join(out, "threads")
    os.makedirs(home, exist_ok=True)
    db = sqlite3.connect(os.path.join(home, "state_5.sqlite"))
    db.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL, "
               "title TEXT, name TEXT, source TEXT, cwd TEXT, first_user_message TEXT)")
    rows = []
    for k in range(n):
        tid, p = page_path(home, 1000 + k, day=f"2026/12/{1 + k // 100:02d}")
        with open(p, "w") as f:
            f.write(meta(tid, cwd=f"/p/{k % 20}") + item(1, f"thread {k}")
                    + item(2, "answer", "assistant"))
        rows.append((tid, p, f"title of thread {k} " + "t" * 200, None, "exec",
                     f"/p/{k % 20}", "first message " + "m" * 300))
    db.executemany("INSERT INTO threads VALUES (?,?,?,?,?,?,?)", rows)
    db.commit()


PI_HEADER = {"type": "session", "version": 3, "id": "hostile-mem",
             "timestamp": "2026-01-05T09:00:00.000Z", "cwd": "/p"}


def pi_user(i, parent, text):
    return {"type": "message", "id": f"u{i}", "parentId": parent,
            "timestamp": "2026-01-05T09:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": text}],
                        "timestamp": 1}}


def pi_assistant(i, parent, text):
    return {"type": "message", "id": f"a{i}", "parentId": parent,
            "timestamp": "2026-01-05T09:00:02.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
                        "api": "anthropic-messages", "provider": "anthropic",
                        "model": "claude-sonnet-4-5", "stopReason": "stop", "timestamp": 2,
                        "usage": {"input": 1000 + i, "output": 200, "cacheRead": 50,
                                  "cacheWrite": 10, "totalTokens": 1260 + i,
                                  "cost": {"input": 0.003, "output": 0.003, "cacheRead": 0.0,
                                           "cacheWrite": 0.0, "total": 0.006}}}}


def dump(f, lines):
    f.write("".join(json.dumps(l, separators=(",", ":")) + "\n" for l in lines))


def cost(out):
    d = os.path.join(out, "pi")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "cost-150mb.jsonl"), "w") as f:
        dump(f, [PI_HEADER])
        parent = None
        i = 0
        while f.tell() < 150 << 20:
            lines = []
            for _ in range(1000):
                lines.append(pi_user(i, parent, f"question {i} " + "q" * 300))
                lines.append(pi_assistant(i, f"u{i}", f"answer {i} " + "a" * 300))
                parent = f"a{i}"
                i += 1
            dump(f, lines)


def branches(out, n=100_000):
    d = os.path.join(out, "pi")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "branches-100k.jsonl"), "w") as f:
        dump(f, [PI_HEADER, pi_user(0, None, "the root")])
        for k in range(0, n, 1000):
            dump(f, [pi_assistant(i, "u0", f"branch {i}") for i in range(k, k + 1000)])


def keys(out):
    d = os.path.join(out, "pi")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "keys-58mb.jsonl"), "w") as f:
        dump(f, [PI_HEADER, pi_user(0, None, "before")])
        # An assistant message whose usage object holds 5.6 million distinct keys.
        head = json.dumps(pi_assistant(1, "u0", "many keys"), separators=(",", ":"))
        cut = head.index('"usage":{') + len('"usage":{')
        f.write(head[:cut])
        step = 100_000
        for k in range(0, 4_500_000, step):
            f.write(",".join(f'"k{j}":1' for j in range(k, k + step)) + ",")
        f.write(head[cut:] + "\n")
        dump(f, [pi_user(2, "a1", "after")])


def deep(out, n=200_000):
    d = os.path.join(out, "pi")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "deep-200k.jsonl"), "w") as f:
        dump(f, [PI_HEADER])
        for k in range(0, n, 10_000):
            dump(f, [pi_user(i, f"u{i - 1}" if i else None, f"needle {i}")
                     for i in range(k, k + 10_000)])


def comb(out, n=20_000):
    d = os.path.join(out, "pi")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "comb-20k.jsonl"), "w") as f:
        dump(f, [PI_HEADER])
        for i in range(n):
            fork = pi_user(i, f"u{i - 1}" if i else None, f"fork {i}")
            leaf = pi_user(i, f"u{i}", f"leaf {i}")
            leaf["id"] = f"l{i}"
            dump(f, [fork, leaf])


def chain(out, n=100_000):
    d = os.path.join(out, "pi")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "chain-100k.jsonl"), "w") as f:
        dump(f, [PI_HEADER])
        parent = None
        for i in range(n // 2):
            dump(f, [pi_user(i, parent, "q"), pi_assistant(i, f"u{i}", "a")])
            parent = f"a{i}"


def main():
    out = sys.argv[1]
    what = sys.argv[2:] or ["sparse", "million", "bombs", "threads", "cost", "branches", "keys",
                            "deep", "comb", "chain"]
    for w in what:
        globals()[w](out)


if __name__ == "__main__":
    main()
