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

const QA: &str = "7fb7d652-217c-47ce-af29-36bb75378f8d";
const SUB: &str = "60b5bfa0-fc6c-46ae-84cc-e9dc0870dad1";
const SUBAGENT: &str = "b99483c7-67ed-4019-993a-e39d9e0207d7";
const TUI: &str = "4d2a47a1-9440-47e8-80e2-0fb503511a2b";

// §1: sessions by project path (projects.json), one directory per session id;
// start-up stubs and subagents' files are no sessions of their own; the name is the
// summary or the first prompt, as the CLI's browser shows it; session.json is the
// metadata as the CLI merges it.
#[test]
fn the_cli_folder_lists_sessions_by_project() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = Mount::sessions_dir(dir, Some(&home), &[], &[]);
    let projects = try_ls(&m.mnt).unwrap();
    assert_eq!(projects.len(), 9, "{projects:?}");
    assert!(projects.iter().all(|p| p.starts_with("-home-dev-src-")));
    // `compress` was resumed in a later minute: its stub (same id) is not a second
    // session; `sessfile` holds the copied session and the import, not the import's stub.
    assert_eq!(
        try_ls(&m.mnt.join("-home-dev-src-compress")).unwrap().len(),
        1
    );
    assert_eq!(
        try_ls(&m.mnt.join("-home-dev-src-sessfile")).unwrap().len(),
        2
    );
    assert_eq!(try_ls(&m.mnt.join("-home-dev-src-sub")).unwrap(), vec![SUB]);
    let qa = m.mnt.join("-home-dev-src-qa").join(QA);
    assert_eq!(
        fs::read_to_string(qa.join("name")).unwrap(),
        "[[QA1]] What is 2+2?\n"
    );
    let j: Value = serde_json::from_slice(&fs::read(qa.join("session.json")).unwrap()).unwrap();
    assert_eq!(j["format"], "gemini-cli");
    assert_eq!(j["sessionId"], QA);
    assert_eq!(j["project"], "/home/dev/src/qa");
    assert!(
        j["lastUpdated"]
            .as_str()
            .unwrap()
            .starts_with("2026-12-05T07:36:")
    );
    assert!(j.get("messages").is_none());
    // The tree: the TUI session's rewind is a branch, its compression and restored
    // checkpoint start new roots; branches/ lists each tip.
    let tui = m.mnt.join("-home-dev-src-tui").join(TUI);
    let tree = fs::read_to_string(tui.join("tree")).unwrap();
    assert!(tree.contains("compaction: <state_snapshot>"), "{tree}");
    assert!(tree.contains("← leaf"));
    assert_eq!(try_ls(&tui.join("branches")).unwrap().len(), 6);
    let roots: Vec<String> = try_ls(&tui)
        .unwrap()
        .into_iter()
        .filter(|n| n.len() == 36)
        .collect();
    assert_eq!(roots.len(), 3, "{roots:?}");
}

// §6: a subagent's entries hang under the call that ran it, as `agent-<its id>`; its
// reply files refuse writes (the CLI resumes main sessions only); its cost adds to the
// call's.
#[test]
fn a_subagent_is_read_inside_the_session_that_ran_it() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = Mount::sessions_dir(dir, Some(&home), &[], &[]);
    let s = m.mnt.join("-home-dev-src-sub").join(SUB);
    let call = s.join("1ac67e9d-821a-4f66-b3e8-85bb2c555735/5c5020fd-7d07-4637-9d43-b31ee6666311");
    let agent = call.join(format!("agent-{SUBAGENT}"));
    assert_eq!(
        fs::read_to_string(agent.join("user")).unwrap(),
        "[[SUBTASK]] Count the files in the current folder.\n"
    );
    assert!(
        fs::read_to_string(call.join("assistant"))
            .unwrap()
            .contains(&format!("[subagent agent-{SUBAGENT}]"))
    );
    // Known to fail, so refused at open: the file shows no write bit.
    let r = sh("echo hi > reply", &agent);
    assert_ne!(r.code(), Some(0));
    assert!(r.stderr.contains("Permission denied"), "{}", r.stderr);
    assert!(
        fs::metadata(agent.join("reply"))
            .unwrap()
            .permissions()
            .readonly()
    );
    // The subagent's replies cost something: the call's running total includes them.
    let cost = fs::read_to_string(call.join("cost")).unwrap();
    assert!(cost.contains("subagents"), "{cost}");
}

