//! `sessionfs check`: what is wrong with a session file, line by line.

use crate::model::core::session::{
    EditProblem, LoadError, NIL, Problem, ProblemKind, Session, Severity,
};
use serde_json::{Value, json};
use std::path::Path;

/// The outcome of checking one file.
#[derive(Debug)]
pub enum Report {
    /// The file could not be read at all (exit code 2).
    Unreadable(String),
    /// Named on the command line, but neither a regular file nor a directory (a device,
    /// a FIFO): never opened (exit code 2). The message names the path, as `mount`'s.
    Refused(String),
    /// The file is not a Pi session (no valid header).
    NotASession(String),
    Checked(Box<Summary>),
}

#[derive(Debug)]
pub struct Summary {
    pub format: crate::model::core::format::Format,
    pub problems: Vec<Problem>,
    pub problems_dropped: u64,
    pub version: u32,
    pub session_id: String,
    pub entries: usize,
    pub roots: usize,
    pub leaves: u32,
    pub branch_points: u32,
    pub deepest: usize,
    pub deepest_leaf: Option<String>,
    pub leaf: Option<String>,
    pub name: Option<String>,
    /// Heap bytes of the index, and the time it took to build it.
    pub index_bytes: usize,
    pub index_ms: f64,
}

impl Report {
    /// Has the file anything worse than notes?
    pub fn has_problems(&self) -> bool {
        match self {
            Report::Unreadable(_) | Report::Refused(_) | Report::NotASession(_) => true,
            Report::Checked(s) => s.problems.iter().any(|p| p.severity >= Severity::Warning),
        }
    }
}

/// Checks one file. Never writes to it; never hangs (the index breaks cycles).
pub fn check(path: &Path) -> Report {
    let started = std::time::Instant::now();
    let opened = Session::open(path);
    let index_ms = started.elapsed().as_secs_f64() * 1000.0;
    let s = match opened {
        Ok(s) => s,
        Err(LoadError::Io(e)) => return Report::Unreadable(e.to_string()),
        Err(e) => return Report::NotASession(e.to_string()),
    };
    let mut deepest = 0usize;
    let mut deepest_node = None;
    s.walk_preorder(|n, d| {
        if d + 1 > deepest {
            deepest = d + 1;
            deepest_node = Some(n);
        }
    });
    let mut problems = s.problems().to_vec();
    problems.extend(edit_problems(&s));
    problems.sort_by_key(|p| p.line);
    Report::Checked(Box::new(Summary {
        format: s.format(),
        problems,
        problems_dropped: s.problems_dropped(),
        version: s.header().version,
        session_id: s.header().session_id.clone(),
        entries: s.entries().len(),
        roots: s.roots().len(),
        leaves: s.leaf_count(),
        branch_points: s.branch_point_count(),
        deepest,
        deepest_leaf: deepest_node.map(|n| s.id_string(n)),
        leaf: s.leaf().map(|l| s.id_string(l)),
        name: s.name().map(str::to_string),
        index_bytes: s.heap_bytes(),
        index_ms,
    }))
}

/// What is wrong with the `context_edit` entries (Pi 1.6) of a session: a target that
/// is missing or not on the edit's branch, a replacement Pi cannot apply, and, as
/// notes, edits that change nothing or that come before their target.
fn edit_problems(s: &Session) -> Vec<Problem> {
    let mut out = Vec::new();
    let is_ancestor = |a: u32, mut b: u32| {
        let d = s.entry(a).depth;
        while b != NIL && s.entry(b).depth > d {
            b = s.entry(b).parent;
        }
        b == a
    };
    for i in 0..s.entries().len() as u32 {
        let e = s.entry(i);
        if !e.is_node() || s.kinds().entry_type(e.kind) != "context_edit" {
            continue;
        }
        let Ok(v) = s.entry_value(i) else { continue };
        let mut report = |severity, target: &str, what| {
            out.push(Problem {
                line: e.line,
                severity,
                what: ProblemKind::ContextEdit {
                    target: target.to_string(),
                    what,
                },
            })
        };
        let Some(target) = v.get("targetId").and_then(serde_json::Value::as_str) else {
            report(Severity::Warning, "", EditProblem::NoTarget);
            continue;
        };
        match v.get("replacement") {
            None => report(Severity::Warning, target, EditProblem::NoReplacement),
            Some(serde_json::Value::Null) => {}
            Some(r) => {
                if !matches!(
                    r.get("content"),
                    Some(serde_json::Value::String(_) | serde_json::Value::Array(_))
                ) {
                    report(Severity::Warning, target, EditProblem::MalformedReplacement);
                }
            }
        }
        let Some(t) = s.find(target) else {
            report(Severity::Warning, target, EditProblem::TargetMissing);
            continue;
        };
        if is_ancestor(t, i) {
            // Fine: what Pi writes.
        } else if is_ancestor(i, t) {
            report(Severity::Note, target, EditProblem::BeforeTarget);
        } else {
            report(Severity::Warning, target, EditProblem::OffBranch);
            continue;
        }
        // What the target gives a context, by kind: does an edit change it?
        let ty = s.kinds().entry_type(s.entry(t).kind);
        let kind = s.kind_name(t);
        let null = matches!(v.get("replacement"), Some(serde_json::Value::Null));
        let replaced = matches!(kind, "user" | "assistant" | "toolResult" | "custom")
            && ty == "message"
            || ty == "custom_message";
        let removed = matches!(
            ty,
            "message" | "custom_message" | "branch_summary" | "compaction"
        );
        if !(replaced || null && removed) {
            report(
                Severity::Note,
                target,
                EditProblem::NoEffect(kind.to_string()),
            );
        }
    }
    out
}

