//! The usage tables read from a session: [`Table::build`] and what a table says about
//! a session's paths, branches and entries. Here and not in `usage/mod.rs` so that the
//! tables' own file names no session: the agent trait (in `core::session`) names
//! [`Table`], and the session file must not be named back by the file it imports.

use super::{Table, Usage, dollars, group, round};
use crate::model::core::session::{NIL, Session};
use crate::model::core::usage::prices::Prices;
use std::fmt::Write as _;

impl Table {
    /// Reads every entry of `s` once. Lines that cannot be read count nothing.
    pub fn build(s: &Session, prices: &Prices) -> Table {
        let n = s.entries().len();
        let mut t = Table {
            own: vec![None; n],
            counted_at: vec![NIL; n],
            side: vec![Usage::default(); n],
            cost_state: None,
            reply_keys: Default::default(),
            format: s.format(),
            prices_source: prices.source.clone(),
            side_files_are_subagents: s.has_side_files(),
        };
        s.agent().fill_usage(s, prices, &mut t);
        // Subagent transcripts: a side file's first line hangs under a line of the
        // main file; its whole subtree is what that spawn cost.
        if t.side_files_are_subagents {
            for i in 0..n as u32 {
                if !s.entry(i).is_node() || s.in_main_file(i) {
                    continue;
                }
                let Some(p) = s.parent(i) else { continue };
                if !s.in_main_file(p) {
                    continue;
                }
                let mut u = Usage::default();
                let mut stack = vec![i];
                while let Some(j) = stack.pop() {
                    if let Some(r) = &t.own[j as usize] {
                        u.add_record(r);
                    }
                    stack.extend(s.children(j));
                }
                t.side[p as usize].add(&u);
            }
        }
        t
    }

    /// The running total from the root to `i`, subagents spawned on the way included.
    pub fn path_usage(&self, s: &Session, i: u32) -> Usage {
        let mut u = Usage::default();
        for j in s.path_to(i) {
            if let Some(r) = &self.own[j as usize] {
                u.add_record(r);
            }
            u.add(&self.side[j as usize]);
        }
        u
    }

    /// Everything not on the current branch: the records of entries off the path from
    /// the root to the leaf (and of subagents spawned off it).
    pub fn dead_ends(&self, s: &Session) -> Usage {
        let mut on = vec![false; self.own.len()];
        if let Some(l) = s.leaf() {
            for j in s.path_to(l) {
                on[j as usize] = true;
            }
        }
        let mut u = Usage::default();
        for (i, r) in self.own.iter().enumerate() {
            let Some(r) = r else { continue };
            // A subagent's line belongs where the line that spawned it is.
            let mut j = i as u32;
            while self.side_files_are_subagents && !s.in_main_file(j) {
                match s.parent(j) {
                    Some(p) => j = p,
                    None => break,
                }
            }
            if !on[j as usize] {
                u.add_record(r);
            }
        }
        u
    }

    /// Per branch: each tip with the running total at it.
    pub fn branches(&self, s: &Session) -> Vec<(u32, Usage)> {
        s.leaves()
            .into_iter()
            .map(|l| (l, self.path_usage(s, l)))
            .collect()
    }

