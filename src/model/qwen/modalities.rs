//! What media a model takes, by Qwen Code 0.24.4's table of model names
//! (`defaultModalities`): the history's builder and the media pass both ask it, so it
//! sits below them.

/// The media a model takes, by Qwen Code's table of model names (`defaultModalities`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Modalities {
    pub image: bool,
    pub pdf: bool,
    pub audio: bool,
    pub video: bool,
}

/// A model name as Qwen Code normalizes it before looking it up.
fn normalize_model(model: &str) -> String {
    let mut s = model.trim().to_lowercase();
    if let Some(k) = s.rfind('/') {
        s = s[k + 1..].to_string();
    }
    if let Some(k) = s.rfind('|') {
        s = s[k + 1..].to_string();
    }
    if let Some(k) = s.rfind(':') {
        s = s[k + 1..].to_string();
    }
    s = s.split_whitespace().collect::<Vec<_>>().join("-");
    s = s.replace("-preview", "");
    for suffix in ["-latest", "-exp"] {
        if let Some(t) = s.strip_suffix(suffix) {
            s = t.to_string();
        }
    }
    if let Some(k) = s.rfind('-') {
        let tail = &s[k + 1..];
        if tail.len() >= 4 && tail.bytes().all(|b| b.is_ascii_digit()) {
            s.truncate(k);
        }
    }
    s
}

/// `defaultModalities`: what media Qwen Code sends to `model`.
pub fn modalities(model: &str) -> Modalities {
    let m = normalize_model(model);
    let full = Modalities {
        image: true,
        pdf: true,
        audio: true,
        video: true,
    };
    let image = Modalities {
        image: true,
        ..Modalities::default()
    };
    let image_video = Modalities {
        image: true,
        video: true,
        ..Modalities::default()
    };
    let starts = |p: &str| m.starts_with(p);
    let qwen_omni = m.starts_with("qwen") && {
        let rest = m["qwen".len()..].trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
        rest.starts_with("-omni")
    };
    if starts("gemini-") {
        full
    } else if starts("gpt-") || (starts("o") && m[1..].starts_with(|c: char| c.is_ascii_digit())) {
        image
    } else if starts("claude-") {
        Modalities {
            image: true,
            pdf: true,
            ..Modalities::default()
        }
    } else if qwen_omni || starts("qwen-omni") {
        full
    } else if starts("qwen3.5-plus")
        || starts("qwen3.6-plus")
        || starts("qwen3.7-plus")
        || starts("qwen3.8-flash")
        || starts("qwen3.8-plus")
        || m == "coder-model"
        || starts("qwen-vl-")
        || starts("qwen3-vl-")
        || starts("qwen3.6-35b")
    {
        image_video
    } else if starts("qwen3.8-max") {
        image
    } else if starts("qwen") {
        Modalities::default()
    } else if (starts("deepseek-") && m.contains("vision"))
        || starts("glm-5.3-flash")
        || (starts("glm-") && {
            let rest = &m[4..];
            let v = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
            v.len() < rest.len() && v.starts_with('v')
        })
    {
        image
    } else if starts("minimax-m3") || starts("kimi-k3") || starts("kimi-k2.") {
        image_video
    } else if starts("doubao-seedance") || starts("doubao-seedream") {
        Modalities::default()
    } else if starts("doubao-seed")
        || (starts("doubao-") && (m.contains("vision") || m.contains("vl")))
    {
        image
    } else {
        Modalities::default()
    }
}
