//! What every agent's reply path shares: what to append, why an append did not
//! happen, and the checks on a reply's text before anything is written.

use crate::model::core::problem::LoadError;
use std::io;

/// What to append.
#[derive(Debug, Clone)]
pub enum NewEntry<'a> {
    /// A user message under the entry with this id, or a new root (`None`).
    Reply {
        parent: Option<&'a str>,
        text: &'a str,
    },
    /// A `session_info` entry (the text is trimmed, runs of CR/LF become one space).
    Name(&'a str),
    /// A `label` entry setting (`Some`) or clearing (`None`) the label on `target`.
    Label {
        target: &'a str,
        label: Option<&'a str>,
    },
}

/// A write through the mount, named before anything is written, so that the agent
/// can say whether it would take it (`Session::refusal`): a file it would refuse shows
/// no write bit, and opening it for writing fails at once, where the shell sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// A reply under entry `i` (its index), or at the root (`None`).
    Reply(Option<u32>),
    /// The session's name.
    Name,
    /// A label (setting, clearing or renaming one).
    Label,
    /// A fork at entry `i`.
    Fork(u32),
}

/// Why an append did not happen. Nothing was written in any of these cases, except
/// `Io` after a partial write, which is then cut back (see the module docs).
#[derive(Debug)]
pub enum AppendError {
    /// v1 files have no ids on disk.
    LegacyV1,
    /// The parent or label target is not in the file.
    NoSuchEntry(String),
    /// A label name that cannot be used (empty, or with a line break).
    BadLabel(String),
    /// The format has no such thing (labels in a Claude Code session).
    Unsupported(&'static str),
    Load(LoadError),
    Io(io::Error),
    /// The agent's own writer refused, with the errno to answer and why (a Codex
    /// reply whose database is busy).
    Refused {
        errno: i32,
        message: String,
    },
}

impl std::fmt::Display for AppendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppendError::LegacyV1 => write!(
                f,
                "the session is in format v1, which sessionfs does not write to (Pi would rewrite it first)"
            ),
            AppendError::NoSuchEntry(id) => write!(f, "no entry {id:?} in the session"),
            AppendError::BadLabel(l) => write!(f, "bad label name {l:?}"),
            AppendError::Unsupported(what) => write!(f, "{what}"),
            AppendError::Load(e) => write!(f, "{e}"),
            AppendError::Io(e) => write!(f, "{e}"),
            AppendError::Refused { message, .. } => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for AppendError {}

impl From<io::Error> for AppendError {
    fn from(e: io::Error) -> Self {
        AppendError::Io(e)
    }
}

impl From<LoadError> for AppendError {
    fn from(e: LoadError) -> Self {
        AppendError::Load(e)
    }
}

impl AppendError {
    /// The errno a filesystem should answer with.
    pub fn errno(&self) -> i32 {
        match self {
            AppendError::LegacyV1 => libc::EROFS,
            AppendError::NoSuchEntry(_) => libc::ENOENT,
            AppendError::BadLabel(_) => libc::EINVAL,
            AppendError::Unsupported(_) => libc::EOPNOTSUPP,
            AppendError::Refused { errno, .. } => *errno,
            AppendError::Load(LoadError::Io(e)) | AppendError::Io(e) => {
                e.raw_os_error().unwrap_or(libc::EIO)
            }
            AppendError::Load(_) => libc::EIO,
        }
    }
}

/// Pi's `session_info` sanitizing: runs of CR/LF become one space, then trim.
pub fn sanitize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_break = false;
    for c in name.chars() {
        if c == '\r' || c == '\n' {
            if !in_break {
                out.push(' ');
            }
            in_break = true;
        } else {
            out.push(c);
            in_break = false;
        }
    }
    js_trim(&out).to_string()
}

/// Why text written to `reply` or `name` appends nothing: a reply is text, or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Bytes that are not UTF-8: sessionfs never writes a byte the user did not write,
    /// and replacing them would.
    NotUtf8,
    /// A NUL byte. JSON could carry it (`\u0000`), but neither agent's prompt box sends
    /// one: a terminal delivers no NUL in typed or pasted text, and text holding one
    /// is binary data written to the wrong file.
    Nul,
    /// A reply of whitespace only, which an agent's prompt box ignores (Pi and Claude
    /// Code trim a prompt and send nothing when nothing is left).
    Blank,
}

impl Refused {
    /// Why, for the log.
    pub fn reason(self) -> &'static str {
        match self {
            Refused::NotUtf8 => "the text is not UTF-8",
            Refused::Nul => "the text holds a NUL byte, which no agent's prompt sends",
            Refused::Blank => "the text is only whitespace, which an agent's prompt box ignores",
        }
    }
}

/// Bytes just written to `reply` or `name`: refused when they hold a NUL.
/// (UTF-8 is judged over the whole text, since a character may span two writes.)
pub fn refuse_written(bytes: &[u8]) -> Option<Refused> {
    memchr::memchr(0, bytes).map(|_| Refused::Nul)
}

/// A reply's text as it will be sent: nothing when it is only whitespace, as an
/// agent's prompt box does with a blank prompt (`Some(Refused::Blank)`). An empty text
/// (`: > reply`, `echo > reply`) is no reply either, but no mistake: `None`.
pub fn refuse_reply(text: &str) -> Option<Refused> {
    (!text.is_empty() && js_trim(text).is_empty()).then_some(Refused::Blank)
}

/// JavaScript's `String.prototype.trim` (whitespace and line terminators).
pub fn js_trim(s: &str) -> &str {
    let ws = |c: char| c.is_whitespace() || c == '\u{FEFF}';
    s.trim_matches(ws)
}
