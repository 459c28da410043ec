//! Inode numbers: computed, stable, never reused within a mount.
//!
//! The fixed files of the root have small fixed numbers. Every entry owns a block of
//! [`SLOTS`] numbers, one per file it can show (its nested directory, its `.id/`
//! directory, its content file, images, links...), at
//! `ENTRY_BASE + generation_base + index * SLOTS + slot`. Entry indices only grow while
//! a file is appended to; when the file is replaced and reloaded, `generation_base`
//! moves past every number handed out so far, so an old number can never name a new
//! thing (it answers `ESTALE`). Label symlinks are numbered per label name from a
//! counter below `ENTRY_BASE`.

pub type Ino = u64;

pub const ROOT: Ino = 1;
pub const SESSION_JSON: Ino = 2;
pub const NAME: Ino = 3;
pub const TREE: Ino = 4;
pub const ROOT_REPLY: Ino = 5;
pub const LEAF: Ino = 6;
pub const BRANCHES: Ino = 7;
pub const LABELS: Ino = 8;
pub const ID_DIR: Ino = 9;
/// `cost` and `cost.json` at the root: the session's usage. (10 is a sessions
/// mount's `ERROR` file, `multi::ERROR_LOCAL`.)
pub const COST: Ino = 12;
pub const COST_JSON: Ino = 13;
/// `forked-from` at the root of a session that continues another one's entry.
pub const FORKED_FROM: Ino = 14;

/// First number for label symlinks.
pub const LABEL_BASE: Ino = 64;
/// First number for entries.
pub const ENTRY_BASE: Ino = 1 << 32;
/// Numbers per entry.
pub const SLOTS: u64 = 64;

/// What an entry's inode is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// `…/ID/` in the nested tree.
    NestedDir,
    /// `.id/ID/`.
    FlatDir,
    /// The content file (`user`, `assistant`, ...), shared by both directories.
    Kind,
    /// `reply`, shared by both directories.
    Reply,
    /// `.id/ID/entry.json`, `.id/ID/context`, `.id/ID/context.json`.
    EntryJson,
    Context,
    ContextJson,
    /// The symlinks of the same names in the nested directory.
    EntryJsonLink,
    ContextLink,
    ContextJsonLink,
    /// `.id/ID/parent`.
    ParentLink,
    /// `.id/PARENT/ID`, the link from the parent's flat directory to this entry.
    ChildLink,
    /// `branches/ID`.
    BranchLink,
    /// `reply` in the nested directory: a link to the entry's `.id/ID/reply`.
    ReplyLink,
    /// `…/ID/edited-by`, the link to the `context_edit` that edits the entry.
    EditedByLink,
    /// `.id/ID/edited-by`.
    EditedByFlatLink,
    /// `.id/ID/cost`, `.id/ID/cost.json`: the entry's usage and the total to it.
    Cost,
    CostJson,
    /// The symlinks of the same names in the nested directory.
    CostLink,
    CostJsonLink,
    /// `…/ID/request` and `…/ID/request.json` of an answer: links to the context the
    /// model answered (`Session::request_of`).
    RequestLink,
    RequestJsonLink,
    /// `.id/ID/request`, `.id/ID/request.json`.
    RequestFlatLink,
    RequestJsonFlatLink,
    /// `.id/ID/forks/`: a link to each session that continues from the entry
    /// (`Session::forks_at`); the links themselves are numbered as labels are.
    ForksDir,
    /// `forks` in the nested directory: a link to `.id/ID/forks`.
    ForksLink,
    /// `image-N.EXT`, N from 1.
    Image(u32),
    /// `.id/ID/fork`: writing it forks the session at the entry (the last slot).
    Fork,
    /// `fork` in the nested directory: a link to the entry's `.id/ID/fork`.
    ForkLink,
}

/// Images an entry can show (slots 24 to 59; 60 and 61 are `forks`', 62 and 63
/// `fork`'s).
pub const MAX_IMAGES: u32 = (SLOTS - 28) as u32;

