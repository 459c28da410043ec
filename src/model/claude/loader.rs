//! Claude Code's in-memory view of a session file: which nodes it keeps, how it links
//! them after a compaction, which one is the current leaf, and the chain it loads.
//!
//! A transcription of the loader of Claude Code 2.1.197 (minified names, so that the
//! code can be found again: `rfe` reads the file, `Dcc` re-links and drops around the
//! last compaction, `G` picks the leaf, `N7e` breaks ties by timestamp, `FAe` walks the
//! chain, `Xsm` bridges a missing parent, `Jsm` pulls the other pieces of a parallel
//! tool call back in, `Ksm` adds the leaf's trailing non-message nodes, `Zwo`
//! deserialises the chain before a resume). See CLAUDE-FORMAT.md §5, §6, §8.1, §8.2.
//!
//! Everything here works on the shared index (entry indices, uuids as [`IdKey`]s,
//! timestamps) and the per-node facts of [`super::State`]; only [`chain_messages`]
//! reads lines from the file.
//!
//! The context of an entry X is what Claude Code sends when a new prompt follows X:
//! `claude --resume --resume-session-at X`. That cuts the loaded chain after X, so X
//! must be on it; when it is on another branch, a rewind (an explicit `last-prompt`
//! naming X) makes it current first; when a later compaction removed it from Claude
//! Code's view, the file as it was before that compaction is used ([`plan_for`]). The
//! current chain end gets the plain `--resume` context instead, with the synthetic
//! lines Claude Code adds on load.

use super::nodes::{Class, LastPrompt, NO_MSG, Node, State, nflags};
use crate::model::core::id::IdBuild;
use crate::model::core::id::IdKey;
use crate::model::core::session::{NO_TIME, Session};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet, VecDeque};

type Map<K, V> = HashMap<K, V, IdBuild>;
type Set<K> = HashSet<K, IdBuild>;
use std::io;

/// `Ysm`: how far back (ms) a missing parent is looked for by timestamp.
const MISSING_PARENT_WINDOW_MS: i64 = 5000;

/// Claude Code's node map after loading (a file, or a prefix of it).
#[derive(Debug)]
pub struct Loaded {
    /// Nodes in map order (first appearance in the file).
    pub order: Vec<u32>,
    /// Whether entry `i` is in the map.
    member: Vec<bool>,
    /// Each member's `parentUuid` after the compaction re-link.
    parent: Vec<IdKey>,
    /// The current leaf (a user or assistant node), if any.
    pub leaf: Option<u32>,
}

/// Which prefix of the file, and which extra `last-prompt`, a load uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// Lines before this one (1-based) are read; `u32::MAX` for the whole file.
    pub upto_line: u32,
    /// An explicit `last-prompt` naming this node is appended (a rewind to it).
    pub rewind_to: Option<u32>,
    /// Which file: 0 the session file, `k` its `k`-th subagent transcript.
    pub file: u16,
}

impl Variant {
    pub const WHOLE: Variant = Variant {
        upto_line: u32::MAX,
        rewind_to: None,
        file: 0,
    };
}

struct Cx<'a> {
    s: &'a Session,
    st: &'a State,
}

impl Cx<'_> {
    fn node(&self, i: u32) -> &Node {
        &self.st.nodes[i as usize]
    }
    fn ts(&self, i: u32) -> i64 {
        self.s.entry(i).ts
    }
    fn uuid(&self, i: u32) -> IdKey {
        self.s.entry(i).id
    }
}

impl Loaded {
    fn has(&self, i: u32) -> bool {
        self.member.get(i as usize).copied().unwrap_or(false)
    }

    /// The member with this uuid.
    fn get(&self, s: &Session, k: IdKey) -> Option<u32> {
        if k.is_none() {
            return None;
        }
        s.find_key(k).filter(|&i| self.has(i))
    }

    /// The parent uuid of member `i` after the re-link.
    pub fn parent_key(&self, i: u32) -> IdKey {
        self.parent[i as usize]
    }
}

