//! The filesystem view, driven in-process (no mount): names, listings, contents,
//! symlinks and writes over real Pi sessions.

use sessionfs::view::{Attr, FileKind, NO_HANDLE, OpenMode, Options, ROOT_INO, SessionView};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sessions")
        .join(name)
}

fn copy_fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::copy(fixture(name), &p).unwrap();
    (dir, p)
}

fn view(p: &Path) -> SessionView {
    SessionView::open(p, Options::new("/mnt/s")).unwrap()
}

fn names(v: &SessionView, ino: u64) -> Vec<String> {
    let mut out = Vec::new();
    let mut off = 0;
    loop {
        let page = v.readdir(ino, off).unwrap();
        if page.is_empty() {
            break;
        }
        for (next, d) in page {
            out.push(d.name.to_string_lossy().into_owned());
            off = next;
        }
    }
    out
}

fn walk(v: &SessionView, path: &str) -> Attr {
    let mut a = v.getattr(ROOT_INO).unwrap();
    for c in path.split('/').filter(|c| !c.is_empty()) {
        a = v
            .lookup(a.ino, OsStr::new(c))
            .unwrap_or_else(|e| panic!("{path}: {c}: {e:?}"));
    }
    a
}

fn read_all(v: &SessionView, ino: u64) -> Vec<u8> {
    let o = v.open_file(ino, false, false).unwrap();
    let mut out = Vec::new();
    loop {
        let chunk = v.read(ino, o.fh, out.len() as u64, 65536).unwrap();
        if chunk.is_empty() {
            break;
        }
        out.extend(chunk);
    }
    v.release(ino, o.fh).unwrap();
    out
}

#[test]
fn root_lists_fixed_files_then_roots() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let n = names(&v, ROOT_INO);
    assert_eq!(
        &n[..12],
        [
            ".",
            "..",
            "session.json",
            "name",
            "tree",
            "cost",
            "cost.json",
            "reply",
            "leaf",
            "branches",
            "labels",
            ".id"
        ]
    );
    let roots = v.with_session(|s| {
        s.roots()
            .iter()
            .map(|&r| s.id_string(r))
            .collect::<Vec<_>>()
    });
    assert_eq!(&n[12..], &roots[..]);
}

#[test]
fn every_entry_is_reachable_nested_and_flat_with_exact_sizes() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let paths: Vec<(String, String, String)> = v.with_session(|s| {
        (0..s.entries().len() as u32)
            .filter(|&i| s.entry(i).is_node())
            .map(|i| {
                let path: Vec<String> = s.path_to(i).iter().map(|&n| s.id_string(n)).collect();
                (path.join("/"), s.id_string(i), s.kind_name(i).to_string())
            })
            .collect()
    });
    for (path, id, kind) in paths {
        let dir = walk(&v, &path);
        assert_eq!(dir.kind, FileKind::Dir);
        let listing = names(&v, dir.ino);
        for f in [
            kind.as_str(),
            "reply",
            "entry.json",
            "context",
            "context.json",
        ] {
            assert!(
                listing.iter().any(|n| n == f),
                "{path}: {f} missing in {listing:?}"
            );
        }
        let k = v.lookup(dir.ino, OsStr::new(&kind)).unwrap();
        let content = read_all(&v, k.ino);
        assert_eq!(content.len() as u64, k.size, "{path}/{kind}");
        assert!(content.ends_with(b"\n"));
        let flat = walk(&v, &format!(".id/{id}"));
        for f in ["entry.json", "context", "context.json"] {
            let a = v.lookup(flat.ino, OsStr::new(f)).unwrap();
            assert_eq!(a.kind, FileKind::File);
            assert_eq!(read_all(&v, a.ino).len() as u64, a.size, ".id/{id}/{f}");
            let l = v.lookup(dir.ino, OsStr::new(f)).unwrap();
            assert_eq!(l.kind, FileKind::Symlink);
            let target = String::from_utf8(v.readlink(l.ino).unwrap()).unwrap();
            assert_eq!(l.size, target.len() as u64);
            let depth = path.split('/').count();
            assert_eq!(target, format!("{}.id/{id}/{f}", "../".repeat(depth)));
        }
    }
}

