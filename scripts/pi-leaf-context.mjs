#!/usr/bin/env node
// pi-leaf-context.mjs — Pi's own open of a session and its context build for chosen
// leaves, timed (for scripts/measure-tree-context).
//
//   node scripts/pi-leaf-context.mjs [--oracle DIR] [--pi 1.6] [--iterations K] FILE LEAF_ID...
//
// Opens a private copy of FILE with SessionManager.open (timed), then, for each
// LEAF_ID, builds `convertToLlm(buildSessionContext(entries, LEAF, sm.byId))` once
// (timed: Pi's first build, the counterpart of a first `cat context`; Pi's id index is
// reused, as `sm.buildSessionContext()` does for its own leaf) and K times more (timed:
// warm). Prints one JSON object: {pi, openMs, leaves: {ID: {messages, firstMs,
// warm: {min, median, max}}}}.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { loadPi } from "./pi-common.mjs";

const { values: opt, positionals } = parseArgs({
	allowPositionals: true,
	options: { oracle: { type: "string" }, pi: { type: "string", default: "1.6" }, iterations: { type: "string", default: "5" } },
});
const [file, ...leaves] = positionals;
if (!file) {
	process.stderr.write("usage: pi-leaf-context.mjs [--oracle DIR] [--pi 1.6] [--iterations K] FILE LEAF_ID...\n");
	process.exit(2);
}
const pi = await loadPi(opt.oracle, opt.pi);
const k = Math.max(1, Number.parseInt(opt.iterations, 10) || 5);
const stats = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	const med = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
	return { min: +s[0].toFixed(3), median: +med.toFixed(3), max: +s[s.length - 1].toFixed(3) };
};
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-leaf-context-"));
const copy = path.join(dir, path.basename(file));
fs.copyFileSync(file, copy);
try {
	const t0 = performance.now();
	const sm = pi.SessionManager.open(copy);
	const openMs = performance.now() - t0;
	const entries = sm.getEntries();
	const out = { pi: `${pi.pkg}@${pi.version}`, openMs: +openMs.toFixed(3), leaves: {} };
	for (const leaf of leaves) {
		const build = () => pi.convertToLlm(pi.buildSessionContext(entries, leaf, sm.byId).messages);
		const a = performance.now();
		const first = build();
		const firstMs = performance.now() - a;
		const warm = [];
		for (let i = 0; i < k; i++) {
			const b = performance.now();
			build();
			warm.push(performance.now() - b);
		}
		out.leaves[leaf] = { messages: first.length, firstMs: +firstMs.toFixed(3), warm: stats(warm) };
	}
	process.stdout.write(`${JSON.stringify(out)}\n`);
} finally {
	fs.rmSync(dir, { recursive: true, force: true });
}
