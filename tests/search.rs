//! `sessionfs grep` against `grep -r` through a real mount of the same sessions.
//!
//! Every committed fixture (the Pi sessions, the damaged files, the hand-made
//! `search/tricky.jsonl` and the README's demo) is put in one sessions directory,
//! which is mounted; then, for a list of patterns and options, `grep -r OPTIONS
//! PATTERN` run at the root of the mount (GNU grep, `LC_ALL=C.UTF-8`) and `sessionfs
//! grep OPTIONS PATTERN DIR` must print the same lines, byte for byte and in the same
//! order, once the mount's lines for files that are not an entry's content
//! (`session.json`, `name`, `tree`, `reply`, `ERROR`) are left out; report the same
//! binary files on standard error; and exit with the same status.
//!
//! The patterns cover what the prefilter must not get wrong: quotes, backslashes and
//! newlines inside content, escapes JSON.stringify would not write, non-ASCII text,
//! numbers written otherwise, text the renderer adds, images (binary, text, broken
//! UTF-8), case-insensitive and word matches, and regular expressions.
//!
//! The Claude Code fixtures (`claude/projects`, laid out as `~/.claude/projects`, with
//! subagents' transcripts and spilled tool results in the sessions' side folders) are
//! compared the same way, in a mount of their own.
//!
//! The other tests check what the comparison cannot: errors, exit statuses, `--json`,
//! a single file's paths, several arguments, and every agent's default directory.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures(sub: &str) -> Vec<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(sub);
    let mut v: Vec<PathBuf> = fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    v.sort();
    v
}

/// The fixtures whose walk through a mount takes seconds (hundreds of levels deep,
/// thousands of entries): searched with [`CASES_ALL`] only.
const BIG: &[&str] = &["medium", "linear", "bushy"];

/// A sessions directory with the fixtures (all of them, or all but [`BIG`]); returns
/// it and its session roots (`PROJECT/SESSION`, or `SESSION` for a loose one).
fn fixture_dir(dir: &Path, big: bool) -> (PathBuf, BTreeSet<String>) {
    let root = dir.join("sessions");
    let mut roots = BTreeSet::new();
    for sub in ["sessions", "damaged", "search"] {
        fs::create_dir_all(root.join(sub)).unwrap();
        for f in fixtures(sub) {
            let stem = f.file_stem().unwrap().to_str().unwrap();
            if !big && BIG.contains(&stem) {
                continue;
            }
            let name = f.file_name().unwrap();
            fs::copy(&f, root.join(sub).join(name)).unwrap();
            roots.insert(format!(
                "{sub}/{}",
                f.file_stem().unwrap().to_str().unwrap()
            ));
        }
    }
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo.jsonl");
    fs::copy(demo, root.join("demo.jsonl")).unwrap();
    roots.insert("demo".into());
    (root, roots)
}

/// Removes grep's colour sequences.
fn plain(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\x1b' {
            for d in it.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether a path `grep -r` printed is an entry's content file.
fn is_content(path: &str, roots: &BTreeSet<String>) -> bool {
    let Some((parent, last)) = path.rsplit_once('/') else {
        return false;
    };
    !roots.contains(parent) && last != "reply"
}

/// A path through the mount as `sessionfs grep` prints it: as it is, unless it has
/// `PATH_MAX` (4,096) bytes or more, when it is `ROOT/.id/ID/FILE` (the session's root,
/// the entry's directory name and the file; `model::core::grep::PATH_MAX`).
fn by_id_past_path_max(path: &str, roots: &BTreeSet<String>) -> String {
    if path.len() < 4096 {
        return path.to_string();
    }
    let root = roots
        .iter()
        .filter(|r| path.starts_with(&format!("{r}/")))
        .max_by_key(|r| r.len())
        .unwrap_or_else(|| panic!("no session root for {path}"));
    let mut parts = path.rsplitn(3, '/');
    let (file, dir) = (parts.next().unwrap(), parts.next().unwrap());
    format!("{root}/.id/{dir}/{file}")
}

/// The path at the start of an output line (`-l`: the whole line).
fn path_of(line: &str, list: bool) -> String {
    let p = plain(line);
    if list {
        p
    } else {
        p[..path_end(&p)].to_string()
    }
}

/// Where the path ends in an output line: at the first `:` that is not inside a Codex
/// entry's directory name (`<uuid>:<ordinal>/`).
fn path_end(p: &str) -> usize {
    let b = p.as_bytes();
    for (k, _) in p.match_indices(':') {
        let uuid = k >= 36
            && b[k - 36..k]
                .iter()
                .all(|c| c.is_ascii_hexdigit() || *c == b'-');
        let digits = b[k + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if uuid && digits > 0 && b.get(k + 1 + digits) == Some(&b'/') {
            continue;
        }
        return k;
    }
    p.len()
}

/// The paths a program reported as binary files that match; any other message on
/// standard error fails the test.
fn binary_files(stderr: &str, program: &str, args: &[&str]) -> Vec<String> {
    stderr
        .lines()
        .map(|l| {
            l.strip_prefix(program)
                .and_then(|l| l.strip_suffix(": binary file matches"))
                .unwrap_or_else(|| panic!("{program}{args:?}: {l}"))
                .to_string()
        })
        .collect()
}

struct Ran {
    stdout: String,
    /// Paths reported as binary files that match.
    binary: Vec<String>,
    code: i32,
}

fn grep_through_mount(mnt: &Path, args: &[&str], roots: &BTreeSet<String>) -> Ran {
    let mut c = Command::new("grep");
    c.arg("-r")
        .args(args)
        .current_dir(mnt)
        .env("LC_ALL", "C.UTF-8")
        .env_remove("GREP_COLORS")
        .env_remove("GREP_COLOR");
    let out = run_command(c);
    let list = args.contains(&"-l");
    let stdout: String = out
        .stdout
        .split_inclusive('\n')
        .filter(|l| is_content(&path_of(l.trim_end_matches('\n'), list), roots))
        .map(|l| {
            let p = path_of(l.trim_end_matches('\n'), list);
            l.replacen(&p, &by_id_past_path_max(&p, roots), 1)
        })
        .collect();
    let binary: Vec<String> = binary_files(&out.stderr, "grep: ", args)
        .into_iter()
        .filter(|p| is_content(p, roots))
        .map(|p| by_id_past_path_max(&p, roots))
        .collect();
    let code = if !stdout.is_empty() || !binary.is_empty() {
        0
    } else {
        1
    };
    // -c prints every file, matching or not.
    let code = if args.contains(&"-c") {
        if stdout.lines().any(|l| !plain(l).ends_with(":0")) {
            0
        } else {
            1
        }
    } else {
        code
    };
    Ran {
        stdout,
        binary,
        code,
    }
}

fn sessionfs_grep(args: &[&str], dir: &Path) -> Ran {
    let mut c = Command::new(bin());
    c.arg("grep")
        .args(args)
        .arg(dir)
        .env_remove("GREP_COLORS")
        .env_remove("GREP_COLOR");
    let out = run_command(c);
    let binary = binary_files(&out.stderr, "sessionfs: ", args);
    Ran {
        stdout: out.stdout,
        binary,
        code: out.status.code().unwrap(),
    }
}

/// Cases run on every fixture, the big ones included.
const CASES_ALL: &[&[&str]] = &[
    &["-n", "--", "inode"],
    &["-l", "--", "system"],
    &["-l", "-i", "--", "error"],
    &["-c", "-F", "--", "(no content)"],
    &["--color=always", "-n", "-w", "--", "read"],
    &["-n", "-F", "--", "\"path\": \"src/"],
    &["-n", "-E", "--", "tool call (bash|read)"],
    &["-l", "--", "[0-9]\\{5\\}"],
    &["-n", "--", "thinking"],
];

/// The cases, run on every fixture but the big ones: grep's options, `--`, the
/// pattern.
const CASES: &[&[&str]] = &[
    // Plain words, in every output mode.
    &["-n", "--", "TALLY_VERBOSE"],
    &["-l", "--", "inode"],
    &["-c", "--", "hello"],
    &["--", "parser"],
    &["--color=always", "-n", "--", "hello"],
    &["--color=always", "-l", "--", "error"],
    &["--color=always", "-c", "--", "naïve"],
    // Quotes, backslashes and escapes.
    &["-n", "-F", "--", "\"hello\""],
    &["-n", "-F", "--", "say \"hi\""],
    &["-n", "-F", "--", "C:\\Users"],
    &["-n", "--", "C:\\\\Users\\\\me"],
    &["-n", "-F", "--", "echo \\\"hi\\\""],
    &["-n", "-F", "--", "a\\\\nb"],
    &["-n", "-F", "--", "\\u001b"],
    &["-n", "--", "red error"],
    &["-n", "--", "ABC"],
    &["-n", "-i", "--", "café"],
    &["-n", "--", "smile 😀"],
    &["-n", "-F", "--", "a/b"],
    &["-n", "-F", "--", "\u{FFFD}"],
    &["-n", "--", "line.sep"],
    // Newlines inside content: lines of a multi-line file.
    &["-n", "--", "^then a new line"],
    &["-n", "--", "CRLF"],
    &["-n", "-E", "--", "^Line two.$"],
    // Non-ASCII text.
    &["-n", "--", "naïve"],
    &["-n", "--", "日本語"],
    &["-n", "-F", "--", "—"],
    &["-n", "-i", "--", "NAÏVE CAFÉ"],
    // Numbers JavaScript writes otherwise.
    &["-n", "--", "1500"],
    &["-n", "-F", "--", "1.5"],
    &["-n", "-F", "--", "12345678901234567000"],
    &["-n", "-w", "--", "10"],
    &["-n", "-E", "--", "[0-9]{4}"],
    // Text the renderer adds.
    &["-n", "--", "thinking"],
    &["-n", "-F", "--", "[tool call bash"],
    &["-n", "--", "tool call"],
    &["-n", "-F", "--", "(no content)"],
    &["-n", "--", "content"],
    &["-n", "-F", "--", "[error]"],
    &["-n", "--", "stop reason"],
    &["-n", "--", "exit code"],
    &["-n", "--", "output truncated"],
    &["-n", "--", "excluded"],
    &["-n", "--", "tokens before"],
    &["-n", "--", "kept from"],
    &["-n", "--", "branch summary"],
    &["-n", "-F", "--", " → "],
    &["-n", "--", "name cleared"],
    &["-n", "--", "bytes → image"],
    &["-n", "--", "jpg"],
    &["-n", "-F", "--", "$ ls"],
    &["-n", "--", "cannot be shown"],
    &["-n", "--", "column"],
    &["-n", "-F", "--", "\": "],
    &["-n", "-F", "--", "  \"command"],
    &["-n", "--", "anthropic/claude"],
    // Ids that v1 files get only when read (`kept from ID`).
    &["-n", "--", "fb63a010"],
    &["-n", "-i", "--", "F9DB9179"],
    // Pi 1.6: system messages, context edits, usage, compactions that keep nothing.
    &["-n", "--", "system message"],
    &["-n", "--", "sections preamble"],
    &["-n", "--", "constrained sampling"],
    &["-n", "--", "required)"],
    &["-n", "--", "context edit of"],
    &["-n", "--", "removes it from"],
    &["-n", "--", "cache read"],
    &["-n", "-E", "--", "^tokens: [0-9]+ input"],
    &["-n", "-F", "--", "cost: $"],
    &["-n", "--", "keeps nothing"],
    &["-n", "--", "with the system prompt"],
    &["-n", "-i", "--", "TOOLS +READ"],
    // Images: binary, text, broken UTF-8.
    &["-n", "--", "IHDR"],
    &["-n", "--", "hello image text"],
    &["-n", "--", "foo"],
    &["-c", "--", "foo"],
    &["-l", "--", "svg"],
    // A NUL in a KIND file.
    &["-n", "--", "after nul"],
    &["-c", "--", "nul"],
    // Case and words.
    &["-n", "-i", "--", "ERROR"],
    &["-n", "-w", "--", "read"],
    &["-n", "-i", "-w", "--", "the"],
    &["-n", "-w", "-F", "--", "e"],
    // Regular expressions.
    &["-n", "-E", "--", "tool (call|result)"],
    &["-n", "-E", "--", "^\\[(thinking|error)\\]$"],
    &["-n", "--", "\\(ab\\)*c\\{2\\}"],
    &["-n", "-E", "--", "x{2,}"],
    &["-n", "--", "[[:upper:]][[:digit:]]"],
    &["-c", "-E", "--", "^$"],
    &["-l", "--", "."],
    &["-n", "-E", "--", "hello|world|TALLY"],
];

/// A copy of the Claude Code fixture projects; returns it and its session roots.
fn claude_dir(dir: &Path) -> (PathBuf, BTreeSet<String>) {
    let root = dir.join("projects");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude/projects"),
        &root,
    );
    let mut roots = BTreeSet::new();
    for p in fs::read_dir(&root).unwrap() {
        let p = p.unwrap().path();
        for f in fs::read_dir(&p).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "jsonl") {
                roots.insert(format!(
                    "{}/{}",
                    p.file_name().unwrap().to_str().unwrap(),
                    f.file_stem().unwrap().to_str().unwrap()
                ));
            }
        }
    }
    (root, roots)
}

