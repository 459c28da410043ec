//! Memory, attacked: what one file, or many, can make a command hold (issue 27, points
//! 3, 4 and 7). Each test makes the input an attacker would (a Codex page of gigabytes,
//! compressed pages that expand a thousandfold, a home of many threads), runs `check`,
//! `grep` and a mount walked with `find`, `grep -r`, `ls` and `cat` over it, and asserts
//! the peak resident memory against a bound that does not grow with the input: the
//! inputs here would cost gigabytes if held (the builds before these tests took 1 to
//! 3 GB on them, and aborted on the 3 GiB page: see docs/RELIABILITY.md).
//!
//! The peak is the process's `VmHWM`, polled for `check` and `grep`, read at the end
//! for the mount (a high-water mark: nothing is missed between polls but a peak in a
//! command's last milliseconds). Each command also runs under an address-space limit
//! (`RLIMIT_AS`, [`LIMIT`]), so that a regression is stopped there rather than take
//! the shared machine's memory: it then fails the test by its exit status.

mod common;

use common::{Mount, tempdir};
use std::fs::{self, File};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one command may take before it counts as hung.
const DEADLINE: Duration = Duration::from_secs(300);
/// The address space every command here gets: far more than any needs (a debug build
/// maps some hundreds of MB it never touches), far less than the inputs would take.
const LIMIT: u64 = 2 << 30;

/// The peak resident memory allowed, in KiB: the 64 MiB a line may hold and room for
/// the program, as tests/resources.rs allows for one line. None of the inputs below
/// holds a line longer than 4 MiB but the ones past the bound, which are never held.
const PEAK_KB: u64 = 160 << 10;

