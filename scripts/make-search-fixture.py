#!/usr/bin/env python3
"""scripts/make-search-fixture.py OUT.jsonl — the hand-made session that tests/search.rs
searches through a mount and with `sessionfs grep`: every way a raw line and its
rendered KIND file can differ (JSON escapes, canonical or not; numbers JavaScript
writes otherwise; non-canonical spacing; invalid UTF-8; a NUL; images that are
binary, text, and invalid UTF-8; an entry nested too deeply to be built; every
decoration the renderer adds). Deterministic: the bytes are written out literally."""
import base64
import sys

PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5E"
       "rkJggg==")
SVG = base64.b64encode(b'<svg xmlns="http://www.w3.org/2000/svg">\n<text>hello image text</text>\n</svg>\n').decode()
BADUTF8 = base64.b64encode(b"foo first line\nfoo \xff\xfe broken\nfoo last line\n").decode()

T = "2026-01-05T09:00:%02d.000Z"
n = 0


def ts():
    global n
    n += 1
    return T % n


def entry(body, id_, parent):
    p = "null" if parent is None else '"%s"' % parent
    return '{"type":%s,"id":"%s","parentId":%s,"timestamp":"%s",%s}' % (body[0], id_, p, ts(), body[1])


def msg(role, content_json, extra=""):
    return ('"message"', '"message":{"role":"%s","content":%s%s,"timestamp":1}' % (role, content_json, extra))


lines = []
lines.append('{"type":"session","version":3,"id":"0190c0de-5eac-7000-8000-00000000beef",'
             '"timestamp":"2026-01-05T09:00:00.000Z","cwd":"/home/dev/caf\u00e9"}')
lines.append(entry(('"model_change"', '"provider":"anthropic","modelId":"claude-sonnet-4-5"'), "e0000001", None))
# Escapes as JSON.stringify writes them, and non-ASCII text as is.
lines.append(entry(msg("user", '[{"type":"text","text":"Say \\"hello\\" to C:\\\\Users\\\\me and\\nthen a new line: na\u00efve caf\u00e9 \u2014 \u65e5\u672c\u8a9e emoji \U0001F600\\tand a tab"}]'), "e0000002", "e0000001"))
# Thinking, text, and a tool call whose arguments hold quotes, a backslash, an escaped
# slash, a non-canonical number, numeric keys, and a nested array.
lines.append(entry(msg("assistant",
    '[{"type":"thinking","thinking":"hmm \\"quoted\\" thoughts"},'
    '{"type":"text","text":"Sure.\\nLine two\\r\\nwith CRLF"},'
    '{"type":"toolCall","id":"call_1","name":"bash","arguments":'
    '{"command":"echo \\"hi\\" > out.txt && printf \'a\\\\nb\'","timeout":10.0,"path":"a\\/b",'
    '"b":1,"2":"two","list":[1.50,2,-0,1e3,12345678901234567890]}}]',
    ',"stopReason":"toolUse"'), "e0000003", "e0000002"))
# A tool result marked as an error, with ANSI colours (canonical \\u001b escapes).
lines.append(entry(msg("toolResult",
    '[{"type":"text","text":"\\u001b[31mred error\\u001b[0m output"}]',
    ',"toolCallId":"call_1","toolName":"bash","isError":true'), "e0000004", "e0000003"))
# Escapes JSON.stringify would not write: each spells text the raw line lacks.
lines.append(entry(msg("user",
    '[{"type":"text","text":"\\u0041BC escaped, caf\\u00e9 escaped, CAF\\u00C9 upper, '
    'smile \\ud83d\\ude00, slash \\/ here, line\\u2028sep"}]'), "e0000005", "e0000004"))
# Images: a PNG (binary, NULs), an SVG (text), and bytes that are not UTF-8.
lines.append(entry(msg("user",
    '[{"type":"text","text":"three pictures"},'
    '{"type":"image","data":"%s","mimeType":"image/png"},'
    '{"type":"image","data":"%s","mimeType":"image/svg+xml"},'
    '{"type":"image","data":"%s","mimeType":"image/jpeg"}]' % (PNG, SVG, BADUTF8)),
    "e0000006", "e0000005"))
# Nothing to show, two ways.
lines.append(entry(msg("user", "[]"), "e0000007", "e0000006"))
lines.append(entry(('"message"', '"message":{"role":"user","timestamp":1}'), "e0000008", "e0000007"))
# An assistant turn that failed.
lines.append(entry(msg("assistant", '[{"type":"text","text":"partial"}]',
    ',"stopReason":"error","errorMessage":"overloaded: try again"'), "e0000009", "e0000008"))
# Bash, with every tail.
lines.append(entry(('"message"', '"message":{"role":"bashExecution","command":"ls -la /tmp",'
    '"output":"total 0\\nfile one","exitCode":2,"cancelled":false,"truncated":true,'
    '"fullOutputPath":"/tmp/out.log","excludeFromContext":true,"timestamp":1}'), "e000000a", "e0000009"))
# A compaction with a number JavaScript writes otherwise (1.5e3 is 1500).
lines.append(entry(('"compaction"', '"summary":"Summary of the work so far","firstKeptEntryId":"e0000004",'
    '"tokensBefore":1.5e3'), "e000000b", "e000000a"))
lines.append(entry(('"branch_summary"', '"fromId":"e0000003","summary":"Tried another way"'), "e000000c", "e000000b"))
lines.append(entry(('"label"', '"targetId":"e0000002","label":"start-here"'), "e000000d", "e000000c"))
lines.append(entry(('"session_info"', '"name":""'), "e000000e", "e000000d"))
lines.append(entry(('"thinking_level_change"', '"thinkingLevel":"high"'), "e000000f", "e000000e"))
# JSON spaced as people write it (rendered without the spaces), and duplicate keys.
lines.append('{"type": "message", "id": "e0000010", "parentId": "e000000f", "timestamp": "%s", '
             '"message": {"role": "assistant", "content": [{"type": "toolCall", "id": "call_2", '
             '"name": "edit", "arguments": {"n": [1, 2], "flag": true, "text": "spaced out"}}], '
             '"stopReason": "stop", "stopReason": "stop"}}' % ts())
# A NUL in text: the KIND file is binary to grep.
lines.append(entry(msg("user", '[{"type":"text","text":"before\\u0000after nul"}]'), "e0000011", "e0000010"))
# Custom data nested past the JSON parser's limit: "cannot be shown".
deep = "[" * 130 + '"deep value"' + "]" * 130
lines.append(entry(('"custom"', '"customType":"deep","data":%s' % deep), "e0000012", "e0000011"))
# An entry type Pi does not know: shown as indented JSON.
lines.append(entry(('"mystery"', '"note":"unknown \\"kind\\" here","count":7'), "e0000013", "e0000012"))
# A custom message and a custom entry.
lines.append(entry(('"custom_message"', '"customType":"ext","content":"from an extension","display":true'),
                   "e0000014", "e0000013"))
lines.append(entry(('"custom"', '"customType":"state","data":{"k":"v","n":0.1}'), "e0000015", "e0000014"))
# A branch: a second child of e0000002, with a CRLF line ending.
lines.append(entry(msg("user", '[{"type":"text","text":"the other branch"}]'), "e0000016", "e0000002") + "\r")

out = b"".join(l.encode("utf-8") + b"\n" for l in lines)
# Invalid UTF-8 inside a string (rendered as U+FFFD).
out += entry(msg("user", '[{"type":"text","text":"bad XX byte"}]'), "e0000017", "e0000016").encode().replace(b"XX", b"\xff") + b"\n"
open(sys.argv[1], "wb").write(out)
