//! Which rules a file is searched by: the agents' rules, chosen as the index chooses
//! the agent.
//!
//! What a format's renderer adds to the text it takes from the raw lines, and what
//! else the search must know of the format, is the agent's own knowledge, kept in its
//! folder as a [`Rules`] (`crate::model::core::grep` explains each part and why the
//! prefilter is sound with it). This module only picks a file's rules, through the
//! agents' table ([`crate::model::agents::SEARCH`]): from the file's name when an
//! agent has read its first line already ([`known`]), else from its first line that
//! parses ([`detect`]). A file whose format or version no agent claims is searched
//! without prefilter, every entry rendered.

pub use crate::model::core::grep::{Decoration, Held, LineContent, Rules, Spilled, Trigger};
use crate::model::core::scan::{LineError, LineHead};
use std::path::Path;

/// Every format the prefilter knows, every agent's.
pub fn all() -> &'static [&'static Rules] {
    crate::model::agents::SEARCH.rules
}

/// The rules named `name` ([`Rules::name`]).
pub fn named(name: &str) -> Option<&'static Rules> {
    all().iter().copied().find(|r| r.name == name)
}

/// The rules for a file whose first complete lines are `head` (whole lines, each
/// ending in `\n`), or `None` when the prefilter must not be used: the format is not
/// known here. As the index decides (`Session::open`): by the first line that parses
/// as a JSON object; a file whose first JSON line is not an object is no session.
pub fn detect(head: &[u8]) -> Option<&'static Rules> {
    for line in head.split(|&b| b == b'\n') {
        let h = match LineHead::parse(line) {
            Ok(h) => h,
            // The index refuses a file whose first JSON line is not an object.
            Err(LineError::NotAnObject) => return None,
            Err(_) => continue,
        };
        return (crate::model::agents::SEARCH.detect)(line, &h);
    }
    None
}

/// The rules for the file at `path` when its name and what the search has read of it
/// already say them, before its first lines are read; `None`: ask [`detect`].
pub fn known(path: &Path) -> Option<&'static Rules> {
    (crate::model::agents::SEARCH.known)(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        let h = |v: &str| format!("{{\"type\":\"session\",\"id\":\"x\"{v}}}\n");
        assert_eq!(detect(h(",\"version\":3").as_bytes()).unwrap().name, "pi");
        assert_eq!(
            detect(h(",\"version\":2").as_bytes()).unwrap().name,
            "pi-v2"
        );
        assert_eq!(
            detect(h(",\"version\":\"x\"").as_bytes()).unwrap().name,
            "pi"
        );
        assert_eq!(
            detect(h(",\"version\":1").as_bytes()).unwrap().name,
            "pi-v1"
        );
        assert_eq!(detect(h("").as_bytes()).unwrap().name, "pi-v1");
        assert!(detect(format!("\n{}", h(",\"version\":3")).as_bytes()).is_some());
        assert!(detect(b"{\"type\":\"message\"}\n").is_none());
        let claude = br#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s"}"#;
        assert_eq!(
            detect(&[&claude[..], b"\n"].concat()).unwrap().name,
            "claude"
        );
        assert!(detect(b"").is_none());
    }

    #[test]
    fn triggers_compile_and_names_are_unique() {
        let mut names = std::collections::HashSet::new();
        for r in all() {
            assert!(names.insert(r.name), "two formats named {}", r.name);
            for d in r.decorations {
                for t in d.when {
                    if let Trigger::Matches(r) = t {
                        regex::bytes::Regex::new(r).unwrap();
                    }
                }
            }
        }
    }
}
