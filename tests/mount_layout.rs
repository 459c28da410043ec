//! The layout contract (docs/LAYOUT.md) checked through a real mount, with the
//! programs people use on it: `grep -r`, `find`, `cat`, `readlink`, `ls`, `cd`,
//! `echo`/`printf`/`cat`/`tee` into `reply`, `ln -s`/`rm` in `labels/`.
//!
//! Expectations come from the session file itself (parsed here, independently of the
//! product), from Pi's goldens in tests/fixtures/golden, and, only where ids exist in
//! memory alone (v1 files), from the library's index.
//!
//! Every wait has a deadline (`wait_until`); nothing sleeps blindly.

mod common;
mod goldens;

use common::*;
use serde_json::Value;
use sessionfs::model::Session;
use sessionfs::view::escape_id;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

// ---------------------------------------------------------------------------------
// Helpers.

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn damaged(name: &str) -> PathBuf {
    repo().join("tests/fixtures/damaged").join(name)
}

/// Mounts a copy of any file (fixtures outside `tests/fixtures/sessions`, damaged
/// files, the demo).
fn mount_copy(src: &Path, args: &[&str]) -> Mount {
    let dir = tempdir();
    let file = dir.path().join(src.file_name().unwrap());
    fs::copy(src, &file).unwrap_or_else(|e| panic!("copying {}: {e}", src.display()));
    Mount::start(dir, file, args)
}

/// Mounts a file with the given contents.
fn mount_bytes(name: &str, bytes: &[u8]) -> Mount {
    let dir = tempdir();
    let file = dir.path().join(name);
    fs::write(&file, bytes).unwrap();
    Mount::start(dir, file, &[])
}

/// `sh -c SCRIPT` in `cwd` with extra environment variables.
fn sh_env(script: &str, cwd: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("sh");
    c.arg("-c").arg(script).current_dir(cwd);
    for (k, v) in env {
        c.env(k, v);
    }
    run_command(c)
}

/// Panics unless the command exited 0 and wrote nothing to stderr.
#[track_caller]
fn clean(out: Output, what: &str) -> Output {
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{what}: expected exit 0 and no error output, got {:?}, stderr:\n{}",
        out.status,
        out.stderr
    );
    out
}

/// As `clean`, but exit status 1 ("nothing found", for grep) is fine too.
#[track_caller]
fn clean_grep(out: Output, what: &str) -> Output {
    assert!(
        matches!(out.code(), Some(0 | 1)) && out.stderr.is_empty(),
        "{what}: expected exit 0 or 1 and no error output, got {:?}, stderr:\n{}",
        out.status,
        out.stderr
    );
    out
}

fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

fn file_lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

/// The entries of a session file with ids (v2/v3), in file order, as
/// `(id, parentId)`; the header, blank and malformed lines skipped.
fn parse_entries(file: &Path) -> Vec<(String, Option<String>)> {
    let text = fs::read_to_string(file).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] != "session")
        .map(|v| {
            (
                v["id"].as_str().expect("an entry without id").to_owned(),
                v["parentId"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// For every entry, the ids from its root down to it.
fn id_paths(entries: &[(String, Option<String>)]) -> HashMap<String, Vec<String>> {
    let parent: HashMap<&str, Option<&str>> = entries
        .iter()
        .map(|(i, p)| (i.as_str(), p.as_deref()))
        .collect();
    let mut out = HashMap::new();
    for (id, _) in entries {
        let mut chain = vec![id.clone()];
        let mut cur = parent[id.as_str()];
        while let Some(p) = cur {
            chain.push(p.to_owned());
            cur = parent[p];
        }
        chain.reverse();
        out.insert(id.clone(), chain);
    }
    out
}

/// For every entry, its directory in the nested tree relative to the mount: `./A/B/C`.
fn nested_dirs(entries: &[(String, Option<String>)]) -> HashMap<String, String> {
    id_paths(entries)
        .into_iter()
        .map(|(id, chain)| (id, format!("./{}", chain.join("/"))))
        .collect()
}

/// Every entry's content file name (its KIND), from the session file: the message
/// role for `message` entries, the entry type otherwise (LAYOUT). Listing `.id/ID/`
/// would tell too, but costs a context computation per entry (exact sizes).
fn kinds(file: &Path) -> HashMap<String, String> {
    fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] != "session")
        .map(|v| {
            let kind = match v["type"].as_str().unwrap() {
                "message" => v["message"]["role"].as_str().unwrap().to_owned(),
                t => t.to_owned(),
            };
            (v["id"].as_str().unwrap().to_owned(), kind)
        })
        .collect()
}

/// The content files of `.id/ID/`: the regular files that are neither `reply`, a
/// derived view nor an image.
fn content_files(m: &Mount, id: &str) -> Vec<String> {
    let dir = m.path(&format!(".id/{id}"));
    fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            ![
                "reply",
                "fork",
                "context",
                "context.json",
                "entry.json",
                "cost",
                "cost.json",
            ]
            .contains(&n.as_str())
                && !n.starts_with("image-")
        })
        .collect()
}

/// The number of entries `sessionfs check --json` counts in `file`.
fn check_entry_count(file: &Path) -> usize {
    let out = sessionfs(
        &[
            std::ffi::OsStr::new("check"),
            "--json".as_ref(),
            file.as_os_str(),
        ],
        file.parent().unwrap(),
    );
    let v = json(out.stdout.trim());
    v["entries"]
        .as_u64()
        .unwrap_or_else(|| panic!("no entry count in {v}")) as usize
}

/// `grep -rl WORD .` at the mount's root: every entry's content is found at most once,
/// at its own nested path, never through `.id/` or a symlink, and exactly the entries
/// whose `.id/ID/KIND` file `grep -l` finds are found. Returns the number of hits.
fn check_grep_once(m: &Mount, entries: &[(String, Option<String>)], word: &str) -> usize {
    let grep = format!("LC_ALL=C grep -rlF -e '{word}' .");
    let out = clean_grep(sh(&grep, &m.mnt), &grep);
    let dirs = nested_dirs(entries);
    let kinds = kinds(&m.file);
    let mut found = BTreeSet::new();
    let mut seen: HashMap<&str, &str> = HashMap::new();
    let mut root_files = BTreeSet::new();
    for path in out.stdout.lines() {
        let rel = path
            .strip_prefix("./")
            .unwrap_or_else(|| panic!("grep printed {path:?}"));
        let comps: Vec<&str> = rel.split('/').collect();
        assert!(
            !comps.contains(&".id"),
            "`{grep}` went into .id/, which lists nothing: {path}"
        );
        let file = *comps.last().unwrap();
        assert!(
            !["context", "context.json", "entry.json"].contains(&file),
            "`{grep}` read a derived view (a symlink it must not follow): {path}"
        );
        if comps.len() == 1 {
            assert!(
                ["tree", "session.json", "name"].contains(&file),
                "unexpected file at the mount's root: {path}"
            );
            root_files.insert(file);
            continue;
        }
        let id = comps[comps.len() - 2];
        let dir = &path[..path.len() - file.len() - 1];
        assert_eq!(
            dirs.get(id).map(String::as_str),
            Some(dir),
            "`{grep}` found {path}, which is not the nested path of entry {id}"
        );
        if let Some(before) = seen.insert(id, path) {
            panic!("`{grep}` read entry {id}'s content twice: {before} and {path}");
        }
        assert!(
            file == kinds[id] || file.starts_with("image-"),
            "`{grep}` found {path}: entry {id}'s content file is {}",
            kinds[id]
        );
        if file == kinds[id] {
            found.insert(id.to_owned());
        }
    }
    // The same question asked of every entry's .id/ID/KIND file, one by one.
    let mut c = Command::new("grep");
    c.env("LC_ALL", "C")
        .args(["-lF", "-e", word])
        .args(
            entries
                .iter()
                .map(|(id, _)| format!(".id/{id}/{}", kinds[id])),
        )
        .current_dir(&m.mnt);
    let out = clean_grep(run_command(c), "grep -l over .id/ID/KIND");
    let expected: BTreeSet<String> = out
        .stdout
        .lines()
        .map(|l| l.split('/').nth(1).unwrap().to_owned())
        .collect();
    let missing: Vec<_> = expected.difference(&found).collect();
    let extra: Vec<_> = found.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "`{grep}`: entries whose KIND file holds {word:?} but grep -r missed: {missing:?}; \
         found by grep -r but not in .id/ID/KIND: {extra:?}"
    );
    let tree = fs::read_to_string(m.path("tree")).unwrap();
    assert_eq!(
        root_files.contains("tree"),
        tree.contains(word),
        "`{grep}`: tree listed {} but it {} {word:?}",
        root_files.contains("tree"),
        if tree.contains(word) {
            "holds"
        } else {
            "lacks"
        }
    );
    found.len()
}

