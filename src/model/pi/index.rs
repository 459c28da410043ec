//! Pi's lines into the core's index, and what Pi's index keeps besides the entries.
//!
//! The core reads the file and hands each complete line here once the first line that
//! parses was taken for a Pi header ([`Index::is_header`]). This is Pi's hot path: one
//! [`LineHead`] scan per line (no `serde_json::Value`), then the entry is pushed with
//! the core's [`Session::push_entry`]. What only Pi has lives in [`Index`]:
//!
//! * the header's version (v1 files get their ids here, derived from the session id
//!   and the position, the same on every load; see [`super::migrate`]);
//! * Pi's parsed-array positions of v1 entries (a v1 compaction names the first entry
//!   it keeps by that position);
//! * labels, `context_edit` targets and the session name, which resolve over the whole
//!   file in file order (the last `label` on a target wins, an empty one clears it).

use crate::model::core::id::{IdBuild, IdKey};
use crate::model::core::js::js_date_ms;
use crate::model::core::kind::KNOWN_TYPES;
use crate::model::core::problem::{ProblemKind, Severity};
use crate::model::core::scan::{Field, LineError, LineHead};
use crate::model::core::session::{Header, NIL, NO_TIME, Session, flags, malformed_reason};
use std::collections::HashMap;

/// Pi's own index state. See the module docs.
#[derive(Debug)]
pub struct Index {
    /// `version` of the header, with Pi's default of 1; non-numeric counts as current.
    pub(crate) version: u32,
    /// Parsed lines so far, header included (Pi's parsed-array index; v1 needs it).
    parsed_count: u32,
    /// v1 only: parsed-array index -> entry index (`NIL` for lines that are none).
    v1_parsed: Vec<u32>,
    /// Live labels: target id -> (label, index of the label entry).
    pub(crate) labels: HashMap<IdKey, (Box<str>, u32), IdBuild>,
    /// `context_edit` entries by the id they target, in file order.
    pub(crate) edits: HashMap<IdKey, Vec<u32>, IdBuild>,
    /// The session name and the index of the `session_info` entry that set it.
    pub(crate) name: Option<(Box<str>, u32)>,
}

impl Default for Index {
    fn default() -> Index {
        Index {
            version: 3,
            parsed_count: 0,
            v1_parsed: Vec::new(),
            labels: HashMap::default(),
            edits: HashMap::default(),
            name: None,
        }
    }
}

impl Index {
    /// Whether `raw`, the first line of a file that parses, is a Pi header.
    pub fn is_header(raw: &[u8]) -> bool {
        LineHead::parse(raw).is_ok_and(|h| h.is_header())
    }

    pub fn is_v1(&self) -> bool {
        self.version < 2
    }

    /// v1 only: the entry at Pi's parsed-array index `k` (the header is 0).
    pub fn v1_entry_at_parsed(&self, k: usize) -> Option<u32> {
        self.v1_parsed.get(k).copied().filter(|&e| e != NIL)
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.v1_parsed.capacity() * 4
            + self.labels.capacity() * 48
            + self.edits.capacity() * 48
            + self.edits.values().map(|v| v.capacity() * 4).sum::<usize>()
    }

    /// A parsed line that is no entry.
    fn parsed_no_entry(&mut self) {
        self.parsed_count += 1;
        if self.is_v1() {
            self.v1_parsed.push(NIL);
        }
    }

    /// Indexes one line (`line_no` from 1, at `off`); the first one handed here is the
    /// header.
    pub fn index_line(&mut self, s: &mut Session, raw: &[u8], off: u64, line_no: u32) {
        self.index_head(s, raw, &LineHead::parse(raw), off, line_no);
    }

