//! The `tree` file: the whole session drawn as Pi's `/tree` draws it.
//!
//! One line per entry in pre-order, children in Pi's order (by timestamp). As in Pi's
//! tree selector, a chain of single children stays in one column and indentation grows
//! only where the tree forks (and for the first generation after a fork), with `├─`/`└─`
//! connectors and `│` gutters; several roots hang off an invisible common root. Each
//! line gives the id, a one-line preview of the entry (see [`super::render::preview`]),
//! the label if any, and marks the leaf (where Pi resumes).

use super::render::preview;
use super::session::Session;
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
        out.extend_from_slice(s.id_string(f.node).as_bytes());
        out.push(b' ');
        let line = match s.entry_value(f.node) {
            Ok(v) => preview(&v),
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
        kids.extend(s.children(f.node));
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
    }
    Ok(out)
}

fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}
