//! What opencode's configuration says about a model: its limits, which decide when
//! opencode compacts (§5.5), and the compaction settings.
//!
//! opencode knows a model's limits from its provider's entry in the configuration
//! (`provider.<id>.models.<id>.limit`, in `opencode.json` or `opencode.jsonc` of its
//! config folder, or the file `OPENCODE_CONFIG` names) or from the models.dev catalog it
//! caches (`<cache>/opencode/models.json`). The config folder of the HOME the database
//! lies in is read (`<home>/.local/share/opencode/opencode.db` → `<home>/.config`),
//! else `$XDG_CONFIG_HOME`, else `~/.config`. A model found in neither has no known
//! limit: then sessionfs cannot tell when opencode would compact, and says so.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// A model's limits (tokens; 0 unknown).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub context: u64,
    pub input: u64,
    pub output: u64,
}

/// opencode's `compaction` settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Compaction {
    pub auto: Option<bool>,
    pub reserved: Option<u64>,
    pub preserve_recent_tokens: Option<u64>,
    pub tail_turns: Option<i64>,
}

/// What is known of the configuration.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The configuration files, merged (later wins).
    pub config: Value,
    /// The models.dev catalog, if cached.
    pub catalog: Value,
}

/// The output cap opencode applies (`OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX`, 32000).
pub fn output_token_max() -> u64 {
    std::env::var("OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&v: &u64| v > 0)
        .unwrap_or(32_000)
}

/// JSON with comments and trailing commas (JSONC) as JSON.
pub fn strip_jsonc(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            out.push(c as char);
            if c == b'\\' && i + 1 < b.len() {
                out.push(b[i + 1] as char);
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => {
                in_str = true;
                out.push('"');
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b',' => {
                // A trailing comma: the next thing that is not blank closes.
                let mut j = i + 1;
                while j < b.len() && (b[j] as char).is_ascii_whitespace() {
                    j += 1;
                }
                if !matches!(b.get(j), Some(b'}') | Some(b']')) {
                    out.push(',');
                }
                i += 1;
            }
            _ => {
                // Bytes of a UTF-8 character outside strings are kept as they are.
                let ch_len = match c {
                    0x00..=0x7f => 1,
                    0xc0..=0xdf => 2,
                    0xe0..=0xef => 3,
                    _ => 4,
                };
                let end = (i + ch_len).min(b.len());
                out.push_str(&String::from_utf8_lossy(&b[i..end]));
                i = end;
            }
        }
    }
    out
}

/// A config file: a regular file only, never blocking, at most 4 MiB (opencode's
/// configs are a few KB).
fn read_json(p: &Path) -> Option<Value> {
    use crate::model::core::input::{open_regular, read_bounded};
    let bytes = read_bounded(open_regular(p).ok()?, 4 << 20).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    serde_json::from_str(&strip_jsonc(&text)).ok()
}

/// `b` merged into `a` (objects key by key, anything else replaced).
fn merge(a: &mut Value, b: Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (a, b) => *a = b,
    }
}

/// The HOME a database lies in, when it is `<home>/.local/share/opencode/<file>`.
fn home_of_db(db: &Path) -> Option<PathBuf> {
    let data = db.parent()?;
    if data.file_name()? != "opencode" {
        return None;
    }
    let share = data.parent()?;
    let local = share.parent()?;
    (share.file_name()? == "share" && local.file_name()? == ".local")
        .then(|| local.parent().map(Path::to_path_buf))
        .flatten()
}

