//! The command line and the README agree, and the README's example can be run.
//!
//! * The usage synopsis in the README lists every command and every option of each, as
//!   `--help` shows them (and nothing `--help` does not know): they cannot drift.
//! * The console example at the top of the README, run command by command (against a
//!   temporary directory instead of `/tmp`), works, and leaves the clone as it was:
//!   `examples/demo.jsonl` byte for byte, and `git status` unchanged.
//! * Completions and manual pages are generated from the same definitions.

mod common;

use common::*;
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    fs::read_to_string(repo().join("README.md")).unwrap()
}

/// `sessionfs ARGS` with the repository as working directory; must succeed.
fn help(args: &[&str]) -> String {
    sessionfs(args, &repo()).ok().stdout
}

/// The commands `sessionfs --help` lists (without `help`).
fn commands() -> Vec<String> {
    let text = help(&["--help"]);
    let after = text
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands: section");
    after
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// The long options of `sessionfs COMMAND --help`, without --help and --version.
fn options(command: &str) -> BTreeSet<String> {
    help(&[command, "--help"])
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .strip_prefix('-')
                .filter(|r| !r.starts_with('-'))
                .map_or(l, |r| r.get(3..).unwrap_or(""));
            let name = l.strip_prefix("--")?;
            let name: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .filter(|o| o != "help" && o != "version")
        .collect()
}

/// The README's usage synopsis: command -> its text (continuation lines included).
fn synopsis() -> Vec<(String, String)> {
    synopsis_of(&readme())
}

/// The usage synopsis of a document (its code block starting with `sessionfs mount`).
fn synopsis_of(text: &str) -> Vec<(String, String)> {
    let block = text
        .split("```\n")
        .find(|b| b.starts_with("sessionfs mount "))
        .expect("a synopsis block starting with `sessionfs mount`");
    let mut out: Vec<(String, String)> = Vec::new();
    for line in block.lines() {
        if let Some(rest) = line.strip_prefix("sessionfs ") {
            let cmd = rest.split_whitespace().next().unwrap().to_owned();
            out.push((cmd, rest.to_owned()));
        } else if line.starts_with(' ') {
            let last = out.last_mut().expect("a continuation line first");
            last.1.push(' ');
            last.1.push_str(line.trim());
        }
    }
    out
}

#[test]
fn the_readme_synopsis_lists_every_command_and_option() {
    check_synopsis(&synopsis(), "the README");
}

#[test]
fn the_commands_page_synopsis_lists_every_command_and_option() {
    let text = fs::read_to_string(repo().join("docs/COMMANDS.md")).unwrap();
    check_synopsis(&synopsis_of(&text), "docs/COMMANDS.md");
}

fn check_synopsis(syn: &[(String, String)], doc: &str) {
    let listed: Vec<&str> = syn.iter().map(|(c, _)| c.as_str()).collect();
    let cmds = commands();
    assert!(cmds.len() >= 4, "{cmds:?}");
    for c in &cmds {
        assert!(
            listed.contains(&c.as_str()),
            "`sessionfs {c}` is missing from {doc}'s synopsis: {listed:?}"
        );
    }
    for (c, text) in syn {
        assert!(
            cmds.contains(c),
            "{doc} lists `sessionfs {c}`, which --help does not"
        );
        let want = options(c);
        let have: BTreeSet<String> = text
            .split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '-'))
            .filter_map(|w| w.strip_prefix("--"))
            .map(str::to_owned)
            .collect();
        assert_eq!(
            have, want,
            "`sessionfs {c}`: {doc}'s synopsis and --help differ"
        );
    }
    // The shells of `completions`.
    let (_, comp) = syn.iter().find(|(c, _)| c == "completions").unwrap();
    let h = help(&["completions", "--help"]);
    let values = h
        .split("[possible values: ")
        .nth(1)
        .and_then(|v| v.split(']').next())
        .expect("possible values in completions --help");
    for shell in values.split(", ") {
        assert!(comp.contains(shell), "{shell} is missing from: {comp}");
    }
}

#[test]
fn completions_and_manual_pages_come_from_the_same_definitions() {
    let bash = help(&["completions", "bash"]);
    for word in [
        "mount",
        "unmount",
        "check",
        "completions",
        "--max-index-memory",
        "--lazy",
    ] {
        assert!(bash.contains(word), "bash completions lack {word}");
    }
    for shell in ["zsh", "fish"] {
        let s = help(&["completions", shell]);
        assert!(
            s.contains("max-reply") && s.contains("unmount"),
            "{shell}: {s}"
        );
    }
    let out = sessionfs(&["completions", "tcsh"], &repo());
    assert_eq!(out.code(), Some(2), "{out:?}");

    let d = tempdir();
    let man = d.path().join("man");
    sessionfs(&["manpages".as_ref(), man.as_os_str()], &repo()).ok();
    let mut pages: Vec<String> = fs::read_dir(&man)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    assert_eq!(
        pages,
        [
            "sessionfs-check.1",
            "sessionfs-completions.1",
            "sessionfs-fork.1",
            "sessionfs-grep.1",
            "sessionfs-index.1",
            "sessionfs-mount.1",
            "sessionfs-unmount.1",
            "sessionfs-usage.1",
            "sessionfs.1"
        ]
    );
    let mount = fs::read_to_string(man.join("sessionfs-mount.1")).unwrap();
    assert!(mount.starts_with(".ie") || mount.contains(".TH"), "{mount}");
    assert!(mount.contains("max\\-index\\-memory"), "{mount}");
    assert!(mount.contains(".SH \"EXIT STATUS\""), "{mount}");
    assert_eq!(
        mount.matches(".ds Aq").count(),
        2,
        "one quote definition: {mount}"
    );
}

