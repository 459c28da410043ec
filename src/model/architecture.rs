//! The model's layering, checked on its source: the core names no agent, no agent
//! names another, nothing below the agents' table names the table, and the folders
//! import one another without a circle.
//!
//! Every path a file of `src/model/` names (`crate::model::…`, `super::…`,
//! `self::…`, `use` lists included; comments left out) is resolved to the folder it
//! lands in: `core`, an agent's folder (`pi`, `claude`, …), or `table` (the files
//! directly in `src/model/`: the agents' table, `sessions_dir`, and the old paths kept
//! for callers). Inside `core/` and the agents' folders only those canonical folder
//! paths are allowed, not the old re-exported ones (`crate::model::session`), so that
//! each reference says where it goes.
//!
//! The same holds between files: no file of `src/model/` names another that names it
//! back, directly or around a circle (the layers are listed in `core/mod.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where a file of `src/model/` belongs: `table`, `core`, or an agent's folder name.
fn folder_of(rel: &Path) -> String {
    let mut c = rel.components();
    let first = c.next().unwrap().as_os_str().to_string_lossy().into_owned();
    if c.next().is_none() {
        "table".to_string()
    } else {
        first
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The source without comments (line comments and doc comments; block comments are
/// not used in this crate's model).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            // A `//` inside a string literal ("http://…") is rare in the model; a
            // string with `crate::model::` in it rarer still.
            Some(k) => &l[..k],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module path (below `crate::model`) of a file: `core/session.rs` is
/// `["core", "session"]`, `claude/mod.rs` is `["claude"]`, `mod.rs` is `[]`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut v: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = v.pop().unwrap();
    if last != "mod.rs" {
        v.push(last.trim_end_matches(".rs").to_string());
    }
    v
}

/// The folders (of `crate::model`) that the paths in `code` name, for a file at module
/// path `module`. A `super::` in a file's inline `mod tests` is taken one level too
/// high, which lands in the same folder or the table, never in another agent.
fn targets(code: &str, module: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let word = |i: usize| i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
    for (start, _) in code.match_indices("crate::model::") {
        if word(start) {
            continue;
        }
        let rest = &code[start + "crate::model::".len()..];
        let seg: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        out.push((seg.clone(), format!("crate::model::{seg}")));
    }
    // `super::` chains, relative to the file's module: in `claude/loader.rs`,
    // `super::` is `claude`, `super::super::` is `crate::model`.
    for (start, _) in code.match_indices("super::") {
        if word(start) || code[..start].ends_with("super::") {
            continue;
        }
        let mut rest = &code[start..];
        let mut ups = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            ups += 1;
            rest = r;
        }
        let seg: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        // The module `super` names from the file's top level.
        let base_len = module.len() as isize - ups;
        if base_len < 0 {
            continue;
        }
        let base = &module[..base_len as usize];
        let folder = match base.first() {
            Some(f) => f.clone(),
            // `super::x` reaching `crate::model` itself names the folder `x`.
            None => seg.clone(),
        };
        out.push((folder, format!("super::{seg} (from {})", module.join("::"))));
    }
    for (start, _) in code.match_indices("self::core::") {
        if !word(start) && module.is_empty() {
            out.push(("core".to_string(), "self::core".to_string()));
        }
    }
    out
}

/// Folder-level references: from folder -> (to folder -> an example).
fn graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/model");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(
        files.len() > 20,
        "the model's files were not found under {root:?}"
    );
    let mut g: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&root).unwrap().to_path_buf();
        if rel == Path::new("architecture.rs") {
            // This checker: its examples name every folder.
            continue;
        }
        let from = folder_of(&rel);
        let module = module_of(&rel);
        let code = code_of(&std::fs::read_to_string(&f).unwrap());
        for (to, how) in targets(&code, &module) {
            let to = match to.as_str() {
                "core" | "pi" | "claude" | "codex" => to,
                // A name directly under `crate::model` that is no folder: the table's
                // own items and old paths.
                _ if root.join(&to).is_dir() => to,
                _ => "table".to_string(),
            };
            if to != from {
                g.entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_insert_with(|| format!("{} names {how}", rel.display()));
            }
        }
    }
    g
}

