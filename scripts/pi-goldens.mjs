#!/usr/bin/env node
// pi-goldens.mjs — context goldens for a session file, computed by Pi's own code,
// for every entry.
//
// Usage: node scripts/pi-goldens.mjs FILE.jsonl OUT_PREFIX
//          [--oracle DIR] [--pi 1.6|earendil|mariozechner] [--migrated-out PATH]
//
// Loads Pi once (see pi-common.mjs; default Pi 1.6.0) and, for the default leaf and
// then for every entry of the file, computes what `node pi-oracle.mjs context FILE ID
// --path` computes: `buildSessionContext(entries, id)` and `convertToLlm`. Writes two
// files:
//
//   OUT_PREFIX.messages.jsonl   every distinct LLM message, one per line, as
//                               JSON.stringify writes it (the exact bytes of that
//                               message in the mount's context.json)
//   OUT_PREFIX.contexts.jsonl   one compact JSON object per target, in file order:
//     {"target": ID|null, "line": N, ["leafId": ID,] "leafFound": bool,
//      "thinkingLevel": str, "model": {...}|null, "agentMessageCount": n,
//      "messages": [k, ...], "pathLength": n, "parentLine": N|null}
//
// `messages` are 0-based line numbers in the messages file. `line` is the 1-based line
// of the target entry in the ORIGINAL file (line 1 = header). `pathLength` is the
// length of Pi's root→target path (`getBranch`) and `parentLine` the line of the entry
// before the target on it (null at a root), so the paths of all targets together give
// every path. The first line is the default context (no id given: Pi's leaf = last
// entry): `"target": null`, plus `"leafId"`; `line` is that leaf's line.
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
		pi: { type: "string", default: "1.6" },
		"migrated-out": { type: "string" },
	},
});
const [file, outPrefix] = positionals;
if (!file || !outPrefix) {
	process.stderr.write("usage: pi-goldens.mjs FILE.jsonl OUT_PREFIX [--oracle DIR] [--pi 1.6|earendil|mariozechner] [--migrated-out PATH]\n");
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
const targets = entries.map((e) => e.id).sort((a, b) => lineOf.get(a) - lineOf.get(b));

// ---- compute contexts (same calls as pi-oracle.mjs cmdContext) ------------------
const table = new Map(); // JSON text -> index
const tableLines = [];
const indexOf = (m) => {
	const s = JSON.stringify(m);
	let k = table.get(s);
	if (k === undefined) {
		k = tableLines.length;
		table.set(s, k);
		tableLines.push(s);
	}
	return k;
};
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
		messages: pi.convertToLlm(ctx.messages).map(indexOf),
		pathLength: pathIds.length,
		parentLine: pathIds.length > 1 ? (lineOf.get(pathIds[pathIds.length - 2]) ?? null) : null,
	});
	return rec;
}

const contexts = [null, ...targets].map((t) => `${JSON.stringify(record(t))}\n`).join("");
fs.writeFileSync(`${outPrefix}.contexts.jsonl`, contexts);
fs.writeFileSync(`${outPrefix}.messages.jsonl`, tableLines.map((l) => `${l}\n`).join(""));

process.stdout.write(
	`${JSON.stringify({
		pi: `${pi.pkg}@${pi.version}`,
		file: path.basename(file),
		version,
		entries: entries.length,
		leafPathLength: sm.getBranch().length,
		targets: targets.length,
		distinctMessages: tableLines.length,
		bytes: Buffer.byteLength(contexts) + tableLines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0),
	})}\n`,
);