/// `find .` at the mount's root: no errors, no duplicate paths, and every entry
/// exactly once as a directory, at its nested path.
fn check_find(m: &Mount, entries: &[(String, Option<String>)]) {
    let all = clean(run("find", &["."], &m.mnt), "find .");
    let mut paths = HashSet::new();
    for p in all.stdout.lines() {
        assert!(paths.insert(p), "find printed {p} twice");
        assert!(!p.starts_with("./.id/"), "find went into .id/: {p}");
    }
    let files = clean(run("find", &[".", "-type", "f"], &m.mnt), "find -type f");
    let mut seen = HashSet::new();
    for p in files.stdout.lines() {
        assert!(seen.insert(p), "find -type f printed {p} twice");
        let name = p.rsplit('/').next().unwrap();
        assert!(
            !["context", "context.json", "entry.json"].contains(&name),
            "{p} is a regular file; derived views must be symlinks"
        );
    }
    let d = clean(run("find", &[".", "-type", "d"], &m.mnt), "find -type d");
    let fixed = [".", "./.id", "./branches", "./labels"];
    let entry_dirs: Vec<&str> = d.stdout.lines().filter(|p| !fixed.contains(p)).collect();
    let want = nested_dirs(entries);
    let count = check_entry_count(&m.file);
    assert_eq!(
        entry_dirs.len(),
        count,
        "find -type d shows {} entry directories; `sessionfs check` counts {count} entries",
        entry_dirs.len()
    );
    assert_eq!(entry_dirs.len(), entries.len());
    let mut by_id: HashMap<&str, &str> = HashMap::new();
    for p in &entry_dirs {
        let id = p.rsplit('/').next().unwrap();
        if let Some(other) = by_id.insert(id, p) {
            panic!("entry {id} appears twice as a directory: {other} and {p}");
        }
        assert_eq!(
            want.get(id).map(String::as_str),
            Some(*p),
            "directory {p} is not where entry {id} belongs"
        );
    }
    for (id, _) in entries {
        assert!(
            by_id.contains_key(id.as_str()),
            "entry {id} has no directory"
        );
    }
}

/// A chain of `cd -P` commands reaching `chain` (ids from a root down) from the mount
/// root, in pieces short enough for `chdir` (a full path may exceed PATH_MAX). `-P`:
/// a logical `cd` would chdir to the whole, too long, `$PWD/dir`.
fn cd_script(chain: &[String]) -> String {
    chain
        .chunks(300)
        .map(|c| format!("cd -P '{}' || exit 1\n", c.join("/")))
        .collect()
}

// ---------------------------------------------------------------------------------
// 1. grep -r: every content hit exactly once.

#[test]
fn grep_r_reads_each_entrys_content_once_small() {
    let m = Mount::new("small.jsonl");
    let entries = parse_entries(&m.file);
    // The KIND names used below are the ones the mount shows.
    let kinds = kinds(&m.file);
    for (id, _) in &entries {
        assert_eq!(content_files(&m, id), [kinds[id].as_str()], ".id/{id}/");
    }
    let mut total = 0;
    for word in ["summary", "cargo", "Overloaded", "Value", "mount", "oracle"] {
        total += check_grep_once(&m, &entries, word);
    }
    assert!(total > 20, "the words were found only {total} times");
}

#[test]
fn grep_r_reads_each_entrys_content_once_medium() {
    let m = Mount::new("medium.jsonl");
    let entries = parse_entries(&m.file);
    let n = check_grep_once(&m, &entries, "inode");
    assert!(n > 50, "only {n} entries hold \"inode\"");
}

#[test]
fn grep_r_at_the_root_exits_cleanly_and_finds_the_tree() {
    let m = Mount::new("small.jsonl");
    // Plain `grep -r` as a user types it: exit 0, nothing on stderr.
    let out = clean(run("grep", &["-r", "branch-0", "."], &m.mnt), "grep -r");
    assert!(
        out.stdout.lines().any(|l| l.starts_with("./tree:")),
        "the tree shows the label branch-0, but grep -r did not find it there:\n{}",
        out.stdout
    );
    // The mount point given as an absolute path works the same.
    let mnt = m.mnt.to_str().unwrap();
    let out = clean(
        run("grep", &["-rl", "branch-0", mnt], m.dir()),
        "grep -rl MNT",
    );
    assert!(
        out.stdout.lines().any(|l| l == format!("{mnt}/tree")),
        "{}",
        out.stdout
    );
}

// ---------------------------------------------------------------------------------
// 2. find: every entry once as a directory.

#[test]
fn find_lists_every_entry_once_as_a_directory_small() {
    let m = Mount::new("small.jsonl");
    check_find(&m, &parse_entries(&m.file));
}

#[test]
fn find_lists_every_entry_once_as_a_directory_bushy() {
    let m = Mount::new("bushy.jsonl");
    check_find(&m, &parse_entries(&m.file));
}

// ---------------------------------------------------------------------------------
// 3. Deep sessions.