/// Runs every case through a mount of the fixtures and with `sessionfs grep`.
fn compare(big: bool, cases: &[&[&str]]) {
    // Without the locale, grep silently works on bytes and the comparison is moot.
    let probe = sh(
        "printf 'CAFÉ\\n' | LC_ALL=C.UTF-8 grep -ci 'café'",
        Path::new("/"),
    );
    assert_eq!(
        probe.stdout.trim(),
        "1",
        "GNU grep does not fold É under LC_ALL=C.UTF-8: is the C.UTF-8 locale missing?"
    );
    let dir = tempdir();
    let (root, roots) = fixture_dir(dir.path(), big);
    compare_in(dir, &root, &roots, cases);
}

/// Runs every case through a mount of `root` (a sessions directory in `dir`) and
/// with `sessionfs grep`.
fn compare_in(dir: tempfile::TempDir, root: &Path, roots: &BTreeSet<String>, cases: &[&[&str]]) {
    compare_in_with(dir, root, roots, cases, 1);
}

/// [`compare_in`], where at most `empty` in 10 of the cases may find nothing.
fn compare_in_with(
    dir: tempfile::TempDir,
    root: &Path,
    roots: &BTreeSet<String>,
    cases: &[&[&str]],
    empty: usize,
) {
    let m = Mount::sessions_dir(dir, Some(root), &["--read-only"], &[]);
    let mut failures = Vec::new();
    let mut found = 0;
    for args in cases {
        let want = grep_through_mount(&m.mnt, args, roots);
        let got = sessionfs_grep(args, root);
        found += usize::from(want.code == 0);
        if want.stdout != got.stdout || want.binary != got.binary || want.code != got.code {
            let first_diff = want
                .stdout
                .split_inclusive('\n')
                .zip(got.stdout.split_inclusive('\n'))
                .find(|(a, b)| a != b)
                .map(|(a, b)| format!("mount:     {a:?}\n  sessionfs: {b:?}"))
                .unwrap_or_else(|| {
                    format!(
                        "lines: mount {}, sessionfs {}",
                        want.stdout.lines().count(),
                        got.stdout.lines().count()
                    )
                });
            failures.push(format!(
                "{args:?}:\n  {first_diff}\n  binary: mount {:?}, sessionfs {:?}\n  status: mount {}, sessionfs {}",
                want.binary, got.binary, want.code, got.code
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // A comparison of empty outputs proves little: most cases must find something.
    assert!(
        found * 10 >= cases.len() * (10 - empty.min(10)),
        "only {found} of {} cases found anything",
        cases.len()
    );
}

#[test]
fn prints_what_grep_r_prints_through_a_mount() {
    compare(false, CASES);
}

#[test]
fn prints_what_grep_r_prints_through_a_mount_of_every_fixture() {
    compare(true, CASES_ALL);
}

/// Cases for the Claude Code fixtures: markers the scenarios typed, text the renderer
/// adds, a subagent's lines, a spilled tool result's full output, images.
const CLAUDE_CASES: &[&[&str]] = &[
    &["-l", "--", "."],
    &["-l", "--", "\\[\\["],
    &["-n", "-F", "--", "[["],
    &["-c", "-F", "--", "[["],
    &["-n", "--", "thinking"],
    &["-n", "-F", "--", "[tool call"],
    &["-n", "-E", "--", "tool (call|result)"],
    &["-n", "-i", "--", "compact"],
    &["-n", "--", "subagent"],
    &["-l", "--", "persisted-output"],
    &["-n", "--", "IHDR"],
    &["-c", "--", "PNG"],
    &["-n", "-F", "--", "\": "],
    &["-n", "-w", "--", "the"],
    &["-l", "-i", "--", "error"],
    &["--color=always", "-n", "--", "hello"],
    &["-n", "-E", "--", "[0-9]{5}"],
    &["-c", "-E", "--", "^$"],
];

/// `sessionfs grep` over Claude Code's sessions against `grep -r` through a mount of
/// them: the same lines, subagents' and full outputs' included, in the same order.
#[test]
fn prints_what_grep_r_prints_through_a_mount_of_claude_code_sessions() {
    let dir = tempdir();
    let (root, roots) = claude_dir(dir.path());
    compare_in(dir, &root, &roots, CLAUDE_CASES);
}

/// Every Claude Code fixture in one sessions directory, each fixture folder a project
/// of it (the 2.1.197 and 2.1.332 scenarios, the replies, the 2.1.332 samples, the
/// damaged files, the fork copies), side folders included; returns it and its session
/// roots.
fn every_claude_dir(dir: &Path) -> (PathBuf, BTreeSet<String>) {
    let fix = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let root = dir.join("projects");
    let mut projects: Vec<(String, PathBuf)> = Vec::new();
    for (sub, prefix) in [
        ("claude/projects", ""),
        ("claude-2.1.332/projects", "332"),
        ("claude-replies/projects", "replies"),
    ] {
        for p in fs::read_dir(fix.join(sub)).unwrap() {
            let p = p.unwrap().path();
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            projects.push((format!("{prefix}{name}"), p));
        }
    }
    for p in fs::read_dir(fix.join("claude-332")).unwrap() {
        let p = p.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        projects.push((format!("-332-{name}"), p));
    }
    for (name, p) in &projects {
        copy_tree(p, &root.join(name));
    }
    // Loose files: only the sessions.
    for (sub, name) in [("claude/damaged", "-damaged"), ("claude/forks", "-forks")] {
        fs::create_dir_all(root.join(name)).unwrap();
        for f in fixtures(sub) {
            fs::copy(&f, root.join(name).join(f.file_name().unwrap())).unwrap();
        }
    }
    let mut roots = BTreeSet::new();
    for p in fs::read_dir(&root).unwrap() {
        let p = p.unwrap().path();
        for f in fs::read_dir(&p).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "jsonl") {
                roots.insert(format!(
                    "{}/{}",
                    p.file_name().unwrap().to_str().unwrap(),
                    f.file_stem().unwrap().to_str().unwrap()
                ));
            }
        }
    }
    (root, roots)
}

/// Patterns made of the text Claude Code's renderer adds or takes from elsewhere
/// (`model::claude::search`): headings, labels, computed numbers, the sentences sent
/// for attachments, a tool result's tool name (from its call's line), a spilled
/// output's name.
const CLAUDE_DECORATION_CASES: &[&[&str]] = &[
    &["-n", "-F", "--", "[part "],
    &["-c", "-F", "--", "of reply"],
    &["-n", "-F", "--", "[meta]"],
    &["-n", "-F", "--", "[compact summary]"],
    &["-l", "-F", "--", "[attachment"],
    &["-n", "-E", "--", "sent as (user|system) text"],
    &["-n", "-F", "--", "not sent to the model"],
    &["-n", "--", "turn took [0-9.]* s"],
    &["-n", "-F", "--", "messages kept"],
    &["-n", "-F", "--", "tokens before"],
    &["-n", "-F", "--", "[tool result"],
    &["-n", "-F", "--", "(as full-output)"],
    &["-n", "-F", "--", "bytes →"],
    &["-n", "-E", "--", "image-[0-9]\\.(png|jpg)"],
    &["-n", "--", "[0-9]\\{2,\\} bytes"],
    &["-n", "-F", "--", "[error"],
    &["-n", "-F", "--", "Called the Read tool"],
    &["-c", "-F", "--", "[system prompt]"],
    &["-c", "-F", "--", "parameters:"],
    &["-n", "-F", "--", "<system-reminder>"],
    &["-n", "-F", "--", "The following skills"],
    &["-n", "-F", "--", "Bash ("],
    &["-n", "-E", "--", "Read \\(toolu"],
    &["-c", "-F", "--", "[prompt prefix]"],
    &["-c", "-F", "--", " {"],
    &["-n", "-i", "--", "AVAILABLE AGENT"],
    &["-n", "-F", "--", "ambient context"],
    &["-n", "-F", "--", "Result of calling"],
    &["-c", "-F", "--", "[[TOOLS]]"],
    &["-n", "-w", "--", "of"],
    &["-n", "-i", "--", "claude"],
    &["-l", "-F", "--", "(no content)"],
];

/// `sessionfs grep` over every Claude Code fixture against `grep -r` through a mount
/// of them, with the patterns of the other Claude Code cases and patterns made of
/// what the renderer adds.
#[test]
fn prints_what_grep_r_prints_through_a_mount_of_every_claude_code_fixture() {
    let dir = tempdir();
    let (root, roots) = every_claude_dir(dir.path());
    let cases: Vec<&[&str]> = CLAUDE_CASES
        .iter()
        .chain(CLAUDE_DECORATION_CASES)
        .copied()
        .collect();
    compare_in(dir, &root, &roots, &cases);
}

/// A copy of a Codex fixture home (the samples' 11 threads, or ours: forks, rewinds,
/// compactions, images, a compressed page), and its thread roots (`PROJECT/THREAD`).
fn codex_home(dir: &Path, fixture: &str) -> (PathBuf, BTreeSet<String>) {
    let fix = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex");
    let home = dir.join("codex-home");
    copy_tree(&fix.join(fixture).join("codex-home"), &home);
    let cat = sessionfs::model::sessions_dir::codex_catalog::Scanner::default()
        .scan(&home.join("sessions"))
        .unwrap();
    let mut roots = BTreeSet::new();
    for (p, threads) in &cat.projects {
        for t in threads {
            roots.insert(format!(
                "{}/{}",
                p.to_str().unwrap(),
                t.id.to_str().unwrap()
            ));
        }
    }
    assert!(roots.len() >= 3, "{roots:?}");
    (home, roots)
}

/// Cases for the Codex fixtures: found nowhere, in one thread, everywhere, and made of
/// the text Codex's renderer adds (`model::codex::search`): call and output headings,
/// pretty-printed arguments, images, reasoning, compactions and their previews.
const CODEX_CASES: &[&[&str]] = &[
    &["-l", "--", "."],
    &["-c", "-F", "--", "zebra-nowhere-42"],
    &["-n", "-F", "--", "[["],
    &["-l", "-F", "--", "[[QA1]]"],
    &["-n", "-F", "--", "[[FORK1]]"],
    &["-c", "-F", "--", "[["],
    &["-n", "-F", "--", "[call "],
    &["-n", "-E", "--", "\\[call [a-z_.]+ \\(call_"],
    &["-n", "-F", "--", "[output ("],
    &["-n", "-F", "--", "\": "],
    &["-n", "-E", "--", "^  \"(cmd|command)\": "],
    &["-n", "-F", "--", "[image: image-"],
    &["-l", "--", "IHDR"],
    &["-c", "--", "PNG"],
    &["-n", "-F", "--", "[reasoning"],
    &["-n", "-F", "--", "[compaction: "],
    &["-n", "-F", "--", "[replacement history: "],
    &["-n", "-E", "--", "^- (user|meta|developer): "],
    &["-n", "-F", "--", "…"],
    &["-n", "-i", "--", "environment_context"],
    &["-n", "-w", "--", "the"],
    &["-l", "-i", "--", "exited with code"],
    &["-n", "-E", "--", "[0-9]{5}"],
    &["--color=always", "-n", "--", "Multiply"],
    &["-c", "-E", "--", "^$"],
    &["-n", "-F", "--", "multi_agent_v1."],
    &["-n", "-F", "--", "aborted"],
];

/// `sessionfs grep` over the samples' Codex home against `grep -r` through a mount of
/// it.
#[test]
fn prints_what_grep_r_prints_through_a_mount_of_the_codex_samples() {
    let dir = tempdir();
    let (home, roots) = codex_home(dir.path(), "samples");
    compare_in_with(dir, &home, &roots, CODEX_CASES, 2);
}

/// A copy of an opencode fixture's database (in WAL mode, as opencode keeps it) and its
/// session roots (`PROJECT/SESSION`, from its catalog).
fn opencode_db(dir: &Path, fixture: &str) -> (PathBuf, BTreeSet<String>) {
    let fix = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode");
    let home = dir.join("home");
    copy_tree(&fix.join(fixture).join("home"), &home);
    let db = home.join(".local/share/opencode/opencode.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
        .unwrap();
    drop(c);
    let (_, lister, _) = sessionfs::model::sessions_dir::catalog_of(&db, None).unwrap();
    let mut roots = BTreeSet::new();
    for (p, sessions) in &lister.scan().unwrap().projects {
        for t in sessions {
            roots.insert(format!(
                "{}/{}",
                p.to_str().unwrap(),
                t.name.to_str().unwrap()
            ));
        }
    }
    assert!(roots.len() >= 5, "{roots:?}");
    (db, roots)
}

/// Cases for the opencode fixtures: found nowhere, in one session, everywhere, and made
/// of the text opencode's renderer adds (`model::opencode::search`): tool calls and
/// results, pretty-printed input, reasoning, images, compactions, deleted and hidden
/// messages, subagents, errors, damage.
const OPENCODE_CASES: &[&[&str]] = &[
    &["-l", "--", "."],
    &["-c", "-F", "--", "zebra-nowhere-42"],
    &["-n", "-F", "--", "[["],
    &["-l", "-F", "--", "[[QA1]]"],
    &["-c", "-F", "--", "[["],
    &["-n", "-F", "--", "[tool call "],
    &[
        "-n",
        "-E",
        "--",
        "\\[tool (call|result|error) [a-z]+ \\(call_",
    ],
    &["-n", "-F", "--", "\": "],
    &["-n", "-E", "--", "^  \"(command|filePath)\": "],
    &["-n", "-F", "--", "[exit "],
    &["-n", "-F", "--", "[image 1: "],
    &["-l", "--", "IHDR"],
    &["-c", "--", "PNG"],
    &["-n", "-F", "--", "[reasoning]"],
    &["-n", "-F", "--", "[synthetic]"],
    &["-n", "-F", "--", "[compaction: "],
    &["-n", "-F", "--", "[compaction summary]"],
    &["-n", "-F", "--", "[deleted by opencode"],
    &["-n", "-F", "--", "[hidden by /undo"],
    &["-n", "-F", "--", "[subagent session "],
    &["-n", "-F", "--", "Count files"],
    &["-n", "-F", "--", "[error "],
    &["-n", "-F", "--", "[patch: "],
    &["-n", "-F", "--", "[damaged"],
    &["-n", "-F", "--", "(no content)"],
    &["-n", "-i", "--", "what did we do"],
    &["-n", "-w", "--", "the"],
    &["-n", "-E", "--", "[0-9]{5}"],
    &["-n", "-F", "--", "×"],
    &["--color=always", "-n", "--", "Multiply"],
    &["-c", "-E", "--", "^$"],
    &["-n", "-F", "--", "output truncated"],
];

/// `sessionfs grep` over opencode's databases (the samples, ours, the replies written
/// through a mount, the damaged one) against `grep -r` through a mount of each: the
/// lines the index holds in memory, prefiltered with opencode's rules.
#[test]
fn prints_what_grep_r_prints_through_a_mount_of_opencode_databases() {
    for (fixture, empty) in [("samples", 2), ("own", 5), ("accepts", 3), ("damaged", 3)] {
        let dir = tempdir();
        let (db, roots) = opencode_db(dir.path(), fixture);
        compare_in_with(dir, &db, &roots, OPENCODE_CASES, empty);
    }
}

/// The same over our own Codex threads (forks, rewinds inside forks, a tool loop, a
/// non-ASCII prompt), and over the copy whose base page is compressed (searched
/// without the prefilter).
#[test]
fn prints_what_grep_r_prints_through_a_mount_of_our_codex_threads() {
    // The compressed copy holds three threads: fewer of the cases find something.
    for (fixture, empty) in [("own", 2), ("own-zst", 8)] {
        let dir = tempdir();
        let (home, roots) = codex_home(dir.path(), fixture);
        compare_in_with(dir, &home, &roots, CODEX_CASES, empty);
    }
}

/// A copy of a Gemini CLI fixture set's CLI folder (its `.zst` files decompressed), and
/// its session roots (`PROJECT/SESSION`, as the mount lists them).
fn gemini_home(dir: &Path, fixture: &str) -> (PathBuf, BTreeSet<String>) {
    fn materialize(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let (p, name) = (e.path(), e.file_name());
            if p.is_dir() {
                materialize(&p, &to.join(&name));
            } else if let Some(plain) = name.to_str().and_then(|n| n.strip_suffix(".zst")) {
                let f = std::fs::File::open(&p).unwrap();
                let mut d =
                    ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(f)).unwrap();
                let mut out = Vec::new();
                std::io::Read::read_to_end(&mut d, &mut out).unwrap();
                std::fs::write(to.join(plain), out).unwrap();
            } else {
                std::fs::copy(&p, to.join(&name)).unwrap();
            }
        }
    }
    let fix = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gemini");
    let home = dir.join(".gemini");
    materialize(&fix.join(fixture).join("gemini-home"), &home);
    let cat = sessionfs::model::gemini::catalog::Scanner::default()
        .scan(&home.join("tmp"))
        .unwrap();
    let mut roots = BTreeSet::new();
    for (p, sessions) in &cat.projects {
        for s in sessions {
            roots.insert(format!(
                "{}/{}",
                p.to_str().unwrap(),
                s.name.to_str().unwrap()
            ));
        }
    }
    assert!(roots.len() >= 3, "{roots:?}");
    (home, roots)
}

/// A copy of a Qwen Code fixture home (`tests/fixtures/qwen/SET/qwen-home`), and its
/// session roots (`PROJECT/SESSION`).
fn qwen_home(dir: &Path, set: &str) -> (PathBuf, BTreeSet<String>) {
    let fix = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qwen");
    let home = dir.join(".qwen");
    copy_tree(&fix.join(set).join("qwen-home"), &home);
    let mut roots = BTreeSet::new();
    for p in fs::read_dir(home.join("projects")).unwrap() {
        let p = p.unwrap().path();
        let Ok(chats) = fs::read_dir(p.join("chats")) else {
            continue;
        };
        for f in chats {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "jsonl") {
                roots.insert(format!(
                    "{}/{}",
                    p.file_name().unwrap().to_str().unwrap(),
                    f.file_stem().unwrap().to_str().unwrap()
                ));
            }
        }
    }
    assert!(roots.len() >= 3, "{roots:?}");
    (home, roots)
}

