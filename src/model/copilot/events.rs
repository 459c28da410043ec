//! Which events are entries, which are bookkeeping, and what an envelope must hold
//! (COPILOT-FORMAT.md §2, §4, §10).
//!
//! **Entries** are the events a user reads as the conversation: the messages, tool results,
//! compactions, and the notices the CLI writes into it (errors, warnings, interrupts, the
//! `session.info` lines `/rewind` and `/fork` leave, a subagent's end). Each is a directory
//! of the mount. Everything else the CLI writes (session start and resume, the recorded
//! system prompt, turn marks, usage records, tool starts, permissions, image assets, the
//! compaction call's debug events, shutdown tallies) is **bookkeeping**: no directory, but
//! read for what it means (`context`'s system prompt, images, `cost`, `session.json`).
//! An event type this table does not know is shown as an entry, as written: a newer CLI's
//! event may well be conversation, and an entry can be looked at where a skipped line
//! cannot.

/// What an entry is: its KIND file's name and how it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ev {
    /// `user.message`: a prompt (the user's, or a subagent's task).
    User,
    /// `assistant.message`: a reply, with its tool calls.
    Assistant,
    /// `tool.execution_complete`: a tool's result or error.
    ToolResult,
    /// `session.compaction_complete`: the summary that replaces what precedes it.
    Compaction,
    /// `abort`: a turn interrupted by the user.
    Abort,
    /// `session.error`: a request that failed.
    Error,
    /// `session.warning`.
    Warning,
    /// `session.info`: a rewind, a fork notice, …
    Info,
    /// `system.notification` (background agents).
    Notification,
    /// `subagent.completed` / `subagent.failed`.
    SubagentEnd,
    /// `session.truncation`, `session.context_cleared`, `session.task_complete`: what the
    /// CLI did to the conversation, as written.
    Note,
    /// A type this table does not know.
    Unknown,
}

impl Ev {
    /// The KIND file's name.
    pub fn kind(self) -> &'static str {
        match self {
            Ev::User => "user",
            Ev::Assistant => "assistant",
            Ev::ToolResult => "toolResult",
            Ev::Compaction => "compaction",
            Ev::Abort => "abort",
            Ev::Error => "error",
            Ev::Warning => "warning",
            Ev::Info => "info",
            Ev::Notification => "notification",
            Ev::SubagentEnd => "subagent",
            Ev::Note => "note",
            Ev::Unknown => "event",
        }
    }
}

/// What a line of `events.jsonl` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    Entry(Ev),
    /// `session.start`: the session's header (id, version, start time, cwd, model).
    Start,
    /// `session.resume`: a process took the session up again (its cwd, its model).
    Resume,
    /// `session.model_change`.
    ModelChange,
    /// `system.message`: the system prompt a request carried (not read back by the CLI).
    System,
    /// `session.binary_asset`: an image a user message names by `assetId`.
    Asset,
    /// `session.usage_record`: one model call's tokens.
    Usage,
    /// `subagent.started`: which call a subagent (`agentId`) runs for.
    SubagentStart,
    /// Any other bookkeeping event.
    Other,
}

/// Bookkeeping events of 1.0.102 (measured, §4) and the other persisted types of its
/// schema that carry no conversation.
const BOOKKEEPING: &[&str] = &[
    "assistant.turn_start",
    "assistant.turn_end",
    "tool.execution_start",
    "permission.requested",
    "permission.completed",
    "session.compaction_start",
    "subagent.configured",
    "subagent.selected",
    "subagent.deselected",
    "session.usage_checkpoint",
    "session.shutdown",
    "session.mode_changed",
    "session.plan_changed",
    "session.permissions_changed",
    "session.session_limits_changed",
    "session.workspace_file_changed",
    "session.remote_steerable_changed",
    "session.model_deselected",
    "session.context_changed",
    "hook.start",
    "hook.end",
    "skill.invoked",
    "skill.invoked_ref",
    "skill.context_delivered",
    "skill.context_delivered_ref",
    "tool.user_requested",
    "external_tool.requested",
    "external_tool.completed",
    "instruction_discovered",
    "session.auto_mode_resolved",
    "session.request_body_compression_disabled",
    "session.completion_receipt",
];

