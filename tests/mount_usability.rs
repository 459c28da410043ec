//! What a new user does in the first ten minutes, through a real mount and the real
//! tools: append to `name` with `>>`, clear it with `: >` or `truncate`, relabel with
//! `ln -sfn` and `mv`, and read what the commands say (the foreground mount's notice,
//! `sessionfs unmount`, a sessions directory with nothing in it yet).
//!
//! Every check of the session file also checks that no byte the user did not write
//! reached it: old bytes unchanged, no NUL anywhere.

mod common;

use common::*;
use serde_json::Value;
use std::fs;
use std::path::Path;

/// small.jsonl: `branch-0` labels 0c1fe7d3, `alt-2` labels 22776346; 8e38ccf6 has none.
const BRANCH0: &str = "0c1fe7d3";
const ALT2: &str = "22776346";
const BARE: &str = "8e38ccf6";

/// The lines appended to `file` since `before`, parsed; panics if an old byte changed
/// or a NUL byte got in.
fn appended(file: &Path, before: &[u8]) -> Vec<Value> {
    let after = fs::read(file).unwrap();
    assert!(
        after.starts_with(before),
        "earlier bytes of the session changed"
    );
    assert!(
        !after.contains(&0),
        "a NUL byte reached the session: {:?}",
        String::from_utf8_lossy(&after[before.len()..])
    );
    std::str::from_utf8(&after[before.len()..])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[track_caller]
fn ok_quiet(out: Output, what: &str) -> Output {
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{what}: {:?}\nstderr: {}",
        out.status,
        out.stderr
    );
    out
}

fn cat(m: &Mount, rel: &str) -> String {
    ok_quiet(run("cat", &[rel], &m.mnt), rel).stdout
}

fn readlink(m: &Mount, rel: &str) -> Option<String> {
    let out = run("readlink", &[rel], &m.mnt);
    out.status.success().then(|| {
        out.stdout
            .trim_end()
            .trim_start_matches("../.id/")
            .to_owned()
    })
}

// ---------------------------------------------------------------------------------
// name and reply: what the shell's redirections mean.

#[test]
fn echo_appended_to_name_continues_the_name_with_no_nul_bytes() {
    let m = Mount::new("small.jsonl");
    assert_eq!(cat(&m, "name"), "Oracle session 1\n");
    let before = fs::read(&m.file).unwrap();
    ok_quiet(sh("echo ' (draft)' >> name", &m.mnt), ">> name");
    let new = appended(&m.file, &before);
    assert_eq!(new.len(), 1, "{new:?}");
    assert_eq!(new[0]["type"], "session_info");
    assert_eq!(new[0]["name"], "Oracle session 1 (draft)");
    assert_eq!(cat(&m, "name"), "Oracle session 1 (draft)\n");
    // Again: the kernel's idea of the size is the old one, the name grew meanwhile.
    ok_quiet(sh("printf ', v2' >> name", &m.mnt), ">> name again");
    assert_eq!(cat(&m, "name"), "Oracle session 1 (draft), v2\n");
    let new = appended(&m.file, &before);
    assert_eq!(new.len(), 2);
}

#[test]
fn a_name_written_with_a_shell_redirection_is_one_line() {
    // Shells open the file, copy the descriptor onto standard output and close the
    // first copy before the command writes: that close must neither clear the name
    // nor cut the write in two.
    let m = Mount::new("small.jsonl");
    for shell in ["sh", "bash"] {
        let before = fs::read(&m.file).unwrap();
        let out = run(shell, &["-c", "echo Replaced > name"], &m.mnt);
        ok_quiet(out, shell);
        let new = appended(&m.file, &before);
        assert_eq!(new.len(), 1, "{shell}: {new:?}");
        assert_eq!(new[0]["name"], "Replaced");
        let out = run(shell, &["-c", ": > name"], &m.mnt);
        ok_quiet(out, shell);
        let new = appended(&m.file, &before);
        assert_eq!(new.len(), 2, "{shell}: {new:?}");
        assert_eq!(new[1]["name"], "");
        assert_eq!(cat(&m, "name"), "", "{shell}: cleared when close returned");
    }
}