/// Cases for the Gemini CLI fixtures: found nowhere, in one session, everywhere, and
/// made of the text Gemini CLI's renderer adds (`model::gemini::search`): tool call
/// and result headings, pretty-printed arguments, thoughts, images, a compaction's
/// heading, statuses, subagents; and text of records that only a `$set.messages`
/// line holds (the responses a resume derives, a compression's summary).
const GEMINI_CASES: &[&[&str]] = &[
    &["-l", "--", "."],
    &["-c", "-F", "--", "zebra-nowhere-42"],
    &["-n", "-F", "--", "[["],
    &["-l", "-F", "--", "[[QA1]]"],
    &["-c", "-F", "--", "[["],
    &["-n", "-F", "--", "[tool call "],
    &["-n", "-E", "--", "\\[tool (call|result) [a-z_]+ \\("],
    &["-n", "-F", "--", "[tool result "],
    &["-n", "-F", "--", "[error]"],
    &["-n", "-F", "--", "[thinking]"],
    &["-n", "-F", "--", "**"],
    &["-n", "-F", "--", "\": "],
    &["-n", "-E", "--", "^  \"(command|file_path)\": "],
    &["-n", "-F", "--", "[image "],
    &["-l", "--", "IHDR"],
    &["-c", "--", "PNG"],
    &["-n", "-F", "--", "[compaction: "],
    &["-n", "-F", "--", "state_snapshot"],
    &["-n", "-F", "--", "Got it"],
    &["-n", "-F", "--", "(no content)"],
    &["-n", "-F", "--", "[status: "],
    &["-n", "-F", "--", "[subagent agent-"],
    &["-n", "-F", "--", "Request cancelled"],
    &["-n", "-w", "--", "the"],
    &["-n", "-i", "--", "UNTRUSTED_context"],
    &["-l", "-E", "--", "[0-9]{5}"],
    &["--color=always", "-n", "--", "Multiply"],
    &["-c", "-E", "--", "^$"],
    &["-n", "-F", "--", "Output too large"],
];

