//! `sessionfs grep` prints exactly the same with the index as without it, whatever
//! happens to the session files between searches.
//!
//! Each case makes a small home of every agent's committed fixtures (Pi sessions and
//! damaged files, Claude Code sessions with their side folders, a Codex home with some
//! of its pages, Gemini CLI and Qwen Code project folders with their chats and
//! subagents, Copilot CLI session folders; each agent but one left out at random, and
//! sometimes an opencode database beside them, whose sessions the index never covers:
//! they are no files), then takes random steps: a search (a pattern cut from a random
//! string of a random line, or one of a list of words, decorations and numbers; fixed,
//! basic or extended, with `-i` and `-w` at random; `-l`, `-c` or `-n`), run through
//! the same function as the command line with the index (in a directory of the case's
//! own) and without it, which must print the same bytes and exit the same; or a change
//! to a file: a line of another file of the same agent appended (sometimes without its
//! newline, finished later), a run of letters rewritten in place at the same size
//! (the mtime set back half the time), the file cut to a line boundary, replaced by
//! another by rename, given a line with an image (made in the agent's way, or one of
//! its fixtures' image lines with a new payload), or deleted.
//!
//! The number of cases is `SESSIONFS_INDEX_PROPS_CASES` (32 by default, so that
//! `cargo test` stays short), from the committed seed [`SEED`] (or
//! `SESSIONFS_INDEX_PROPS_SEED`); the full run is 100,000 cases in a release build:
//!
//! ```sh
//! SESSIONFS_INDEX_PROPS_CASES=100000 cargo test --release --test search_index_props
//! ```
//!
//! (or in shards run side by side, each its range of the same cases:
//! `SESSIONFS_INDEX_PROPS_FIRST=50000 SESSIONFS_INDEX_PROPS_CASES=50000`); a long run
//! says how far it got every 1,000 cases (`-- --nocapture`).
//!
//! A failure names its case; `SESSIONFS_INDEX_PROPS_FIRST=N SESSIONFS_INDEX_PROPS_CASES=1`
//! replays it.