    /// `usage` of an entry: which entry it is (so that `cat branches/*/cost` says which
    /// branch each block is), its own record, then the running total.
    pub fn entry_text(&self, s: &Session, i: u32) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "id: {}", s.id_string(i));
        match (&self.own[i as usize], self.counted_at[i as usize]) {
            (Some(r), _) => {
                let _ = writeln!(
                    out,
                    "entry: {} {}, {}",
                    r.source.name(),
                    r.model,
                    self.own_usage(i).line()
                );
                if !r.recorded && r.cost.is_some() {
                    let _ = writeln!(out, "priced: from the price table ({})", self.prices_source);
                }
            }
            (None, c) if c != NIL => {
                let _ = writeln!(out, "entry: part of a reply counted at {}", s.id_string(c));
            }
            _ => out.push_str("entry: none\n"),
        }
        let side = &self.side[i as usize];
        if side.requests > 0 {
            let _ = writeln!(out, "subagents: {}", side.line());
        }
        let _ = writeln!(
            out,
            "to here: {} (from the root, {} entries)",
            self.path_usage(s, i).line(),
            s.depth(i)
        );
        out
    }

    pub fn entry_json(&self, s: &Session, i: u32) -> String {
        let own = self.own[i as usize].as_ref().map(|r| {
            serde_json::json!({
                "model": r.model,
                "source": r.source.name(),
                "costFrom": if r.recorded { "file" } else { "prices" },
                "usage": self.own_usage(i).to_json(),
            })
        });
        let c = self.counted_at[i as usize];
        let v = serde_json::json!({
            "id": s.id_string(i),
            "entry": own,
            "countedAt": (c != NIL).then(|| s.id_string(c)),
            "subagents": (self.side[i as usize].requests > 0).then(|| self.side[i as usize].to_json()),
            "toHere": self.path_usage(s, i).to_json(),
        });
        let mut out = v.to_string();
        out.push('\n');
        out
    }

    /// The session's `usage`: the whole session, the current branch, the dead ends,
    /// every branch, by model.
    /// The whole session's usage, models the price table lacks priced by the agent's
    /// own record where it has one ([`Usage::price_from_own_count`]).
    pub fn session_total(&self) -> Usage {
        let mut total = self.total();
        if let Some(cs) = &self.cost_state {
            total.price_from_own_count(cs);
        }
        total
    }

    pub fn session_text(&self, s: &Session) -> String {
        let mut out = String::new();
        let total = self.session_total();
        let _ = writeln!(out, "session: {}", total.line());
        let current = s.leaf().map(|l| self.path_usage(s, l)).unwrap_or_default();
        if let Some(l) = s.leaf() {
            let _ = writeln!(
                out,
                "current branch ({}): {}",
                s.id_string(l),
                current.line()
            );
        }
        let _ = writeln!(out, "dead ends: {}", self.dead_ends(s).line());
        for (l, u) in self.branches(s) {
            let mark = if Some(l) == s.leaf() {
                " (current)"
            } else {
                ""
            };
            let _ = writeln!(out, "branch {}{mark}: {}", s.id_string(l), u.line());
        }
        for (m, u) in self.by_model() {
            let _ = writeln!(out, "model {m}: {}", u.line());
        }
        let sources = self.by_source();
        if sources.len() > 1 {
            for (src, u) in sources {
                let _ = writeln!(out, "source {}: {}", src.name(), u.line());
            }
        }
        if let Some(cs) = &self.cost_state {
            let _ = writeln!(
                out,
                "claude code's own count (cost-state): cost {}, tokens {} (input {}, output {}, cache read {}, cache write {}){}",
                dollars(cs.cost),
                group(cs.tokens.total()),
                group(cs.tokens.input),
                group(cs.tokens.output),
                group(cs.tokens.cache_read),
                group(cs.tokens.cache_write),
                if cs.unknown_model_cost {
                    ", some model's cost unknown to it"
                } else {
                    ""
                }
            );
        }
        let _ = writeln!(out, "prices: {}", self.price_note());
        out
    }

    pub fn session_json(&self, s: &Session) -> String {
        let total = self.session_total();
        let current = s.leaf().map(|l| self.path_usage(s, l)).unwrap_or_default();
        let v = serde_json::json!({
            "session": total.to_json(),
            "currentBranch": {
                "leaf": s.leaf().map(|l| s.id_string(l)),
                "usage": current.to_json(),
            },
            "deadEnds": self.dead_ends(s).to_json(),
            "branches": self.branches(s).into_iter().map(|(l, u)| serde_json::json!({
                "leaf": s.id_string(l),
                "current": Some(l) == s.leaf(),
                "usage": u.to_json(),
            })).collect::<Vec<_>>(),
            "models": self.by_model().into_iter().map(|(m, u)| serde_json::json!({
                "model": m, "usage": u.to_json(),
            })).collect::<Vec<_>>(),
            "sources": self.by_source().into_iter().map(|(src, u)| serde_json::json!({
                "source": src.name(), "usage": u.to_json(),
            })).collect::<Vec<_>>(),
            "costState": self.cost_state.as_ref().map(|cs| serde_json::json!({
                "cost": round(cs.cost),
                "inputTokens": cs.tokens.input,
                "outputTokens": cs.tokens.output,
                "cacheReadTokens": cs.tokens.cache_read,
                "cacheCreationTokens": cs.tokens.cache_write,
                "models": cs.models.iter().map(|(m, c)| serde_json::json!({"model": m, "cost": round(*c)})).collect::<Vec<_>>(),
                "hasUnknownModelCost": cs.unknown_model_cost,
                "lines": cs.lines,
            })),
            "prices": self.price_note(),
        });
        let mut out = serde_json::to_string_pretty(&v).expect("JSON");
        out.push('\n');
        out
    }
}