impl Slot {
    /// For the nested directory's links into `.id/ID/`: the name of the file there
    /// each one names (`context` → `.id/ID/context`, …).
    pub fn file_in_id(self) -> Option<&'static str> {
        Some(match self {
            Slot::EntryJsonLink => "entry.json",
            Slot::ContextLink => "context",
            Slot::ContextJsonLink => "context.json",
            Slot::CostLink => "cost",
            Slot::CostJsonLink => "cost.json",
            Slot::ReplyLink => "reply",
            Slot::ForkLink => "fork",
            Slot::ForksLink => "forks",
            _ => return None,
        })
    }

    fn index(self) -> u64 {
        match self {
            Slot::NestedDir => 0,
            Slot::FlatDir => 1,
            Slot::Kind => 2,
            Slot::Reply => 3,
            Slot::EntryJson => 4,
            Slot::Context => 5,
            Slot::ContextJson => 6,
            Slot::EntryJsonLink => 7,
            Slot::ContextLink => 8,
            Slot::ContextJsonLink => 9,
            Slot::ParentLink => 10,
            Slot::ChildLink => 11,
            Slot::BranchLink => 12,
            Slot::ReplyLink => 13,
            Slot::EditedByLink => 14,
            Slot::EditedByFlatLink => 15,
            Slot::Cost => 16,
            Slot::CostJson => 17,
            Slot::CostLink => 18,
            Slot::CostJsonLink => 19,
            Slot::RequestLink => 20,
            Slot::RequestJsonLink => 21,
            Slot::RequestFlatLink => 22,
            Slot::RequestJsonFlatLink => 23,
            Slot::Image(n) => 23 + n as u64,
            Slot::ForksDir => SLOTS - 4,
            Slot::ForksLink => SLOTS - 3,
            Slot::ForkLink => SLOTS - 2,
            Slot::Fork => SLOTS - 1,
        }
    }

    fn from_index(i: u64) -> Slot {
        match i {
            0 => Slot::NestedDir,
            1 => Slot::FlatDir,
            2 => Slot::Kind,
            3 => Slot::Reply,
            4 => Slot::EntryJson,
            5 => Slot::Context,
            6 => Slot::ContextJson,
            7 => Slot::EntryJsonLink,
            8 => Slot::ContextLink,
            9 => Slot::ContextJsonLink,
            10 => Slot::ParentLink,
            11 => Slot::ChildLink,
            12 => Slot::BranchLink,
            13 => Slot::ReplyLink,
            14 => Slot::EditedByLink,
            15 => Slot::EditedByFlatLink,
            16 => Slot::Cost,
            17 => Slot::CostJson,
            18 => Slot::CostLink,
            19 => Slot::CostJsonLink,
            20 => Slot::RequestLink,
            21 => Slot::RequestJsonLink,
            22 => Slot::RequestFlatLink,
            23 => Slot::RequestJsonFlatLink,
            n if n == SLOTS - 4 => Slot::ForksDir,
            n if n == SLOTS - 3 => Slot::ForksLink,
            n if n == SLOTS - 2 => Slot::ForkLink,
            n if n == SLOTS - 1 => Slot::Fork,
            n => Slot::Image((n - 23) as u32),
        }
    }
}

/// The inode of `slot` of entry `idx` in the generation starting at `base`.
pub fn entry_ino(base: u64, idx: u32, slot: Slot) -> Ino {
    ENTRY_BASE + base + idx as u64 * SLOTS + slot.index()
}

/// Decodes an entry inode of the current generation. `Err(())` for an inode of an
/// earlier generation.
pub fn decode_entry(base: u64, ino: Ino) -> Option<Result<(u32, Slot), ()>> {
    if ino < ENTRY_BASE {
        return None;
    }
    let rel = ino - ENTRY_BASE;
    if rel < base {
        return Some(Err(()));
    }
    let rel = rel - base;
    let idx = rel / SLOTS;
    if idx > u32::MAX as u64 {
        return Some(Err(()));
    }
    Some(Ok((idx as u32, Slot::from_index(rel % SLOTS))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for slot in [
            Slot::NestedDir,
            Slot::Kind,
            Slot::BranchLink,
            Slot::ReplyLink,
            Slot::EditedByLink,
            Slot::EditedByFlatLink,
            Slot::Cost,
            Slot::CostJsonLink,
            Slot::RequestLink,
            Slot::RequestJsonFlatLink,
            Slot::Image(1),
            Slot::Image(MAX_IMAGES),
            Slot::Fork,
            Slot::ForkLink,
            Slot::ForksDir,
            Slot::ForksLink,
        ] {
            let ino = entry_ino(640, 7, slot);
            assert_eq!(decode_entry(640, ino), Some(Ok((7, slot))));
            assert_eq!(decode_entry(6400, ino), Some(Err(())));
        }
        assert_eq!(decode_entry(0, TREE), None);
    }
}