#[test]
fn entry_json_is_the_line_byte_for_byte() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let text = std::fs::read_to_string(&p).unwrap();
    let line3 = text.lines().nth(3).unwrap();
    let id: String = serde_json::from_str::<serde_json::Value>(line3).unwrap()["id"]
        .as_str()
        .unwrap()
        .into();
    let a = walk(&v, &format!(".id/{id}/entry.json"));
    assert_eq!(read_all(&v, a.ino), format!("{line3}\n").into_bytes());
    let h = walk(&v, "session.json");
    assert_eq!(
        read_all(&v, h.ino),
        format!("{}\n", text.lines().next().unwrap()).into_bytes()
    );
}

#[test]
fn id_dir_lists_nothing_but_answers_lookups() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let id = walk(&v, ".id");
    assert_eq!(names(&v, id.ino), [".", ".."]);
    let leaf = v.with_session(|s| s.id_string(s.leaf().unwrap()));
    let l = walk(&v, "leaf");
    assert_eq!(
        v.readlink(l.ino).unwrap(),
        format!(".id/{leaf}").into_bytes()
    );
    assert!(v.lookup(id.ino, OsStr::new("nope")).is_err());
}

#[test]
fn branches_are_the_leaves_and_labels_resolve() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let b = walk(&v, "branches");
    let (leaves, labels) = v.with_session(|s| {
        (
            s.leaves()
                .iter()
                .map(|&l| s.id_string(l))
                .collect::<Vec<_>>(),
            s.labels()
                .iter()
                .map(|(l, t)| (l.to_string(), s.id_string(*t)))
                .collect::<Vec<_>>(),
        )
    });
    assert_eq!(&names(&v, b.ino)[2..], &leaves[..]);
    let ld = walk(&v, "labels");
    assert_eq!(names(&v, ld.ino).len() - 2, labels.len());
    for (l, t) in labels {
        let a = v.lookup(ld.ino, OsStr::new(&l)).unwrap();
        assert_eq!(
            v.readlink(a.ino).unwrap(),
            format!("../.id/{t}").into_bytes()
        );
    }
}

fn write_through(v: &SessionView, ino: u64, data: &[u8]) -> Result<(), i32> {
    let o = v.open_file(ino, true, true).map_err(|e| e.errno())?;
    v.truncate(ino, Some(o.fh), 0).map_err(|e| e.errno())?;
    for (i, chunk) in data.chunks(4096).enumerate() {
        v.write(ino, o.fh, (i * 4096) as u64, chunk)
            .map_err(|e| e.errno())?;
    }
    v.flush(ino, o.fh).map_err(|e| e.errno())?;
    v.release(ino, o.fh).map_err(|e| e.errno())
}

#[test]
fn reply_appends_one_child_and_it_is_visible_at_once() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let before = std::fs::read(&p).unwrap();
    let leaf = v.with_session(|s| s.id_string(s.leaf().unwrap()));
    let dir = walk(&v, &format!(".id/{leaf}"));
    let reply = v.lookup(dir.ino, OsStr::new("reply")).unwrap();
    let msg = "x".repeat(40_000);
    write_through(&v, reply.ino, format!("{msg}\n").as_bytes()).unwrap();
    let after = std::fs::read(&p).unwrap();
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "existing bytes unchanged"
    );
    let new_line = std::str::from_utf8(&after[before.len()..]).unwrap();
    assert_eq!(new_line.matches('\n').count(), 1);
    let e: serde_json::Value = serde_json::from_str(new_line.trim_end()).unwrap();
    assert_eq!(e["parentId"], leaf.as_str());
    assert_eq!(e["message"]["content"][0]["text"], msg.as_str());
    let keys: Vec<&str> = e.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(keys, ["type", "id", "parentId", "timestamp", "message"]);
    let new_id = e["id"].as_str().unwrap();
    assert!(names(&v, dir.ino).iter().any(|n| n == new_id));
}