use sessionfs::search::pattern::Syntax;
use sessionfs::search::{self, ColorChoice, IndexUse, Options};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The committed seed.
const SEED: u64 = 0x1d3c_5eed_2026_1205;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small, fast generator (xorshift64*), so that a case replays from its number.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn jsonl_in(dir: &Path, deep: bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir(dir) else {
        return out;
    };
    for e in rd {
        let p = e.unwrap().path();
        if p.is_dir() {
            if deep {
                out.extend(jsonl_in(&p, true));
            }
        } else if p.extension().is_some_and(|x| x == "jsonl")
            && fs::metadata(&p).unwrap().len() < 400_000
        {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Every agent's fixtures: what a home is made of (files, or folders copied whole),
/// and the files whose lines are appended.
struct Pools {
    pi: Vec<PathBuf>,
    claude: Vec<PathBuf>,
    codex_pages: Vec<PathBuf>,
    /// Project folders (`tmp/NAME/`, with `chats/` and subagents' folders).
    gemini: Vec<PathBuf>,
    /// Project folders (`projects/NAME/`, with `chats/` and `subagents/`).
    qwen: Vec<PathBuf>,
    /// Session folders (`session-state/UUID/`).
    copilot: Vec<PathBuf>,
    /// opencode databases.
    opencode: Vec<PathBuf>,
    /// Per agent: its session files (lines to append, files to replace with).
    files: Vec<(Agent, Vec<PathBuf>)>,
    /// Per agent: lines of its fixtures holding an image (a PNG or JPEG in base64).
    images: Vec<(Agent, Vec<Vec<u8>>)>,
}

impl Pools {
    fn files(&self, agent: Agent) -> &[PathBuf] {
        &self
            .files
            .iter()
            .find(|(a, _)| *a == agent)
            .expect("a pool")
            .1
    }
    fn images(&self, agent: Agent) -> &[Vec<u8>] {
        self.images
            .iter()
            .find(|(a, _)| *a == agent)
            .map_or(&[], |(_, v)| v.as_slice())
    }
}

/// The folders in each of `roots` (under each fixture set) whose session files are
/// small enough, sorted.
fn folders(agent: &str, under: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(sets) = fs::read_dir(fixtures().join(agent)) else {
        return out;
    };
    for set in sets {
        let Ok(rd) = fs::read_dir(set.unwrap().path().join(under)) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            let all = jsonl_in(&p, true);
            let size: u64 = all.iter().map(|f| fs::metadata(f).unwrap().len()).sum();
            if p.is_dir() && !all.is_empty() && size < 400_000 {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn pools() -> Pools {
    let f = fixtures();
    let mut pi = jsonl_in(&f.join("sessions"), false);
    pi.extend(jsonl_in(&f.join("damaged"), false));
    pi.extend(jsonl_in(&f.join("search"), false));
    let mut claude = Vec::new();
    for root in [
        "claude/projects",
        "claude-2.1.332/projects",
        "claude-replies/projects",
    ] {
        for p in jsonl_in(&f.join(root), true) {
            if !p.to_string_lossy().contains("subagents") {
                claude.push(p);
            }
        }
    }
    let codex_pages = jsonl_in(&f.join("codex/samples/codex-home/sessions"), true);
    let gemini = folders("gemini", "gemini-home/tmp");
    let qwen = folders("qwen", "qwen-home/projects");
    let copilot = folders("copilot", "copilot-home/session-state");
    let mut opencode: Vec<PathBuf> = ["samples", "damaged"]
        .iter()
        .map(|s| {
            f.join("opencode")
                .join(s)
                .join("home/.local/share/opencode/opencode.db")
        })
        .filter(|p| p.is_file())
        .collect();
    opencode.sort();
    let deep = |dirs: &[PathBuf]| -> Vec<PathBuf> {
        dirs.iter().flat_map(|d| jsonl_in(d, true)).collect()
    };
    let files = vec![
        (Agent::Pi, pi.clone()),
        (Agent::Claude, claude.clone()),
        (Agent::Codex, codex_pages.clone()),
        (Agent::Gemini, deep(&gemini)),
        (Agent::Qwen, deep(&qwen)),
        (Agent::Copilot, deep(&copilot)),
    ];
    let image = regex::bytes::Regex::new(r#""data":"(iVBOR|/9j/)[A-Za-z0-9+/]*={0,2}""#).unwrap();
    let images = files
        .iter()
        .map(|(a, fs)| {
            let mut v: Vec<Vec<u8>> = fs
                .iter()
                .flat_map(|p| lines(p))
                .filter(|l| image.is_match(l))
                .collect();
            v.sort();
            v.dedup();
            (*a, v)
        })
        .collect();
    Pools {
        pi,
        claude,
        codex_pages,
        gemini,
        qwen,
        copilot,
        opencode,
        files,
        images,
    }
}

/// The lines of a file (without newlines).
fn lines(p: &Path) -> Vec<Vec<u8>> {
    fs::read(p)
        .unwrap_or_default()
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// A case's home: the folders searched, and the session files, by agent.
struct Home {
    roots: Vec<PathBuf>,
    files: Vec<(Agent, PathBuf)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Agent {
    Pi,
    Claude,
    Codex,
    Gemini,
    Qwen,
    Copilot,
}

const AGENTS: [Agent; 6] = [
    Agent::Pi,
    Agent::Claude,
    Agent::Codex,
    Agent::Gemini,
    Agent::Qwen,
    Agent::Copilot,
];

fn make_home(dir: &Path, pools: &Pools, rng: &mut Rng) -> Home {
    // Each agent at random, one at least.
    let one = *rng.pick(&AGENTS);
    let present: Vec<Agent> = AGENTS
        .iter()
        .copied()
        .filter(|&a| a == one || rng.chance(0.5))
        .collect();
    let mut roots = Vec::new();
    let mut files = Vec::new();
    for agent in present {
        match agent {
            Agent::Pi => {
                let pi_dir = dir.join("pi");
                let proj = pi_dir.join("--p--");
                fs::create_dir_all(&proj).unwrap();
                for k in 0..1 + rng.below(3) {
                    let src = rng.pick(&pools.pi);
                    let dest = proj.join(format!("s{k}.jsonl"));
                    fs::copy(src, &dest).unwrap();
                    files.push((Agent::Pi, dest));
                }
                roots.push(pi_dir);
            }
            Agent::Claude => {
                let claude_dir = dir.join("claude");
                let cproj = claude_dir.join("-home-p");
                fs::create_dir_all(&cproj).unwrap();
                for _ in 0..1 + rng.below(2) {
                    let src = rng.pick(&pools.claude);
                    let dest = cproj.join(src.file_name().unwrap());
                    if dest.exists() {
                        continue;
                    }
                    fs::copy(src, &dest).unwrap();
                    // Its side folder (subagents, spilled tool results), if any.
                    let side = src.with_extension("");
                    if side.is_dir() {
                        copy_tree(&side, &dest.with_extension(""));
                    }
                    files.push((Agent::Claude, dest));
                }
                roots.push(claude_dir);
            }
            Agent::Codex => {
                let codex_home = dir.join("codex-home");
                let day = codex_home.join("sessions/2026/12/01");
                fs::create_dir_all(&day).unwrap();
                fs::write(codex_home.join("session_index.jsonl"), "").unwrap();
                for _ in 0..1 + rng.below(3) {
                    let src = rng.pick(&pools.codex_pages);
                    let dest = day.join(src.file_name().unwrap());
                    if dest.exists() {
                        continue;
                    }
                    fs::copy(src, &dest).unwrap();
                    files.push((Agent::Codex, dest));
                }
                roots.push(codex_home);
            }
            Agent::Gemini | Agent::Qwen | Agent::Copilot => {
                // A CLI folder of whole project (or session) folders.
                let (home, under, marks, pool): (_, _, &[&str], _) = match agent {
                    Agent::Gemini => (dir.join("gemini"), "tmp", &["settings.json"], &pools.gemini),
                    Agent::Qwen => (dir.join("qwen"), "projects", &[], &pools.qwen),
                    _ => (dir.join("copilot"), "session-state", &[], &pools.copilot),
                };
                let into = home.join(under);
                fs::create_dir_all(&into).unwrap();
                for m in marks {
                    fs::write(home.join(m), "{}").unwrap();
                }
                for _ in 0..1 + rng.below(3) {
                    let src = rng.pick(pool);
                    let dest = into.join(src.file_name().unwrap());
                    if dest.exists() {
                        continue;
                    }
                    copy_tree(src, &dest);
                    files.extend(jsonl_in(&dest, true).into_iter().map(|f| (agent, f)));
                }
                roots.push(home);
            }
        }
    }
    // An opencode database, now and then: its sessions are searched without the index.
    if !pools.opencode.is_empty() && rng.chance(0.15) {
        let db = dir.join("opencode/opencode.db");
        fs::create_dir_all(db.parent().unwrap()).unwrap();
        fs::copy(rng.pick(&pools.opencode), &db).unwrap();
        roots.push(db);
    }
    Home { roots, files }
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let d = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &d);
        } else if p.extension().is_none_or(|x| x != "zst") {
            fs::copy(&p, &d).unwrap();
        }
    }
}

/// Words worth searching for: common ones, the text renderers add, numbers, escapes.
const WORDS: &[&str] = &[
    "error",
    "the",
    "tool",
    "read",
    "call",
    "[tool call ",
    "[thinking]",
    "(no content)",
    "image",
    "png",
    "[image ",
    " bytes",
    "2026",
    "1.5",
    "0",
    "e",
    "é",
    "\u{212a}",
    "ſ",
    "QA1",
    "[[",
    "output",
    "null",
    "assistant",
    "user",
    "session",
    "\\",
    "\"",
    "{",
    ": ",
    "id",
    "uuid",
    "zzzzz",
    "IHDR",
    "PNG",
];

/// A random pattern and options.
fn pattern(home: &Home, rng: &mut Rng) -> (String, Syntax, bool, bool, u8) {
    let syntax = match rng.below(3) {
        0 => Syntax::Fixed,
        1 => Syntax::Basic,
        _ => Syntax::Extended,
    };
    let icase = rng.chance(0.3);
    let word = rng.chance(0.1);
    let mode = rng.below(3) as u8;
    let mut p = String::new();
    if rng.chance(0.6) && !home.files.is_empty() {
        // A piece of a string of some line.
        let (_, f) = rng.pick(&home.files);
        let ls = lines(f);
        if !ls.is_empty() {
            let l = rng.pick(&ls);
            let s = String::from_utf8_lossy(l);
            let chars: Vec<char> = s.chars().collect();
            if chars.len() > 4 {
                let at = rng.below(chars.len() - 3);
                let n = 3 + rng.below(12);
                p = chars[at..(at + n).min(chars.len())].iter().collect();
            }
        }
    }
    if p.is_empty() {
        p = rng.pick(WORDS).to_string();
    }
    if syntax != Syntax::Fixed {
        // Escape it, and sometimes widen it into a regular expression.
        let mut e = String::new();
        for c in p.chars() {
            if "\\.[]*^$+?(){}|".contains(c) {
                e.push('\\');
            }
            e.push(c);
        }
        p = e;
        if rng.chance(0.3) {
            let k = p.len() / 2;
            if p.is_char_boundary(k) && !p[..k].ends_with('\\') {
                p.insert_str(k, ".*");
            }
        }
    }
    (p, syntax, icase, word, mode)
}

/// The output of a search of the home: stdout, stderr, status.
fn grep(
    home: &Home,
    pat: &(String, Syntax, bool, bool, u8),
    index: IndexUse,
) -> (Vec<u8>, Vec<u8>, u8) {
    let (pattern, syntax, ignore_case, word, mode) = pat.clone();
    let opts = Options {
        pattern,
        syntax,
        ignore_case,
        word,
        list: mode == 0,
        count: mode == 1,
        line_numbers: mode == 2,
        json: false,
        sessions: false,
        color: ColorChoice::Never,
        paths: home.roots.clone(),
        threads: 2,
        index,
    };
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = search::run_with(opts, &mut out, &mut err, &|e| panic!("write error: {e}"));
    (out, err, code)
}

/// A line of the same agent's fixtures.
fn foreign_line(agent: Agent, pools: &Pools, rng: &mut Rng) -> Vec<u8> {
    let pool = pools.files(agent);
    for _ in 0..8 {
        let p: &PathBuf = rng.pick(pool);
        let ls = lines(p);
        if ls.len() > 1 {
            return rng.pick(&ls[1..]).clone();
        }
    }
    b"{}".to_vec()
}

/// A user line with a small image, in the agent's way: made here (Pi, Claude Code,
/// Codex), or one of the agent's fixtures' lines with an image, given another image.
fn image_line(agent: Agent, pools: &Pools, rng: &mut Rng) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    for _ in 0..(64 + rng.below(400)) {
        png.push((rng.next() >> 32) as u8);
    }
    if rng.chance(0.3) {
        png.extend_from_slice(b" quoted text zzzzz ");
    }
    let b64 = base64(&png);
    let made = matches!(agent, Agent::Pi | Agent::Claude | Agent::Codex);
    if !made || rng.chance(0.3) {
        let with = pools.images(agent);
        if with.is_empty() {
            return foreign_line(agent, pools, rng);
        }
        let line = rng.pick(with);
        let re = regex::bytes::Regex::new(r#""data":"(iVBOR|/9j/)[A-Za-z0-9+/]*={0,2}""#).unwrap();
        let to = format!(r#""data":"{b64}""#);
        return re.replace(line, to.as_bytes()).into_owned();
    }
    let s = match agent {
        Agent::Pi => format!(
            r#"{{"type":"message","id":"abcdef01","parentId":null,"timestamp":"2026-12-31T00:00:00.000Z","message":{{"role":"user","content":[{{"type":"image","data":"{b64}","mimeType":"image/png"}},{{"type":"text","text":"see zzzzz"}}]}}}}"#
        ),
        Agent::Claude => format!(
            r#"{{"parentUuid":null,"type":"user","message":{{"role":"user","content":[{{"type":"image","source":{{"type":"base64","media_type":"image/png","data":"{b64}"}}}}]}},"uuid":"aaaaaaaa-1111-4222-8333-444455556666","timestamp":"2026-12-31T00:00:00.000Z","sessionId":"x"}}"#
        ),
        Agent::Codex => format!(
            r#"{{"timestamp":"2026-12-31T00:00:00.000Z","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_image","image_url":"data:image/png;base64,{b64}"}}]}}}}"#
        ),
        _ => unreachable!("made above"),
    };
    s.into_bytes()
}

use sessionfs::model::core::base64::encode as base64;

/// Changes a random file of the home.
fn change(home: &mut Home, pools: &Pools, rng: &mut Rng) -> String {
    if home.files.is_empty() {
        return "nothing (no files)".into();
    }
    let k = rng.below(home.files.len());
    let (agent, f) = home.files[k].clone();
    if !f.exists() {
        return "nothing (gone)".into();
    }
    let what = rng.below(100);
    if what < 35 {
        let mut line = foreign_line(agent, pools, rng);
        let unfinished = rng.chance(0.15);
        if !unfinished {
            line.push(b'\n');
        }
        // A file left unfinished is finished first.
        let b = fs::read(&f).unwrap();
        let mut w = OpenOptions::new().append(true).open(&f).unwrap();
        if b.last().is_some_and(|&c| c != b'\n') {
            w.write_all(b"\n").unwrap();
        }
        w.write_all(&line).unwrap();
        format!("append to {}", f.display())
    } else if what < 60 {
        let mut b = fs::read(&f).unwrap();
        let runs: Vec<usize> = (0..b.len().saturating_sub(4))
            .filter(|&i| b[i..i + 4].iter().all(u8::is_ascii_lowercase))
            .collect();
        if runs.is_empty() {
            return "nothing (no letters)".into();
        }
        let at = *rng.pick(&runs);
        for c in &mut b[at..at + 4] {
            *c = b'a' + (rng.next() % 26) as u8;
        }
        let before = fs::metadata(&f).unwrap().modified().unwrap();
        fs::write(&f, &b).unwrap();
        if rng.chance(0.5) {
            OpenOptions::new()
                .write(true)
                .open(&f)
                .unwrap()
                .set_modified(before)
                .unwrap();
        }
        format!("rewrite at {at} of {}", f.display())
    } else if what < 70 {
        let b = fs::read(&f).unwrap();
        let ends: Vec<usize> = b
            .iter()
            .enumerate()
            .filter(|(_, c)| **c == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        if ends.len() < 2 {
            return "nothing (short)".into();
        }
        let cut = ends[rng.below(ends.len() - 1)];
        fs::write(&f, &b[..cut]).unwrap();
        format!("truncate {} to {cut}", f.display())
    } else if what < 80 {
        let src = rng.pick(pools.files(agent));
        let tmp = f.with_extension("tmp");
        fs::copy(src, &tmp).unwrap();
        fs::rename(&tmp, &f).unwrap();
        format!("replace {} by {}", f.display(), src.display())
    } else if what < 93 {
        let mut line = image_line(agent, pools, rng);
        line.push(b'\n');
        let b = fs::read(&f).unwrap();
        let mut w = OpenOptions::new().append(true).open(&f).unwrap();
        if b.last().is_some_and(|&c| c != b'\n') {
            w.write_all(b"\n").unwrap();
        }
        w.write_all(&line).unwrap();
        format!("image into {}", f.display())
    } else {
        fs::remove_file(&f).unwrap();
        format!("delete {}", f.display())
    }
}

#[test]
fn the_index_changes_nothing_a_search_prints() {
    let cases = env_u64("SESSIONFS_INDEX_PROPS_CASES", 32);
    let first = env_u64("SESSIONFS_INDEX_PROPS_FIRST", 0);
    let seed = env_u64("SESSIONFS_INDEX_PROPS_SEED", SEED);
    let pools = pools();
    for a in AGENTS {
        assert!(!pools.files(a).is_empty(), "no fixtures of {a:?}");
    }
    assert!(!pools.gemini.is_empty() && !pools.qwen.is_empty() && !pools.copilot.is_empty());
    assert!(!pools.opencode.is_empty());
    let mut searches = 0u64;
    let mut hits = 0u64;
    for case in first..first + cases {
        let mut rng = Rng::new(seed ^ case.wrapping_mul(0xA076_1D64_78BD_642F));
        let dir = tempfile::Builder::new()
            .prefix("sfs-ixprop-")
            .tempdir()
            .unwrap();
        let mut home = make_home(dir.path(), &pools, &mut rng);
        let index = IndexUse::At(dir.path().join("index"));
        let mut log: Vec<String> = Vec::new();
        for _ in 0..3 + rng.below(6) {
            if rng.chance(0.6) {
                let pat = pattern(&home, &mut rng);
                let with = grep(&home, &pat, index.clone());
                let without = grep(&home, &pat, IndexUse::Off);
                log.push(format!("search {pat:?}"));
                assert!(
                    with == without,
                    "case {case} (SESSIONFS_INDEX_PROPS_FIRST={case} SESSIONFS_INDEX_PROPS_CASES=1): \
                     with and without the index differ\nsteps: {log:#?}\n--- with (status {}):\n{}\n{}\n--- without (status {}):\n{}\n{}",
                    with.2,
                    String::from_utf8_lossy(&with.0),
                    String::from_utf8_lossy(&with.1),
                    without.2,
                    String::from_utf8_lossy(&without.0),
                    String::from_utf8_lossy(&without.1),
                );
                searches += 1;
                hits += u64::from(with.2 == 0);
            } else {
                log.push(change(&mut home, &pools, &mut rng));
            }
        }
        // A long run says how far it got.
        if (case + 1 - first).is_multiple_of(1000) {
            eprintln!(
                "{} cases from {first} done: {searches} searches compared, {hits} with a match",
                case + 1 - first
            );
        }
    }
    eprintln!("{cases} cases, {searches} searches compared, {hits} with a match");
    assert!(
        cases < 8 || hits * 10 >= searches,
        "too few searches found anything: {hits} of {searches}"
    );
}