/// Loads the file (or a prefix of it) as Claude Code's `rfe` does, with `Dcc` and the
/// leaf rule applied.
pub fn load(s: &Session, st: &State, v: Variant) -> Loaded {
    let cx = Cx { s, st };
    let n = s.entries().len().min(st.nodes.len());
    let mut l = Loaded {
        order: Vec::new(),
        member: vec![false; n],
        parent: vec![IdKey::NONE; n],
        leaf: None,
    };
    // Replay the file in order: nodes and `last-prompt` lines.
    let mut o: Option<IdKey> = None; // O
    let mut lp: Option<IdKey> = None; // L
    let mut explicit = false; // $
    let mut cleared = false; // F
    let mut prompts = st.prompts.iter().peekable();
    let mut seen: HashSet<IdKey, crate::model::core::id::IdBuild> = HashSet::default();
    let apply_prompt =
        |p: &LastPrompt, lp: &mut Option<IdKey>, explicit: &mut bool, cleared: &mut bool| {
            if let Some(k) = p.leaf {
                *explicit = p.explicit || (*explicit && Some(k) == *lp);
                *lp = Some(k);
                *cleared = false;
            } else if p.null_leaf && p.explicit {
                *cleared = true;
                *lp = None;
                *explicit = false;
            }
        };
    for i in 0..n as u32 {
        if st.file_of(i) != v.file {
            continue;
        }
        let e = s.entry(i);
        if e.line >= v.upto_line {
            break;
        }
        while let Some(p) = prompts.peek() {
            if v.file == 0 && p.line < e.line {
                apply_prompt(p, &mut lp, &mut explicit, &mut cleared);
                prompts.next();
            } else {
                break;
            }
        }
        let nd = cx.node(i);
        if !nd.is_loaded() {
            continue;
        }
        // The map holds the last line with this uuid, at the first one's position.
        let holder = if e.is_node() {
            i
        } else {
            match s.find_key(e.id) {
                Some(w) if s.entry(w).line < v.upto_line => w,
                _ => i,
            }
        };
        if seen.insert(e.id) {
            l.order.push(holder);
        }
        l.member[holder as usize] = true;
        l.parent[holder as usize] = cx.node(holder).parent;
        if !nd.has(nflags::SIDECHAIN) {
            o = Some(e.id);
            explicit = false;
            cleared = false;
        }
        if nd.has(nflags::BOUNDARY) {
            lp = None;
            explicit = false;
        }
    }
    for p in prompts {
        if v.file == 0 && p.line < v.upto_line {
            apply_prompt(p, &mut lp, &mut explicit, &mut cleared);
        }
    }
    if let Some(x) = v.rewind_to {
        explicit = true;
        lp = Some(s.entry(x).id);
        cleared = false;
    }
    // A shadowed entry listed in `order` may have been replaced by its holder.
    l.order.dedup();
    let k = dcc(&cx, &mut l);
    // A subagent's transcript, in its session or mounted on its own (every node a
    // sidechain one), has the leaf of its own rule.
    let subagent = v.file != 0 || (o.is_none() && !l.order.is_empty());
    l.leaf = if subagent && v.rewind_to.is_none() {
        subagent_leaf(&cx, &l)
    } else if subagent {
        v.rewind_to
    } else {
        pick_leaf(&cx, &l, k, o, lp, explicit, cleared)
    };
    l
}

/// A subagent transcript's leaf (`vOe`): the newest node nobody hangs under that is not
/// a compaction boundary.
fn subagent_leaf(cx: &Cx<'_>, l: &Loaded) -> Option<u32> {
    let parents: Set<IdKey> = l.order.iter().map(|&i| l.parent[i as usize]).collect();
    let mut best: Option<(i64, u32)> = None;
    for &i in &l.order {
        if parents.contains(&cx.uuid(i)) || cx.node(i).has(nflags::BOUNDARY) {
            continue;
        }
        let t = cx.ts(i);
        if t != NO_TIME && best.is_none_or(|(bt, _)| t > bt) {
            best = Some((t, i));
        }
    }
    best.map(|b| b.1)
}