#[test]
fn replies_appended_with_double_redirection_twice_are_whole() {
    let m = Mount::new("small.jsonl");
    let before = fs::read(&m.file).unwrap();
    // After the first write the kernel believes `reply` is 6 bytes long; the second
    // `>>` writes at that offset, which must not pad the new message.
    for text in ["first", "second"] {
        ok_quiet(
            sh(&format!("echo {text} >> .id/{ALT2}/reply"), &m.mnt),
            ">> reply",
        );
    }
    let new = appended(&m.file, &before);
    let texts: Vec<&str> = new
        .iter()
        .map(|e| e["message"]["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["first", "second"]);
    assert!(new.iter().all(|e| e["parentId"] == ALT2));
}

#[test]
fn a_write_that_would_leave_a_gap_fails_and_appends_nothing() {
    let m = Mount::new("small.jsonl");
    let before = fs::read(&m.file).unwrap();
    for file in ["name", "reply"] {
        // dd seeks past the end without truncating: the gap would be padding.
        let out = sh(
            &format!("printf x | dd of={file} bs=1 seek=100 conv=notrunc status=none"),
            &m.mnt,
        );
        assert!(!out.status.success(), "{file}: {out:?}");
        assert!(out.stderr.contains("Invalid argument"), "{file}: {out:?}");
    }
    assert_eq!(fs::read(&m.file).unwrap(), before, "something was appended");
    assert_eq!(cat(&m, "name"), "Oracle session 1\n");
}

#[test]
fn colon_redirect_and_truncate_clear_the_name_but_not_a_reply() {
    let m = Mount::new("small.jsonl");
    let before = fs::read(&m.file).unwrap();
    ok_quiet(sh(": > reply", &m.mnt), ": > reply");
    ok_quiet(sh(&format!(": > .id/{ALT2}/reply"), &m.mnt), ": > ID/reply");
    assert_eq!(fs::read(&m.file).unwrap(), before, ": > reply appended");

    ok_quiet(sh(": > name", &m.mnt), ": > name");
    let new = appended(&m.file, &before);
    assert_eq!(new.len(), 1);
    assert_eq!(new[0]["type"], "session_info");
    assert_eq!(new[0]["name"], "", "an empty name clears it, as in Pi");
    assert_eq!(cat(&m, "name"), "");
    // Nothing to clear: nothing appended.
    ok_quiet(sh(": > name", &m.mnt), ": > name again");
    assert_eq!(appended(&m.file, &before).len(), 1);

    ok_quiet(sh("echo 'Named again' > name", &m.mnt), "echo > name");
    assert_eq!(cat(&m, "name"), "Named again\n");
    ok_quiet(run("truncate", &["-s", "0", "name"], &m.mnt), "truncate");
    let new = appended(&m.file, &before);
    assert_eq!(new.len(), 3);
    assert_eq!(new[2]["name"], "");
    assert_eq!(cat(&m, "name"), "");
    // Growing it would pad.
    let out = run("truncate", &["-s", "50", "name"], &m.mnt);
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(appended(&m.file, &before).len(), 3);
}

// ---------------------------------------------------------------------------------
// labels/: relabelling.

#[test]
fn ln_sfn_moves_a_label_and_loses_nothing() {
    let m = Mount::new("small.jsonl");
    let before = fs::read(&m.file).unwrap();
    // alt-2 is on ALT2; point it at BARE. GNU ln makes the link under a temporary
    // name and renames it over alt-2.
    ok_quiet(
        run(
            "ln",
            &["-sfn", &format!("../.id/{BARE}"), "labels/alt-2"],
            &m.mnt,
        ),
        "ln -sfn",
    );
    assert_eq!(readlink(&m, "labels/alt-2").as_deref(), Some(BARE));
    let listed = ok_quiet(run("ls", &["labels"], &m.mnt), "ls labels").stdout;
    assert_eq!(
        listed, "alt-2\nbranch-0\n",
        "a temporary name was left behind"
    );
    assert_eq!(readlink(&m, "labels/branch-0").as_deref(), Some(BRANCH0));
    let new = appended(&m.file, &before);
    // The temporary label, then the rename: alt-2 on BARE and off ALT2, in one write.
    assert_eq!(new.len(), 3, "{new:?}");
    assert_eq!(new[1]["targetId"], BARE);
    assert_eq!(new[1]["label"], "alt-2");
    assert_eq!(new[2]["targetId"], ALT2);
    assert!(new[2].get("label").is_none());
    // leaf follows the last line, as Pi's does.
    let leaf = fs::read_link(m.path("leaf")).unwrap();
    assert_eq!(
        leaf.to_str().unwrap(),
        format!(".id/{}", new[2]["id"].as_str().unwrap())
    );
    // The tree shows the label on its new entry.
    let tree = cat(&m, "tree");
    let line = tree.lines().find(|l| l.contains(BARE)).unwrap();
    assert!(line.contains("alt-2"), "{line}");

    // Relabelling with the label the entry already has changes nothing visible.
    ok_quiet(
        run("ln", &["-sfn", BARE, "labels/alt-2"], &m.mnt),
        "ln -sfn again",
    );
    assert_eq!(readlink(&m, "labels/alt-2").as_deref(), Some(BARE));
    assert_eq!(
        ok_quiet(run("ls", &["labels"], &m.mnt), "ls").stdout,
        "alt-2\nbranch-0\n"
    );
}

#[test]
fn mv_renames_a_label_and_replaces_one_in_use() {
    let m = Mount::new("small.jsonl");
    let before = fs::read(&m.file).unwrap();
    ok_quiet(
        run("mv", &["labels/branch-0", "labels/trunk"], &m.mnt),
        "mv",
    );
    assert_eq!(readlink(&m, "labels/trunk").as_deref(), Some(BRANCH0));
    assert_eq!(readlink(&m, "labels/branch-0"), None);
    assert_eq!(appended(&m.file, &before).len(), 1);
    // Onto a label in use: it is replaced, as a file would be. (`-T`: alt-2 is a link
    // to a directory, which mv would otherwise move trunk into.)
    ok_quiet(
        run("mv", &["-T", "labels/trunk", "labels/alt-2"], &m.mnt),
        "mv -T over",
    );
    assert_eq!(readlink(&m, "labels/alt-2").as_deref(), Some(BRANCH0));
    assert_eq!(
        ok_quiet(run("ls", &["labels"], &m.mnt), "ls").stdout,
        "alt-2\n"
    );
    let new = appended(&m.file, &before);
    assert_eq!(new.len(), 3);
    // mv -n refuses to replace; mv out of labels/ is refused; nothing is written.
    ok_quiet(run("ln", &["-s", ALT2, "labels/other"], &m.mnt), "ln -s");
    let before = fs::read(&m.file).unwrap();
    let out = run("mv", &["-nT", "labels/other", "labels/alt-2"], &m.mnt);
    assert_eq!(
        readlink(&m, "labels/other").as_deref(),
        Some(ALT2),
        "{out:?}"
    );
    let out = run("mv", &["labels/other", "moved"], &m.mnt);
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(fs::read(&m.file).unwrap(), before);
    assert_eq!(readlink(&m, "labels/alt-2").as_deref(), Some(BRANCH0));
}

#[test]
fn labels_are_relabelled_in_a_sessions_directory_mount_too() {
    let d = tempdir();
    let sessions = d.path().join("sessions");
    fs::create_dir_all(sessions.join("p")).unwrap();
    for s in ["a", "b"] {
        fs::copy(
            fixture("small.jsonl"),
            sessions.join(format!("p/{s}.jsonl")),
        )
        .unwrap();
    }
    let m = Mount::sessions_dir(d, Some(&sessions), &[], &[]);
    let a = sessions.join("p/a.jsonl");
    let before = fs::read(&a).unwrap();
    ok_quiet(
        run("ln", &["-sfn", BARE, "p/a/labels/alt-2"], &m.mnt),
        "ln -sfn in a session",
    );
    assert_eq!(readlink(&m, "p/a/labels/alt-2").as_deref(), Some(BARE));
    ok_quiet(
        run(
            "mv",
            &["-T", "p/a/labels/alt-2", "p/a/labels/moved"],
            &m.mnt,
        ),
        "mv -T in a session",
    );
    assert_eq!(readlink(&m, "p/a/labels/moved").as_deref(), Some(BARE));
    assert_eq!(appended(&a, &before).len(), 4);
    // Into another session's labels/: refused, nothing written to either file.
    let b_before = fs::read(sessions.join("p/b.jsonl")).unwrap();
    let before = fs::read(&a).unwrap();
    let out = run(
        "mv",
        &["-T", "p/a/labels/moved", "p/b/labels/moved"],
        &m.mnt,
    );
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(fs::read(&a).unwrap(), before);
    assert_eq!(fs::read(sessions.join("p/b.jsonl")).unwrap(), b_before);
}

// ---------------------------------------------------------------------------------
// What the commands say.

#[test]
fn a_foreground_mount_says_once_what_is_mounted_where() {
    let m = Mount::new("small.jsonl");
    let want = format!(
        "sessionfs: mounted {} on {}; unmount with: sessionfs unmount {} (or Ctrl-C here)\n",
        m.file.display(),
        m.mnt.display(),
        m.mnt.display()
    );
    let said = wait_until(DEADLINE, || m.stderr_text().contains(&want));
    assert!(said, "stderr: {:?}", m.stderr_text());
    ok_quiet(run("ls", &["-R", "."], &m.mnt), "ls -R");
    assert_eq!(m.stderr_text(), want, "said more than once, or more");
}

#[test]
fn a_sessions_directory_with_no_sessions_mounts_with_a_warning() {
    let d = tempdir();
    let sessions = d.path().join("sessions");
    fs::create_dir_all(sessions.join("--home-dev-p--")).unwrap();
    let m = Mount::sessions_dir(d, Some(&sessions), &[], &[]);
    let warning = format!(
        "sessionfs: warning: {} holds no sessions yet (no .jsonl file in it or in its \
         project folders, where Pi or Claude Code keeps them); they will appear in the \
         mount as Pi or Claude Code writes them\n",
        sessions.display()
    );
    let said = wait_until(DEADLINE, || m.stderr_text().contains("sessionfs: mounted"));
    assert!(said, "{}", m.stderr_text());
    assert!(m.stderr_text().starts_with(&warning), "{}", m.stderr_text());
    // It is mounted all the same, and a session written later shows.
    fs::copy(
        fixture("small.jsonl"),
        sessions.join("--home-dev-p--/s.jsonl"),
    )
    .unwrap();
    let shows = wait_until(DEADLINE, || {
        try_ls(&m.path("--home-dev-p--")).is_some_and(|l| l == ["s"])
    });
    assert!(shows);

    // With a session in it (one folder down), no warning; --background says it too.
    let d = tempdir();
    let sessions = d.path().join("sessions");
    fs::create_dir_all(sessions.join("p")).unwrap();
    fs::copy(fixture("small.jsonl"), sessions.join("p/s.jsonl")).unwrap();
    let m = Mount::sessions_dir(d, Some(&sessions), &[], &[]);
    let said = wait_until(DEADLINE, || m.stderr_text().contains("sessionfs: mounted"));
    assert!(
        said && !m.stderr_text().contains("warning"),
        "{}",
        m.stderr_text()
    );

    let d = tempdir();
    let empty = d.path().join("empty");
    let mnt = d.path().join("mnt");
    fs::create_dir_all(&empty).unwrap();
    fs::create_dir_all(&mnt).unwrap();
    let out = sessionfs(&["mount", "--background", "empty", "mnt"], d.path());
    let _guard = scopeguard(&mnt);
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stderr
            .starts_with("sessionfs: warning: empty holds no sessions yet"),
        "{out:?}"
    );
    ok_quiet(sessionfs(&["unmount", "mnt"], d.path()), "unmount");
}

#[test]
fn a_background_mount_says_once_what_is_mounted_where() {
    let d = tempdir();
    let mnt = d.path().join("mnt");
    fs::create_dir_all(&mnt).unwrap();
    fs::copy(fixture("small.jsonl"), d.path().join("s.jsonl")).unwrap();
    let out = sessionfs(&["mount", "--background", "s.jsonl", "mnt"], d.path());
    let _guard = scopeguard(&mnt);
    assert!(out.status.success(), "{out:?}");
    let abs = fs::canonicalize(&mnt).unwrap();
    assert_eq!(
        out.stderr,
        format!(
            "sessionfs: mounted s.jsonl on {}; unmount with: sessionfs unmount {}\n",
            abs.display(),
            abs.display()
        )
    );
    assert_eq!(out.stdout, "");
    ok_quiet(run("cat", &["name"], &mnt), "cat name");
    ok_quiet(sessionfs(&["unmount", "mnt"], d.path()), "unmount");
}

/// `sessionfs ARGS` run with HOME set to `home` and no agent variables but `envs`.
fn sessionfs_at_home(args: &[&str], home: &Path, envs: &[(&str, &Path)]) -> Output {
    let mut c = std::process::Command::new(bin());
    c.args(args)
        .current_dir(home)
        .env("HOME", home)
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("CLAUDE_CONFIG_DIR")
        .envs(envs.iter().copied());
    run_command(c)
}

#[test]
fn grep_says_when_the_folders_it_searches_hold_no_sessions() {
    let d = tempdir();
    let home = d.path();
    // Pi's default folder, empty: a warning naming it, and exit 1 (nothing matched).
    let pi = home.join(".pi/agent/sessions");
    fs::create_dir_all(pi.join("--home-dev-p--")).unwrap();
    let out = sessionfs_at_home(&["grep", "anything"], home, &[]);
    assert_eq!(out.code(), Some(1), "{out:?}");
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        format!(
            "sessionfs: warning: Pi's sessions directory {} holds no sessions yet (no .jsonl \
             file in it or in its project folders); nothing was searched there\n",
            pi.display()
        )
    );
    // Claude Code's too: both named.
    let claude = home.join(".claude/projects");
    fs::create_dir_all(&claude).unwrap();
    let out = sessionfs_at_home(&["grep", "anything"], home, &[]);
    assert_eq!(out.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr,
        format!(
            "sessionfs: warning: Pi's sessions directory {} and Claude Code's projects \
             directory {} hold no sessions yet (no .jsonl file in them or in their project \
             folders); nothing was searched there\n",
            pi.display(),
            claude.display()
        )
    );
    // A session in one of them: no warning, and what matched.
    let proj = claude.join("-home-dev-p");
    fs::create_dir_all(&proj).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude/projects/-home-dev-src-tui/9a35a251-e6e4-429e-b75c-cb5cb7ce24f3.jsonl");
    fs::copy(src, proj.join("s.jsonl")).unwrap();
    let out = sessionfs_at_home(&["grep", "-l", "Compacted"], home, &[]);
    assert_eq!((out.code(), out.stderr.as_str()), (Some(0), ""), "{out:?}");
    // A DIR given that holds none: named, with the agents it could be for.
    let empty = home.join("empty");
    fs::create_dir_all(&empty).unwrap();
    let out = sessionfs_at_home(&["grep", "anything", "empty"], home, &[]);
    assert_eq!(out.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr,
        "sessionfs: warning: empty holds no sessions yet (no .jsonl file in it or in its \
         project folders, where Pi or Claude Code keeps them); nothing was searched there\n"
    );
}