/// What the line of type `ty` is.
pub fn classify(ty: &str) -> Line {
    match ty {
        "user.message" => Line::Entry(Ev::User),
        "assistant.message" => Line::Entry(Ev::Assistant),
        "tool.execution_complete" => Line::Entry(Ev::ToolResult),
        "session.compaction_complete" => Line::Entry(Ev::Compaction),
        "abort" => Line::Entry(Ev::Abort),
        "session.error" => Line::Entry(Ev::Error),
        "session.warning" => Line::Entry(Ev::Warning),
        "session.info" => Line::Entry(Ev::Info),
        "system.notification" => Line::Entry(Ev::Notification),
        "subagent.completed" | "subagent.failed" => Line::Entry(Ev::SubagentEnd),
        "session.truncation" | "session.context_cleared" | "session.task_complete" => {
            Line::Entry(Ev::Note)
        }
        "session.start" => Line::Start,
        "session.resume" => Line::Resume,
        "session.model_change" => Line::ModelChange,
        "system.message" => Line::System,
        "session.binary_asset" => Line::Asset,
        "session.usage_record" => Line::Usage,
        "subagent.started" => Line::SubagentStart,
        // The compaction call's debug events (`model.turn_started`, …, not in the schema).
        t if t.starts_with("model.") => Line::Other,
        t if BOOKKEEPING.contains(&t) => Line::Other,
        _ => Line::Entry(Ev::Unknown),
    }
}

/// Whether `s` is what the CLI takes for an event id: a UUID (§10: a line whose `id` is
/// not one makes the whole session fail to load).
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Whether `s` is what the CLI takes for a `timestamp`: an ISO 8601 date-time with a zone
/// (§10: otherwise the session fails to load). Checked as the CLI words it: a date, `T`,
/// a time, and `Z` or `±HH:MM`.
pub fn is_iso_with_zone(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    if b.len() < 20
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
        || !(b[10] == b'T' || b[10] == b't')
        || !digits(11..13)
        || b[13] != b':'
        || !digits(14..16)
    {
        return false;
    }
    let rest = &s[16..];
    let zone_at = rest
        .find(['Z', 'z', '+'])
        .or_else(|| rest.rfind('-'))
        .map(|k| k + 16);
    match zone_at {
        Some(k) if s[k..].eq_ignore_ascii_case("z") => true,
        Some(k) => {
            let z = &b[k + 1..];
            z.len() == 5 && z[2] == b':' && digits(k + 1..k + 3) && digits(k + 4..k + 6)
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_times_as_the_cli_checks_them() {
        assert!(is_uuid("b693eb47-0c1e-4c5b-9b5e-1f2a3b4c5d6e"));
        assert!(!is_uuid("b693eb47"));
        assert!(is_iso_with_zone("2026-12-05T07:32:38.112Z"));
        assert!(is_iso_with_zone("2026-12-05T07:32:38+02:00"));
        assert!(is_iso_with_zone("2026-12-05T07:32:38.112-05:30"));
        assert!(!is_iso_with_zone("2026-12-05T07:32:38.112"));
        assert!(!is_iso_with_zone("2026-12-05"));
        assert!(!is_iso_with_zone("yesterday"));
    }

    #[test]
    fn conversation_events_are_entries_and_bookkeeping_is_not() {
        assert_eq!(classify("user.message"), Line::Entry(Ev::User));
        assert_eq!(classify("session.info"), Line::Entry(Ev::Info));
        assert_eq!(classify("model.messages_snapshot"), Line::Other);
        assert_eq!(classify("assistant.turn_start"), Line::Other);
        assert_eq!(classify("system.message"), Line::System);
        assert_eq!(classify("something.new"), Line::Entry(Ev::Unknown));
    }
}
