#!/usr/bin/env node
// make-example.mjs — the README demo session (examples/demo.jsonl), written by Pi itself.
//
// Usage: PI_ORACLE_DIR=/path/to/pi-oracle node scripts/make-example.mjs [OUT.jsonl]
//          [--oracle DIR] [--pi earendil|mariozechner]
// Default OUT: <repo>/examples/demo.jsonl. Default client: earendil (Pi 0.81.1).
//
// A developer asks the agent to add a `--verbose` flag to `tally`, a small Rust
// word-count CLI. The agent reads files, edits, runs `cargo test` (one failure:
// the --help snapshot test, then the fix), the user shares a terminal screenshot
// (a real 32x16 PNG), runs `!git diff --stat`, the session gets a name and is
// compacted, then the user goes back to the first prompt (/tree with a branch
// summary, labelled `plan-b`) and asks for an environment variable instead.
//
// Every entry goes through Pi's own SessionManager API (appendModelChange,
// appendThinkingLevelChange, appendMessage, appendSessionInfo, appendCompaction,
// appendLabelChange, branchWithSummary); Pi writes the file itself. Edit tool
// results carry diffs made by Pi's own generateDiffString/generateUnifiedPatch,
// and compaction/branch-summary file lists come from Pi's compaction utils.
// Deterministic: seeded crypto.randomUUID (entry ids), a virtual clock, fixed
// session id, fixed tool-call ids and signatures from a seeded PRNG.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { PKGS, clock, installFixedClock, installSeededIds, loadPi, mulberry32, oracleDir, seedFrom } from "./pi-common.mjs";

const { values: opt, positionals } = parseArgs({
	allowPositionals: true,
	options: { oracle: { type: "string" }, pi: { type: "string", default: "earendil" } },
});
const here = path.dirname(fileURLToPath(import.meta.url));
const outFile = path.resolve(positionals[0] ?? path.join(here, "..", "examples", "demo.jsonl"));

const START = Date.UTC(2026, 1, 12, 14, 3, 0); // 2026-02-12T14:03:00Z
installSeededIds("demo");
installFixedClock(START);
const pi = await loadPi(opt.oracle, opt.pi);

// Pi's own diff and compaction helpers, from the same package.
const pkgDir = path.join(oracleDir(opt.oracle), "node_modules", ...(PKGS[opt.pi] || opt.pi).split("/"));
const coreUrl = (rel) => pathToFileURL(path.join(pkgDir, "dist", "core", rel)).href;
const { generateDiffString, generateUnifiedPatch } = await import(coreUrl("tools/edit-diff.js"));
const { createFileOps, extractFileOpsFromMessage, computeFileLists, formatFileOperations } = await import(coreUrl("compaction/utils.js"));