/// `find` and `grep -r` over the whole deep mount, every id reachable under `.id/`
/// with the right `parent` and child links, and the deepest entry's `context` link
/// followed from inside its directory, reached by relative `cd`s.
fn check_deep(name: &str, levels: usize) {
    let m = Mount::new(name);
    let entries = parse_entries(&m.file);
    check_find(&m, &entries);
    clean_grep(sh("LC_ALL=C grep -r x . > /dev/null", &m.mnt), "grep -r");

    // Every id is reachable directly, and its links name its parent and children.
    let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
    for (id, parent) in &entries {
        let dir = m.path(&format!(".id/{id}"));
        let md = fs::metadata(&dir).unwrap_or_else(|e| panic!("stat {}: {e}", dir.display()));
        assert!(md.is_dir(), "{} is not a directory", dir.display());
        let link = fs::read_link(dir.join("parent"));
        match parent {
            Some(p) => {
                assert_eq!(
                    link.as_ref().ok().map(|l| l.to_string_lossy().into_owned()),
                    Some(format!("../{p}")),
                    "readlink .id/{id}/parent"
                );
                children.entry(p).or_default().push(id);
            }
            None => assert!(
                link.is_err(),
                ".id/{id} is a root but has parent -> {link:?}"
            ),
        }
    }
    for (p, kids) in &children {
        for k in kids {
            let l = fs::read_link(m.path(&format!(".id/{p}/{k}")))
                .unwrap_or_else(|e| panic!("readlink .id/{p}/{k}: {e}"));
            assert_eq!(l, Path::new(&format!("../{k}")), "readlink .id/{p}/{k}");
        }
    }

    // The deepest entry, reached by relative cds.
    let paths = id_paths(&entries);
    let chain = paths.values().max_by_key(|c| c.len()).unwrap();
    assert_eq!(chain.len(), levels, "the deepest path of {name}");
    let deepest = chain.last().unwrap();
    let script = format!(
        "{}readlink context\nhead -n 1 context\ncksum < context\nreadlink context.json\n",
        cd_script(chain)
    );
    let out = clean(sh(&script, &m.mnt), "cd to the deepest entry");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let up = "../".repeat(levels);
    // LAYOUT: relative targets while they fit in 4095 bytes; at this depth they do.
    assert_eq!(
        lines[0],
        format!("{up}.id/{deepest}/context"),
        "readlink context"
    );
    assert_eq!(
        lines[3],
        format!("{up}.id/{deepest}/context.json"),
        "readlink context.json"
    );
    assert!(
        lines[1].starts_with("## "),
        "context starts with {:?}",
        lines[1]
    );
    let direct = clean(
        sh(&format!("cksum < .id/{deepest}/context"), &m.mnt),
        "cksum .id/ID/context",
    );
    assert_eq!(
        lines[2],
        direct.stdout.trim_end(),
        "the context link at the deepest entry reads differently from .id/{deepest}/context"
    );
}

#[test]
fn deep_medium_find_grep_and_every_id_reachable() {
    check_deep("medium.jsonl", 577);
}

#[test]
fn deep_linear_find_grep_and_every_id_reachable() {
    check_deep("linear.jsonl", 807);
}

/// A chain of `n` user messages, each the child of the one before.
fn chain_session(n: usize) -> (Vec<u8>, Vec<String>) {
    let mut s = String::from(
        r#"{"type":"session","version":3,"id":"0190c0de-0000-7000-8000-0000000000aa","timestamp":"2026-01-05T09:00:00.000Z","cwd":"/tmp/deep"}"#,
    );
    s.push('\n');
    let mut ids = Vec::new();
    for i in 0..n {
        let id = format!("d{i:07x}");
        let parent = match ids.last() {
            Some(p) => format!("\"{p}\""),
            None => "null".to_owned(),
        };
        let ms = 1_767_603_600_000u64 + i as u64;
        s.push_str(&format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-05T09:00:00.000Z","message":{{"role":"user","content":[{{"type":"text","text":"level {i}"}}],"timestamp":{ms}}}}}"#
        ));
        s.push('\n');
        ids.push(id);
    }
    (s.into_bytes(), ids)
}

#[test]
fn very_deep_context_links_fall_back_to_absolute_targets() {
    // LAYOUT: where the relative target (3 bytes a level) would pass the kernel's
    // 4095-byte symlink limit, the target is the absolute path through the mount.
    let (bytes, ids) = chain_session(1400);
    let m = mount_bytes("deep.jsonl", &bytes);
    let mnt = m.mnt.to_str().unwrap();

    // At 1000 levels the relative target still fits.
    let mid = &ids[999];
    let script = format!("{}readlink context\n", cd_script(&ids[..1000]));
    let out = clean(sh(&script, &m.mnt), "cd 1000 levels down");
    assert_eq!(
        out.stdout.trim_end(),
        format!("{}.id/{mid}/context", "../".repeat(1000)),
        "readlink context at level 1000"
    );

    // At 1400 levels it would not: absolute, and it resolves.
    let last = ids.last().unwrap();
    let script = format!(
        "{}readlink context\nreadlink entry.json\ncat context | head -n 2\ncat user\n",
        cd_script(&ids)
    );
    let out = clean(sh(&script, &m.mnt), "cd 1400 levels down");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        format!("{mnt}/.id/{last}/context"),
        "readlink context"
    );
    assert_eq!(
        lines[1],
        format!("{mnt}/.id/{last}/entry.json"),
        "readlink entry.json"
    );
    assert_eq!(lines[2], "## user", "first line of the deep context");
    assert_eq!(lines[3], "level 0", "second line of the deep context");
    assert_eq!(lines[4], "level 1399", "the deepest entry's own content");
}

// ---------------------------------------------------------------------------------
// 4. context.json equals Pi's messages.

/// For every entry of the golden's session, `cat .id/ID/context.json` is, byte for
/// byte, Pi 1.6.0's `convertToLlm(buildSessionContext(entries, ID))` written as the
/// golden says (each message as `JSON.stringify` writes it), and `cat .id/ID/context`
/// works (empty exactly when there are no messages). One `sh` runs `cat` for all of
/// them.
fn check_goldens(m: &Mount, golden_name: &str) {
    let g = goldens::Goldens::load(golden_name);
    let s = Session::open(&m.file).unwrap();
    let leaf = fs::read_link(m.path("leaf")).unwrap();
    let mut ids = Vec::new();
    for t in &g.targets {
        let idx = s
            .entries()
            .iter()
            .position(|e| e.line == t.line && e.is_node())
            .unwrap_or_else(|| panic!("{golden_name}: no entry on line {}", t.line))
            as u32;
        let id = escape_id(&s.id_string(idx));
        if t.target.is_none() {
            assert_eq!(leaf, Path::new(&format!(".id/{id}")), "{golden_name}: leaf");
        } else if !s.is_v1() {
            assert_eq!(t.target.as_deref(), Some(id.as_str()), "{golden_name}: id");
        }
        ids.push(id);
    }
    let script = r#"for id; do cat ".id/$id/context.json" && printf '\0' && wc -c < ".id/$id/context" && printf '\0' || exit 1; done"#;
    // In chunks, so that each `sh` finishes well within the harness's deadline.
    let mut parts: Vec<String> = Vec::new();
    for chunk in ids.chunks(100) {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(script)
            .arg("sh")
            .args(chunk)
            .current_dir(&m.mnt);
        let out = clean(run_command(c), &format!("{golden_name}: cat every context"));
        let mut p: Vec<String> = out.stdout.split('\0').map(str::to_string).collect();
        assert_eq!(p.pop().as_deref(), Some(""), "{golden_name}: outputs");
        parts.extend(p);
    }
    assert_eq!(parts.len(), 2 * ids.len(), "{golden_name}: outputs");
    for (k, t) in g.targets.iter().enumerate() {
        let what = format!(
            "{golden_name}: entry {} on line {} (golden line {})",
            ids[k],
            t.line,
            k + 1
        );
        let want = g.context_json(t);
        if parts[2 * k] != want {
            let got: Vec<&str> = parts[2 * k].lines().collect();
            let want: Vec<&str> = want.lines().collect();
            let i = got.iter().zip(&want).position(|(a, b)| a != b);
            panic!(
                "{what}: context.json differs from Pi's ({} vs {} lines; first difference at line {i:?}:\n{:?}\n{:?})",
                got.len(),
                want.len(),
                i.and_then(|i| got.get(i)),
                i.and_then(|i| want.get(i))
            );
        }
        let text_len: usize = parts[2 * k + 1].trim().parse().unwrap();
        assert_eq!(
            text_len == 0,
            t.messages.is_empty(),
            "{what}: context is {text_len} bytes for {} messages",
            t.messages.len()
        );
    }
}

