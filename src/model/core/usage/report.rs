//! `sessionfs usage`: totals over many session files, without a mount, grouped by
//! session, project, day or model, as a table or JSON.
//!
//! Each reply is counted once over all the files given: Claude Code's `--fork-session`
//! and `/branch` copy lines into a new file with the same `message.id` and
//! `requestId`, but the request was made (and billed) once. Such a reply counts in the
//! session that started first (the timestamp of its file's first line that has one,
//! which for a fork is when the fork was made; then path order); in the others it is
//! shown as `copied`. A session's branches and dead ends are the file's own: a fork's
//! branch includes the history it copied, which is what it cost to get there.

use super::{Record, Table, Usage, dollars, group, round};
use crate::model::core::session::{NO_TIME, Session};
use crate::model::core::time;
use crate::model::core::usage::prices::Prices;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// How `sessionfs usage` groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Session,
    Project,
    Day,
    Model,
}

/// One session file, summed.
#[derive(Debug, Clone)]
pub struct SessionRow {
    pub path: PathBuf,
    /// The folder the file lies in (its project), or `""`.
    pub project: String,
    /// The file name without `.jsonl`.
    pub session: String,
    pub agent: &'static str,
    /// The earliest timestamp of its entries, and its last activity
    /// (`Session::last_activity`, never before its last entry).
    pub first: i64,
    pub last: i64,
    /// When the file was started: the timestamp of its first line that has one
    /// (metadata lines included). A fork's file starts when the fork is made, even
    /// though the lines it copied keep their old timestamps.
    pub started: i64,
    /// What counts here (each reply once over all files).
    pub usage: Usage,
    /// What the file records that counts in another session (a fork's copy).
    pub copied: Usage,
    pub current: Usage,
    pub dead_ends: Usage,
    pub branches: Vec<(String, bool, Usage)>,
    pub cost_state: Option<super::CostState>,
    /// The records that count here, with their entry's timestamp.
    pub records: Vec<(i64, Record)>,
}

/// A Claude Code reply: its `message.id` and `requestId`.
type ReplyKey = (String, String);

/// A file that could not be read as a session.
#[derive(Debug, Clone)]
pub struct Skipped {
    pub path: PathBuf,
    pub why: String,
    /// It could not be read at all (an I/O error: missing, not permitted), rather
    /// than read and found to be no session.
    pub unreadable: bool,
}

/// Everything `sessionfs usage` prints.
#[derive(Debug, Clone)]
pub struct Report {
    pub sessions: Vec<SessionRow>,
    pub skipped: Vec<Skipped>,
    pub prices: String,
}

/// Which session counts a reply that several files hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attribution {
    /// The session whose file started first (the timestamp of its first line; then
    /// path order): the one the fork copied from. `sessionfs usage` counts so.
    FirstStarted,
    /// The first file in path order, whichever session that is: ccusage 20's rule
    /// (kept to compare with it; a fork named before its source takes its history).
    PathOrder,
}

/// Reads every file (`(path, project)`), in the order given.
pub fn build(files: &[(PathBuf, String)], prices: &Prices) -> Report {
    build_with(files, prices, Attribution::FirstStarted)
}