const SESSION_ID = "019c5229-8a20-7a3e-9b41-5f0c2d7e8a13"; // UUID v7 for 2026-02-12T14:03:00Z
const CWD = "/home/dev/src/tally";
const MODEL = { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5" };

const R = mulberry32(seedFrom("demo-content"));
const B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const b62 = (n) => Array.from({ length: n }, () => B62[Math.floor(R() * 62)]).join("");
const sig = () => Buffer.from(Array.from({ length: 72 }, () => Math.floor(R() * 256))).toString("base64");
const advance = (s) => {
	clock.now += Math.round(s * 1000);
};

// A 32x16 RGB PNG: a dark "terminal" with a green, a grey and a red line.
const SCREENSHOT_PNG =
	"iVBORw0KGgoAAAANSUhEUgAAACAAAAAQCAIAAAD4YuoOAAAAMklEQVR42mOQk1OhKWIYLhYE3EkhDw0aC4Z+HDwLCCAGDWILRgs73AgAQnVxbKCjSFcAAAAASUVORK5CYII=";

// ---------------------------------------------------------------------------
// The project the agent works on (kept in memory; edits are applied for real).
// ---------------------------------------------------------------------------

const ORIGINAL = {
	"src/main.rs": `use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

mod count;

use count::{count_path, Counts};

/// Count lines, words and bytes in files.
#[derive(Parser, Debug)]
#[command(name = "tally", version, about)]
struct Args {
    /// Count lines only
    #[arg(short = 'l', long)]
    lines: bool,

    /// Files to count
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut total = Counts::default();
    let mut failed = false;

    for path in &args.files {
        match count_path(path) {
            Ok(c) => {
                println!("{}", c.render(args.lines, &path.display().to_string()));
                total += c;
            }
            Err(e) => {
                eprintln!("tally: {}: {e}", path.display());
                failed = true;
            }
        }
    }

    if args.files.len() > 1 {
        println!("{}", total.render(args.lines, "total"));
    }

    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
`,
	"src/count.rs": `use std::fs;
use std::io;
use std::ops::AddAssign;
use std::path::Path;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub lines: usize,
    pub words: usize,
    pub bytes: usize,
}

impl Counts {
    pub fn of(text: &str) -> Self {
        Counts {
            lines: text.lines().count(),
            words: text.split_whitespace().count(),
            bytes: text.len(),
        }
    }

    pub fn render(&self, lines_only: bool, name: &str) -> String {
        if lines_only {
            format!("{:>8} {name}", self.lines)
        } else {
            format!("{:>8}{:>8}{:>8} {name}", self.lines, self.words, self.bytes)
        }
    }
}

impl AddAssign for Counts {
    fn add_assign(&mut self, other: Self) {
        self.lines += other.lines;
        self.words += other.words;
        self.bytes += other.bytes;
    }
}

pub fn count_path(path: &Path) -> io::Result<Counts> {
    let text = fs::read_to_string(path)?;
    Ok(Counts::of(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words_and_lines() {
        let c = Counts::of("hello world\\nbye\\n");
        assert_eq!(c, Counts { lines: 2, words: 3, bytes: 16 });
    }

    #[test]
    fn empty_input() {
        assert_eq!(Counts::of(""), Counts::default());
    }
}
`,
	"tests/cli.rs": `use assert_cmd::Command;
use predicates::prelude::*;

fn tally() -> Command {
    Command::cargo_bin("tally").unwrap()
}

#[test]
fn counts_a_single_file() {
    tally()
        .arg("tests/data/two-lines.txt")
        .assert()
        .success()
        .stdout("       2       5      24 tests/data/two-lines.txt\\n");
}

#[test]
fn lines_only() {
    tally()
        .args(["-l", "tests/data/two-lines.txt"])
        .assert()
        .success()
        .stdout("       2 tests/data/two-lines.txt\\n");
}

#[test]
fn missing_file_fails() {
    tally()
        .arg("nope.txt")
        .assert()
        .failure()
        .stderr(predicate::str::contains("tally: nope.txt"));
}

#[test]
fn help_matches_snapshot() {
    let out = tally().arg("--help").output().unwrap();
    let expected = std::fs::read_to_string("tests/snapshots/help.txt").unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}
`,
	"tests/snapshots/help.txt": `Count lines, words and bytes in files

Usage: tally [OPTIONS] <FILES>...

Arguments:
  <FILES>...  Files to count

Options:
  -l, --lines    Count lines only
  -h, --help     Print help
  -V, --version  Print version
`,
	"README.md": `# tally

A tiny \`wc\` replacement: counts lines, words and bytes.

## Usage

\`\`\`
tally [OPTIONS] <FILES>...
\`\`\`

| Option | Meaning |
| --- | --- |
| \`-l\`, \`--lines\` | Count lines only |

Output is one line per file (\`lines words bytes name\`), plus a \`total\` line
when more than one file is given. Errors go to stderr and make the exit code 1.
`,
};
let files = structuredClone(ORIGINAL);

// ---------------------------------------------------------------------------
// Message builders (shapes as Pi 0.81 writes them)
// ---------------------------------------------------------------------------

fs.mkdirSync(path.dirname(outFile), { recursive: true });
const sm = pi.SessionManager.create(CWD, fs.mkdtempSync(path.join(path.dirname(outFile), ".demo-gen-")));
const workDir = sm.getSessionDir();
sm.newSession({ id: SESSION_ID });

let context = 2900; // tokens: system prompt + tool definitions
function usage(newInput, output) {
	const cacheRead = context;
	const cacheWrite = newInput;
	const input = 3;
	context += newInput + output;
	const cost = { input: input * 3e-6, output: output * 15e-6, cacheRead: cacheRead * 0.3e-6, cacheWrite: cacheWrite * 3.75e-6 };
	cost.total = cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
	return { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost };
}

const ids = [];
function userSays(text, images = []) {
	advance(25 + R() * 60);
	const content = [{ type: "text", text }, ...images.map((data) => ({ type: "image", data, mimeType: "image/png" }))];
	const id = sm.appendMessage({ role: "user", content, timestamp: Date.now() });
	ids.push(id);
	return id;
}

const pendingCalls = [];
/** One assistant response. blocks: strings are text, {think} thinking, {tool, args} tool calls. */
function assistantSays(blocks, { newInput = 400, output = 300, seconds = 8 } = {}) {
	advance(0.6 + R());
	const started = Date.now();
	const content = [];
	for (const b of blocks) {
		if (typeof b === "string") content.push({ type: "text", text: b });
		else if (b.think) content.push({ type: "thinking", thinking: b.think, thinkingSignature: sig() });
		else {
			const call = { type: "toolCall", id: `toolu_01${b62(22)}`, name: b.tool, arguments: b.args };
			content.push(call);
			pendingCalls.push(call);
		}
	}
	const stopReason = pendingCalls.length ? "toolUse" : "stop";
	advance(seconds + R() * 4);
	const msg = { role: "assistant", content, ...MODEL, responseId: `msg_01${b62(22)}`, usage: usage(newInput, output), stopReason, timestamp: started };
	const id = sm.appendMessage(msg);
	ids.push(id);
	return id;
}

function toolResult(text, { isError = false, details, seconds = 0.2 } = {}) {
	const call = pendingCalls.shift();
	if (!call) throw new Error("no pending tool call");
	advance(seconds + R() * 0.3);
	const msg = { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [{ type: "text", text }] };
	if (details !== undefined) msg.details = details;
	msg.isError = isError;
	msg.timestamp = Date.now();
	const id = sm.appendMessage(msg);
	ids.push(id);
	return id;
}

/** Result of the pending `read` call: the current file content. */
const readResult = () => toolResult(files[pendingCalls[0].arguments.path]);

/** Result of the pending `edit` call: apply it and report like Pi's edit tool. */
function editResult() {
	const { path: p, edits } = pendingCalls[0].arguments;
	const before = files[p];
	let after = before;
	for (const e of edits) {
		if (after.split(e.oldText).length !== 2) throw new Error(`edit in ${p}: oldText must occur exactly once`);
		after = after.replace(e.oldText, () => e.newText);
	}
	files[p] = after;
	const diff = generateDiffString(before, after);
	const patch = generateUnifiedPatch(p, before, after);
	return toolResult(`Successfully replaced ${edits.length} block(s) in ${p}.`, { details: { diff: diff.diff, patch, firstChangedLine: diff.firstChangedLine } });
}

function summaryFileOps(entryIds, previous) {
	const ops = createFileOps();
	for (const f of previous?.readFiles ?? []) ops.read.add(f);
	for (const f of previous?.modifiedFiles ?? []) ops.edited.add(f);
	for (const id of entryIds) {
		const e = sm.getEntry(id);
		if (e?.type === "message") extractFileOpsFromMessage(e.message, ops);
	}
	return computeFileLists(ops);
}

const summaryUsage = (input, output) => {
	const cost = { input: input * 3e-6, output: output * 15e-6, cacheRead: 0, cacheWrite: 0 };
	cost.total = cost.input + cost.output;
	return { input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output, cost };
};

// ---------------------------------------------------------------------------
// The conversation
// ---------------------------------------------------------------------------

// New session, like sdk.ts: initial model and thinking level.
sm.appendModelChange(MODEL.provider, MODEL.model);
advance(0.01);
const thinkingEntry = sm.appendThinkingLevelChange("medium");

const firstPrompt = userSays(
	"Add a `--verbose` flag to tally. When it's set, print each file name and its counts to stderr as the file is processed. stdout has to stay exactly the same, a couple of scripts parse it.",
);

assistantSays(
	[
		{ think: "The user wants a --verbose flag that logs progress to stderr without changing stdout. I should look at how the CLI arguments are defined (probably clap) and where the output is printed before changing anything." },
		"Let me look at how the CLI is put together first.",
		{ tool: "read", args: { path: "src/main.rs" } },
		{ tool: "read", args: { path: "src/count.rs" } },
	],
	{ newInput: 180, output: 160, seconds: 5 },
);
readResult();
readResult();

assistantSays(
	[
		{
			think:
				"Args is a clap derive struct with `lines` and `files`. All printing happens in main's loop. I'll add `verbose: bool` with `-v`/`--verbose` and, inside the Ok arm, an eprintln! with the file name and the three counts. Errors already go to stderr, so nothing else changes. Counts has public fields, so I can format them directly.",
		},
		"Arguments are a clap derive struct in `src/main.rs`, and all output happens in `main`. I'll add a `verbose` field and log to stderr from the loop.",
		{
			tool: "edit",
			args: {
				path: "src/main.rs",
				edits: [
					{
						oldText: "    #[arg(short = 'l', long)]\n    lines: bool,\n",
						newText: "    #[arg(short = 'l', long)]\n    lines: bool,\n\n    /// Print each file and its counts to stderr\n    #[arg(short = 'v', long)]\n    verbose: bool,\n",
					},
				],
			},
		},
	],
	{ newInput: 1350, output: 420, seconds: 9 },
);
editResult();

assistantSays(
	[
		{
			tool: "edit",
			args: {
				path: "src/main.rs",
				edits: [
					{
						oldText: "            Ok(c) => {\n                println!",
						newText:
							'            Ok(c) => {\n                if args.verbose {\n                    eprintln!(\n                        "tally: {}: {} lines, {} words, {} bytes",\n                        path.display(),\n                        c.lines,\n                        c.words,\n                        c.bytes\n                    );\n                }\n                println!',
					},
				],
			},
		},
	],
	{ newInput: 260, output: 210, seconds: 4 },
);
editResult();

assistantSays(["Now the tests.", { tool: "bash", args: { command: "cargo test" } }], { newInput: 240, output: 40, seconds: 2 });
const HELP_OLD = ORIGINAL["tests/snapshots/help.txt"];
const HELP_NEW = HELP_OLD.replace("  -l, --lines    Count lines only\n", "  -l, --lines    Count lines only\n  -v, --verbose  Print each file and its counts to stderr\n");
const CARGO_TEST_HEAD = `   Compiling tally v0.3.1 (${CWD})
    Finished \`test\` profile [unoptimized + debuginfo] target(s) in 2.84s
     Running unittests src/main.rs (target/debug/deps/tally-3f1c0d2a9b7e4c15)

running 2 tests
test count::tests::empty_input ... ok
test count::tests::counts_words_and_lines ... ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

     Running tests/cli.rs (target/debug/deps/cli-8e2b6a0f4d91c7a3)
`;
toolResult(
	`${CARGO_TEST_HEAD}
running 4 tests
test lines_only ... ok
test counts_a_single_file ... ok
test missing_file_fails ... ok
test help_matches_snapshot ... FAILED

failures:

---- help_matches_snapshot stdout ----

thread 'help_matches_snapshot' panicked at tests/cli.rs:38:5:
assertion \`left == right\` failed
  left: ${JSON.stringify(HELP_NEW)}
 right: ${JSON.stringify(HELP_OLD)}
note: run with \`RUST_BACKTRACE=1\` environment variable to display a backtrace


failures:
    help_matches_snapshot

test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.05s

error: test failed, to rerun pass \`--test cli\`


Command exited with code 101`,
	{ isError: true, seconds: 6.5 },
);

assistantSays(
	[
		{
			think:
				"Only help_matches_snapshot fails. It compares `tally --help` with tests/snapshots/help.txt, and the left side now has the `-v, --verbose` line. That's the expected change from the new flag, not a bug, so the snapshot needs the new line. Let me read it to get the exact alignment.",
		},
		"One failure, and it's the help snapshot test doing its job: `--help` now lists the new flag. Let me look at the snapshot.",
		{ tool: "read", args: { path: "tests/snapshots/help.txt" } },
	],
	{ newInput: 900, output: 190, seconds: 5 },
);
readResult();

assistantSays(
	[
		{
			tool: "edit",
			args: {
				path: "tests/snapshots/help.txt",
				edits: [{ oldText: "  -l, --lines    Count lines only\n", newText: "  -l, --lines    Count lines only\n  -v, --verbose  Print each file and its counts to stderr\n" }],
			},
		},
	],
	{ newInput: 150, output: 120, seconds: 3 },
);
editResult();

assistantSays([{ tool: "bash", args: { command: "cargo test" } }], { newInput: 60, output: 30, seconds: 1.5 });
const testsPass = (n, names) => `${CARGO_TEST_HEAD}
running ${n} tests
${names.map((t) => `test ${t} ... ok`).join("\n")}

test result: ok. ${n} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.06s

   Doc-tests tally

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
`;
toolResult(testsPass(4, ["lines_only", "counts_a_single_file", "missing_file_fails", "help_matches_snapshot"]), { seconds: 4.8 });

const flagDone = assistantSays(
	[
		{ think: "All 6 tests pass (2 unit, 4 integration). Summarize the change for the user." },
		"All tests pass. What changed:\n\n- `src/main.rs`: new `-v`/`--verbose` flag. For each file it prints `tally: <file>: <lines> lines, <words> words, <bytes> bytes` to **stderr** before the normal line on stdout.\n- `tests/snapshots/help.txt`: the help snapshot now lists the flag (that was the one failing test).\n\nstdout is untouched, so `tally a.txt b.txt | awk ...` keeps working with or without `-v`.",
	],
	{ newInput: 700, output: 260, seconds: 7 },
);

advance(40);
sm.appendSessionInfo("Add --verbose to tally");

const secondPrompt = userSays(
	"Looks good in my terminal (screenshot attached). Can you add a test that proves stdout is byte-for-byte identical with and without -v?",
	[SCREENSHOT_PNG],
);

assistantSays(
	[
		{ think: "I need an integration test in tests/cli.rs that runs tally twice on the same input, once with -v, and compares stdout, plus check that stderr is non-empty with -v. Let me read the current test file for its helpers." },
		{ tool: "read", args: { path: "tests/cli.rs" } },
	],
	{ newInput: 1900, output: 130, seconds: 4 },
);
readResult();

assistantSays(
	[
		"I'll add a test that runs the same command with and without `-v` and compares stdout, and checks the progress line on stderr.",
		{
			tool: "edit",
			args: {
				path: "tests/cli.rs",
				edits: [
					{
						oldText: "#[test]\nfn help_matches_snapshot() {",
						newText:
							'#[test]\nfn verbose_keeps_stdout_identical() {\n    let files = ["tests/data/two-lines.txt", "Cargo.toml"];\n    let quiet = tally().args(files).output().unwrap();\n    let loud = tally().arg("-v").args(files).output().unwrap();\n    assert!(quiet.status.success() && loud.status.success());\n    assert_eq!(quiet.stdout, loud.stdout);\n    assert!(quiet.stderr.is_empty());\n    let stderr = String::from_utf8(loud.stderr).unwrap();\n    assert!(stderr.contains("tally: tests/data/two-lines.txt: 2 lines, 5 words, 24 bytes"));\n}\n\n#[test]\nfn help_matches_snapshot() {',
					},
				],
			},
		},
	],
	{ newInput: 620, output: 380, seconds: 8 },
);
editResult();

assistantSays([{ tool: "bash", args: { command: "cargo test --test cli" } }], { newInput: 60, output: 30, seconds: 1.2 });
toolResult(
	`   Compiling tally v0.3.1 (${CWD})
    Finished \`test\` profile [unoptimized + debuginfo] target(s) in 1.97s
     Running tests/cli.rs (target/debug/deps/cli-8e2b6a0f4d91c7a3)

running 5 tests
test lines_only ... ok
test counts_a_single_file ... ok
test missing_file_fails ... ok
test help_matches_snapshot ... ok
test verbose_keeps_stdout_identical ... ok

test result: ok. 5 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.08s
`,
	{ seconds: 3.9 },
);

assistantSays(
	["Added `verbose_keeps_stdout_identical` in `tests/cli.rs`: it runs `tally` on two files with and without `-v`, asserts stdout is byte-identical, that stderr is empty without `-v`, and that the progress line appears with it. All 5 integration tests pass."],
	{ newInput: 420, output: 110, seconds: 4 },
);

// The user runs a shell command from the editor (`!git diff --stat`).
advance(35);
sm.appendMessage({
	role: "bashExecution",
	command: "git diff --stat",
	output: " src/main.rs              | 13 +++++++++++++\n tests/cli.rs             | 13 +++++++++++++\n tests/snapshots/help.txt |  1 +\n 3 files changed, 27 insertions(+)",
	exitCode: 0,
	cancelled: false,
	truncated: false,
	timestamp: Date.now(),
});

// /compact: summarize everything before the second prompt, keep from there on.
advance(20);
const summarized = sm.getBranch().map((e) => e.id);
const cut = summarized.indexOf(secondPrompt);
const lists1 = summaryFileOps(summarized.slice(0, cut));
const compactionSummary = `## Goal
Add a \`-v\`/\`--verbose\` flag to \`tally\` (Rust CLI, clap derive) that prints per-file progress to stderr while keeping stdout byte-for-byte unchanged.

## Constraints & Preferences
- stdout must not change: scripts parse it.

## Progress
### Done
- [x] Added \`verbose: bool\` (\`#[arg(short = 'v', long)]\`, doc "Print each file and its counts to stderr") to \`Args\` in \`src/main.rs\`
- [x] In the \`Ok(c)\` arm of the loop in \`main\`: \`eprintln!("tally: {}: {} lines, {} words, {} bytes", ...)\` when \`args.verbose\`
- [x] \`cargo test\` failed once: \`help_matches_snapshot\` (tests/cli.rs:38) because \`--help\` gained the \`-v, --verbose\` line; updated \`tests/snapshots/help.txt\`; all tests pass

### In Progress
- [ ] (none)

### Blocked
- (none)

## Key Decisions
- **Progress goes to stderr, not stdout**: keeps existing consumers of stdout working.
- **Snapshot updated rather than test relaxed**: the help change is intended.

## Next Steps
1. Add an integration test proving stdout is identical with and without \`-v\`.

## Critical Context
- Integration tests use \`assert_cmd\` via the \`tally()\` helper in \`tests/cli.rs\`; fixture \`tests/data/two-lines.txt\` counts as \`2 5 24\`.${formatFileOperations(lists1.readFiles, lists1.modifiedFiles)}`;
sm.appendCompaction(compactionSummary, secondPrompt, 11874, lists1, false, summaryUsage(9650, 610));

advance(15);
sm.appendThinkingLevelChange("high");

userSays("Last thing: document -v in the README usage table.");
assistantSays([{ tool: "read", args: { path: "README.md" } }], { newInput: 300, output: 40, seconds: 2 });
readResult();
assistantSays(
	[
		{ think: "The README has an options table with only -l. Add a row for -v/--verbose and a sentence that progress goes to stderr so stdout stays parseable." },
		{
			tool: "edit",
			args: {
				path: "README.md",
				edits: [
					{
						oldText: "| `-l`, `--lines` | Count lines only |\n",
						newText: "| `-l`, `--lines` | Count lines only |\n| `-v`, `--verbose` | Print each file and its counts to stderr as it is processed |\n",
					},
					{
						oldText: "Errors go to stderr and make the exit code 1.\n",
						newText: "Errors go to stderr and make the exit code 1.\n\n`--verbose` only writes to stderr, so stdout is the same with or without it.\n",
					},
				],
			},
		},
	],
	{ newInput: 380, output: 240, seconds: 6 },
);
editResult();
const readmeDone = assistantSays(["README updated: `-v`/`--verbose` is in the options table, with a note that it only writes to stderr."], { newInput: 90, output: 45, seconds: 2 });

// The user bookmarks the working state in /tree.
advance(30);
sm.appendLabelChange(flagDone, "flag-works");

// ---- /tree: back to the first prompt, with a summary of the abandoned branch ----
advance(50);
const abandoned = sm.getBranch(readmeDone).map((e) => e.id);
const prevCompaction = sm.getEntry(abandoned.find((id) => sm.getEntry(id).type === "compaction"));
const lists2 = summaryFileOps(abandoned.slice(abandoned.indexOf(firstPrompt)), prevCompaction.details);
const branchSummary = `The user explored a different conversation branch before returning here.
Summary of that exploration:

## Goal
Make \`tally\` print per-file progress to stderr, via a new \`-v\`/\`--verbose\` CLI flag.

## Constraints & Preferences
- stdout must stay byte-for-byte identical (scripts parse it).

## Progress
### Done
- [x] \`-v\`/\`--verbose\` flag in \`Args\` (\`src/main.rs\`), \`eprintln!\` of \`tally: <file>: <l> lines, <w> words, <b> bytes\` in the \`Ok(c)\` arm
- [x] Updated \`tests/snapshots/help.txt\` after \`help_matches_snapshot\` failed on the new help line
- [x] New test \`verbose_keeps_stdout_identical\` in \`tests/cli.rs\`; README options table documents \`-v\`

### In Progress
- [ ] (none)

### Blocked
- (none)

## Key Decisions
- **Flag on the CLI**: changes \`--help\` and its snapshot; the user then preferred to try an approach without CLI changes.

## Next Steps
1. (abandoned in favour of an environment variable)

## Critical Context
- \`help_matches_snapshot\` compares \`tally --help\` with \`tests/snapshots/help.txt\` exactly.${formatFileOperations(lists2.readFiles, lists2.modifiedFiles)}`;
// navigateTree on a user message: the new leaf is its parent (the thinking_level_change).
const summaryId = sm.branchWithSummary(thinkingEntry, branchSummary, lists2, false, summaryUsage(14210, 530));
advance(0.05);
sm.appendLabelChange(summaryId, "plan-b");

// ---- plan B: an environment variable instead of a flag ----
files = structuredClone(ORIGINAL); // the user reset the working tree
userSays(
	"Let's try it differently: no new flag. I ran `git checkout .`, so the tree is clean again. Make tally print the same per-file progress to stderr when the environment variable `TALLY_VERBOSE=1` is set. The CLI and its --help must not change.",
);
assistantSays(
	[
		{ think: "Environment variable instead of a flag: no clap changes, so the help snapshot stays valid. Read TALLY_VERBOSE once in main with std::env::var_os and compare to \"1\". The working tree was reset, so re-read main.rs to get the exact text." },
		{ tool: "read", args: { path: "src/main.rs" } },
	],
	{ newInput: 2600, output: 150, seconds: 4 },
);
readResult();
assistantSays(
	[
		"Reading `TALLY_VERBOSE` once at startup; `--help` stays as it is.",
		{
			tool: "edit",
			args: {
				path: "src/main.rs",
				edits: [
					{
						oldText: "    let args = Args::parse();\n",
						newText: '    let args = Args::parse();\n    let verbose = std::env::var_os("TALLY_VERBOSE").is_some_and(|v| v == "1");\n',
					},
					{
						oldText: "            Ok(c) => {\n                println!",
						newText:
							'            Ok(c) => {\n                if verbose {\n                    eprintln!(\n                        "tally: {}: {} lines, {} words, {} bytes",\n                        path.display(),\n                        c.lines,\n                        c.words,\n                        c.bytes\n                    );\n                }\n                println!',
					},
				],
			},
		},
	],
	{ newInput: 1400, output: 390, seconds: 8 },
);
editResult();
assistantSays([{ tool: "bash", args: { command: "cargo test" } }], { newInput: 90, output: 30, seconds: 1.3 });
toolResult(testsPass(4, ["lines_only", "counts_a_single_file", "missing_file_fails", "help_matches_snapshot"]), { seconds: 5.2 });
assistantSays(
	["Tests pass, including the help snapshot. Quick manual check:", { tool: "bash", args: { command: "TALLY_VERBOSE=1 cargo run -q -- tests/data/two-lines.txt Cargo.toml" } }],
	{ newInput: 700, output: 70, seconds: 2 },
);
toolResult(
	"tally: tests/data/two-lines.txt: 2 lines, 5 words, 24 bytes\n       2       5      24 tests/data/two-lines.txt\ntally: Cargo.toml: 12 lines, 27 words, 214 bytes\n      12      27     214 Cargo.toml\n      14      32     238 total",
	{ seconds: 1.1 },
);
assistantSays(
	[
		{ think: "stderr and stdout are interleaved in the captured output, but the progress lines are the stderr ones. Done; mention how to use it and that nothing else changed." },
		"Done, without touching the CLI:\n\n- `src/main.rs` reads `TALLY_VERBOSE` once; when it is `1`, each file logs `tally: <file>: <lines> lines, <words> words, <bytes> bytes` to stderr.\n- `--help`, its snapshot and stdout are unchanged; all tests pass.\n\nUse it as `TALLY_VERBOSE=1 tally *.txt`. In the output above the `tally: ...` lines are stderr, interleaved with stdout by the terminal capture.",
	],
	{ newInput: 260, output: 230, seconds: 7 },
);

// ---------------------------------------------------------------------------
const written = sm.getSessionFile();
if (!written || !fs.existsSync(written)) throw new Error("Pi did not persist the session");
fs.renameSync(written, outFile);
fs.rmSync(workDir, { recursive: true, force: true });
const lines = fs.readFileSync(outFile, "utf8").trimEnd().split("\n");
process.stdout.write(
	`${JSON.stringify({ pi: `${pi.pkg}@${pi.version}`, out: outFile, bytes: fs.statSync(outFile).size, lines: lines.length, entries: lines.length - 1, leafId: sm.getLeafId(), sessionName: sm.getSessionName() })}\n`,
);