impl Config {
    /// The configuration that applies to the database `db`, for a session run in
    /// `directory` (its `opencode.json`, and its worktree's, count too).
    pub fn load(db: &Path, directory: &str, worktree: Option<&str>) -> Config {
        let home = home_of_db(db);
        let env_dir = |var: &str, tail: &str| {
            std::env::var_os(var)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .or_else(|| {
                    std::env::var_os("HOME")
                        .filter(|h| !h.is_empty())
                        .map(|h| PathBuf::from(h).join(tail))
                })
        };
        let (config_dir, cache_dir) = match &home {
            Some(h) => (Some(h.join(".config")), Some(h.join(".cache"))),
            None => (
                env_dir("XDG_CONFIG_HOME", ".config"),
                env_dir("XDG_CACHE_HOME", ".cache"),
            ),
        };
        let mut config = Value::Object(Default::default());
        if let Some(d) = &config_dir {
            for name in ["config.json", "opencode.json", "opencode.jsonc"] {
                if let Some(v) = read_json(&d.join("opencode").join(name)) {
                    merge(&mut config, v);
                }
            }
        }
        if home.is_none()
            && let Some(p) = std::env::var_os("OPENCODE_CONFIG")
            && let Some(v) = read_json(Path::new(&p))
        {
            merge(&mut config, v);
        }
        let mut dirs: Vec<&str> = Vec::new();
        if let Some(w) = worktree.filter(|w| *w != "/" && !w.is_empty()) {
            dirs.push(w);
        }
        if !directory.is_empty() && Some(directory) != worktree {
            dirs.push(directory);
        }
        for d in dirs {
            for name in ["opencode.json", "opencode.jsonc"] {
                if let Some(v) = read_json(&Path::new(d).join(name)) {
                    merge(&mut config, v);
                }
            }
        }
        let catalog = cache_dir
            .and_then(|d| read_json(&d.join("opencode").join("models.json")))
            .unwrap_or(Value::Null);
        Config { config, catalog }
    }

    /// The limits of `provider`/`model`, when known.
    pub fn limits(&self, provider: &str, model: &str) -> Option<Limits> {
        let from = |v: &Value| -> Option<Limits> {
            let l = v.get("limit")?;
            let n = |k: &str| l.get(k).and_then(Value::as_u64).unwrap_or(0);
            Some(Limits {
                context: n("context"),
                input: n("input"),
                output: n("output"),
            })
        };
        let configured = self
            .config
            .get("provider")
            .and_then(|p| p.get(provider))
            .and_then(|p| p.get("models"))
            .and_then(|m| m.get(model))
            .and_then(from);
        configured.or_else(|| {
            self.catalog
                .get(provider)
                .and_then(|p| p.get("models"))
                .and_then(|m| m.get(model))
                .and_then(from)
        })
    }

    /// The `compaction` settings.
    pub fn compaction(&self) -> Compaction {
        let c = self.config.get("compaction");
        let get = |k: &str| c.and_then(|c| c.get(k));
        Compaction {
            auto: get("auto").and_then(Value::as_bool),
            reserved: get("reserved").and_then(Value::as_u64),
            preserve_recent_tokens: get("preserve_recent_tokens").and_then(Value::as_u64),
            tail_turns: get("tail_turns").and_then(Value::as_i64),
        }
    }
}

impl Limits {
    /// `ProviderTransform.maxOutputTokens`: the model's output limit, capped.
    pub fn max_output(&self) -> u64 {
        let cap = output_token_max();
        match self.output.min(cap) {
            0 => cap,
            n => n,
        }
    }

    /// The tokens a request may use before opencode compacts (`SessionCompaction`'s
    /// usable context).
    pub fn usable(&self, c: &Compaction) -> u64 {
        if self.context == 0 {
            return 0;
        }
        let reserved = c.reserved.unwrap_or_else(|| 20_000.min(self.max_output()));
        if self.input > 0 {
            self.input.saturating_sub(reserved)
        } else {
            self.context.saturating_sub(self.max_output())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonc_reads_as_json() {
        let t = "{\n // a comment\n \"a\": \"x // not a comment\", /* b */ \"b\": [1, 2,],\n}";
        let v: Value = serde_json::from_str(&strip_jsonc(t)).unwrap();
        assert_eq!(v["a"], "x // not a comment");
        assert_eq!(v["b"], serde_json::json!([1, 2]));
    }

    #[test]
    fn the_fake_models_usable_context() {
        let l = Limits {
            context: 100_000,
            input: 0,
            output: 4_000,
        };
        assert_eq!(l.usable(&Compaction::default()), 96_000);
    }
}
