//! Security: who may enter, what a write can change, where symlinks lead.
//!
//! * Only the mounting user can enter by default. The kernel enforces it: a FUSE
//!   mount made without `allow_other` refuses every other user, root included (here
//!   the tests run as root, so the second user is `nobody`). `--allow-other` lets
//!   others in, and `default_permissions` then applies the modes sessionfs reports
//!   (`reply` and `name` are writable by the owner only).
//! * Writes can only append: every file except `reply`, `name` and the `labels/`
//!   directory refuses writes, and no operation rewrites a byte of the session file.
//! * Every symlink target stays inside the mount.

mod common;

use common::{DEADLINE, Mount, is_root, run_command, sh, wait_until};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

fn as_nobody(script: &str, cwd: &Path) -> common::Output {
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "sh",
        "-c",
        script,
    ])
    .current_dir(cwd);
    run_command(c)
}

#[test]
fn other_users_cannot_enter_by_default() {
    if !is_root() {
        eprintln!("skipped: needs root to switch users");
        return;
    }
    let m = Mount::new("small.jsonl");
    let out = as_nobody(&format!("ls {}", m.mnt.display()), Path::new("/"));
    assert!(
        !out.status.success(),
        "nobody could list the mount: {out:?}"
    );
    assert!(out.stderr.contains("Permission denied"), "{out:?}");
    let out = as_nobody(&format!("cat {}/tree", m.mnt.display()), Path::new("/"));
    assert!(!out.status.success());
}

#[test]
fn allow_other_lets_others_read_but_not_write() {
    if !is_root() {
        eprintln!("skipped: needs root to switch users");
        return;
    }
    let m = Mount::with_args("small.jsonl", &["--allow-other"]);
    let before = std::fs::read(&m.file).unwrap();
    let out = as_nobody(
        &format!(
            "ls {0} >/dev/null && cat {0}/tree >/dev/null",
            m.mnt.display()
        ),
        Path::new("/"),
    );
    assert!(out.status.success(), "{out:?}");
    let out = as_nobody(
        &format!("echo hi > {}/reply", m.mnt.display()),
        Path::new("/"),
    );
    assert!(
        !out.status.success() && out.stderr.contains("Permission denied"),
        "{out:?}"
    );
    assert_eq!(std::fs::read(&m.file).unwrap(), before);
}

/// Issue 27, point 1, as root mounts it: a `0600` session is refused to another user
/// through the mount as on disk, whatever is asked (`tests/normal_user.rs` does the same
/// with two unprivileged users); a `chmod` to `0644` lets them in, one back to `0600`
/// shuts them out again.
#[test]
fn allow_other_shows_each_file_only_to_whom_the_disk_does() {
    if !is_root() {
        eprintln!("skipped: needs root to switch users");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = common::tempdir();
    let file = dir.path().join("secret.jsonl");
    std::fs::copy(common::fixture("small.jsonl"), &file).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let m = Mount::start(dir, file.clone(), &["--allow-other"]);
    let mnt = m.mnt.display().to_string();
    let reads = |what: &str| {
        as_nobody(&format!("{what} >/dev/null"), Path::new("/"))
            .status
            .success()
    };
    assert!(
        !reads(&format!("cat {}", file.display())),
        "nobody reads it on disk"
    );
    for what in [
        format!("cat {mnt}/session.json"),
        format!("head {mnt}/tree"),
        format!("cat {mnt}/name"),
        format!("ls {mnt}"),
        format!("cat {mnt}/.id/22776346/context"),
    ] {
        assert!(!reads(&what), "nobody could: {what}");
    }
    let modes = sh(
        "stat -c '%a %u' . session.json name reply .id/22776346/fork",
        &m.mnt,
    )
    .ok()
    .stdout;
    assert_eq!(modes, "500 0\n400 0\n600 0\n600 0\n600 0\n");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let open = wait_until(DEADLINE, || reads(&format!("cat {mnt}/session.json")));
    assert!(open, "a chmod to 0644 did not let nobody in");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let shut = wait_until(DEADLINE, || {
        !reads(&format!("cat {mnt}/.id/22776346/context"))
    });
    assert!(shut, "a chmod back to 0600 did not shut nobody out");
}

#[test]
fn writes_can_only_append() {
    let m = Mount::new("small.jsonl");
    let before = std::fs::read(&m.file).unwrap();
    let leaf = std::fs::read_link(m.path("leaf")).unwrap();
    let id = leaf.file_name().unwrap().to_str().unwrap().to_string();
    let kind = std::fs::read_dir(m.path(&format!(".id/{id}")))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| {
            !["reply", "entry.json", "context", "context.json", "parent"].contains(&n.as_str())
                && !n.starts_with("image-")
                && n.len() != 8
        })
        .unwrap();
    for (what, script) in [
        ("overwrite content", format!(": > .id/{id}/{kind}")),
        ("append to content", format!("echo x >> .id/{id}/{kind}")),
        (
            "overwrite entry.json",
            format!("echo x > .id/{id}/entry.json"),
        ),
        ("overwrite context", format!("echo x > .id/{id}/context")),
        (
            "overwrite session.json",
            "echo x > session.json".to_string(),
        ),
        ("overwrite tree", "echo x > tree".to_string()),
        ("create a file", format!("echo x > .id/{id}/new")),
        ("make a directory", format!("mkdir .id/{id}/new")),
        ("remove an entry", format!("rm -r .id/{id}")),
        ("rename an entry", format!("mv .id/{id}/{kind} .id/{id}/x")),
        ("remove a content file", format!("rm -f .id/{id}/{kind}")),
        ("symlink outside labels/", format!("ln -s {id} .id/{id}/x")),
        ("truncate content", format!("truncate -s 0 .id/{id}/{kind}")),
        ("chmod", format!("chmod 777 .id/{id}/{kind}")),
    ] {
        let out = sh(&script, &m.mnt);
        assert!(!out.status.success(), "{what} succeeded: {out:?}");
        assert_eq!(
            std::fs::read(&m.file).unwrap(),
            before,
            "{what} changed the file"
        );
    }
    // Truncating reply itself is allowed (the shell does it) and writes nothing.
    sh(
        &format!("truncate -s 0 .id/{id}/reply && : > reply"),
        &m.mnt,
    )
    .ok();
    assert_eq!(std::fs::read(&m.file).unwrap(), before);
}