#[test]
fn context_json_equals_pi_small() {
    let m = Mount::new("small.jsonl");
    check_goldens(&m, "small");
    // The nested symlinks read the same as .id/: spot-check every entry's.
    let entries = parse_entries(&m.file);
    for (id, dir) in nested_dirs(&entries) {
        let via_link = fs::read(m.mnt.join(&dir).join("context.json")).unwrap();
        let direct = fs::read(m.path(&format!(".id/{id}/context.json"))).unwrap();
        assert!(
            via_link == direct,
            "{dir}/context.json differs from .id/{id}/"
        );
    }
}

/// Every entry of every session written by Pi 1.6.0 (its tour, the real sessions, the
/// demo) and of the sessions whose latest compaction keeps an older one (medium,
/// legacy-v1-b, and Pi's own edge case) reads through the mount as Pi 1.6.0 builds it.
#[test]
fn context_json_equals_pi_16_for_every_entry() {
    let mut names: Vec<String> = goldens::names()
        .into_iter()
        .filter(|n| n.starts_with("real-1.6-") || n.starts_with("1-6-"))
        .collect();
    assert!(names.len() >= 19, "{names:?}");
    names.extend(
        [
            "tour",
            "demo",
            "medium",
            "legacy-v1-b",
            "second-compaction-keeps-range-containing-first",
            "legacy-v1",
            "legacy-v2",
        ]
        .map(String::from),
    );
    for name in &names {
        let m = mount_copy(&goldens::session_file(name), &[]);
        check_goldens(&m, name);
    }
}

// ---------------------------------------------------------------------------------
// 5. reply.

/// An inner entry of small.jsonl (it has a child) and its nested directory.
const INNER: &str = "65ebe60d";
const INNER_DIR: &str = "e8dfd932/87720854/8e38ccf6/65ebe60d";

fn ls(dir: &Path) -> BTreeSet<String> {
    run("ls", &["-1a"], dir)
        .ok()
        .stdout
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Runs `script` in `cwd` and checks it appended exactly one user message under
/// `parent` with `text`, leaving the earlier bytes alone and one new directory in
/// `parent_dir`, visible as soon as the command returned. Returns the new id.
#[track_caller]
fn one_reply(
    m: &Mount,
    parent_dir: &Path,
    parent: &str,
    out: Output,
    before: &[u8],
    text: &str,
) -> String {
    let what = format!("{out:?}");
    assert!(out.status.success(), "the write failed: {what}");
    let after = fs::read(&m.file).unwrap();
    assert!(
        after.starts_with(before),
        "the file's earlier bytes changed"
    );
    let added = std::str::from_utf8(&after[before.len()..]).unwrap();
    assert_eq!(
        added.matches('\n').count(),
        1,
        "expected exactly one new line, got:\n{}",
        &added[..added.len().min(2000)]
    );
    assert!(added.ends_with('\n'));
    let e = json(added.trim_end_matches('\n'));
    assert_eq!(keys(&e), ["type", "id", "parentId", "timestamp", "message"]);
    assert_eq!(keys(&e["message"]), ["role", "content", "timestamp"]);
    assert_eq!(keys(&e["message"]["content"][0]), ["type", "text"]);
    assert_eq!(e["type"], "message");
    assert_eq!(e["parentId"], parent);
    assert_eq!(e["message"]["role"], "user");
    assert_eq!(e["message"]["content"].as_array().unwrap().len(), 1);
    assert_eq!(e["message"]["content"][0]["type"], "text");
    assert!(e["message"]["timestamp"].is_u64(), "{e}");
    let ts = e["timestamp"].as_str().unwrap();
    assert!(ts.len() == 24 && ts.ends_with('Z'), "timestamp {ts}");
    let got = e["message"]["content"][0]["text"].as_str().unwrap();
    if got != text {
        let at = got
            .chars()
            .zip(text.chars())
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(text.len()));
        panic!(
            "the text differs at char {at}: got {} chars, wrote {} chars",
            got.chars().count(),
            text.chars().count()
        );
    }
    let id = e["id"].as_str().unwrap().to_owned();
    assert!(
        ls(parent_dir).contains(&id),
        "the new entry {id} is not listed in {} right after the write",
        parent_dir.display()
    );
    assert!(
        id.len() == 8
            && id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "new id {id:?} is not 8 lowercase hex digits"
    );
    id
}

#[test]
fn echo_into_an_inner_reply_adds_exactly_one_child_directory() {
    let m = Mount::new("small.jsonl");
    let dir = m.path(INNER_DIR);
    let names_before = ls(&dir);
    let before = fs::read(&m.file).unwrap();
    let out = sh("echo 'a second thought' > reply", &dir);
    let id = one_reply(&m, &dir, INNER, out, &before, "a second thought");
    // No waiting: visible when the command has returned.
    let names_after = ls(&dir);
    let new: Vec<_> = names_after.difference(&names_before).collect();
    assert_eq!(
        new,
        [&id],
        "ls {INNER_DIR} before: {names_before:?} after: {names_after:?}"
    );
    assert!(names_before.is_subset(&names_after));
    let out = run("cat", &[format!("{id}/user")], &dir).ok();
    assert_eq!(out.stdout, "a second thought\n");
    let l = run("readlink", &[format!(".id/{id}/parent")], &m.mnt).ok();
    assert_eq!(l.stdout.trim_end(), format!("../{INNER}"));
}

/// 40 KB of text with multi-byte characters and newlines, not ending in a newline.
fn big_text(bytes: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < bytes {
        s.push_str(&format!(
            "line {i}: grüße, 日本語, emoji 🦀, tab\there, quote \" and \\ backslash\n"
        ));
        i += 1;
    }
    s.push_str("the end");
    s
}

#[test]
fn printf_of_a_40_kb_message_becomes_one_entry_with_the_exact_text() {
    let m = Mount::new("small.jsonl");
    let dir = m.path(INNER_DIR);
    let msg = big_text(40_000);
    assert!(msg.len() >= 40_000);
    let before = fs::read(&m.file).unwrap();
    let out = sh_env("printf '%s' \"$MSG\" > reply", &dir, &[("MSG", &msg)]);
    one_reply(&m, &dir, INNER, out, &before, &msg);
}

#[test]
fn cat_of_a_200_kb_file_becomes_one_entry_also_through_a_pipe() {
    let m = Mount::new("small.jsonl");
    let dir = m.path(INNER_DIR);
    let msg = big_text(200_000);
    let big = m.dir().join("big.txt");
    fs::write(&big, &msg).unwrap();
    let big = big.to_str().unwrap();
    for script in [
        format!("cat '{big}' > reply"),
        format!("cat '{big}' | cat > reply"),
    ] {
        let before = fs::read(&m.file).unwrap();
        let out = sh(&script, &dir);
        one_reply(&m, &dir, INNER, out, &before, &msg);
    }
}

#[test]
fn append_redirect_and_tee_each_add_one_entry() {
    let m = Mount::new("small.jsonl");
    let dir = m.path(INNER_DIR);
    let before = fs::read(&m.file).unwrap();
    let out = sh("echo appended >> reply", &dir);
    one_reply(&m, &dir, INNER, out, &before, "appended");
    let before = fs::read(&m.file).unwrap();
    let out = sh("echo teed | tee reply", &dir);
    assert_eq!(out.stdout, "teed\n", "tee's own output");
    one_reply(&m, &dir, INNER, out, &before, "teed");
}

