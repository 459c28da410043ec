//! The index behind `sessionfs grep` never answers from bytes that changed, and never
//! from an index it cannot trust, driven through the command line.
//!
//! A home holds every agent's fixtures (Pi's sessions, Claude Code's projects with
//! their subagents, a Codex home). A first search builds the index; then the session
//! files are changed as users and agents change them, and every search after each
//! change must print exactly what the same search prints without the index
//! (`SESSIONFS_INDEX=off`), and find what the change wrote:
//!
//! * a line appended (found at once, and after the next search indexed it);
//! * a rewrite in place of the same size, with the mtime set back to what it was;
//! * a file replaced by another (rename over it), truncated, deleted.
//!
//! Then the index itself is damaged (a manifest or segment truncated, filled with
//! garbage, of another version), written by several processes at once, bounded to
//! almost nothing, and turned off: the searches print the same, and the next one
//! repairs it.

mod common;

use common::*;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A home with every agent's fixtures, and a cache of its own.
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    cache: PathBuf,
    /// The merge policy's floor for every command (`SESSIONFS_INDEX_MERGE_FLOOR`, debug
    /// builds): this home's index is far below the real one, so every merge would be
    /// a whole one without it.
    floor: std::cell::Cell<Option<u64>>,
    /// How many bytes of postings a build holds before it writes a segment
    /// (`SESSIONFS_INDEX_SEGMENT_MEMORY`, debug builds): small, a build of this home
    /// writes several.
    segment_memory: std::cell::Cell<Option<usize>>,
}

impl Home {
    fn new() -> Home {
        let dir = tempdir();
        let home = dir.path().join("home");
        let pi = home.join(".pi/agent/sessions/--home-dev-p--");
        fs::create_dir_all(&pi).unwrap();
        for f in fs::read_dir(fixtures().join("sessions")).unwrap() {
            let p = f.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            // The big ones make every search slow; two small ones are enough here.
            if ["medium.jsonl", "linear.jsonl", "bushy.jsonl"].contains(&name.as_str()) {
                continue;
            }
            fs::copy(&p, pi.join(&name)).unwrap();
        }
        copy_tree(
            &fixtures().join("claude/projects"),
            &home.join(".claude/projects"),
        );
        copy_tree(
            &fixtures().join("codex/samples/codex-home"),
            &home.join(".codex"),
        );
        let cache = dir.path().join("cache");
        Home {
            _dir: dir,
            home,
            cache,
            floor: std::cell::Cell::new(None),
            segment_memory: std::cell::Cell::new(None),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.args(args)
            .env("HOME", &self.home)
            .env("XDG_CACHE_HOME", &self.cache)
            .env_remove("SESSIONFS_INDEX")
            .env_remove("SESSIONFS_CACHE")
            .env_remove("SESSIONFS_INDEX_MAX")
            .env_remove("PI_CODING_AGENT_DIR")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("SESSIONFS_INDEX_MERGE_FLOOR")
            .env_remove("SESSIONFS_INDEX_SEGMENT_MEMORY")
            .current_dir(&self.home);
        if let Some(f) = self.floor.get() {
            c.env("SESSIONFS_INDEX_MERGE_FLOOR", f.to_string());
        }
        if let Some(n) = self.segment_memory.get() {
            c.env("SESSIONFS_INDEX_SEGMENT_MEMORY", n.to_string());
        }
        c
    }

    /// `sessionfs grep ARGS` over every agent's sessions, with the index.
    fn grep(&self, args: &[&str]) -> Output {
        let mut a = vec!["grep"];
        a.extend_from_slice(args);
        run_command(self.command(&a))
    }

    /// The same without the index.
    fn grep_plain(&self, args: &[&str]) -> Output {
        let mut a = vec!["grep"];
        a.extend_from_slice(args);
        let mut c = self.command(&a);
        c.env("SESSIONFS_INDEX", "off");
        run_command(c)
    }

    fn index(&self, args: &[&str]) -> Output {
        let mut a = vec!["index"];
        a.extend_from_slice(args);
        run_command(self.command(&a))
    }

    /// `grep ARGS` with and without the index print the same; returns the output.
    fn same(&self, args: &[&str]) -> Output {
        let with = self.grep(args);
        let without = self.grep_plain(args);
        assert_eq!(with.stdout, without.stdout, "grep {args:?}: stdout");
        assert_eq!(with.stderr, without.stderr, "grep {args:?}: stderr");
        assert_eq!(
            with.status.code(),
            without.status.code(),
            "grep {args:?}: status"
        );
        with
    }

    fn index_dir(&self) -> PathBuf {
        self.cache.join("sessionfs/index-1")
    }

    fn pi_file(&self, name: &str) -> PathBuf {
        self.home
            .join(".pi/agent/sessions/--home-dev-p--")
            .join(name)
    }

    /// Every session file of one agent's folder.
    fn files(&self, under: &str) -> Vec<PathBuf> {
        let mut out = Vec::new();
        fn walk(d: &Path, out: &mut Vec<PathBuf>) {
            for e in fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    out.push(p);
                }
            }
        }
        walk(&self.home.join(under), &mut out);
        out.sort();
        out
    }
}

