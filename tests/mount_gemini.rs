//! Gemini CLI sessions through real mounts (LAYOUT.md "Gemini CLI sessions",
//! GEMINI-FORMAT.md): every point of every fixture session
//! (`tests/fixtures/gemini/{samples,own}`), read with `cat` through a mount of a copy
//! of its CLI folder, equals what Gemini CLI 0.61.0 sends when it continues from there
//! (`contexts/*.contexts.json`, measured with the kit's `context.sh`); the leaf, the
//! tree of rewinds, subagents, names, `session.json`, KIND files, images; the other
//! ways to mount (the `tmp/` folder, one session file, the every-agent mount with
//! `GEMINI_CLI_HOME`); sessions and lines the CLI writes while mounted; replies
//! through the mount, checked against the lines the CLI accepted
//! (`tests/fixtures/gemini/accepts`); damaged files.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn gemini_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gemini")
}

/// A copy of `from` at `to`, its `.zst` files (large fixtures are kept compressed)
/// decompressed.
fn materialize(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        let name = e.file_name();
        if p.is_dir() {
            materialize(&p, &to.join(&name));
        } else if let Some(plain) = name.to_str().and_then(|n| n.strip_suffix(".zst")) {
            let f = fs::File::open(&p).unwrap();
            let mut dec =
                ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(f)).unwrap();
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut dec, &mut out).unwrap();
            fs::write(to.join(plain), out).unwrap();
        } else {
            fs::copy(&p, to.join(&name)).unwrap();
        }
    }
}

/// A copy of fixture set `set`'s CLI folder at `dir/.gemini`, and its contexts.
fn home_copy(dir: &Path, set: &str) -> PathBuf {
    let copy = dir.join("set");
    materialize(&gemini_dir().join(set), &copy);
    let home = dir.join(".gemini");
    fs::rename(copy.join("gemini-home"), &home).unwrap();
    home
}

/// Session id → (point id → what the kit measured), for set `set` (as copied in `dir`).
fn expected(dir: &Path) -> BTreeMap<String, serde_json::Map<String, Value>> {
    let mut out = BTreeMap::new();
    for e in fs::read_dir(dir.join("set/contexts")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let Some(sid) = name.strip_suffix(".contexts.json") else {
            continue;
        };
        let v: Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
        out.insert(sid.to_string(), v.as_object().unwrap().clone());
    }
    out
}

/// The project folder of a project path, as LAYOUT.md says: every `/` and `.` becomes
/// `-`.
fn project_of(path: &str) -> String {
    path.replace(['/', '.'], "-")
}

/// Session id → its project folder in the mount: the folder of its file's slug, named
/// by the slug's path in `projects.json`.
fn projects(
    home: &Path,
    sessions: &BTreeMap<String, serde_json::Map<String, Value>>,
) -> BTreeMap<String, String> {
    let pj: Value = serde_json::from_slice(&fs::read(home.join("projects.json")).unwrap()).unwrap();
    let by_slug: BTreeMap<String, String> = pj["projects"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(p, s)| (s.as_str().unwrap().to_string(), project_of(p)))
        .collect();
    let mut out = BTreeMap::new();
    for (sid, points) in sessions {
        let file = points.values().next().unwrap()["point"]["file"]
            .as_str()
            .unwrap();
        for slug in fs::read_dir(home.join("tmp")).unwrap() {
            let slug = slug.unwrap().path();
            let chats = slug.join("chats");
            let found = chats.join(file).is_file()
                || fs::read_dir(&chats)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|d| d.path().join(file).is_file());
            if found {
                let s = slug.file_name().unwrap().to_string_lossy().into_owned();
                out.insert(sid.clone(), by_slug[&s].clone());
            }
        }
    }
    out
}

/// `cat` of every file in `files` (relative to `cwd`), in one shell: their texts.
fn cat_all(cwd: &Path, files: &[String]) -> Vec<String> {
    let script = files
        .iter()
        .map(|f| format!("cat '{f}' && printf '\\0'"))
        .collect::<Vec<_>>()
        .join(" && ");
    let out = sh(&script, cwd).ok();
    let mut parts: Vec<String> = out.stdout.split('\0').map(str::to_owned).collect();
    parts.pop();
    assert_eq!(parts.len(), files.len());
    parts
}

fn readlink(p: &Path) -> String {
    fs::read_link(p)
        .unwrap_or_else(|e| panic!("readlink {}: {e}", p.display()))
        .to_string_lossy()
        .into_owned()
}

