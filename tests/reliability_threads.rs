//! Requests served by several threads at once, through real mounts.
//!
//! * A session being indexed holds up no request for another session: while a large
//!   session is entered for the first time, files of another session, entered before,
//!   are read whole in the meantime (checked by the order of events, not by timings).
//! * Readers, writers, another program appending, files replaced under the mount (the
//!   session reloaded), and a memory bound that keeps dropping and reloading sessions,
//!   all at once on a sessions mount, and the same on a single-session mount: nothing
//!   hangs (every command has a deadline), every acknowledged reply is in its file once,
//!   and the mount still answers afterwards.

mod common;

use common::*;
use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, mpsc};
use std::time::{Duration, Instant};

const P: &str = "--home-dev-proj--";

/// A session of `n` short user messages in a shallow tree (entry i under entry
/// (i-1)/2), ids `10000000` upward: large enough that indexing it takes a while.
fn write_large_session(path: &Path, n: u32) {
    let mut f = std::io::BufWriter::new(fs::File::create(path).unwrap());
    writeln!(
        f,
        r#"{{"type":"session","version":3,"id":"0193aaaa-0000-7000-8000-000000000001","timestamp":"2026-01-05T09:00:00.000Z","cwd":"/tmp"}}"#
    )
    .unwrap();
    for i in 0..n {
        let parent = match i {
            0 => "null".to_string(),
            _ => format!("\"{:08x}\"", 0x1000_0000 + (i - 1) / 2),
        };
        writeln!(
            f,
            r#"{{"type":"message","id":"{:08x}","parentId":{parent},"timestamp":"2026-01-05T09:00:00.000Z","message":{{"role":"user","content":[{{"type":"text","text":"entry {i} of a large session"}}],"timestamp":1767603600000}}}}"#,
            0x1000_0000 + i
        )
        .unwrap();
    }
    f.flush().unwrap();
}

/// The ids of the entries of a session file.
fn ids_in(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] != "session")
        .filter_map(|v| v["id"].as_str().map(str::to_owned))
        .collect()
}

/// Runs `f` on a thread of its own and returns its result; fails the test if it does not
/// finish within `limit` (dropping the mounts then unmounts them, which ends the hang).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the thread failed (see above)"),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("did not finish within {limit:?}: a request hangs")
        }
    }
}

#[test]
fn a_session_being_indexed_holds_up_no_other_session() {
    let data = tempdir();
    let root = data.path().join("sessions");
    fs::create_dir_all(root.join(P)).unwrap();
    write_large_session(&root.join(P).join("big.jsonl"), 50_000);
    let small: Vec<String> = (0..12).map(|k| format!("small{k}")).collect();
    for s in &small {
        fs::copy(
            fixture("small.jsonl"),
            root.join(P).join(format!("{s}.jsonl")),
        )
        .unwrap();
    }
    let ids = ids_in(&fixture("small.jsonl"));
    let mut tries = Vec::new();
    // Each try enters `big` for the first time (a fresh mount), and meanwhile reads files
    // of the `small` sessions, entered before, that the kernel has not seen yet (then
    // again, each read an OPEN the mount answers, until `big` answers). One try
    // in which a read that began after `big` was asked for (half-way through its wait,
    // to be sure) also ended before `big` answered is enough; a mount that serves one
    // request at a time can never do it.
    for _ in 0..5 {
        let m = Mount::sessions_dir(tempdir(), Some(&root), &[], &[]);
        let mut files = Vec::new();
        for s in &small {
            let dir = m.path(&format!("{P}/{s}"));
            assert!(fs::read_dir(&dir).unwrap().count() > 5);
            for id in &ids {
                for f in ["entry.json", "context", "context.json"] {
                    files.push(dir.join(format!(".id/{id}/{f}")));
                }
            }
        }
        let big = m.path(&format!("{P}/big"));
        let (reads, big_start, big_end) = within(DEADLINE * 2, move || {
            let done = Arc::new(AtomicBool::new(false));
            let done2 = done.clone();
            let lister = std::thread::spawn(move || {
                let t0 = Instant::now();
                let n = fs::read_dir(&big).unwrap().count();
                let t1 = Instant::now();
                done2.store(true, Ordering::SeqCst);
                (n, t0, t1)
            });
            let mut reads = Vec::new();
            // Once every file was read, read them again (each read still opens the file
            // through the mount) until `big` answers: on a loaded machine `big` may take
            // far longer than one pass over the files.
            for f in files.iter().cycle() {
                if done.load(Ordering::SeqCst) {
                    break;
                }
                let t0 = Instant::now();
                fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                reads.push((t0, Instant::now()));
            }
            let (n, t0, t1) = lister.join().unwrap();
            assert!(n > 5, "big lists {n} names");
            (reads, t0, t1)
        });
        let mid = big_start + (big_end - big_start) / 2;
        let during = reads.iter().filter(|&&(s, e)| s >= mid && e <= big_end);
        if during.count() > 0 {
            return;
        }
        let last = reads
            .last()
            .map(|&(_, e)| e.saturating_duration_since(big_start));
        tries.push(format!(
            "big took {:?}; {} reads, the last one ended {last:?} after big was asked for",
            big_end - big_start,
            reads.len()
        ));
    }
    panic!(
        "no read in another session finished while big was indexed:\n{}",
        tries.join("\n")
    );
}