/// The `"text":"…"` strings' first lower-case word of at least `n` letters in `path`,
/// with its offset.
fn a_word(path: &Path, n: usize) -> (u64, String) {
    let b = fs::read(path).unwrap();
    let mut at = 0;
    while let Some(k) = find(&b[at..], b"\"text\":\"") {
        let s = at + k + 8;
        let mut i = s;
        while i < b.len() && b[i] != b'"' {
            let j = i;
            while i < b.len() && b[i].is_ascii_lowercase() {
                i += 1;
            }
            if i - j >= n
                && b.get(i)
                    .is_some_and(|c| !c.is_ascii_alphanumeric() && *c != b'\\')
            {
                return (j as u64, String::from_utf8(b[j..i].to_vec()).unwrap());
            }
            if i == j {
                i += 1;
            }
        }
        at = s;
    }
    panic!("no word of {n} letters in {}", path.display());
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// A line `path`'s format would take as one more entry holding `text`.
fn line_for(path: &Path, text: &str) -> String {
    let b = fs::read_to_string(path).unwrap();
    let last = b.trim_end().rsplit('\n').next().unwrap();
    let v: serde_json::Value = serde_json::from_str(last).unwrap_or_default();
    let s = path.to_string_lossy();
    if s.contains("/.pi/") {
        let parent = v.get("id").and_then(|x| x.as_str()).unwrap_or("00000000");
        serde_json::json!({
            "type": "message", "id": "f00dfeed", "parentId": parent,
            "timestamp": "2026-12-31T00:00:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1798675200000u64}
        })
        .to_string()
    } else if s.contains("/.claude/") {
        let parent = v.get("uuid").cloned().unwrap_or(serde_json::Value::Null);
        let sid = v.get("sessionId").cloned().unwrap_or_default();
        serde_json::json!({
            "parentUuid": parent, "isSidechain": false, "type": "user",
            "message": {"role": "user", "content": text},
            "uuid": "0f0f0f0f-1111-4222-8333-444455556666", "timestamp": "2026-12-31T00:00:00.000Z",
            "sessionId": sid
        })
        .to_string()
    } else {
        serde_json::json!({
            "timestamp": "2026-12-31T00:00:00.000Z", "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
        })
        .to_string()
    }
}

/// Every agent's first session file (Pi, Claude Code, Codex).
fn one_of_each(h: &Home) -> Vec<PathBuf> {
    let pi = h.pi_file("mixed.jsonl");
    let claude = h
        .files(".claude/projects")
        .into_iter()
        .find(|p| !p.to_string_lossy().contains("subagents"))
        .unwrap();
    let codex = h.files(".codex/sessions")[0].clone();
    vec![pi, claude, codex]
}

#[test]
fn appended_lines_are_found_at_once_and_after_they_are_indexed() {
    let h = Home::new();
    h.same(&["-c", "error"]);
    assert!(
        h.index_dir().join("manifest").exists(),
        "the first search builds the index"
    );
    for (k, f) in one_of_each(&h).iter().enumerate() {
        let word = format!("appendedword{k}x");
        append_line(f, &line_for(f, &format!("now {word} here")));
        // The first search after the append finds it (the new bytes are scanned, and
        // indexed); so does the next, from the index.
        for _ in 0..2 {
            let out = h.same(&["-l", &word]);
            assert_eq!(
                out.stdout.lines().count(),
                1,
                "{word} in {}: {}",
                f.display(),
                out.stdout
            );
        }
    }
    // A line without its newline yet is no entry, with or without the index.
    let f = h.pi_file("mixed.jsonl");
    let mut w = OpenOptions::new().append(true).open(&f).unwrap();
    w.write_all(line_for(&f, "halfwrittenword").as_bytes())
        .unwrap();
    drop(w);
    let out = h.same(&["-l", "halfwrittenword"]);
    assert_eq!(out.stdout, "");
    append_line(&f, "");
    assert_eq!(h.same(&["-l", "halfwrittenword"]).stdout.lines().count(), 1);
}

#[test]
fn a_rewrite_in_place_is_never_answered_from_old_postings() {
    let h = Home::new();
    h.same(&["-c", "x"]);
    for f in one_of_each(&h) {
        let (at, word) = a_word(&f, 6);
        let before = fs::metadata(&f).unwrap();
        let new: String = "q".repeat(word.len() - 1) + "z";
        // Same size, and the mtime set back to what it was: only ctime tells.
        let mut b = fs::read(&f).unwrap();
        b[at as usize..at as usize + word.len()].copy_from_slice(new.as_bytes());
        fs::write(&f, &b).unwrap();
        let file = OpenOptions::new().write(true).open(&f).unwrap();
        file.set_modified(before.modified().unwrap()).unwrap();
        drop(file);
        assert_eq!(fs::metadata(&f).unwrap().len(), before.len());
        let out = h.same(&["-l", &new]);
        assert!(!out.stdout.is_empty(), "{new} in {}", f.display());
        h.same(&["-c", &word]);
    }
    // The same once the index trusts the file on its `stat` alone: its content read
    // (verified) at least the racy margin after its last change.
    let f = h.pi_file("mixed.jsonl");
    let ctime = || {
        use std::os::unix::fs::MetadataExt;
        let m = fs::metadata(&f).unwrap();
        std::time::UNIX_EPOCH + std::time::Duration::new(m.ctime() as u64, m.ctime_nsec() as u32)
    };
    let settled = ctime() + std::time::Duration::from_millis(3100);
    assert!(wait_until(
        std::time::Duration::from_secs(20),
        || std::time::SystemTime::now() > settled
    ));
    h.same(&["-c", "x"]);
    let (at, word) = a_word(&f, 5);
    let before = fs::metadata(&f).unwrap();
    let mut b = fs::read(&f).unwrap();
    b[at as usize] = b'Q';
    fs::write(&f, &b).unwrap();
    OpenOptions::new()
        .write(true)
        .open(&f)
        .unwrap()
        .set_modified(before.modified().unwrap())
        .unwrap();
    let mut changed = word.clone();
    changed.replace_range(0..1, "Q");
    assert!(!h.same(&["-l", &changed]).stdout.is_empty());
}

/// What the listers read of a file's head (a Codex page's `session_meta`, which names
/// its thread's project) is kept between searches (`core::memo`), and never used for
/// a file that changed since: a `cwd` rewritten in place, same size and the mtime set
/// back, moves the thread to its new project at the next search; a damaged memo is
/// ignored.
#[test]
fn remembered_heads_follow_their_files() {
    let h = Home::new();
    let day = h.home.join(".codex/sessions/2026/12/01");
    let mut pages: Vec<PathBuf> = fs::read_dir(&day)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    pages.sort();
    let page = &pages[0];
    let stem = page.file_stem().unwrap().to_string_lossy().into_owned();
    // `rollout-TIME-THREAD`: the thread's id is a UUID.
    let thread = stem[stem.len() - 36..].to_string();
    let text = fs::read(page).unwrap();
    let at = find(&text, b"\"cwd\":\"").expect("a cwd") + 7;
    let len = text[at..].iter().position(|&c| c == b'"').unwrap();
    let cwd = String::from_utf8(text[at..at + len].to_vec()).unwrap();
    let mut moved = cwd.clone();
    let last = if cwd.ends_with('z') { "y" } else { "z" };
    moved.replace_range(cwd.len() - 1.., last);
    let project = |c: &str| c.replace(['/', '.'], "-");
    let codex = h.home.join(".codex");
    let listed = |c: &str| {
        let out = h.grep(&["-l", "", codex.to_str().unwrap()]);
        let want = format!("{}/{thread}/", project(c));
        out.stdout.lines().any(|l| l.starts_with(&want))
    };
    // Past the racy margin of the copy, so that the search keeps the head it reads.
    let settled = {
        use std::os::unix::fs::MetadataExt;
        let m = fs::metadata(page).unwrap();
        std::time::UNIX_EPOCH
            + std::time::Duration::new(m.ctime() as u64, m.ctime_nsec() as u32)
            + std::time::Duration::from_millis(3100)
    };
    assert!(wait_until(std::time::Duration::from_secs(20), || {
        std::time::SystemTime::now() > settled
    }));
    assert!(listed(&cwd), "{thread} under {cwd}");
    let memo = h.cache.join("sessionfs/heads-1");
    assert!(memo.is_file(), "the heads read are kept");
    // What the caches hold of someone's sessions is theirs alone.
    let mode = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode(&h.cache.join("sessionfs")), 0o700);
    assert_eq!(mode(&h.index_dir()), 0o700);
    assert_eq!(mode(&memo), 0o600);
    // One made before, open to all: closed by the next search, even one that writes
    // nothing.
    {
        use std::os::unix::fs::PermissionsExt;
        let base = h.cache.join("sessionfs");
        fs::set_permissions(&base, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(listed(&cwd));
        assert_eq!(mode(&base), 0o700);
    }
    // Read from the memo now.
    assert!(listed(&cwd));
    let before = fs::metadata(page).unwrap();
    let mut b = text.clone();
    b[at..at + len].copy_from_slice(moved.as_bytes());
    fs::write(page, &b).unwrap();
    OpenOptions::new()
        .write(true)
        .open(page)
        .unwrap()
        .set_modified(before.modified().unwrap())
        .unwrap();
    assert_eq!(fs::metadata(page).unwrap().len(), before.len());
    assert!(listed(&moved), "{thread} moved to {moved}");
    assert!(!listed(&cwd), "{thread} still under {cwd}");
    // A memo that is garbage, or cut short, is not trusted.
    let whole = fs::read(&memo).unwrap();
    let plain = h.grep_plain(&["-l", "", codex.to_str().unwrap()]);
    for bad in [b"garbage".to_vec(), whole[..whole.len() / 2].to_vec()] {
        fs::write(&memo, &bad).unwrap();
        let out = h.grep(&["-l", "", codex.to_str().unwrap()]);
        assert_eq!(out.stdout, plain.stdout);
        assert_eq!(out.status.code(), plain.status.code());
    }
}

#[test]
fn replaced_truncated_and_deleted_files() {
    let h = Home::new();
    h.same(&["-c", "e"]);
    let files = one_of_each(&h);
    // Replaced: a new file renamed over the old one.
    for (k, f) in files.iter().enumerate() {
        let word = format!("replacedword{k}y");
        let mut b = fs::read_to_string(f).unwrap();
        b.push_str(&line_for(f, &word));
        b.push('\n');
        let tmp = f.with_extension("tmp");
        fs::write(&tmp, b).unwrap();
        fs::rename(&tmp, f).unwrap();
        assert_eq!(h.same(&["-l", &word]).stdout.lines().count(), 1);
    }
    // Truncated to its first lines: what was after is gone.
    for f in &files {
        let b = fs::read(f).unwrap();
        let cut = b
            .iter()
            .enumerate()
            .filter(|(_, c)| **c == b'\n')
            .nth(3)
            .map_or(b.len(), |(i, _)| i + 1);
        fs::write(f, &b[..cut]).unwrap();
    }
    for w in ["replacedword0y", "replacedword1y", "replacedword2y"] {
        assert_eq!(h.same(&["-l", w]).stdout, "");
    }
    h.same(&["-c", "a"]);
    // Deleted.
    for f in &files {
        fs::remove_file(f).unwrap();
    }
    h.same(&["-l", "e"]);
    h.same(&["-n", "the"]);
}

/// Every file of the index directory.
fn index_files(h: &Home) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(h.index_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n == "manifest" || n.ends_with(".six")
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_damaged_index_is_never_trusted_and_is_repaired() {
    let h = Home::new();
    let pats: &[&[&str]] = &[&["-c", "error"], &["-l", "the"], &["-n", "-i", "READ"]];
    type Damage = fn(&[u8]) -> Vec<u8>;
    let damages: &[(&str, Damage)] = &[
        ("truncated", |b| b[..b.len() / 2].to_vec()),
        ("garbage", |b| {
            b.iter()
                .enumerate()
                .map(|(i, x)| x ^ (i as u8 | 1))
                .collect()
        }),
        ("another version", |b| {
            let mut v = b.to_vec();
            v[7] ^= 0x7f;
            v
        }),
        ("one byte flipped", |b| {
            let mut v = b.to_vec();
            let k = v.len() * 2 / 3;
            v[k] ^= 0x10;
            v
        }),
        ("empty", |_| Vec::new()),
    ];
    for (what, damage) in damages {
        for target in 0..2 {
            h.same(&["-c", "x"]);
            let files = index_files(&h);
            let f = if target == 0 {
                files
                    .iter()
                    .find(|p| p.ends_with("manifest"))
                    .unwrap()
                    .clone()
            } else {
                files
                    .iter()
                    .filter(|p| p.extension().is_some_and(|e| e == "six"))
                    .max_by_key(|p| fs::metadata(p).unwrap().len())
                    .unwrap()
                    .clone()
            };
            let b = fs::read(&f).unwrap();
            fs::write(&f, damage(&b)).unwrap();
            for p in pats {
                h.same(p);
            }
            // Whatever the damage, a search afterwards leaves an index that covers all.
            h.same(&["-l", "zzzz"]);
            let st = h.index(&["--status"]);
            let covers = st
                .stdout
                .lines()
                .find(|l| l.starts_with("covers:"))
                .unwrap_or_default()
                .to_string();
            assert!(
                covers.contains("(100.0%)"),
                "{what} {}: {}",
                f.display(),
                st.stdout
            );
        }
    }
}

#[test]
fn writers_at_once_and_a_bound_and_off() {
    let h = Home::new();
    let want = h.grep_plain(&["-n", "error"]);
    // Four processes build the same index at once.
    let mut kids = Vec::new();
    for k in 0..4 {
        let mut c = if k % 2 == 0 {
            h.command(&["index"])
        } else {
            h.command(&["grep", "-n", "error"])
        };
        c.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        kids.push((k, c.spawn().unwrap()));
    }
    for (k, c) in kids {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "writer {k}: {out:?}"
        );
        if k % 2 == 1 {
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                want.stdout,
                "writer {k}"
            );
        }
    }
    h.same(&["-n", "error"]);
    let st = h.index(&["--status"]);
    assert!(st.stdout.contains("(100.0%)"), "{}", st.stdout);
    // A bound too small for anything: every file is searched without the index.
    let small = Home::new();
    let mut c = small.command(&["grep", "-c", "error"]);
    c.env("SESSIONFS_INDEX_MAX", "1");
    let out = run_command(c);
    assert_eq!(out.stdout, small.grep_plain(&["-c", "error"]).stdout);
    let mut c = small.command(&["index", "--status"]);
    c.env("SESSIONFS_INDEX_MAX", "1");
    let st = run_command(c);
    assert!(st.stdout.contains("covers: 0 of"), "{}", st.stdout);
    // Off: nothing is written.
    let off = Home::new();
    let mut c = off.command(&["grep", "-c", "error"]);
    c.env("SESSIONFS_CACHE", "off");
    assert_eq!(
        run_command(c).stdout,
        off.grep_plain(&["-c", "error"]).stdout
    );
    assert!(!off.index_dir().exists());
    // Dropped: nothing is lost.
    assert!(h.index(&["--drop"]).status.success());
    assert!(!h.index_dir().exists());
    h.same(&["-n", "error"]);
}

