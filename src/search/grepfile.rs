//! What GNU grep (3.8, UTF-8 locale, no `-a`) finds in one file: the matching lines,
//! their count, and whether it says "binary file matches".
//!
//! * A file holding a NUL byte is binary: NULs end lines as newlines do, matching
//!   lines are counted (`-c`) or the file is listed (`-l`), but no line is printed;
//!   in place of its lines, grep reports that the binary file matches. (grep decides
//!   this per 96 KiB read, so a file whose first NUL lies further in gets the
//!   matching lines before that read printed; here the whole file counts.)
//! * Otherwise lines end at `\n` (a last line without one counts). A matching line
//!   that is not valid UTF-8 is not printed, and the file is reported as a binary file
//!   that matches, after the lines that were printed. Counts include such lines.
//!
//! KIND files are UTF-8 text (they can hold a NUL from a `\u0000` in the session);
//! images are whatever bytes they decode to.

use super::pattern::Pattern;

/// What is asked of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Print matching lines.
    Lines,
    /// `-c`: count matching lines.
    Count,
    /// `-l`: whether any line matches.
    List,
}

/// A printed line: its number (from 1) and its bytes in the file, without the newline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line {
    pub number: u64,
    pub start: usize,
    pub end: usize,
}

/// What grep finds in one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// Matching lines (with `-l`, at most 1: grep stops at the first).
    pub count: u64,
    /// With [`Mode::Lines`]: the lines printed.
    pub lines: Vec<Line>,
    /// With [`Mode::Lines`]: grep reports "binary file matches".
    pub binary: bool,
}

/// Searches `buf`, the whole content of a file.
pub fn grep(p: &Pattern, buf: &[u8], mode: Mode) -> Found {
    let mut f = Found::default();
    let nul = memchr::memchr(0, buf).is_some();
    if buf.is_empty() || (!nul && !p.may_match_text(buf)) {
        return f;
    }
    let mut number = 0u64;
    let mut start = 0;
    while start < buf.len() {
        let end = if nul {
            memchr::memchr2(b'\n', 0, &buf[start..])
        } else {
            memchr::memchr(b'\n', &buf[start..])
        }
        .map_or(buf.len(), |e| start + e);
        number += 1;
        let line = &buf[start..end];
        if p.is_match(line) {
            f.count += 1;
            match mode {
                Mode::List => return f,
                Mode::Count => {}
                Mode::Lines if nul => {
                    f.binary = true;
                    return f;
                }
                Mode::Lines => {
                    if std::str::from_utf8(line).is_ok() {
                        f.lines.push(Line { number, start, end });
                    } else {
                        f.binary = true;
                    }
                }
            }
        }
        start = end + 1;
    }
    f
}

#[cfg(test)]
mod tests {
    use super::super::pattern::Syntax;
    use super::*;

    fn p(s: &str) -> Pattern {
        Pattern::new(s, Syntax::Basic, false, false).unwrap()
    }

    #[test]
    fn text() {
        let f = grep(&p("foo"), b"foo one\nbar\nfoo two", Mode::Lines);
        assert_eq!(f.count, 2);
        assert_eq!(
            f.lines,
            [
                Line {
                    number: 1,
                    start: 0,
                    end: 7
                },
                Line {
                    number: 3,
                    start: 12,
                    end: 19
                }
            ]
        );
        assert!(!f.binary);
        assert_eq!(grep(&p("foo"), b"foo\nfoo\n", Mode::List).count, 1);
        assert_eq!(grep(&p("^$"), b"a\n\nb\n", Mode::Count).count, 1);
        assert_eq!(grep(&p(""), b"a\n", Mode::Count).count, 1);
    }

    #[test]
    fn nul_makes_a_file_binary_and_ends_lines() {
        let f = grep(&p("foo"), b"foo one\nbar\0baz foo\n", Mode::Lines);
        assert!(f.binary);
        assert!(f.lines.is_empty());
        assert_eq!(grep(&p("foo"), b"foo\0foo\n", Mode::Count).count, 2);
        assert_eq!(grep(&p("^baz"), b"bar\0baz\n", Mode::Count).count, 1);
    }

    #[test]
    fn encoding_errors_hide_lines() {
        let f = grep(
            &p("foo"),
            b"foo one\nfoo \xff bad\nfoo three\n",
            Mode::Lines,
        );
        assert_eq!(f.count, 3);
        assert_eq!(f.lines.len(), 2);
        assert!(f.binary);
    }
}