#[test]
fn bad_writes_are_refused_in_write_and_append_nothing() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let before = std::fs::read(&p).unwrap();
    let reply = walk(&v, "reply");
    assert_eq!(
        write_through(&v, reply.ino, b"bad \xff utf8"),
        Err(libc::EILSEQ)
    );
    let small = SessionView::open(
        &p,
        Options {
            max_reply: 10,
            ..Options::new("/m")
        },
    )
    .unwrap();
    let r2 = walk(&small, "reply");
    assert_eq!(
        write_through(&small, r2.ino, b"more than ten bytes"),
        Err(libc::EFBIG)
    );
    let ro = SessionView::open(
        &p,
        Options {
            read_only: true,
            ..Options::new("/m")
        },
    )
    .unwrap();
    // A read-only view has no `reply` files, and its `name` refuses writes.
    assert_eq!(
        ro.lookup(ROOT_INO, OsStr::new("reply"))
            .unwrap_err()
            .errno(),
        libc::ENOENT
    );
    let n3 = walk(&ro, "name");
    assert_eq!(write_through(&ro, n3.ino, b"hi"), Err(libc::EROFS));
    let tree = walk(&v, "tree");
    assert_eq!(
        v.open_file(tree.ino, true, false).unwrap_err().errno(),
        libc::EACCES
    );
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn name_and_labels_are_written_as_entries() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let name = walk(&v, "name");
    write_through(&v, name.ino, b"  my\r\nsession \n").unwrap();
    assert_eq!(read_all(&v, walk(&v, "name").ino), b"my session\n");
    let target = v.with_session(|s| s.id_string(s.roots()[0]));
    let labels = walk(&v, "labels");
    v.symlink(
        labels.ino,
        OsStr::new("start"),
        Path::new(&format!("/mnt/s/{target}/")),
    )
    .unwrap();
    let l = v.lookup(labels.ino, OsStr::new("start")).unwrap();
    assert_eq!(
        v.readlink(l.ino).unwrap(),
        format!("../.id/{target}").into_bytes()
    );
    assert_eq!(
        v.symlink(labels.ino, OsStr::new("start"), Path::new(&target))
            .unwrap_err()
            .errno(),
        libc::EEXIST
    );
    v.unlink(labels.ino, OsStr::new("start")).unwrap();
    assert!(v.lookup(labels.ino, OsStr::new("start")).is_err());
    assert_eq!(
        v.unlink(labels.ino, OsStr::new("start"))
            .unwrap_err()
            .errno(),
        libc::ENOENT
    );
}

#[test]
fn external_appends_show_after_refresh() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let leaf = v.with_session(|s| s.id_string(s.leaf().unwrap()));
    let line = format!(
        "{{\"type\":\"message\",\"id\":\"0badcafe\",\"parentId\":\"{leaf}\",\"timestamp\":\"2030-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}}}\n"
    );
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(&p)
        .unwrap()
        .write_all(line.as_bytes())
        .unwrap();
    v.refresh().unwrap();
    let d = walk(&v, &format!(".id/{leaf}/0badcafe"));
    assert_eq!(d.kind, FileKind::Symlink);
    assert_eq!(v.readlink(walk(&v, "leaf").ino).unwrap(), b".id/0badcafe");
}

