//! What an agent tells `sessionfs grep` about its files: the search's seam.
//!
//! `sessionfs grep` (`crate::search`) owns the mechanism: the walk, the raw prefilter
//! over each file's bytes, rendering the candidates, matching as grep does, the paths
//! of the hits, the on-disk cache, the output. What a format's bytes mean belongs to
//! the agent that writes them, in its own folder, as ripgrep's searcher is one and its
//! formats are many. An agent supplies, for each format (or version of one) it
//! writes, a [`Rules`]:
//!
//! * **what its renderer adds** to the text it takes from a raw line ([`Decoration`]s
//!   with the raw-line conditions, [`Trigger`]s, under which it can write them; numbers
//!   it computes; lines it rewrites rather than copies; lines with binary content
//!   files). The prefilter looks for a fragment of the pattern in the raw bytes of each
//!   line and renders only the lines that hold it; that is sound as long as every piece
//!   of rendered text is either a string of the line or covered by a decoration whose
//!   trigger holds there. The rules are knowledge about a renderer kept beside it, in
//!   the agent's folder; the search's tests render every entry of every fixture and
//!   check that the rules explain it, and compare `sessionfs grep` with `grep -r`
//!   through a real mount;
//! * **what else a line needs**: whether a line renders on its own
//!   ([`Rules::line_content`], so candidates are confirmed before the file is
//!   indexed), other files whose lines are entries of the session
//!   ([`Rules::side_files`]), text taken from the parent's line
//!   ([`Rules::parent_text`]), files an entry shows beside its KIND file
//!   ([`Rules::spilled`]), binary content an entry shows from another line of its
//!   file ([`Rules::held`]), bytes at the start of a file that hold no entry
//!   ([`Rules::no_entries_before`]);
//! * **where a hit is** without the full index, when the format allows it
//!   ([`Rules::hit_paths`]): either a map of the file built from its raw lines
//!   ([`HitPaths::Map`], which the search begins at the first hit, feeds the blocks it
//!   reads, and keeps in its on-disk cache between searches), or the paths read
//!   straight from the lines before the hits ([`HitPaths::Direct`]). Either may
//!   answer "ask the full index" ([`Doubt`], `None`), which is always right.
//!
//! Which rules a file gets is the agents' table's business ([`SearchTable`], in
//! `crate::model::agents`): from its first parsed line, or from its name when the agent
//! has read that line already. A file no agent's rules claim is searched without
//! prefilter, every entry rendered: slower, never wrong.

