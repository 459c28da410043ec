// pi-fork-goldens.mjs — what Pi 1.6.0's `/fork` (at an entry) writes, for the fork tests.
//
//   PI_ORACLE_DIR=/path/to/pi-oracle node scripts/pi-fork-goldens.mjs OUT.json SESSION.jsonl…
//
// For each session, a few entries are chosen (the leaf; the entry with the most labels on
// its path; a label entry; a compaction whose firstKeptEntryId names a label; each only
// when its fork stays under 60 KB). For each, a private copy of the session is opened
// with Pi 1.6.0's SessionManager and `createBranchedSession(entry)` writes the fork, as
// the runtime's fork "at" does. Then:
//   - `node pi-oracle.mjs check FORK --pi 1.6` must say ok (Pi opens it);
//   - Pi's context (buildSessionContext + convertToLlm, thinking level, model) at the
//     fork's leaf must equal the source's context at the entry.
// OUT records, per fork: the source (relative to the repo), the entry, Pi's header line
// with the source's path replaced by @SOURCE@, the label ids Pi drew, the body (every
// line after the header) and both checks. Exit 1 if a check fails.
//
// `--make-labels FILE` first writes, through Pi 1.6.0's SessionManager, a small session
// whose path holds labels (set, moved, cleared), entries hanging under labels, and a
// compaction whose firstKeptEntryId names a label: the case §16.6 of PI-FORMAT.md.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { clock, installFixedClock, installSeededIds, loadPi, oracleDir } from "./pi-common.mjs";

const args = process.argv.slice(2);
let makeLabels = null;
const mi = args.indexOf("--make-labels");
if (mi >= 0) {
	makeLabels = args[mi + 1];
	args.splice(mi, 2);
}
const [out, ...sessions] = args;
const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const oracle = oracleDir();

if (makeLabels) {
	// Deterministic ids and clock for the generated file only (forks below use Pi's own randomness
	// for the new ids: the tests read them from the goldens).
	installSeededIds(19);
	installFixedClock(Date.UTC(2026, 0, 5, 9, 0, 0));
}
const pi = await loadPi(oracle, "1.6");

if (makeLabels) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fork-labels-"));
	const sm = pi.SessionManager.create("/home/dev/src/labels", dir);
	const t = () => (clock.now += 1500);
	const user = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: t() });
	const asst = (text) => ({
		role: "assistant",
		content: [{ type: "text", text }],
		api: "anthropic-messages",
		provider: "anthropic",
		model: "claude-sonnet-4-5",
		usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
		stopReason: "stop",
		timestamp: t(),
	});
	sm.appendModelChange("anthropic", "claude-sonnet-4-5");
	sm.appendThinkingLevelChange("off");
	const u1 = sm.appendMessage(user("First question"));
	const a1 = sm.appendMessage(asst("First answer"));
	sm.appendLabelChange(u1, "start");
	const u2 = sm.appendMessage(user("Second question, under a label entry"));
	sm.appendLabelChange(a1, "old");
	sm.appendLabelChange(a1, "relabelled");
	const a2 = sm.appendMessage(asst("Second answer"));
	sm.appendLabelChange(u2, "temp");
	sm.appendLabelChange(u2, undefined);
	const lKeep = sm.appendLabelChange(a2, "kept-from-here");
	const u3 = sm.appendMessage(user("Third question"));
	sm.appendMessage(asst("Third answer"));
	sm.appendCompaction("Summary of the first two exchanges.", lKeep, 1234);
	const u4 = sm.appendMessage(user("After the compaction"));
	const a4 = sm.appendMessage(asst("Answer after the compaction"));
	sm.appendLabelChange(a4, "tip");
	sm.appendLabelChange(u1, "start-again");
	// Another branch, so that labels off the path exist too.
	sm.branch(u3);
	const b = sm.appendMessage(asst("Another third answer"));
	sm.appendLabelChange(b, "other-branch");
	fs.copyFileSync(sm.getSessionFile(), makeLabels);
	fs.rmSync(dir, { recursive: true, force: true });
	void u4;
}