/// A file is rendered by the first read through its descriptor, not at the open; a
/// descriptor opened before its session file was replaced must then read `ESTALE`,
/// never the text of whatever entry has the same place in the new file.
#[test]
fn a_file_opened_before_a_reload_reads_stale_not_another_entry() {
    let (d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let leaf = v.with_session(|s| s.id_string(s.leaf().unwrap()));
    let kind = walk(&v, &format!(".id/{leaf}/assistant"));
    let opened = v.open_file(kind.ino, false, false).unwrap();
    let read_first = v.open_file(kind.ino, false, false).unwrap();
    let text = v.read(kind.ino, read_first.fh, 0, 1 << 20).unwrap();
    assert!(!text.is_empty());
    // Another session takes the file's place (a new inode): the view reloads it.
    let other = d.path().join("other.jsonl");
    std::fs::copy(fixture("mixed.jsonl"), &other).unwrap();
    std::fs::rename(&other, &p).unwrap();
    v.refresh().unwrap();
    assert_eq!(
        v.read(kind.ino, opened.fh, 0, 1 << 20).unwrap_err().errno(),
        libc::ESTALE
    );
    // What was read before the reload is what the descriptor goes on reading.
    assert_eq!(v.read(kind.ino, read_first.fh, 0, 1 << 20).unwrap(), text);
    v.release(kind.ino, opened.fh).unwrap();
    v.release(kind.ino, read_first.fh).unwrap();
}

#[test]
fn v1_sessions_are_read_only_with_stable_ids() {
    let (_d, p) = copy_fixture("legacy-v1.jsonl");
    let a = view(&p);
    let b = view(&p);
    let ids = |v: &SessionView| {
        v.with_session(|s| {
            (0..s.entries().len() as u32)
                .map(|i| s.id_string(i))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(ids(&a), ids(&b));
    assert_eq!(
        write_through(&a, walk(&a, "reply").ino, b"x"),
        Err(libc::EACCES)
    );
}

#[test]
fn writers_cannot_exhaust_memory() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let reply = walk(&v, "reply");
    // Open writers are capped.
    let mut fhs = Vec::new();
    let err = loop {
        match v.open_file(reply.ino, true, false) {
            Ok(o) => fhs.push(o.fh),
            Err(e) => break e,
        }
        assert!(fhs.len() <= 1024, "no cap on open writers");
    };
    assert_eq!(err.errno(), libc::EMFILE);
    // Unwritten text is capped across writers: 17 writers of 16 MiB pass 256 MiB.
    let chunk = vec![b'x'; 1 << 20];
    let mut quota_hit = false;
    'outer: for &fh in fhs.iter().take(17) {
        for i in 0..16u64 {
            match v.write(reply.ino, fh, i << 20, &chunk) {
                Ok(_) => {}
                Err(e) => {
                    assert_eq!(e.errno(), libc::EDQUOT);
                    quota_hit = true;
                    break 'outer;
                }
            }
        }
    }
    assert!(quota_hit, "no cap on pending bytes");
    let before = std::fs::read(&p).unwrap();
    for fh in fhs {
        // Truncating gives the memory back; then nothing is appended on release.
        v.truncate(reply.ino, Some(fh), 0).unwrap();
        v.release(reply.ino, fh).unwrap();
    }
    assert_eq!(std::fs::read(&p).unwrap(), before);
    // With everything released, a new writer works again.
    write_through(&v, reply.ino, b"still works\n").unwrap();
    assert!(std::fs::read(&p).unwrap().len() > before.len());
}

#[test]
fn only_the_openers_close_appends_and_later_text_is_a_new_entry() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let reply = walk(&v, "reply");
    let me = std::process::id();
    let before = std::fs::read(&p).unwrap().len();
    let o = v
        .open_file_as(reply.ino, mode(true, true, false), Some(me))
        .unwrap();
    v.write(reply.ino, o.fh, 0, b"part one\n").unwrap();
    // A child that inherited the descriptor exits: its flush appends nothing.
    v.flush_from(reply.ino, o.fh, Some(1)).unwrap();
    assert_eq!(std::fs::read(&p).unwrap().len(), before);
    v.write(reply.ino, o.fh, 9, b"part two\n").unwrap();
    v.flush_from(reply.ino, o.fh, Some(me)).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["message"]["content"][0]["text"], "part one\npart two");
    // Written after that append: a new entry, appended at the last close.
    v.write(reply.ino, o.fh, 18, b"more\n").unwrap();
    v.release(reply.ino, o.fh).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["message"]["content"][0]["text"], "more");
}

/// `tree` is drawn on its first open (its size is unknown until then), and read with
/// direct I/O: every read of a descriptor is cut from the one drawing it started with,
/// so that the kernel never serves its pages of an old drawing up to a new size. The
/// drawing is kept until a change, which forgets it (and still drops any kernel copy:
/// an inode invalidation); a descriptor reading when the change comes reads on from
/// the drawing it had.
#[test]
fn tree_is_drawn_once_until_a_change_and_each_descriptor_reads_one_drawing() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let (tx, rx) = std::sync::mpsc::channel();
    v.set_invalidation_sink(tx);
    let tree = walk(&v, "tree");
    assert_eq!(v.getattr(tree.ino).unwrap().size, 0, "not drawn yet");
    let first = v.open_file(tree.ino, false, false).unwrap();
    assert!(!first.keep_cache && first.direct_io);
    assert!(v.getattr(tree.ino).unwrap().size > 0, "drawn at open");
    v.release(tree.ino, first.fh).unwrap();
    let drawn = read_all(&v, tree.ino);
    assert_eq!(v.getattr(tree.ino).unwrap().size, drawn.len() as u64);

    let second = v.open_file(tree.ino, false, false).unwrap();
    assert!(!second.keep_cache && second.direct_io);
    let mut again = v.read(tree.ino, second.fh, 0, 100).unwrap();
    assert_eq!(again.len(), 100);

    while rx.try_recv().is_ok() {}
    let reply = walk(&v, "reply");
    write_through(&v, reply.ino, b"a new root\n").unwrap();
    let invs: Vec<_> = rx.try_iter().collect();
    assert!(
        invs.iter()
            .any(|i| matches!(i, sessionfs::view::Invalidation::Inode(n) if *n == tree.ino)),
        "the kernel's copy of tree is dropped: {invs:?}"
    );
    assert_eq!(v.getattr(tree.ino).unwrap().size, 0, "drawing forgotten");
    // The descriptor opened before the change reads on from its own drawing.
    loop {
        let chunk = v
            .read(tree.ino, second.fh, again.len() as u64, 100)
            .unwrap();
        if chunk.is_empty() {
            break;
        }
        again.extend(chunk);
    }
    v.release(tree.ino, second.fh).unwrap();
    assert_eq!(again, drawn);
    let redrawn = String::from_utf8(read_all(&v, tree.ino)).unwrap();
    assert!(redrawn.contains("user: a new root"), "{redrawn}");
}

