//! Pi's context at an entry, read from the index: only the entries that decide it are
//! read and parsed (see [`Session::llm_context`]).

use crate::model::core::id::IdKey;
use crate::model::core::kind::KindId;
use crate::model::core::session::{Session, flags, parse_lines};
use std::io;
use std::os::unix::fs::FileExt;

/// The entries of a path that decide its context (see [`Session::context_plan`]).
pub(crate) struct ContextPlan {
    /// The last thinking-level entry and the last model entry, parsed.
    settings: Vec<serde_json::Value>,
    /// The latest compaction on the path, parsed, if there is one.
    compaction: Option<serde_json::Value>,
    /// The other context entries that can contribute a message or an edit, in
    /// order: those the compaction keeps from before it (system messages and older
    /// compactions left out), then everything after it; the whole path without one.
    kept: Vec<u32>,
}

/// What [`Session::llm_context`] returns: Pi's context for one entry.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmContext {
    pub thinking_level: String,
    pub model: Option<serde_json::Value>,
    /// The messages after `convertToLlm`.
    pub messages: Vec<serde_json::Value>,
}

impl Session {
    /// The context Pi builds for entry `i` (`buildSessionContext` with `i` as the leaf,
    /// then `convertToLlm`), by Pi 1.6.0's rules (see [`super::context`]).
    ///
    /// Only the entries that decide the context are read and parsed (see
    /// [`Session::context_plan`]): where the path has a compaction, those it keeps and
    /// those after it, plus the two that settle the thinking level and the model. At
    /// the deepest leaf of a 100k-entry session that is 290 of 2,889 lines. Long runs
    /// of lines are parsed on two cores (see `parse_lines`).
    pub fn llm_context(&self, i: u32) -> io::Result<LlmContext> {
        let path = self.context_path(i);
        let built = match self.context_plan(&path)? {
            Some(plan) => {
                let mut entries = Vec::with_capacity(plan.kept.len() + 1);
                entries.extend(plan.compaction);
                entries.extend(self.parse_for_context(i, &plan.kept)?);
                crate::model::pi::context::build_from_parts(
                    crate::model::pi::context::settings(plan.settings.iter()),
                    entries,
                )
            }
            None => self.build_context_from_path(i, &path)?,
        };
        Ok(Self::llm_context_of(built))
    }

    /// [`Session::llm_context`] the plain way, parsing every entry on the path: what
    /// the shortcut must agree with (tests compare the two).
    #[doc(hidden)]
    pub fn llm_context_reading_whole_path(&self, i: u32) -> io::Result<LlmContext> {
        let path = self.context_path(i);
        Ok(Self::llm_context_of(
            self.build_context_from_path(i, &path)?,
        ))
    }

    fn llm_context_of(built: crate::model::pi::context::Context) -> LlmContext {
        let messages = crate::model::pi::context::convert_to_llm(built.agent_messages);
        LlmContext {
            thinking_level: built.thinking_level,
            model: built.model,
            messages,
        }
    }

    /// The entries Pi's `getBranch` returns for leaf `i`, root first.
    fn context_path(&self, i: u32) -> Vec<u32> {
        let mut path = self.path_to(i);
        // Pi walks up only while `parentId` is truthy: an entry whose parent id is the
        // empty string starts its context, although the tree shows it under that parent.
        let empty = self.ids.get("");
        if let Some(k) = path
            .iter()
            .rposition(|&p| Some(self.entries[p as usize].parent_id) == empty)
        {
            path.drain(..k);
        }
        path
    }

    fn build_context_from_path(
        &self,
        i: u32,
        path: &[u32],
    ) -> io::Result<crate::model::pi::context::Context> {
        let values = self.parse_for_context(i, path)?;
        Ok(crate::model::pi::context::build_session_context(values))
    }

    /// Entries parsed for the context of `leaf`, in the order given; one nested past
    /// serde_json's limit is valid JSON Pi could read, but it contributes nothing here.
    /// Lines that lie close together in the file are read with one `pread`.
    fn parse_for_context(&self, leaf: u32, entries: &[u32]) -> io::Result<Vec<serde_json::Value>> {
        /// Read the bytes between two lines rather than make another read, up to this.
        const GAP: u64 = 16 << 10;
        /// The most one read takes.
        const SPAN: u64 = 4 << 20;
        let line = |k: usize| &self.entries[entries[k] as usize];
        let mut order: Vec<usize> = (0..entries.len()).collect();
        order.sort_by_key(|&k| line(k).offset);
        let mut values: Vec<Option<serde_json::Value>> = (0..entries.len()).map(|_| None).collect();
        // Read a batch (runs of nearby lines in one read each), then parse it.
        let mut bufs: Vec<Vec<u8>> = Vec::new();
        // Each line of the batch: its buffer, where it starts there, its length.
        let mut lines: Vec<(usize, usize, usize)> = Vec::new();
        // And its place in `entries`.
        let mut places: Vec<usize> = Vec::new();
        let mut batch = 0u64;
        let mut g = 0;
        while g < order.len() {
            let start = line(order[g]).offset;
            let mut end = start + line(order[g]).len as u64;
            let mut h = g + 1;
            while h < order.len() {
                let e = line(order[h]);
                let e_end = e.offset + e.len as u64;
                if e.offset > end + GAP || e_end - start > SPAN {
                    break;
                }
                end = end.max(e_end);
                h += 1;
            }
            let mut buf = vec![0; (end - start) as usize];
            self.file.read_exact_at(&mut buf, start)?;
            for &k in &order[g..h] {
                let e = line(k);
                lines.push((bufs.len(), (e.offset - start) as usize, e.len as usize));
                places.push(k);
                batch += e.len as u64;
            }
            bufs.push(buf);
            g = h;
            if batch < SPAN && g < order.len() {
                continue;
            }
            let parsed = parse_lines(std::mem::take(&mut bufs), std::mem::take(&mut lines));
            for (k, v) in places.drain(..).zip(parsed) {
                match v {
                    Some(mut v) => {
                        self.agent().migrate(self, entries[k], &mut v);
                        values[k] = Some(v);
                    }
                    None => log::debug!(
                        "context of {}: skipping line {}, nested too deep to build",
                        self.id_string(leaf),
                        line(k).line
                    ),
                }
            }
            batch = 0;
        }
        Ok(values.into_iter().flatten().collect())
    }