/// Every `.jsonl` file under `dir`, at any depth, sorted by path. Symbolic links
/// are followed to files but not into directories. A directory that cannot be read is
/// returned as it is, so that checking it reports why. The transcripts of a Claude
/// Code session's subagents (`<session>/subagents/agent-*.jsonl`) are files of their
/// own here: a session's report does not cover them.
pub fn session_files(dir: &Path) -> Vec<std::path::PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        let rd = match std::fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(_) => {
                out.push(dir.to_path_buf());
                return;
            }
        };
        for ent in rd.flatten() {
            let path = ent.path();
            let Ok(ft) = ent.file_type() else { continue };
            if ft.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "jsonl")
                && (ft.is_file() || path.is_file())
            {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// One problem of a file in `format` as a line of text: [`describe`], in the words of
/// the agent that wrote the file.
pub fn describe_for(format: crate::model::core::format::Format, p: &ProblemKind) -> String {
    let text = describe(p);
    match format {
        crate::model::core::format::Format::Pi => text,
        crate::model::core::format::Format::Claude => text
            .replace("skipped by Pi", "skipped by Claude Code")
            .replace("(Pi hangs on it)", "(Claude Code stops its walk there)")
            .replace("Pi's next append", "Claude Code's next append")
            .replace("not in any context", "not sent to the model"),
        crate::model::core::format::Format::Qwen => text
            .replace(
                "is not in the file; shown as a root",
                "is not in the file: Qwen Code sends nothing before it; shown as a root",
            )
            .replace("skipped by Pi", "skipped by Qwen Code")
            .replace("(Pi hangs on it)", "(Qwen Code stops its walk there)")
            .replace("Pi's next append", "Qwen Code's next append")
            .replace("not in any context", "not sent to the model"),
        // Copilot CLI repairs a file it cannot read whole: it rewrites it without the
        // broken lines and keeps the old bytes beside it (COPILOT-FORMAT.md §10).
        crate::model::core::format::Format::Copilot => text
            .replace(
                "skipped by Pi",
                "dropped by Copilot CLI, which rewrites the file without it when it next \
                 loads it (keeping the old bytes in events.jsonl.backup-before-recovery-*)",
            )
            .replace(
                "Pi's next append would glue onto it",
                "Copilot CLI's next load drops it if it is still unfinished",
            )
            .replace(
                "Pi's next append would be lost with it",
                "Copilot CLI drops it when it next loads the session, rewriting the file \
                 (the old bytes kept in events.jsonl.backup-before-recovery-*)",
            )
            .replace("not in any context", "not sent to the model"),
        other => text
            .replace("skipped by Pi", &format!("skipped by {}", other.program()))
            .replace(
                "Pi's next append",
                &format!("{}'s next append", other.program()),
            )
            .replace("not in any context", "not sent to the model"),
    }
}

/// How to repair a problem the user can repair with a shell command, as a clause
/// to add to its line: a torn last line is cut off with `truncate -s` at the start of
/// the line (every whole line kept), once the agent that was writing it is done; a
/// whole last line without its newline gets one. Empty for the others.
fn repair(path: &Path, p: &ProblemKind) -> String {
    match (p, repair_command(path, p)) {
        (ProblemKind::UnterminatedLastLine { parses: false, .. }, Some(c)) => {
            format!("; to drop it, once no agent writes the file: {c}")
        }
        (_, Some(c)) => format!("; to end it, once no agent writes the file: {c}"),
        _ => String::new(),
    }
}

/// The shell command of [`repair`] (`repair` in `check --json`), if any.
fn repair_command(path: &Path, p: &ProblemKind) -> Option<String> {
    let quoted = shell_quote(&path.display().to_string());
    match p {
        ProblemKind::UnterminatedLastLine {
            parses: false, at, ..
        } => Some(format!("truncate -s {at} {quoted}")),
        ProblemKind::UnterminatedLastLine { parses: true, .. } => {
            Some(format!("printf '\\n' >> {quoted}"))
        }
        _ => None,
    }
}

/// `s` quoted for a POSIX shell when it needs it.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@%".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// One problem as a line of text (in Pi's words; see [`describe_for`]).
pub fn describe(p: &ProblemKind) -> String {
    match p {
        ProblemKind::Agent { what, .. } => what.clone(),
        ProblemKind::Blank => "blank line (skipped)".into(),
        ProblemKind::Crlf => "CRLF line endings (read fine)".into(),
        ProblemKind::Malformed(m) => format!("malformed line, skipped by Pi: {m}"),
        ProblemKind::NotAnObject => "JSON that is not an object, skipped".into(),
        ProblemKind::ExtraHeader => "another session header (ignored, as Pi does)".into(),
        ProblemKind::MissingId => "entry without an id".into(),
        ProblemKind::DuplicateId { id, first_line } => {
            format!("duplicate id {id} (also on line {first_line}); the later entry wins")
        }
        ProblemKind::Orphan { parent } => {
            format!("parent {parent} is not in the file; shown as a root")
        }
        ProblemKind::SelfParent => {
            "entry is its own parent (Pi hangs on it); shown as a root".into()
        }
        ProblemKind::Cycle { ids } => {
            format!(
                "parent cycle {} (Pi hangs on it); broken here, shown as a root",
                ids.join(" -> ")
            )
        }
        ProblemKind::UnknownType(t) if t.is_empty() => "entry without a type".into(),
        ProblemKind::UnknownType(t) => {
            format!("unknown entry type {t:?} (kept, not in any context)")
        }
        ProblemKind::LabelTargetMissing { target } => {
            format!("label on {target}, which is not in the file")
        }
        ProblemKind::UnknownLine(t) => {
            format!("unknown line type {t:?} without an id (kept in the file, not shown)")
        }
        ProblemKind::TooLong {
            bytes,
            limit,
            ended: true,
        } => format!(
            "line of {}, longer than the {} a line may hold (--max-line): skipped, not read",
            crate::model::core::input::human_bytes(*bytes),
            crate::model::core::input::human_bytes(*limit)
        ),
        ProblemKind::TooLong {
            bytes,
            limit,
            ended: false,
        } => format!(
            "last line ({} so far, no final newline) is longer than the {} a line may hold (--max-line): not read",
            crate::model::core::input::human_bytes(*bytes),
            crate::model::core::input::human_bytes(*limit)
        ),
        ProblemKind::UnterminatedLastLine {
            bytes,
            parses: true,
            ..
        } => format!(
            "last line ({}) has no final newline: not indexed yet; Pi's next append would glue onto it",
            count(*bytes as usize, "byte", "bytes")
        ),
        ProblemKind::UnterminatedLastLine {
            bytes,
            parses: false,
            ..
        } => {
            format!(
                "torn last line ({}, incomplete JSON); Pi's next append would be lost with it",
                count(*bytes as usize, "byte", "bytes")
            )
        }
        ProblemKind::ContextEdit { target, what } => match what {
            EditProblem::NoTarget => "context edit without a targetId: it changes nothing".into(),
            EditProblem::TargetMissing => {
                format!("context edit of {target}, which is not in the file: it changes nothing")
            }
            EditProblem::OffBranch => {
                format!("context edit of {target}, which is not on its branch: it changes nothing")
            }
            EditProblem::BeforeTarget => format!(
                "context edit of {target}, which comes after it on its branch: Pi applies it below {target} only"
            ),
            EditProblem::NoReplacement => format!(
                "context edit of {target} without a replacement: Pi fails to build a context that holds both"
            ),
            EditProblem::MalformedReplacement => format!(
                "context edit of {target} with a replacement that is neither null nor {{content: text or blocks}}"
            ),
            EditProblem::NoEffect(kind) => format!(
                "context edit of {target}, a {kind} entry whose context content Pi does not edit: it changes nothing"
            ),
        },
    }
}

fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Note => "note",
        Severity::Warning => "warning",
    }
}