/// A session's spilled tool results are looked at only where its `tool-results/`
/// folder is (the index reads the lines naming one only then): a folder that appears
/// or goes after the index was built changes what a search finds, exactly as
/// without the index.
#[test]
fn a_spilled_output_that_appears_or_goes_is_found_as_without_the_index() {
    let h = Home::new();
    let side = h
        .home
        .join(".claude/projects/-home-dev-src-big/5aa252c6-78fb-47ae-af22-e00c3a1b6282");
    let results = side.join("tool-results");
    let away = h.home.join("tool-results-away");
    // A word only the spilled file holds.
    let word = "zqxspilledonly";
    let mut f = OpenOptions::new()
        .append(true)
        .open(results.join("b64cy0vmt.txt"))
        .unwrap();
    writeln!(f, "{word}").unwrap();
    drop(f);
    fs::rename(&results, &away).unwrap();
    let built = h.index(&[]);
    assert!(built.status.success(), "{built:?}");
    let none = h.same(&["-l", word]);
    assert!(none.stdout.is_empty(), "{none:?}");
    // The folder comes back: the line naming the file is read again.
    fs::rename(&away, &results).unwrap();
    let found = h.same(&["-l", word]);
    assert!(!found.stdout.is_empty(), "{found:?}");
    h.same(&["-c", word]);
    // Indexed with it, then gone.
    h.index(&[]);
    h.same(&["-l", word]);
    fs::rename(&results, &away).unwrap();
    let gone = h.same(&["-l", word]);
    assert!(gone.stdout.is_empty(), "{gone:?}");
}