/// `Dcc`: re-links the preserved segment of the last compaction and drops what came
/// before it. Returns the last preserved node (`K`).
fn dcc(cx: &Cx<'_>, l: &mut Loaded) -> Option<u32> {
    let mut t: Option<u32> = None;
    let mut n_pos = -1i64;
    let mut r_pos = -1i64;
    let mut pos: Map<u32, i64> = Map::with_capacity_and_hasher(l.order.len(), IdBuild::default());
    for (p, &i) in l.order.iter().enumerate() {
        pos.insert(i, p as i64);
        if cx.node(i).has(nflags::BOUNDARY) {
            r_pos = p as i64;
            if cx.st.preserved.contains_key(&i) {
                t = Some(i);
                n_pos = p as i64;
            }
        }
    }
    let t = t?;
    let last_is_t = n_pos == r_pos;
    let list: Option<(IdKey, Vec<IdKey>)> = if last_is_t {
        let p = &cx.st.preserved[&t];
        match &p.list {
            Some((a, u)) => Some((*a, u.clone())),
            None => {
                let (head, anchor, tail) = p.segment?;
                // Walk from the tail up to the head.
                let mut seen = Set::default();
                let mut out = Vec::new();
                let mut cur = l.get(cx.s, tail);
                let mut found = None;
                while let Some(c) = cur {
                    if !seen.insert(c) {
                        break;
                    }
                    out.push(cx.uuid(c));
                    if cx.uuid(c) == head {
                        out.reverse();
                        found = Some((anchor, out));
                        break;
                    }
                    cur = l.get(cx.s, l.parent[c as usize]);
                }
                Some(found?)
            }
        }
    } else {
        None
    };
    let list = list.filter(|(_, u)| !u.is_empty());
    if let Some((_, u)) = &list
        && u.iter().any(|&k| l.get(cx.s, k).is_none())
    {
        return None;
    }
    let c: Vec<u32> = list
        .as_ref()
        .map(|(_, u)| u.iter().filter_map(|&k| l.get(cx.s, k)).collect())
        .unwrap_or_default();
    let cset: Set<u32> = c.iter().copied().collect();
    if let Some((anchor, _)) = &list {
        let mut f = *anchor;
        for &m in &c {
            l.parent[m as usize] = f;
            f = cx.uuid(m);
        }
        let last = cx.uuid(*c.last().expect("non-empty"));
        for &m in &l.order {
            if l.parent[m as usize] == *anchor && Some(&m) != c.first() {
                l.parent[m as usize] = last;
            }
        }
    }
    let dropped: Vec<u32> = l
        .order
        .iter()
        .copied()
        .filter(|i| pos.get(i).is_some_and(|&p| p < r_pos) && !cset.contains(i))
        .collect();
    for &d in &dropped {
        l.member[d as usize] = false;
    }
    l.order.retain(|i| l.member[*i as usize]);
    if list.is_some() && !dropped.is_empty() {
        let gone: Set<IdKey> = dropped.iter().map(|&d| cx.uuid(d)).collect();
        let last = cx.uuid(*c.last().expect("non-empty"));
        for &m in &l.order {
            if cx.node(m).is_message() && gone.contains(&l.parent[m as usize]) {
                l.parent[m as usize] = last;
            }
        }
    }
    c.last().copied()
}

/// Walks up from `i` to the first user or assistant node (cycle-safe).
fn up_to_message(cx: &Cx<'_>, l: &Loaded, i: u32) -> Option<u32> {
    let mut seen = Set::default();
    let mut cur = Some(i);
    while let Some(c) = cur {
        if !seen.insert(c) {
            return None;
        }
        if cx.node(c).is_message() {
            return Some(c);
        }
        cur = l.get(cx.s, l.parent[c as usize]);
    }
    None
}

/// `G` and the `N7e` that follows it: the current leaf.
fn pick_leaf(
    cx: &Cx<'_>,
    l: &Loaded,
    k: Option<u32>,
    o: Option<IdKey>,
    lp: Option<IdKey>,
    explicit: bool,
    cleared: bool,
) -> Option<u32> {
    if cleared {
        return None;
    }
    let mut v: Vec<u32> = Vec::new();
    let lp_node = lp.and_then(|x| l.get(cx.s, x));
    let o_node = o.and_then(|x| l.get(cx.s, x));
    let y = explicit && lp_node.is_some_and(|x| !cx.node(x).has(nflags::SIDECHAIN));
    let mut decided = false;
    if k.is_none() || y {
        let mut ne = lp_node;
        if let (Some(n0), false, Some(on)) = (ne, explicit, o_node)
            && on != n0
        {
            // O descends from L: start from O.
            let mut seen = Set::default();
            let mut cur = Some(on);
            while let Some(c) = cur {
                if !seen.insert(c) {
                    break;
                }
                if c == n0 {
                    ne = Some(on);
                    break;
                }
                cur = l.get(cx.s, l.parent[c as usize]);
            }
        }
        if k.is_none() && ne.is_none() {
            ne = o_node;
        }
        if let Some(n0) = ne
            && let Some(m) = up_to_message(cx, l, n0)
        {
            v.push(m);
            decided = true;
        }
    }
    if !decided {
        // Terminal nodes walked up to a message that no message hangs under.
        let mut parents: Set<IdKey> = Set::default();
        let mut msg_parents: Set<IdKey> = Set::default();
        for &i in &l.order {
            let p = l.parent[i as usize];
            if !p.is_none() {
                parents.insert(p);
                if cx.node(i).is_message() {
                    msg_parents.insert(p);
                }
            }
        }
        let mut set: Vec<u32> = Vec::new();
        for &i in &l.order {
            if parents.contains(&cx.uuid(i)) {
                continue;
            }
            if let Some(m) = up_to_message(cx, l, i)
                && !msg_parents.contains(&cx.uuid(m))
                && !set.contains(&m)
            {
                set.push(m);
            }
        }
        if set.len() > 1 {
            let ne = match lp {
                Some(x) if set.iter().any(|&m| cx.uuid(m) == x) => Some(x),
                _ => o,
            };
            if let Some(n0) = ne.and_then(|x| l.get(cx.s, x))
                && let Some(m) = up_to_message(cx, l, n0)
            {
                set = vec![m];
            }
        }
        v = set;
    }
    // N7e: the candidate with the latest timestamp (the first of equals, in map order).
    let latest = |pred: &dyn Fn(u32) -> bool| -> Option<u32> {
        let mut best: Option<(i64, u32)> = None;
        for &i in &l.order {
            if !pred(i) {
                continue;
            }
            let t = cx.ts(i);
            if t == NO_TIME {
                continue;
            }
            if best.is_none_or(|(bt, _)| t > bt) {
                best = Some((t, i));
            }
        }
        best.map(|b| b.1)
    };
    let vs: Set<u32> = v.iter().copied().collect();
    latest(&|i| vs.contains(&i) && !cx.node(i).has(nflags::SIDECHAIN) && cx.node(i).is_message())
        .or_else(|| {
            if v.is_empty() {
                latest(&|i| !cx.node(i).has(nflags::SIDECHAIN))
            } else {
                None
            }
        })
}

