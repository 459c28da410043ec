//! Claude Code 2.1.332 files through real mounts, driven with the shell tools: the
//! in-place transcript rewrite (`CLAUDE_CODE_TRANSCRIPT_LOCAL_GC`) under a reader, a
//! torn tail sealed by the next append, rewinds and the leaf, attachments in `tree`,
//! `custom-title.json` as the name.
//!
//! Fixtures: `tests/fixtures/claude-332` (files the real 2.1.332 CLI wrote, made by the
//! oracle kit's `run_all.sh sdkrw withdrawn localgc tui`).

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-332")
}

const TUI: &str = "tui/c48daa91-9a5a-438f-a10f-a0ba4c44bc63";
const SDK_CONTINUED: &str = "sdkrw/87a77255-fd32-496c-b576-c47f11c2c8c1";
const WITHDRAWN: &str = "withdrawn/0b082ba5-8298-406b-917d-4d2a32f1ec81";

/// A copy of fixture `rel` (`SCENARIO/SID`, with its side folder) in `dir`, the first
/// `lines` lines of it (all with 0). Returns the session file.
fn copy_fixture(rel: &str, dir: &Path, lines: usize) -> PathBuf {
    let src = fixtures().join(format!("{rel}.jsonl"));
    let name = src.file_name().unwrap().to_owned();
    let file = dir.join(&name);
    let text = fs::read_to_string(&src).unwrap();
    let text: String = if lines == 0 {
        text
    } else {
        text.split_inclusive('\n').take(lines).collect()
    };
    fs::write(&file, text).unwrap();
    let side = fixtures().join(rel);
    if side.is_dir() {
        copy_tree(&side, &file.with_extension(""));
    }
    file
}

fn mount_fixture(rel: &str, lines: usize, args: &[&str]) -> Mount {
    let dir = tempdir();
    let file = copy_fixture(rel, dir.path(), lines);
    Mount::start(dir, file, args)
}

/// What `CLAUDE_CODE_TRANSCRIPT_LOCAL_GC` leaves of a session after a compaction
/// (CLAUDE-FORMAT.md, 2.1.332 F): of the lines before the last `compact_boundary`,
/// only the preserved nodes; every line from the boundary on. (The CLI also drops the
/// `api-request*` lines before it, as every other metadata line there.)
fn gc_rewrite(text: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let b = lines
        .iter()
        .rposition(|l| l.contains("\"subtype\":\"compact_boundary\""))
        .expect("a compaction");
    let boundary: Value = serde_json::from_str(lines[b]).unwrap();
    let keep: Vec<&str> = boundary["compactMetadata"]["preservedMessages"]["uuids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    let mut out = String::new();
    for l in &lines[..b] {
        let v: Value = serde_json::from_str(l).unwrap();
        if v["uuid"].as_str().is_some_and(|u| keep.contains(&u)) {
            out.push_str(l);
        }
    }
    for l in &lines[b..] {
        out.push_str(l);
    }
    out
}

/// Every regular file under `root` (as `find` lists them, `./…`) and its bytes, plus
/// `leaf/context.json` as `@leaf-context`.
fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let out = run("find", &[".", "-type", "f"], root).ok();
    let mut m = BTreeMap::new();
    for p in out.stdout.lines() {
        m.insert(p.to_string(), fs::read(root.join(p)).unwrap());
    }
    if let Ok(c) = fs::read(root.join("leaf/context.json")) {
        m.insert("@leaf-context".into(), c);
    }
    m
}

/// A reader walking the mount over and over: `tree`, the leaf's `context.json`, and
/// every file `find` lists, each read whole by `cat` into a record of its own, until
/// `stop` exists.
const READER: &str = r#"
n=0
while [ ! -e "$STOP" ]; do
  n=$((n+1))
  if cat tree > "$OUT/$n.0.data" 2>/dev/null; then printf %s ./tree > "$OUT/$n.0.path"; fi
  if cat leaf/context.json > "$OUT/$n.1.data" 2>/dev/null; then printf %s @leaf-context > "$OUT/$n.1.path"; fi
  find . -type f 2>/dev/null > "$OUT/list.$n"
  k=1
  while IFS= read -r f; do
    k=$((k+1))
    if cat "$f" > "$OUT/$n.$k.data" 2>/dev/null; then printf %s "$f" > "$OUT/$n.$k.path"; fi
  done < "$OUT/list.$n"
  rm -f "$OUT/list.$n"
  echo $n > "$OUT/passes.tmp" && mv "$OUT/passes.tmp" "$OUT/passes"
done
"#;