// ---------------------------------------------------------------------------------
// 6. labels/.

/// The last line of the file, parsed.
fn last_entry(m: &Mount) -> Value {
    json(file_lines(&m.file).last().unwrap())
}

fn last_id(m: &Mount) -> String {
    last_entry(m)["id"].as_str().unwrap().to_owned()
}

#[test]
fn ln_s_an_id_into_labels_appends_a_label_and_rm_clears_it() {
    let m = Mount::new("small.jsonl");
    let prev = last_id(&m);
    let before = fs::read(&m.file).unwrap();
    clean(
        run("ln", &["-s", INNER, "labels/mine"], &m.mnt),
        "ln -s ID labels/mine",
    );
    let after = fs::read(&m.file).unwrap();
    assert!(after.starts_with(&before), "earlier bytes changed");
    assert_eq!(
        file_lines(&m.file).len(),
        before.iter().filter(|&&b| b == b'\n').count() + 1
    );
    let e = last_entry(&m);
    assert_eq!(e["type"], "label", "{e}");
    assert_eq!(e["targetId"], INNER, "{e}");
    assert_eq!(e["label"], "mine", "{e}");
    assert_eq!(
        e["parentId"],
        prev.as_str(),
        "the label hangs under the last entry: {e}"
    );
    let out = run("ls", &["labels"], &m.mnt).ok();
    assert!(
        out.stdout.lines().any(|l| l == "mine"),
        "ls labels: {}",
        out.stdout
    );
    let out = run("readlink", &["labels/mine"], &m.mnt).ok();
    assert_eq!(out.stdout, format!("../.id/{INNER}\n"));
    let out = run("cat", &["labels/mine/assistant"], &m.mnt).ok();
    assert!(!out.stdout.is_empty());

    let prev = last_id(&m);
    clean(run("rm", &["labels/mine"], &m.mnt), "rm labels/mine");
    let e = last_entry(&m);
    assert_eq!(e["type"], "label", "{e}");
    assert_eq!(e["targetId"], INNER, "{e}");
    assert!(
        e.get("label").is_none(),
        "a clearing label has no label key: {e}"
    );
    assert_eq!(e["parentId"], prev.as_str(), "{e}");
    let out = run("ls", &["labels"], &m.mnt).ok();
    assert!(
        !out.stdout.lines().any(|l| l == "mine"),
        "ls labels: {}",
        out.stdout
    );
    assert!(!m.path("labels/mine").exists());
}

#[test]
fn ln_s_pwd_from_inside_an_entry_labels_that_entry() {
    let m = Mount::new("small.jsonl");
    let prev = last_id(&m);
    let out = sh_env(
        "ln -s \"$PWD\" \"$MNT/labels/here\" && ls \"$MNT/labels\"",
        &m.path(INNER_DIR),
        &[("MNT", m.mnt.to_str().unwrap())],
    );
    let out = clean(out, "ln -s \"$PWD\" labels/here");
    assert!(
        out.stdout.lines().any(|l| l == "here"),
        "ls labels: {}",
        out.stdout
    );
    let e = last_entry(&m);
    assert_eq!(e["type"], "label", "{e}");
    assert_eq!(e["targetId"], INNER, "{e}");
    assert_eq!(e["label"], "here", "{e}");
    assert_eq!(e["parentId"], prev.as_str(), "{e}");
    let out = run("readlink", &["labels/here"], &m.mnt).ok();
    assert_eq!(out.stdout, format!("../.id/{INNER}\n"));
    // The tree shows the label on the entry.
    let tree = fs::read_to_string(m.path("tree")).unwrap();
    let line = tree.lines().find(|l| l.contains(INNER)).unwrap();
    assert!(line.contains("here"), "tree line for {INNER}: {line}");
}

#[test]
fn ln_s_onto_a_label_in_use_fails_and_appends_nothing() {
    let m = Mount::new("small.jsonl");
    let before = fs::read(&m.file).unwrap();
    // alt-2 exists in small.jsonl. With -n, ln makes the link itself and sees EEXIST.
    let out = run("ln", &["-sn", INNER, "labels/alt-2"], &m.mnt);
    assert!(!out.status.success(), "{out:?}");
    assert!(out.stderr.contains("File exists"), "{}", out.stderr);
    // Without -n, ln follows the existing link to the labelled entry's directory and
    // tries to create the link in there; that fails too.
    let out = run("ln", &["-s", INNER, "labels/alt-2"], &m.mnt);
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(
        fs::read(&m.file).unwrap(),
        before,
        "a failed ln appended something"
    );
    let out = run("readlink", &["labels/alt-2"], &m.mnt).ok();
    assert_eq!(out.stdout, "../.id/22776346\n", "the label moved");
}

#[test]
fn ln_s_to_an_unknown_entry_fails_and_appends_nothing() {
    let m = Mount::new("small.jsonl");
    let before = fs::read(&m.file).unwrap();
    let out = run("ln", &["-s", "nonexistent", "labels/x"], &m.mnt);
    assert!(!out.status.success(), "{out:?}");
    assert!(out.stderr.contains("labels/x"), "{}", out.stderr);
    assert_eq!(fs::read(&m.file).unwrap(), before);
    let out = run("ls", &["labels"], &m.mnt).ok();
    assert!(
        !out.stdout.lines().any(|l| l == "x"),
        "ls labels: {}",
        out.stdout
    );
}

// ---------------------------------------------------------------------------------
// 7. name.

#[test]
fn writing_name_appends_session_info_and_cat_shows_it() {
    let m = Mount::new("small.jsonl");
    assert_eq!(
        run("cat", &["name"], &m.mnt).ok().stdout,
        "Oracle session 1\n"
    );
    let prev = last_id(&m);
    let before = fs::read(&m.file).unwrap();
    sh("echo \"new name\" > name", &m.mnt).ok();
    assert_eq!(run("cat", &["name"], &m.mnt).ok().stdout, "new name\n");
    assert!(fs::read(&m.file).unwrap().starts_with(&before));
    let e = last_entry(&m);
    assert_eq!(e["type"], "session_info", "{e}");
    assert_eq!(e["name"], "new name", "{e}");
    assert_eq!(e["parentId"], prev.as_str(), "{e}");
    // Line breaks become spaces and the name is trimmed, as Pi does.
    sh("printf '  two\\nlines \\r\\n' > name", &m.mnt).ok();
    assert_eq!(run("cat", &["name"], &m.mnt).ok().stdout, "two lines\n");
    assert_eq!(last_entry(&m)["name"], "two lines");
    // The tree's session_info line follows.
    let tree = fs::read_to_string(m.path("tree")).unwrap();
    assert!(tree.contains("session_info two lines"), "{tree}");
}

// ---------------------------------------------------------------------------------
// 8. Write errors the shell shows (mount_basic covers bash `echo` at the root reply).