/// The entry a `leaf` or `branches/X` link names (its last component).
fn link_id(p: &Path) -> String {
    readlink(p).rsplit('/').next().unwrap().to_string()
}

/// The files of an entry's `.id/` directory that are no KIND file.
fn not_kind(n: &str) -> bool {
    matches!(
        n,
        "reply"
            | "fork"
            | "entry.json"
            | "context"
            | "context.json"
            | "cost"
            | "cost.json"
            | "parent"
            | "request"
            | "request.json"
    ) || n.starts_with("image-")
        || n.len() >= 32
}

/// What every session of `set` reads through a mount of its CLI folder: every point's
/// `context.json` (the same JSON, the same key order as the CLI's request), the leaf,
/// a KIND file and a `tree` line for every point. Returns (sessions, points).
fn every_point_reads_as_the_cli_sends_it(set: &str) -> (usize, usize) {
    let dir = tempdir();
    let home = home_copy(dir.path(), set);
    let want_all = expected(dir.path());
    let projects = projects(&home, &want_all);
    let m = Mount::sessions_dir(dir, Some(&home), &[], &[]);
    let mut differ = Vec::new();
    let (mut sessions, mut points) = (0, 0);
    for (sid, points_of) in &want_all {
        let project = &projects[sid];
        // A subagent's file is no session of the project: it is read inside its
        // session, under the call that ran it.
        let sub = points_of.values().next().unwrap()["point"]["file"]
            .as_str()
            .is_some_and(|f| !f.starts_with("session-"));
        let sdir = if sub {
            let parent = want_all
                .keys()
                .find(|k| {
                    home.join("tmp").read_dir().unwrap().flatten().any(|s| {
                        s.path()
                            .join("chats")
                            .join(k)
                            .join(format!("{sid}.jsonl"))
                            .is_file()
                    })
                })
                .unwrap()
                .clone();
            m.mnt.join(project).join(parent)
        } else {
            assert!(
                try_ls(&m.mnt.join(project)).unwrap().contains(sid),
                "{project} does not list {sid}"
            );
            m.mnt.join(project).join(sid)
        };
        sessions += 1;
        let ids: Vec<&String> = points_of.keys().collect();
        let files: Vec<String> = ids
            .iter()
            .map(|p| format!(".id/{p}/context.json"))
            .collect();
        for ((p, text), want) in ids
            .iter()
            .zip(cat_all(&sdir, &files))
            .zip(points_of.values())
        {
            points += 1;
            let got: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    differ.push(format!("{sid} {p}: not JSON ({e}): {text:.200}"));
                    continue;
                }
            };
            let want_c = &want["contents"];
            if serde_json::to_string(&got).unwrap() != serde_json::to_string(want_c).unwrap() {
                differ.push(format!(
                    "{sid} {p} ({}): {:.300}",
                    want["via"],
                    serde_json::to_string(&got).unwrap()
                ));
            }
            if !sub && want.get("leaf") == Some(&Value::Bool(true)) {
                assert_eq!(&link_id(&sdir.join("leaf")), *p, "{sid}: the leaf");
            }
        }
        let tree = fs::read_to_string(sdir.join("tree")).unwrap();
        for p in &ids {
            let d = sdir.join(".id").join(p);
            let kind: Vec<String> = try_ls(&d)
                .unwrap_or_else(|| panic!("{sid}: no .id/{p}"))
                .into_iter()
                .filter(|n| !not_kind(n))
                .collect();
            assert_eq!(kind.len(), 1, "{sid} {p}: {kind:?}");
            let text = fs::read_to_string(d.join(&kind[0])).unwrap();
            assert!(text.ends_with('\n'), "{sid} {p}");
            // A subagent's first point is drawn under its name, `agent-<its id>`.
            assert!(
                tree.contains(&p[..8]) || (sub && tree.contains(&format!("agent-{sid}"))),
                "{sid}: {p} not in tree:\n{tree}"
            );
        }
    }
    assert!(
        differ.is_empty(),
        "{set}: {} of {points} contexts differ from the CLI's:\n{}",
        differ.len(),
        differ.join("\n")
    );
    (sessions, points)
}