// A single session file mounts alone (its subagents with it); `sessionfs mount
// ~/.gemini/tmp MNT` is the same as the CLI folder; `sessionfs mount MNT` shows
// `gemini/` beside the other agents, from $GEMINI_CLI_HOME/.gemini.
#[test]
fn one_session_the_tmp_folder_and_the_every_agent_mount() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let file = home.join("tmp/sub/chats/session-2026-12-05T07-38-60b5bfa0.jsonl");
    let m = Mount::start(dir, file, &[]);
    assert_eq!(
        link_id(&m.mnt.join("leaf")),
        "81cd13e8-75ad-4f18-b10a-800e83a3c23d"
    );
    assert!(m.mnt.join(format!(".id/agent-{SUBAGENT}")).is_dir());
    drop(m);

    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let tmp = home.join("tmp");
    let m = Mount::sessions_dir(dir, Some(&tmp), &[], &[]);
    assert_eq!(try_ls(&m.mnt).unwrap().len(), 9);
    drop(m);

    let dir = tempdir();
    let cli_home = dir.path().join("cli-home");
    fs::create_dir_all(&cli_home).unwrap();
    let home = home_copy(&cli_home, "samples");
    assert!(home.ends_with("cli-home/.gemini"));
    let h = dir.path().join("nobody-home");
    fs::create_dir_all(&h).unwrap();
    let m = Mount::sessions_dir(
        dir,
        None,
        &[],
        &[
            ("HOME", h.as_os_str()),
            ("GEMINI_CLI_HOME", cli_home.as_os_str()),
        ],
    );
    let agents = try_ls(&m.mnt).unwrap();
    assert!(agents.contains(&"gemini".to_string()), "{agents:?}");
    let qa = m.mnt.join("gemini/-home-dev-src-qa").join(QA);
    assert_eq!(
        fs::read_to_string(qa.join("name")).unwrap(),
        "[[QA1]] What is 2+2?\n"
    );
    drop(m);

    // Without GEMINI_CLI_HOME: ~/.gemini.
    let dir = tempdir();
    let h = dir.path().join("home");
    fs::create_dir_all(&h).unwrap();
    home_copy(&h, "samples");
    let m = Mount::sessions_dir(dir, None, &[], &[("HOME", h.as_os_str())]);
    assert!(try_ls(&m.mnt).unwrap().contains(&"gemini".to_string()));
    assert!(
        m.mnt
            .join("gemini/-home-dev-src-qa")
            .join(QA)
            .join("leaf")
            .exists()
    );
}

/// Appends `lines` (each a JSON line) to `file`, as the CLI does: one write each.
fn append(file: &Path, lines: &[String]) {
    use std::io::Write;
    let mut f = fs::OpenOptions::new().append(true).open(file).unwrap();
    for l in lines {
        f.write_all(format!("{l}\n").as_bytes()).unwrap();
    }
}

fn user_record(id: &str, text: &str) -> String {
    serde_json::json!({"id": id, "timestamp": "2026-12-05T09:00:01.000Z", "type": "user",
                       "content": [{"text": text}]})
    .to_string()
}

fn reply_record(id: &str, text: &str) -> String {
    serde_json::json!({"id": id, "timestamp": "2026-12-05T09:00:02.000Z", "type": "gemini",
                       "content": text, "thoughts": [], "model": "gemini-3.8-flash",
                       "tokens": {"input": 100, "output": 5, "cached": 0, "thoughts": 0, "tool": 0, "total": 105}})
    .to_string()
}