/// `sessionfs grep` over the Gemini CLI samples' folder against `grep -r` through a
/// mount of it.
#[test]
fn prints_what_grep_r_prints_through_a_mount_of_the_gemini_samples() {
    let dir = tempdir();
    let (home, roots) = gemini_home(dir.path(), "samples");
    compare_in_with(dir, &home, &roots, GEMINI_CASES, 2);
}

/// The same over our own Gemini CLI sessions (rewinds, TUI tool loops, a long
/// session with a huge output and a compression) and the damaged copies.
#[test]
fn prints_what_grep_r_prints_through_a_mount_of_our_gemini_sessions() {
    for (fixture, empty) in [("own", 3), ("damaged", 6)] {
        let dir = tempdir();
        let (home, roots) = gemini_home(dir.path(), fixture);
        compare_in_with(dir, &home, &roots, GEMINI_CASES, empty);
    }
}

/// Cases for the Qwen Code fixtures: markers the scenarios typed, found nowhere and
/// everywhere, and the text Qwen Code's renderer adds (`model::qwen::search`): part
/// markers, images, the records' own headings and counts, indented JSON, a subagent's
/// records, fragments.
const QWEN_CASES: &[&[&str]] = &[
    &["-l", "--", "."],
    &["-c", "-F", "--", "zebra-nowhere-42"],
    &["-n", "-F", "--", "[["],
    &["-c", "-F", "--", "[["],
    &["-l", "-F", "--", "[[QA1]]"],
    &["-n", "-F", "--", "[[FORK"],
    &["-n", "-F", "--", "[thinking]"],
    &["-n", "-F", "--", "[tool call "],
    &["-n", "-E", "--", "tool (call|result) [a-z_]+ \\(call_"],
    &["-n", "-F", "--", "[error]"],
    &["-n", "-F", "--", "\": "],
    &["-n", "-E", "--", "^  \"(command|file_path)\": "],
    &["-n", "-F", "--", "bytes → image-"],
    &["-l", "--", "JFIF\\|Exif\\|IHDR"],
    &["-n", "-F", "--", "[compression"],
    &["-n", "-F", "--", "history entries dropped"],
    &["-n", "-F", "--", "[title"],
    &["-n", "-E", "--", "api response qwen[^:]*: input [0-9,]+"],
    &["-n", "-E", "--", "[0-9]{2},[0-9]{3}"],
    &["-n", "-F", "--", "[notification]"],
    &["-n", "-F", "--", "SUBTASK"],
    &["-n", "-F", "--", "FRAG"],
    &["-n", "-i", "--", "qwen"],
    &["-n", "-w", "--", "the"],
    &["-n", "-E", "--", "[0-9]{5}"],
    &["--color=always", "-n", "--", "Multiply"],
    &["-c", "-E", "--", "^$"],
    &["-l", "-F", "--", "(no content)"],
    &["-n", "-F", "--", "[attribution_snapshot]"],
    &["-n", "-F", "--", "Unsupported image"],
];