// §3, §5: every point of the kit's samples (Q&A and resumes, tools, an image, a
// 100,000-line output, a failed request, compression, a subagent, an import, the TUI's
// rewind, checkpoint, /compress, an interrupted turn).
#[test]
fn every_sample_point_reads_through_the_mount_as_the_cli_sends_it() {
    let (sessions, points) = every_point_reads_as_the_cli_sends_it("samples");
    assert_eq!(sessions, 11);
    assert!(points >= 90, "{points}");
}

// The same for the held-out sessions: three rewinds, a TUI tool loop with an
// interrupt, a 60-entry session with a rewind past a huge output, tool loops after
// resumes.
#[test]
fn every_own_point_reads_through_the_mount_as_the_cli_sends_it() {
    let (sessions, points) = every_point_reads_as_the_cli_sends_it("own");
    assert_eq!(sessions, 3);
    assert!(points >= 100, "{points}");
}

/// The lines of `bytes`, with the record's `id` and every time replaced: what a reply
/// writes whatever the clock and the random ids.
fn shapes(bytes: &[u8], id: &str) -> Vec<String> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let time = regex::Regex::new(r#""\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z""#).unwrap();
    text.lines()
        .map(|l| {
            time.replace_all(&l.replace(id, "ID"), "\"TIME\"")
                .into_owned()
        })
        .collect()
}

/// The id of the user record among `bytes`' lines.
fn record_id(bytes: &[u8]) -> String {
    for l in String::from_utf8_lossy(bytes).lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        if v["type"] == "user" {
            return v["id"].as_str().unwrap().to_string();
        }
    }
    panic!("no user record in {}", String::from_utf8_lossy(bytes));
}

// §9: a reply through the mount at the leaf and at every kind of earlier entry writes
// what the real CLI resumed from (scripts/gemini-accepts: the CLI listed the session,
// sent the reply last and exactly the new entry's context.json, and only appended),
// and the new entry is the leaf, under the entry replied at.
#[test]
fn a_reply_writes_what_the_cli_accepted() {
    let acc = gemini_dir().join("accepts");
    let cases = fs::read_to_string(acc.join("cases.tsv")).unwrap();
    let mut n = 0;
    for line in cases
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let f: Vec<&str> = line.split('\t').collect();
        let (name, set, file, entry) = (f[0], f[1], f[2], f[3]);
        let report: Value =
            serde_json::from_slice(&fs::read(acc.join(format!("{name}.json"))).unwrap()).unwrap();
        assert_eq!(report["ok"], true, "{name}: {report}");
        assert_eq!(report["equalsMountContext"], true, "{name}");
        let accepted = fs::read(acc.join(format!("{name}.written.jsonl"))).unwrap();

        let dir = tempdir();
        let home = home_copy(dir.path(), set);
        let session = home.join("tmp").join(file);
        let size = fs::metadata(&session).unwrap().len();
        let m = Mount::start(dir, session.clone(), &[]);
        let text =
            format!("[[APPENDED]] sessionfs reply ({name}): é — 日本語 \"quoted\"\nsecond line");
        let reply = match entry {
            "root" => "reply".to_string(),
            "leaf" => "leaf/reply".to_string(),
            id => format!(".id/{id}/reply"),
        };
        let before_leaf = link_id(&m.mnt.join("leaf"));
        let mut c = std::process::Command::new("sh");
        c.args(["-c", &format!("printf '%s' \"$T\" > {reply}")])
            .current_dir(&m.mnt)
            .env("T", &text);
        run_command(c).ok();
        let written = fs::read(&session).unwrap()[size as usize..].to_vec();
        let id = record_id(&written);
        assert_eq!(
            shapes(&written, &id),
            shapes(&accepted, &record_id(&accepted)),
            "{name}"
        );
        // The new entry is the leaf, under the entry replied at, and says what it is.
        assert_eq!(link_id(&m.mnt.join("leaf")), id, "{name}");
        let parent = fs::read_link(m.mnt.join(".id").join(&id).join("parent")).ok();
        match entry {
            "root" => assert!(parent.is_none(), "{name}"),
            "leaf" => assert_eq!(
                parent.unwrap().to_string_lossy(),
                format!("../{before_leaf}")
            ),
            e => assert_eq!(
                parent.unwrap().to_string_lossy(),
                format!("../{e}"),
                "{name}"
            ),
        }
        assert_eq!(
            fs::read_to_string(m.mnt.join(".id").join(&id).join("user")).unwrap(),
            format!("{text}\n")
        );
        n += 1;
    }
    assert!(n >= 16, "{n} cases");
}