/// Reads everything with no handle, as the kernel does on a mount that answers no
/// `open`, in pieces of `chunk` bytes.
fn read_unopened(v: &SessionView, ino: u64, chunk: u32) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let piece = v.read(ino, NO_HANDLE, out.len() as u64, chunk).unwrap();
        if piece.is_empty() {
            return out;
        }
        out.extend(piece);
    }
}

#[test]
fn a_read_only_view_has_no_reply_files_and_reads_without_opens() {
    let (_d, p) = copy_fixture("small.jsonl");
    let rw = view(&p);
    let ro = SessionView::open(
        &p,
        Options {
            read_only: true,
            ..Options::new("/m")
        },
    )
    .unwrap();
    assert!(names(&rw, ROOT_INO).contains(&"reply".to_string()));
    assert!(!names(&ro, ROOT_INO).contains(&"reply".to_string()));
    let leaf = ro.with_session(|s| s.id_string(s.leaf().unwrap()));
    for dir in [
        format!(".id/{leaf}"),
        ro.with_session(|s| s.id_string(s.roots()[0])),
    ] {
        let d = walk(&ro, &dir);
        assert!(!names(&ro, d.ino).contains(&"reply".to_string()), "{dir}");
        assert!(ro.lookup(d.ino, OsStr::new("reply")).is_err(), "{dir}");
        assert!(names(&rw, walk(&rw, &dir).ino).contains(&"reply".to_string()));
    }
    // Every file reads the same with and without a handle (the numbers are the same
    // in both views), in small pieces too.
    for path in [
        "session.json".to_string(),
        "name".to_string(),
        format!(".id/{leaf}/context"),
        format!(".id/{leaf}/context.json"),
        format!(".id/{leaf}/entry.json"),
    ] {
        let ino = walk(&ro, &path).ino;
        assert_eq!(walk(&rw, &path).ino, ino);
        assert_eq!(read_unopened(&ro, ino, 1000), read_all(&rw, ino), "{path}");
    }
    // `tree`: its size is 0 until the read that asks for it draws it.
    let tree = walk(&ro, "tree");
    assert_eq!(tree.size, 0);
    assert_eq!(ro.getattr(tree.ino).unwrap().size, 0);
    let drawn = ro.getattr_reading(tree.ino).unwrap().size;
    let text = read_unopened(&ro, tree.ino, 4096);
    assert_eq!(text.len() as u64, drawn);
    assert_eq!(text, read_all(&rw, walk(&rw, "tree").ino));
    assert_eq!(ro.getattr(tree.ino).unwrap().size, drawn);
}

// ---------------------------------------------------------------------------------
// Writes that start from the current name, append mode, truncation, and renames in
// labels/.

fn mode(write: bool, truncate: bool, append: bool) -> OpenMode {
    OpenMode {
        write,
        truncate,
        append,
    }
}

