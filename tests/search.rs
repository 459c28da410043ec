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
//! The other tests check what the comparison cannot: errors, exit statuses, `--json`,
//! a single file's paths, several arguments, and Pi's default directory.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeSet;
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

/// The path at the start of an output line (`-l`: the whole line).
fn path_of(line: &str, list: bool) -> String {
    let p = plain(line);
    if list {
        p
    } else {
        p.split_once(':').map_or(p.clone(), |(a, _)| a.to_string())
    }
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
        .collect();
    let mut binary = Vec::new();
    for l in out.stderr.lines() {
        let p = l
            .strip_prefix("grep: ")
            .and_then(|l| l.strip_suffix(": binary file matches"))
            .unwrap_or_else(|| panic!("grep -r {args:?} through the mount: {l}"));
        if is_content(p, roots) {
            binary.push(p.to_string());
        }
    }
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
    let mut binary = Vec::new();
    for l in out.stderr.lines() {
        let p = l
            .strip_prefix("sessionfs: ")
            .and_then(|l| l.strip_suffix(": binary file matches"))
            .unwrap_or_else(|| panic!("sessionfs grep {args:?}: {l}"));
        binary.push(p.to_string());
    }
    Ran {
        stdout: out.stdout,
        binary,
        code: out.status.code().unwrap(),
    }
}

/// Cases run on every fixture, the big ones included.
const CASES_ALL: &[&[&str]] = &[
    &["-n", "--", "inode"],
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

/// Runs every case through a mount of the fixtures and with `sessionfs grep`.
fn compare(big: bool, cases: &[&[&str]]) {
    let dir = tempdir();
    let (root, roots) = fixture_dir(dir.path(), big);
    let m = Mount::sessions_dir(dir, Some(&root), &["--read-only"], &[]);
    let mut failures = Vec::new();
    let mut found = 0;
    for args in cases {
        let want = grep_through_mount(&m.mnt, args, &roots);
        let got = sessionfs_grep(args, &root);
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
        found * 10 >= cases.len() * 9,
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
