#!/usr/bin/env node
// pi-goldens.mjs — context goldens for a session file, computed by Pi's own code.
//
// Usage: node scripts/pi-goldens.mjs FILE.jsonl OUT.contexts.jsonl
//          [--oracle DIR] [--pi earendil|mariozechner] [--all] [--inner N]
//          [--migrated-out PATH]
//
// Loads Pi once (see pi-common.mjs) and, for every target, produces exactly the
// fields that `node pi-oracle.mjs context FILE ID --path` prints (minus `pi`
// and `leafId`), one compact JSON object per line:
//   {"target", "line", "leafFound", "thinkingLevel", "model",
//    "agentMessageCount", "messages", "pathIds", "pathLines"}
// `line` is the 1-based line of the target entry in the ORIGINAL file (line 1 =
// header); `pathLines` are the original line numbers of `pathIds` (an addition,
// not printed by the oracle). The first line is the default context (no id,
// Pi's leaf = last entry): `"target": null`, plus `"leafId"` and `line` = the
// line of that leaf.
//
// Targets: --all = every entry; otherwise every leaf plus ~N (default 30) inner
// entries: the root, compactions, entries right after a compaction,
// branch_summary, label, session_info, custom, custom_message, model/thinking
// changes, branch points, first entries of forks, and the rest spread over depth.
//
// Legacy v1 files: Pi migrates them on open and gives the entries random ids.
// crypto.randomUUID is seeded (from the file name) so the migrated ids are
// stable; --migrated-out saves the file exactly as Pi rewrote it. The n-th
// parsed non-header entry of the original is the n-th entry after migration,
// which is how `line` is assigned (checked: same count, same types).

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { installSeededIds, loadPi } from "./pi-common.mjs";

const { values: opt, positionals } = parseArgs({
	allowPositionals: true,
	options: {
		oracle: { type: "string" },
		pi: { type: "string", default: "earendil" },
		all: { type: "boolean", default: false },
		inner: { type: "string", default: "30" },
		"migrated-out": { type: "string" },
	},
});
const [file, outFile] = positionals;
if (!file || !outFile) {
	process.stderr.write("usage: pi-goldens.mjs FILE.jsonl OUT.contexts.jsonl [--oracle DIR] [--pi earendil] [--all] [--inner N] [--migrated-out PATH]\n");
	process.exit(2);
}

installSeededIds(`goldens:${path.basename(file)}`);
const pi = await loadPi(opt.oracle, opt.pi);

// ---- raw line scan of the original file (what our implementation sees) ------
const rawLines = fs.readFileSync(file, "utf8").split("\n");
if (rawLines.length && rawLines[rawLines.length - 1] === "") rawLines.pop();
const parsed = []; // {line, e}
for (let i = 0; i < rawLines.length; i++) {
	if (!rawLines[i].trim()) continue;
	try {
		parsed.push({ line: i + 1, e: JSON.parse(rawLines[i]) });
	} catch {
		/* Pi skips malformed lines silently */
	}
}
if (parsed.length !== rawLines.length) throw new Error(`${file}: blank or malformed lines; line mapping would need care`);
const header = parsed[0]?.e;
if (header?.type !== "session") throw new Error(`${file}: first line is not a header`);
const version = header.version ?? 1;
const nonHeader = parsed.filter((p) => p.e.type !== "session");

// ---- open with Pi (a private copy: Pi rewrites legacy files) ----------------
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "pi-goldens-"));
const copy = path.join(tmp, path.basename(file));
fs.copyFileSync(file, copy);
const sm = pi.SessionManager.open(copy);
if (opt["migrated-out"]) fs.copyFileSync(copy, opt["migrated-out"]);
fs.rmSync(tmp, { recursive: true, force: true });

const entries = sm.getEntries();
const lineOf = new Map();
if (version < 2) {
	if (entries.length !== nonHeader.length) throw new Error(`v1 mapping: ${entries.length} entries after migration vs ${nonHeader.length} lines`);
	entries.forEach((e, k) => {
		if (e.type !== nonHeader[k].e.type) throw new Error(`v1 mapping: type mismatch at line ${nonHeader[k].line}`);
		if (nonHeader[k].e.id !== undefined) throw new Error(`v1 mapping: line ${nonHeader[k].line} already has an id`);
		lineOf.set(e.id, nonHeader[k].line);
	});
} else {
	for (const p of nonHeader) if (typeof p.e.id === "string") lineOf.set(p.e.id, p.line); // later wins, like Pi's byId
	for (const e of entries) if (!lineOf.has(e.id)) throw new Error(`no line for id ${e.id}`);
}

