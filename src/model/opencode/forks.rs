//! Which session a fork came from, and which forks came from a session (§5.3).
//!
//! opencode's fork (`run --fork`, TUI `/fork`) is a new session holding copies of the
//! source's messages: new ids, but the source's `time_created`, and the same parts. The
//! title (`<title> (fork #N)`) is the only other trace, and a rename loses it. So the
//! link is found from the content: the sessions of the same project whose first
//! message was created in the same millisecond as this one's (and holds the same
//! parts) form a family; of two members, the messages they share are the leading run
//! of equal `time_created`s. A fork's source is the member created before it with the
//! longest such run (ties: the title opencode would have given the fork, then the
//! latest), and the fork continues from the source's last shared message.
//!
//! One indexed query finds the family; each member costs a read of its messages' ids
//! and times.

use super::store::{SessionRow, Snapshot};
use crate::model::core::agent::SessionLink;
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;

/// The forks of a session, and what it was forked from.
#[derive(Debug, Clone, Default)]
pub struct Family {
    /// The session and message this one continues (its source's last shared message).
    pub forked_from: Option<SessionLink>,
    /// Message id → the forks made from it.
    pub at: HashMap<String, Vec<SessionLink>>,
}

/// A member of a family.
#[derive(Debug, Clone)]
struct Member {
    id: String,
    title: String,
    created: i64,
    folder: String,
    /// Its messages: (id, time_created), in order.
    messages: Vec<(String, i64)>,
}

/// The title opencode gives a fork of a session titled `t` (`Session.fork`).
pub fn fork_title(t: &str) -> String {
    if let Some(base) = t.strip_suffix(')')
        && let Some(k) = base.rfind(" (fork #")
        && let Ok(n) = base[k + " (fork #".len()..].parse::<u64>()
    {
        return format!("{} (fork #{})", &base[..k], n + 1);
    }
    format!("{t} (fork #1)")
}

/// How many leading messages `a` and `b` share.
fn shared(a: &[(String, i64)], b: &[(String, i64)]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x.1 == y.1).count()
}

/// The source of member `m` among `all`: its index and the run they share.
fn source_of(all: &[Member], m: usize) -> Option<(usize, usize)> {
    let me = &all[m];
    let mut best: Option<(usize, usize, bool, i64)> = None;
    for (k, c) in all.iter().enumerate() {
        if k == m || c.created >= me.created {
            continue;
        }
        let n = shared(&c.messages, &me.messages);
        if n == 0 {
            continue;
        }
        let titled = fork_title(&c.title) == me.title;
        let better = match best {
            None => true,
            Some((_, bn, bt, bc)) => (n, titled, c.created) > (bn, bt, bc),
        };
        if better {
            best = Some((k, n, titled, c.created));
        }
    }
    best.map(|(k, n, ..)| (k, n))
}

impl Family {
    /// The family of the session of `snap` (row `row`) in database `db`. Nothing when
    /// the database cannot be read now.
    pub fn read(db: &Path, row: &SessionRow, snap: &Snapshot) -> Family {
        let Some(first) = snap.main.messages.first() else {
            return Family::default();
        };
        let first_parts: Vec<&str> = first.parts.iter().map(|p| p.data.as_str()).collect();
        let read = super::db::read(db, |c| members(c, row, first.time_created, &first_parts));
        let Ok(mut all) = read else {
            return Family::default();
        };
        if all.len() <= 1 {
            return Family::default();
        }
        all.sort_by(|a, b| (a.created, &a.id).cmp(&(b.created, &b.id)));
        let Some(me) = all.iter().position(|m| m.id == row.id) else {
            return Family::default();
        };
        let link = |m: &Member, entry: Option<String>| SessionLink {
            session: m.id.clone(),
            folder: Some(m.folder.clone()),
            entry,
        };
        let mut out = Family::default();
        if let Some((k, n)) = source_of(&all, me) {
            out.forked_from = Some(link(&all[k], Some(all[k].messages[n - 1].0.clone())));
        }
        for f in 0..all.len() {
            if f == me {
                continue;
            }
            if let Some((k, n)) = source_of(&all, f)
                && k == me
            {
                let at = all[me].messages[n - 1].0.clone();
                out.at.entry(at).or_default().push(link(&all[f], None));
            }
        }
        out
    }
}

/// The sessions of `row`'s project (no subagents) whose first message was created at
/// `t0` with the parts `parts`, `row`'s own among them.
fn members(
    c: &Connection,
    row: &SessionRow,
    t0: i64,
    parts: &[&str],
) -> rusqlite::Result<Vec<Member>> {
    let mut stmt = c.prepare(
        "SELECT s.id, s.title, s.time_created, s.directory, p.worktree FROM session s \
         LEFT JOIN project p ON p.id = s.project_id \
         WHERE s.project_id = ?1 AND s.parent_id IS NULL AND EXISTS \
         (SELECT 1 FROM message m WHERE m.session_id = s.id AND m.time_created = ?2)",
    )?;
    let rows = stmt.query_map(rusqlite::params![row.project_id, t0], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, Option<String>>(4)?,
        ))
    })?;
    let mut out = Vec::new();
    for r in rows {
        let (id, title, created, dir, worktree) = r?;
        let mut ms = c.prepare_cached(
            "SELECT id, time_created FROM message WHERE session_id = ?1 ORDER BY time_created, id",
        )?;
        let messages: Vec<(String, i64)> = ms
            .query_map([&id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        if messages.first().map(|m| m.1) != Some(t0) {
            continue;
        }
        if id != row.id {
            // The same first message: the same parts.
            let mut ps =
                c.prepare_cached("SELECT data FROM part WHERE message_id = ?1 ORDER BY id")?;
            let theirs: Vec<String> = ps
                .query_map([&messages[0].0], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            if theirs.iter().map(String::as_str).ne(parts.iter().copied()) {
                continue;
            }
        }
        out.push(Member {
            folder: super::catalog::folder_name(worktree.as_deref(), &dir)
                .to_string_lossy()
                .into_owned(),
            id,
            title,
            created,
            messages,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_titles_count_up() {
        assert_eq!(fork_title("Arithmetic"), "Arithmetic (fork #1)");
        assert_eq!(fork_title("Arithmetic (fork #1)"), "Arithmetic (fork #2)");
        assert_eq!(fork_title("A (fork #x)"), "A (fork #x) (fork #1)");
    }
}