/// `sessionfs grep` over Qwen Code's sessions (the kit's samples; ours: every
/// scenario, the hand-made ones, the damaged files) against `grep -r` through a mount
/// of each home: the same lines, a subagent's included, in the same order.
#[test]
fn prints_what_grep_r_prints_through_a_mount_of_qwen_code_sessions() {
    for (set, empty) in [("samples", 3), ("own", 2), ("damaged", 8)] {
        let dir = tempdir();
        let (home, roots) = qwen_home(dir.path(), set);
        compare_in_with(dir, &home, &roots, QWEN_CASES, empty);
    }
}

/// A copy of a Copilot CLI fixture home (the kit's samples, its held-out scenarios, or
/// ours), and its session roots (`PROJECT/SESSION`).
fn copilot_home(dir: &Path, fixture: &str) -> (PathBuf, BTreeSet<String>) {
    let fix = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/copilot");
    let home = dir.join(".copilot");
    copy_tree(&fix.join(fixture).join("copilot-home"), &home);
    let (_, lister, _) = sessionfs::model::sessions_dir::catalog_of(&home, None).unwrap();
    let cat = lister.scan().unwrap();
    let mut roots = BTreeSet::new();
    for (p, sessions) in &cat.projects {
        for t in sessions {
            roots.insert(format!(
                "{}/{}",
                p.to_str().unwrap(),
                t.name.to_str().unwrap()
            ));
        }
    }
    assert!(roots.len() >= 4, "{roots:?}");
    (home, roots)
}

/// Cases for the Copilot CLI fixtures: found nowhere, in one session, everywhere, and
/// made of the text its renderer adds (`model::copilot::search`): results and errors,
/// calls and their pretty-printed arguments, reasoning, compactions and their counts,
/// the notices, a subagent's end, images.
const COPILOT_CASES: &[&[&str]] = &[
    &["-l", "--", "."],
    &["-c", "-F", "--", "zebra-nowhere-42"],
    &["-n", "-F", "--", "[["],
    &["-l", "-F", "--", "[[QA1]]"],
    &["-n", "-F", "--", "[[FORK1]]"],
    &["-c", "-F", "--", "[["],
    &["-n", "-F", "--", "[result ("],
    &["-n", "-F", "--", "[error ("],
    &["-n", "-F", "--", "[call "],
    &["-n", "-E", "--", "\\[call [a-z_]+ \\(call_"],
    &["-n", "-F", "--", "\": "],
    &["-n", "-E", "--", "^  \"(command|path)\": "],
    &["-n", "-F", "--", "[details]"],
    &["-n", "-F", "--", "diff --git"],
    &["-n", "-F", "--", "[reasoning]"],
    &["-n", "-F", "--", "[compaction"],
    &["-n", "-F", "--", "messages summarized"],
    &["-n", "-E", "--", "[0-9]{2},[0-9]{3}"],
    &["-n", "-F", "--", "[interrupted: "],
    &["-n", "-F", "--", "[info rewind]"],
    &["-n", "-F", "--", "Forked from"],
    &["-n", "-F", "--", "[subagent "],
    &["-n", "-F", "--", "(no content)"],
    &["-n", "-F", "--", "[image-"],
    &["-l", "--", "IHDR"],
    &["-c", "--", "PNG"],
    &["-n", "-i", "--", "exit code"],
    &["-n", "-w", "--", "the"],
    &["-n", "-E", "--", "[0-9]{5}"],
    &["--color=always", "-n", "--", "Multiply"],
    &["-c", "-E", "--", "^$"],
    &["-n", "-F", "--", "(HTTP 400)"],
    // `-l` prints paths alone: a session without subagents has them read from the
    // lines before its hits (`model::copilot::hitpath`), the others from their index.
    &["-l", "-F", "--", "[result ("],
    &["-l", "-w", "--", "the"],
    &["-l", "-F", "--", "[[FORK1]]"],
    &["-l", "-F", "--", "[subagent "],
    &["-l", "-F", "--", "[info "],
];

/// `sessionfs grep` over each Copilot CLI fixture home against `grep -r` through a
/// mount of it.
#[test]
fn prints_what_grep_r_prints_through_a_mount_of_copilot_cli_sessions() {
    for (fixture, empty) in [("samples", 2), ("heldout", 5), ("own", 4)] {
        let dir = tempdir();
        let (home, roots) = copilot_home(dir.path(), fixture);
        compare_in_with(dir, &home, &roots, COPILOT_CASES, empty);
    }
}