#[test]
fn an_empty_claude_code_folder_is_named_as_claude_codes() {
    let d = tempdir();
    let home = d.path().join("home");
    let claude = home.join(".claude/projects");
    fs::create_dir_all(&claude).unwrap();
    let m = Mount::sessions_dir(
        d,
        None,
        &[],
        &[
            ("HOME", home.as_os_str()),
            ("CLAUDE_CONFIG_DIR", home.join(".claude").as_os_str()),
        ],
    );
    let said = wait_until(DEADLINE, || m.stderr_text().contains("sessionfs: mounted"));
    assert!(said, "{}", m.stderr_text());
    let warning = format!(
        "sessionfs: warning: Claude Code's projects directory {} holds no sessions yet (no \
         .jsonl file in it or in its project folders); they will appear in the mount as \
         Claude Code writes them\n",
        claude.display()
    );
    assert!(m.stderr_text().starts_with(&warning), "{}", m.stderr_text());
    assert!(!m.stderr_text().contains("Pi"), "{}", m.stderr_text());
    // A file that is neither agent's session names both.
    let d = tempdir();
    fs::write(d.path().join("notes.jsonl"), "{\"hello\": 1}\n").unwrap();
    fs::create_dir(d.path().join("mnt")).unwrap();
    let out = sessionfs(&["mount", "notes.jsonl", "mnt"], d.path());
    assert_eq!(out.code(), Some(4), "{out:?}");
    assert!(
        out.stderr.starts_with(
            "sessionfs: notes.jsonl: not a Pi, Claude Code or Codex session: line 1: "
        ),
        "{out:?}"
    );
}

