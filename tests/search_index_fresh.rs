//! A running mount keeps the index behind `sessionfs grep` fresh for every agent it
//! watches (`search::fresh`), driven as a user would: `sessionfs index` builds the
//! index of a home holding every agent's sessions, `sessionfs mount` mounts them all,
//! the mount's folders are listed (which is what makes it watch them), and then each
//! agent's session files grow as that agent grows them: a line in its own format,
//! appended to a session, to a side file the session's search reads (a Claude Code or
//! Qwen Code subagent's transcript, a Gemini CLI subagent's chat, a Codex thread's
//! earlier page in another day folder), or a new session file written in a watched
//! folder. Each time the mount alone must index it (`sessionfs index --status FILE`
//! says it covers 100% of the file, with no search run meanwhile), and `sessionfs
//! grep -l` must then find it exactly as it does without the index.
//!
//! opencode keeps its sessions in a SQLite database, which the index does not cover
//! (a search reads the database itself): there is nothing of it to keep fresh.

mod common;

use common::*;
use serde_json::Value;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A home holding sessions of every agent whose files the index covers, with a cache
/// of its own.
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    cache: PathBuf,
}

impl Home {
    fn new() -> Home {
        let dir = tempdir();
        let home = dir.path().join("home");
        let pi = home.join(".pi/agent/sessions/--home-dev-p--");
        fs::create_dir_all(&pi).unwrap();
        for name in ["small.jsonl", "tour.jsonl"] {
            fs::copy(fixtures().join("sessions").join(name), pi.join(name)).unwrap();
        }
        // A session with a subagent, and two plain ones.
        for p in ["-home-dev-src-sub", "-home-dev-src-qa"] {
            copy_tree(
                &fixtures().join("claude/projects").join(p),
                &home.join(".claude/projects").join(p),
            );
        }
        for (from, to) in [
            // Threads whose later pages lie in another day folder than their first.
            ("codex/replies/codex-home", ".codex"),
            ("gemini/samples/gemini-home", ".gemini"),
            ("qwen/samples/qwen-home", ".qwen"),
            ("copilot/samples/copilot-home", ".copilot"),
        ] {
            copy_tree(&fixtures().join(from), &home.join(to));
        }
        let cache = dir.path().join("cache");
        Home {
            _dir: dir,
            home,
            cache,
        }
    }

    /// Every agent's folder named by its own variable, so that the environment the
    /// tests run in does not matter.
    fn env(&self) -> Vec<(&'static str, OsString)> {
        let h = &self.home;
        vec![
            ("HOME", h.clone().into()),
            ("XDG_CACHE_HOME", self.cache.clone().into()),
            ("XDG_DATA_HOME", h.join(".local/share").into()),
            ("PI_CODING_AGENT_DIR", h.join(".pi/agent").into()),
            ("CLAUDE_CONFIG_DIR", h.join(".claude").into()),
            ("CODEX_HOME", h.join(".codex").into()),
            ("GEMINI_CLI_HOME", h.clone().into()),
            ("QWEN_HOME", h.join(".qwen").into()),
            ("COPILOT_HOME", h.join(".copilot").into()),
        ]
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.args(args)
            .envs(self.env())
            .env_remove("SESSIONFS_INDEX")
            .env_remove("SESSIONFS_CACHE")
            .env_remove("SESSIONFS_INDEX_MAX")
            .env_remove("QWEN_RUNTIME_DIR")
            .env_remove("OPENCODE_DB")
            .current_dir(&self.home);
        c
    }

    /// `sessionfs grep -l WORD` over every agent's sessions, with and without the
    /// index: both print the same; the paths printed.
    fn grep_l(&self, word: &str) -> Vec<String> {
        let with = run_command(self.command(&["grep", "-l", word]));
        let mut c = self.command(&["grep", "-l", word]);
        c.env("SESSIONFS_INDEX", "off");
        let without = run_command(c);
        assert_eq!(with.stdout, without.stdout, "grep -l {word}: stdout");
        assert_eq!(with.stderr, without.stderr, "grep -l {word}: stderr");
        assert_eq!(with.status.code(), without.status.code(), "grep -l {word}");
        with.stdout.lines().map(str::to_string).collect()
    }