/// The file's lines after `before`, parsed.
fn new_lines(p: &Path, before: &[u8]) -> Vec<serde_json::Value> {
    let after = std::fs::read(p).unwrap();
    assert!(after.starts_with(before), "earlier bytes changed");
    assert!(!after.contains(&0), "a NUL byte reached the session");
    std::str::from_utf8(&after[before.len()..])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Opens `ino` with `m`, writes each `(offset, bytes)`, closes; the first error.
fn session(v: &SessionView, ino: u64, m: OpenMode, writes: &[(u64, &[u8])]) -> Result<(), i32> {
    let o = v.open_file_as(ino, m, None).map_err(|e| e.errno())?;
    let mut r = Ok(());
    for (off, data) in writes {
        if let Err(e) = v.write(ino, o.fh, *off, data) {
            r = Err(e.errno());
            break;
        }
    }
    let closed = v.release(ino, o.fh).map_err(|e| e.errno());
    r.and(closed)
}

#[test]
fn appending_to_name_continues_the_name_without_padding() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let name = walk(&v, "name");
    assert_eq!(read_all(&v, name.ino), b"Oracle session 1\n");
    let before = std::fs::read(&p).unwrap();
    // `echo " (draft)" >> name`: the kernel writes at the size it knows (17).
    session(
        &v,
        name.ino,
        mode(true, false, true),
        &[(17, b" (draft)\n")],
    )
    .unwrap();
    let lines = new_lines(&p, &before);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["type"], "session_info");
    assert_eq!(lines[0]["name"], "Oracle session 1 (draft)");
    assert_eq!(read_all(&v, name.ino), b"Oracle session 1 (draft)\n");
    // The offset the kernel gives an O_APPEND write does not matter: it may count
    // from a size it saw before the name changed.
    let before = std::fs::read(&p).unwrap();
    session(
        &v,
        name.ino,
        mode(true, false, true),
        &[(5, b"!"), (400, b"?")],
    )
    .unwrap();
    let lines = new_lines(&p, &before);
    assert_eq!(lines[0]["name"], "Oracle session 1 (draft)!?");
}

#[test]
fn a_write_past_the_end_fails_and_appends_nothing() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let before = std::fs::read(&p).unwrap();
    for file in ["name", "reply"] {
        let ino = walk(&v, file).ino;
        // O_TRUNC, then a write at offset 3 of an empty file: a gap of 3 bytes.
        assert_eq!(
            session(&v, ino, mode(true, true, false), &[(3, b"x")]),
            Err(libc::EINVAL),
            "{file}"
        );
        // Written, then a write past the end: the whole descriptor fails.
        assert_eq!(
            session(&v, ino, mode(true, true, false), &[(0, b"ab"), (5, b"c")]),
            Err(libc::EINVAL),
            "{file}"
        );
    }
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn overwriting_the_start_of_name_keeps_the_rest() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let name = walk(&v, "name");
    let before = std::fs::read(&p).unwrap();
    // Opened without O_TRUNC (`dd conv=notrunc`): as a file, the rest stays.
    session(&v, name.ino, mode(true, false, false), &[(0, b"Pythia")]).unwrap();
    assert_eq!(new_lines(&p, &before)[0]["name"], "Pythia session 1");
    // Reading through a read-write descriptor shows what it holds.
    let o = v
        .open_file_as(name.ino, mode(true, false, false), None)
        .unwrap();
    v.write(name.ino, o.fh, 17, b" and more\n").unwrap();
    assert_eq!(
        v.read(name.ino, o.fh, 0, 100).unwrap(),
        b"Pythia session 1\n and more\n"
    );
    v.release(name.ino, o.fh).unwrap();
    assert_eq!(read_all(&v, name.ino), b"Pythia session 1 and more\n");
}