/// The number of segments `sessionfs index --status` says the index has.
fn segments_said(status: &str) -> usize {
    let l = status
        .lines()
        .find(|l| l.starts_with("index: "))
        .unwrap_or_else(|| panic!("no index line: {status}"));
    let words: Vec<&str> = l.split(' ').collect();
    let k = words
        .iter()
        .position(|w| w.starts_with("segment"))
        .unwrap_or_else(|| panic!("no segments in {l}"));
    words[k - 1].parse().unwrap()
}

/// After a writer was killed: every search prints what it prints without the index,
/// the next search leaves an index covering every file, and the next one that
/// publishes leaves no segment the manifest does not name.
fn no_harm_done(h: &Home, word: &str, when: &str) {
    let pats: &[&[&str]] = &[&["-c", "error"], &["-n", "-i", "READ"], &["-l", word]];
    for p in pats {
        h.same(p);
    }
    assert_eq!(
        h.same(&["-l", word]).stdout.lines().count(),
        1,
        "{when}: {word}"
    );
    let st = h.index(&["--status"]);
    assert!(st.stdout.contains("(100.0%)"), "{when}: {}", st.stdout);
    let f = h.pi_file("mixed.jsonl");
    append_line(&f, &line_for(&f, "sweepword"));
    h.same(&["-l", "sweepword"]);
    let st = h.index(&["--status"]);
    let named = segments_said(&st.stdout);
    let on_disk = index_files(h)
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "six"))
        .count();
    assert_eq!(on_disk, named, "{when}: {}", st.stdout);
}

