//! A thread opened from a `.jsonl.zst` page (CODEX-FORMAT §8): the agents' table
//! tells it by its name and decompressed first line, and the thread reads as from the
//! plain page.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::files;
use crate::model::core::format::Format;
use crate::model::core::session::{LoadError, Session, Severity};

const QA: &str = "01a233fc-f62c-79e0-b2f3-257e7f73df38";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex")
}

fn page(set: &str, ext: &str) -> PathBuf {
    fixtures().join(format!(
        "{set}/codex-home/sessions/2026/12/01/rollout-2026-12-01T23-42-25-{QA}.{ext}"
    ))
}

/// `own-zst` in a temporary folder (its thread `QA` has only a `.jsonl.zst` page).
fn copy() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let to = d.path().join("codex-home/sessions/2026/12/01");
    std::fs::create_dir_all(&to).unwrap();
    let from = fixtures().join("own-zst/codex-home/sessions/2026/12/01");
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
    let zst = to.join(page("own-zst", "jsonl.zst").file_name().unwrap());
    (d, zst)
}

type Seen = Vec<(String, Vec<u8>, String, Vec<Value>)>;

fn everything(s: &Session) -> Seen {
    let mut v: Seen = (0..s.entries().len() as u32)
        .map(|i| {
            (
                s.id_string(i),
                s.entry_bytes(i).unwrap(),
                s.render(i).unwrap().0,
                s.context_messages(i).unwrap(),
            )
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The compressed page opens as its thread, entry for entry as the plain page does,
/// and nothing of its compressed bytes is reported as a damaged line.
#[test]
fn a_thread_whose_only_page_is_compressed_opens() {
    let zst = page("own-zst", "jsonl.zst");
    let plain = page("own", "jsonl");
    let z = Session::open(&zst).unwrap();
    let p = Session::open(&plain).unwrap();
    assert_eq!(z.format(), Format::Codex);
    assert_eq!(z.entries().len(), 9);
    assert_eq!(everything(&z), everything(&p));
    assert_eq!(z.leaf().map(|l| z.id_string(l)), Some(format!("{QA}:32")));
    assert_eq!(z.name(), p.name());
    // `session.json` names the page as it is.
    let j = String::from_utf8(z.session_json().unwrap()).unwrap();
    assert!(j.contains(&format!("{QA}.jsonl.zst")), "{j}");
    let warnings: Vec<_> = z
        .problems()
        .iter()
        .filter(|p| p.severity != Severity::Note)
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
}

/// When Codex makes the compressed page plain before appending (§8), the session
/// opened from the compressed name follows the plain page: the same entries, then
/// what Codex appends.
#[test]
fn the_compressed_page_made_plain_and_appended_to_is_followed() {
    let (_d, zst) = copy();
    let mut s = Session::open(&zst).unwrap();
    let before = everything(&s);
    let plain = zst.with_extension("");
    let mut bytes = files::read_page(&zst).unwrap();
    std::fs::write(&plain, &bytes).unwrap();
    std::fs::remove_file(&zst).unwrap();
    assert!(!s.needs_reload().unwrap());
    s.refresh().unwrap();
    assert_eq!(everything(&s), before);
    bytes.extend_from_slice(
        br#"{"timestamp":"2026-12-02T00:00:00.000Z","ordinal":36,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"later"}]}}
"#,
    );
    std::fs::write(&plain, &bytes).unwrap();
    s.refresh().unwrap();
    let i = s.find(&format!("{QA}:36")).expect("the appended line");
    assert_eq!(s.leaf(), Some(i));
    assert!(s.render(i).unwrap().0.contains("later"));
    // Nothing moves any more: no endless refresh.
    let c = s.refresh().unwrap();
    assert!(c.new_entries.is_empty());
    assert_eq!(everything(&Session::open(&plain).unwrap()), everything(&s));
}

/// A `.zst` that is no zstd stream, or whose first line is no Codex `session_meta`,
/// is refused as no session (never a panic).
#[test]
fn a_zst_of_something_else_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let junk = d
        .path()
        .join(format!("rollout-2026-12-01T23-42-25-{QA}.jsonl.zst"));
    std::fs::write(&junk, b"\x28\xb5\x2f\xfd not really zstd\n").unwrap();
    assert!(matches!(
        Session::open(&junk),
        Err(LoadError::NotASession { .. })
    ));
    // A real zstd stream of lines of another agent.
    let other = d
        .path()
        .join(format!("rollout-2026-12-01T23-42-26-{QA}.jsonl.zst"));
    let line = b"{\"type\":\"session\",\"version\":3,\"id\":\"x\",\"timestamp\":\"2026-12-01T00:00:00.000Z\",\"cwd\":\"/\"}\n";
    std::fs::write(
        &other,
        ruzstd::encoding::compress_to_vec(&line[..], ruzstd::encoding::CompressionLevel::Fastest),
    )
    .unwrap();
    assert!(Session::open(&other).is_err());
}
