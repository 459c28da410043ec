//! The `tree` file: the whole session drawn as Pi's `/tree` draws it.
//!
//! One line per entry in pre-order, children in Pi's order (by timestamp). As in Pi's
//! tree selector, a chain of single children stays in one column and indentation grows
//! only where the tree forks (and for the first generation after a fork), with `├─`/`└─`
//! connectors and `│` gutters; several roots hang off an invisible common root. Each
//! line gives the id, a one-line preview of the entry (see [`super::render::preview`]),
//! the label if any, and marks the leaf (where Pi resumes).
//!
//! A child that is a piece of its parent's turn ([`flags::PIECE`]: the dead end
//! parallel tool calls leave in a Claude Code file) is drawn in its parent's column,
//! before the real children, so that one turn reads as one turn and not as a fork.

use super::session::{Session, flags};
use std::io;

struct Frame {
    node: u32,
    indent: usize,
    just_branched: bool,
    show_connector: bool,
    is_last: bool,
    /// (position, draw a bar) for each open fork above.
    gutters: std::rc::Rc<Vec<(usize, bool)>>,
    virtual_root_child: bool,
}

/// Renders the whole tree. Reads and parses every entry once.
pub fn render_tree(s: &Session) -> io::Result<Vec<u8>> {
    let mut out: Vec<u8> = Vec::new();
    let roots = s.roots();
    let multiple_roots = roots.len() > 1;
    let leaf = s.leaf();
    let empty = std::rc::Rc::new(Vec::new());
    let mut stack: Vec<Frame> = Vec::new();
    for (i, &r) in roots.iter().enumerate().rev() {
        stack.push(Frame {
            node: r,
            indent: usize::from(multiple_roots),
            just_branched: multiple_roots,
            show_connector: multiple_roots,
            is_last: i == roots.len() - 1,
            gutters: empty.clone(),
            virtual_root_child: multiple_roots,
        });
    }
    let mut kids: Vec<u32> = Vec::new();
    let mut pieces: Vec<u32> = Vec::new();
    while let Some(f) = stack.pop() {
        let display_indent = if multiple_roots {
            f.indent.saturating_sub(1)
        } else {
            f.indent
        };
        let connector = f.show_connector && !f.virtual_root_child;
        let connector_pos = if connector {
            display_indent as isize - 1
        } else {
            -1
        };
        for level in 0..display_indent {
            if let Some(&(_, show)) = f.gutters.iter().find(|g| g.0 == level) {
                out.extend_from_slice(if show { "│  " } else { "   " }.as_bytes());
            } else if connector && level as isize == connector_pos {
                out.extend_from_slice(if f.is_last { "└─ " } else { "├─ " }.as_bytes());
            } else {
                out.extend_from_slice(b"   ");
            }
        }
        match s.alias(f.node) {
            Some(a) => out.extend_from_slice(a.as_bytes()),
            None => out.extend_from_slice(s.id_string(f.node).as_bytes()),
        }
        out.push(b' ');
        let line = match s.preview(f.node) {
            Ok(p) => p,
            Err(_) => format!("{} (unreadable)", s.kind_name(f.node)),
        };
        out.extend_from_slice(line.as_bytes());
        if let Some(l) = s.label_of(f.node) {
            out.extend_from_slice(format!("  [label: {}]", one_line(l)).as_bytes());
        }
        if Some(f.node) == leaf {
            out.extend_from_slice("  ← leaf".as_bytes());
        }
        out.push(b'\n');

        kids.clear();
        pieces.clear();
        for c in s.children(f.node) {
            if s.entry(c).flags & flags::PIECE != 0 {
                pieces.push(c);
            } else {
                kids.push(c);
            }
        }
        let multiple = kids.len() > 1;
        let child_indent = if multiple || (f.just_branched && f.indent > 0) {
            f.indent + 1
        } else {
            f.indent
        };
        let current_display = if multiple_roots {
            f.indent.saturating_sub(1)
        } else {
            f.indent
        };
        let gutters = if connector {
            let mut g = (*f.gutters).clone();
            g.push((current_display.saturating_sub(1), !f.is_last));
            std::rc::Rc::new(g)
        } else {
            f.gutters.clone()
        };
        for (i, &c) in kids.iter().enumerate().rev() {
            stack.push(Frame {
                node: c,
                indent: child_indent,
                just_branched: multiple,
                show_connector: multiple,
                is_last: i == kids.len() - 1,
                gutters: gutters.clone(),
                virtual_root_child: false,
            });
        }
        // Pieces of this turn: in this node's column, drawn first.
        let single_indent = if f.just_branched && f.indent > 0 {
            f.indent + 1
        } else {
            f.indent
        };
        for &c in pieces.iter().rev() {
            stack.push(Frame {
                node: c,
                indent: single_indent,
                just_branched: false,
                show_connector: false,
                is_last: true,
                gutters: gutters.clone(),
                virtual_root_child: false,
            });
        }
    }
    Ok(out)
}

fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}
