#!/usr/bin/env node
// make-damaged.mjs — damaged / unusual session files plus what Pi did with each.
//
// Usage: node scripts/make-damaged.mjs OUT_DIR [--oracle DIR]
//          [--raw-1.6 FILE --raw-earendil FILE --raw-mariozechner FILE]
//
// 1. The cases of pi-oracle's pi-edge-cases.mjs: its CASES table (and CASES16, the
//    cases of Pi 1.6's system messages, context edits, usage entries and compaction
//    systemMessage, whose files start with `1-6-`) is taken from that script's own
//    source (the block from `const H =` up to `const results`) and evaluated, so the
//    bytes are exactly the ones that script writes. Case names are made file-name
//    friendly (spaces, parens, colons, dots -> "-").
// 2. Extra cases defined below (BOM, invalid UTF-8, duplicate JSON keys, odd ids, ...).
// 3. Each file is opened by Pi 1.6.0, 0.81.1 and 0.73.1 through pi-edge-cases.mjs's
//    own `--child` mode (fresh process per case, 5 s timeout, same report shape), run
//    with scripts/seeded-preload.mjs in NODE_OPTIONS so the ids Pi appends are stable.
//    Results go to OUT_DIR/expected.json. With --raw-* (the saved output of
//    `pi-edge-cases.mjs --pi …`), the results for the original cases are checked
//    to be identical to what that script reported.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual, parseArgs } from "node:util";
import { clientDir, oracleDir, PKGS } from "./pi-common.mjs";

const { values: opt, positionals } = parseArgs({
	allowPositionals: true,
	options: {
		oracle: { type: "string" },
		"raw-1.6": { type: "string" },
		"raw-earendil": { type: "string" },
		"raw-mariozechner": { type: "string" },
	},
});
const [outDir] = positionals;
if (!outDir) {
	process.stderr.write("usage: make-damaged.mjs OUT_DIR [--oracle DIR] [--raw-1.6 F --raw-earendil F --raw-mariozechner F]\n");
	process.exit(2);
}
const dir = oracleDir(opt.oracle);
const edgeScript = path.join(dir, "pi-edge-cases.mjs");
const preload = path.join(path.dirname(fileURLToPath(import.meta.url)), "seeded-preload.mjs");

// ---- 1. the original CASES, evaluated from pi-edge-cases.mjs's source -----------
const src = fs.readFileSync(edgeScript, "utf8");
const from = src.indexOf("const H = ");
const to = src.indexOf("const results = {};");
if (from < 0 || to < from) throw new Error("cannot find the CASES block in pi-edge-cases.mjs");
const lib = new Function(
	`${src.slice(from, to)}\nreturn { CASES, CASES16: typeof CASES16 === "undefined" ? {} : CASES16, H, ts, mc, user, asst, J, base };`,
)();
const { CASES, CASES16, H, ts, mc, user, asst, J, base } = lib;

const friendly = (name) =>
	name
		.toLowerCase()
		.replace(/[^a-z0-9-]+/g, "-")
		.replace(/-+/g, "-")
		.replace(/^-+|-+$/g, "");

const DESCRIPTIONS = {
	baseline: "A valid header + model_change + user + assistant (the base the other cases modify).",
	"trailing-partial-line-then-append": "Last line is a truncated JSON fragment without newline; then Pi appends a user message.",
	"no-final-newline-then-append": "Last line is complete JSON but has no final newline; then Pi appends a user message.",
	"blank-and-garbage-lines": "Blank, whitespace-only, non-JSON and half-JSON lines between valid lines.",
	"crlf-line-endings": "Every line ends in CRLF.",
	"corrupt-header-line": "First line is a truncated header.",
	"header-not-first": "An entry line comes before the header.",
	"empty-file": "0-byte file.",
	"unknown-entry-type-as-leaf": "Last entry has an unknown type (future_thing).",
	"label-is-last-line": "A label entry is the last line (so it is Pi's leaf).",
	"orphan-parent-missing": "An entry whose parentId is not in the file, with a child.",
	"duplicate-id": "Two entries with the same id (no cycle).",
	"duplicate-id-forming-cycle": "A later entry re-uses an id so that the parent links form a cycle.",
	"self-parent": "An entry whose parentId is its own id.",
	"parent-cycle": "Two entries that are each other's parent.",
	"entry-missing-id": "Last entry has no id field.",
	"children-out-of-timestamp-order": "Two siblings whose timestamps are in reverse file order.",
	"header-and-user-only-then-append (lazy-write path)": "Header + model_change + user, no assistant; then Pi appends user + assistant.",
	"append-as-child-of-old-node": "Pi branches to an older entry and appends a user message there.",
	"second-compaction-keeps-range-containing-first": "A second compaction whose kept range (firstKeptEntryId) starts before the first compaction.",
	"compaction-firstKept-not-on-path": "A compaction whose firstKeptEntryId does not exist.",
	"empty-branch-summary-skipped": "A branch_summary with an empty summary on the path.",
	"message-with-null-content": "A user message with content: null as the leaf.",
	"missing-file-then-append": "No file at all; Pi opens the path and appends user + assistant (no damaged/ file for this case).",
};