use crate::model::core::content::Content;
use crate::model::core::scan::LineHead;
use parking_lot::Mutex;
use regex::bytes::Regex;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A condition on a raw line (without its newline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The line matches this regular expression (`regex` crate syntax, on bytes).
    Matches(&'static str),
    /// The line does not contain this string.
    Lacks(&'static str),
    /// The line holds more than this many `[` and `{` together (it may be nested
    /// more deeply than the JSON parser builds).
    Openers(usize),
    /// The line is longer than this many bytes (it may hold more values than a line
    /// may hold parsed, `input::check_values`).
    Longer(usize),
}

impl Trigger {
    /// Whether the trigger holds on `line` (one line at a time: for tests and
    /// checks; the prefilter compiles its triggers into one scan).
    pub fn holds(&self, line: &[u8]) -> bool {
        static COMPILED: OnceLock<Mutex<HashMap<&'static str, Regex>>> = OnceLock::new();
        match *self {
            Trigger::Matches(r) => {
                let re = COMPILED
                    .get_or_init(Default::default)
                    .lock()
                    .entry(r)
                    .or_insert_with(|| Regex::new(r).expect("a valid trigger"))
                    .clone();
                re.is_match(line)
            }
            Trigger::Lacks(s) => memchr::memmem::find(line, s.as_bytes()).is_none(),
            Trigger::Openers(n) => openers(line) > n,
            Trigger::Longer(n) => line.len() > n,
        }
    }
}

/// The number of `[` and `{` in `line` ([`Trigger::Openers`]): counted in byte-wide
/// counters over runs of 255 bytes, which the compiler turns into wide vector adds
/// (a plain `filter().count()` adds a few bytes per step into 64-bit counters), since
/// the index asks it of every line it reads.
pub fn openers(line: &[u8]) -> usize {
    line.chunks(255)
        .map(|run| {
            let n = run.iter().fold(0u8, |n, &b| {
                n.wrapping_add(u8::from(b == b'[') | u8::from(b == b'{'))
            });
            usize::from(n)
        })
        .sum()
}

/// Text a renderer may write that is not in the line it renders.
#[derive(Debug, Clone, Copy)]
pub struct Decoration {
    pub text: &'static str,
    /// The renderer can write `text` only on lines where one of these holds; empty:
    /// anywhere.
    pub when: &'static [Trigger],
}

/// A [`Decoration`], for the agents' tables of them.
pub const fn deco(text: &'static str, when: &'static [Trigger]) -> Decoration {
    Decoration { text, when }
}

/// An entry's content files from its raw line, if the line alone gives them.
pub type LineContent = fn(&[u8]) -> Option<Content>;

/// What the search must know about one session format.
#[derive(Debug)]
pub struct Rules {
    /// A name for the format, unique over every agent (`pi`, `pi-v2`, `claude`).
    pub name: &'static str,
    pub decorations: &'static [Decoration],
    /// Lines where the renderer may write numbers that are not in the line (counts,
    /// sizes, positions): a fragment holding a digit also selects these lines.
    pub derived_numbers: &'static [Trigger],
    /// Entry ids that exist only in memory (8 lower-case hex digits) may be written
    /// anywhere: a fragment made of hex digits alone is not used.
    pub derived_ids: bool,
    /// Lines the renderer rewrites rather than copies (whitespace collapsed, text cut
    /// short): always candidates, whatever the pattern.
    pub always: &'static [Trigger],
    /// Lines whose entries may have binary content files (see the prefilter).
    pub binary_content: &'static [Trigger],
    /// An entry's content files from its raw line alone, when the format allows it
    /// (`None` for a line that needs its session): a file whose candidate lines turn
    /// out not to match is then not indexed at all.
    pub line_content: Option<LineContent>,
    /// Other files whose lines are entries of the session (Claude Code's subagent
    /// transcripts), given the session file: scanned with the same prefilter.
    pub side_files: Option<fn(&Path) -> Vec<PathBuf>>,
    /// A line's rendering may take text from its parent's line (a Claude Code tool
    /// result names the tool of its parent's call): the children of a candidate are
    /// rendered too. The text taken is a string of the parent's line, so a fragment
    /// of it is found there.
    pub parent_text: bool,
    /// Lines whose entry shows a file of its own beside its KIND file, searched as
    /// is (a Claude Code tool result spilled to `tool-results/`): such a line is a
    /// candidate when that file holds one of the pattern's literals.
    pub spilled: Option<Spilled>,
    /// Where in a file its first entry may start, as far as the search has read the
    /// file already (a Codex page's first line, its `session_meta`, some 20 KB): the
    /// scan passes over the bytes before it, after checking that a line ends there.
    pub no_entries_before: Option<fn(&Path) -> Option<u64>>,
    /// How a file's hits are placed without its index, when the format allows it.
    pub hit_paths: Option<HitPaths>,
    /// An entry's content files from its raw line alone, as far as they depend on the
    /// line's own bytes (text taken from other lines may be missing or differ), images
    /// included: the search's index asks it which base64 strings of a line are images
    /// and which show as no text. `None`: the index keeps every base64 string of a
    /// line where binary content may be in its text, and indexes the decoded bytes of
    /// each as the prefilter decodes them (correct, a larger index).
    pub alone: Option<LineContent>,
    /// Lines whose entries show binary content another line of the same file holds
    /// (an image a prompt names by id, stored once in a line of its own).
    pub held: Option<Held>,
    /// Whether a line may be shown at all: as an entry of its own, or as text another
    /// entry's content takes from it (`None`: any line may). A line it says no for is
    /// no candidate, whatever it holds: Claude Code's metadata lines (a request's
    /// system prompt and tool definitions, 38 KB in every session; file backups;
    /// costs), which belong to no entry and give no entry text. It must be the
    /// format's own test, the one its index decides with, not a guess from the bytes.
    ///
    /// The search asks it of a file's candidates only until one is shown: the session
    /// is then opened anyway, and a line that is no entry selects nothing there. So a
    /// file whose only candidates are such lines is not opened, and one with a hit
    /// pays for a few lines more.
    pub shown: Option<fn(&[u8]) -> bool>,
}

/// Lines whose entries show binary content held by other lines of the same file
/// ([`Rules::held`]): a prompt names an image by an id, and the image is the decoded
/// base64 of a line of its own, anywhere in the file, which several prompts may name.
///
/// The raw scan of a naming line cannot look into the holding line, and the holding
/// line may come before or after it. So a naming line is a candidate when its own
/// bytes make it one (as any line), or when some holding line of the same file may
/// give its entry what the pattern needs: the holding line is selected by the
/// prefilter's other rules (a fragment among its strings, such as a MIME type the
/// entry shows; a trigger; an escape `JSON.stringify` would not write, which may spell
/// any key or type), or one of the pattern's literals occurs in the decoded bytes of
/// one of its `"data"` strings, or such a string holds an escape or does not end (it
/// is not looked into). Which holding line a naming line names is not matched: any
/// holding line of the file that may match makes every naming line of the file a
/// candidate (a rare case: that file has a hit, and its session is read anyway).
///
/// What the naming line's entry shows of a holding line must be its decoded data
/// (image files), strings of the holding line, or text its own decorations and
/// derived numbers cover (triggers on the naming line: the image's name and size).
/// The holding line's base64 is never shown as text: the search's index leaves it out
/// of the text's trigrams and indexes the decoded bytes instead.
#[derive(Debug, Clone, Copy)]
pub struct Held {
    /// Lines that may name held content.
    pub names: &'static [Trigger],
    /// Lines that may hold it (a line spelled with escapes is taken as one too).
    pub holds: &'static [Trigger],
}

/// Lines whose entry may show a file of its own ([`Rules::spilled`]).
#[derive(Debug, Clone, Copy)]
pub struct Spilled {
    /// Where the file may be named: the line is otherwise read as its other rules say.
    pub place: &'static [Trigger],
    /// The file a line's entry shows, given the session file and the line: `None`
    /// when it shows none, `Err` when that cannot be told from the line alone (the
    /// line is then a candidate).
    pub file: fn(&Path, &[u8]) -> Result<Option<PathBuf>, ()>,
    /// Whether the session file at the path may show any spilled file at all.
    /// `false` promises that `file` gives no file for any line of it: `Ok(None)`, or
    /// `Err` for a line whose file cannot be told, which must depend on the line's
    /// bytes alone. The search's index then reads only those lines, not every line
    /// that names a file (a session without spilled files is the common case).
    pub any: fn(&Path) -> bool,
}

/// The longest path `sessionfs grep` prints nested, plus one: the kernel's `PATH_MAX`
/// (4,096 bytes with the closing NUL). A hit whose nested path (the session's folder,
/// every entry from the root down, the file) would be longer is printed by its
/// `.id/ID/KIND` path instead: the nested one could not be opened through a mount, and
/// printing every ancestor of every hit made the output grow with the square of the
/// depth (a chain 200,000 deep gave tens of gigabytes).
pub const PATH_MAX: usize = 4096;

/// Where a hit is in the mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HitPath {
    /// Which of the hits asked about.
    pub hit: usize,
    /// The ids of the entries from the root down to the hit's, as the index names
    /// them (the search makes directory names of them, as the mount does); with
    /// `deep`, the hit's own id only.
    pub dirs: Vec<String>,
    /// The ids from the root down take [`PATH_MAX`] bytes or more (each with a
    /// slash): the hit is printed by its `.id/` path, and only its own id is kept.
    pub deep: bool,
    /// The name of its KIND file.
    pub kind: String,
}

impl HitPath {
    /// The hit's path from the ids of `chain` (root first, the hit last; each id's
    /// bytes summed by the caller): the whole chain while its ids and slashes take less than
    /// [`PATH_MAX`] bytes (`bytes`, the caller's running sum of them), else the hit's
    /// own id, `deep` (only the last item of `chain` is then made). What one hit costs
    /// is then bounded, whatever its depth.
    pub fn of_chain(
        hit: usize,
        mut chain: impl DoubleEndedIterator<Item = String>,
        bytes: usize,
        kind: String,
    ) -> HitPath {
        let deep = bytes >= PATH_MAX;
        let dirs = if deep {
            chain.next_back().into_iter().collect()
        } else {
            chain.collect()
        };
        HitPath {
            hit,
            dirs,
            deep,
            kind,
        }
    }
}

/// The file needs the full index (a doubt on a walked line).
#[derive(Debug)]
pub struct Doubt;

/// Reads lines of the file for validation.
pub trait LineSource {
    fn line(&mut self, offset: u64, len: u32) -> io::Result<Vec<u8>>;
}

impl LineSource for &File {
    fn line(&mut self, offset: u64, len: u32) -> io::Result<Vec<u8>> {
        let mut v = vec![0; len as usize];
        self.read_exact_at(&mut v, offset)?;
        Ok(v)
    }
}

impl LineSource for &[u8] {
    fn line(&mut self, offset: u64, len: u32) -> io::Result<Vec<u8>> {
        let s = offset as usize;
        self.get(s..s + len as usize)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))
    }
}