fn passes(out: &Path) -> u64 {
    fs::read_to_string(out.join("passes"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Renames `text` over `file` (written to a temporary file beside it first, synced:
/// how the CLI's rewrite replaces the file, with a new inode).
fn rename_over(file: &Path, text: &str) {
    let tmp = file.with_extension("jsonl.compact.tmp.5f3a");
    fs::write(&tmp, text).unwrap();
    fs::File::open(&tmp).unwrap().sync_all().unwrap();
    fs::rename(&tmp, file).unwrap();
}

/// The race: `file` (mounted, its session at `session_root`) switches between the whole
/// session and its in-place rewrite by renames, while a reader walks the session; every
/// read must be wholly one version's (or fail: a name from before a reload may answer
/// `ESTALE` or `ENOENT`), and each version must be read whole at least once.
fn rewrite_race(
    m: &Mount,
    session_root: &Path,
    file: &Path,
    expect: &[BTreeMap<String, Vec<u8>>; 2],
    texts: &[String; 2],
) {
    let out = m.dir().join("reads");
    fs::create_dir(&out).unwrap();
    let stop = m.dir().join("stop");
    let mut reader = std::process::Command::new("sh");
    reader
        .args(["-c", READER])
        .current_dir(session_root)
        .env("OUT", &out)
        .env("STOP", &stop)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = reader.spawn().unwrap();
    struct Stop<'a>(&'a Path, &'a mut std::process::Child);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            let _ = fs::write(self.0, b"");
            if !wait_until(Duration::from_secs(30), || {
                self.1.try_wait().ok().flatten().is_some()
            }) {
                let _ = self.1.kill();
                let _ = self.1.wait();
            }
        }
    }
    let guard = Stop(&stop, &mut child);
    // B, A, B, A, B, A: each a new inode under the same name.
    for round in 0..6 {
        let v = (round + 1) % 2;
        rename_over(file, &texts[v]);
        let tree = &expect[v]["./tree"];
        let mut last = None;
        let shown = wait_until(Duration::from_secs(20), || {
            let t = fs::read(session_root.join("tree"));
            let ok = t.as_ref().is_ok_and(|t| t == tree);
            last = Some(t.map(|t| String::from_utf8_lossy(&t).into_owned()));
            ok
        });
        assert!(
            shown,
            "round {round}: the mount never showed version {v}; last read: {last:?}\nwant:\n{}",
            String::from_utf8_lossy(tree)
        );
        // Two more passes: the second starts after the switch, and reads it.
        let p = passes(&out);
        let walked = wait_until(Duration::from_secs(60), || passes(&out) >= p + 2);
        assert!(walked, "round {round}: the reader stalled at pass {p}");
    }
    drop(guard);
    let mut reads = 0;
    let mut whole = [0u32; 2];
    for e in fs::read_dir(&out).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "path") {
            continue;
        }
        let rel = fs::read_to_string(&p).unwrap();
        let data = fs::read(p.with_extension("data")).unwrap();
        let from: Vec<usize> = (0..2)
            .filter(|&v| expect[v].get(&rel) == Some(&data))
            .collect();
        assert!(
            !from.is_empty(),
            "{rel} read as neither version ({} bytes):\n{}",
            data.len(),
            String::from_utf8_lossy(&data[..data.len().min(2000)])
        );
        if rel == "./tree" && from.len() == 1 {
            whole[from[0]] += 1;
        }
        reads += 1;
    }
    assert!(reads > 0);
    assert!(
        whole[0] > 0 && whole[1] > 0,
        "trees read per version: {whole:?}"
    );
}

/// Mounts `file`'s two versions on their own, read-only, and takes what each serves.
fn expected_versions(rel: &str) -> ([BTreeMap<String, Vec<u8>>; 2], [String; 2]) {
    let whole = fs::read_to_string(fixtures().join(format!("{rel}.jsonl"))).unwrap();
    let gc = gc_rewrite(&whole);
    assert!(gc.len() < whole.len() / 2, "the rewrite drops most lines");
    let texts = [whole, gc];
    let snaps = texts.clone().map(|t| {
        let dir = tempdir();
        let file = copy_fixture(rel, dir.path(), 0);
        fs::write(&file, &t).unwrap();
        let m = Mount::start(dir, file, &[]);
        snapshot(&m.mnt)
    });
    assert_ne!(snaps[0]["./tree"], snaps[1]["./tree"]);
    (snaps, texts)
}

#[test]
fn an_in_place_rewrite_is_served_one_version_at_a_time() {
    let (expect, texts) = expected_versions(TUI);
    let m = mount_fixture(TUI, 0, &[]);
    let file = m.file.clone();
    rewrite_race(&m, &m.mnt, &file, &expect, &texts);
    // The rewritten file reads as Claude Code's own view of it: the preserved answer
    // first, under it the boundary and what follows, the name from the side file.
    rename_over(&file, &texts[1]);
    assert!(wait_until(Duration::from_secs(20), || {
        fs::read(m.path("tree")).is_ok_and(|t| t == expect[1]["./tree"])
    }));
    let name = fs::read_to_string(m.path("name")).unwrap();
    assert_eq!(name, "TUI rewind demo\n");
}

#[test]
fn an_in_place_rewrite_in_a_sessions_directory_is_served_one_version_at_a_time() {
    let (expect, texts) = expected_versions(TUI);
    let dir = tempdir();
    let project = dir.path().join("projects/-work-kits-i17b-root-src-tui");
    fs::create_dir_all(&project).unwrap();
    let file = copy_fixture(TUI, &project, 0);
    let m = Mount::sessions_dir(
        dir,
        Some(&project.parent().unwrap().to_path_buf()),
        &[],
        &[],
    );
    let sid = file.file_stem().unwrap().to_string_lossy().into_owned();
    let root = m.mnt.join("-work-kits-i17b-root-src-tui").join(&sid);
    assert!(wait_until(Duration::from_secs(20), || root
        .join("tree")
        .is_file()));
    rewrite_race(&m, &root, &file, &expect, &texts);
}