const DESCRIPTIONS16 = {
	"1.6: system-message-in-context": "model_change, a system message (content \"\", a preamble section, one tool), user, assistant: the base of the 1.6 cases.",
	"1.6: system-message-null-content": "A system message with content: null (Pi reads it as \"\").",
	"1.6: context-edit-null-removes-target": "A context_edit with replacement null on the user message.",
	"1.6: context-edit-last-in-path-wins": "Two context_edits of one user message: a string, then blocks; the later one wins.",
	"1.6: context-edit-string-on-assistant-as-written-by-hand": "A string replacement on an assistant message (Pi's writer would store one text block).",
	"1.6: context-edit-target-missing": "A context_edit whose target is not in the file.",
	"1.6: context-edit-before-its-target-on-path": "A context_edit that comes before its target on the path (only possible by hand).",
	"1.6: context-edit-on-other-branch": "A context_edit on a sibling branch of the leaf: no effect there.",
	"1.6: context-edit-null-on-system-message": "A context_edit with replacement null on the system message.",
	"1.6: context-edit-replacement-on-system-message": "A context_edit with a replacement on the system message: no effect.",
	"1.6: context-edit-null-on-compaction": "A context_edit with replacement null on the latest compaction (with systemMessage).",
	"1.6: context-edit-outside-kept-range-on-kept-target": "A context_edit before the compaction's first kept entry, on a kept target: no effect.",
	"1.6: compaction-systemMessage-and-kept-system-dropped": "A compaction with systemMessage whose kept range holds a system patch: the patch is dropped.",
	"1.6: compaction-retain-none": "A compaction whose firstKeptEntryId is its own id (keeps nothing).",
	"1.6: usage-is-leaf": "A usage entry is the last line, so it is Pi's leaf.",
};

const cases = []; // {name, file, bytes|null, action, source, description}
for (const [name, c] of Object.entries({ ...CASES, ...CASES16 })) {
	cases.push({
		name,
		file: c.text === null ? null : `${friendly(name)}.jsonl`,
		bytes: c.text === null ? null : Buffer.from(c.text, "utf8"),
		action: c.action ?? null,
		source: "pi-edge-cases.mjs",
		description: DESCRIPTIONS[name] ?? DESCRIPTIONS16[name] ?? "",
	});
}

// ---- 2. extra cases -------------------------------------------------------------
const line = (o) => JSON.stringify(o);
const B = (...parts) => Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p, "utf8"))));
const labelEntry = (id, parentId, s, targetId, label) => ({ type: "label", id, parentId, timestamp: ts(s), targetId, label });
const oddId = (id) => B(J(...base, user(id, "aaaaaaa3", 4), asst("aaaaaaa5", id, 5)));

// invalid UTF-8 inside a JSON string: a lone 0xFF, 0xFE and a truncated 3-byte sequence (E2 82).
const badUtf8 = (() => {
	const u = user("aaaaaaa4", "aaaaaaa3", 4);
	u.message.content[0].text = "bad bytes: <@@BAD@@> end";
	const [pre, post] = line(u).split("@@BAD@@");
	return B(J(...base), pre, Buffer.from([0xff, 0xfe, 0x20, 0xe2, 0x82]), post, "\n", J(asst("aaaaaaa5", "aaaaaaa4", 5)));
})();

// duplicate keys: JSON.parse keeps the LAST value (serde_json's derive rejects duplicates).
const dupKeys = (() => {
	const first = `{"type":"message","id":"aaaaaaa9","parentId":"aaaaaaa1","timestamp":"${ts(4)}","message":{"role":"user","content":[{"type":"text","text":"first"}],"timestamp":1,"content":[{"type":"text","text":"second"}]},"id":"aaaaaaa4","parentId":"aaaaaaa3"}`;
	return B(J(...base), first, "\n", J(asst("aaaaaaa5", "aaaaaaa4", 5)));
})();

const threeRoots = B(
	J(
		H,
		mc("aaaaaaa1", null, 1),
		user("aaaaaaa2", "aaaaaaa1", 2),
		asst("aaaaaaa3", "aaaaaaa2", 3),
		user("bbbbbbb1", null, 4),
		asst("bbbbbbb2", "bbbbbbb1", 5),
		{ type: "branch_summary", id: "ccccccc1", parentId: null, timestamp: ts(6), fromId: "root", summary: "Tried another approach from the very start." },
		user("ccccccc2", "ccccccc1", 7),
		asst("ccccccc3", "ccccccc2", 8),
	),
);