// Sessions and lines the CLI writes while mounted show up: a start's stub file is no
// session until its first prompt is written, then it is listed; a prompt and a reply
// appended to a session are entries and the leaf; a resume (stub lines, the history
// written again) moves no entry: what was read before is what is read after.
#[test]
fn what_the_cli_writes_while_mounted_shows_up() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let chats = home.join("tmp/qa/chats");
    let m = Mount::sessions_dir(dir, Some(&home), &[], &[]);
    let project = m.mnt.join("-home-dev-src-qa");
    assert_eq!(try_ls(&project).unwrap(), vec![QA]);

    // A new session: the stub first.
    let sid = "aaaaaaaa-0000-4000-8000-000000000001";
    let new = chats.join("session-2026-12-05T09-00-aaaaaaaa.jsonl");
    let ctx = r#"{"id":"d04923d38bb0f6017037e74183378ef4","timestamp":"2026-12-05T09:00:00.000Z","type":"user","content":[{"text":"<session_context>\nx\n</session_context>"}]}"#;
    fs::write(
        &new,
        format!(
            "{}\n{{\"$set\":{{\"messages\":[{ctx}]}}}}\n",
            serde_json::json!({"sessionId": sid, "projectHash": "h", "startTime": "2026-12-05T09:00:00.000Z",
                               "lastUpdated": "2026-12-05T09:00:00.000Z", "kind": "main"})
        ),
    )
    .unwrap();
    // Its first prompt makes it a session.
    append(
        &new,
        &[
            user_record("u-1", "[[LIVE]] A new session."),
            r#"{"$set":{"lastUpdated":"2026-12-05T09:00:01.000Z"}}"#.into(),
        ],
    );
    assert!(
        wait_until(DEADLINE, || try_ls(&project)
            .is_some_and(|l| l.contains(&sid.to_string()))),
        "the new session is not listed: {:?}",
        try_ls(&project)
    );
    let s = project.join(sid);
    assert_eq!(
        fs::read_to_string(s.join("name")).unwrap(),
        "[[LIVE]] A new session.\n"
    );
    append(&new, &[reply_record("g-1", "Live reply.")]);
    assert!(wait_until(DEADLINE, || fs::read_link(s.join("leaf"))
        .is_ok_and(|l| l.ends_with("g-1"))));
    assert_eq!(
        fs::read_to_string(s.join("u-1/g-1/assistant")).unwrap(),
        "Live reply.\n"
    );

    // A resume of the Q&A session in the same minute: the stub lines, the session id,
    // the history again, then a prompt. The entries read before keep their inodes.
    use std::os::unix::fs::MetadataExt;
    let qa = project.join(QA);
    let old_leaf = link_id(&qa.join("leaf"));
    let kind = qa.join(".id").join(&old_leaf).join("assistant");
    let ino = fs::metadata(&kind).unwrap().ino();
    let file = chats.join("session-2026-12-05T07-36-7fb7d652.jsonl");
    let text = fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let history = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("{\"$set\":{\"messages\":") && l.matches("\"id\":").count() > 2)
        .unwrap();
    append(
        &file,
        &[
            lines[0].to_string(),
            format!("{{\"$set\":{{\"messages\":[{ctx}]}}}}"),
            format!("{{\"$set\":{{\"sessionId\":\"{QA}\"}}}}"),
            history.to_string(),
            user_record("u-2", "[[LIVE]] After the resume."),
        ],
    );
    assert!(wait_until(DEADLINE, || fs::read_link(qa.join("leaf"))
        .is_ok_and(|l| l.ends_with("u-2"))));
    assert_eq!(fs::metadata(&kind).unwrap().ino(), ino);
    // The new prompt follows the history as the resume wrote it (here the copy of an
    // earlier resume's, which ends one turn before the leaf: that turn is a branch now).
    let h: Value = serde_json::from_str(history).unwrap();
    let last = h["$set"]["messages"].as_array().unwrap().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(last, old_leaf);
    assert_eq!(
        fs::read_link(qa.join(".id/u-2/parent"))
            .unwrap()
            .to_string_lossy(),
        format!("../{last}")
    );
    assert!(try_ls(&qa.join("branches")).unwrap().contains(&old_leaf));
}