#[test]
fn usage_mistakes_are_said_as_every_other_error() {
    let d = tempdir();
    // clap's own errors start with `sessionfs: ` as the help promises, exit status 2.
    for args in [
        &["mount"][..],
        &["frobnicate"],
        &["grep", "--threads", "many", "x"],
        &["mount", "--max-reply", "lots", "a", "b"],
    ] {
        let out = sessionfs(args, d.path());
        assert_eq!(out.code(), Some(2), "{args:?}: {out:?}");
        assert!(
            out.stderr.starts_with("sessionfs: ") && !out.stderr.contains("error:"),
            "{args:?}: {}",
            out.stderr
        );
        assert!(out.stderr.contains("try '--help'"), "{}", out.stderr);
    }
    fs::write(d.path().join("s.jsonl"), "").unwrap();
    let out = sessionfs(&["mount", "s.jsonl"], d.path());
    assert_eq!(out.code(), Some(2), "{out:?}");
    assert!(
        out.stderr
            .starts_with("sessionfs: s.jsonl is a session file: give a mount point too"),
        "{}",
        out.stderr
    );
    // Help still prints as help, on standard output.
    let out = sessionfs(&["mount", "--help"], d.path()).ok();
    assert!(out.stdout.contains("sessionfs unmount"), "{}", out.stdout);
    assert!(!out.stdout.contains("(`umount"), "{}", out.stdout);
    let out = sessionfs(&["grep", "--help"], d.path()).ok();
    assert!(out.stdout.contains("one per CPU"), "{}", out.stdout);
    assert!(!out.stdout.contains("[default: 0]"), "{}", out.stdout);
}

