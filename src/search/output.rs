//! Printing hits as GNU grep prints them, colours included.
//!
//! Colours follow grep: `GREP_COLORS` (`ms`, `mc`, `mt`, `sl`, `cx`, `fn`, `ln`, `bn`,
//! `se`, and the booleans `rv` and `ne`; malformed input stops the parsing where it
//! is, as in grep), the deprecated `GREP_COLOR` for matches (with grep's warning),
//! and grep's defaults (`ms=01;31:mc=01;31:sl=:cx=:fn=35:ln=32:bn=32:se=36`). Every
//! colour is written as `ESC[…m ESC[K` and ended with `ESC[m ESC[K` (without the
//! `ESC[K` under `ne`), exactly where grep writes them.

use super::pattern::Pattern;

/// The colours in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Colors {
    pub selected_match: String,
    pub context_match: String,
    pub filename: String,
    pub line_number: String,
    pub byte_offset: String,
    pub separator: String,
    pub selected_line: String,
    pub context_line: String,
    /// `ne`: no "erase in line" after each colour change.
    pub no_erase: bool,
}

impl Default for Colors {
    fn default() -> Colors {
        Colors {
            selected_match: "01;31".into(),
            context_match: "01;31".into(),
            filename: "35".into(),
            line_number: "32".into(),
            byte_offset: "32".into(),
            separator: "36".into(),
            selected_line: String::new(),
            context_line: String::new(),
            no_erase: false,
        }
    }
}

impl Colors {
    /// The colours from `GREP_COLOR` and `GREP_COLORS` (the values given), and the
    /// warning grep prints when `GREP_COLOR` takes effect.
    pub fn from_env(
        grep_color: Option<&str>,
        grep_colors: Option<&str>,
    ) -> (Colors, Option<String>) {
        let mut c = Colors::default();
        let mut legacy = None;
        if let Some(v) = grep_color.filter(|v| !v.is_empty())
            && v.bytes().all(|b| b == b';' || b.is_ascii_digit())
        {
            c.selected_match = v.to_string();
            c.context_match = v.to_string();
            legacy = Some(v.to_string());
        }
        if let Some(spec) = grep_colors {
            c.parse(spec);
        }
        let warning = legacy
            .filter(|v| c.selected_match == *v || c.context_match == *v)
            .map(|v| format!("warning: GREP_COLOR='{v}' is deprecated; use GREP_COLORS='mt={v}'"));
        (c, warning)
    }

    /// Applies a `GREP_COLORS` value, as grep's `parse_grep_colors` does.
    fn parse(&mut self, spec: &str) {
        if spec.is_empty() {
            return;
        }
        let b = spec.as_bytes();
        let (mut name_start, mut val_start): (usize, Option<usize>) = (0, None);
        let mut i = 0;
        loop {
            let c = b.get(i).copied();
            match c {
                None | Some(b':') => {
                    let name_end = val_start.map_or(i, |v| v - 1);
                    let name = &spec[name_start..name_end];
                    let val = val_start.map(|v| &spec[v..i]);
                    self.set(name, val);
                    if c.is_none() {
                        return;
                    }
                    i += 1;
                    name_start = i;
                    val_start = None;
                }
                Some(b'=') => {
                    if i == name_start || val_start.is_some() {
                        return;
                    }
                    i += 1;
                    val_start = Some(i);
                }
                Some(_) if val_start.is_none() => i += 1,
                Some(x) if x == b';' || x.is_ascii_digit() => i += 1,
                Some(_) => return,
            }
        }
    }

    fn set(&mut self, name: &str, val: Option<&str>) {
        let v = |s: &mut String| {
            if let Some(val) = val {
                *s = val.to_string();
            }
        };
        match name {
            "mt" => {
                v(&mut self.selected_match);
                self.context_match = self.selected_match.clone();
            }
            "ms" => v(&mut self.selected_match),
            "mc" => v(&mut self.context_match),
            "fn" => v(&mut self.filename),
            "ln" => v(&mut self.line_number),
            "bn" => v(&mut self.byte_offset),
            "se" => v(&mut self.separator),
            "sl" => v(&mut self.selected_line),
            "cx" => v(&mut self.context_line),
            "ne" => self.no_erase = true,
            // `rv` swaps sl and cx for -v only, which sessionfs grep does not have.
            _ => {}
        }
    }

    fn start(&self, out: &mut Vec<u8>, color: &str) {
        if !color.is_empty() {
            out.extend_from_slice(b"\x1b[");
            out.extend_from_slice(color.as_bytes());
            out.push(b'm');
            if !self.no_erase {
                out.extend_from_slice(b"\x1b[K");
            }
        }
    }

    fn end(&self, out: &mut Vec<u8>, color: &str) {
        if !color.is_empty() {
            out.extend_from_slice(if self.no_erase {
                b"\x1b[m"
            } else {
                b"\x1b[m\x1b[K"
            });
        }
    }
}