fn killed(s: &std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    s.signal() == Some(libc::SIGKILL)
}

/// `kill -9` of a writer between any two of its steps (`SESSIONFS_INDEX_CRASH`, in
/// debug builds: see `search::index::crash_point`), whether it is `sessionfs index` or
/// `sessionfs grep`, building the index or adding an append to it, merging segments or
/// not: no later search answers wrongly, and the next search repairs the index.
#[test]
fn a_writer_killed_between_any_two_steps_does_no_harm() {
    let h = Home::new();
    let points = [
        "segment",
        "segment-placed",
        "publish",
        "manifest-written",
        "manifest-renamed",
    ];
    let files = one_of_each(&h);
    let writer = |h: &Home, point: &str, grep: bool, word: &str| -> bool {
        let mut c = if grep {
            h.command(&["grep", "-c", word])
        } else {
            h.command(&["index"])
        };
        c.env("SESSIONFS_INDEX_CRASH", point);
        killed(&run_command(c).status)
    };
    // The first build, killed.
    for (k, point) in points.iter().enumerate() {
        let word = format!("firstbuild{k}w");
        let f = &files[k % files.len()];
        append_line(f, &line_for(f, &word));
        assert!(h.index(&["--drop"]).status.success());
        let died = writer(&h, point, k % 2 == 1, &word);
        assert!(died || !cfg!(debug_assertions), "not killed at {point}");
        no_harm_done(&h, &word, &format!("first build killed at {point}"));
    }
    // An append, killed.
    for (k, point) in points.iter().enumerate() {
        for grep in [false, true] {
            let word = format!("appended{k}{grep}w");
            let f = &files[(k + 1) % files.len()];
            append_line(f, &line_for(f, &word));
            let died = writer(&h, point, grep, &word);
            assert!(died || !cfg!(debug_assertions), "not killed at {point}");
            no_harm_done(&h, &word, &format!("append killed at {point}"));
        }
    }
    // A merge, killed: appends until the index has enough segments to be merged.
    let mut merges_killed = 0;
    for k in 0..3 * index_max_segments() {
        let word = format!("merging{k}w");
        let f = &files[k % files.len()];
        append_line(f, &line_for(f, &word));
        if writer(&h, "merged", k % 2 == 0, &word) {
            merges_killed += 1;
            no_harm_done(&h, &word, "merge killed");
        } else {
            h.same(&["-l", &word]);
        }
    }
    assert!(
        merges_killed > 0 || !cfg!(debug_assertions),
        "no merge was reached"
    );
    // A partial merge (only the small segments of the appends), killed before and after
    // its output is placed: the big segments stay, and no search answers wrongly.
    h.floor.set(Some(1));
    assert!(h.index(&["--drop"]).status.success());
    assert!(h.index(&[]).status.success());
    let big = largest_segment(&h);
    let mut partial_killed = 0;
    for k in 0..4 * index_max_segments() {
        let word = format!("partial{k}w");
        let f = &files[k % files.len()];
        append_line(f, &line_for(f, &word));
        let point = ["merged", "merge-placed"][k / 2 % 2];
        if writer(&h, point, k % 2 == 0, &word) {
            partial_killed += 1;
            no_harm_done(&h, &word, &format!("partial merge killed at {point}"));
        } else {
            h.same(&["-l", &word]);
        }
        assert!(h.index_dir().join(&big).exists(), "{big} was merged");
    }
    assert!(
        partial_killed > 1 || !cfg!(debug_assertions),
        "no partial merge was reached"
    );
}