#[test]
fn read_only_mount_refuses_every_kind_of_write() {
    let m = Mount::with_args("small.jsonl", &["--read-only"]);
    let before = fs::read(&m.file).unwrap();
    for (cmd, args) in [
        ("sh", vec!["-c", "echo hi > reply"]),
        ("sh", vec!["-c", "echo hi >> e8dfd932/reply"]),
        ("sh", vec!["-c", "echo n > name"]),
        ("ln", vec!["-s", INNER, "labels/z"]),
        ("rm", vec!["labels/alt-2"]),
    ] {
        let out = run(cmd, &args, &m.mnt);
        assert!(!out.status.success(), "{cmd} {args:?} succeeded");
        assert!(
            out.stderr.contains("Read-only file system"),
            "{cmd} {args:?}: {}",
            out.stderr
        );
    }
    assert_eq!(fs::read(&m.file).unwrap(), before);
}

#[test]
fn a_v1_file_shows_no_write_bit_and_refuses_writes_at_open() {
    let m = Mount::new("legacy-v1.jsonl");
    let before = fs::read(&m.file).unwrap();
    let root = fs::read_link(m.path("leaf")).unwrap();
    // Nothing can be written to it: no write bit, and the open fails (the mount itself
    // is not read-only, so not EROFS).
    let modes = sh(
        &format!("stat -c %A name reply '{}/reply'", root.display()),
        &m.mnt,
    )
    .ok();
    assert!(
        modes.stdout.lines().all(|l| l == "-r--r--r--"),
        "{}",
        modes.stdout
    );
    let out = sh(&format!("echo hi > '{}/reply'", root.display()), &m.mnt);
    assert!(!out.status.success(), "{out:?}");
    assert!(out.stderr.contains("Permission denied"), "{}", out.stderr);
    let out = sh("echo n > name", &m.mnt);
    assert!(out.stderr.contains("Permission denied"), "{}", out.stderr);
    assert_eq!(fs::read(&m.file).unwrap(), before);
}

#[test]
fn invalid_utf8_fails_in_write_and_appends_nothing() {
    let m = Mount::new("small.jsonl");
    let before = fs::read(&m.file).unwrap();
    // bash reports write(2)'s errno.
    let out = run(
        "bash",
        &["-c", &format!("printf '\\377' > {INNER_DIR}/reply")],
        &m.mnt,
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(
        out.stderr
            .contains("Invalid or incomplete multibyte or wide character"),
        "{}",
        out.stderr
    );
    // dash (sh) fails too, with a generic message.
    let out = sh(&format!("printf '\\377' > {INNER_DIR}/reply"), &m.mnt);
    assert!(!out.status.success(), "{out:?}");
    // Invalid bytes after valid ones, in a later write.
    let out = run(
        "bash",
        &[
            "-c",
            &format!("{{ printf 'ok so far'; printf '\\377\\376'; }} > {INNER_DIR}/reply"),
        ],
        &m.mnt,
    );
    assert!(
        out.stderr.contains("Invalid or incomplete multibyte"),
        "{}",
        out.stderr
    );
    assert_eq!(fs::read(&m.file).unwrap(), before, "something was appended");
}

/// A reply is text, or nothing: a NUL is refused as bytes that are not UTF-8 are
/// (`EILSEQ` from write(2)), a reply of whitespace only fails its close with `ENOMSG`
/// (an agent's prompt box ignores a blank prompt), and each refusal says why in the
/// log. `name` refuses a NUL the same way.
#[test]
fn a_nul_or_a_blank_reply_appends_nothing_and_says_why() {
    let m = Mount::new("small.jsonl");
    let before = fs::read(&m.file).unwrap();
    let reply = m.path(&format!("{INNER_DIR}/reply"));
    let out = run(
        "bash",
        &["-c", &format!("printf 'a\\000b' > {INNER_DIR}/reply")],
        &m.mnt,
    );
    assert!(
        out.stderr
            .contains("Invalid or incomplete multibyte or wide character"),
        "{out:?}"
    );
    let err = common::write_then_close(&reply, b"text \0 with a NUL").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EILSEQ), "{err}");
    let err = common::write_then_close(&m.path("reply"), b"\n\n").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOMSG), "{err}");
    let err = common::write_then_close(&reply, " \t\u{a0}\n \n".as_bytes()).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOMSG), "{err}");
    // The shell does not report an error from close; nothing is appended all the same.
    sh(&format!("printf '\\n\\n' > {INNER_DIR}/reply"), &m.mnt);
    // As before: nothing, or one newline, is no reply and no mistake.
    common::write_then_close(&reply, b"").unwrap();
    common::write_then_close(&reply, b"\n").unwrap();
    let name = fs::read_to_string(m.path("name")).unwrap();
    let err = common::write_then_close(&m.path("name"), b"new\0name").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EILSEQ), "{err}");
    assert_eq!(fs::read_to_string(m.path("name")).unwrap(), name);
    assert_eq!(fs::read(&m.file).unwrap(), before, "something was appended");
    let log = m.stderr_text();
    for said in [
        &format!("the reply to {INNER} refused (EILSEQ): the text holds a NUL byte"),
        "a reply at the root refused (ENOMSG): the text is only whitespace",
        &format!("the reply to {INNER} refused (ENOMSG): the text is only whitespace"),
        "the name refused (EILSEQ): the text holds a NUL byte",
    ] {
        assert!(log.contains(said), "{said:?} not in the log: {log}");
    }
    // Text is still taken.
    common::write_then_close(&reply, b"  indented\n").unwrap();
    let after = fs::read_to_string(&m.file).unwrap();
    assert!(after.contains("\"text\":\"  indented\""), "{after}");
}

#[test]
fn a_multibyte_character_split_across_writes_is_accepted() {
    let m = Mount::new("small.jsonl");
    let dir = m.path(INNER_DIR);
    let before = fs::read(&m.file).unwrap();
    // "ü" is C3 BC: the two bytes in two write(2) calls.
    let out = run(
        "bash",
        &["-c", "{ printf 'gr\\303'; printf '\\274n'; } > reply"],
        &dir,
    );
    one_reply(&m, &dir, INNER, out, &before, "grün");
}

#[test]
fn a_character_cut_off_at_close_appends_nothing_and_close_fails() {
    let m = Mount::new("small.jsonl");
    let before = fs::read(&m.file).unwrap();
    let path =
        std::ffi::CString::new(m.path(&format!("{INNER_DIR}/reply")).to_str().unwrap()).unwrap();
    // SAFETY: plain syscalls on our own descriptor.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_TRUNC);
        assert!(fd >= 0, "open: {}", std::io::Error::last_os_error());
        let buf = b"ab\xe2\x82";
        let n = libc::write(fd, buf.as_ptr().cast(), buf.len());
        assert_eq!(
            n,
            buf.len() as isize,
            "an unfinished character may still be completed"
        );
        let r = libc::close(fd);
        let err = std::io::Error::last_os_error();
        assert_eq!(r, -1, "close succeeded on a message ending mid-character");
        assert_eq!(err.raw_os_error(), Some(libc::EILSEQ), "close: {err}");
    }
    assert_eq!(fs::read(&m.file).unwrap(), before, "something was appended");
}

// ---------------------------------------------------------------------------------
// 9. Live changes by other programs.

