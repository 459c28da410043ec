//! What forking makes before anything is written: the new file ([`ForkFile`]), the
//! fresh ids and time it takes ([`Fresh`]), and why it is refused ([`ForkError`]).
//! Apart from `super::fork` (which reads the session and writes the file) so that the
//! agent trait names these without naming a file that names the session.

use crate::model::core::format::Format;
use crate::model::core::time::now_ms;
use std::io;
use std::path::PathBuf;

/// The new session file, not written yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkFile {
    /// The directory it goes into (the source's).
    pub dir: PathBuf,
    /// Its file name; `FOLDER/NAME` for an agent whose session is a folder (Copilot
    /// CLI's `session-state/<id>/events.jsonl`): the folder is new, made whole.
    pub file_name: String,
    /// The new session's id.
    pub session_id: String,
    /// The whole file, every line ending in `\n`.
    pub bytes: Vec<u8>,
    /// The other files of a new session folder (name, bytes), beside the file.
    pub extra: Vec<(String, Vec<u8>)>,
}

impl ForkFile {
    pub fn path(&self) -> PathBuf {
        self.dir.join(&self.file_name)
    }

    /// What the fork makes: the file, or for a session that is a folder, the folder.
    pub fn made_path(&self) -> PathBuf {
        match self.file_name.split_once('/') {
            Some((folder, _)) => self.dir.join(folder),
            None => self.path(),
        }
    }
}

/// The fresh values a fork draws: random by default ([`Fresh::random`]); tests pass the
/// ones the agent drew, to compare bytes.
#[derive(Debug, Clone)]
pub struct Fresh {
    pub session_id: String,
    /// Now, in ms since the epoch (Pi's header timestamp and file name).
    pub now_ms: i64,
    /// Claude Code: the `promptId` the copied lines get.
    pub prompt_id: String,
    /// Pi: the ids of the fresh label entries, in order (random ones once used up).
    pub label_ids: Vec<String>,
}

impl Fresh {
    /// Values as the agent of `format` draws them: a UUID v7 (Pi) or v4 (Claude Code)
    /// session id, the time now, random ids.
    pub fn random(format: Format) -> Fresh {
        let now = now_ms();
        Fresh {
            session_id: match format {
                Format::Claude => crate::model::core::id::uuid_v4(),
                Format::Qwen => crate::model::core::id::uuid_v4(),
                Format::Copilot => crate::model::core::id::uuid_v4(),
                _ => crate::model::core::id::uuid_v7(now),
            },
            now_ms: now,
            prompt_id: crate::model::core::id::uuid_v4(),
            label_ids: Vec::new(),
        }
    }
}

/// Why a fork cannot be made. Nothing is written in any of these cases.
#[derive(Debug)]
pub enum ForkError {
    /// No entry with this id (or prefix).
    NoSuchEntry(String),
    /// More than one entry starts with this prefix.
    Ambiguous {
        prefix: String,
        ids: Vec<String>,
    },
    /// The agent cannot represent the path: the reason, in words.
    Refused(String),
    /// The agent does not fork (yet): why, and what to do instead.
    Unsupported(String),
    Io(io::Error),
    /// The agent's own writer failed (a database that is busy): the errno and why.
    Failed {
        errno: i32,
        message: String,
    },
}

impl std::fmt::Display for ForkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForkError::NoSuchEntry(id) => write!(f, "no entry {id:?} in the session"),
            ForkError::Ambiguous { prefix, ids } => {
                write!(f, "{prefix:?} is the start of several entry ids: ")?;
                for (k, id) in ids.iter().take(5).enumerate() {
                    write!(f, "{}{id}", if k > 0 { ", " } else { "" })?;
                }
                if ids.len() > 5 {
                    write!(f, ", … ({} in all)", ids.len())?;
                }
                write!(f, "; give more of the id")
            }
            ForkError::Refused(why) | ForkError::Unsupported(why) => write!(f, "{why}"),
            ForkError::Failed { message, .. } => write!(f, "{message}"),
            ForkError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ForkError {}

impl From<io::Error> for ForkError {
    fn from(e: io::Error) -> Self {
        ForkError::Io(e)
    }
}

impl ForkError {
    /// The errno a filesystem write reports for it.
    pub fn errno(&self) -> i32 {
        match self {
            ForkError::NoSuchEntry(_) => libc::ENOENT,
            ForkError::Ambiguous { .. } => libc::EINVAL,
            ForkError::Refused(_) => libc::EROFS,
            ForkError::Unsupported(_) => libc::EOPNOTSUPP,
            ForkError::Io(e) => e.raw_os_error().unwrap_or(libc::EIO),
            ForkError::Failed { errno, .. } => *errno,
        }
    }
}