/// [`build`], choosing who counts a reply several files hold.
pub fn build_with(files: &[(PathBuf, String)], prices: &Prices, rule: Attribution) -> Report {
    struct Loaded {
        row: SessionRow,
        keyed: Vec<(Option<ReplyKey>, i64, Record)>,
    }
    let mut loaded = Vec::new();
    let mut skipped = Vec::new();
    for (path, project) in files {
        let s = match Session::open(path) {
            Ok(s) => s,
            Err(e) => {
                skipped.push(Skipped {
                    path: path.clone(),
                    why: e.to_string(),
                    unreadable: matches!(e, crate::model::core::session::LoadError::Io(_)),
                });
                continue;
            }
        };
        let t = Table::build(&s, prices);
        let mut first = i64::MAX;
        let mut last = i64::MIN;
        for e in s.entries() {
            if e.is_node() && e.ts != NO_TIME {
                first = first.min(e.ts);
                last = last.max(e.ts);
            }
        }
        // The last activity is the agent's own word (its files' last lines), as
        // `sessionfs grep --sessions` and a mount's directory times say it.
        if let Some((t, _)) = s.last_activity() {
            last = last.max(t);
        }
        let mut keyed = Vec::new();
        for (i, r) in t.own.iter().enumerate() {
            if let Some(r) = r {
                let key = t.reply_keys.get(&(i as u32)).cloned();
                keyed.push((key, s.entry(i as u32).ts, r.clone()));
            }
        }
        let current = s.leaf().map(|l| t.path_usage(&s, l)).unwrap_or_default();
        let branches = t
            .branches(&s)
            .into_iter()
            .map(|(l, u)| (s.id_string(l), Some(l) == s.leaf(), u))
            .collect();
        let mut session = path
            .file_name()
            .map(|n| n.to_string_lossy().trim_end_matches(".jsonl").to_string())
            .unwrap_or_default();
        // A session that is a folder names its file by its role alone (Copilot CLI's
        // `<id>/events.jsonl`): the folder is the session's name.
        if session == "events"
            && let Some(dir) = path.parent().and_then(|d| d.file_name())
        {
            session = dir.to_string_lossy().into_owned();
        }
        loaded.push(Loaded {
            row: SessionRow {
                path: path.clone(),
                project: project.clone(),
                session,
                agent: s.format().name(),
                first,
                last,
                // A session without a first line (a database's rows) says when it
                // started in its header.
                started: started(path)
                    .or((s.header().timestamp_ms != NO_TIME).then_some(s.header().timestamp_ms))
                    .unwrap_or(first),
                usage: Usage::default(),
                copied: Usage::default(),
                dead_ends: t.dead_ends(&s),
                current,
                branches,
                cost_state: t.cost_state.clone(),
                records: Vec::new(),
            },
            keyed,
        });
    }
    // Who counts a reply found in several files: the session that started first.
    let mut order: Vec<usize> = (0..loaded.len()).collect();
    match rule {
        Attribution::FirstStarted => order.sort_by(|&a, &b| {
            (loaded[a].row.started, &loaded[a].row.path)
                .cmp(&(loaded[b].row.started, &loaded[b].row.path))
        }),
        Attribution::PathOrder => {
            order.sort_by(|&a, &b| loaded[a].row.path.cmp(&loaded[b].row.path))
        }
    }
    let mut owner: HashMap<ReplyKey, usize> = HashMap::new();
    for &k in &order {
        for (key, _, _) in &loaded[k].keyed {
            if let Some(key) = key {
                owner.entry(key.clone()).or_insert(k);
            }
        }
    }
    for (k, l) in loaded.iter_mut().enumerate() {
        for (key, ts, r) in std::mem::take(&mut l.keyed) {
            let here = key.as_ref().is_none_or(|key| owner[key] == k);
            if here {
                l.row.usage.add_record(&r);
                l.row.records.push((ts, r));
            } else {
                l.row.copied.add_record(&r);
            }
        }
        // Models the table lacks: the agent's own recorded cost, for a session that
        // copied nothing from another (a fork's record includes its source's).
        if l.row.copied.requests == 0
            && let Some(cs) = &l.row.cost_state
        {
            l.row.usage.price_from_own_count(cs);
        }
    }
    Report {
        sessions: loaded.into_iter().map(|l| l.row).collect(),
        skipped,
        prices: prices.source.clone(),
    }
}