/// `n` and the noun for it: `1 problem`, `2 problems`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Human-readable report.
pub fn to_text(path: &Path, r: &Report) -> String {
    let p = path.display();
    match r {
        Report::Unreadable(e) => format!("{p}: error: cannot read: {e}\n"),
        Report::Refused(why) => format!("sessionfs: {why}\n"),
        Report::NotASession(e) => format!("{p}: error: {e}\n"),
        Report::Checked(s) => {
            let mut out = String::new();
            let warnings = s
                .problems
                .iter()
                .filter(|x| x.severity >= Severity::Warning)
                .count();
            for x in &s.problems {
                out.push_str(&format!(
                    "{p}:{}: {}: {}{}\n",
                    x.line,
                    severity_word(x.severity),
                    describe_for(s.format, &x.what),
                    repair(path, &x.what)
                ));
            }
            if s.problems_dropped > 0 {
                out.push_str(&format!(
                    "{p}: … and {} not listed\n",
                    count(s.problems_dropped as usize, "more problem", "more problems")
                ));
            }
            out.push_str(&format!(
                "{p}: {}: {}, {}, {}, {}, {}, deepest path {}{}{}\n",
                if warnings == 0 {
                    "ok".to_string()
                } else {
                    count(warnings, "problem", "problems")
                },
                match s.format {
                    crate::model::core::format::Format::Pi => format!("v{}", s.version),
                    other => other.name().to_string(),
                },
                count(s.entries, "entry", "entries"),
                count(s.roots, "root", "roots"),
                count(s.leaves as usize, "leaf", "leaves"),
                count(s.branch_points as usize, "branch point", "branch points"),
                s.deepest,
                s.deepest_leaf
                    .as_ref()
                    .map(|l| format!(" (to {l})"))
                    .unwrap_or_default(),
                s.name
                    .as_ref()
                    .map(|n| format!(", name {n:?}"))
                    .unwrap_or_default(),
            ));
            out
        }
    }
}

