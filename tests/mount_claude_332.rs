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
    eprintln!(
        "{reads} reads, each wholly one version's; tree read {} times as the whole \
         file, {} times as the rewrite",
        whole[0], whole[1]
    );
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
    let m = Mount::sessions_dir(dir, Some(project.parent().unwrap()), &[], &[]);
    let sid = file.file_stem().unwrap().to_string_lossy().into_owned();
    let root = m.mnt.join("-work-kits-i17b-root-src-tui").join(&sid);
    assert!(wait_until(Duration::from_secs(20), || root
        .join("tree")
        .is_file()));
    rewrite_race(&m, &root, &file, &expect, &texts);
}

fn sh_ok(script: &str, cwd: &Path) -> String {
    sh(script, cwd).ok().stdout
}

#[test]
fn attachments_read_as_what_they_are_and_keep_tree_short() {
    let m = mount_fixture(WITHDRAWN, 0, &["--read-only"]);
    // 29 entries on 13 lines: the two runs of nine attachments take a line each.
    let lines = sh_ok("wc -l < tree", &m.mnt);
    assert_eq!(lines.trim(), "13", "{}", sh_ok("cat tree", &m.mnt));
    let run = sh_ok("grep -m1 'attachments ×9' tree", &m.mnt);
    assert!(
        run.contains("model claude-opus-5-5 (Opus 5.5); tools +CronCreate"),
        "{run}"
    );
    // Each attachment is still an entry of its own, found by grep -r.
    let hits = sh_ok(
        "grep -rl 'You are powered by the model named Opus 5.5' . | sort",
        &m.mnt,
    );
    assert_eq!(hits.lines().count(), 2, "{hits}");
    assert!(hits.lines().all(|l| l.ends_with("/attachment")), "{hits}");
    let model = sh_ok(
        "cat \"$(grep -rl 'You are powered by the model' . | head -1)\"",
        &m.mnt,
    );
    assert!(
        model.starts_with("[attachment model, sent as system text]\n"),
        "{model}"
    );
    // `check` knows every line 2.1.332 writes.
    let out = sessionfs(&["check".as_ref(), m.file.as_os_str()], Path::new("/"));
    assert!(out.status.success(), "{out:?}");
    assert!(!out.stdout.contains("unknown"), "{}", out.stdout);
}

#[test]
fn rewinds_give_the_clis_leaf_and_keep_the_old_branch() {
    // The SDK's rewind, then two more prompts: they continue from the cut.
    let m = mount_fixture(SDK_CONTINUED, 0, &["--read-only"]);
    let leaf = sh_ok("readlink leaf", &m.mnt);
    assert_eq!(leaf.trim(), ".id/a377fc9c-6ca7-4a5c-8f23-13407af6d028");
    let branches = sh_ok("ls branches", &m.mnt);
    assert_eq!(branches.lines().count(), 2, "{branches}");
    // The rewound branch is there to read: the cut prompt and the answers after it.
    let old = sh_ok(
        "cat \"$(find . -path '*a352f650-3d3a-42b9-b79f-03d75fcf68ab/user')\"",
        &m.mnt,
    );
    assert_eq!(old, "[[REW2]] Second question: another colour.\n");
    assert!(sh_ok("cat tree", &m.mnt).contains("Answer three: blue."));
    drop(m);
    // Cut right after the rewind's checkpoint: the chain end is the node before the cut.
    let m = mount_fixture(SDK_CONTINUED, 35, &["--read-only"]);
    assert_eq!(
        sh_ok("readlink leaf", &m.mnt).trim(),
        ".id/a5cb66fe-3c15-4509-b2bd-33f8d91de870"
    );
    drop(m);
    // The TUI's checkpoint with a nil leaf, right after the rewind's new prompt.
    let m = mount_fixture(TUI, 54, &["--read-only"]);
    assert_eq!(
        sh_ok("readlink leaf", &m.mnt).trim(),
        ".id/caca5394-5e2b-432b-9e24-ce2fe795f08a"
    );
}

#[test]
fn a_withdrawn_checkpoint_has_no_leaf_and_the_next_reply_is_a_new_root() {
    let m = mount_fixture(WITHDRAWN, 31, &[]);
    // No chain end: Claude Code's next prompt starts a new conversation in the file.
    let out = sh("test -e leaf || test -L leaf", &m.mnt);
    assert!(
        !out.status.success(),
        "leaf exists: {:?}",
        sh("ls -l leaf", &m.mnt)
    );
    sh_ok("echo 'Start over' > reply", &m.mnt);
    let last: Vec<Value> = fs::read_to_string(&m.file)
        .unwrap()
        .lines()
        .rev()
        .take(2)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let user = last
        .iter()
        .find(|v| v["type"] == "user")
        .expect("a user line");
    assert_eq!(user["parentUuid"], Value::Null);
    assert_eq!(user["message"]["content"], "Start over");
    let uuid = user["uuid"].as_str().unwrap().to_string();
    let ok = wait_until(Duration::from_secs(10), || {
        fs::read_link(m.path("leaf")).is_ok_and(|l| l.to_string_lossy() == format!(".id/{uuid}"))
    });
    assert!(ok, "leaf: {:?}", fs::read_link(m.path("leaf")));
    // The first conversation is still there, as the other root.
    let roots = sh_ok("ls | grep -c -e '-.*-.*-.*-'", &m.mnt);
    assert_eq!(roots.trim(), "2", "{}", sh_ok("ls", &m.mnt));
}