    /// [`Index::index_line`] given `head`, which is `LineHead::parse(raw)` (parsed
    /// ahead, perhaps on another thread).
    pub fn index_head(
        &mut self,
        s: &mut Session,
        raw: &[u8],
        head: &Result<LineHead<'_>, LineError>,
        off: u64,
        line_no: u32,
    ) {
        let len = raw.len() as u32;
        let head = match head {
            Ok(h) => h,
            Err(LineError::Blank) => {
                s.note(line_no, Severity::Note, ProblemKind::Blank);
                return;
            }
            Err(LineError::Malformed(m)) => {
                let m = malformed_reason(raw, m.clone());
                s.note(line_no, Severity::Warning, ProblemKind::Malformed(m));
                return;
            }
            Err(LineError::NotAnObject) => {
                // JSON.parse accepts it, so for Pi it is a parsed line.
                self.parsed_no_entry();
                s.note(line_no, Severity::Warning, ProblemKind::NotAnObject);
                return;
            }
        };
        if self.parsed_count == 0 {
            self.header(s, head, off, len, line_no);
            return;
        }
        if head.ty.as_str() == Some("session") {
            self.parsed_no_entry();
            s.note(line_no, Severity::Note, ProblemKind::ExtraHeader);
            return;
        }
        self.parsed_count += 1;
        let idx = s.entries.len() as u32;
        let mut fl = 0u8;
        let (id, parent_id) = if self.is_v1() {
            self.v1_parsed.push(idx);
            let id = crate::model::core::id::v1_id(&s.header.session_id, idx, |k| {
                s.by_id.contains_key(&k)
            });
            let parent = if idx == 0 {
                IdKey::NONE
            } else {
                s.entries[idx as usize - 1].id
            };
            (id, parent)
        } else {
            let id = match head.id.as_str() {
                Some(x) => s.ids.intern(x),
                None => {
                    fl |= flags::NO_ID;
                    s.note(line_no, Severity::Warning, ProblemKind::MissingId);
                    IdKey::NONE
                }
            };
            let parent = match head.parent_id.as_str() {
                Some(x) => s.ids.intern(x),
                None => IdKey::NONE,
            };
            (id, parent)
        };
        let ty = head.ty.as_str();
        if let Some(t) = ty
            && !KNOWN_TYPES.contains(&t)
        {
            fl |= flags::UNKNOWN_TYPE;
            s.note(
                line_no,
                Severity::Note,
                ProblemKind::UnknownType(t.to_string()),
            );
        } else if ty.is_none() {
            fl |= flags::UNKNOWN_TYPE;
            s.note(
                line_no,
                Severity::Note,
                ProblemKind::UnknownType(String::new()),
            );
        }
        let kind = s.kinds.intern(ty, head.role.as_str(), self.version < 3);
        let ts = head
            .timestamp
            .as_str()
            .and_then(js_date_ms)
            .unwrap_or(NO_TIME);
        s.register_id(id, idx, line_no);
        // Labels and name resolve over the whole file, in file order.
        match ty {
            Some("label") => {
                if let Some(t) = head.target_id.as_str() {
                    let t = s.ids.intern(t);
                    match head.label.as_str() {
                        Some(l) if !l.is_empty() => {
                            self.labels.insert(t, (l.into(), idx));
                        }
                        _ => {
                            self.labels.remove(&t);
                        }
                    }
                }
            }
            Some("context_edit") => {
                if let Some(t) = head.target_id.as_str() {
                    let t = s.ids.intern(t);
                    self.edits.entry(t).or_default().push(idx);
                }
            }
            Some("session_info") => {
                let n = head.name.as_str().map(str::trim).unwrap_or("");
                self.name = if n.is_empty() {
                    None
                } else {
                    Some((n.into(), idx))
                };
            }
            _ => {}
        }
        s.push_entry(off, len, line_no, id, parent_id, ts, kind, fl);
    }

    /// The header line: the session's id, time and format version.
    fn header(&mut self, s: &mut Session, head: &LineHead<'_>, off: u64, len: u32, line: u32) {
        self.version = match &head.version {
            Field::Num(n) if *n < 2.0 => 1,
            Field::Num(n) if *n < 3.0 => 2,
            Field::Missing | Field::Null => 1,
            _ => 3,
        };
        s.header = Header {
            offset: off,
            len,
            line,
            session_id: head.id.as_str().unwrap_or_default().to_string(),
            version: self.version,
            timestamp_ms: head
                .timestamp
                .as_str()
                .and_then(js_date_ms)
                .unwrap_or(NO_TIME),
        };
        self.parsed_count = 1;
        if self.is_v1() {
            self.v1_parsed.push(NIL);
        }
    }

    /// Live labels: `(label, target node)`, sorted by label; dangling targets left out.
    pub fn labels<'a>(&'a self, s: &Session) -> Vec<(&'a str, u32)> {
        let mut v: Vec<(&str, u32)> = self
            .labels
            .iter()
            .filter_map(|(t, (l, _))| s.find_key(*t).map(|n| (&**l, n)))
            .collect();
        v.sort();
        v
    }

    pub fn label_of(&self, s: &Session, i: u32) -> Option<&str> {
        let e = s.entry(i);
        if e.id.is_none() {
            return None;
        }
        self.labels.get(&e.id).map(|(l, _)| &**l)
    }

    /// Pi allows one label per entry but the same label on several entries; then the
    /// one set last is meant.
    pub fn label_entry(&self, s: &Session, name: &str) -> Option<(u32, u32)> {
        self.labels
            .iter()
            .filter(|(_, (l, _))| &**l == name)
            .filter_map(|(t, (_, e))| s.find_key(*t).map(|n| (n, *e)))
            .max_by_key(|&(_, e)| e)
    }

    pub fn edits_of(&self, s: &Session, i: u32) -> Vec<u32> {
        let e = s.entry(i);
        if e.id.is_none() || e.flags & flags::NO_ID != 0 {
            return Vec::new();
        }
        self.edits.get(&e.id).map_or_else(Vec::new, |v| {
            v.iter()
                .copied()
                .filter(|&x| s.entry(x).is_node())
                .collect()
        })
    }

    pub fn edited_targets(&self, s: &Session) -> Vec<u32> {
        self.edits.keys().filter_map(|k| s.find_key(*k)).collect()
    }

    /// Labels whose target is not in the file.
    pub fn tree_problems(&self, s: &Session, found: &mut Vec<(u32, ProblemKind)>) {
        for (t, (_, li)) in &self.labels {
            if s.find_key(*t).is_none() {
                let target = s.ids().resolve(*t).unwrap_or_default().into_owned();
                found.push((
                    s.entry(*li).line,
                    ProblemKind::LabelTargetMissing { target },
                ));
            }
        }
    }
}