/// The name of the largest segment file of `h`'s index.
fn largest_segment(h: &Home) -> String {
    index_files(h)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "six"))
        .max_by_key(|p| fs::metadata(p).unwrap().len())
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Many small appends, each published as a segment of its own by the search that
/// finds it: merges keep the segments a query opens at most
/// `sessionfs::search::index::MAX_SEGMENTS`, they merge only the small segments of
/// the appends (the segments of the first build stay as they are), every search
/// prints what it prints without the index; and once most of what the index covers
/// is deleted, the next merge is a whole one that drops it.
#[test]
fn appends_merge_only_small_segments_and_dead_bytes_a_whole_merge() {
    let h = Home::new();
    h.floor.set(Some(1));
    assert!(h.index(&[]).status.success());
    let big = largest_segment(&h);
    let files = one_of_each(&h);
    let max = index_max_segments() - 1;
    let mut counts = Vec::new();
    for k in 0..4 * index_max_segments() {
        let word = format!("tiered{k}w");
        let f = &files[k % files.len()];
        append_line(f, &line_for(f, &word));
        let out = h.same(&["-l", &word]);
        assert_eq!(out.stdout.lines().count(), 1, "{word}");
        let n = segments_said(&h.index(&["--status"]).stdout);
        assert!(n <= max, "{n} segments after {k} appends");
        assert!(h.index_dir().join(&big).exists(), "{big} merged at {k}");
        counts.push(n);
    }
    let merges = counts.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(merges >= 2, "{counts:?}");
    for p in [
        &["-c", "tiered"][..],
        &["-n", "-i", "READ"],
        &["-l", "error"],
    ] {
        h.same(p);
    }
    // Most of the index dead: every session but one deleted.
    let keep = &files[2];
    for d in [".pi", ".claude", ".codex"] {
        for f in h.files(d) {
            if f != *keep {
                fs::remove_file(f).unwrap();
            }
        }
    }
    for k in 0..index_max_segments() {
        let word = format!("lastly{k}w");
        append_line(keep, &line_for(keep, &word));
        h.same(&["-l", &word]);
    }
    let st = h.index(&["--status"]).stdout;
    assert!(!h.index_dir().join(&big).exists(), "{big} kept: {st}");
    h.same(&["-c", "tiered"]);
    h.same(&["-c", "lastly"]);
    let n = index_files(&h)
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "six"))
        .count();
    assert_eq!(n, segments_said(&st), "{st}");
}

/// A build that writes several segments (a first build of a big home writes one per
/// 96 MiB of postings) publishes them merged into one, so that the first merge due
/// after it takes only the appends' small segments; searches print what they print
/// without the index; `kill -9` in that merge, before or after its output is placed,
/// does no harm.
#[test]
fn a_build_written_in_several_segments_is_published_as_one() {
    let h = Home::new();
    h.segment_memory.set(Some(1 << 20));
    let mut c = h.command(&["index"]);
    c.env("RUST_LOG", "sessionfs=debug");
    let out = run_command(c);
    assert!(out.status.success(), "{}", out.stderr);
    let merged = out
        .stderr
        .lines()
        .find(|l| l.contains("index: merged "))
        .unwrap_or_else(|| panic!("no merge: {}", out.stderr));
    let n: usize = merged
        .split("index: merged ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{merged}"));
    assert!(n >= 2, "{merged}");
    // The session files' segments merged into one; their side files (Claude Code's
    // subagents), indexed by a second refresh, publish one more.
    let st = h.index(&["--status"]).stdout;
    assert!(segments_said(&st) <= 2, "{st}\n{}", out.stderr);
    for p in [
        &["-c", "error"][..],
        &["-n", "-i", "READ"],
        &["-l", "-F", "the"],
    ] {
        h.same(p);
    }
    let files = one_of_each(&h);
    for (k, point) in ["merged", "merge-placed"].iter().enumerate() {
        let word = format!("buildmerge{k}w");
        let f = &files[k % files.len()];
        append_line(f, &line_for(f, &word));
        assert!(h.index(&["--drop"]).status.success());
        let mut c = h.command(&["index"]);
        c.env("SESSIONFS_INDEX_CRASH", point);
        let died = killed(&run_command(c).status);
        assert!(died || !cfg!(debug_assertions), "not killed at {point}");
        h.segment_memory.set(None);
        no_harm_done(&h, &word, &format!("build killed in its merge at {point}"));
        h.segment_memory.set(Some(1 << 20));
    }
}

/// `sessionfs::search::index::MAX_SEGMENTS`, plus one.
fn index_max_segments() -> usize {
    sessionfs::search::index::MAX_SEGMENTS + 1
}

/// `kill -9` of `sessionfs index` or `sessionfs grep` at varied moments while it builds
/// the index of the whole home (the moment falls where it falls: no timing is
/// asserted): the next search prints what it prints without the index, and repairs it.
#[test]
fn a_writer_killed_at_any_moment_does_no_harm() {
    let h = Home::new();
    let files = one_of_each(&h);
    for (k, ms) in [0u64, 1, 3, 10, 30, 60, 100, 200, 400, 800]
        .into_iter()
        .enumerate()
    {
        let word = format!("moment{k}w");
        let f = &files[k % files.len()];
        append_line(f, &line_for(f, &word));
        // Half the time from nothing, half the time over what is there.
        if k % 2 == 0 {
            assert!(h.index(&["--drop"]).status.success());
        }
        let mut c = if k % 3 == 0 {
            h.command(&["grep", "-n", "the"])
        } else {
            h.command(&["index"])
        };
        let mut child = c
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_millis(ms);
        // Waits the moment out, unless the writer finished first.
        wait_until(DEADLINE, || {
            std::time::Instant::now() >= until || child.try_wait().ok().flatten().is_some()
        });
        let _ = child.kill();
        let _ = child.wait();
        no_harm_done(&h, &word, &format!("killed after {ms} ms"));
    }
}