/// Machine-readable report.
pub fn to_json(path: &Path, r: &Report) -> Value {
    let file = path.display().to_string();
    match r {
        Report::Unreadable(e) | Report::Refused(e) => {
            json!({"file": file, "ok": false, "readable": false, "error": e})
        }
        Report::NotASession(e) => {
            json!({"file": file, "ok": false, "readable": true, "session": false, "error": e})
        }
        Report::Checked(s) => json!({
            "file": file,
            "ok": !r.has_problems(),
            "readable": true,
            "session": true,
            "format": s.format.name(),
            "version": s.version,
            "sessionId": s.session_id,
            "problems": s.problems.iter().map(|x| json!({
                "line": x.line,
                "severity": severity_word(x.severity),
                "kind": kind_word(&x.what),
                "message": describe_for(s.format, &x.what),
                "repair": repair_command(path, &x.what),
            })).collect::<Vec<_>>(),
            "problemsNotListed": s.problems_dropped,
            "entries": s.entries,
            "roots": s.roots,
            "leaves": s.leaves,
            "branchPoints": s.branch_points,
            "deepestPath": s.deepest,
            "deepestLeaf": s.deepest_leaf,
            "leafId": s.leaf,
            "name": s.name,
            "indexBytes": s.index_bytes,
            "indexMs": (s.index_ms * 100.0).round() / 100.0,
        }),
    }
}

fn kind_word(p: &ProblemKind) -> &'static str {
    match p {
        ProblemKind::Agent { code, .. } => code,
        ProblemKind::Blank => "blank",
        ProblemKind::Crlf => "crlf",
        ProblemKind::Malformed(_) => "malformed",
        ProblemKind::NotAnObject => "not-an-object",
        ProblemKind::ExtraHeader => "extra-header",
        ProblemKind::MissingId => "missing-id",
        ProblemKind::DuplicateId { .. } => "duplicate-id",
        ProblemKind::Orphan { .. } => "orphan",
        ProblemKind::SelfParent => "self-parent",
        ProblemKind::Cycle { .. } => "cycle",
        ProblemKind::UnknownType(_) => "unknown-type",
        ProblemKind::LabelTargetMissing { .. } => "label-target-missing",
        ProblemKind::UnknownLine(_) => "unknown-line",
        ProblemKind::TooLong { ended: true, .. } => "line-too-long",
        ProblemKind::TooLong { ended: false, .. } => "last-line-too-long",
        ProblemKind::UnterminatedLastLine { parses: true, .. } => "unterminated-last-line",
        ProblemKind::UnterminatedLastLine { parses: false, .. } => "torn-last-line",
        ProblemKind::ContextEdit { what, .. } => match what {
            EditProblem::NoTarget => "context-edit-no-target",
            EditProblem::TargetMissing => "context-edit-target-missing",
            EditProblem::OffBranch => "context-edit-off-branch",
            EditProblem::BeforeTarget => "context-edit-before-target",
            EditProblem::NoReplacement => "context-edit-no-replacement",
            EditProblem::MalformedReplacement => "context-edit-malformed-replacement",
            EditProblem::NoEffect(_) => "context-edit-no-effect",
        },
    }
}