/// Resolves a symlink target lexically; `None` if it climbs above `root`.
fn resolve(root: &Path, dir: &Path, target: &Path) -> Option<PathBuf> {
    let mut p = if target.is_absolute() {
        PathBuf::from("/")
    } else {
        dir.to_path_buf()
    };
    for c in target.components() {
        match c {
            Component::RootDir => p = PathBuf::from("/"),
            Component::ParentDir => {
                if !p.pop() {
                    return None;
                }
            }
            Component::Normal(n) => p.push(n),
            Component::CurDir | Component::Prefix(_) => {}
        }
    }
    p.starts_with(root).then_some(p)
}

#[test]
fn no_symlink_leads_outside_the_mount() {
    let m = Mount::new("medium.jsonl");
    let root = m.mnt.clone();
    // Walk the nested tree with relative paths (it is deeper than PATH_MAX), keeping the
    // logical path of each directory for the check.
    let mut stack: Vec<(PathBuf, std::fs::File)> =
        vec![(root.clone(), std::fs::File::open(&root).unwrap())];
    let mut links = 0;
    while let Some((logical, dir)) = stack.pop() {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&dir);
        for e in std::fs::read_dir(format!("/proc/self/fd/{fd}")).unwrap() {
            let e = e.unwrap();
            let name = e.file_name();
            let ft = e.file_type().unwrap();
            let here = logical.join(&name);
            let via_fd = PathBuf::from(format!("/proc/self/fd/{fd}")).join(&name);
            if ft.is_symlink() {
                let t = std::fs::read_link(&via_fd).unwrap();
                assert!(
                    resolve(&root, &logical, &t).is_some(),
                    "{} -> {} leaves the mount",
                    here.display(),
                    t.display()
                );
                links += 1;
            } else if ft.is_dir() {
                stack.push((here, std::fs::File::open(&via_fd).unwrap()));
            }
        }
    }
    // .id/ and the link directories too.
    for sub in ["branches", "labels"] {
        for e in std::fs::read_dir(root.join(sub)).unwrap() {
            let e = e.unwrap();
            let t = std::fs::read_link(e.path()).unwrap();
            assert!(
                resolve(&root, &root.join(sub), &t).is_some(),
                "{sub}/{:?} -> {}",
                e.file_name(),
                t.display()
            );
            links += 1;
        }
    }
    assert!(links > 6000, "only {links} symlinks checked");
}