fn vm_hwm(pid: u32) -> Option<u64> {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Limits the child's address space to `limit` bytes.
fn limited(cmd: &mut Command, limit: u64) -> &mut Command {
    // SAFETY: setrlimit is async-signal-safe; the closure touches nothing else.
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

struct Ran {
    code: i32,
    out: String,
    err: String,
    peak_kb: u64,
}

/// Runs `sessionfs ARGS` in `cwd` under [`LIMIT`], polling its peak, and checks that
/// it neither panicked nor aborted and that its peak is under [`PEAK_KB`].
fn measure(args: &[&str], cwd: &Path) -> Ran {
    let r = run_under(args, cwd, LIMIT);
    assert!(
        !r.err.contains("panicked") && !r.err.contains("memory allocation"),
        "{args:?}: {}",
        r.err
    );
    assert!(
        r.peak_kb < PEAK_KB,
        "sessionfs {args:?}: peak {} KiB, over {PEAK_KB} KiB",
        r.peak_kb
    );
    r
}

/// Runs `sessionfs ARGS` in `cwd` under an address-space limit of `limit` bytes,
/// polling its peak.
fn run_under(args: &[&str], cwd: &Path, limit: u64) -> Ran {
    let tmp = tempfile::tempdir().unwrap();
    let (o, e) = (tmp.path().join("out"), tmp.path().join("err"));
    let mut cmd = Command::new(common::bin());
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(File::create(&o).unwrap())
        .stderr(File::create(&e).unwrap());
    let mut child = limited(&mut cmd, limit).spawn().unwrap();
    let start = Instant::now();
    let mut peak_kb = 0;
    let status = loop {
        if let Some(kb) = vm_hwm(child.id()) {
            peak_kb = peak_kb.max(kb);
        }
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > DEADLINE {
            child.kill().ok();
            child.wait().ok();
            panic!("sessionfs {args:?} did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let r = Ran {
        code: status.code().unwrap_or(-1),
        out: fs::read_to_string(o).unwrap_or_default(),
        err: fs::read_to_string(e).unwrap_or_default(),
        peak_kb,
    };
    eprintln!(
        "sessionfs {}: exit {}, peak {} MiB",
        args.join(" "),
        r.code,
        r.peak_kb >> 10
    );
    r
}

/// A mount of `src` (a session file, or a sessions folder or Codex home) under
/// [`LIMIT`] (set on the harness's mount with `prlimit`).
fn mount(dir: tempfile::TempDir, src: PathBuf, args: &[&str]) -> Mount {
    mount_under(dir, src, args, LIMIT)
}

/// A mount of `src` under an address-space limit of `limit` bytes.
fn mount_under(dir: tempfile::TempDir, src: PathBuf, args: &[&str], limit: u64) -> Mount {
    let m = if src.is_dir() {
        Mount::sessions_dir(dir, Some(&src), args, &[])
    } else {
        Mount::start(dir, src, args)
    };
    let lim = libc::rlimit {
        rlim_cur: limit,
        rlim_max: limit,
    };
    // SAFETY: prlimit on a child we started, with a valid struct.
    let r = unsafe {
        libc::prlimit(
            m.pid() as libc::pid_t,
            libc::RLIMIT_AS,
            &lim,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, 0, "prlimit: {}", std::io::Error::last_os_error());
    m
}

/// Runs `script` in the mount and checks the mount's peak; returns what it printed.
fn through(m: &Mount, script: &str) -> String {
    let out = common::sh(script, &m.mnt);
    let said = out.stdout.clone();
    assert!(out.status.success(), "{script}: {said} {}", out.stderr);
    let kb = vm_hwm(m.pid()).expect("the mount is alive");
    eprintln!("mount, {script}: peak {} MiB", kb >> 10);
    assert!(
        kb < PEAK_KB,
        "mount, {script}: peak {kb} KiB, over {PEAK_KB} KiB"
    );
    let err = m.stderr_text();
    assert!(
        !err.contains("panicked") && !err.contains("memory allocation"),
        "{err}"
    );
    said
}

// ----- Codex pages ----------------------------------------------------------------

const INSTRUCTIONS: &str = "You are a coding agent. ";

fn thread_id(n: u32) -> String {
    format!("01a2331d-0000-7000-8000-{n:012x}")
}

fn meta(tid: &str) -> String {
    format!(
        r#"{{"timestamp":"2026-12-01T10:00:00.000Z","ordinal":0,"type":"session_meta","payload":{{"id":"{tid}","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/p/hostile","originator":"codex_cli_rs","cli_version":"0.171.0","base_instructions":{{"text":"{}"}}}}}}"#,
        INSTRUCTIONS.repeat(800)
    ) + "\n"
}

fn item(o: u64, text: &str, role: &str) -> String {
    let kind = if role == "user" {
        "input_text"
    } else {
        "output_text"
    };
    format!(
        r#"{{"timestamp":"2026-12-01T10:00:01.000Z","ordinal":{o},"type":"response_item","payload":{{"type":"message","role":"{role}","content":[{{"type":"{kind}","text":"{text}"}}]}}}}"#
    ) + "\n"
}

/// `HOME/sessions/2026/12/01/rollout-…-<thread n>.jsonl`, its folders made.
fn page(home: &Path, n: u32) -> (String, PathBuf) {
    let d = home.join("sessions/2026/12/01");
    fs::create_dir_all(&d).unwrap();
    let tid = thread_id(n);
    let p = d.join(format!(
        "rollout-2026-12-01T10-00-{:02}-{tid}.jsonl",
        n % 60
    ));
    (tid, p)
}

/// An ordinary thread, whose entries must read as ever beside the attacks.
fn ordinary(home: &Path, n: u32) -> String {
    let (tid, p) = page(home, n);
    fs::write(
        &p,
        meta(&tid) + &item(1, "an ordinary thread", "user") + &item(2, "its answer", "assistant"),
    )
    .unwrap();
    tid
}

/// Point 3: a Codex page of 3 GiB (a sparse file: 4 KB on disk), whose first lines are
/// entries and whose rest is one line of zeros with no end. The build before this one
/// read it whole ("memory allocation of 3221225488 bytes failed"), aborting `check`,
/// `grep` and the every-agent mount with every session in it. Now it costs one line,
/// and the thread beside it reads as ever.
#[test]
fn a_codex_page_of_3_gib_costs_a_line() {
    let dir = tempdir();
    let home = dir.path().join("home");
    let (tid, p) = page(&home, 1);
    fs::write(&p, meta(&tid) + &item(1, "before the hole", "user")).unwrap();
    File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let other = ordinary(&home, 2);

    let r = measure(&["check", "home"], dir.path());
    assert_eq!(r.code, 1, "{}", r.out);
    assert!(r.out.contains("no final newline"), "{}", r.out);
    assert!(r.out.contains(&format!("{other}.jsonl: ok")), "{}", r.out);
    let r = measure(&["grep", "-l", "hole", "home"], dir.path());
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains(&format!("{tid}/{tid}:1/user")), "{}", r.out);

    let m = mount(tempdir(), home.clone(), &[]);
    let said = through(
        &m,
        "find . | wc -l; grep -r -l -e ordinary -e hole . | sort; cat ./*/*/*:1/user",
    );
    assert!(said.contains(&format!("{other}/{other}:1/user")), "{said}");
    assert!(said.contains(&format!("{tid}/{tid}:1/user")), "{said}");
    assert!(said.contains("before the hole\n"), "{said}");
}

/// Point 3: a page of big lines: 24 entries of 3 MiB, one of 80 MiB (past the 64 MiB a
/// line may hold), 150 MB in all. The build before held the page and a parsed model of
/// it; now each command holds its index and one line at a time, far less than the
/// page, and the line past the bound is named by `check`, skipped by the others.
#[test]
fn a_codex_page_of_big_lines_is_read_a_line_at_a_time() {
    let dir = tempdir();
    let home = dir.path().join("home");
    let (tid, p) = page(&home, 3);
    let mut f = File::create(&p).unwrap();
    f.write_all(meta(&tid).as_bytes()).unwrap();
    let big = "b".repeat(3 << 20);
    for o in 1..=12u64 {
        f.write_all(item(o, &format!("big {o} {big}"), "user").as_bytes())
            .unwrap();
    }
    let huge = "h".repeat(80 << 20);
    f.write_all(item(13, &huge, "assistant").as_bytes())
        .unwrap();
    drop(huge);
    for o in 14..=25u64 {
        f.write_all(item(o, &format!("big {o} {big}"), "assistant").as_bytes())
            .unwrap();
    }
    f.write_all(item(26, "the last one", "user").as_bytes())
        .unwrap();
    drop(f);
    assert!(fs::metadata(&p).unwrap().len() > 150 << 20);

    let r = measure(&["check", "home"], dir.path());
    assert!(
        r.out
            .contains("line of 80 MiB, longer than the 64 MiB a line may hold"),
        "{}",
        r.out
    );
    let r = measure(&["grep", "-c", "the last one", "home"], dir.path());
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains(&format!("{tid}:26/user:1")), "{}", r.out);

    let m = mount(tempdir(), home.clone(), &[]);
    let said = through(
        &m,
        "grep -r -l --include=user --include=assistant 'big 2[0-5] ' . | wc -l; \
         cat ./*/*/leaf/user; cat ./*/*/cost | head -1",
    );
    assert!(said.starts_with("6\nthe last one\n"), "{said}");
}

/// Point 3: memory that cannot be had is the file's error, never the process's end
/// (Rust aborts on a failed allocation, so a line's buffer is reserved fallibly). A
/// Codex page holding a line of 1,000 MiB (a sparse file: nothing on disk), read with
/// `--max-line 1G` by processes limited to 1 GiB of address space: the line cannot be
/// had, `check` says so of that page and reads the thread beside it, and a mount shows
/// the page's `ERROR`, reads the other thread, and lives on.
#[test]
fn an_allocation_that_fails_is_the_files_error() {
    const SMALL: u64 = 1 << 30;
    let dir = tempdir();
    let home = dir.path().join("home");
    let (tid, p) = page(&home, 4);
    let head = r#"{"timestamp":"2026-12-01T10:00:01.000Z","ordinal":1,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"big "#;
    let mut f = File::create(&p).unwrap();
    f.write_all((meta(&tid) + head).as_bytes()).unwrap();
    f.seek(SeekFrom::Current(1000 << 20)).unwrap();
    f.write_all(b"\"}]}}\n").unwrap();
    f.write_all(item(2, "after the big line", "assistant").as_bytes())
        .unwrap();
    drop(f);
    let other = ordinary(&home, 5);

    let r = run_under(&["check", "--max-line", "1G", "home"], dir.path(), SMALL);
    assert!(
        !r.err.contains("panicked") && !r.err.contains("memory allocation"),
        "{}",
        r.err
    );
    let said = r.out + &r.err;
    assert!(
        said.contains(&format!("{tid}.jsonl: error: cannot read: cannot allocate")),
        "{said}"
    );
    assert!(said.contains(&format!("{other}.jsonl: ok")), "{said}");

    let m = mount_under(tempdir(), home.clone(), &["--max-line", "1G"], SMALL);
    let out = common::sh(
        &format!("cat ./*/{tid}/ERROR; cat ./*/{other}/leaf/assistant"),
        &m.mnt,
    );
    assert!(out.stdout.contains("cannot allocate"), "{out:?}");
    assert!(out.stdout.contains("its answer"), "{out:?}");
    assert!(
        vm_hwm(m.pid()).is_some(),
        "the mount is gone: {}",
        m.stderr_text()
    );
    let err = m.stderr_text();
    assert!(
        !err.contains("panicked") && !err.contains("memory allocation"),
        "{err}"
    );
}

// ----- Compressed pages ------------------------------------------------------------

/// A zstd block header.
fn block(last: bool, ty: u32, size: u32) -> [u8; 3] {
    let h = last as u32 | (ty << 1) | (size << 3);
    [h as u8, (h >> 8) as u8, (h >> 16) as u8]
}

/// `raw` as raw zstd blocks.
fn raw_blocks(raw: &[u8], last: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let chunks: Vec<&[u8]> = raw.chunks(128 << 10).collect();
    for (k, c) in chunks.iter().enumerate() {
        out.extend(block(last && k + 1 == chunks.len(), 0, c.len() as u32));
        out.extend_from_slice(c);
    }
    out
}

/// 128 KiB of `byte`, in four bytes.
fn rle(byte: u8, last: bool) -> Vec<u8> {
    let mut v = block(last, 1, 128 << 10).to_vec();
    v.push(byte);
    v
}

/// A zstd frame's header: no checksum, no size, a window of 128 KiB.
const FRAME: [u8; 6] = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];

/// A compressed page of 1 GiB: the thread's first lines, then `shape` 0, a gigabyte of
/// empty lines; 1, one line of a gigabyte of blanks; 2, 8,192 entries each padded with
/// 128 KiB of blanks.
fn bomb(home: &Path, n: u32, shape: u32) -> PathBuf {
    let (tid, p) = page(home, n);
    let head = meta(&tid) + &item(1, "bomb", "user");
    let mut f = FRAME.to_vec();
    f.extend(raw_blocks(head.as_bytes(), false));
    match shape {
        0 => (0..8192).for_each(|k| f.extend(rle(b'\n', k == 8191))),
        1 => {
            f.extend(raw_blocks(br#"{"type":"response_item","payload":"#, false));
            (0..8192).for_each(|k| f.extend(rle(b' ', k == 8191)));
        }
        _ => {
            for o in 2..8194u64 {
                let line = item(o, &format!("entry {o}"), "user");
                let (a, b) = line.as_bytes().split_at(line.len() - 2);
                f.extend(raw_blocks(a, false));
                f.extend(rle(b' ', false));
                f.extend(raw_blocks(b, o == 8193));
            }
        }
    }
    let zst = p.with_extension("jsonl.zst");
    fs::write(&zst, f).unwrap();
    zst
}

/// Point 4: six compressed pages of 30 KB to 1.5 MB, each a gigabyte decompressed, in
/// three shapes, read at once: by `check`, by `grep` (its workers side by side), and
/// through a mount by six readers at a time. The build before decompressed each page
/// whole (a gigabyte each, and as many at once as readers); now pages stream through a
/// bounded window, none expands past 128 times its size, and the memory of all of it
/// is bounded whatever the number of pages. Each bomb is a session that cannot be read,
/// saying why; the ordinary thread beside them reads as ever.
#[test]
fn decompression_bombs_read_at_once() {
    let dir = tempdir();
    let home = dir.path().join("home");
    for n in 1..=6 {
        let z = bomb(&home, n, n % 3);
        assert!(fs::metadata(&z).unwrap().len() < 2 << 20);
    }
    let other = ordinary(&home, 9);

    let r = measure(&["check", "home"], dir.path());
    assert_eq!(r.out.matches("decompression bomb").count(), 6, "{}", r.out);
    assert!(r.out.contains(&format!("{other}.jsonl: ok")), "{}", r.out);
    let r = measure(
        &["grep", "-l", "-e", "ordinary", "-e", "entry", "home"],
        dir.path(),
    );
    assert!(r.err.contains("decompression bomb"), "{}", r.err);
    assert!(
        r.out.contains(&format!("{other}/{other}:1/user")),
        "{}",
        r.out
    );

    let m = mount(tempdir(), home.clone(), &[]);
    let said = through(
        &m,
        "for t in ./*/*/; do (ls \"$t\" >/dev/null; cat \"$t\"ERROR 2>/dev/null) & done; wait; \
         grep -r -l -e ordinary -e entry . | sort",
    );
    assert_eq!(said.matches("decompression bomb").count(), 6, "{said}");
    assert!(said.contains(&format!("{other}/{other}:1/user")), "{said}");
}

// ----- Many threads ----------------------------------------------------------------

/// Point 7: a Codex home of 300 threads whose `state_5.sqlite` has a row of 8 KB for
/// each. Every thread loaded used to keep the whole table (300 rows: 2.4 MB, 720 MB for
/// all), none of it counted against `--max-index-memory`; now a thread keeps its own
/// row, and what it keeps is counted: reading every thread under a 4 MiB bound evicts
/// as it goes, and the mount stays small.
#[test]
fn threads_keep_their_own_state_and_count_it() {
    let dir = tempdir();
    let home = dir.path().join("home");
    fs::create_dir_all(&home).unwrap();
    let conn = rusqlite::Connection::open(home.join("state_5.sqlite")).unwrap();
    conn.execute_batch(
        "CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL, title TEXT, \
         name TEXT, source TEXT, cwd TEXT)",
    )
    .unwrap();
    let n = 300;
    for k in 0..n {
        let tid = ordinary(&home, 100 + k);
        let (_, p) = page(&home, 100 + k);
        conn.execute(
            "INSERT INTO threads VALUES (?1, ?2, NULL, ?3, 'exec', '/p/hostile')",
            (
                &tid,
                p.to_str().unwrap(),
                format!("thread {k} {}", "t".repeat(8000)),
            ),
        )
        .unwrap();
    }
    drop(conn);
    let m = mount(tempdir(), home.clone(), &["--max-index-memory", "4M"]);
    let said = through(
        &m,
        "for t in ./*/*/; do cat \"$t\"name; echo; cat \"$t\"*:1/user; done | sort | uniq -c | \
         awk '{print $1, $2}'; cat .sessionfs-stats",
    );
    assert!(said.contains("300 an\n"), "{said}");
    assert_eq!(said.matches("1 thread").count(), 300, "{said}");
    let stat = |k: &str| -> u64 {
        said.lines()
            .find_map(|l| l.strip_prefix(k)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{k} in {said}"))
    };
    assert!(stat("evictions") > 0, "{said}");
    assert!(stat("loaded_bytes") <= 5 << 20, "{said}");
}

// ----- Output and memory in the depth (Pi sessions) ----------------------------------

const PI_HEADER: &str = r#"{"type":"session","version":3,"id":"deep","timestamp":"2026-01-05T09:00:00.000Z","cwd":"/p"}"#;

fn pi_user(id: &str, parent: Option<&str>, text: &str) -> String {
    let p = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{p},"timestamp":"2026-01-05T09:00:01.000Z","message":{{"role":"user","content":[{{"type":"text","text":"{text}"}}],"timestamp":1}}}}"#
    )
}

fn pi_assistant(id: &str, parent: &str, text: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-01-05T09:00:02.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","stopReason":"stop","timestamp":2,"usage":{{"input":100,"output":20,"cacheRead":5,"cacheWrite":1,"totalTokens":126,"cost":{{"input":0.001,"output":0.001,"cacheRead":0,"cacheWrite":0,"total":0.002}}}}}}}}"#
    )
}

/// A Pi session in `dir`: `lines` after the header.
fn pi_session(dir: &Path, name: &str, lines: impl Iterator<Item = String>) -> PathBuf {
    let p = dir.join(name);
    let mut f = std::io::BufWriter::new(File::create(&p).unwrap());
    writeln!(f, "{PI_HEADER}").unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    drop(f);
    p
}

/// Point 2: `sessionfs grep` over a chain 20,000 deep where every entry matches. Each
/// hit's path named every ancestor (a chain 200,000 deep gave 69 GB): now a path that
/// would pass PATH_MAX is printed as `.id/ID/KIND`, and the output is linear in the
/// entries, with `-l`, `-c` and `--json` alike.
#[test]
fn grep_output_is_linear_in_a_deep_chain() {
    let dir = tempdir();
    let n = 20_000u32;
    let id = |i: u32| format!("{:08x}", 0x1000_0000 + i);
    pi_session(
        dir.path(),
        "deep.jsonl",
        (0..n).map(|i| {
            pi_user(
                &id(i),
                (i > 0).then(|| id(i - 1)).as_deref(),
                &format!("needle {i}"),
            )
        }),
    );
    for args in [
        &["grep", "-l", "needle", "deep.jsonl"][..],
        &["grep", "-c", "needle", "deep.jsonl"],
        &["grep", "--json", "needle", "deep.jsonl"],
    ] {
        let r = measure(args, dir.path());
        assert_eq!(r.code, 0, "{}", r.err);
        let lines = r.out.lines().count();
        assert_eq!(lines, n as usize, "{args:?}");
        // Each line names its entry once: some 40 bytes a line, 300 with --json.
        assert!(
            r.out.len() < 400 * n as usize,
            "{args:?}: {} bytes",
            r.out.len()
        );
        // No line past PATH_MAX (and --json's two paths, its text and leaves).
        let longest = r.out.lines().map(str::len).max().unwrap();
        assert!(longest < 4096 + 400, "{args:?}: a line of {longest} bytes");
        let last = format!(".id/{}/user", id(n - 1));
        assert!(r.out.contains(&last), "{args:?}");
    }
    // Shallow hits keep their nested paths.
    let r = measure(&["grep", "-l", "needle 3$", "deep.jsonl"], dir.path());
    assert_eq!(
        r.out,
        format!("{}/{}/{}/{}/user\n", id(0), id(1), id(2), id(3))
    );
}

/// Point 2: `tree` of a comb 3,000 forks deep (each entry has a leaf and the next
/// fork as children). Indentation grew at every fork: line k held 3k columns, and the
/// gutters kept for the forks grew with the square of the depth. Now indentation stops
/// at 64 columns and counts the rest.
#[test]
fn tree_lines_stay_short_in_a_deep_fork_chain() {
    let dir = tempdir();
    let n = 3000u32;
    let id = |i: u32| format!("{:08x}", 0x1000_0000 + i);
    let leaf = |i: u32| format!("{:08x}", 0x2000_0000 + i);
    let p = pi_session(
        dir.path(),
        "comb.jsonl",
        (0..n).flat_map(|i| {
            let parent = (i > 0).then(|| id(i - 1));
            [
                pi_user(&id(i), parent.as_deref(), &format!("fork {i}")),
                pi_user(&leaf(i), Some(&id(i)), &format!("leaf {i}")),
            ]
        }),
    );
    let home = dir.path().to_path_buf();
    drop(p);
    let m = mount(tempdir(), home.join("comb.jsonl"), &[]);
    let said = through(
        &m,
        "wc -lc < tree; awk '{ if (length($0) > m) m = length($0) } END { print m }' tree",
    );
    let nums: Vec<usize> = said
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(nums[0], 2 * n as usize, "{said}");
    assert!(nums[2] < 400, "longest tree line: {} characters", nums[2]);
    assert!(nums[1] < 400 * 2 * n as usize, "tree of {} bytes", nums[1]);
}

/// Point 7: a Pi session of one root and 20,000 branches. `cost.json` summed each
/// branch's path and built all of it as JSON values (100,000 branches: 12 s and 600 MB
/// a read, 1.6 GB kept); each entry's `cost` summed its path again. Now the totals are
/// made once, `cost.json` is written a branch at a time, and reading every cost file
/// (`find` through `.id/`) keeps the mount small.
#[test]
fn cost_of_a_session_of_many_branches() {
    let dir = tempdir();
    let n = 20_000u32;
    let p = pi_session(
        dir.path(),
        "branches.jsonl",
        std::iter::once(pi_user("00000000", None, "the root"))
            .chain((0..n).map(|i| {
                pi_assistant(&format!("{:08x}", 0x3000_0000 + i), "00000000", "a branch")
            })),
    );
    let m = mount(tempdir(), p, &[]);
    let said = through(
        &m,
        "cat cost.json | grep -c '\"leaf\"'; cat cost.json cost | wc -c; \
         for i in $(seq 805306368 805326367); do printf '.id/%08x/cost\\n' $i; done | \
         xargs cat | grep -c '^to here'",
    );
    let nums: Vec<usize> = said
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(nums[0], n as usize + 1, "{said}");
    assert_eq!(nums[2], n as usize, "{said}");
}

/// Point 7: after the session's usage was read, every entry's `cost` file of a chain
/// 20,000 deep (what `find` or `grep -r` through the mount reads): each summed the
/// whole path to its entry, quadratic in the depth. Now each is read from the totals
/// made once.
#[test]
fn cost_files_of_a_deep_chain() {
    let dir = tempdir();
    let n = 20_000u32;
    let id = |i: u32| format!("{:08x}", 0x1000_0000 + i);
    let p = pi_session(
        dir.path(),
        "chain.jsonl",
        (0..n).map(|i| {
            let parent = (i > 0).then(|| id(i - 1));
            if i % 2 == 0 {
                pi_user(&id(i), parent.as_deref(), "q")
            } else {
                pi_assistant(&id(i), parent.as_deref().unwrap(), "a")
            }
        }),
    );
    let m = mount(tempdir(), p, &[]);
    let said = through(
        &m,
        "cat cost | head -1; for i in $(seq 268435456 268455455); do printf '.id/%08x/cost\\n' $i; \
         done | xargs cat | grep -c '^to here'",
    );
    assert!(said.contains("10000 requests"), "{said}");
    assert!(said.ends_with(&format!("\n{n}\n")), "{said}");
}

/// Point 7: a Pi session holding a 58 MB line of 4.5 million distinct keys (in the
/// usage of an assistant message), searched and read. Parsed, such a line took 745 MB
/// where a line was promised to cost about its length. Now a line whose values would
/// take more than `--max-line` once parsed is not built: its entry says why, the same
/// through the mount and in `sessionfs grep`.
#[test]
fn a_line_of_millions_of_keys_is_not_built() {
    let dir = tempdir();
    let a = pi_assistant("0000000a", "00000000", "many keys");
    let cut = a.find(r#""usage":{"#).unwrap() + r#""usage":{"#.len();
    let mut keys = String::with_capacity(60 << 20);
    for k in 0..4_500_000u32 {
        keys.push_str(&format!("\"k{k}\":1,"));
    }
    let big = format!("{}{keys}{}", &a[..cut], &a[cut..]);
    assert!(big.len() > 50 << 20 && big.len() < 64 << 20);
    drop(keys);
    let p = pi_session(
        dir.path(),
        "keys.jsonl",
        [
            pi_user("00000000", None, "before"),
            big,
            pi_user("0000000b", Some("0000000a"), "after"),
        ]
        .into_iter(),
    );
    let r = measure(&["grep", "-c", "k4499999", "keys.jsonl"], dir.path());
    assert_eq!(r.code, 1, "{}", r.out);
    let r = measure(
        &[
            "grep",
            "-l",
            "values, more than a line may hold",
            "keys.jsonl",
        ],
        dir.path(),
    );
    assert_eq!(r.out, "00000000/0000000a/assistant\n", "{}", r.err);
    let m = mount(tempdir(), p, &[]);
    let said = through(
        &m,
        "cat 00000000/0000000a/assistant; cat 00000000/0000000a/0000000b/user",
    );
    assert!(
        said.starts_with("[this entry cannot be shown: line 3: 45000")
            && said.contains(" values, more than a line may hold parsed ("),
        "{said}"
    );
    assert!(said.ends_with("after\n"), "{said}");
}