#[test]
fn truncating_name_clears_it_and_truncating_reply_adds_nothing() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let name = walk(&v, "name");
    let reply = walk(&v, "reply");
    let before = std::fs::read(&p).unwrap();
    // `: > reply`: O_TRUNC, nothing written.
    session(&v, reply.ino, mode(true, true, false), &[]).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), before, ": > reply appended");
    // `: > name`: O_TRUNC, nothing written: the name is cleared, as Pi clears it.
    session(&v, name.ino, mode(true, true, false), &[]).unwrap();
    let lines = new_lines(&p, &before);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["type"], "session_info");
    assert_eq!(lines[0]["name"], "");
    assert_eq!(read_all(&v, name.ino), b"");
    // Clearing a name that is not set appends nothing; neither does writing the
    // name it already has.
    let before = std::fs::read(&p).unwrap();
    session(&v, name.ino, mode(true, true, false), &[]).unwrap();
    session(&v, name.ino, mode(true, true, false), &[(0, b"\n")]).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), before);
    session(&v, name.ino, mode(true, true, false), &[(0, b"again\n")]).unwrap();
    let before = std::fs::read(&p).unwrap();
    session(&v, name.ino, mode(true, true, false), &[(0, b"  again \n")]).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), before, "the same name again");

    // `truncate -s 0 name`: opened without O_TRUNC, then ftruncate.
    let o = v
        .open_file_as(name.ino, mode(true, false, false), None)
        .unwrap();
    v.truncate(name.ino, Some(o.fh), 0).unwrap();
    v.release(name.ino, o.fh).unwrap();
    assert_eq!(new_lines(&p, &before)[0]["name"], "");
    // Growing it would pad: refused, through a descriptor or a path.
    let o = v
        .open_file_as(name.ino, mode(true, false, false), None)
        .unwrap();
    assert_eq!(
        v.truncate(name.ino, Some(o.fh), 10).unwrap_err().errno(),
        libc::EINVAL
    );
    v.release(name.ino, o.fh).unwrap();
    assert_eq!(
        v.truncate(name.ino, None, 10).unwrap_err().errno(),
        libc::EINVAL
    );
    // truncate(2) of the path, with no descriptor to close: at once.
    session(
        &v,
        name.ino,
        mode(true, true, false),
        &[(0, b"a longer name\n")],
    )
    .unwrap();
    let before = std::fs::read(&p).unwrap();
    v.truncate(name.ino, None, 8).unwrap();
    assert_eq!(new_lines(&p, &before)[0]["name"], "a longer");
    v.truncate(name.ino, None, 0).unwrap();
    assert_eq!(new_lines(&p, &before)[1]["name"], "");
    assert_eq!(v.truncate(reply.ino, None, 0).map(|_| ()), Ok(()));
}

fn label_target(v: &SessionView, name: &str) -> Option<String> {
    let labels = walk(v, "labels");
    let l = v.lookup(labels.ino, OsStr::new(name)).ok()?;
    let t = String::from_utf8(v.readlink(l.ino).unwrap()).unwrap();
    Some(t.trim_start_matches("../.id/").to_string())
}

#[test]
fn renaming_a_label_relabels_its_entry_in_one_write() {
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let labels = walk(&v, "labels").ino;
    // small.jsonl: branch-0 on 0c1fe7d3, alt-2 on 22776346.
    assert_eq!(label_target(&v, "branch-0").as_deref(), Some("0c1fe7d3"));
    assert_eq!(label_target(&v, "alt-2").as_deref(), Some("22776346"));
    let os = OsStr::new;

    // mv labels/branch-0 labels/main: one line.
    let before = std::fs::read(&p).unwrap();
    v.rename(labels, os("branch-0"), labels, os("main"), 0)
        .unwrap();
    let lines = new_lines(&p, &before);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["targetId"], "0c1fe7d3");
    assert_eq!(lines[0]["label"], "main");
    assert_eq!(label_target(&v, "main").as_deref(), Some("0c1fe7d3"));
    assert_eq!(label_target(&v, "branch-0"), None);

    // Onto itself: nothing. A missing source: ENOENT, nothing.
    let before = std::fs::read(&p).unwrap();
    v.rename(labels, os("main"), labels, os("main"), 0).unwrap();
    let err = |r: sessionfs::view::Result<()>| r.unwrap_err().errno();
    assert_eq!(
        err(v.rename(labels, os("nope"), labels, os("x"), 0)),
        libc::ENOENT
    );
    // Out of labels/, or with flags that make no sense here: refused.
    assert_eq!(
        err(v.rename(labels, os("main"), ROOT_INO, os("x"), 0)),
        libc::EACCES
    );
    assert_eq!(
        err(v.rename(labels, os("main"), labels, os("x"), 1 << 2)),
        libc::EINVAL
    );
    // RENAME_NOREPLACE onto a label in use.
    assert_eq!(
        err(v.rename(
            labels,
            os("main"),
            labels,
            os("alt-2"),
            libc::RENAME_NOREPLACE
        )),
        libc::EEXIST
    );
    assert_eq!(std::fs::read(&p).unwrap(), before);

    // Onto a label of another entry: that entry loses it, in the same write.
    v.rename(labels, os("main"), labels, os("alt-2"), 0)
        .unwrap();
    let lines = new_lines(&p, &before);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["targetId"], "0c1fe7d3");
    assert_eq!(lines[0]["label"], "alt-2");
    assert_eq!(lines[1]["targetId"], "22776346");
    assert!(lines[1].get("label").is_none(), "{}", lines[1]);
    assert_eq!(
        lines[1]["parentId"], lines[0]["id"],
        "the second hangs under the first"
    );
    assert_ne!(lines[0]["id"], lines[1]["id"]);
    assert_eq!(label_target(&v, "alt-2").as_deref(), Some("0c1fe7d3"));
    assert_eq!(label_target(&v, "main"), None);
    let leaf = v.with_session(|s| s.id_string(s.leaf().unwrap()));
    assert_eq!(
        leaf,
        lines[1]["id"].as_str().unwrap(),
        "the last line is the leaf"
    );

    // RENAME_EXCHANGE swaps two labels.
    v.symlink(labels, os("other"), Path::new("22776346"))
        .unwrap();
    v.rename(
        labels,
        os("other"),
        labels,
        os("alt-2"),
        libc::RENAME_EXCHANGE,
    )
    .unwrap();
    assert_eq!(label_target(&v, "alt-2").as_deref(), Some("22776346"));
    assert_eq!(label_target(&v, "other").as_deref(), Some("0c1fe7d3"));
}