/// Every live reply's tokens in the session files under `home`: the last live record
/// of each message id (a reply is written again with its tool results), counted once
/// over every file (`--session-file` copies records with their ids and times).
fn recorded_tokens(home: &Path) -> (u64, u64) {
    let mut last: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    let mut stack = vec![home.join("tmp")];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            // id → ((id, time), (total, output)) of its last live record in this file.
            type Last = ((String, String), (u64, u64));
            let mut here: BTreeMap<String, Last> = BTreeMap::new();
            for l in fs::read_to_string(&p).unwrap().lines() {
                let Ok(v) = serde_json::from_str::<Value>(l) else {
                    continue;
                };
                if v["type"] != "gemini" || !v["tokens"].is_object() {
                    continue;
                }
                let t = &v["tokens"];
                let n = |k: &str| t[k].as_u64().unwrap_or(0);
                let id = v["id"].as_str().unwrap().to_string();
                let ts = v["timestamp"].as_str().unwrap_or("").to_string();
                here.insert(
                    id.clone(),
                    ((id, ts), (n("total"), n("output") + n("thoughts"))),
                );
            }
            for (_, (k, v)) in here {
                last.insert(k, v);
            }
        }
    }
    last.values().fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

// §2.2 tokens: `sessionfs usage` of a CLI folder counts every reply once, with its
// last live record (a resume's copies have none; a reply copied into an import counts
// in the session it came from), subagents included; `cost` of an entry is priced with
// the table given, tokens as the Gemini API bills them.
#[test]
fn usage_and_cost_count_each_reply_once() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let out = sessionfs(&["usage", "--json", home.to_str().unwrap()], dir.path()).ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let sessions = v["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 10, "{}", out.stdout);
    assert!(sessions.iter().all(|s| s["agent"] == "gemini-cli"));
    let total: u64 = sessions
        .iter()
        .map(|s| s["totalTokens"].as_u64().unwrap())
        .sum();
    let (want_total, want_output) = recorded_tokens(&home);
    assert_eq!(total, want_total);
    let output: u64 = sessions
        .iter()
        .map(|s| s["outputTokens"].as_u64().unwrap())
        .sum();
    assert_eq!(output, want_output);

    // Priced: a table that knows the model.
    let prices = dir.path().join("prices.json");
    fs::write(
        &prices,
        r#"{"gemini-3.8-flash":{"input_cost_per_token":0.000001,"output_cost_per_token":0.00001,"cache_read_input_token_cost":0.0000001}}"#,
    )
    .unwrap();
    let m = Mount::sessions_dir(
        dir,
        Some(&home),
        &["--prices", prices.to_str().unwrap()],
        &[],
    );
    let e = m
        .mnt
        .join("-home-dev-src-tools/ac5699fe-16fb-4346-9e5e-3700a4f37493/.id/e9f64f73-c06c-4593-afae-80a4032447d8");
    let cost: Value = serde_json::from_slice(&fs::read(e.join("cost.json")).unwrap()).unwrap();
    // {"input":11560,"output":48,"cached":0,"thoughts":12,"tool":0,"total":11620}
    let want = 11560.0 * 0.000001 + 60.0 * 0.00001;
    let usage = &cost["entry"]["usage"];
    let got = usage["cost"].as_f64().unwrap_or(f64::NAN);
    assert!((got - want).abs() < 1e-12, "{cost}");
    assert_eq!(usage["totalTokens"], 11620);
    assert_eq!(cost["entry"]["costFrom"], "prices");
}