/// Writes grep's output lines.
#[derive(Debug, Clone)]
pub struct Printer {
    /// `None`: no colour.
    pub colors: Option<Colors>,
    pub line_numbers: bool,
}

impl Printer {
    fn filename(&self, out: &mut Vec<u8>, path: &[u8]) {
        match &self.colors {
            Some(c) => {
                c.start(out, &c.filename);
                out.extend_from_slice(path);
                c.end(out, &c.filename);
            }
            None => out.extend_from_slice(path),
        }
    }

    fn sep(&self, out: &mut Vec<u8>) {
        match &self.colors {
            Some(c) => {
                c.start(out, &c.separator);
                out.push(b':');
                c.end(out, &c.separator);
            }
            None => out.push(b':'),
        }
    }

    /// `-l`: the file's path.
    pub fn list(&self, out: &mut Vec<u8>, path: &[u8]) {
        self.filename(out, path);
        out.push(b'\n');
    }

    /// `-c`: `PATH:COUNT`.
    pub fn count(&self, out: &mut Vec<u8>, path: &[u8], count: u64) {
        self.filename(out, path);
        self.sep(out);
        out.extend_from_slice(count.to_string().as_bytes());
        out.push(b'\n');
    }

    /// A matching line: `PATH:[N:]LINE`, the matches coloured.
    pub fn line(&self, out: &mut Vec<u8>, path: &[u8], number: u64, line: &[u8], p: &Pattern) {
        self.filename(out, path);
        self.sep(out);
        if self.line_numbers {
            match &self.colors {
                Some(c) => {
                    c.start(out, &c.line_number);
                    out.extend_from_slice(number.to_string().as_bytes());
                    c.end(out, &c.line_number);
                }
                None => out.extend_from_slice(number.to_string().as_bytes()),
            }
            self.sep(out);
        }
        let Some(c) = &self.colors else {
            out.extend_from_slice(line);
            out.push(b'\n');
            return;
        };
        let (sl, ms) = (&c.selected_line, &c.selected_match);
        let mut cur = 0;
        if !ms.is_empty() {
            // grep's print_line_middle.
            let mut mid: Option<usize> = None;
            while cur < line.len() {
                let Some((b, e)) = p.find_at(line, cur) else {
                    break;
                };
                if e == b {
                    // An empty match: step over a byte, printing nothing yet.
                    mid.get_or_insert(cur);
                    cur = b + 1;
                    continue;
                }
                c.start(out, sl);
                if let Some(m) = mid.take() {
                    cur = m;
                }
                out.extend_from_slice(&line[cur..b]);
                c.start(out, ms);
                out.extend_from_slice(&line[b..e]);
                c.end(out, ms);
                cur = e;
            }
            if let Some(m) = mid {
                cur = m;
            }
        }
        if !sl.is_empty() {
            // grep's print_line_tail: a trailing CR stays outside the colour.
            let tail_end = if line.last() == Some(&b'\r') {
                line.len() - 1
            } else {
                line.len()
            };
            if tail_end > cur {
                c.start(out, sl);
                out.extend_from_slice(&line[cur..tail_end]);
                c.end(out, sl);
                cur = tail_end;
            }
        }
        out.extend_from_slice(&line[cur.min(line.len())..]);
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::super::pattern::Syntax;
    use super::*;

    #[test]
    fn grep_colors_parsing() {
        let (c, w) = Colors::from_env(None, Some("ms=01;32:fn=:ne"));
        assert_eq!(c.selected_match, "01;32");
        assert_eq!(c.filename, "");
        assert!(c.no_erase);
        assert!(w.is_none());
        // Malformed: parsing stops there.
        let (c, _) = Colors::from_env(None, Some("ln=33:fn=x5:se=31"));
        assert_eq!(c.line_number, "33");
        assert_eq!(c.filename, "35");
        assert_eq!(c.separator, "36");
        let (c, w) = Colors::from_env(Some("01;33"), None);
        assert_eq!(c.selected_match, "01;33");
        assert!(w.unwrap().contains("deprecated"));
        let (c, w) = Colors::from_env(Some("01;33"), Some("mt=01;34"));
        assert_eq!(c.context_match, "01;34");
        assert!(w.is_none());
    }

    #[test]
    fn coloured_line() {
        let p = Pattern::new("o", Syntax::Basic, false, false).unwrap();
        let pr = Printer {
            colors: Some(Colors::default()),
            line_numbers: true,
        };
        let mut out = Vec::new();
        pr.line(&mut out, b"f", 3, b"foo", &p);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\x1b[35m\x1b[Kf\x1b[m\x1b[K\x1b[36m\x1b[K:\x1b[m\x1b[K\x1b[32m\x1b[K3\x1b[m\x1b[K\
             \x1b[36m\x1b[K:\x1b[m\x1b[Kf\x1b[01;31m\x1b[Ko\x1b[m\x1b[K\x1b[01;31m\x1b[Ko\x1b[m\x1b[K\n"
        );
    }
}