#[test]
fn swapped_mount_arguments_say_which_comes_last() {
    let d = tempdir();
    fs::create_dir(d.path().join("mnt")).unwrap();
    fs::copy(fixture("small.jsonl"), d.path().join("s.jsonl")).unwrap();
    let before = fs::read(d.path().join("s.jsonl")).unwrap();
    let out = sessionfs(&["mount", "mnt", "s.jsonl"], d.path());
    assert_eq!(out.code(), Some(5), "{out:?}");
    assert_eq!(
        out.stderr,
        "sessionfs: s.jsonl is not a directory; the mount point comes last: sessionfs mount \
         FILE|DIR MOUNTPOINT\n"
    );
    assert!(!is_mount_point(&d.path().join("mnt")));
    assert_eq!(fs::read(d.path().join("s.jsonl")).unwrap(), before);
}

#[test]
fn manual_page_synopses_give_every_option_its_value() {
    let d = tempdir();
    ok_quiet(sessionfs(&["manpages", "man"], d.path()), "manpages");
    let page = |name: &str| {
        let roff = fs::read_to_string(d.path().join("man").join(name)).unwrap();
        let at = roff.find(".SH SYNOPSIS").expect("a synopsis");
        let end = roff[at + 1..]
            .find(".SH")
            .map_or(roff.len(), |e| at + 1 + e);
        roff[at..end].replace("\\-", "-")
    };
    let mount = page("sessionfs-mount.1");
    for want in [
        "[--max-reply BYTES]",
        "[--max-index-memory BYTES]",
        "[--log FILE]",
        "[--read-only]",
        "[FILE|DIR] MOUNTPOINT",
    ] {
        assert!(mount.contains(want), "{want}: {mount}");
    }
    assert!(!mount.contains("ready-fd"), "{mount}");
    let grep = page("sessionfs-grep.1");
    assert!(grep.contains("[--color WHEN]"), "{grep}");
    assert!(grep.contains("[-e|--regexp PATTERN...]"), "{grep}");
}