/// What `sessionfs index --status FILE` says the index covers of FILE, with the cache
/// in `cache`: its `covers:` line.
fn covers(cache: &Path, file: &Path) -> String {
    let mut c = Command::new(bin());
    c.args(["index", "--status"])
        .arg(file)
        .env("XDG_CACHE_HOME", cache)
        .env_remove("SESSIONFS_INDEX")
        .env_remove("SESSIONFS_CACHE");
    covers_line(&run_command(c))
}

/// A line for a Pi session holding `word` and enough other text that the file's
/// coverage falls well below 100% until it is indexed.
fn long_line(f: &Path, word: &str) -> String {
    line_for(f, &format!("{word} {}", "filler text ".repeat(400)))
}

/// A running mount keeps the index fresh for what it watches (`search::fresh`): a line
/// appended to a session of a mounted sessions directory (one entered through the
/// mount, one only listed) or to a mounted session file is indexed by the mount, off
/// its requests, before any search runs; and the search then finds it.
#[test]
fn a_mount_keeps_the_index_fresh_for_what_it_watches() {
    let h = Home::new();
    let sessions = h.home.join(".pi/agent/sessions");
    assert!(h.index(&[]).status.success());
    let m = Mount::sessions_dir(
        tempdir(),
        Some(&sessions),
        &[],
        &[
            ("XDG_CACHE_HOME", h.cache.as_os_str()),
            ("HOME", h.home.as_os_str()),
        ],
    );
    let project = m.mnt.join("--home-dev-p--");
    let listed = try_ls(&project).expect("listing the project");
    assert!(listed.iter().any(|n| n == "small"), "{listed:?}");
    // One session entered, one only listed.
    assert!(try_ls(&project.join("small")).is_some());
    for (k, name) in ["small.jsonl", "tour.jsonl"].iter().enumerate() {
        let f = h.pi_file(name);
        assert!(covers(&h.cache, &f).contains("(100.0%)"));
        let word = format!("keptfresh{k}z");
        append_line(&f, &long_line(&f, &word));
        let mut last = String::new();
        let fresh = wait_until(DEADLINE, || {
            last = covers(&h.cache, &f);
            last.contains("(100.0%)")
        });
        assert!(fresh, "{name}: the mount did not index the append: {last}");
        assert_eq!(h.same(&["-l", &word]).stdout.lines().count(), 1);
    }
    drop(m);

    // A mounted session file, never indexed before: indexed once it changes.
    let cache = tempdir();
    let cache_dir = cache.path().to_string_lossy().into_owned();
    let m = Mount::with_env("small.jsonl", &[], &[("XDG_CACHE_HOME", &cache_dir)]);
    append_line(&m.file, &long_line(&m.file, "keptfreshonez"));
    let mut last = String::new();
    let fresh = wait_until(DEADLINE, || {
        last = covers(cache.path(), &m.file);
        last.contains("(100.0%)")
    });
    assert!(fresh, "the mount did not index its session file: {last}");
}

/// A line the format rewrites (a Pi system message, shown as a one-line summary of
/// its sections and tools) is found by the text it shows, which its raw line does not
/// hold: the index keeps that text, and reads the line only when its block holds the
/// query's trigrams.
#[test]
fn rewritten_lines_are_found_by_what_they_show() {
    let h = Home::new();
    h.same(&["-c", "e"]);
    for w in [
        "sections preamble, tools",
        "tools +read, +bash, +edit",
        "text \"Also be brief.\"",
        "sections skills, -cwd",
    ] {
        let out = h.same(&["-l", "-F", w]);
        assert!(out.stdout.lines().count() >= 1, "{w}: {}", out.stdout);
        let out = h.same(&["-c", "-i", "-F", &w.to_uppercase()]);
        assert!(out.stdout.lines().any(|l| !l.ends_with(":0")), "{w}");
    }
}

/// How many sessions `grep ARGS` opened (read whole), from its trace.
fn sessions_opened(h: &Home, args: &[&str]) -> usize {
    opened(h, args, true)
}

/// The same with the index or without it.
fn opened(h: &Home, args: &[&str], index: bool) -> usize {
    let mut a = vec!["grep"];
    a.extend_from_slice(args);
    let mut c = h.command(&a);
    c.env("RUST_LOG", "sessionfs::search::session=trace");
    if !index {
        c.env("SESSIONFS_INDEX", "off");
    }
    let out = run_command(c);
    out.stderr
        .lines()
        .filter(|l| l.contains("opening "))
        .count()
}