/// How a format's hits are placed without the full index.
#[derive(Clone, Copy)]
pub enum HitPaths {
    /// From a map of the file built from its raw lines ([`MapFormat`]).
    Map(&'static dyn MapFormat),
    /// Read from the lines before the hits, given the file's path, the file and the
    /// hits (each a line's offset and length without its newline), in the order
    /// `grep -r` meets them through a mount; `None`: ask the full index.
    Direct(DirectPaths),
}

/// [`HitPaths::Direct`]'s function.
pub type DirectPaths = fn(&Path, &File, &[(u64, usize)]) -> io::Result<Option<Vec<HitPath>>>;

impl std::fmt::Debug for HitPaths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HitPaths::Map(_) => f.write_str("HitPaths::Map"),
            HitPaths::Direct(_) => f.write_str("HitPaths::Direct"),
        }
    }
}

/// A format whose hits are placed by a map of the file built from its raw lines.
pub trait MapFormat: Sync {
    /// A map of the first `size` bytes of a file, to be fed its complete lines in
    /// order from byte 0.
    fn builder(&self, size: u64) -> Box<dyn MapBuilder>;
    /// A map read back from the cache: `payload` as [`HitMap::encode`] wrote it, for
    /// the first `size` bytes of the file; `None` unless it is intact.
    fn decode(&self, payload: &[u8], size: u64) -> Option<Box<dyn HitMap>>;
}