/// Unmounts `mnt` when dropped.
struct Unmounted(std::path::PathBuf);

impl Drop for Unmounted {
    fn drop(&mut self) {
        if is_mount_point(&self.0) || is_dead_mount(&self.0) {
            unmount(&self.0);
        }
    }
}

fn scopeguard(mnt: &Path) -> Unmounted {
    Unmounted(mnt.to_path_buf())
}

#[test]
fn a_plain_text_file_or_a_bom_is_refused_with_the_right_line() {
    let d = tempdir();
    fs::create_dir(d.path().join("mnt")).unwrap();
    fs::write(d.path().join("notes.txt"), "just some notes\n").unwrap();
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend(fs::read(fixture("small.jsonl")).unwrap());
    fs::write(d.path().join("bom.jsonl"), &bom).unwrap();
    let out = sessionfs(&["mount", "notes.txt", "mnt"], d.path());
    assert_eq!(out.code(), Some(4), "{out:?}");
    assert_eq!(
        out.stderr,
        "sessionfs: notes.txt: not a Pi, Claude Code or Codex session: line 1: not JSON, and no line of the \
         file is a session header\n"
    );
    let out = sessionfs(&["mount", "bom.jsonl", "mnt"], d.path());
    assert_eq!(out.code(), Some(4), "{out:?}");
    assert_eq!(
        out.stderr,
        "sessionfs: bom.jsonl: not a Pi, Claude Code or Codex session: line 1: a session header behind a byte \
         order mark (BOM, the bytes EF BB BF at the start of the file), which JSON does not \
         allow, so Pi cannot read it; remove those three bytes\n"
    );
    assert!(!is_mount_point(&d.path().join("mnt")));
}