const EXTRA = [
	["bom-before-header", B(Buffer.from([0xef, 0xbb, 0xbf]), J(...base)), "UTF-8 BOM (EF BB BF) before the header line."],
	["invalid-utf8-in-string", badUtf8, "Line 5 (user aaaaaaa4) has raw bytes FF FE and a truncated E2 82 sequence inside a JSON string; an assistant child follows."],
	["duplicate-json-keys", dupKeys, 'Line 5 has duplicate keys: id "aaaaaaa9" then "aaaaaaa4", parentId "aaaaaaa1" then "aaaaaaa3", message.content "first" then "second". JSON.parse keeps the last ones.'],
	["id-with-slash", oddId("aa/bb"), 'A v3 user entry with id "aa/bb" and an assistant child of it.'],
	["id-dotdot", oddId(".."), 'A v3 user entry with id ".." and an assistant child of it.'],
	["id-dot", oddId("."), 'A v3 user entry with id "." and an assistant child of it.'],
	["id-reply", oddId("reply"), 'A v3 user entry with id "reply" and an assistant child of it.'],
	["id-empty-string", oddId(""), 'A v3 user entry with id "" and an assistant child with parentId "" (falsy in JS).'],
	[
		"label-dangling-target",
		B(J(...base, labelEntry("aaaaaaa4", "aaaaaaa3", 4, "deadbeef", "ghost"), user("aaaaaaa5", "aaaaaaa4", 5), asst("aaaaaaa6", "aaaaaaa5", 6))),
		'A label entry whose targetId "deadbeef" does not exist, followed by user + assistant.',
	],
	["no-final-newline-readonly", B(J(...base, user("aaaaaaa4", "aaaaaaa3", 4)).trimEnd()), "Last line (user aaaaaaa4) is complete JSON without a final newline; nothing is appended."],
	["three-roots", threeRoots, 'Three roots: a model_change chain, a user message with parentId null, and a branch_summary with parentId null (fromId "root"); the leaf is on the third.'],
];
for (const [name, bytes, description] of EXTRA) {
	cases.push({ name, file: `${name}.jsonl`, bytes, action: null, source: "extra", description });
}

// ---- write files ------------------------------------------------------------------
fs.mkdirSync(outDir, { recursive: true });
for (const c of cases) if (c.bytes) fs.writeFileSync(path.join(outDir, c.file), c.bytes);