/// What the writer threads got acknowledged: (session file, text).
type Acks = Arc<Mutex<Vec<(PathBuf, String)>>>;

/// Appends a user message under `parent` to `file`, as another program would.
fn append_external(file: &Path, id: &str, parent: &str, text: &str) {
    let line = format!(
        r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-01-05T10:00:00.000Z","message":{{"role":"user","content":[{{"type":"text","text":"{text}"}}],"timestamp":1767607200000}}}}"#
    );
    let mut f = fs::OpenOptions::new().append(true).open(file).unwrap();
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
}

/// Replaces `file` by a copy of itself (a new inode): the mount reloads it.
fn replace_by_copy(file: &Path) {
    let tmp = file.with_extension("tmp");
    fs::copy(file, &tmp).unwrap();
    fs::rename(&tmp, file).unwrap();
}

/// Everything at once for `rounds` rounds: `readers` loop over `reads` (shell commands
/// run in `mnt`, whose failures, such as ESTALE after a reload, are tolerated) until the
/// writers are done; each writer replies `rounds` times into each of `replies` (paths in
/// the mount, paired with the file they append to); another thread appends to each of
/// `appended` and replaces each of `replaced` under the mount, `rounds` times. A file is
/// never replaced while a reply is being written (a reply appended to the old file
/// between the copy and the rename would be lost by the test, not by the mount).
#[allow(clippy::too_many_arguments)]
fn all_at_once(
    mnt: &Path,
    reads: &[String],
    readers: usize,
    replies: &[(String, PathBuf)],
    appended: &[(PathBuf, &'static str)],
    replaced: &[PathBuf],
    rounds: usize,
) -> Vec<(PathBuf, String)> {
    let stop = Arc::new(AtomicBool::new(false));
    let acks: Acks = Arc::new(Mutex::new(Vec::new()));
    let gate = Arc::new(RwLock::new(()));
    let mut threads = Vec::new();
    for r in 0..readers {
        let (mnt, stop) = (mnt.to_path_buf(), stop.clone());
        let reads = reads.to_vec();
        threads.push(std::thread::spawn(move || {
            let mut n = r;
            while !stop.load(Ordering::SeqCst) {
                // Under the harness's deadline: a hung request fails the test.
                sh(&reads[n % reads.len()], &mnt);
                n += 1;
            }
        }));
    }
    let mut writers = Vec::new();
    for (w, (reply, file)) in replies.iter().enumerate() {
        let (mnt, acks, gate) = (mnt.to_path_buf(), acks.clone(), gate.clone());
        let (reply, file) = (reply.clone(), file.clone());
        writers.push(std::thread::spawn(move || {
            for i in 0..rounds {
                let text = format!("threaded-reply-{w}-{i}");
                let _writing = gate.read().unwrap();
                if sh(&format!("echo {text} > '{reply}'"), &mnt)
                    .status
                    .success()
                {
                    acks.lock().unwrap().push((file.clone(), text));
                }
            }
        }));
    }
    let (appended, replaced) = (appended.to_vec(), replaced.to_vec());
    writers.push(std::thread::spawn(move || {
        for i in 0..rounds {
            let _no_writes = gate.write().unwrap();
            for (k, (file, parent)) in appended.iter().enumerate() {
                let id = format!("e{:03x}{k:04x}", i);
                append_external(file, &id, parent, &format!("external {i}"));
            }
            for f in &replaced {
                replace_by_copy(f);
            }
            drop(_no_writes);
            std::thread::sleep(Duration::from_millis(5));
        }
    }));
    for t in writers {
        t.join().expect("a writer failed");
    }
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().expect("a reader failed");
    }
    Arc::try_unwrap(acks).unwrap().into_inner().unwrap()
}

/// Every acknowledged reply is in its file exactly once, and every line parses.
fn check_acks(acks: &[(PathBuf, String)]) {
    let mut texts: HashMap<&Path, String> = HashMap::new();
    for (file, _) in acks {
        texts
            .entry(file)
            .or_insert_with(|| fs::read_to_string(file).unwrap());
    }
    for (file, text) in acks {
        let t = &texts[file.as_path()];
        let quoted = format!("\"text\":\"{text}\"");
        assert_eq!(
            t.matches(&quoted).count(),
            1,
            "{text} in {}",
            file.display()
        );
    }
    for (file, t) in &texts {
        for l in t.lines() {
            serde_json::from_str::<serde_json::Value>(l)
                .unwrap_or_else(|e| panic!("{}: {e}: {l}", file.display()));
        }
    }
}

/// The last entry of `small.jsonl`, under which external lines are appended.
const SMALL_LEAF: &str = "76622e25";

#[test]
fn readers_writers_appends_and_reloads_at_once_on_a_sessions_mount() {
    let dir = tempdir();
    let root = dir.path().join("sessions");
    fs::create_dir_all(root.join(P)).unwrap();
    let file = |s: &str| root.join(P).join(format!("{s}.jsonl"));
    for s in ["w0", "w1", "w2", "x0", "x1"] {
        fs::copy(fixture("small.jsonl"), file(s)).unwrap();
    }
    fs::copy(fixture("medium.jsonl"), file("r0")).unwrap();
    fs::copy(fixture("bushy.jsonl"), file("r1")).unwrap();
    // A bound of one session: nearly every request drops one and loads another.
    let m = Mount::sessions_dir(dir, Some(&root), &["--max-index-memory", "1"], &[]);
    let reads = [
        "grep -r -l -F threaded-reply . > /dev/null",
        "cat */r0/tree */w1/tree > /dev/null",
        "cat */x0/leaf/context */x1/leaf/context.json > /dev/null",
        "ls -R */r1 > /dev/null",
        "find . -maxdepth 3 -name 'reply' > /dev/null",
        "cat .sessionfs-stats */w0/session.json > /dev/null",
    ]
    .map(|r| r.replace('*', P));
    let replies: Vec<(String, PathBuf)> = [
        (format!("{P}/w0/reply"), file("w0")),
        (format!("{P}/w1/e8dfd932/reply"), file("w1")),
        (format!("{P}/w2/.id/{SMALL_LEAF}/reply"), file("w2")),
    ]
    .into();
    let appended = [
        (file("x0"), SMALL_LEAF),
        (file("x1"), SMALL_LEAF),
        (file("w1"), SMALL_LEAF),
    ];
    let mnt = m.mnt.clone();
    let replaced = [file("r0"), file("r1")];
    let acks = within(DEADLINE * 10, move || {
        all_at_once(&mnt, &reads, 3, &replies, &appended, &replaced, 25)
    });
    assert!(acks.len() >= 60, "only {} replies acknowledged", acks.len());
    check_acks(&acks);
    // The mount still answers, and it did drop and reload sessions on the way.
    let stats = fs::read_to_string(m.path(".sessionfs-stats")).unwrap();
    let get = |k: &str| -> u64 {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(k)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {k}in {stats:?}"))
    };
    assert!(get("evictions ") > 10 && get("loads ") > 10, "{stats}");
    let seen = try_ls(&m.path(&format!("{P}/x0/.id/{SMALL_LEAF}"))).unwrap();
    assert!(seen.iter().any(|n| n.starts_with("e018")), "{seen:?}");
}

#[test]
fn readers_writers_appends_and_reloads_at_once_on_a_session_mount() {
    let m = Mount::new("medium.jsonl");
    let leaf = fs::read_link(m.path("leaf")).unwrap();
    let leaf = leaf.file_name().unwrap().to_str().unwrap().to_string();
    let reads = [
        "grep -r -l -F threaded-reply . > /dev/null",
        "cat tree > /dev/null",
        "cat leaf/context leaf/context.json > /dev/null",
        "ls -R branches labels > /dev/null",
    ]
    .map(String::from);
    let replies = vec![
        ("reply".to_string(), m.file.clone()),
        (format!(".id/{leaf}/reply"), m.file.clone()),
    ];
    let leaf_static: &'static str = Box::leak(leaf.into_boxed_str());
    let appended = [(m.file.clone(), leaf_static)];
    // The file is replaced by a copy of itself (as Pi does when it rewrites a legacy
    // file): the view reloads it while readers and writers go on.
    let replaced = [m.file.clone()];
    let mnt = m.mnt.clone();
    let acks = within(DEADLINE * 10, move || {
        all_at_once(&mnt, &reads, 3, &replies, &appended, &replaced, 20)
    });
    assert!(acks.len() >= 30, "only {} replies acknowledged", acks.len());
    check_acks(&acks);
    assert!(try_ls(&m.mnt).is_some_and(|n| n.contains(&"tree".to_string())));
}