// ---------------------------------------------------------------------------------
// sessionfs unmount.

#[test]
fn sessionfs_unmount_unmounts_and_the_mount_process_exits_cleanly() {
    let mut m = Mount::new("small.jsonl");
    let out = ok_quiet(
        sessionfs(&["unmount".as_ref(), m.mnt.as_os_str()], m.dir()),
        "unmount",
    );
    assert_eq!(out.stdout, "");
    let status = m.wait_exit(DEADLINE);
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}: {}",
        m.stderr_text()
    );
    assert!(!m.is_mounted());
    // Now it is a plain directory.
    let out = sessionfs(&["unmount", "mnt"], m.dir());
    assert_eq!(out.code(), Some(5), "{out:?}");
    assert_eq!(out.stderr, "sessionfs: mnt is not a mount point\n");
}

#[test]
fn sessionfs_unmount_leaves_a_busy_mount_unless_lazy() {
    let mut m = Mount::new("small.jsonl");
    let mut busy = std::process::Command::new("sleep")
        .arg("60")
        .current_dir(&m.mnt)
        .spawn()
        .unwrap();
    let out = sessionfs(&["unmount", "mnt"], m.dir());
    assert_eq!(out.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr,
        format!(
            "sessionfs: mnt is busy: a program is using it (a shell whose current directory \
             is inside it, or an open file); leave it and try again, or detach it now with: \
             sessionfs unmount --lazy {}\n",
            m.mnt.display()
        )
    );
    assert!(m.is_mounted(), "a busy mount was unmounted");
    ok_quiet(run("ls", &["mnt"], m.dir()), "ls after a refused unmount");
    ok_quiet(sessionfs(&["unmount", "--lazy", "mnt"], m.dir()), "--lazy");
    let _ = busy.kill();
    let _ = busy.wait();
    let status = m.wait_exit(DEADLINE);
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}