/// Copilot CLI's session with two images (`own`), its assets changed
/// ([`held_images_session`]). Returns the home and its roots.
fn copilot_home_with_held_images(dir: &Path) -> (PathBuf, BTreeSet<String>) {
    let (home, roots) = copilot_home(dir, "own");
    held_images_session(&home.join(HELD_IMAGES_SESSION));
    (home, roots)
}

/// A Copilot CLI prompt's image is held by another line of the file (before or after
/// the prompt, shared by two prompts): `sessionfs grep` finds a literal in its bytes,
/// and the MIME type and size the prompt shows of it, as `grep -r` does through a
/// mount, and finds nothing where no asset holds the literal.
#[test]
fn images_held_by_other_lines_are_found_as_grep_r_finds_them() {
    let dir = tempdir();
    let (home, roots) = copilot_home_with_held_images(dir.path());
    let cases: &[&[&str]] = &[
        &["-l", "-F", "--", "qzheld-before"],
        &["-l", "-F", "--", "qzheld-after"],
        &["-c", "-F", "--", "qzheld-after"],
        &["-l", "-F", "--", "qzheld"],
        &["-l", "-i", "-F", "--", "QZHELD-AFTER"],
        &["-l", "-F", "--", "qzheld-nowhere"],
        &["-n", "-F", "--", "image/png"],
        &["-n", "-E", "--", "[0-9]+ bytes\\)"],
        &["-n", "-F", "--", "[image-"],
    ];
    compare_in_with(dir, &home, &roots, cases, 2);
}

/// `sessionfs grep PATTERN FILE` against `grep -r` at the root of `sessionfs mount
/// FILE MNT`: paths start at the entries (`ID/…/KIND`). Colours as GREP_COLORS says.
#[test]
fn a_session_file_is_searched_as_its_own_mount() {
    let m = Mount::with_args("small.jsonl", &["--read-only"]);
    let is_content = |p: &str| p.contains('/') && !p.ends_with("/reply");
    for args in [
        &["-n", "--", "read"][..],
        &["-l", "--", "e"],
        &["-c", "-i", "--", "TOOL"],
        &["--color=always", "-n", "--", "i"],
    ] {
        for colours in [None, Some("ms=04;32:fn=01:ln=33:se=35:sl=1:ne")] {
            let mut c = Command::new("grep");
            c.arg("-r")
                .args(args)
                .current_dir(&m.mnt)
                .env("LC_ALL", "C.UTF-8")
                .env_remove("GREP_COLOR");
            let mut s = Command::new(bin());
            s.arg("grep")
                .args(args)
                .arg(&m.file)
                .env_remove("GREP_COLOR");
            match colours {
                Some(v) => {
                    c.env("GREP_COLORS", v);
                    s.env("GREP_COLORS", v);
                }
                None => {
                    c.env_remove("GREP_COLORS");
                    s.env_remove("GREP_COLORS");
                }
            }
            let list = args.contains(&"-l");
            let want: String = run_command(c)
                .stdout
                .split_inclusive('\n')
                .filter(|l| is_content(&path_of(l.trim_end_matches('\n'), list)))
                .collect();
            let got = run_command(s);
            assert!(!want.is_empty(), "{args:?}");
            assert_eq!(got.stdout, want, "{args:?} {colours:?}");
            assert_eq!(got.status.code(), Some(0));
        }
    }
}

/// A Claude Code session file (with its side folder: a subagent's transcript, a
/// spilled tool result) searched on its own, against `grep -r` at the root of
/// `sessionfs mount FILE MNT`: the subagent's lines under `agent-<id>/`, the spilled
/// output as `full-output`.
#[test]
fn a_claude_code_session_file_is_searched_as_its_own_mount() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude/projects");
    for (project, sid, args) in [
        (
            "-home-dev-src-sub",
            "b3730bc4-7f81-47f4-84e9-5fd6ab8f85ea",
            &["-n", "-i", "--", "subtask\\|files"][..],
        ),
        (
            "-home-dev-src-big",
            "5aa252c6-78fb-47ae-af22-e00c3a1b6282",
            &["-n", "--", "^9999[0-9]$"][..],
        ),
    ] {
        let dir = tempdir();
        let file = dir.path().join(format!("{sid}.jsonl"));
        fs::copy(fixtures.join(project).join(format!("{sid}.jsonl")), &file).unwrap();
        copy_tree(&fixtures.join(project).join(sid), &dir.path().join(sid));
        let m = Mount::start(dir, file, &["--read-only"]);
        let mut c = Command::new("grep");
        c.arg("-r")
            .args(args)
            .current_dir(&m.mnt)
            .env("LC_ALL", "C.UTF-8")
            .env_remove("GREP_COLORS")
            .env_remove("GREP_COLOR");
        let is_content = |p: &str| p.contains('/') && !p.ends_with("/reply");
        let want: String = run_command(c)
            .stdout
            .split_inclusive('\n')
            .filter(|l| is_content(&path_of(l.trim_end_matches('\n'), false)))
            .collect();
        let got = grep_in(
            &[args, &[m.file.to_str().unwrap()]].concat(),
            Path::new("/"),
        );
        assert!(!want.is_empty(), "{sid} {args:?}");
        assert!(
            want.contains("/agent-a") || want.contains("/full-output:"),
            "{want}"
        );
        assert_eq!(got.stdout, want, "{sid} {args:?}");
        assert_eq!(got.code(), Some(0));
    }
}

/// The same file searched as a file and inside a sessions directory.
fn demo_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempdir();
    let project = dir.path().join("sessions/--home-dev-tally--");
    fs::create_dir_all(&project).unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo.jsonl");
    fs::copy(demo, project.join("2026-01-05T09-00-00-000Z_demo.jsonl")).unwrap();
    let root = dir.path().join("sessions");
    (dir, root)
}

fn grep_in(args: &[&str], cwd: &Path) -> Output {
    let mut c = Command::new(bin());
    c.arg("grep").args(args).current_dir(cwd);
    run_command(c)
}

#[test]
fn exit_statuses_and_errors() {
    let (dir, root) = demo_dir();
    let d = dir.path();
    let root_s = root.to_str().unwrap();
    // 0: a match; 1: none.
    assert_eq!(
        grep_in(&["-q-never", "x"], d).code(),
        Some(2),
        "unknown option"
    );
    assert_eq!(grep_in(&["TALLY_VERBOSE", root_s], d).code(), Some(0));
    let none = grep_in(&["no-such-text-anywhere", root_s], d);
    assert_eq!((none.code(), none.stdout.as_str()), (Some(1), ""));
    // 2: a missing argument, even when another one matches; the others are searched.
    let out = grep_in(&["-l", "TALLY_VERBOSE", root_s, "missing.jsonl"], d);
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr
            .contains("missing.jsonl: No such file or directory"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("--home-dev-tally--"), "{}", out.stdout);
    // 2: a bad pattern, with grep's words where they are grep's.
    let out = grep_in(&["a[", root_s], d);
    assert_eq!(out.code(), Some(2));
    assert!(out.stderr.contains("unmatched ["), "{}", out.stderr);
    let out = grep_in(&["\\(a\\)\\1", root_s], d);
    assert_eq!(out.code(), Some(2));
    assert!(out.stderr.contains("back-references"), "{}", out.stderr);
    // A file that is not a session: an error when named, skipped inside a directory.
    let bad = root.join("--home-dev-tally--/broken.jsonl");
    fs::write(&bad, "not json\n").unwrap();
    let out = grep_in(&["-l", "TALLY_VERBOSE", root_s], d);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(out.stderr, "");
    let out = grep_in(&["TALLY_VERBOSE", bad.to_str().unwrap()], d);
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr
            .contains("not a Pi, Claude Code or Codex session"),
        "{}",
        out.stderr
    );
    // An unreadable session inside a directory is an error (root reads everything).
    if !is_root() {
        let locked = root.join("--home-dev-tally--/locked.jsonl");
        fs::copy(
            root.join("--home-dev-tally--/2026-01-05T09-00-00-000Z_demo.jsonl"),
            &locked,
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
        let out = grep_in(&["-l", "TALLY_VERBOSE", root_s], d);
        assert_eq!(out.code(), Some(2), "{}", out.stderr);
        assert!(out.stderr.contains("Permission denied"), "{}", out.stderr);
    }
}

