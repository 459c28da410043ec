//! What `sessionfs grep` knows of Qwen Code's files (`crate::model::core::grep`).

use crate::model::core::grep::Rules;
use crate::model::core::scan::LineHead;

/// The rules of a Qwen Code file whose first parsed line is `line`: none yet, so its
/// files are searched without prefilter (every entry rendered).
pub fn detect(_line: &[u8], _head: &LineHead) -> Option<&'static Rules> {
    None
}