    /// What `sessionfs index --status FILE` says the index covers of `file`: its
    /// `covers:` line.
    fn covers(&self, file: &Path) -> String {
        let mut c = self.command(&["index", "--status"]);
        c.arg(file);
        covers_line(&run_command(c))
    }
}

/// A copy of the last line of `path` holding a text (a non-empty `"text"` or
/// `"content"` string), with that text replaced by `text` and the line's own id (if
/// it has one) made new, its parent the file's last entry: one more entry in the
/// file's own format, whatever the agent.
fn line_like_the_last(path: &Path, text: &str, n: u32) -> String {
    let content = fs::read_to_string(path).unwrap();
    let lines: Vec<Value> = content
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    fn has_text(v: &Value) -> bool {
        match v {
            Value::Object(m) => m.iter().any(|(k, x)| {
                (k == "text" || k == "content") && x.as_str().is_some_and(|s| !s.is_empty())
                    || has_text(x)
            }),
            Value::Array(a) => a.iter().any(has_text),
            _ => false,
        }
    }
    fn set_text(v: &mut Value, text: &str) -> bool {
        match v {
            Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if (k == "text" || k == "content") && x.as_str().is_some_and(|s| !s.is_empty())
                    {
                        *x = Value::String(text.to_string());
                        return true;
                    }
                    if set_text(x, text) {
                        return true;
                    }
                }
                false
            }
            Value::Array(a) => a.iter_mut().any(|x| set_text(x, text)),
            _ => false,
        }
    }
    let mut line = lines
        .iter()
        .rev()
        .find(|v| has_text(v))
        .unwrap_or_else(|| panic!("no line with a text in {}", path.display()))
        .clone();
    assert!(set_text(&mut line, text));
    // An id of the same shape: its last 8 characters (hexadecimal digits) made new.
    let fresh = |id: &str| format!("{}{:08x}", &id[..id.len() - 8], 0xfeed_0000u32 + n);
    for (own, parent) in [("uuid", "parentUuid"), ("id", "parentId")] {
        let Some(id) = line.get(own).and_then(Value::as_str).map(str::to_string) else {
            continue;
        };
        if id.len() < 8 {
            continue;
        }
        let last = lines
            .iter()
            .rev()
            .find_map(|v| v.get(own).and_then(Value::as_str))
            .unwrap()
            .to_string();
        line[own] = Value::String(fresh(&id));
        if line.get(parent).is_some() {
            line[parent] = Value::String(last);
        }
    }
    line.to_string()
}

/// A text holding `word` and enough other text that a file's coverage falls well
/// below 100% until it is indexed.
fn long_text(word: &str) -> String {
    format!("{word} {}", "filler text ".repeat(400))
}

/// Lists `dir` and each folder in it, through the mount: what a user browsing it
/// does, and what makes the mount watch those folders.
fn list_two_levels(dir: &Path) {
    let names = try_ls(dir).unwrap_or_else(|| panic!("listing {}", dir.display()));
    for n in names {
        let p = dir.join(&n);
        if p.is_dir() {
            try_ls(&p).unwrap_or_else(|| panic!("listing {}", p.display()));
        }
    }
}

/// Waits until the index covers all of `file`, with no search run meanwhile: the
/// mount indexed it.
fn wait_indexed(h: &Home, m: &Mount, what: &str, file: &Path) {
    let mut last = String::new();
    let fresh = wait_until(DEADLINE, || {
        last = h.covers(file);
        last.contains("(100.0%)")
    });
    assert!(
        fresh,
        "{what}: the mount did not index {}: {last}\n{}",
        file.display(),
        m.stderr_text()
    );
}