#[test]
fn paths_with_one_and_several_arguments() {
    let (dir, root) = demo_dir();
    let file = root.join("--home-dev-tally--/2026-01-05T09-00-00-000Z_demo.jsonl");
    let one = grep_in(&["-l", "TALLY_VERBOSE", file.to_str().unwrap()], dir.path());
    let first = one.stdout.lines().next().unwrap().to_string();
    assert!(first.starts_with("18302776/"), "{first}");
    let inside = grep_in(&["-l", "TALLY_VERBOSE", "sessions"], dir.path());
    assert_eq!(
        inside.stdout.lines().next().unwrap(),
        format!("--home-dev-tally--/2026-01-05T09-00-00-000Z_demo/{first}")
    );
    // Several arguments: each path starts with the argument it came from (trailing
    // slashes dropped, as grep -r does).
    let both = grep_in(
        &["-l", "TALLY_VERBOSE", "sessions/", file.to_str().unwrap()],
        dir.path(),
    );
    let lines: Vec<&str> = both.stdout.lines().collect();
    assert_eq!(lines.len(), 2 * one.stdout.lines().count());
    assert_eq!(
        lines[0],
        format!("sessions/--home-dev-tally--/2026-01-05T09-00-00-000Z_demo/{first}")
    );
    assert!(lines.contains(&format!("{}/{first}", file.display()).as_str()));
}

/// Without a path, every agent's sessions directory is searched, each under its
/// folder (`pi/`, `claude/`), as `grep -r` at the root of `sessionfs mount MNT` sees
/// them.
#[test]
fn every_agents_sessions_directory_is_the_default() {
    let (dir, _root) = demo_dir();
    let home = dir.path().join("home");
    let (_, claude_roots) = claude_dir(&home.join(".claude"));
    let mut roots: BTreeSet<String> = claude_roots.iter().map(|r| format!("claude/{r}")).collect();
    roots.insert("pi/--home-dev-tally--/2026-01-05T09-00-00-000Z_demo".into());
    let env = [
        ("HOME", home.clone().into_os_string()),
        ("PI_CODING_AGENT_DIR", dir.path().as_os_str().to_owned()),
    ];
    let grep_default = |args: &[&str]| {
        let mut c = Command::new(bin());
        c.arg("grep").args(args).current_dir("/");
        for (k, v) in &env {
            c.env(k, v);
        }
        run_command(c)
    };
    let out = grep_default(&["-c", "TALLY_VERBOSE"]);
    assert_eq!(out.status.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stdout.starts_with("pi/--home-dev-tally--/"),
        "{}",
        out.stdout
    );
    let env_refs: Vec<(&str, &std::ffi::OsStr)> =
        env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    let m = Mount::sessions_dir(dir, None, &["--read-only"], &env_refs);
    for args in [
        &["-l", "-e", "TALLY_VERBOSE", "-e", "\\[\\["][..],
        &["-n", "-i", "--", "hello"],
    ] {
        let want = grep_through_mount(&m.mnt, args, &roots);
        let got = grep_default(args);
        assert!(want.stdout.contains("\npi/") || want.stdout.starts_with("pi/"));
        assert!(want.stdout.contains("\nclaude/"), "{}", want.stdout);
        assert_eq!(got.stdout, want.stdout, "{args:?}");
        assert_eq!(got.status.code(), Some(want.code), "{args:?}");
    }
    let mut c = Command::new(bin());
    c.args(["grep", "x"])
        .current_dir("/")
        .env("PI_CODING_AGENT_DIR", "/nonexistent-sessionfs-test/nowhere");
    let out = run_command(c);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stderr.contains("does not exist"), "{}", out.stderr);
}

/// `--json`: every hit's paths lead to the line through a mount, and its leaves are
/// the tips of the branches through it.
#[test]
fn json_hits_lead_to_their_lines_through_a_mount() {
    let m = Mount::with_args("small.jsonl", &["--read-only"]);
    let out = grep_in(&["--json", "-i", "read", m.file.to_str().unwrap()], m.dir());
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let hits: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(hits.len() > 3);
    let tips: BTreeSet<String> = try_ls(&m.path("branches")).unwrap().into_iter().collect();
    for h in &hits {
        let path = h["path"].as_str().unwrap();
        let line = h["line"].as_u64().unwrap() as usize;
        let text = h["text"].as_str().unwrap();
        for p in [path, h["id_path"].as_str().unwrap()] {
            let content = fs::read_to_string(m.path(p)).unwrap();
            assert_eq!(content.lines().nth(line - 1), Some(text), "{p}");
        }
        assert_eq!(h["session"].as_str().unwrap(), m.file.to_str().unwrap());
        let id = h["entry"].as_str().unwrap();
        let (dir, file) = path.rsplit_once('/').unwrap();
        assert!(dir.ends_with(id));
        assert_eq!(file, h["file"].as_str().unwrap());
        assert_eq!(file, h["kind"].as_str().unwrap());
        let leaves: BTreeSet<String> = h["leaves"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        // The tips below the entry's directory (or the entry itself, when a tip).
        let below: BTreeSet<String> = tips
            .iter()
            .filter(|t| {
                dir.ends_with(t.as_str())
                    || !run("find", &[dir, "-name", t, "-type", "d"], &m.mnt)
                        .ok()
                        .stdout
                        .is_empty()
            })
            .cloned()
            .collect();
        assert_eq!(leaves, below, "{path}");
    }
}

/// `--json` on Claude Code sessions: every hit's paths lead to its line through a
/// mount, and its leaves are tips the mount's `branches/` lists. A line of a turn's
/// piece (the dead end parallel tool calls leave, a subagent's transcript) is on the
/// branches of its turn, never on a tip of its own.
#[test]
fn json_hits_in_claude_code_sessions_name_branches_of_the_mount() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude/projects");
    for (project, sid, pattern, piece) in [
        (
            "-home-dev-src-tools",
            "644750c6-819f-4bc1-8d96-f535db009ee8",
            "tool",
            // The dead end: the result of the second parallel call.
            "40f08c07-2bf2-4a07-8c32-9593750315ba",
        ),
        (
            "-home-dev-src-sub",
            "b3730bc4-7f81-47f4-84e9-5fd6ab8f85ea",
            "[[SUBTASK]]",
            // The subagent's first line.
            "agent-acfbc9cb8be5d6a1d",
        ),
    ] {
        let dir = tempdir();
        let file = dir.path().join(format!("{sid}.jsonl"));
        fs::copy(fixtures.join(project).join(format!("{sid}.jsonl")), &file).unwrap();
        if fixtures.join(project).join(sid).is_dir() {
            copy_tree(&fixtures.join(project).join(sid), &dir.path().join(sid));
        }
        let m = Mount::start(dir, file, &["--read-only"]);
        let out = grep_in(
            &["--json", "-F", pattern, m.file.to_str().unwrap()],
            Path::new("/"),
        );
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        let tips: BTreeSet<String> = try_ls(&m.path("branches")).unwrap().into_iter().collect();
        let mut saw_piece = false;
        for l in out.stdout.lines() {
            let h: Value = serde_json::from_str(l).unwrap();
            let path = h["path"].as_str().unwrap();
            let line = h["line"].as_u64().unwrap() as usize;
            for p in [path, h["id_path"].as_str().unwrap()] {
                let content = fs::read_to_string(m.path(p)).unwrap();
                assert_eq!(content.lines().nth(line - 1), h["text"].as_str(), "{p}");
            }
            let leaves: BTreeSet<String> = h["leaves"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            assert!(!leaves.is_empty(), "{path}");
            assert!(
                leaves.is_subset(&tips),
                "{path}: {leaves:?} not in {tips:?}"
            );
            if path.contains(piece) {
                saw_piece = true;
                assert_eq!(leaves, tips, "{path}");
            }
        }
        assert!(saw_piece, "no hit in {piece}: {}", out.stdout);
    }
}

/// `sessions_dir::list`, which `sessionfs grep` walks, lists a sessions directory as a
/// sessions mount does: the same names in the same order, at the top and in a project.
#[test]
fn the_sessions_directory_is_listed_as_the_mount_lists_it() {
    use sessionfs::model::sessions_dir;
    use sessionfs::view::{FsView, MultiOptions, MultiView, ROOT_INO};
    use std::ffi::OsStr;
    let dir = tempdir();
    let root = dir.path().join("sessions");
    let small = fixtures("sessions")
        .into_iter()
        .find(|p| p.ends_with("small.jsonl"))
        .unwrap();
    for p in ["--b--", "--a--", "z.jsonl"] {
        fs::create_dir_all(root.join(p)).unwrap();
    }
    for f in [
        "--a--/2.jsonl",
        "--a--/1.jsonl",
        "--a--/x.txt",
        "--b--/.jsonl",
        "c.jsonl",
        "--a--.jsonl",
    ] {
        fs::copy(&small, root.join(f)).unwrap();
    }
    fs::create_dir(root.join("--a--/nested.jsonl")).unwrap();
    std::os::unix::fs::symlink(root.join("c.jsonl"), root.join("d.jsonl")).unwrap();
    std::os::unix::fs::symlink(root.join("--a--"), root.join("--link--")).unwrap();
    std::os::unix::fs::symlink("nowhere", root.join("e.jsonl")).unwrap();
    let v = MultiView::open(&root, MultiOptions::new(dir.path().join("mnt"))).unwrap();
    let names = |ino: u64| -> Vec<String> {
        v.readdir(ino, 0)
            .unwrap()
            .into_iter()
            .map(|(_, d)| d.name.to_string_lossy().into_owned())
            .filter(|n| n != "." && n != "..")
            .collect()
    };
    let top = sessions_dir::list(&root, true).unwrap();
    let ours: Vec<String> = top
        .projects
        .iter()
        .chain(&top.sessions)
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    assert_eq!(names(ROOT_INO), ours);
    for p in &top.projects {
        let ino = v.lookup(ROOT_INO, OsStr::new(p)).unwrap().ino;
        let inner = sessions_dir::list(&root.join(p), false).unwrap();
        assert!(inner.projects.is_empty());
        let ours: Vec<String> = inner
            .sessions
            .iter()
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names(ino), ours, "{p:?}");
    }
}