// ---- 3. run Pi on each file -----------------------------------------------------------
const env = { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${preload}`.trim() };
function runPi(which, c) {
	const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "pi-edge-"));
	const file = path.join(tmp, "s.jsonl");
	if (c.bytes) fs.writeFileSync(file, c.bytes);
	const child = spawnSync(process.execPath, [edgeScript, "--pi", which, "--child", JSON.stringify({ file, action: c.action ?? undefined })], {
		cwd: dir,
		env,
		encoding: "utf8",
		timeout: 5000,
	});
	let r;
	// pi-edge-cases.mjs reports the signal; it varies between runs (SIGTERM at the 5 s timeout,
	// or SIGTRAP when 0.81.1's loop exhausts the V8 heap first), so it is left out here.
	if (child.error?.code === "ETIMEDOUT" || child.signal) r = HUNG;
	else {
		try {
			r = JSON.parse(child.stdout);
		} catch {
			r = { crash: (child.stderr || child.stdout).slice(0, 400) };
		}
	}
	fs.rmSync(tmp, { recursive: true, force: true });
	return r;
}

const HUNG = { hung: "no result within 5 s (endless loop)" };
const normalize = (r) => (r && typeof r.hung === "string" ? HUNG : r);

const NOTES = {
	"self-parent":
		"Measured without the 5 s limit: 0.81.1 grows memory until V8 aborts (SIGTRAP after ~8 s, ~2.4 GB RSS); 0.73.1 spins at constant memory (~60 MB) forever.",
	"parent-cycle":
		"Measured without the 5 s limit: 0.81.1 grows memory until V8 aborts (SIGTRAP after ~7.5 s, ~2.4 GB RSS); 0.73.1 spins at constant memory (~60 MB) forever.",
	"duplicate-id-forming-cycle": "Measured without the 5 s limit: both versions spin at constant memory (~55-80 MB) forever.",
	"bom-before-header":
		"0.73.1 loads the file normally: its loader trims the whole text first and String.prototype.trim removes U+FEFF. 0.81.1 (streaming, no trim) sees an invalid first line and throws. (PI-FORMAT.md section 10 says both reject it; that is wrong for 0.73.1.) A BOM is only tolerated at the very start of the file.",
	"invalid-utf8-in-string":
		"Bytes are decoded with U+FFFD replacement, one U+FFFD per maximal invalid subsequence: FF -> U+FFFD, FE -> U+FFFD, truncated E2 82 -> one U+FFFD (same as Rust's String::from_utf8_lossy). The line still parses and keeps its place in the tree.",
	"duplicate-json-keys":
		"JSON.parse keeps the last value of a duplicated key: id aaaaaaa4, parentId aaaaaaa3, content 'second'. serde_json::Value also keeps the last value, but #[derive(Deserialize)] structs reject the line ('duplicate field').",
	"id-empty-string":
		"Inconsistent in Pi: getTree() attaches the entry with id '' under aaaaaaa3 and aaaaaaa5 under '' (parentId '' is found in the id map), but the path walk for context stops at a falsy parentId, so the leaf aaaaaaa5's context is only [assistant].",
	"id-with-slash": "Pi never validates id syntax: 'aa/bb' is an ordinary node.",
	"id-dotdot": "Pi never validates id syntax: '..' is an ordinary node.",
	"id-dot": "Pi never validates id syntax: '.' is an ordinary node.",
	"id-reply": "Pi never validates id syntax: 'reply' is an ordinary node.",
	"label-dangling-target": "Loading does not check label targets; the label is a normal tree node that labels nothing.",
	"three-roots": "Roots are listed in timestamp order; the leaf's context starts with the branchSummary of the third root.",
	"missing-file-then-append": "The two versions differ only in the random bits of the new UUID v7 session id (different uuidv7 implementations).",
};

const version = (which) => {
	const pkg = PKGS[which];
	return `${pkg}@${JSON.parse(fs.readFileSync(path.join(clientDir(dir, which), "node_modules", pkg, "package.json"), "utf8")).version}`;
};
const rawOf = (o) => (o ? JSON.parse(fs.readFileSync(o, "utf8")).results : null);
const raw = { "1.6": rawOf(opt["raw-1.6"]), earendil: rawOf(opt["raw-earendil"]), mariozechner: rawOf(opt["raw-mariozechner"]) };

const out = {
	about:
		"What Pi's SessionManager did with each file in this folder, as reported by pi-edge-cases.mjs --child " +
		"(open the file, list entries/leaf/roots/tree node ids (breadth-first)/context messages, optionally append and reopen). " +
		"'hung' = no result within 5 s (Pi loops forever; see the case notes). 'error' = Pi threw. rewrittenOnOpen = the file bytes changed just by opening it. " +
		"Ids that Pi appends are random in real use; here they come from a seeded crypto.randomUUID (scripts/seeded-preload.mjs).",
	clients: { "1.6.0": version("1.6"), "0.81.1": version("earendil"), "0.73.1": version("mariozechner") },
	regenerate: "scripts/make-fixtures.sh (calls scripts/make-damaged.mjs)",
	cases: {},
};
let mismatches = 0;
for (const c of cases) {
	const n = runPi("1.6", c);
	const e = runPi("earendil", c);
	const m = runPi("mariozechner", c);
	for (const [which, r] of [
		["1.6", n],
		["earendil", e],
		["mariozechner", m],
	]) {
		const expected = raw[which]?.[c.name];
		if (c.source === "pi-edge-cases.mjs" && expected !== undefined && !isDeepStrictEqual(normalize(expected), r)) {
			process.stderr.write(`MISMATCH with pi-edge-cases.mjs output: ${c.name} (${which})\n`);
			mismatches++;
		}
	}
	out.cases[c.name] = {
		file: c.file,
		source: c.source,
		description: c.description,
		action: c.action,
		bytes: c.bytes ? c.bytes.length : null,
		sameInAll: isDeepStrictEqual(e, m) && isDeepStrictEqual(n, e),
		...(NOTES[c.name] ? { note: NOTES[c.name] } : {}),
		"1.6.0": n,
		"0.81.1": e,
		"0.73.1": m,
	};
	process.stderr.write(`${c.name}: ${isDeepStrictEqual(e, m) && isDeepStrictEqual(n, e) ? "same" : "DIFFERENT"}\n`);
}
fs.writeFileSync(path.join(outDir, "expected.json"), `${JSON.stringify(out, null, 1)}\n`);
process.stdout.write(`${JSON.stringify({ cases: cases.length, files: cases.filter((c) => c.bytes).length, mismatchesWithRaw: mismatches })}\n`);
if (mismatches) process.exitCode = 1;