/// A map being built from a file's complete lines, handed to it in file order.
pub trait MapBuilder: Send {
    /// Takes the complete lines `lines` (each ending with a newline), which start at
    /// byte `base` of the file, where the previous ones ended.
    fn feed(&mut self, lines: &[u8], base: u64);
    /// No map: a line the feeder could not hand over (longer than the bound).
    fn refuse(&mut self);
    /// Reads the file from where the lines handed over end up to byte `to` (or the
    /// end of the bytes the map covers), through `buf`, and takes its complete lines.
    fn read(&mut self, f: &File, to: u64, buf: &mut Vec<u8>) -> io::Result<()>;
    /// The map, unless a line refused it.
    fn finish(self: Box<Self>) -> Option<Box<dyn HitMap>>;
}

/// The map of a file.
pub trait HitMap: Send {
    /// The paths of the hits (each a line by its offset and length, without its
    /// newline), in the order `grep -r` meets them through a mount; hits on lines
    /// that are no node are left out. `Err(Doubt)`: ask the full index.
    fn paths(
        &self,
        hits: &[(u64, usize)],
        src: &mut dyn LineSource,
    ) -> io::Result<Result<Vec<HitPath>, Doubt>>;
    /// The map as bytes, for the cache ([`MapFormat::decode`] reads them back).
    fn encode(&self) -> Vec<u8>;
    /// How many lines the map holds.
    fn lines(&self) -> usize;
}

/// The search's side of the agents' table (`crate::model::agents::SEARCH`).
pub struct SearchTable {
    /// Every format's rules.
    pub rules: &'static [&'static Rules],
    /// The rules of a file whose first line that parses as a JSON object is `line`
    /// (read as `head`); `None`: a format the prefilter does not know.
    pub detect: fn(&[u8], &LineHead) -> Option<&'static Rules>,
    /// The rules of the file at `path` when its name and what the search has read of
    /// it already say them, before its first lines are read; `None`: ask `detect`.
    pub known: fn(&Path) -> Option<&'static Rules>,
    /// Called once when a search starts (an agent that lists a home once per search).
    pub begin: fn(),
}

/// The test every format with a [`Rules::shown`] runs over its fixtures.
#[cfg(test)]
pub(crate) mod shown_check {
    use crate::model::core::session::Session;
    use std::path::PathBuf;

    /// Asserts that `shown` keeps the line of every entry of the session of each of
    /// `files` (its other files' entries too); returns how many entries that was and
    /// how many lines of `files` `shown` drops, for the caller to check that it drops
    /// what it is meant to.
    pub fn every_entry_shown(files: &[PathBuf], shown: fn(&[u8]) -> bool) -> (usize, usize) {
        let (mut nodes, mut dropped) = (0, 0);
        for f in files {
            if let Ok(s) = Session::open(f) {
                for (i, e) in s.entries().iter().enumerate() {
                    if e.is_node() {
                        let raw = s.entry_bytes(i as u32).unwrap();
                        assert!(
                            shown(&raw),
                            "{}:{}: an entry not shown",
                            f.display(),
                            e.line
                        );
                        nodes += 1;
                    }
                }
            }
            dropped += std::fs::read(f)
                .unwrap()
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty() && !shown(l))
                .count();
        }
        (nodes, dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::openers;

    #[test]
    fn openers_counts_as_a_plain_count_does() {
        let naive = |l: &[u8]| l.iter().filter(|&&b| b == b'[' || b == b'{').count();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for len in (0..2000).step_by(7).chain([255, 256, 510, 511, 4096]) {
            let line: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    // Mostly openers, so that a run's byte counter nears its bound.
                    let bytes = b"[{{[a]}\"\xff";
                    bytes[(seed >> 33) as usize % bytes.len()]
                })
                .collect();
            assert_eq!(openers(&line), naive(&line), "length {len}");
        }
        assert_eq!(openers(&[b'['; 1000]), 1000);
        assert_eq!(openers(b""), 0);
    }
}