/// A line longer than the scan's buffer, with the pattern at its very end.
#[test]
fn a_line_longer_than_the_read_buffer() {
    let dir = tempdir();
    let file = dir.path().join("long.jsonl");
    let head = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-05T09:00:00.000Z","cwd":"/p"}"#;
    let text = format!("{} needle-at-the-end", "word ".repeat(400_000));
    let line = format!(
        r#"{{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2026-01-05T09:00:01.000Z","message":{{"role":"user","content":"{text}"}}}}"#
    );
    fs::write(&file, format!("{head}\n{line}\n{line}\n")).unwrap();
    let out = grep_in(
        &["-c", "needle-at-the-end", file.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    // The second line repeats the id: the later one wins, the first is not shown.
    assert_eq!(out.stdout, "aaaa0001/user:1\n");
}

/// The output does not depend on how many threads search: files are printed in order,
/// each file's output whole, whichever thread finishes first.
#[test]
fn the_output_is_the_same_on_any_number_of_threads() {
    let dir = tempdir();
    let (root, _) = fixture_dir(dir.path(), false);
    let root = root.to_str().unwrap();
    let run_with = |threads: &str| grep_in(&["-n", "--threads", threads, "e", root], dir.path());
    let one = run_with("1");
    assert_eq!(one.code(), Some(0), "{}", one.stderr);
    assert!(one.stdout.lines().count() > 1_000);
    for t in ["2", "3", "8"] {
        let other = run_with(t);
        assert_eq!(other.stdout, one.stdout, "--threads {t}");
        assert_eq!(other.stderr, one.stderr, "--threads {t}");
    }
}

/// `--sessions` lists each matching session once, newest first, with what a mount of
/// the same directory shows for it: the path, the name, and as many hits as `grep -rc`
/// through the mount adds up. Newest by the agent's own clock (the newest `timestamp`
/// its file's lines hold), whatever the files' modification times say (here set in
/// the reverse order): the mount's session directories carry the same time.
#[test]
fn sessions_lists_each_matching_session_once_newest_first() {
    let dir = tempdir();
    let (root, _) = claude_dir(dir.path());
    // The files' times say nothing: give each session one, in a known order.
    let mut files: Vec<PathBuf> = Vec::new();
    for p in fs::read_dir(&root).unwrap() {
        for f in fs::read_dir(p.unwrap().path()).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "jsonl") {
                files.push(f);
            }
        }
    }
    files.sort();
    for (k, f) in files.iter().enumerate() {
        let when = format!("2026-11-{:02}T10:00:00Z", k + 1);
        let out = run(
            "touch",
            &[OsStr::new("-d"), OsStr::new(&when), f.as_os_str()],
            &root,
        );
        assert!(out.status.success(), "{out:?}");
    }
    let pattern = "the";
    let out = sessionfs(&["grep", "--sessions", pattern, "."], &root).ok();
    let rows: Vec<Vec<String>> = out
        .stdout
        .lines()
        .map(|l| {
            let mut w = l.split_whitespace().map(str::to_string);
            let (when, hits, path) = (w.next().unwrap(), w.next().unwrap(), w.next().unwrap());
            let name = l.split_once(&format!(" {path}  ")).map_or("", |x| x.1);
            vec![when, hits, path, name.to_string()]
        })
        .collect();
    assert!(rows.len() >= 5, "{}", out.stdout);
    let json = sessionfs(&["grep", "--sessions", "--json", pattern, "."], &root).ok();
    let objs: Vec<Value> = json
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objs.len(), rows.len());
    let m = Mount::sessions_dir(dir, Some(&root), &["--read-only"], &[]);
    let mut last = String::from("9999");
    let mut seen = BTreeSet::new();
    for (row, obj) in rows.iter().zip(&objs) {
        let [when, hits, path, name] = &row[..] else {
            panic!("{row:?}");
        };
        assert!(seen.insert(path.clone()), "{path} twice");
        // Newest first.
        assert!(*when <= last, "{when} after {last}");
        last = when.clone();
        let file = root.join(format!("{path}.jsonl"));
        let newest = fs::read_to_string(&file)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v["timestamp"].as_str().map(str::to_string))
            .max()
            .unwrap();
        let newest_ms = sessionfs::model::core::js::js_date_ms(&newest).unwrap();
        assert_eq!(
            *when,
            sessionfs::model::core::time::format_iso_ms(newest_ms),
            "{path}"
        );
        let st = run("stat", &["-c", "%Y", "--", path.as_str()], &m.mnt).ok();
        assert_eq!(st.stdout.trim(), (newest_ms / 1000).to_string(), "{path}");
        // The session as the mount shows it: its name, and every hit.
        let shown = fs::read_to_string(m.mnt.join(path).join("name")).unwrap();
        assert_eq!(name, shown.trim_end(), "{path}");
        let c = run(
            "grep",
            &[
                "-rc",
                "--exclude=tree",
                "--exclude=name",
                "--exclude=session.json",
                "--",
                pattern,
                path,
            ],
            &m.mnt,
        );
        let total: u64 = c
            .stdout
            .lines()
            .map(|l| l.rsplit(':').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(hits.parse::<u64>().unwrap(), total, "{path}");
        assert_eq!(obj["path"], path.as_str());
        assert_eq!(obj["hits"], total);
        assert_eq!(obj["last_activity"], when.as_str());
        assert_eq!(obj["name"].as_str().unwrap_or(""), name.as_str());
        assert!(
            Path::new(obj["session"].as_str().unwrap()).ends_with(format!("{path}.jsonl")),
            "{obj}"
        );
    }
    // Every session the mount finds a hit in is listed.
    let all = run(
        "grep",
        &["-rl", "--exclude=tree", "--exclude=name", pattern, "."],
        &m.mnt,
    );
    for l in all.stdout.lines() {
        let session: String = l
            .trim_start_matches("./")
            .splitn(3, '/')
            .take(2)
            .collect::<Vec<_>>()
            .join("/");
        assert!(seen.contains(&session), "{session} is not listed");
    }
    // Nothing matched: nothing listed, exit 1.
    let none = sessionfs(&["grep", "--sessions", "zzqqxxnothing", "."], &root);
    assert_eq!((none.code(), none.stdout.as_str()), (Some(1), ""));
}