/// `FAe`: the chain from the root to `leaf`, with `Jsm`'s pieces and `Ksm`'s trailing
/// nodes. Entry indices, in the order Claude Code holds them.
pub fn chain(s: &Session, st: &State, l: &Loaded, leaf: u32) -> Vec<u32> {
    let cx = Cx { s, st };
    let mut r: Vec<u32> = Vec::new();
    let mut visited: Set<u32> = Set::default();
    let mut cur = Some(leaf);
    while let Some(c) = cur {
        if !visited.insert(c) {
            break;
        }
        r.push(c);
        let p = l.parent[c as usize];
        if p.is_none() {
            break;
        }
        let mut next = l.get(s, p);
        if next.is_none_or(|n| visited.contains(&n)) {
            next = missing_parent(&cx, l, c, &visited);
        }
        cur = next;
    }
    r.reverse();
    let mut list = jsm(&cx, l, r, &mut visited);
    ksm(&cx, l, leaf, &mut list, &mut visited);
    list
}

/// `Xsm`: the newest node (same sidechain-ness, not yet on the chain) written at most
/// five seconds before `c`.
fn missing_parent(cx: &Cx<'_>, l: &Loaded, c: u32, visited: &Set<u32>) -> Option<u32> {
    let t = cx.ts(c);
    if t == NO_TIME {
        return None;
    }
    let side = cx.node(c).has(nflags::SIDECHAIN);
    let mut best: Option<(i64, u32)> = None;
    for &i in &l.order {
        if visited.contains(&i) || cx.node(i).has(nflags::SIDECHAIN) != side {
            continue;
        }
        let a = cx.ts(i);
        if a == NO_TIME {
            continue;
        }
        let d = t - a;
        if (0..=MISSING_PARENT_WINDOW_MS).contains(&d) && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, i));
        }
    }
    best.map(|b| b.1)
}

/// `Jsm`: for each reply on the chain, its other lines and the tool results hanging
/// under any of them, inserted after the chain's last line of that reply.
fn jsm(cx: &Cx<'_>, l: &Loaded, chain: Vec<u32>, visited: &mut Set<u32>) -> Vec<u32> {
    let assistants: Vec<u32> = chain
        .iter()
        .copied()
        .filter(|&i| cx.node(i).class == Class::Assistant)
        .collect();
    if assistants.is_empty() {
        return chain;
    }
    let mut last_on_chain: Map<u32, u32> = Map::default();
    for &a in &assistants {
        let m = cx.node(a).msg_id;
        if m != NO_MSG {
            last_on_chain.insert(m, a);
        }
    }
    let mut by_id: Map<u32, Vec<u32>> = Map::default();
    let mut results: Map<IdKey, Vec<u32>> = Map::default();
    for &i in &l.order {
        let nd = cx.node(i);
        if nd.class == Class::Assistant && nd.msg_id != NO_MSG {
            by_id.entry(nd.msg_id).or_default().push(i);
        } else if nd.class == Class::User
            && !l.parent[i as usize].is_none()
            && nd.has(nflags::CONTENT_ARRAY)
            && nd.has(nflags::TOOL_RESULT_ANY)
        {
            results.entry(l.parent[i as usize]).or_default().push(i);
        }
    }
    let mut done: Set<u32> = Set::default();
    let mut insert_after: Map<u32, Vec<u32>> = Map::default();
    let mut count = 0;
    for &d in &assistants {
        let m = cx.node(d).msg_id;
        if m == NO_MSG || !done.insert(m) {
            continue;
        }
        let group = by_id.get(&m).cloned().unwrap_or_else(|| vec![d]);
        let mut others: Vec<u32> = group
            .iter()
            .copied()
            .filter(|x| !visited.contains(x))
            .collect();
        let mut res: Vec<u32> = Vec::new();
        for &b in &group {
            if let Some(rs) = results.get(&cx.uuid(b)) {
                res.extend(rs.iter().copied().filter(|x| !visited.contains(x)));
            }
        }
        if others.is_empty() && res.is_empty() {
            continue;
        }
        others.sort_by_key(|&x| cx.ts(x));
        res.sort_by_key(|&x| cx.ts(x));
        let h = last_on_chain[&m];
        let mut y = others;
        y.extend(res);
        for &x in &y {
            visited.insert(x);
        }
        count += y.len();
        insert_after.insert(h, y);
    }
    if count == 0 {
        return chain;
    }
    let mut out = Vec::with_capacity(chain.len() + count);
    for d in chain {
        out.push(d);
        if let Some(y) = insert_after.get(&d) {
            out.extend_from_slice(y);
        }
    }
    out
}