#[test]
fn the_core_names_no_agent_and_no_agent_names_another() {
    let g = graph();
    let mut wrong = Vec::new();
    for (from, tos) in &g {
        if from == "table" {
            continue;
        }
        for (to, example) in tos {
            // The core names only itself; an agent names only the core and itself.
            let allowed = from != "core" && to == "core";
            if !allowed {
                wrong.push(format!("{from} -> {to}: {example}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "layering broken (move what two agents share into core/, reach agents through \
         core::agent::Agent and the table in agents.rs):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_folders_import_one_another_without_a_circle() {
    let g = graph();
    let nodes: BTreeSet<&String> = g.keys().chain(g.values().flat_map(|t| t.keys())).collect();
    // Depth-first search for a back edge.
    fn visit<'a>(
        n: &'a String,
        g: &'a BTreeMap<String, BTreeMap<String, String>>,
        state: &mut BTreeMap<&'a String, u8>,
        stack: &mut Vec<&'a String>,
    ) -> Option<Vec<String>> {
        state.insert(n, 1);
        stack.push(n);
        for to in g.get(n).into_iter().flat_map(|t| t.keys()) {
            match state.get(to).copied().unwrap_or(0) {
                1 => {
                    let k = stack.iter().position(|x| *x == to).unwrap();
                    let mut c: Vec<String> = stack[k..].iter().map(|s| s.to_string()).collect();
                    c.push(to.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(to, g, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n, 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in nodes {
        if state.get(n).copied().unwrap_or(0) == 0 {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, &g, &mut state, &mut stack) {
                let how: Vec<String> = c.windows(2).map(|w| g[&w[0]][&w[1]].clone()).collect();
                panic!("import circle {}:\n{}", c.join(" -> "), how.join("\n"));
            }
        }
    }
}

// ----- files ---------------------------------------------------------------------------
//
// The same check one level down: every file of `src/model/` is a node (a `mod.rs` and
// the files of its folder are separate nodes; a `mod.rs` declaring its submodules does
// not import them), and a path names the deepest file it reaches
// (`crate::model::core::session::flags::NO_ID` names `core/session.rs`). `use` trees
// (`a::{b::C, d}`), `super::`, `self::` and a parent's bare `child::` paths count. A
// file's inline `mod tests` counts as the file (its `super::` is the file).

/// The file (relative to `src/model/`) that the module path `segs` (below
/// `crate::model`) lands in: the deepest prefix that is a module file.
fn file_of(root: &Path, segs: &[String]) -> Option<String> {
    for k in (0..=segs.len()).rev() {
        let base = segs[..k].join("/");
        let cands = if k == 0 {
            vec!["mod.rs".to_string()]
        } else {
            vec![format!("{base}.rs"), format!("{base}/mod.rs")]
        };
        for c in cands {
            if root.join(&c).is_file() {
                return Some(c);
            }
        }
    }
    None
}

fn ident_at(s: &str) -> (&str, &str) {
    let n = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (&s[..n], &s[n..])
}

/// The module paths a path starting at `rest` names, each below `base`: `a::b::C`,
/// `a::{b, c::D}`, `*`.
fn use_tree(base: &[String], rest: &str, out: &mut Vec<Vec<String>>) {
    let mut segs = base.to_vec();
    let mut rest = rest.trim_start();
    loop {
        if let Some(r) = rest.strip_prefix('{') {
            // A list: each item is a path below `segs`, up to the matching `}`.
            let mut depth = 0;
            let mut start = 0;
            for (k, c) in r.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        use_tree(&segs, &r[start..k], out);
                        return;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        use_tree(&segs, &r[start..k], out);
                        start = k + 1;
                    }
                    _ => {}
                }
            }
            return;
        }
        let (id, r) = ident_at(rest);
        if id.is_empty() || id == "self" {
            break;
        }
        segs.push(id.to_string());
        match r.strip_prefix("::") {
            Some(r) => rest = r.trim_start(),
            None => break,
        }
    }
    out.push(segs);
}

/// The module paths (below `crate::model`) that `code`, in module `module`, names.
fn module_paths(code: &str, module: &[String], children: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let word = |i: usize| {
        i > 0
            && (bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || (i > 1 && &code[i - 2..i] == "::"))
    };
    for (start, _) in code.match_indices("crate::model::") {
        if !word(start) {
            use_tree(&[], &code[start + "crate::model::".len()..], &mut out);
        }
    }
    for (start, _) in code.match_indices("super::") {
        if word(start) {
            continue;
        }
        let mut rest = &code[start..];
        let mut ups = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            ups += 1;
            rest = r;
        }
        if ups <= module.len() {
            use_tree(&module[..module.len() - ups], rest, &mut out);
        }
    }
    for (start, _) in code.match_indices("self::") {
        if !word(start) {
            use_tree(module, &code[start + "self::".len()..], &mut out);
        }
    }
    for child in children {
        let pat = format!("{child}::");
        for (start, _) in code.match_indices(&pat) {
            if !word(start) {
                use_tree(module, &code[start..], &mut out);
            }
        }
    }
    out
}

/// File-level references: from file -> (to file -> an example path).
fn file_graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/model");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut g: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&root).unwrap().to_path_buf();
        if rel == Path::new("architecture.rs") {
            continue;
        }
        let from = rel.to_string_lossy().into_owned();
        let module = module_of(&rel);
        let code = code_of(&std::fs::read_to_string(&f).unwrap());
        // Submodules declared in files of their own (`mod x;`).
        let children: Vec<String> = code
            .lines()
            .filter_map(|l| {
                let l = l.trim_start();
                let l = l
                    .strip_prefix("pub ")
                    .or_else(|| l.strip_prefix("pub(crate) "))
                    .unwrap_or(l);
                let name = l.strip_prefix("mod ")?.strip_suffix(';')?;
                Some(name.trim().to_string())
            })
            .collect();
        // An inline `mod tests {` at the top level: below it, `super::` is this file.
        let (body, tests) = match code.find("\nmod tests {") {
            Some(k) => (&code[..k], &code[k..]),
            None => (&code[..], ""),
        };
        let mut in_tests = module.clone();
        in_tests.push("tests".into());
        let mut paths = module_paths(body, &module, &children);
        paths.extend(module_paths(tests, &in_tests, &[]));
        for segs in paths {
            let Some(to) = file_of(&root, &segs) else {
                continue;
            };
            if to != from {
                g.entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_insert_with(|| segs.join("::"));
            }
        }
    }
    g
}

/// A circle in `g`, if any, as the nodes along it (the first repeated at the end).
fn find_circle(g: &BTreeMap<String, BTreeMap<String, String>>) -> Option<Vec<String>> {
    fn visit<'a>(
        n: &'a String,
        g: &'a BTreeMap<String, BTreeMap<String, String>>,
        state: &mut BTreeMap<&'a String, u8>,
        stack: &mut Vec<&'a String>,
    ) -> Option<Vec<String>> {
        state.insert(n, 1);
        stack.push(n);
        for to in g.get(n).into_iter().flat_map(|t| t.keys()) {
            match state.get(to).copied().unwrap_or(0) {
                1 => {
                    let k = stack.iter().position(|x| *x == to).unwrap();
                    let mut c: Vec<String> = stack[k..].iter().map(|s| s.to_string()).collect();
                    c.push(to.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(to, g, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n, 2);
        None
    }
    let nodes: BTreeSet<&String> = g.keys().chain(g.values().flat_map(|t| t.keys())).collect();
    let mut state = BTreeMap::new();
    for n in nodes {
        if state.get(n).copied().unwrap_or(0) == 0 {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, g, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

/// The links between files that still close import circles, as `(from, to)`: the
/// lower file of each pair names the higher one. Cutting one means moving what the
/// lower file uses from the higher one down (or beside it) and deleting its line here.
const KNOWN_BACK_LINKS: &[(&str, &str)] = &[];

#[test]
fn the_files_import_one_another_without_a_circle() {
    let g = file_graph();
    assert!(
        g.contains_key("core/session.rs"),
        "the file graph missed core/session.rs: {:?}",
        g.keys().collect::<Vec<_>>()
    );
    let mut g = g;
    // Links that still close a circle, to be cut (see core/mod.rs, "Layers"): each
    // must still exist (a cut one leaves this list), and no other link may close one.
    let mut stale = Vec::new();
    for (from, to) in KNOWN_BACK_LINKS {
        match g.get_mut(*from).and_then(|t| t.remove(*to)) {
            Some(_) => {}
            None => stale.push(format!("{from} -> {to}")),
        }
    }
    assert!(
        stale.is_empty(),
        "these links are gone: take them out of KNOWN_BACK_LINKS:\n{}",
        stale.join("\n")
    );
    let mut circles = Vec::new();
    // Report every circle: after one is found, cut its last link and look again.
    while let Some(c) = find_circle(&g) {
        let how: Vec<String> = c
            .windows(2)
            .map(|w| format!("  {} names {}", w[0], g[&w[0]][&w[1]]))
            .collect();
        circles.push(format!("{}\n{}", c.join(" -> "), how.join("\n")));
        let n = c.len();
        g.get_mut(&c[n - 2]).unwrap().remove(&c[n - 1]);
        if circles.len() > 30 {
            break;
        }
    }
    assert!(
        circles.is_empty(),
        "import circles between files (move what both need into a lower file, see the \
         layers in core/mod.rs):\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_file_checker_resolves_use_trees_and_relative_paths() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/model");
    let module = vec!["claude".to_string(), "loader".to_string()];
    let paths = module_paths(
        "use crate::model::core::{session::{Session, flags}, id::IdKey};\nuse super::State;\n",
        &module,
        &[],
    );
    let files: BTreeSet<String> = paths.iter().filter_map(|p| file_of(&root, p)).collect();
    let want: BTreeSet<String> = ["core/session.rs", "core/id.rs", "claude/mod.rs"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(files, want);
    // A parent naming its child by a bare path; `x::child::` is not that.
    let paths = module_paths(
        "use head::Head; let a = other::head::x;",
        &["claude".to_string()],
        &["head".to_string()],
    );
    let files: Vec<String> = paths.iter().filter_map(|p| file_of(&root, p)).collect();
    assert_eq!(files, vec!["claude/head.rs".to_string()]);
    let mut g = BTreeMap::new();
    g.entry("a".to_string())
        .or_insert_with(BTreeMap::new)
        .insert("b".to_string(), String::new());
    assert!(find_circle(&g).is_none());
    g.entry("b".to_string())
        .or_insert_with(BTreeMap::new)
        .insert("a".to_string(), String::new());
    assert!(find_circle(&g).is_some());
}

#[test]
fn the_checker_sees_a_wrong_reference() {
    // The resolver itself: an agent naming another agent, and the core naming one.
    let t = targets(
        "use crate::model::claude::State;\nuse super::super::pi::render;",
        &["core".to_string(), "session".to_string()],
    );
    let folders: Vec<&str> = t.iter().map(|(f, _)| f.as_str()).collect();
    assert!(folders.contains(&"claude"), "{t:?}");
    assert!(folders.contains(&"pi"), "{t:?}");
    let code = code_of("use super::State; // crate::model::pi");
    let t = targets(&code, &["claude".into(), "loader".into()]);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].0, "claude");
}

/// The folders of `src/model/` that are agents (every folder but `core`).
fn agent_folders() -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/model");
    std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|n| n != "core")
        .collect()
}

/// What a file above the model names of it that it must not: an agent's folder, an
/// old path that re-exports an agent's items, or a variant of the `Format` tag.
fn wrong_names_above_the_model(code: &str, agents: &BTreeSet<String>) -> Vec<String> {
    // Old paths (`crate::model::X`) that hold an agent's items (`model/mod.rs`).
    const AGENT_REEXPORTS: &[&str] = &["context", "migrate", "render", "content", "session"];
    let mut wrong = Vec::new();
    let bytes = code.as_bytes();
    for prefix in ["crate::model::", "sessionfs::model::"] {
        for (start, _) in code.match_indices(prefix) {
            if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
                continue;
            }
            let rest = &code[start + prefix.len()..];
            let seg: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if agents.contains(&seg) || AGENT_REEXPORTS.contains(&seg.as_str()) {
                wrong.push(format!("{prefix}{seg}"));
            }
            // `crate::model::{…}` lists: each name in it.
            if seg.is_empty() && rest.starts_with('{') {
                let list = &rest[1..rest.find('}').unwrap_or(rest.len())];
                for name in list.split(',').map(str::trim) {
                    let first = name.split("::").next().unwrap_or("");
                    if agents.contains(first) || AGENT_REEXPORTS.contains(&first) {
                        wrong.push(format!("{prefix}{{{first}}}"));
                    }
                }
            }
        }
    }
    for (start, _) in code.match_indices("Format::") {
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        if code[start + "Format::".len()..].starts_with(|c: char| c.is_ascii_uppercase()) {
            let v: String = code[start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            wrong.push(v);
        }
    }
    wrong
}

/// `src/search/`, `src/view/`, `src/fuse/` and the files beside them (`main.rs`,
/// `lib.rs`, `prio.rs`) name no agent: they reach an agent only through the core's
/// seams (`core::agent::Agent`, `core::grep`, `core::catalog`) and the agents' tables
/// (`model::agents`, `model::sessions_dir`), so that adding an agent is adding its
/// folder and a line to each table.
#[test]
fn the_layers_above_the_model_name_no_agent() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let agents = agent_folders();
    assert!(
        agents.contains("pi") && agents.contains("codex"),
        "{agents:?}"
    );
    let mut files = Vec::new();
    for d in ["search", "view", "fuse"] {
        rust_files(&src.join(d), &mut files);
    }
    for f in ["main.rs", "lib.rs", "prio.rs"] {
        files.push(src.join(f));
    }
    assert!(files.len() > 15, "{files:?}");
    let mut wrong = Vec::new();
    for f in &files {
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        for w in wrong_names_above_the_model(&code, &agents) {
            wrong.push(format!(
                "{} names {w}",
                f.strip_prefix(&src).unwrap().display()
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "a layer above the model names an agent (ask the Agent trait, the search's rules \
         in core::grep or the lister in core::catalog, through the tables in \
         model/agents.rs and model/sessions_dir.rs):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_check_above_the_model_sees_a_wrong_name() {
    let agents: BTreeSet<String> = ["pi".to_string(), "codex".to_string()].into();
    let code = "use crate::model::codex::files;\nuse crate::model::{render, core::x};\n\
                let a = crate::model::core::grep::Rules;\nif f == Format::Pi {}\n\
                let n = Format::name(f);\n";
    let got = wrong_names_above_the_model(code, &agents);
    assert_eq!(
        got,
        [
            "crate::model::codex",
            "crate::model::{render}",
            "Format::Pi"
        ]
    );
}

/// The files the model, the view and the search open to read go through the core's
/// opener (`core::input`: `open_regular` for a session file named by the user or a
/// listing, `Session::open_side`/`open_beneath` for every other file a session reads),
/// which never blocks, opens only regular files and bounds what it reads: a FIFO, a
/// device or a link out of the agent's folder in a sessions folder must not hang or
/// mislead the mount. A plain `File::open`, `fs::read` or `fs::read_to_string` outside
/// it (and outside tests) fails this test, naming the line and what to use instead.
#[test]
fn files_are_opened_to_read_only_through_the_core() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for d in ["model", "view", "search"] {
        rust_files(&base.join(d), &mut files);
    }
    // Opens that are not of a session's files, each with why.
    let allowed: &[(&str, &str)] = &[
        // Directories opened to be synced after a new file was written in them.
        ("model/core/fork.rs", "File::open(dir)"),
        ("model/core/fork.rs", "File::open(&tmp)"),
        ("model/codex/write/mod.rs", "fs::File::open(dir)"),
        // The kernel's own file about a process.
        ("view/session_view.rs", "read_to_string(format!(\"/proc/"),
        ("model/copilot/home.rs", "fs::read(format!(\"/proc/"),
    ];
    let mut wrong = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(&base)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if rel == "model/core/input.rs" || rel == "model/architecture.rs" || name.contains("tests")
        {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        // Test modules sit at the end of a file.
        let text = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in code_of(text).lines().enumerate() {
            let opens = ["File::open(", "fs::read(", "fs::read_to_string("]
                .iter()
                .any(|p| line.contains(p));
            let excused = allowed
                .iter()
                .any(|(file, what)| rel == *file && line.contains(what));
            if opens && !excused {
                wrong.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "files opened to read outside the core's opener: use input::open_regular for a \
         session file, Session::open_side / read_side (or input::open_beneath) for any other \
         file a session reads:\n{}",
        wrong.join("\n")
    );
}