#[test]
fn an_external_append_under_an_inner_entry_appears() {
    let m = Mount::new("small.jsonl");
    let dir = m.path(INNER_DIR);
    // Get everything that must change into the kernel's caches first.
    ls(&dir);
    ls(&m.path("branches"));
    fs::read_to_string(m.path("tree")).unwrap();
    fs::read_link(m.path("leaf")).unwrap();
    let line = format!(
        r#"{{"type":"message","id":"abcdef02","parentId":"{INNER}","timestamp":"2026-01-05T11:00:00.000Z","message":{{"role":"user","content":[{{"type":"text","text":"from Pi, outside"}}],"timestamp":1767610800000}}}}"#
    );
    let mut f = fs::OpenOptions::new().append(true).open(&m.file).unwrap();
    let t0 = Instant::now();
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
    drop(f);
    let appeared = wait_until(DEADLINE, || {
        fs::read_dir(&dir)
            .is_ok_and(|mut d| d.any(|e| e.is_ok_and(|e| e.file_name() == "abcdef02")))
    });
    let latency = t0.elapsed();
    println!("external append visible after {latency:?}");
    // Printed, not asserted: LAYOUT's "within milliseconds" holds on an idle machine,
    // and a loaded one may take longer without anything being wrong.
    assert!(
        appeared,
        "abcdef02 did not appear under {INNER_DIR} within {DEADLINE:?}"
    );
    let ok = wait_until(DEADLINE, || {
        fs::read_link(m.path("leaf")).is_ok_and(|l| l == Path::new(".id/abcdef02"))
    });
    assert!(
        ok,
        "leaf -> {:?}, not .id/abcdef02",
        fs::read_link(m.path("leaf"))
    );
    let tree = fs::read_to_string(m.path("tree")).unwrap();
    let tl = tree.lines().find(|l| l.contains("abcdef02"));
    assert!(
        tl.is_some_and(|l| l.contains("from Pi, outside") && l.contains("← leaf")),
        "tree line for abcdef02: {tl:?}"
    );
    let br = ls(&m.path("branches"));
    assert!(br.contains("abcdef02"), "branches/: {br:?}");
    let out = run("readlink", &["branches/abcdef02"], &m.mnt).ok();
    assert_eq!(out.stdout, "../.id/abcdef02\n");
    let out = run("cat", &["abcdef02/user"], &dir).ok();
    assert_eq!(out.stdout, "from Pi, outside\n");
}