/// `Ksm`: the leaf's descendants reached through non-message nodes, breadth first,
/// sorted by timestamp.
fn ksm(cx: &Cx<'_>, l: &Loaded, leaf: u32, list: &mut Vec<u32>, visited: &mut Set<u32>) {
    let mut kids: Map<IdKey, Vec<u32>> = Map::default();
    for &i in &l.order {
        let p = l.parent[i as usize];
        if !p.is_none() && !cx.node(i).is_message() {
            kids.entry(p).or_default().push(i);
        }
    }
    let mut out: Vec<u32> = Vec::new();
    let mut q: VecDeque<IdKey> = VecDeque::from([cx.uuid(leaf)]);
    while let Some(u) = q.pop_front() {
        for &a in kids.get(&u).map(Vec::as_slice).unwrap_or(&[]) {
            if !visited.insert(a) {
                continue;
            }
            out.push(a);
            q.push_back(cx.uuid(a));
        }
    }
    if out.len() > 1 {
        out.sort_by_key(|&x| cx.ts(x));
    }
    list.extend(out);
}

/// The chain end of the whole file: where a new prompt hangs (the leaf, or its last
/// trailing non-message node). `None` for an empty or cleared conversation.
pub fn chain_end(s: &Session, st: &State) -> Option<u32> {
    let l = load(s, st, Variant::WHOLE);
    let leaf = l.leaf?;
    chain(s, st, &l, leaf).last().copied()
}

/// How the context of entry `x` is reached, as `context.sh` reaches it.
pub fn plan_for(s: &Session, st: &State, x: u32) -> Variant {
    // A later compaction removed x from Claude Code's view unless the last boundary of
    // the file preserves it: use the file as it was before that compaction.
    let xline = s.entry(x).line;
    let xid = s.entry(x).id;
    let boundaries: Vec<u32> = (0..s.entries().len().min(st.nodes.len()) as u32)
        .filter(|&i| st.nodes[i as usize].has(nflags::BOUNDARY) && st.file_of(i) == 0)
        .collect();
    let preserved_by_last = boundaries
        .last()
        .and_then(|b| st.preserved.get(b))
        .is_some_and(|p| {
            p.all.contains(&xid) || p.list.as_ref().is_some_and(|(_, u)| u.contains(&xid))
        });
    let later = boundaries
        .iter()
        .map(|&b| s.entry(b).line)
        .filter(|&bl| bl > xline)
        .min();
    match later {
        Some(cut) if !preserved_by_last => Variant {
            upto_line: cut,
            rewind_to: None,
            file: 0,
        },
        _ => Variant::WHOLE,
    }
}

/// The messages Claude Code holds before it sends the context of entry `x` (or of the
/// current chain end with `x = None`): the loaded chain, deserialised (`Zwo`), cut
/// after `x`. `None` when Claude Code would not find `x`.
pub fn chain_messages(
    s: &Session,
    st: &State,
    x: Option<u32>,
    rules: &super::rules::Rules,
) -> io::Result<Option<Vec<Value>>> {
    let (variant, tail) = match x {
        None => (Variant::WHOLE, true),
        Some(x) if st.file_of(x) != 0 => (
            Variant {
                file: st.file_of(x),
                ..Variant::WHOLE
            },
            false,
        ),
        Some(x) => (plan_for(s, st, x), false),
    };
    let mut tries = vec![variant];
    if let Some(x) = x {
        tries.push(Variant {
            rewind_to: Some(x),
            ..variant
        });
    }
    for v in tries {
        let l = load(s, st, v);
        let Some(leaf) = l.leaf else {
            if x.is_none() {
                return Ok(Some(Vec::new()));
            }
            continue;
        };
        let ids = chain(s, st, &l, leaf);
        let mut msgs = Vec::with_capacity(ids.len());
        for &i in &ids {
            match s.entry_value(i) {
                Ok(mut val) => {
                    relink_value(&mut val, s, &l, i);
                    msgs.push(val);
                }
                // Valid JSON nested too deep to build: it contributes nothing.
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {}
                Err(e) => return Err(e),
            }
        }
        let mut msgs = deserialize(msgs, tail, rules);
        if let Some(x) = x {
            let uuid = s.id_string(x);
            match msgs
                .iter()
                .position(|m| m.get("uuid").and_then(Value::as_str) == Some(&uuid))
            {
                Some(p) => msgs.truncate(p + 1),
                None => continue,
            }
        }
        return Ok(Some(msgs));
    }
    Ok(None)
}