    /// [`Session::entry_value`], with `None` for a line nested past serde_json's limit
    /// (valid JSON, but it cannot be built here).
    fn entry_value_if_buildable(&self, i: u32) -> io::Result<Option<serde_json::Value>> {
        match self.entry_value(i) {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Which entries of `path` decide its context, found from the index alone: Pi
    /// 1.6's `buildContextEntries` (the latest compaction, the entries from its
    /// `firstKeptEntryId` up to it without system messages, everything after it; the
    /// whole path without a compaction), keeping only the kinds that can contribute a
    /// message or an edit (messages, custom messages, branch summaries, context edits:
    /// an older compaction inside the kept range contributes nothing, nor do labels,
    /// settings, names, custom entries and usage), and, for
    /// `getSessionContextSettings`, the last `thinking_level_change` and the last
    /// `model_change` or assistant message (last one wins, each on its own).
    ///
    /// `None` means "parse the whole path": a legacy file (migration rewrites
    /// entries), or anything unusual that only the full transcription in
    /// [`super::context`] handles exactly: a compaction or setting that does not
    /// parse, an id that is not a string, a compaction id repeated earlier on the path.
    fn context_plan(&self, path: &[u32]) -> io::Result<Option<ContextPlan>> {
        if self.header.version < 3 {
            return Ok(None);
        }
        let kind = |ty: &str, role: &str| self.kinds.find(ty, role);
        let is = |p: u32, k: Option<KindId>| k == Some(self.entries[p as usize].kind);
        let compaction_kind = kind("compaction", "");
        let system_kind = kind("message", "system");
        let with_id = |p: u32, key: IdKey| {
            let e = &self.entries[p as usize];
            e.id == key && e.flags & flags::NO_ID == 0
        };
        // What can give a message or an edit, by kind: the `type` the index read is
        // the one the parsed entry has, so this drops exactly what contributes nothing.
        let contributes = |p: u32| {
            let k = self.entries[p as usize].kind;
            matches!(
                self.kinds.entry_type(k),
                "message" | "custom_message" | "branch_summary" | "context_edit"
            )
        };
        let mut kept = Vec::with_capacity(path.len());
        let mut compaction = None;
        match path.iter().rposition(|&p| is(p, compaction_kind)) {
            None => kept.extend(path.iter().copied().filter(|&p| contributes(p))),
            Some(c) => {
                let ce = &self.entries[path[c] as usize];
                // Pi looks the compaction up again by id: the first path entry with it.
                if ce.flags & flags::NO_ID != 0
                    || path.iter().position(|&p| with_id(p, ce.id)) != Some(c)
                {
                    return Ok(None);
                }
                let Some(value) = self.entry_value_if_buildable(path[c])? else {
                    return Ok(None);
                };
                // Retain-none (its own id) finds nothing before it: nothing is kept.
                let first_kept = match value.get("firstKeptEntryId") {
                    Some(serde_json::Value::String(s)) => self
                        .ids
                        .get(s)
                        .and_then(|k| path[..c].iter().position(|&p| with_id(p, k))),
                    _ => return Ok(None),
                };
                if let Some(f) = first_kept {
                    kept.extend(
                        path[f..c]
                            .iter()
                            .copied()
                            .filter(|&p| contributes(p) && !is(p, system_kind)),
                    );
                }
                kept.extend(path[c + 1..].iter().copied().filter(|&p| contributes(p)));
                compaction = Some(value);
            }
        }

        let last = |kinds: &[Option<KindId>]| {
            path.iter()
                .rev()
                .copied()
                .find(|&p| kinds.iter().any(|&k| is(p, k)))
        };
        let mut settings = Vec::with_capacity(2);
        for p in [
            last(&[kind("thinking_level_change", "")]),
            last(&[kind("model_change", ""), kind("message", "assistant")]),
        ]
        .into_iter()
        .flatten()
        {
            // One that does not parse leaves an earlier one in charge: take the long way.
            let Some(v) = self.entry_value_if_buildable(p)? else {
                return Ok(None);
            };
            settings.push(v);
        }
        Ok(Some(ContextPlan {
            settings,
            compaction,
            kept,
        }))
    }
}