#[test]
fn ln_sfn_relabels_through_a_temporary_name() {
    // GNU `ln -sfn TARGET labels/L` with L in use: symlink(TMP), rename(TMP, L).
    let (_d, p) = copy_fixture("small.jsonl");
    let v = view(&p);
    let labels = walk(&v, "labels").ino;
    let os = OsStr::new;
    // alt-2 is on 22776346; move it to 0c1fe7d3 (which carries branch-0).
    v.symlink(labels, os("CuAbC123"), Path::new("../.id/0c1fe7d3"))
        .unwrap();
    v.rename(labels, os("CuAbC123"), labels, os("alt-2"), 0)
        .unwrap();
    assert_eq!(label_target(&v, "alt-2").as_deref(), Some("0c1fe7d3"));
    assert_eq!(label_target(&v, "CuAbC123"), None);
    // One label per entry: branch-0 went when the entry took the new label.
    assert_eq!(label_target(&v, "branch-0"), None);
    // Relabelling an entry with the label it already has, the same way.
    v.symlink(labels, os("CuXyZ789"), Path::new("0c1fe7d3"))
        .unwrap();
    v.rename(labels, os("CuXyZ789"), labels, os("alt-2"), 0)
        .unwrap();
    assert_eq!(label_target(&v, "alt-2").as_deref(), Some("0c1fe7d3"));
    let names = names(&v, labels);
    assert!(names.contains(&"alt-2".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("Cu")), "{names:?}");
}

#[test]
fn a_label_on_two_entries_names_the_one_set_last() {
    let (_d, p) = copy_fixture("small.jsonl");
    let text = std::fs::read_to_string(&p).unwrap();
    let leaf = text.lines().last().unwrap();
    let leaf: serde_json::Value = serde_json::from_str(leaf).unwrap();
    let leaf = leaf["id"].as_str().unwrap();
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    // Pi allows the same label on two entries; the later line wins the name.
    for (id, target) in [("aaaa0001", "22776346"), ("aaaa0002", "0c1fe7d3")] {
        writeln!(
            f,
            r#"{{"type":"label","id":"{id}","parentId":"{leaf}","timestamp":"2026-01-05T10:00:00.000Z","targetId":"{target}","label":"twice"}}"#
        )
        .unwrap();
    }
    drop(f);
    let v = view(&p);
    assert_eq!(label_target(&v, "twice").as_deref(), Some("0c1fe7d3"));
    // rm clears it on both.
    let labels = walk(&v, "labels").ino;
    let before = std::fs::read(&p).unwrap();
    v.unlink(labels, OsStr::new("twice")).unwrap();
    assert_eq!(new_lines(&p, &before).len(), 2);
    assert_eq!(label_target(&v, "twice"), None);
}