/// Carries the loader's re-link into the parsed line (preserved assistants have their
/// usage zeroed; parents follow the re-link).
fn relink_value(v: &mut Value, s: &Session, l: &Loaded, i: u32) {
    if let Some(obj) = v.as_object_mut() {
        let p = l.parent_key(i);
        let pv = match s.ids().resolve(p) {
            Some(p) => Value::String(p.into_owned()),
            None => Value::Null,
        };
        obj.insert("parentUuid".into(), pv);
    }
}

// ----- Zwo: deserialising the chain ----------------------------------------------------

fn ty(v: &Value) -> &str {
    v.get("type").and_then(Value::as_str).unwrap_or("")
}

fn content(v: &Value) -> Option<&Value> {
    v.get("message").and_then(|m| m.get("content"))
}

fn truthy(v: Option<&Value>) -> bool {
    crate::model::core::js::js_truthy(v)
}

/// Attachment types Claude Code drops on resume (`tof`).
const DROPPED_ATTACHMENTS: &[&str] = &[
    "compaction_reminder",
    "companion_intro",
    "echo_activities",
    "pen_mode_enter",
    "pen_mode_exit",
    "verify_plan_reminder",
];

/// Tools whose result ends a turn (`Frl`).
const TURN_ENDING_TOOLS: &[&str] = &["Brief", "SendUserFile"];

