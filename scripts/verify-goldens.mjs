#!/usr/bin/env node
// verify-goldens.mjs — cross-check golden context lines against the pi-oracle CLI
// (`node pi-oracle.mjs context FILE ID --path`, one node process per target).
//
// Usage: node scripts/verify-goldens.mjs SESSION.jsonl GOLDEN_PREFIX
//          [--oracle DIR] [--pi 1.6] [--max N]
// GOLDEN_PREFIX names GOLDEN_PREFIX.contexts.jsonl and GOLDEN_PREFIX.messages.jsonl.
// For a legacy v1 session pass the file Pi migrated it to
// (golden/<name>.migrated.jsonl) as SESSION, since Pi's v1 ids are random.
// --max N checks the default line plus N targets spread over the file (default: all).

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { isDeepStrictEqual, parseArgs } from "node:util";
import { oracleDir } from "./pi-common.mjs";

const { values: opt, positionals } = parseArgs({
	allowPositionals: true,
	options: { oracle: { type: "string" }, pi: { type: "string", default: "1.6" }, max: { type: "string" } },
});
const [session, golden] = positionals;
const dir = oracleDir(opt.oracle);
const table = fs.readFileSync(`${golden}.messages.jsonl`, "utf8").trimEnd().split("\n");
const lines = fs
	.readFileSync(`${golden}.contexts.jsonl`, "utf8")
	.trimEnd()
	.split("\n")
	.map((l) => JSON.parse(l))
	.map((g) => ({ ...g, messages: g.messages.map((k) => JSON.parse(table[k])) }));
let picked = lines.slice(1);
const max = opt.max === undefined ? Infinity : Number.parseInt(opt.max, 10);
if (picked.length > max) picked = Array.from({ length: max }, (_, i) => picked[Math.floor(((i + 0.5) * picked.length) / max)]);
picked.unshift(lines[0]);

let bad = 0;
for (const g of picked) {
	const argv = [path.join(dir, "pi-oracle.mjs"), "context", path.resolve(session)];
	if (g.target !== null) argv.push(g.target);
	argv.push("--path", "--pi", opt.pi);
	const r = spawnSync(process.execPath, argv, { cwd: dir, encoding: "utf8", maxBuffer: 1 << 30 });
	if (r.status !== 0) {
		console.error(`target ${g.target}: oracle failed: ${r.stderr}`);
		bad++;
		continue;
	}
	const o = JSON.parse(r.stdout);
	const fields = ["leafFound", "thinkingLevel", "model", "agentMessageCount", "messages"];
	const diff = fields.filter((f) => !isDeepStrictEqual(o[f], g[f]));
	if (o.pathIds.length !== g.pathLength) diff.push("pathLength");
	if (g.target === null && o.leafId !== g.leafId) diff.push("leafId");
	if (g.target !== null && o.leafId !== g.target) diff.push("leafId");
	if (diff.length) {
		console.error(`target ${g.target} (line ${g.line}): differs in ${diff.join(", ")}`);
		bad++;
	}
}
console.log(JSON.stringify({ golden: path.basename(golden), checked: picked.length, mismatches: bad }));
process.exitCode = bad ? 1 : 0;
