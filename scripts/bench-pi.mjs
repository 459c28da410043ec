#!/usr/bin/env node
// bench-pi.mjs — Pi's own context build for chosen leaves, for scripts/bench.
//
//   node bench-pi.mjs --oracle DIR [--pi earendil|mariozechner] [--iterations K] FILE LEAF_ID...
//
// Loads SessionManager / buildSessionContext / convertToLlm from DIR/node_modules the
// same way pi-oracle.mjs does (the core modules beside the package's main entry), opens
// a private copy of FILE once (timed; RSS read right after), then for each LEAF_ID runs
// K times: buildSessionContext(entries, LEAF, sm.byId) (timed; what
// sm.buildSessionContext() runs for its own leaf, so Pi's id index is reused), convertToLlm (timed) and
// JSON.stringify of the result (timed; the analogue of rendering context.json).
// Prints one JSON object. pi-oracle's `bench` covers open/context/tree for the file's
// own leaf; this covers arbitrary leaves (the deepest one, one at a fixed depth).

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const { values: opt, positionals } = parseArgs({
	allowPositionals: true,
	options: {
		oracle: { type: "string" },
		pi: { type: "string", default: "earendil" },
		iterations: { type: "string", default: "5" },
	},
});
const PKGS = { mariozechner: "@mariozechner/pi-coding-agent", earendil: "@earendil-works/pi-coding-agent" };
const [file, ...leaves] = positionals;
if (!opt.oracle || !file) {
	process.stderr.write("usage: bench-pi.mjs --oracle DIR [--pi earendil|mariozechner] [--iterations K] FILE LEAF_ID...\n");
	process.exit(2);
}
const pkg = PKGS[opt.pi] || opt.pi;
const pkgDir = path.join(path.resolve(opt.oracle), "node_modules", pkg);
const version = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8")).version;
const core = (f) => pathToFileURL(path.join(pkgDir, "dist", "core", f)).href;
const ti = performance.now();
const sm_ = await import(core("session-manager.js"));
const msgs = await import(core("messages.js"));
const importMs = performance.now() - ti;

function stats(xs) {
	const s = [...xs].sort((a, b) => a - b);
	const med = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
	return { n: s.length, min: +s[0].toFixed(3), median: +med.toFixed(3), max: +s[s.length - 1].toFixed(3) };
}

const iterations = Math.max(1, Number.parseInt(opt.iterations, 10) || 5);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-pi-"));
const copy = path.join(dir, path.basename(file));
fs.copyFileSync(file, copy);
try {
	const rssBefore = process.memoryUsage().rss;
	const t0 = performance.now();
	const sm = sm_.SessionManager.open(copy);
	const openMs = performance.now() - t0;
	const rssAfterOpen = process.memoryUsage().rss;
	const entries = sm.getEntries();
	const result = {
		pi: `${pkg}@${version}`,
		node: process.version,
		file: path.basename(file),
		bytes: fs.statSync(file).size,
		entries: entries.length,
		importMs: +importMs.toFixed(2),
		openMs: +openMs.toFixed(2),
		rssMiBBeforeOpen: +(rssBefore / 1048576).toFixed(1),
		rssMiBAfterOpen: +(rssAfterOpen / 1048576).toFixed(1),
		usesById: sm.byId instanceof Map,
		leaves: {},
	};
	for (const leaf of leaves) {
		const found = !!sm.getEntry(leaf);
		const t = { buildMs: [], convertMs: [], stringifyMs: [], buildConvertMs: [], buildConvertStringifyMs: [] };
		let info = null;
		for (let i = 0; i < iterations; i++) {
			const a = performance.now();
			// As SessionManager.buildSessionContext() does for its own leaf: with its id index.
			const ctx = sm_.buildSessionContext(entries, leaf, sm.byId);
			const b = performance.now();
			const llm = msgs.convertToLlm(ctx.messages);
			const c = performance.now();
			const json = JSON.stringify(llm);
			const d = performance.now();
			t.buildMs.push(b - a);
			t.convertMs.push(c - b);
			t.stringifyMs.push(d - c);
			t.buildConvertMs.push(c - a);
			t.buildConvertStringifyMs.push(d - a);
			if (!info) info = { found, pathLength: found ? sm.getBranch(leaf).length : null, messages: llm.length, jsonBytes: Buffer.byteLength(json) };
		}
		const timings = {};
		for (const [k, v] of Object.entries(t)) timings[k] = stats(v);
		result.leaves[leaf] = { ...info, timings };
	}
	result.rssMiBEnd = +(process.memoryUsage().rss / 1048576).toFixed(1);
	process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
	fs.rmSync(dir, { recursive: true, force: true });
}
