#!/usr/bin/env node
// diff-goldens.mjs — where an older Pi's contexts differ from the Pi 1.6.0 goldens.
//
// Usage: node scripts/diff-goldens.mjs OUT.json VERSION NAME=PREFIX_1.6:PREFIX_OLD ...
//
// Each PREFIX is what scripts/pi-goldens.mjs wrote (PREFIX.contexts.jsonl and
// PREFIX.messages.jsonl). Targets are matched by `line` (the default context is keyed
// "default"). Writes, per fixture, the targets whose thinking level, model or messages
// differ, with the role sequence of both contexts and the first message that differs
// (as each version wrote it), so that the record says what changed without keeping
// the older goldens whole.
import fs from "node:fs";
import { isDeepStrictEqual } from "node:util";

const [outFile, version, ...pairs] = process.argv.slice(2);
const load = (prefix) => {
	const table = fs.readFileSync(`${prefix}.messages.jsonl`, "utf8").trimEnd().split("\n");
	const m = new Map();
	for (const l of fs.readFileSync(`${prefix}.contexts.jsonl`, "utf8").trimEnd().split("\n")) {
		const o = JSON.parse(l);
		o.texts = o.messages.map((k) => table[k]);
		m.set(o.target === null ? "default" : String(o.line), o);
	}
	return m;
};
const tag = (text) => {
	const m = JSON.parse(text);
	const c = Array.isArray(m.content) ? m.content.find((b) => b.type === "text")?.text : m.content;
	const head = typeof c === "string" ? c.replace(/\s+/g, " ").slice(0, 40) : "";
	return `${m.role}${head ? `: ${head}` : ""}`;
};
const result = {
	about:
		`Targets whose context differs between Pi 1.6.0 (the goldens) and Pi ${version}, the record of what changed. ` +
		"Pi 1.6.0 keeps system messages in the context, applies context_edit entries, adds a compaction's systemMessage before its " +
		"summary, drops system messages from the kept range, and lets an older compaction inside the kept range of the latest one " +
		"contribute nothing (0.81.1 emitted its summary again; 0.73.1 already dropped it). See PI-FORMAT.md sections 13 and 16.",
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
			diffs.push({ line: key, missingInOlder: true });
			continue;
		}
		const fields = ["thinkingLevel", "model", "texts"].filter((k) => !isDeepStrictEqual(x[k], y[k]));
		if (!fields.length) continue;
		const first = x.texts.findIndex((t, i) => t !== y.texts[i]);
		const at = first < 0 ? x.texts.length : first;
		diffs.push({
			target: x.target,
			line: x.target === null ? null : x.line,
			fields: fields.map((f) => (f === "texts" ? "messages" : f)),
			agentMessageCount: { "1.6.0": x.agentMessageCount, [version]: y.agentMessageCount },
			messages: { "1.6.0": x.texts.map(tag), [version]: y.texts.map(tag) },
			firstDifferingMessage: { index: at, "1.6.0": x.texts[at] ?? null, [version]: y.texts[at] ?? null },
		});
	}
	result.files[name] = { compared: A.size, differing: diffs.length, diffs };
}
fs.writeFileSync(outFile, `${JSON.stringify(result, null, 1)}\n`);
console.log(JSON.stringify(Object.fromEntries(Object.entries(result.files).map(([k, v]) => [k, `${v.differing}/${v.compared}`]))));