#[test]
fn custom_title_json_names_a_mounted_session() {
    let m = mount_fixture(SDK_CONTINUED, 0, &["--read-only"]);
    // Untitled: the last prompt typed (`last-prompt`), as Claude Code's picker shows it.
    assert_eq!(
        sh_ok("cat name", &m.mnt),
        "[[REW3b]] Third question on the new branch.\n"
    );
    let side = m.file.with_extension("");
    fs::create_dir_all(&side).unwrap();
    // Written by `/rename` beside the session, as Claude Code 2.1.332 writes it.
    let tmp = side.join("custom-title.json.tmp");
    fs::write(
        &tmp,
        r#"{"customTitle":"Colour quiz","by":"user","at":"2026-12-01T20:44:03.116Z"}"#,
    )
    .unwrap();
    fs::rename(&tmp, side.join("custom-title.json")).unwrap();
    let ok = wait_until(Duration::from_secs(10), || {
        fs::read_to_string(m.path("name")).is_ok_and(|n| n == "Colour quiz\n")
    });
    assert!(ok, "name: {:?}", fs::read_to_string(m.path("name")));
}

#[test]
fn a_torn_tail_sealed_by_the_next_append_is_skipped() {
    // Two turns, the last line cut in the middle (a crash mid-write).
    let dir = tempdir();
    let file = copy_fixture(WITHDRAWN, dir.path(), 27);
    let mut text = fs::read_to_string(&file).unwrap();
    let last = text.trim_end_matches('\n').rfind('\n').unwrap() + 1;
    let torn_line = text[last..].to_string();
    assert!(torn_line.contains("\"uuid\":\"800cfba5-"), "{torn_line}");
    text.truncate(last + torn_line.len() / 2);
    fs::write(&file, &text).unwrap();
    let m = Mount::start(dir, file.clone(), &["--read-only"]);
    assert!(!sh_ok("cat tree", &m.mnt).contains("800cfba5-"));
    // The CLI seals the torn line with "\n", then appends its own lines.
    let next = r#"{"parentUuid":"175dba0b-6abe-4a53-b4e6-245082d24618","isSidechain":false,"type":"user","message":{"role":"user","content":"After the crash"},"uuid":"5eed0000-0000-4000-8000-000000000001","timestamp":"2026-12-01T20:50:00.000Z","userType":"external","entrypoint":"sdk-cli","cwd":"/tmp","sessionId":"0b082ba5-8298-406b-917d-4d2a32f1ec81","version":"2.1.332","gitBranch":"HEAD"}"#;
    let mut f = fs::OpenOptions::new().append(true).open(&file).unwrap();
    std::io::Write::write_all(&mut f, format!("\n{next}\n").as_bytes()).unwrap();
    drop(f);
    let ok = wait_until(Duration::from_secs(10), || {
        fs::read_to_string(m.path(".id/5eed0000-0000-4000-8000-000000000001/user"))
            .is_ok_and(|t| t == "After the crash\n")
    });
    assert!(ok);
    assert!(!sh_ok("cat tree", &m.mnt).contains("800cfba5-"));
    let out = sessionfs(&["check".as_ref(), file.as_os_str()], Path::new("/"));
    assert!(
        out.stdout.contains(":27: warning: malformed line"),
        "{}",
        out.stdout
    );
}

/// The pickers fixture (`scripts/claude-pickers`): sessions Claude Code 2.1.332 wrote,
/// what its picker showed, and its own fork next to one made by sessionfs.
fn pickers() -> PathBuf {
    fixtures().join("pickers")
}

const PICK_QA: &str = "43057d80-2401-4f3d-8517-94abc3e01e19";
const PICK_CLI_FORK: &str = "79a4d8f1-416d-48ac-8cd3-c307c27e8c9e";