/// `Zwo`: what Claude Code does to the chain before resuming it. `tail`: also the
/// interruption handling (where the release has it) and the synthetic "No response
/// requested." (a plain resume; `--resume-session-at` cuts them off again).
pub fn deserialize(chain: Vec<Value>, tail: bool, rules: &super::rules::Rules) -> Vec<Value> {
    // U8t: messages retracted by a refusal fallback.
    let retracted: Set<String> = chain
        .iter()
        .filter(|m| {
            ty(m) == "system"
                && m.get("subtype").and_then(Value::as_str) == Some("model_refusal_fallback")
        })
        .filter_map(|m| m.get("retractedMessageUuids").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .map(|u| u.chars().take(24).collect())
        .collect();
    let chain: Vec<Value> = if retracted.is_empty() {
        chain
    } else {
        chain
            .into_iter()
            .filter(|m| {
                ty(m) == "system" || {
                    let u: String = m
                        .get("uuid")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .chars()
                        .take(24)
                        .collect();
                    !retracted.contains(&u)
                }
            })
            .collect()
    };
    let mut msgs: Vec<Value> = Vec::with_capacity(chain.len());
    for mut m in chain {
        // nof: some attachment types are dropped, `new_file` becomes `file`.
        if ty(&m) == "attachment" {
            let at = m
                .get("attachment")
                .and_then(|a| a.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let at = at.as_str();
            if DROPPED_ATTACHMENTS.contains(&at) {
                continue;
            }
            if at == "new_file"
                && let Some(a) = m.get_mut("attachment").and_then(Value::as_object_mut)
            {
                a.insert("type".into(), json!("file"));
            }
            if at == "new_directory"
                && let Some(a) = m.get_mut("attachment").and_then(Value::as_object_mut)
            {
                a.insert("type".into(), json!("directory"));
            }
        }
        // rof: text blocks whose text is not a string are dropped.
        if matches!(ty(&m), "user" | "assistant")
            && let Some(Value::Array(blocks)) =
                m.get_mut("message").and_then(|x| x.get_mut("content"))
        {
            let before = blocks.len();
            blocks.retain(|b| {
                b.get("type").and_then(Value::as_str) != Some("text")
                    || b.get("text").is_some_and(Value::is_string)
            });
            if blocks.len() != before && blocks.is_empty() {
                continue;
            }
        }
        msgs.push(m);
    }
    let msgs = drop_unanswered_tool_uses(msgs);
    let msgs = drop_orphan_thinking(msgs);
    let mut msgs = drop_whitespace_assistants(msgs);
    if !tail {
        return msgs;
    }
    if rules.continue_after_interruption && interrupted_turn(&msgs) {
        msgs.push(user_message(
            Value::String("Continue from where you left off.".into()),
            true,
        ));
    }
    if let Some(h) = msgs
        .iter()
        .rposition(|m| !matches!(ty(m), "system" | "progress"))
        && ty(&msgs[h]) == "user"
    {
        msgs.insert(h + 1, synthetic_assistant("No response requested."));
    }
    msgs
}

/// A user message as Claude Code's `Dn` makes one.
pub fn user_message(content: Value, meta: bool) -> Value {
    let content = match &content {
        Value::String(s) if s.is_empty() => Value::String("(no content)".into()),
        Value::Null => Value::String("(no content)".into()),
        _ => content,
    };
    let mut v = json!({"type": "user", "message": {"role": "user", "content": content}});
    if meta {
        v["isMeta"] = json!(true);
    }
    v["uuid"] = json!(format!(
        "synthetic-{:08x}",
        crate::model::core::id::random_u32()
    ));
    v
}

/// The synthetic assistant message of `_E`.
pub fn synthetic_assistant(text: &str) -> Value {
    json!({
        "type": "assistant",
        "message": {
            "id": format!("synthetic-{:08x}", crate::model::core::id::random_u32()),
            "model": "<synthetic>",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
        },
        "uuid": format!("synthetic-{:08x}", crate::model::core::id::random_u32()),
    })
}

fn blocks(m: &Value) -> &[Value] {
    match content(m) {
        Some(Value::Array(a)) => a,
        _ => &[],
    }
}

fn block_type(b: &Value) -> &str {
    b.get("type").and_then(Value::as_str).unwrap_or("")
}

/// `xyt`: assistant lines all of whose tool calls have no result anywhere are dropped.
fn drop_unanswered_tool_uses(msgs: Vec<Value>) -> Vec<Value> {
    let mut uses: Vec<String> = Vec::new();
    let mut results: Set<String> = Set::default();
    for m in &msgs {
        if !matches!(ty(m), "user" | "assistant") {
            continue;
        }
        for b in blocks(m) {
            match block_type(b) {
                "tool_use" => {
                    if let Some(id) = b.get("id").and_then(Value::as_str) {
                        uses.push(id.to_string());
                    }
                }
                "tool_result" => {
                    if let Some(id) = b.get("tool_use_id").and_then(Value::as_str) {
                        results.insert(id.to_string());
                    }
                }
                _ => {}
            }
        }
    }
    let unanswered: Set<&String> = uses.iter().filter(|u| !results.contains(*u)).collect();
    if unanswered.is_empty() {
        return msgs;
    }
    msgs.into_iter()
        .filter(|m| {
            if ty(m) != "assistant" || !matches!(content(m), Some(Value::Array(_))) {
                return true;
            }
            let ids: Vec<&str> = blocks(m)
                .iter()
                .filter(|b| block_type(b) == "tool_use")
                .map(|b| b.get("id").and_then(Value::as_str).unwrap_or(""))
                .collect();
            ids.is_empty() || !ids.iter().all(|id| unanswered.contains(&id.to_string()))
        })
        .collect()
}

fn is_thinking(b: &Value) -> bool {
    matches!(block_type(b), "thinking" | "redacted_thinking")
}

fn msg_id(m: &Value) -> Option<&str> {
    m.get("message")
        .and_then(|x| x.get("id"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// `e6e`: thinking-only assistant messages whose reply has nothing else are dropped.
pub fn drop_orphan_thinking(msgs: Vec<Value>) -> Vec<Value> {
    let mut with_content: Set<String> = Set::default();
    for m in &msgs {
        if ty(m) != "assistant" {
            continue;
        }
        if let Some(Value::Array(bs)) = content(m)
            && bs.iter().any(|b| !is_thinking(b))
            && let Some(id) = msg_id(m)
        {
            with_content.insert(id.to_string());
        }
    }
    msgs.into_iter()
        .filter(|m| {
            if ty(m) != "assistant" {
                return true;
            }
            let Some(Value::Array(bs)) = content(m) else {
                return true;
            };
            if bs.is_empty() || !bs.iter().all(is_thinking) {
                return true;
            }
            msg_id(m).is_some_and(|id| with_content.contains(id))
        })
        .collect()
}

/// `Dfc`: only whitespace (or "(no content)") text blocks.
fn whitespace_only(bs: &[Value]) -> bool {
    if bs.is_empty() {
        return false;
    }
    bs.iter().all(|b| {
        block_type(b) == "text"
            && match b.get("text").and_then(Value::as_str) {
                Some(t) => {
                    let t = t.trim();
                    t.is_empty() || t == "(no content)"
                }
                None => true,
            }
    })
}

/// `Z8e`: when some assistant message is whitespace only, such messages are dropped
/// (unless their reply has real content) and the user messages they separated merged.
pub fn drop_whitespace_assistants(msgs: Vec<Value>) -> Vec<Value> {
    let any = msgs.iter().any(|m| {
        ty(m) == "assistant"
            && matches!(content(m), Some(Value::Array(bs)) if !bs.is_empty() && whitespace_only(bs))
    });
    if !any {
        return msgs;
    }
    let mut real: Set<String> = Set::default();
    for m in &msgs {
        if ty(m) != "assistant" {
            continue;
        }
        let Some(id) = msg_id(m) else { continue };
        if let Some(Value::Array(bs)) = content(m)
            && bs.iter().any(|b| {
                if is_thinking(b) {
                    return false;
                }
                if block_type(b) != "text" {
                    return true;
                }
                let t = b.get("text").and_then(Value::as_str).unwrap_or("").trim();
                !t.is_empty() && t != "(no content)"
            })
        {
            real.insert(id.to_string());
        }
    }
    let kept: Vec<Value> = msgs
        .into_iter()
        .filter(|m| {
            if ty(m) != "assistant" {
                return true;
            }
            if msg_id(m).is_some_and(|id| real.contains(id)) {
                return true;
            }
            match content(m) {
                Some(Value::Array(bs)) if !bs.is_empty() => !whitespace_only(bs),
                _ => true,
            }
        })
        .collect();
    let mut out: Vec<Value> = Vec::with_capacity(kept.len());
    for m in kept {
        if ty(&m) == "user" && out.last().is_some_and(|l| ty(l) == "user") {
            let last = out.pop().expect("checked");
            out.push(super::messages::merge_user(&last, &m));
        } else {
            out.push(m);
        }
    }
    out
}

/// `QMe`: a tool result (its first block, or a `toolUseResult`).
fn is_tool_result_message(m: &Value) -> bool {
    ty(m) == "user"
        && (matches!(content(m), Some(Value::Array(bs)) if bs.first().is_some_and(|b| block_type(b) == "tool_result"))
            || truthy(m.get("toolUseResult")))
}

/// `Url`: the user interrupted (the text is one of the interruption markers).
fn is_interruption_marker(m: &Value) -> bool {
    let t = match content(m) {
        Some(Value::String(s)) => Some(s.as_str()),
        Some(Value::Array(bs)) if bs.len() == 1 && block_type(&bs[0]) == "text" => {
            bs[0].get("text").and_then(Value::as_str)
        }
        _ => None,
    };
    matches!(
        t,
        Some("[Request interrupted by user]") | Some("[Request interrupted by user for tool use]")
    )
}

fn is_api_error(m: &Value) -> bool {
    ty(m) == "assistant" && m.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true)
}

fn stop_reason(m: &Value) -> Option<&str> {
    m.get("message")
        .and_then(|x| x.get("stop_reason"))
        .and_then(Value::as_str)
}

/// `Frl`: the result of a tool that ends the turn.
fn ends_turn(m: &Value, msgs: &[Value], at: usize) -> bool {
    let Some(Value::Array(bs)) = content(m) else {
        return false;
    };
    let Some(first) = bs.first().filter(|b| block_type(b) == "tool_result") else {
        return false;
    };
    let id = first.get("tool_use_id").and_then(Value::as_str);
    for a in msgs[..at].iter().rev() {
        if ty(a) != "assistant" {
            continue;
        }
        for b in blocks(a) {
            if block_type(b) == "tool_use" && b.get("id").and_then(Value::as_str) == id {
                let name = b.get("name").and_then(Value::as_str).unwrap_or("");
                return TURN_ENDING_TOOLS.contains(&name);
            }
        }
    }
    false
}

/// `oof`: did the loaded conversation stop in the middle of a turn?
fn interrupted_turn(msgs: &[Value]) -> bool {
    let Some(t) = msgs.iter().rposition(|m| {
        let skipped = matches!(ty(m), "system" | "progress")
            || (is_api_error(m) && stop_reason(m) != Some("refusal"));
        !skipped
    }) else {
        return false;
    };
    let n = &msgs[t];
    match ty(n) {
        "user" => {
            if truthy(n.get("isMeta")) || truthy(n.get("isCompactSummary")) {
                return false;
            }
            if is_interruption_marker(n) {
                return false;
            }
            is_tool_result_message(n) && !ends_turn(n, msgs, t)
        }
        "attachment" => {
            for r in (0..t).rev() {
                let o = &msgs[r];
                match ty(o) {
                    "system" | "progress" | "attachment" => continue,
                    "assistant" if is_api_error(o) && stop_reason(o) != Some("refusal") => {
                        continue;
                    }
                    "assistant" => return false,
                    "user" if truthy(o.get("isCompactSummary")) => return false,
                    "user" if is_interruption_marker(o) => return false,
                    "user" if is_tool_result_message(o) && ends_turn(o, msgs, r) => return false,
                    _ => break,
                }
            }
            true
        }
        _ => false,
    }
}

/// The chain end and the entries it passes through, for tools (`tree`, tests).
pub fn current_chain(s: &Session, st: &State) -> Vec<u32> {
    let l = load(s, st, Variant::WHOLE);
    match l.leaf {
        Some(leaf) => chain(s, st, &l, leaf),
        None => Vec::new(),
    }
}