const MAX = 60_000;
const result = [];
let bad = 0;
for (const src of sessions) {
	const lines = fs.readFileSync(src, "utf8").split("\n").filter((l) => l.trim());
	const parsed = [];
	for (const l of lines) {
		try {
			parsed.push({ v: JSON.parse(l), len: Buffer.byteLength(l) + 1 });
		} catch {}
	}
	const header = parsed[0]?.v;
	if (!header || header.type !== "session" || !(header.version >= 2)) {
		console.error(`${src}: not a v2/v3 Pi session, skipped (sessionfs refuses to fork v1 files)`);
		continue;
	}
	const byId = new Map();
	for (const p of parsed.slice(1)) if (typeof p.v.id === "string") byId.set(p.v.id, p);
	const pathOf = (id) => {
		const out = [];
		const seen = new Set();
		let cur = byId.get(id);
		while (cur && !seen.has(cur.v.id)) {
			seen.add(cur.v.id);
			out.push(cur);
			cur = cur.v.parentId ? byId.get(cur.v.parentId) : undefined;
		}
		return out.reverse();
	};
	const size = (id) => pathOf(id).reduce((a, p) => a + p.len, 0);
	const entries = parsed.slice(1).filter((p) => typeof p.v.id === "string");
	const labelled = new Set(entries.filter((p) => p.v.type === "label" && p.v.label).map((p) => p.v.targetId));
	const picks = [];
	const add = (id, why) => {
		if (id && !picks.some((p) => p.id === id) && size(id) < MAX) picks.push({ id, why });
	};
	add(entries[entries.length - 1]?.v.id, "leaf");
	let best = null;
	for (const p of entries) {
		if (size(p.v.id) >= MAX) continue;
		const path_ = pathOf(p.v.id);
		const score = path_.filter((q) => labelled.has(q.v.id)).length * 1000 + path_.filter((q) => q.v.type === "label").length * 10 + path_.length / 1000;
		if (!best || score > best.score) best = { id: p.v.id, score };
	}
	add(best?.id, "most labels on the path");
	add(entries.find((p) => p.v.type === "label" && size(p.v.id) < MAX)?.v.id, "a label entry");
	const fkLabel = entries.find((p) => p.v.type === "compaction" && byId.get(p.v.firstKeptEntryId)?.v.type === "label");
	if (fkLabel) add(entries[entries.length - 1] && entries.findLast((q) => pathOf(q.v.id).includes(fkLabel))?.v.id, "compaction keeping from a label");

	for (const pick of picks) {
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-fork-"));
		const copy = path.join(dir, path.basename(src));
		fs.copyFileSync(src, copy);
		const sm = pi.SessionManager.open(copy);
		const srcEntries = sm.getEntries();
		const ctxSrc = pi.buildSessionContext(srcEntries, pick.id);
		const forkPath = sm.createBranchedSession(pick.id);
		// Pi writes the file now only when the path holds a user or assistant message;
		// otherwise when the first one is appended. Then take what it holds in memory.
		let written = forkPath && fs.existsSync(forkPath);
		let text;
		if (written) text = fs.readFileSync(forkPath, "utf8");
		else text = sm.fileEntries.map((e) => JSON.stringify(e) + "\n").join("");
		const flines = text.split("\n").slice(0, -1);
		const fheader = JSON.parse(flines[0]);
		const body = flines.slice(1).map((l) => l + "\n").join("");
		const labelIds = flines.slice(1).map((l) => JSON.parse(l)).filter((e) => e.type === "label").map((e) => e.id);
		const forkFile = forkPath ?? path.join(dir, "unwritten.jsonl");
		if (!written) fs.writeFileSync(forkFile, text);
		let check;
		try {
			check = JSON.parse(execFileSync("node", [path.join(oracle, "pi-oracle.mjs"), "check", forkFile, "--pi", "1.6"], { encoding: "utf8" }));
		} catch (e) {
			check = JSON.parse(e.stdout || "{}");
		}
		const sm2 = pi.SessionManager.open(forkFile);
		const ctxFork = sm2.buildSessionContext();
		const same =
			JSON.stringify(pi.convertToLlm(ctxFork.messages)) === JSON.stringify(pi.convertToLlm(ctxSrc.messages)) &&
			ctxFork.thinkingLevel === ctxSrc.thinkingLevel &&
			JSON.stringify(ctxFork.model) === JSON.stringify(ctxSrc.model);
		if (!check.ok || !same) bad++;
		const rec = {
			source: path.relative(repo, path.resolve(src)),
			entry: pick.id,
			why: pick.why,
			fileName: path.basename(forkFile),
			header: flines[0].split(JSON.stringify(copy).slice(1, -1)).join("@SOURCE@"),
			sessionId: fheader.id,
			timestamp: fheader.timestamp,
			labelIds,
			writtenByPi: written,
			piOpensIt: check.ok === true,
			piProblems: check.problems ?? check.error ?? null,
			contextAtLeafEqualsSourceAtEntry: same,
			contextMessages: ctxSrc.messages.length,
			body,
		};
		result.push(rec);
		console.error(`${rec.source} @ ${pick.id} (${pick.why}): ${flines.length} lines, opens: ${rec.piOpensIt}, same context: ${same}${written ? "" : " (Pi would write it with the first message)"}`);
		fs.rmSync(dir, { recursive: true, force: true });
	}
}
fs.writeFileSync(out, JSON.stringify({ pi: pi.version, forks: result }, null, 1) + "\n");
process.exit(bad ? 1 : 0);