/// The lines of a session file of the pickers fixture, parsed.
fn pick_lines(project: &str, sid: &str) -> Vec<Value> {
    fs::read_to_string(pickers().join(format!("claude-home/projects/{project}/{sid}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

// docs/LAYOUT.md "Claude Code sessions", `name`: an untitled session is named by the
// last prompt typed (its last `last-prompt`), as `claude --resume`'s picker shows it
// (tests/fixtures/claude-332/pickers/picker.txt), not by its first prompt; a named one
// by its name.
#[test]
fn sessions_are_named_as_claude_resume_shows_them() {
    let dir = tempdir();
    let projects = dir.path().join("projects");
    copy_tree(&pickers().join("claude-home/projects"), &projects);
    let m = Mount::sessions_dir(dir, Some(&projects), &["--read-only"], &[]);
    let screen = fs::read_to_string(pickers().join("picker.txt")).unwrap();
    let shown: Vec<String> = screen
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("❯ "))
        .map(|l| l.trim().to_string())
        .collect();
    assert_eq!(shown.len(), 1, "{screen}");
    let tui = try_ls(&m.mnt.join("-home-dev-src-tui")).unwrap();
    let name =
        fs::read_to_string(m.mnt.join("-home-dev-src-tui").join(&tui[0]).join("name")).unwrap();
    assert_eq!(name.trim_end(), shown[0]);
    // Untitled, compacted, resumed: its last prompt, not its first.
    let qa = fs::read_to_string(m.mnt.join(format!("-home-dev-src-qa/{PICK_QA}/name"))).unwrap();
    assert_eq!(qa, "[[AFTERCOMPACT]] What do you remember?\n");
    let named = try_ls(&m.mnt.join("-home-dev-src-named")).unwrap();
    let name = fs::read_to_string(
        m.mnt
            .join("-home-dev-src-named")
            .join(&named[0])
            .join("name"),
    )
    .unwrap();
    assert_eq!(name, "A named session\n");
}

// docs/LAYOUT.md "Fork": a fork through the mount writes what `claude --resume SID
// --fork-session` writes: its `last-prompt` names the last prompt typed on the copied
// path (the CLI's fork's, not the `/compact` command after the compaction), and Claude
// Code's own tally (`cost-state`) goes on from the source's. Measured: resuming
// sessionfs's fork, Claude Code reported the same total_cost_usd as resuming its own
// fork with the same prompt (tests/fixtures/claude-332/pickers/steps.txt).
#[test]
fn a_fork_through_the_mount_writes_what_fork_session_writes() {
    let steps = fs::read_to_string(pickers().join("steps.txt")).unwrap();
    let total = |step: &str| {
        steps
            .lines()
            .find(|l| l.starts_with(step))
            .and_then(|l| l.rsplit(' ').next())
            .unwrap()
            .to_string()
    };
    assert_eq!(
        total("11-print-fork"),
        total("12-resume-our-fork"),
        "{steps}"
    );
    let dir = tempdir();
    let projects = dir.path().join("projects");
    copy_tree(&pickers().join("claude-home/projects"), &projects);
    let m = Mount::sessions_dir(dir, Some(&projects), &[], &[]);
    let s = m.mnt.join(format!("-home-dev-src-qa/{PICK_QA}"));
    let source = pick_lines("-home-dev-src-qa", PICK_QA);
    sh("echo > leaf/fork", &s).ok();
    let fork = fs::read_to_string(s.join("leaf/fork")).unwrap();
    let path = PathBuf::from(fork.lines().next().unwrap());
    let lines: Vec<Value> = fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sid = path.file_stem().unwrap().to_str().unwrap();
    let last_prompt = lines
        .iter()
        .rev()
        .find(|l| l["type"] == "last-prompt")
        .unwrap();
    let cli = pick_lines("-home-dev-src-qa", PICK_CLI_FORK);
    let cli_prompt = cli
        .iter()
        .rev()
        .find(|l| l["type"] == "last-prompt")
        .unwrap();
    assert_eq!(last_prompt["lastPrompt"], cli_prompt["lastPrompt"]);
    assert_eq!(
        last_prompt["lastPrompt"],
        "[[AFTERCOMPACT]] What do you remember?"
    );
    let mut cost = lines
        .iter()
        .rev()
        .find(|l| l["type"] == "cost-state")
        .expect("a cost-state line")
        .clone();
    assert_eq!(cost["sessionId"], sid);
    let mut want = source
        .iter()
        .rev()
        .find(|l| l["type"] == "cost-state")
        .unwrap()
        .clone();
    want["sessionId"] = sid.into();
    cost["sessionId"] = sid.into();
    assert_eq!(cost, want);
    // The new session's `cost` shows Claude Code's own count from there.
    let new_dir = PathBuf::from(fork.lines().nth(1).unwrap());
    let c = fs::read_to_string(new_dir.join("cost")).unwrap();
    assert!(c.contains("(cost-state)") && c.contains("$0.0526"), "{c}");
}