#[test]
fn sessionfs_unmount_touches_nothing_but_a_sessionfs_mount() {
    if !is_root() {
        eprintln!("not run: needs root to mount a tmpfs");
        return;
    }
    let d = tempdir();
    let t = d.path().join("t");
    fs::create_dir(&t).unwrap();
    run("mount", &["-t", "tmpfs", "none", "t"], d.path()).ok();
    let _guard = scopeguard(&t);
    let out = sessionfs(&["unmount", "t"], d.path());
    assert_eq!(out.code(), Some(5), "{out:?}");
    assert_eq!(
        out.stderr,
        "sessionfs: t is not a sessionfs mount (it is tmpfs); not unmounting it\n"
    );
    assert!(is_mount_point(&t));
    run("umount", &["t"], d.path()).ok();
}

// LAYOUT.md, `.id/`: a unique prefix of an id (4 characters or more) resolves, as git
// takes one: `.id/PREFIX` is a link to the entry, so `cd`, `cat` and `ls` go through
// it; an ambiguous or too short prefix is not there (ENOENT), and `.id/` still lists
// nothing.
#[test]
fn a_unique_id_prefix_in_dot_id_leads_to_the_entry() {
    let m = Mount::new("small.jsonl");
    let out = sh(&format!("cat .id/{}/context", &BARE[..5]), &m.mnt).ok();
    assert_eq!(out.stdout, cat(&m, &format!(".id/{BARE}/context")));
    assert_eq!(
        readlink(&m, &format!(".id/{}", &BARE[..4])).as_deref(),
        Some(BARE)
    );
    let out = sh(
        &format!("cd .id/{} && ls -d \"$(pwd -P)\"", &ALT2[..6]),
        &m.mnt,
    )
    .ok();
    assert!(
        out.stdout.trim_end().ends_with(&format!(".id/{ALT2}")),
        "{}",
        out.stdout
    );
    // Too short, and a prefix of no id: not found; nothing is listed.
    let short = sh(&format!("ls .id/{}", &BARE[..3]), &m.mnt);
    assert_ne!(short.code(), Some(0));
    assert!(short.stderr.contains("No such file"), "{}", short.stderr);
    assert_ne!(sh("ls .id/zzzzzz", &m.mnt).code(), Some(0));
    assert_eq!(sh("ls -A .id", &m.mnt).ok().stdout, "");
}