// §10: damaged files. `sessionfs check` names each damage at its line, in the CLI's
// words, with exit status 1, and leaves the files as they were; the mount shows what
// the CLI would read: a torn last line waits, garbage is skipped, an unknown
// `$rewindTo` leaves no leaf (the conversation is empty) but every entry reachable.
#[test]
fn damaged_files_mount_and_check_names_the_damage() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "damaged");
    let before = recorded_tokens(&home);
    let out = sessionfs(&["check", "--json", home.to_str().unwrap()], dir.path());
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    let mut found: BTreeMap<String, Vec<(u64, String)>> = BTreeMap::new();
    for l in out.stdout.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["format"], "gemini-cli");
        let slug = v["file"]
            .as_str()
            .unwrap()
            .split('/')
            .rev()
            .nth(2)
            .unwrap()
            .to_string();
        let ps = v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["line"].as_u64().unwrap(),
                    p["kind"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        found.insert(slug, ps);
    }
    let want = |s: &str| found.get(s).cloned().unwrap_or_default();
    assert_eq!(want("dmg-torn"), [(29, "torn-last-line".to_string())]);
    assert_eq!(
        want("dmg-garbage"),
        [
            (13, "malformed".to_string()),
            (14, "gemini-unknown-line".to_string()),
            (15, "not-an-object".to_string()),
            (16, "blank".to_string())
        ]
    );
    assert_eq!(
        want("dmg-rewind-unknown"),
        [(31, "gemini-rewind-unknown".to_string())]
    );
    assert_eq!(
        want("dmg-no-metadata"),
        [(0, "gemini-no-metadata".to_string())]
    );
    assert!(want("dmg-odd-records").contains(&(7, "gemini-not-a-record".to_string())));
    assert_eq!(recorded_tokens(&home), before);

    let m = Mount::sessions_dir(dir, Some(&home), &[], &[]);
    let only = |p: &str| {
        let d = m.mnt.join(p);
        d.join(&try_ls(&d).unwrap()[0])
    };
    assert_eq!(
        link_id(&only("-home-dev-src-dmg-torn").join("leaf")),
        "fea07fd2-0488-4569-988b-27f978b5dae7"
    );
    let rw = only("-home-dev-src-dmg-rewind-unknown");
    assert!(fs::symlink_metadata(rw.join("leaf")).is_err());
    assert!(
        rw.join(".id/34ee7f52-f22a-44dc-a501-a74dc0afca9e/assistant")
            .is_file()
    );
    assert_eq!(
        fs::read_to_string(rw.join(".id/34ee7f52-f22a-44dc-a501-a74dc0afca9e/assistant")).unwrap(),
        "7 + 1 = 8.\n"
    );
    let odd = only("-home-dev-src-dmg-odd-records");
    assert!(
        fs::read_to_string(odd.join(".id/odd-system/system"))
            .unwrap()
            .contains("\"type\": \"system\"")
    );
}

// `name` writes the summary the CLI's browser shows (`$set.summary`); a fork is
// refused when it is opened, saying what to do instead; images are decoded.
#[test]
fn name_fork_and_images() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let file = home.join("tmp/image/chats/session-2026-12-05T07-37-e76647b8.jsonl");
    let m = Mount::start(dir, file.clone(), &[]);
    sh("echo 'The picture session' > name", &m.mnt).ok();
    assert!(
        fs::read_to_string(&file)
            .unwrap()
            .ends_with("{\"$set\":{\"summary\":\"The picture session\"}}\n")
    );
    assert!(wait_until(DEADLINE, || fs::read_to_string(
        m.mnt.join("name")
    )
    .is_ok_and(|n| n == "The picture session\n")));
    let e = m.mnt.join(".id/559553d7-fb46-492c-9693-1fe46e051282");
    let png = fs::read(e.join("image-1.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    assert!(
        fs::read_to_string(e.join("user"))
            .unwrap()
            .contains("→ image-1.png]")
    );
    // No fork: refused at open (no write bit), and the file says why.
    let r = sh(": > fork", &e);
    assert_ne!(r.code(), Some(0));
    assert!(r.stderr.contains("Permission denied"), "{}", r.stderr);
    assert!(
        fs::read_to_string(e.join("fork"))
            .unwrap()
            .contains("Gemini CLI 0.61.0 has no fork")
    );
}
