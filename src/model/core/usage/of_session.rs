//! The usage tables read from a session: [`Table::build`] and what a table says about
//! a session's paths, branches and entries. Here and not in `usage/mod.rs` so that the
//! tables' own file names no session: the agent trait (in `core::session`) names
//! [`Table`], and the session file must not be named back by the file it imports.

use super::{MODEL_BITS, OVERFLOW, Running, Sum, Table, Usage, dollars, group, round};
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
            running: Default::default(),
        };
        s.agent().fill_usage(s, prices, &mut t);
        // Subagent transcripts: a side file's first line hangs under a line of the
        // main file; its whole subtree is what that spawn cost.
        if t.side_files_are_subagents {
            for i in 0..n as u32 {
                if !s.entry(i).is_node() || !s.is_subagent(i) {
                    continue;
                }
                let Some(p) = s.parent(i) else { continue };
                if s.is_subagent(p) {
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
    /// Made once for every entry ([`Running`]): each `cost` file of a session of any
    /// depth costs the same, where summing each path anew made reading them all (a
    /// `find` or `grep -r` through the mount) quadratic in the depth.
    pub fn path_usage(&self, s: &Session, i: u32) -> Usage {
        let run = self.running.get_or_init(|| running_of(self, s));
        let sum = &run.at[i as usize];
        let unpriced_models = if sum.models & OVERFLOW == 0 {
            let mut m: Vec<String> = (0..MODEL_BITS)
                .filter(|b| sum.models & (1 << b) != 0)
                .map(|b| run.models[b].clone())
                .collect();
            m.sort();
            m
        } else {
            // More unknown models in the session than bits: the path's own, read
            // from the path (as many as it holds, never more).
            let mut u = Usage::default();
            for j in s.path_to(i) {
                if let Some(r) = &self.own[j as usize] {
                    u.add_record(r);
                }
                u.add(&self.side[j as usize]);
            }
            u.unpriced_models
        };
        Usage {
            tokens: sum.tokens,
            cost: sum.cost,
            requests: sum.requests,
            unpriced: sum.unpriced,
            unpriced_models,
            own_cost_models: Vec::new(),
        }
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
            while self.side_files_are_subagents && s.is_subagent(j) {
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
        self.branches_iter(s).collect()
    }

    /// [`Table::branches`], one at a time: a session of many branches is written out
    /// without holding all of them.
    pub fn branches_iter<'a>(&'a self, s: &'a Session) -> impl Iterator<Item = (u32, Usage)> + 'a {
        s.leaves()
            .into_iter()
            .map(move |l| (l, self.path_usage(s, l)))
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

    /// `cost.json`. Written as it is made: each branch is a small object made,
    /// written and dropped in turn, so that a session of many branches costs its text
    /// and not a tree of JSON values forty times its size.
    pub fn session_json(&self, s: &Session) -> String {
        use serde::Serialize;
        let total = self.session_total();
        let current = s.leaf().map(|l| self.path_usage(s, l)).unwrap_or_default();
        /// The branches, serialized one at a time.
        struct Branches<'a>(
            std::cell::RefCell<Option<Box<dyn Iterator<Item = serde_json::Value> + 'a>>>,
        );
        impl Serialize for Branches<'_> {
            fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
                let it = self.0.borrow_mut().take().into_iter().flatten();
                ser.collect_seq(it)
            }
        }
        #[derive(Serialize)]
        struct Doc<'a> {
            session: serde_json::Value,
            #[serde(rename = "currentBranch")]
            current_branch: serde_json::Value,
            #[serde(rename = "deadEnds")]
            dead_ends: serde_json::Value,
            branches: Branches<'a>,
            models: serde_json::Value,
            sources: serde_json::Value,
            #[serde(rename = "costState")]
            cost_state: serde_json::Value,
            prices: serde_json::Value,
        }
        let leaf = s.leaf();
        let branches = self.branches_iter(s).map(move |(l, u)| {
            serde_json::json!({
                "leaf": s.id_string(l),
                "current": Some(l) == leaf,
                "usage": u.to_json(),
            })
        });
        let v = Doc {
            session: total.to_json(),
            current_branch: serde_json::json!({
                "leaf": s.leaf().map(|l| s.id_string(l)),
                "usage": current.to_json(),
            }),
            dead_ends: self.dead_ends(s).to_json(),
            branches: Branches(std::cell::RefCell::new(Some(Box::new(branches)))),
            models: serde_json::json!(self.by_model().into_iter().map(|(m, u)| serde_json::json!({
                "model": m, "usage": u.to_json(),
            })).collect::<Vec<_>>()),
            sources: serde_json::json!(self.by_source().into_iter().map(|(src, u)| serde_json::json!({
                "source": src.name(), "usage": u.to_json(),
            })).collect::<Vec<_>>()),
            cost_state: serde_json::json!(self.cost_state.as_ref().map(|cs| serde_json::json!({
                "cost": round(cs.cost),
                "inputTokens": cs.tokens.input,
                "outputTokens": cs.tokens.output,
                "cacheReadTokens": cs.tokens.cache_read,
                "cacheCreationTokens": cs.tokens.cache_write,
                "models": cs.models.iter().map(|(m, c)| serde_json::json!({"model": m, "cost": round(*c)})).collect::<Vec<_>>(),
                "hasUnknownModelCost": cs.unknown_model_cost,
                "lines": cs.lines,
            }))),
            prices: serde_json::json!(self.price_note()),
        };
        let mut out = serde_json::to_string_pretty(&v).expect("JSON");
        out.push('\n');
        out
    }
}

/// The running totals of `t`, a table of `s`: made in one pass over the tree, in the
/// order a path sums (the root first), so that each is what summing its path gives.
fn running_of(t: &Table, s: &Session) -> Running {
    let n = t.own.len();
    let mut models: Vec<String> = Vec::new();
    let bit = |m: &str, models: &mut Vec<String>| -> u64 {
        match models.iter().position(|x| x == m) {
            Some(b) => 1 << b,
            None if models.len() < MODEL_BITS => {
                models.push(m.to_string());
                1 << (models.len() - 1)
            }
            None => OVERFLOW,
        }
    };
    let mut at = vec![Sum::default(); n];
    let mut done = vec![false; n];
    let mut stack = Vec::new();
    for i in 0..n as u32 {
        // Up to the nearest entry done (or past the root), then down again.
        let mut cur = i;
        while cur != NIL && !done[cur as usize] {
            stack.push(cur);
            cur = s.entry(cur).parent;
        }
        let mut sum = if cur == NIL {
            Sum::default()
        } else {
            at[cur as usize]
        };
        while let Some(j) = stack.pop() {
            if let Some(r) = &t.own[j as usize] {
                sum.tokens.add(&r.tokens);
                sum.requests += 1;
                match r.cost {
                    Some(c) => sum.cost += c,
                    None => {
                        sum.unpriced += 1;
                        sum.models |= bit(&r.model, &mut models);
                    }
                }
            }
            let side = &t.side[j as usize];
            if side.requests > 0 {
                sum.tokens.add(&side.tokens);
                sum.cost += side.cost;
                sum.requests += side.requests;
                sum.unpriced += side.unpriced;
                for m in &side.unpriced_models {
                    sum.models |= bit(m, &mut models);
                }
            }
            at[j as usize] = sum;
            done[j as usize] = true;
        }
    }
    Running { at, models }
}