// ---- choose targets ------------------------------------------------------------
const byId = new Map(entries.map((e) => [e.id, e]));
const children = new Map();
for (const e of entries) {
	if (e.parentId != null && byId.has(e.parentId)) {
		if (!children.has(e.parentId)) children.set(e.parentId, []);
		children.get(e.parentId).push(e.id);
	}
}
const depth = new Map();
function depthOf(id) {
	if (depth.has(id)) return depth.get(id);
	const chain = [];
	let cur = id;
	while (cur != null && byId.has(cur) && !depth.has(cur)) {
		chain.push(cur);
		const p = byId.get(cur).parentId;
		if (p === cur) break;
		cur = p;
	}
	let d = cur != null && depth.has(cur) ? depth.get(cur) + 1 : 0;
	for (let i = chain.length - 1; i >= 0; i--) depth.set(chain[i], d++);
	return depth.get(id);
}
for (const e of entries) depthOf(e.id);

let targets;
if (opt.all) {
	targets = entries.map((e) => e.id);
} else {
	const want = Number.parseInt(opt.inner, 10);
	const leaves = entries.filter((e) => !children.has(e.id)).map((e) => e.id);
	const inner = entries.filter((e) => children.has(e.id));
	const chosen = new Set();
	// Take up to n items spread evenly over xs (deterministic).
	const spread = (xs, n) => {
		if (xs.length <= n) return xs;
		const out = [];
		for (let i = 0; i < n; i++) out.push(xs[Math.floor(((i + 0.5) * xs.length) / n)]);
		return out;
	};
	const take = (pred, n) => {
		for (const e of spread(inner.filter((x) => !chosen.has(x.id) && pred(x)), n)) chosen.add(e.id);
	};
	const isType = (t) => (e) => e.type === t;
	take((e) => e.parentId === null, 3); // root(s)
	take(isType("compaction"), 4);
	take((e) => byId.get(e.parentId)?.type === "compaction", 4); // right after a compaction
	take(isType("branch_summary"), 4);
	take(isType("label"), 3);
	take(isType("session_info"), 2);
	take(isType("custom"), 1);
	take(isType("custom_message"), 1);
	take((e) => e.type === "model_change" && e.parentId !== null, 1);
	take(isType("thinking_level_change"), 1);
	take((e) => children.get(e.id).length > 1, 3); // branch points
	take((e) => e.parentId != null && (children.get(e.parentId)?.length ?? 0) > 1, 2); // first entry of a fork
	take((e) => e.type === "message" && e.message?.role === "bashExecution", 1);
	// Fill up with entries spread over depth.
	const rest = inner.filter((e) => !chosen.has(e.id)).sort((a, b) => depth.get(a.id) - depth.get(b.id) || lineOf.get(a.id) - lineOf.get(b.id));
	for (const e of spread(rest, Math.max(0, want - chosen.size))) chosen.add(e.id);
	targets = [...new Set([...leaves, ...chosen])];
}
targets.sort((a, b) => lineOf.get(a) - lineOf.get(b));

// ---- compute contexts (same calls as pi-oracle.mjs cmdContext) ------------------
function record(target) {
	let ctx;
	let leafFound = true;
	let pathIds;
	const rec = { target };
	if (target === null) {
		const leafId = sm.getLeafId();
		ctx = sm.buildSessionContext();
		pathIds = sm.getBranch().map((e) => e.id);
		rec.line = lineOf.get(leafId) ?? null;
		rec.leafId = leafId;
	} else {
		leafFound = !!sm.getEntry(target);
		ctx = pi.buildSessionContext(sm.getEntries(), target);
		pathIds = sm.getBranch(leafFound ? target : undefined).map((e) => e.id);
		rec.line = lineOf.get(target) ?? null;
	}
	Object.assign(rec, {
		leafFound,
		thinkingLevel: ctx.thinkingLevel,
		model: ctx.model,
		agentMessageCount: ctx.messages.length,
		messages: pi.convertToLlm(ctx.messages),
		pathIds,
		pathLines: pathIds.map((id) => lineOf.get(id) ?? null),
	});
	return rec;
}

const fd = fs.openSync(outFile, "w");
let bytes = 0;
for (const t of [null, ...targets]) {
	const s = `${JSON.stringify(record(t))}\n`;
	bytes += Buffer.byteLength(s);
	fs.writeSync(fd, s);
}
fs.closeSync(fd);

const leafCount = entries.filter((e) => !children.has(e.id)).length;
let maxDepth = 0;
for (const d of depth.values()) maxDepth = Math.max(maxDepth, d);
process.stdout.write(
	`${JSON.stringify({
		pi: `${pi.pkg}@${pi.version}`,
		file: path.basename(file),
		version,
		entries: entries.length,
		leaves: leafCount,
		maxDepth,
		leafPathLength: sm.getBranch().length,
		targets: targets.length,
		out: path.basename(outFile),
		bytes,
	})}\n`,
);