#[test]
fn a_file_replaced_by_rename_is_reloaded() {
    let m = Mount::new("small.jsonl");
    // The leaf 76622e25 is dropped; a new entry takes its place under its parent.
    let parent_dir = m.path(
        "e8dfd932/87720854/8e38ccf6/65ebe60d/cdf968c4/bd97ea85/22776346/188e16bd/2a1ece3f/6715ade7/65146054/4c7b3f62",
    );
    let names = ls(&parent_dir);
    assert!(names.contains("76622e25"), "{names:?}");
    fs::read_to_string(m.path("tree")).unwrap();
    fs::read_to_string(m.path("name")).unwrap();
    let mut lines = file_lines(&m.file);
    let old_leaf = lines.pop().unwrap();
    assert!(old_leaf.contains("\"id\":\"76622e25\""));
    lines.push(r#"{"type":"message","id":"feedface","parentId":"4c7b3f62","timestamp":"2026-01-05T11:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"rewritten"}],"timestamp":1767610800000}}"#.to_owned());
    lines.push(r#"{"type":"session_info","id":"feedfac2","parentId":"feedface","timestamp":"2026-01-05T11:00:01.000Z","name":"Renamed over"}"#.to_owned());
    let tmp = m.dir().join("new.jsonl.tmp");
    fs::write(&tmp, lines.join("\n") + "\n").unwrap();
    fs::rename(&tmp, &m.file).unwrap();
    let ok = wait_until(DEADLINE, || {
        fs::read_to_string(m.path("name")).is_ok_and(|n| n == "Renamed over\n")
    });
    assert!(ok, "name is {:?}", fs::read_to_string(m.path("name")));
    let ok = wait_until(DEADLINE, || {
        try_ls(&parent_dir).is_some_and(|n| {
            n.iter().any(|x| x == "feedface") && !n.iter().any(|x| x == "76622e25")
        })
    });
    assert!(ok, "ls after the rename: {:?}", ls(&parent_dir));
    let out = run("cat", &["feedface/user"], &parent_dir).ok();
    assert_eq!(out.stdout, "rewritten\n");
    assert!(
        !m.path(".id/76622e25").exists(),
        "the dropped entry is still reachable"
    );
    let tree = fs::read_to_string(m.path("tree")).unwrap();
    assert!(
        tree.contains("feedface") && !tree.contains("76622e25"),
        "{tree}"
    );
}

// ---------------------------------------------------------------------------------
// 10. Damaged files.

fn damaged_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(repo().join("tests/fixtures/damaged"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    v.sort();
    assert!(v.len() > 30, "{v:?}");
    v
}

fn is_session(file: &Path) -> bool {
    let out = sessionfs(
        &[
            std::ffi::OsStr::new("check"),
            "--json".as_ref(),
            file.as_os_str(),
        ],
        &repo(),
    );
    let v = json(out.stdout.trim());
    v["session"]
        .as_bool()
        .unwrap_or_else(|| panic!("no `session` in {v}"))
}

#[test]
fn damaged_sessions_mount_and_find_grep_cat_finish_cleanly() {
    let mut n = 0;
    for src in damaged_files() {
        if !is_session(&src) {
            continue;
        }
        let name = src.file_name().unwrap().to_string_lossy().into_owned();
        let original = fs::read(&src).unwrap();
        let m = mount_copy(&src, &[]);
        clean(run("find", &["."], &m.mnt), &format!("{name}: find"));
        clean_grep(
            run("grep", &["-r", "x", "."], &m.mnt),
            &format!("{name}: grep -r"),
        );
        clean(
            sh("find . -type f -exec cat {} + > /dev/null", &m.mnt),
            &format!("{name}: cat every file"),
        );
        clean(
            sh(
                "find . -type l \\( -name context -o -name context.json -o -name entry.json \\) \
                 -exec cat {} + > /dev/null",
                &m.mnt,
            ),
            &format!("{name}: cat every context, context.json, entry.json"),
        );
        let kinds = clean(
            sh("find . -mindepth 2 -type f ! -name reply", &m.mnt),
            &format!("{name}: find KIND files"),
        );
        assert!(
            !kinds.stdout.is_empty() || name.contains("empty"),
            "{name}: no content files"
        );
        clean(run("cat", &["tree", "session.json", "name"], &m.mnt), &name);
        assert_eq!(
            fs::read(&m.file).unwrap(),
            original,
            "{name}: the file changed"
        );
        drop(m);
        n += 1;
    }
    assert!(n > 25, "only {n} damaged files were sessions");
}

#[test]
fn damaged_files_that_are_not_sessions_are_refused_with_status_4() {
    let mut n = 0;
    for src in damaged_files() {
        if is_session(&src) {
            continue;
        }
        let name = src.file_name().unwrap().to_string_lossy().into_owned();
        let dir = tempdir();
        let file = dir.path().join(&name);
        fs::copy(&src, &file).unwrap();
        let mnt = dir.path().join("mnt");
        fs::create_dir(&mnt).unwrap();
        let out = sessionfs(
            &[
                std::ffi::OsStr::new("mount"),
                file.as_os_str(),
                mnt.as_os_str(),
            ],
            dir.path(),
        );
        if is_mount_point(&mnt) {
            unmount(&mnt);
            panic!("{name}: mounted although not a session");
        }
        assert_eq!(out.code(), Some(4), "{name}: {out:?}");
        assert!(
            out.stderr.starts_with("sessionfs: ") && out.stderr.contains(&name),
            "{name}: {:?}",
            out.stderr
        );
        assert_eq!(
            fs::read(&file).unwrap(),
            fs::read(&src).unwrap(),
            "{name}: the file changed"
        );
        n += 1;
    }
    assert!(n >= 4, "only {n} damaged files were not sessions");
}

// ---------------------------------------------------------------------------------
// 11. Ids that cannot be file names.

#[test]
fn escaped_ids_are_reachable_and_linked() {
    for (file, id, name) in [
        ("id-with-slash.jsonl", "aa/bb", "%aa%2Fbb"),
        ("id-dotdot.jsonl", "..", "%.."),
        ("id-dot.jsonl", ".", "%."),
        ("id-reply.jsonl", "reply", "%reply"),
        ("id-empty-string.jsonl", "", "%"),
    ] {
        let m = mount_copy(&damaged(file), &[]);
        let what = |s: &str| format!("{file}: {s}");
        let parent = m.path("aaaaaaa1/aaaaaaa2/aaaaaaa3");
        let names = ls(&parent);
        assert!(
            names.contains(name),
            "{}",
            what(&format!("ls aaaaaaa3: {names:?}"))
        );
        let nested = parent.join(name);
        let out = run("cat", &["user"], &nested).ok();
        assert_eq!(out.stdout, format!("u {id}\n"), "{}", what("cat user"));
        let out = run("cat", &["aaaaaaa5/assistant"], &nested).ok();
        assert_eq!(
            out.stdout,
            "a aaaaaaa5\n",
            "{}",
            what("the child's content")
        );
        let rl = |p: &str| -> String {
            let out = run("readlink", &[p], &m.mnt);
            assert!(
                out.status.success(),
                "{}",
                what(&format!("readlink {p}: {out:?}"))
            );
            out.stdout.trim_end_matches('\n').to_owned()
        };
        assert_eq!(
            rl(&format!(".id/{name}/parent")),
            "../aaaaaaa3",
            "{}",
            what("parent")
        );
        assert_eq!(
            rl(&format!(".id/aaaaaaa3/{name}")),
            format!("../{name}"),
            "{}",
            what("child link")
        );
        assert_eq!(
            rl(&format!(".id/{name}/aaaaaaa5")),
            "../aaaaaaa5",
            "{}",
            what("its child")
        );
        assert_eq!(
            rl(".id/aaaaaaa5/parent"),
            format!("../{name}"),
            "{}",
            what("child's parent")
        );
        let link = format!("aaaaaaa1/aaaaaaa2/aaaaaaa3/{name}/context");
        assert_eq!(
            rl(&link),
            format!("../../../../.id/{name}/context"),
            "{}",
            what("context")
        );
        let out = clean(run("cat", &[&link], &m.mnt), &what("cat context"));
        assert!(
            out.stdout.contains(&format!("u {id}\n")),
            "{}",
            what(&out.stdout)
        );
        // entry.json is the line, byte for byte.
        let line = file_lines(&m.file).into_iter().nth(4).unwrap();
        let out = run("cat", &[format!(".id/{name}/entry.json")], &m.mnt).ok();
        assert_eq!(out.stdout, format!("{line}\n"), "{}", what("entry.json"));
        // cd through the parent link and back down.
        let out = sh(
            &format!("cd '.id/{name}/parent' && cd '{name}' && cat user"),
            &m.mnt,
        )
        .ok();
        assert_eq!(
            out.stdout,
            format!("u {id}\n"),
            "{}",
            what("cd parent, cd back")
        );
        // The leaf is reached through the escaped entry.
        assert_eq!(rl("leaf"), ".id/aaaaaaa5", "{}", what("leaf"));
    }
}

#[test]
fn context_below_an_empty_id_matches_pi() {
    // damaged/expected.json: Pi's getTree() puts aaaaaaa5 under the entry with id "",
    // but buildSessionContext stops at the falsy parentId "", so the leaf's context is
    // only [assistant]. LAYOUT: context.json is Pi's buildSessionContext + convertToLlm.
    let m = mount_copy(&damaged("id-empty-string.jsonl"), &[]);
    let out = run("cat", &[".id/aaaaaaa5/context.json"], &m.mnt).ok();
    let v = json(&out.stdout);
    let roles: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["assistant"], "{}", out.stdout);
}

/// `tree` reads back whole, byte for byte what the model draws, on a fresh mount (where
/// `stat` said 0 before the first open) and again from the kernel's page cache, for a
/// tree of many pages; then it follows an append.
#[test]
fn tree_reads_whole_first_and_from_the_page_cache() {
    let m = Mount::new("medium.jsonl");
    let want = sessionfs::model::tree::render_tree(&Session::open(&m.file).unwrap()).unwrap();
    assert!(want.len() > 128 * 1024, "a tree of {} bytes", want.len());
    let tree = m.path("tree");
    assert_eq!(fs::metadata(&tree).unwrap().len(), 0, "not drawn yet");
    for round in 0..3 {
        let got = fs::read(&tree).unwrap();
        assert!(
            got == want,
            "round {round}: {} bytes, not {}",
            got.len(),
            want.len()
        );
        assert_eq!(fs::metadata(&tree).unwrap().len(), want.len() as u64);
    }
    sh("echo 'after the cached tree' > reply", &m.mnt).ok();
    let want = sessionfs::model::tree::render_tree(&Session::open(&m.file).unwrap()).unwrap();
    let got = run("cat", &["tree"], &m.mnt).ok().stdout;
    assert!(got.as_bytes() == want.as_slice() && got.contains("after the cached tree"));
}

/// An answer's `request` is what the model saw when it wrote it: its parent's context,
/// which is its own context without the answer. Other entries have none.
#[test]
fn an_assistant_entry_links_the_request_it_answered() {
    let m = Mount::new("small.jsonl");
    let entries = parse_entries(&m.file);
    let kinds = kinds(&m.file);
    let dirs = nested_dirs(&entries);
    let mut answers = 0;
    for (id, parent) in &entries {
        let flat = m.path(&format!(".id/{id}"));
        if kinds[id] != "assistant" {
            assert!(fs::symlink_metadata(flat.join("request")).is_err(), "{id}");
            assert!(!ls(&flat).contains("request"), "{id}");
            continue;
        }
        let parent = parent.as_deref().expect("an answer at a root");
        answers += 1;
        assert!(ls(&flat).contains("request.json"), "{id}");
        assert_eq!(
            fs::read_link(flat.join("request")).unwrap(),
            Path::new(&format!("../{parent}/context"))
        );
        // In the nested tree, through the mount: the same file as the parent's context.
        let dir = &dirs[id];
        let out = sh(
            &format!(
                "cmp {dir}/request {dir}/../context && cmp {dir}/request.json {dir}/../context.json \
                 && cmp .id/{id}/request .id/{parent}/context && echo same"
            ),
            &m.mnt,
        );
        assert_eq!(
            (out.stdout.as_str(), out.stderr.as_str()),
            ("same\n", ""),
            "{id}"
        );
        // The answer's own context is the request with the answer after it.
        let req = fs::read_to_string(m.path(&format!("{dir}/request"))).unwrap();
        let own = fs::read_to_string(m.path(&format!("{dir}/context"))).unwrap();
        assert!(own.starts_with(&req) && own.len() > req.len(), "{id}");
    }
    assert!(answers >= 2, "{answers}");
    // Symlinks: `grep -r` and `find -type f` do not see them twice.
    let out = run("find", &[".", "-name", "request", "-type", "f"], &m.mnt).ok();
    assert_eq!(out.stdout, "");
}
