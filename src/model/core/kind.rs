//! Entry kinds: what an entry's content file is called.
//!
//! The content file of a `message` entry is named after the message role (`user`,
//! `assistant`, `toolResult`, `bashExecution`, `custom`); every other entry after its
//! type (`model_change`, `compaction`, `label`, ...). Unknown roles and types are kept as
//! they are, made safe as a file name.

/// Index into a [`KindTable`].
pub type KindId = u16;

/// The distinct kinds seen in one session. Small: a handful of names.
#[derive(Debug, Clone, Default)]
pub struct KindTable {
    names: Vec<Box<str>>,
    types: Vec<Box<str>>,
    /// (type, role) of each kind, in the order of `names`.
    keys: Vec<(Box<str>, Box<str>)>,
}

impl KindTable {
    /// The kind of an entry with this `type` and (for messages) `message.role`.
    /// `hook_is_custom` applies the v2→v3 rename of role `hookMessage` to `custom`.
    pub fn intern(&mut self, ty: Option<&str>, role: Option<&str>, hook_is_custom: bool) -> KindId {
        let ty = ty.unwrap_or("");
        let role = if ty == "message" {
            role.unwrap_or("")
        } else {
            ""
        };
        let role = if hook_is_custom && role == "hookMessage" {
            "custom"
        } else {
            role
        };
        if let Some(k) = self.position(ty, role) {
            return k as KindId;
        }
        if self.names.len() > KindId::MAX as usize {
            // Absurdly many distinct unknown types: the rest share the last kind.
            return KindId::MAX;
        }
        let k = self.names.len() as KindId;
        self.names.push(file_name_for(ty, role).into());
        self.types.push(ty.into());
        self.keys.push((ty.into(), role.into()));
        k
    }

    /// The kind keyed by `(ty, sub)` whose content file is called `name` (made safe as a
    /// file name): for formats whose file names are not Pi's `type`/role rule.
    pub fn intern_named(&mut self, ty: &str, sub: &str, name: &str) -> KindId {
        if let Some(k) = self.position(ty, sub) {
            return k as KindId;
        }
        if self.names.len() > KindId::MAX as usize {
            return KindId::MAX;
        }
        let k = self.names.len() as KindId;
        self.names.push(sanitize(name).into());
        self.types.push(ty.into());
        self.keys.push((ty.into(), sub.into()));
        k
    }

    /// The kind with this `type` and (for messages, else `""`) role, if any entry has it.
    pub fn find(&self, ty: &str, role: &str) -> Option<KindId> {
        if self.names.len() > KindId::MAX as usize {
            return None; // kinds past the limit are shared: not an exact answer
        }
        self.position(ty, role).map(|k| k as KindId)
    }

    fn position(&self, ty: &str, role: &str) -> Option<usize> {
        // A handful of kinds: a linear search beats hashing, and allocates nothing.
        self.keys
            .iter()
            .position(|(t, r)| **t == *ty && **r == *role)
    }

    /// The content file name of this kind.
    pub fn name(&self, k: KindId) -> &str {
        &self.names[k as usize]
    }

    /// The entry `type` of this kind.
    pub fn entry_type(&self, k: KindId) -> &str {
        &self.types[k as usize]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// The entry types Pi 1.6 knows (§4 and §16 of the format notes). Others are kept, and
/// noted.
pub const KNOWN_TYPES: &[&str] = &[
    "message",
    "thinking_level_change",
    "model_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "context_edit",
    "usage",
];

fn file_name_for(ty: &str, role: &str) -> String {
    let raw = if ty == "message" {
        if role.is_empty() { "message" } else { role }
    } else if ty.is_empty() {
        "entry"
    } else {
        ty
    };
    sanitize(raw)
}

/// Makes any string a usable file name that cannot clash with an entry directory's
/// fixed names (`reply`, `context`, `image-N.EXT`, ...): such names get a `_` prefix.
pub fn sanitize(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| {
            if c == '/' || c == '\0' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    if s.len() > 200 {
        let mut cut = 200;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    if s.is_empty()
        || s == "."
        || s == ".."
        || s.starts_with('%')
        || s.starts_with("image-")
        || FIXED_NAMES.contains(&s.as_str())
    {
        s.insert(0, '_');
    }
    s
}

/// Names an entry directory already uses for something else.
const FIXED_NAMES: &[&str] = &[
    "reply",
    "entry.json",
    "context",
    "context.json",
    "cost",
    "cost.json",
    "parent",
    "edited-by",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let mut t = KindTable::default();
        let u = t.intern(Some("message"), Some("user"), false);
        assert_eq!(t.name(u), "user");
        assert_eq!(t.intern(Some("message"), Some("user"), false), u);
        let h = t.intern(Some("message"), Some("hookMessage"), true);
        assert_eq!(t.name(h), "custom");
        let m = t.intern(Some("model_change"), Some("ignored"), false);
        assert_eq!(t.name(m), "model_change");
        assert_eq!(t.entry_type(m), "model_change");
        let odd = t.intern(Some("a/b"), None, false);
        assert_eq!(t.name(odd), "a_b");
        let none = t.intern(None, None, false);
        assert_eq!(t.name(none), "entry");
        let dots = t.intern(Some("message"), Some(".."), false);
        assert_eq!(t.name(dots), "_..");
        let reply = t.intern(Some("reply"), None, false);
        assert_eq!(t.name(reply), "_reply");
        let img = t.intern(Some("image-1.png"), None, false);
        assert_eq!(t.name(img), "_image-1.png");
        let link = t.intern(Some("edited-by"), None, false);
        assert_eq!(t.name(link), "_edited-by");
    }
}