/// The one-session console example's commands (`$ ` lines of the `console` block
/// that mounts a copy of `examples/demo.jsonl`; the README's first example, of every
/// agent's sessions, runs in `tests/mount_claude.rs` against a home made for it).
fn readme_example() -> Vec<String> {
    readme_console_block("cp examples/demo.jsonl")
        .lines()
        .filter_map(|l| l.strip_prefix("$ "))
        .map(str::to_owned)
        .collect()
}

/// `git status --porcelain` of the repository, if it is a git work tree.
fn git_status() -> Option<String> {
    let out = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(repo())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Unmounts `mnt` when dropped, should the example stop halfway.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        if is_mount_point(&self.0) || is_dead_mount(&self.0) {
            unmount(&self.0);
        }
    }
}

#[test]
fn the_readme_example_runs_and_leaves_the_clone_clean() {
    let commands = readme_example();
    assert!(
        commands.iter().any(|c| c.contains("> reply")),
        "the example writes a reply: {commands:?}"
    );
    assert!(
        commands.iter().any(|c| c.starts_with("mkdir -p ")),
        "the example makes its mount point: {commands:?}"
    );
    let d = tempdir();
    let tmp = format!("{}/", d.path().display());
    let _guard = Unmount(d.path().join("s"));
    let demo = repo().join("examples/demo.jsonl");
    let demo_before = fs::read(&demo).unwrap();
    let git_before = git_status();

    // Each command in turn, in one shell (so that `cd` carries over), stopping at the
    // first that fails; `sessionfs` is the binary under test.
    let mut script = String::from("set -u\n");
    for c in &commands {
        let c = c.replace("/tmp/", &tmp);
        let quoted = c.replace('\'', r"'\''");
        script.push_str(&format!(
            "{{ {c}\n}} || {{ echo 'README command failed: {quoted}' >&2; exit 1; }}\n"
        ));
    }
    let bin_dir = Path::new(bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(&script)
        .current_dir(repo())
        .env("PATH", path);
    let out = run_command(cmd);
    assert!(
        out.status.success(),
        "the README example failed:\n{}\nstdout:\n{}",
        out.stderr,
        out.stdout
    );
    // The reply went into the copy, which grew by one line; the listing after it
    // shows the new entry's files.
    let copy = fs::read(d.path().join("demo.jsonl")).unwrap();
    assert!(copy.starts_with(&demo_before) && copy.len() > demo_before.len());
    assert!(out.stdout.contains("context.json"), "{}", out.stdout);
    assert!(
        !is_mount_point(&d.path().join("s")),
        "the example leaves it mounted"
    );

    assert_eq!(
        fs::read(&demo).unwrap(),
        demo_before,
        "the README example changed examples/demo.jsonl"
    );
    assert_eq!(
        git_status(),
        git_before,
        "the README example changed the clone"
    );
}

/// `grep --help` and `usage --help` name every agent whose sessions they read by
/// default; completions offer nothing hidden; every manual page describes every option
/// and has EXIT STATUS, ENVIRONMENT, FILES and SEE ALSO, with no literal backticks.
#[test]
fn help_completions_and_manual_pages_are_complete() {
    let agents = sessionfs::model::sessions_dir::AGENTS;
    for cmd in ["grep", "usage"] {
        for h in [help(&[cmd, "--help"]), help(&[cmd, "-h"])] {
            for a in &agents {
                assert!(
                    h.contains(&format!("{}/", a.folder)),
                    "{cmd}: {} missing:\n{h}",
                    a.folder
                );
            }
        }
        let long = help(&[cmd, "--help"]);
        for a in &agents {
            assert!(long.contains(a.var), "{cmd} --help: {} missing", a.var);
        }
    }
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let s = help(&["completions", shell]);
        for hidden in ["manpages", "ready-fd", "ready_fd"] {
            assert!(!s.contains(hidden), "{shell} completions offer {hidden}");
        }
        assert!(s.contains("max-line"), "{shell}");
    }
    let d = tempdir();
    let man = d.path().join("man");
    sessionfs(&["manpages".as_ref(), man.as_os_str()], &repo()).ok();
    for e in fs::read_dir(&man).unwrap() {
        let p = e.unwrap().path();
        let text = fs::read_to_string(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        for section in [
            ".SH NAME",
            ".SH SYNOPSIS",
            ".SH DESCRIPTION",
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH FILES",
            ".SH \"SEE ALSO\"",
        ] {
            assert!(text.contains(section), "{name} lacks {section}");
        }
        assert!(!text.contains('`'), "{name} has a literal backtick");
        for a in &agents {
            assert!(text.contains(a.var), "{name}: ENVIRONMENT lacks {}", a.var);
        }
        // Every option has a description: in the OPTIONS section, each `.TP` item
        // (an option's line) is followed by text before the next item.
        if let Some(opts) = text.split(".SH OPTIONS").nth(1) {
            let opts = opts.split("\n.SH ").next().unwrap();
            for item in opts.split("\n.TP\n").skip(1) {
                let mut lines = item.lines();
                let head = lines.next().unwrap_or("");
                let body: String = lines.collect::<Vec<_>>().join(" ");
                assert!(
                    body.chars().any(|c| c.is_alphabetic()),
                    "{name}: option {head} has no description"
                );
            }
        }
    }
}