/// The timestamp of the first line of `path` that has one (read from its first MiB).
fn started(path: &Path) -> Option<i64> {
    use std::io::Read;
    let mut buf = Vec::new();
    crate::model::core::input::open_regular(path)
        .ok()?
        .take(1 << 20)
        .read_to_end(&mut buf)
        .ok()?;
    for line in buf.split(|&b| b == b'\n') {
        if memchr::memmem::find(line, b"\"timestamp\"").is_none() {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        if let Some(ms) = v
            .get("timestamp")
            .and_then(|t| t.as_str())
            .and_then(crate::model::core::js::js_date_ms)
        {
            return Some(ms);
        }
    }
    None
}

/// One line of a grouped report.
#[derive(Debug, Clone)]
pub struct Group {
    pub key: String,
    pub usage: Usage,
    pub models: Vec<String>,
    /// How many sessions it has requests of.
    pub sessions: usize,
}

impl Report {
    /// Totals over every session.
    pub fn total(&self) -> Usage {
        let mut u = Usage::default();
        for s in &self.sessions {
            u.add(&s.usage);
        }
        u
    }

    /// Groups by project, day (UTC, of each request's line) or model.
    pub fn groups(&self, by: By) -> Vec<Group> {
        let mut m: BTreeMap<String, (Usage, Vec<String>, usize)> = BTreeMap::new();
        for s in &self.sessions {
            let mut seen: Vec<String> = Vec::new();
            for (ts, r) in &s.records {
                let key = match by {
                    By::Session => format!("{}/{}", s.project, s.session),
                    By::Project => s.project.clone(),
                    By::Day if *ts == NO_TIME => "unknown".into(),
                    By::Day => time::format_iso_ms(*ts)[..10].to_string(),
                    By::Model => r.model.clone(),
                };
                if !seen.contains(&key) {
                    seen.push(key.clone());
                    m.entry(key.clone()).or_default().2 += 1;
                }
                let e = m.entry(key).or_default();
                e.0.add_record(r);
                if !e.1.contains(&r.model) {
                    e.1.push(r.model.clone());
                }
            }
        }
        m.into_iter()
            .map(|(key, (usage, mut models, sessions))| {
                models.sort();
                Group {
                    key,
                    usage,
                    models,
                    sessions,
                }
            })
            .collect()
    }

    /// The table, as wide as it needs to be (for a file or a pipe).
    pub fn text(&self, by: By) -> String {
        self.text_within(by, None)
    }

    /// The table within `width` columns (a terminal's): when the whole table is wider,
    /// a compact one, as ccusage switches to on a narrow terminal: the key, input,
    /// output, cost and the last column, long keys and model lists shortened with `…`
    /// (`--json` and a pipe still get every figure).
    pub fn text_within(&self, by: By, width: Option<usize>) -> String {
        let full = self.table(by, false, None);
        match width {
            Some(w) if full.lines().any(|l| l.chars().count() > w) => self.table(by, true, Some(w)),
            _ => full,
        }
    }

    fn table(&self, by: By, compact: bool, width: Option<usize>) -> String {
        let mut rows: Vec<[String; 8]> = Vec::new();
        let head = |first: &str| {
            [
                first.to_string(),
                "Input".into(),
                "Output".into(),
                "Cache Read".into(),
                "Cache Write".into(),
                "Total Tokens".into(),
                "Cost".into(),
                match by {
                    By::Session => "Current Branch / Dead Ends".into(),
                    By::Model => "Sessions".into(),
                    _ => "Models".into(),
                },
            ]
        };
        let cells = |k: String, u: &Usage, last: String| {
            [
                k,
                group(u.tokens.input),
                group(u.tokens.output),
                group(u.tokens.cache_read),
                group(u.tokens.cache_write),
                group(u.tokens.total()),
                u.cost_text(),
                last,
            ]
        };
        let mut notes = Vec::new();
        match by {
            By::Session => {
                rows.push(head("Session"));
                for s in &self.sessions {
                    let name = if s.project.is_empty() {
                        s.session.clone()
                    } else {
                        format!("{}/{}", s.project, s.session)
                    };
                    rows.push(cells(
                        name,
                        &s.usage,
                        format!("{} / {}", s.current.cost_text(), s.dead_ends.cost_text()),
                    ));
                    if s.branches.len() > 1 {
                        for (leaf, cur, u) in &s.branches {
                            rows.push(cells(
                                format!("  branch {leaf}{}", if *cur { " *" } else { "" }),
                                u,
                                String::new(),
                            ));
                        }
                    }
                    if s.copied.requests > 0 {
                        notes.push(format!(
                            "{}: {} more tokens ({}) are replies copied from a session that started earlier, counted there",
                            s.session,
                            group(s.copied.tokens.total()),
                            s.copied.cost_text()
                        ));
                    }
                    if let Some(cs) = &s.cost_state {
                        notes.push(format!(
                            "{}: Claude Code's own count (cost-state): {}, {} tokens",
                            s.session,
                            dollars(cs.cost),
                            group(cs.tokens.total())
                        ));
                    }
                }
            }
            _ => {
                rows.push(head(match by {
                    By::Project => "Project",
                    By::Day => "Day (UTC)",
                    _ => "Model",
                }));
                for g in self.groups(by) {
                    let last = match by {
                        By::Model => g.sessions.to_string(),
                        _ => g.models.join(", "),
                    };
                    rows.push(cells(g.key, &g.usage, last));
                }
            }
        }
        let total = self.total();
        rows.push(cells("Total".into(), &total, String::new()));
        // Names, projects and models come from the files: shown, never obeyed by the
        // terminal.
        let esc = |c: &String| crate::model::core::text::escape_controls(c).into_owned();
        let rows: Vec<[String; 8]> = rows.iter().map(|r| r.each_ref().map(esc)).collect();
        let notes: Vec<String> = notes.iter().map(esc).collect();
        // The columns shown: all, or the compact ones (key, input, output, cost, last).
        let shown: Vec<usize> = if compact {
            vec![0, 1, 2, 6, 7]
        } else {
            (0..8).collect()
        };
        let mut w = [0usize; 8];
        for r in &rows {
            for &i in &shown {
                w[i] = w[i].max(r[i].chars().count());
            }
        }
        if let Some(width) = width {
            // Shorten the first and the last column until the table fits (each keeps
            // at least 12 characters).
            let sum =
                |w: &[usize; 8]| shown.iter().map(|&i| w[i]).sum::<usize>() + 2 * (shown.len() - 1);
            while sum(&w) > width && (w[0] > 12 || w[7] > 12) {
                let i = if w[0] >= w[7] { 0 } else { 7 };
                w[i] -= 1;
            }
        }
        let fit = |c: &str, n: usize| -> String {
            if c.chars().count() <= n {
                c.to_string()
            } else {
                let keep: String = c.chars().take(n.saturating_sub(1)).collect();
                format!("{keep}…")
            }
        };
        let mut out = String::new();
        for (n, r) in rows.iter().enumerate() {
            if n + 1 == rows.len() || n == 1 {
                let rule = shown.iter().map(|&i| w[i]).sum::<usize>() + 2 * (shown.len() - 1);
                let _ = writeln!(out, "{}", "-".repeat(rule));
            }
            let mut line = String::new();
            for (k, &i) in shown.iter().enumerate() {
                let c = fit(&r[i], w[i]);
                let pad = w[i] - c.chars().count();
                if i == 0 || i == 7 {
                    line.push_str(&c);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(&c);
                }
                if k + 1 < shown.len() {
                    line.push_str("  ");
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        if compact {
            out.push_str("(compact: cache reads, cache writes and total tokens left out to fit; --json or a pipe has every column)\n");
        }
        if by == By::Session {
            out.push_str("(* the current branch: where the agent resumes)\n");
        }
        for n in notes {
            let _ = writeln!(out, "{n}");
        }
        let _ = writeln!(
            out,
            "prices: Pi's as recorded; Claude Code's, Codex's, Gemini CLI's and Copilot CLI's from {}; opencode's as recorded (from {} where it recorded none)",
            self.prices, self.prices
        );
        out
    }

    pub fn json(&self, by: By) -> String {
        let usage = |u: &Usage| {
            let mut v = u.to_json();
            v["totalCost"] = v["cost"].clone();
            v
        };
        let mut v = serde_json::json!({});
        match by {
            By::Session => {
                v["sessions"] = self
                    .sessions
                    .iter()
                    .map(|s| {
                        let mut o = usage(&s.usage);
                        o["sessionId"] = s.session.clone().into();
                        o["projectPath"] = s.project.clone().into();
                        o["agent"] = s.agent.into();
                        o["file"] = s.path.display().to_string().into();
                        if s.first != i64::MAX {
                            o["firstActivity"] = time::format_iso_ms(s.first).into();
                            o["lastActivity"] = time::format_iso_ms(s.last).into();
                        }
                        o["copiedFromOtherSessions"] = usage(&s.copied);
                        o["currentBranch"] = usage(&s.current);
                        o["deadEnds"] = usage(&s.dead_ends);
                        o["branches"] = s
                            .branches
                            .iter()
                            .map(|(l, c, u)| {
                                serde_json::json!({"leaf": l, "current": c, "usage": usage(u)})
                            })
                            .collect::<Vec<_>>()
                            .into();
                        o["costState"] = s
                            .cost_state
                            .as_ref()
                            .map(|cs| {
                                serde_json::json!({
                                    "cost": round(cs.cost),
                                    "totalTokens": cs.tokens.total(),
                                    "lines": cs.lines,
                                })
                            })
                            .into();
                        o
                    })
                    .collect::<Vec<_>>()
                    .into();
            }
            _ => {
                let name = match by {
                    By::Project => "projects",
                    By::Day => "days",
                    _ => "models",
                };
                v[name] = self
                    .groups(by)
                    .into_iter()
                    .map(|g| {
                        let mut o = usage(&g.usage);
                        o["key"] = g.key.into();
                        o["modelsUsed"] = g.models.into();
                        o["sessions"] = g.sessions.into();
                        o
                    })
                    .collect::<Vec<_>>()
                    .into();
            }
        }
        v["totals"] = usage(&self.total());
        v["skipped"] = self
            .skipped
            .iter()
            .map(|s| {
                serde_json::json!({"file": s.path.display().to_string(), "why": s.why,
                    "unreadable": s.unreadable})
            })
            .collect::<Vec<_>>()
            .into();
        v["prices"] = self.prices.clone().into();
        let mut out = serde_json::to_string_pretty(&v).expect("JSON");
        out.push('\n');
        out
    }
}
