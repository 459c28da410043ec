#!/usr/bin/env node
// diff-goldens.mjs — where Pi 0.73.1's contexts differ from the 0.81.1 goldens.
// Usage: node scripts/diff-goldens.mjs OUT.json NAME=GOLDEN_0.81.jsonl:OTHER_0.73.jsonl ...
// Lines are matched by `line` (the original file line of the target; the default
// context is keyed "default"). Writes, per golden, the lines whose fields differ.
import fs from "node:fs";
import { isDeepStrictEqual } from "node:util";

const [outFile, ...pairs] = process.argv.slice(2);
const load = (p) => {
	const m = new Map();
	for (const l of fs.readFileSync(p, "utf8").trimEnd().split("\n")) {
		const o = JSON.parse(l);
		m.set(o.target === null ? "default" : String(o.line), o);
	}
	return m;
};
const result = {
	about:
		"Targets whose context (same fields as the *.contexts.jsonl goldens) differs between Pi 0.81.1 (the goldens) and Pi 0.73.1. " +
		"Cause in every case seen: an older compaction entry lying inside the kept range of the latest compaction is emitted again as a " +
		"compactionSummary message by 0.81.1 and dropped by 0.73.1 (PI-FORMAT.md section 13).",
	files: {},
};
for (const pair of pairs) {
	const [name, rest] = pair.split("=");
	const [a, b] = rest.split(":");
	const A = load(a);
	const B = load(b);
	const diffs = [];
	for (const [key, x] of A) {
		const y = B.get(key);
		if (!y) {
			diffs.push({ line: key, missingIn073: true });
			continue;
		}
		const fields = Object.keys(x).filter((k) => !isDeepStrictEqual(x[k], y[k]));
		if (fields.length) {
			const roles = (o) => o.messages.map((m) => m.role);
			diffs.push({ target: x.target, line: x.target === null ? null : x.line, fields, agentMessageCount: { "0.81.1": x.agentMessageCount, "0.73.1": y.agentMessageCount }, llmRoles081: roles(x), llmRoles073: roles(y) });
		}
	}
	result.files[name] = { compared: A.size, differing: diffs.length, diffs };
}
fs.writeFileSync(outFile, `${JSON.stringify(result, null, 1)}\n`);
console.log(JSON.stringify(Object.fromEntries(Object.entries(result.files).map(([k, v]) => [k, v.differing]))));