/// A Claude Code line that is no entry (2.1.332's request records, which hold the
/// whole system prompt and the first prompt's attachments; a `progress` line; a line
/// without a `uuid`) is shown in no file: a literal found only there is found
/// nowhere, with or without the index, and no session is opened for it. Once an
/// entry after those lines holds it too, that entry is found, and its session
/// opened.
#[test]
fn claude_code_lines_that_are_no_entries_open_no_session() {
    let h = Home::new();
    let sid = "5aa252c6-78fb-47ae-af22-e00c3a1b6282";
    let f = h
        .home
        .join(".claude/projects/-home-dev-src-big")
        .join(format!("{sid}.jsonl"));
    let leaf = "8de4f4a2-29f5-49b9-a218-775e0b3eb62b";
    assert!(fs::read_to_string(&f).unwrap().contains(leaf));
    let lines = [
        format!(
            r#"{{"type":"api-request-shape","sessionId":"{sid}","shapeHash":"a1","timestamp":"2026-12-01T20:44:20.161Z","version":"2.1.332","shape":{{"system":[{{"type":"text","text":"You are qzmeta-only."}}],"tools":[]}}}}"#
        ),
        format!(
            r#"{{"type":"api-request-blob","sessionId":"{sid}","hash":"b2","message":{{"role":"user","content":[{{"type":"text","text":"qzmeta-only, then qzmeta-later"}}]}}}}"#
        ),
        format!(
            r#"{{"type":"progress","uuid":"0d6c2f0e-1111-4222-8333-444455556666","parentUuid":"{leaf}","sessionId":"{sid}","data":{{"text":"qzmeta-only"}}}}"#
        ),
        format!(
            r#"{{"type":"user","uuid":"","parentUuid":"{leaf}","sessionId":"{sid}","message":{{"role":"user","content":"qzmeta-only"}}}}"#
        ),
    ];
    for l in &lines {
        append_line(&f, l);
    }
    // The first search builds the index; the next one answers from it.
    for _ in 0..2 {
        assert_eq!(h.same(&["-l", "-F", "qzmeta-only"]).stdout, "");
        assert_eq!(h.same(&["-l", "-F", "qzmeta-later"]).stdout, "");
    }
    for index in [true, false] {
        assert_eq!(opened(&h, &["-l", "-F", "qzmeta-only"], index), 0);
        assert_eq!(opened(&h, &["-l", "-E", "qzmeta-(only|later)"], index), 0);
    }
    append_line(
        &f,
        &format!(
            r#"{{"type":"user","uuid":"0d6c2f0e-7777-4888-9999-aaaabbbbcccc","parentUuid":"{leaf}","sessionId":"{sid}","timestamp":"2026-12-01T20:45:00.000Z","message":{{"role":"user","content":"qzmeta-later"}}}}"#
        ),
    );
    for _ in 0..2 {
        let out = h.same(&["-l", "-F", "qzmeta-later"]);
        assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
        assert!(
            out.stdout
                .contains("/0d6c2f0e-7777-4888-9999-aaaabbbbcccc/user"),
            "{}",
            out.stdout
        );
        h.index(&[]);
    }
    for index in [true, false] {
        assert_eq!(opened(&h, &["-l", "-F", "qzmeta-later"], index), 1);
        assert_eq!(opened(&h, &["-l", "-F", "qzmeta-only"], index), 0);
    }
}

/// A Copilot CLI prompt's image is held by another line of its file (before the
/// prompt, after it, shared by two prompts): a literal in its bytes is found with and
/// without the index, also once an asset appended after the index was built holds it;
/// and a search for a literal no asset holds opens no Copilot CLI session.
#[test]
fn images_held_by_other_lines_are_found_and_open_their_session_only_then() {
    let h = Home::new();
    let copilot = h.home.join(".copilot");
    copy_tree(&fixtures().join("copilot/own/copilot-home"), &copilot);
    let f = copilot.join(HELD_IMAGES_SESSION);
    held_images_session(&f);
    let id = "c00645c2-ec2c-4ad0-ba5e-4b757f7e5fbf";
    // The first search builds the index; the next ones answer from it.
    for _ in 0..2 {
        // The asset before its prompt: one prompt; the one after both prompts that
        // name it: both.
        let out = h.same(&["-l", "-F", "qzheld-before"]);
        assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
        assert!(out.stdout.contains(id) && out.stdout.contains("/image-2.png"));
        let out = h.same(&["-l", "-F", "qzheld-after"]);
        assert_eq!(out.stdout.lines().count(), 2, "{}", out.stdout);
        assert!(out.stdout.lines().all(|l| l.ends_with("/image-1.png")));
        h.same(&["-n", "-F", "image/png"]);
        h.same(&["-c", "-F", "qzheld-after"]);
        assert_eq!(h.same(&["-l", "-F", "qzheld-nowhere"]).stdout, "");
    }
    // Nothing in any asset: no session read whole for its images; a hit in one: its
    // session only.
    assert_eq!(sessions_opened(&h, &["-l", "-F", "qzheld-nowhere"]), 0);
    assert_eq!(sessions_opened(&h, &["-l", "-F", "qzheld-after"]), 1);
    // An asset stored again after the index was built (the later line is shown):
    // found at once, and once indexed.
    let text = fs::read_to_string(&f).unwrap();
    let last = text.lines().last().unwrap().to_string();
    let data = regex::Regex::new(r#""data":"[A-Za-z0-9+/]*={0,2}""#).unwrap();
    let to = format!(r#""data":"{}""#, base64(&png_with("qzheld-later")));
    append_line(&f, &data.replace(&last, to.as_str()));
    for _ in 0..2 {
        let out = h.same(&["-l", "-F", "qzheld-later"]);
        assert_eq!(out.stdout.lines().count(), 2, "{}", out.stdout);
        assert_eq!(h.same(&["-l", "-F", "qzheld-after"]).stdout, "");
    }
}