#[test]
fn a_mount_keeps_the_index_fresh_for_every_agent_it_watches() {
    let h = Home::new();
    let h = &h;
    let home = &h.home;
    let built = run_command(h.command(&["index"]));
    assert!(built.status.success(), "{}", built.stderr);

    // Each agent's session file and, where the agent has them, a side file its search
    // reads, as (what, file).
    let files: Vec<(&str, PathBuf)> = vec![
        ("pi", home.join(".pi/agent/sessions/--home-dev-p--/small.jsonl")),
        (
            "claude",
            home.join(".claude/projects/-home-dev-src-qa/034d3153-8c13-4469-9665-5948bffe2026.jsonl"),
        ),
        (
            "claude subagent",
            home.join(".claude/projects/-home-dev-src-sub/b3730bc4-7f81-47f4-84e9-5fd6ab8f85ea/subagents/agent-acfbc9cb8be5d6a1d.jsonl"),
        ),
        (
            "codex later page",
            home.join(".codex/sessions/2026/12/05/rollout-2026-12-05T09-45-56-01a233fd-2142-7c21-82a7-deda48f72fc4_01a24598-92be-7ac7-b559-3400d0ffd254.jsonl"),
        ),
        (
            "codex first page, in another day folder",
            home.join(".codex/sessions/2026/12/01/rollout-2026-12-01T23-42-36-01a233fd-2142-7c21-82a7-deda48f72fc4.jsonl"),
        ),
        (
            "gemini",
            home.join(".gemini/tmp/qa/chats/session-2026-12-05T07-36-7fb7d652.jsonl"),
        ),
        (
            "gemini subagent",
            home.join(".gemini/tmp/sub/chats/60b5bfa0-fc6c-46ae-84cc-e9dc0870dad1/b99483c7-67ed-4019-993a-e39d9e0207d7.jsonl"),
        ),
        (
            "qwen",
            home.join(".qwen/projects/-home-dev-src-qa/chats/c92ec0dd-72ea-4c32-a140-a63b5518c2f3.jsonl"),
        ),
        (
            "qwen subagent",
            home.join(".qwen/projects/-home-dev-src-sub/subagents/e6a934ba-9ed2-4941-ad32-5542939b7ed7/agent-general-purpose-call_sub_01.jsonl"),
        ),
        (
            "copilot",
            home.join(".copilot/session-state/1d454d2d-f43a-424c-999f-b086faf1cb56/events.jsonl"),
        ),
    ];
    for (what, f) in &files {
        assert!(f.is_file(), "{what}: {} is no fixture", f.display());
        assert!(
            h.covers(f).contains("(100.0%)"),
            "{what}: `sessionfs index` did not index {}: {}",
            f.display(),
            h.covers(f)
        );
    }

    let env = h.env();
    let env: Vec<(&str, &std::ffi::OsStr)> = env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    let m = Mount::sessions_dir(tempdir(), None, &[], &env);
    // Browsed as a user would, to different depths: every project of some agents
    // listed, only the projects of others (whose sessions are then told of by the
    // listing of the agent's own catalog, not by the mount's sessions).
    for agent in ["pi", "claude", "copilot"] {
        list_two_levels(&m.mnt.join(agent));
    }
    for agent in ["codex", "gemini", "qwen"] {
        try_ls(&m.mnt.join(agent)).unwrap_or_else(|| panic!("listing {agent}"));
    }

    // A session's side folders are watched once it is loaded: its own folder
    // entered.
    for s in [
        "claude/-home-dev-src-sub/b3730bc4-7f81-47f4-84e9-5fd6ab8f85ea",
        "gemini/-home-dev-src-sub/60b5bfa0-fc6c-46ae-84cc-e9dc0870dad1",
        "qwen/-home-dev-src-sub/e6a934ba-9ed2-4941-ad32-5542939b7ed7",
    ] {
        assert!(try_ls(&m.mnt.join(s)).is_some(), "entering {s}");
    }
    // Twice each: the second append comes after the mount indexed the file once (and
    // a search everything), as an agent writes turn after turn.
    for round in 0..2u32 {
        for (k, (what, f)) in files.iter().enumerate() {
            let word = format!("keptfresh{k}r{round}q");
            append_line(
                f,
                &line_like_the_last(f, &long_text(&word), 2 * k as u32 + round),
            );
            wait_indexed(h, &m, what, f);
            let found = h.grep_l(&word);
            assert_eq!(found.len(), 1, "{what}: grep -l {word}: {found:?}");
        }
    }

    // A new session written in a watched folder.
    let project = home.join(".pi/agent/sessions/--home-dev-p--");
    let new = project.join("2026-12-31T00-00-00-000Z_new.jsonl");
    let mut b = fs::read(project.join("tour.jsonl")).unwrap();
    let word = "keptfreshnewq";
    b.extend_from_slice(
        line_like_the_last(&project.join("tour.jsonl"), &long_text(word), 99).as_bytes(),
    );
    b.push(b'\n');
    fs::write(&new, &b).unwrap();
    wait_indexed(h, &m, "a new pi session", &new);
    assert_eq!(h.grep_l(word).len(), 1, "a new pi session");
    // A new Codex thread in a day folder of the catalog (the copy of another, its id
    // made new).
    let day = home.join(".codex/sessions/2026/12");
    let old_id = "01a233fc-f62c-79e0-b2f3-257e7f73df38";
    let new_id = "01a233fc-f62c-79e0-b2f3-257e7f73df99";
    let from = day.join(format!("01/rollout-2026-12-01T23-42-25-{old_id}.jsonl"));
    let new = day.join(format!("05/rollout-2026-12-05T10-00-00-{new_id}.jsonl"));
    let word = "keptfreshnewcodexq";
    let mut text = fs::read_to_string(&from).unwrap().replace(old_id, new_id);
    text.push_str(&line_like_the_last(&from, &long_text(word), 98));
    text.push('\n');
    fs::write(&new, text).unwrap();
    wait_indexed(h, &m, "a new codex thread", &new);
    assert_eq!(h.grep_l(word).len(), 1, "a new codex thread");
    // And one in a new day folder, which comes with it (moved into place).
    let new_id = "01a233fc-f62c-79e0-b2f3-257e7f73df98";
    let aside = h._dir.path().join("07");
    fs::create_dir(&aside).unwrap();
    let name = format!("rollout-2026-12-07T10-00-00-{new_id}.jsonl");
    let word = "keptfreshnewdayq";
    let mut text = fs::read_to_string(&from).unwrap().replace(old_id, new_id);
    text.push_str(&line_like_the_last(&from, &long_text(word), 97));
    text.push('\n');
    fs::write(aside.join(&name), text).unwrap();
    fs::rename(&aside, day.join("07")).unwrap();
    let new = day.join("07").join(&name);
    wait_indexed(h, &m, "a new codex thread in a new day folder", &new);
    assert_eq!(
        h.grep_l(word).len(),
        1,
        "a new codex thread in a new day folder"
    );
    drop(m);

    // A session mounted alone: its side files too.
    let cache = h.cache.to_str().unwrap();
    let home_s = home.to_str().unwrap();
    for (k, (agent, session)) in [
        (
            "claude",
            ".claude/projects/-home-dev-src-sub/b3730bc4-7f81-47f4-84e9-5fd6ab8f85ea.jsonl",
        ),
        (
            "gemini",
            ".gemini/tmp/sub/chats/session-2026-12-05T07-38-60b5bfa0.jsonl",
        ),
        (
            "qwen",
            ".qwen/projects/-home-dev-src-sub/chats/e6a934ba-9ed2-4941-ad32-5542939b7ed7.jsonl",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let session = home.join(session);
        let sub = format!("{agent} subagent");
        let side = files.iter().find(|(w, _)| *w == sub).unwrap().1.clone();
        let m = Mount::start_with_env(
            tempdir(),
            session,
            &[],
            &[("XDG_CACHE_HOME", cache), ("HOME", home_s)],
        );
        let what = format!("{agent} subagent, its session mounted alone");
        for round in 0..2u32 {
            let word = format!("keptalone{k}r{round}q");
            append_line(
                &side,
                &line_like_the_last(&side, &long_text(&word), 200 + 2 * k as u32 + round),
            );
            wait_indexed(h, &m, &what, &side);
            assert_eq!(h.grep_l(&word).len(), 1, "{what}: grep -l {word}");
        }
        drop(m);
    }
}

/// Every file and folder under `dir`, depth first, sorted.
fn tree_of(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

/// A search keeps the folders it listed (`core::listing`, in the heads' memo) and
/// the next one pays a `stat` for each: a kept listing must never hide a change. Each
/// agent's session files, subagent transcripts and folders are moved out of the home
/// and back, one at a time; after each move, `sessionfs grep -l ''` prints what it
/// prints with no cache at all (`SESSIONFS_CACHE=off`), which differs from before
/// the move.
#[test]
fn remembered_listings_follow_their_folders() {
    let h = Home::new();
    let home = &h.home;
    let all = tree_of(home);
    // Past the racy margin of every folder: the first search keeps its listings.
    let settled = all
        .iter()
        .filter_map(|p| fs::symlink_metadata(p).ok())
        .map(|m| {
            use std::os::unix::fs::MetadataExt;
            std::time::UNIX_EPOCH
                + std::time::Duration::new(m.ctime() as u64, m.ctime_nsec() as u32)
        })
        .max()
        .unwrap()
        + std::time::Duration::from_millis(3100);
    assert!(wait_until(std::time::Duration::from_secs(30), || {
        std::time::SystemTime::now() > settled
    }));
    let grep = |cache: bool| {
        let mut c = h.command(&["grep", "-l", ""]);
        if !cache {
            c.env("SESSIONFS_CACHE", "off");
        }
        run_command(c)
    };
    let same = |what: &str| {
        let kept = grep(true);
        let plain = grep(false);
        assert_eq!(kept.stdout, plain.stdout, "{what}: stdout");
        assert_eq!(kept.stderr, plain.stderr, "{what}: stderr");
        assert_eq!(kept.status.code(), plain.status.code(), "{what}");
        kept.stdout
    };
    let first = same("first search");
    let memo = fs::read(h.cache.join("sessionfs/heads-1")).expect("the memo");
    let day = all
        .iter()
        .find(|p| p.to_string_lossy().contains(".codex/sessions/") && p.is_file())
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    assert!(
        memo.windows(day.as_os_str().len())
            .any(|w| w == day.as_os_str().as_encoded_bytes()),
        "the listing of {} is kept",
        day.display()
    );
    let pick = |what: &str, f: &dyn Fn(&str) -> bool| -> PathBuf {
        all.iter()
            .find(|p| f(&p.strip_prefix(home).unwrap().to_string_lossy()))
            .unwrap_or_else(|| panic!("no {what} in the home"))
            .clone()
    };
    let moved = [
        pick("Pi session", &|p| {
            p.starts_with(".pi/") && p.ends_with(".jsonl")
        }),
        pick("Claude Code session", &|p| {
            p.starts_with(".claude/projects/-home-dev-src-qa/") && p.ends_with(".jsonl")
        }),
        pick("Claude Code subagent", &|p| {
            p.starts_with(".claude/") && p.contains("/subagents/agent-") && p.ends_with(".jsonl")
        }),
        pick("Claude Code subagents folder", &|p| {
            p.starts_with(".claude/") && p.ends_with("/subagents")
        }),
        pick("Codex page", &|p| {
            p.starts_with(".codex/sessions/") && p.ends_with(".jsonl")
        }),
        day.clone(),
        pick("Gemini CLI session", &|p| {
            p.starts_with(".gemini/tmp/qa/chats/session-")
        }),
        pick("Gemini CLI subagent", &|p| {
            p.starts_with(".gemini/tmp/sub/chats/") && p.matches('/').count() == 5
        }),
        pick("Gemini CLI project", &|p| p == ".gemini/tmp/qa"),
        pick("Qwen Code session", &|p| {
            p.starts_with(".qwen/projects/-home-dev-src-qa/chats/") && p.ends_with(".jsonl")
        }),
        pick("Qwen Code subagent", &|p| {
            p.starts_with(".qwen/projects/-home-dev-src-sub/subagents/") && p.ends_with(".jsonl")
        }),
        pick("Qwen Code project", &|p| {
            p == ".qwen/projects/-home-dev-src-qa"
        }),
        pick("Copilot CLI session", &|p| {
            p.starts_with(".copilot/session-state/") && p.matches('/').count() == 2
        }),
    ];
    let aside = h._dir.path().join("aside");
    for p in &moved {
        let what = p.strip_prefix(home).unwrap().display().to_string();
        fs::rename(p, &aside).unwrap();
        let without = same(&format!("{what} moved out"));
        assert_ne!(without, first, "{what} moved out: nothing changed");
        fs::rename(&aside, p).unwrap();
        assert_eq!(
            same(&format!("{what} moved back")),
            first,
            "{what} moved back"
        );
    }
    // A folder replaced by a copy of itself (another inode, the same names).
    let old = h._dir.path().join("old");
    fs::rename(&day, &old).unwrap();
    copy_tree(&old, &day);
    assert_eq!(same("a day folder copied"), first);
}
