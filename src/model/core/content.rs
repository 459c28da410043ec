//! What an entry's directory holds as content: its KIND file and its images.
//!
//! The mount serves these bytes as `ID/KIND` and `ID/image-N.EXT`, and `sessionfs grep`
//! searches them; both get them from [`entry_content`], so what a search finds is what
//! `grep -r` through a mount finds, byte for byte.
//!
//! The KIND file's name is [`Session::kind_name`]; its text is its format's rendering
//! of the entry ([`Session::render`]: for Pi, [`render::render_entry`] of the entry as
//! Pi holds it in memory). An entry that is indexed (its line is valid JSON) but
//! nested too deeply to be built gets a one-line explanation instead, and no images.
//! A Claude Code tool result whose output was spilled to a file of its own names that
//! file ([`Content::full_output`]), which the entry shows as [`FULL_OUTPUT`].
//!
//! In a session of format version 3 (Pi's current one) an entry is held as it is
//! written, so its content follows from its line alone: [`line_content`] gives it
//! without the session, which lets a search skip indexing files with no match.

use crate::model::core::session::Session;
use crate::model::core::text::Image;
use std::io;
use std::path::PathBuf;

/// An entry's content files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content {
    /// The KIND file: never empty, always ending in `\n`.
    pub text: Vec<u8>,
    /// The images, in order: `image-1.EXT` first.
    pub images: Vec<Image>,
    /// The file holding the full output of a tool result its format keeps apart
    /// (Claude Code's `tool-results/`), shown as [`FULL_OUTPUT`] after the images.
    pub full_output: Option<PathBuf>,
}

/// The name of the file that shows [`Content::full_output`].
pub const FULL_OUTPUT: &str = "full-output";

impl Content {
    /// How many of the images an entry's directory shows when it can show `max`
    /// files besides its KIND file: `full-output` takes the last place.
    pub fn images_shown(&self, max: usize) -> usize {
        let room = if self.full_output.is_some() {
            max.saturating_sub(1)
        } else {
            max
        };
        self.images.len().min(room)
    }
}

/// The content files of entry `i` of `s`. Fails only when the file cannot be read.
pub fn entry_content(s: &Session, i: u32) -> io::Result<Content> {
    match s.render(i) {
        Ok((text, images)) => Ok(Content {
            text: text.into_bytes(),
            images,
            full_output: s.full_output(i),
        }),
        // Indexed (it is valid JSON) but too deeply nested to build: say so.
        Err(e) if e.kind() == io::ErrorKind::InvalidData => Ok(Content {
            text: format!("[this entry cannot be shown: {e}; its raw line is in entry.json]\n")
                .into_bytes(),
            images: Vec::new(),
            full_output: None,
        }),
        Err(e) => Err(e),
    }
}

/// The `image-N.EXT` name of image `n` (from 0) of `c`.
pub fn image_name(c: &Content, n: usize) -> String {
    format!("image-{}.{}", n + 1, c.images[n].ext)
}
