//! Compressed pages (`.jsonl.zst`, CODEX-FORMAT §8), read as a stream.
//!
//! A compressed page is never decompressed into memory whole, as Codex itself reads it:
//! its lines are indexed as they stream out of the decompressor (`page::Index`), and a
//! line is read again by decompressing up to it ([`Pages`]). What one decompression
//! holds is fixed, whatever the page:
//!
//! * **the window**: zstd may refer back as far as the frame's window, so the decoder
//!   keeps that much. A frame asking for more than [`MAX_WINDOW`] (8 MiB; zstd's own
//!   levels 1 to 19 ask for at most 8 MiB, Codex's writer for 2) is refused, so a
//!   crafted header cannot make a decoder reserve gigabytes;
//! * one block (128 KiB) and the reader's buffer.
//!
//! **Bombs.** A page may decompress to at most [`allowance`] bytes: [`RATIO`] times its
//! compressed size, plus [`SLACK`]. Session lines compress three to ten times (a page
//! Codex compressed: 13,532 bytes for 49,717); a page that expands further is a
//! decompression bomb, and reading it stops there with an error that says how to read
//! it anyway (decompress it by hand). So a compressed page costs at most what a plain
//! page of 128 times its size costs, and a 37 KB file cannot make an index of a
//! gigabyte of lines.
//!
//! **Re-reading.** Reading one line of a compressed page means decompressing it from
//! its start. Readers mostly go forward (a context, the usage table, `tree`, `find`
//! and `grep -r` through a mount), so the decompressors left after a read are kept, at
//! most [`KEPT`] of them for the whole process, each where it stopped: a read further
//! on in the same file continues from there. Memory for all of it is bounded by the
//! number of decompressors alive at once (those kept plus one per thread reading),
//! never by the number or the size of pages.

use crate::model::core::input;
use parking_lot::Mutex;
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The largest zstd window decompressed with (see the module doc).
pub const MAX_WINDOW: u64 = 8 << 20;
/// How many times its compressed size a page may expand to (plus [`SLACK`]).
pub const RATIO: u64 = 128;
/// What any page may expand to, however small.
pub const SLACK: u64 = 1 << 20;
/// How many decompressors are kept between reads, for the whole process.
pub const KEPT: usize = 2;

/// The most a compressed page of `compressed` bytes is decompressed to.
pub fn allowance(compressed: u64) -> u64 {
    SLACK.saturating_add(compressed.saturating_mul(RATIO))
}

/// The decompressed bytes of a zstd stream: every frame in turn (as `zstd -d` reads
/// them), with the window bounded by [`MAX_WINDOW`] and the output by `cap`.
pub struct Stream<R> {
    src: BufReader<R>,
    dec: FrameDecoder,
    in_frame: bool,
    /// Bytes handed out so far.
    pub produced: u64,
    cap: u64,
}

impl Stream<File> {
    /// The page at `path`, opened as a regular file without blocking, expanding to at
    /// most [`allowance`] of its size.
    pub fn open(path: &Path) -> io::Result<Stream<File>> {
        let f = super::open::open_page(path)?;
        let len = f.metadata()?.len();
        Ok(Stream::new(f, allowance(len)))
    }

    /// Device, inode, size and mtime of the file read: what [`Pages`] matches a kept
    /// decompressor against.
    fn identity(&self) -> io::Result<Identity> {
        identity_of(self.src.get_ref())
    }
}

impl<R: Read> Stream<R> {
    pub fn new(src: R, cap: u64) -> Stream<R> {
        let mut dec = FrameDecoder::new();
        dec.set_max_window_size(MAX_WINDOW);
        Stream {
            src: BufReader::with_capacity(64 << 10, src),
            dec,
            in_frame: false,
            produced: 0,
            cap,
        }
    }

    /// Reads and drops `n` bytes; fails if the stream ends first.
    pub fn skip(&mut self, mut n: u64) -> io::Result<()> {
        let mut scratch = [0u8; 16 << 10];
        while n > 0 {
            let want = scratch.len().min(n as usize);
            match self.read(&mut scratch[..want]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(k) => n -= k as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

fn corrupt(e: impl std::fmt::Display) -> io::Error {
    let s = e.to_string();
    if s.contains("window_size") || s.contains("window size") {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "its zstd window is larger than the {} sessionfs decompresses with ({s}); \
                 decompress it by hand (zstd -d) to read it",
                input::human_bytes(MAX_WINDOW)
            ),
        )
    } else {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not a zstd page, or a damaged one: {s}"),
        )
    }
}

impl<R: Read> Read for Stream<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if !self.in_frame {
                if self.src.fill_buf()?.is_empty() {
                    return Ok(0);
                }
                self.dec.init(&mut self.src).map_err(corrupt)?;
                self.in_frame = true;
            }
            if self.dec.can_collect() == 0 {
                if self.dec.is_finished() {
                    self.in_frame = false;
                    continue;
                }
                self.dec
                    .decode_blocks(&mut self.src, BlockDecodingStrategy::UptoBlocks(1))
                    .map_err(corrupt)?;
                continue;
            }
            let room = self.cap.saturating_add(1).saturating_sub(self.produced);
            let want = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
            let n = self.dec.read(&mut buf[..want])?;
            self.produced += n as u64;
            if self.produced > self.cap {
                return Err(bomb(self.cap));
            }
            if n > 0 {
                return Ok(n);
            }
        }
    }
}

/// The error of a page that expands past its allowance.
pub fn bomb(cap: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "decompresses to more than {} ({RATIO} times its size: a decompression bomb?); \
             not read past that. Decompress it by hand (zstd -d) to read it",
            input::human_bytes(cap)
        ),
    )
}

/// What a kept decompressor must match to be used again: the same file, unchanged.
type Identity = (u64, u64, u64, i64, i64);

fn identity_of(f: &File) -> io::Result<Identity> {
    let m = f.metadata()?;
    Ok((m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec()))
}

/// A decompressor left where a read stopped.
struct Kept {
    path: PathBuf,
    id: Identity,
    stream: Stream<File>,
}

/// The decompressors kept between reads, for the whole process (see the module doc).
static KEPT_STREAMS: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

/// Reads lines of compressed pages by their offsets in the decompressed bytes.
pub struct Pages;

impl Pages {
    /// The `len` bytes at `offset` of the decompressed page at `path`.
    pub fn read(path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        input::grow(&mut out, len)?;
        let found = {
            let mut kept = KEPT_STREAMS.lock();
            kept.iter()
                .position(|k| k.path == path && k.stream.produced <= offset)
                .map(|i| kept.remove(i))
        };
        // A kept decompressor of a file changed or replaced since (Codex rewrites a
        // page when it makes it plain again) is dropped.
        let found = found.filter(|k| {
            identity_of(k.stream.src.get_ref()).ok() == Some(k.id)
                && super::open::open_page(path)
                    .and_then(|f| identity_of(&f))
                    .ok()
                    == Some(k.id)
        });
        let mut k = match found {
            Some(k) => k,
            None => {
                let stream = Stream::open(path)?;
                Kept {
                    path: path.to_path_buf(),
                    id: stream.identity()?,
                    stream,
                }
            }
        };
        let at = k.stream.produced;
        k.stream.skip(offset - at)?;
        k.stream.read_exact(&mut out)?;
        let mut kept = KEPT_STREAMS.lock();
        if kept.len() >= KEPT {
            kept.remove(0);
        }
        kept.push(k);
        Ok(out)
    }

    /// Drops the decompressors kept for `path` (its file changed).
    pub fn forget(path: &Path) {
        KEPT_STREAMS.lock().retain(|k| k.path != path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zstd frame of `blocks` RLE blocks of 128 KiB of `byte`, after one raw block.
    pub fn rle_frame(raw: &[u8], byte: u8, blocks: usize) -> Vec<u8> {
        let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
        let header = |last: bool, ty: u32, size: u32| {
            let h = (last as u32) | (ty << 1) | (size << 3);
            [h as u8, (h >> 8) as u8, (h >> 16) as u8]
        };
        f.extend(header(blocks == 0, 0, raw.len() as u32));
        f.extend_from_slice(raw);
        for i in 0..blocks {
            f.extend(header(i + 1 == blocks, 1, 128 << 10));
            f.push(byte);
        }
        f
    }

    #[test]
    fn frames_stream_in_turn_and_a_bomb_stops_at_its_allowance() {
        let one = rle_frame(b"ab\n", b'\n', 2);
        let two = [one.clone(), rle_frame(b"c\n", b'x', 0)].concat();
        let mut out = Vec::new();
        Stream::new(&two[..], u64::MAX)
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out.len(), 3 + (256 << 10) + 2);
        assert!(out.starts_with(b"ab\n\n"));
        assert!(out.ends_with(b"\n\nc\n"));
        // 8,192 blocks: a gigabyte from 32 KB, stopped at its cap.
        let bomb_bytes = rle_frame(b"{}\n", b' ', 8192);
        assert!(bomb_bytes.len() < 40 << 10);
        let cap = allowance(bomb_bytes.len() as u64);
        let mut s = Stream::new(&bomb_bytes[..], cap);
        let mut sink = [0u8; 1 << 16];
        let e = loop {
            match s.read(&mut sink) {
                Ok(0) => panic!("the bomb ended"),
                Ok(_) => {}
                Err(e) => break e,
            }
        };
        assert!(e.to_string().contains("decompression bomb"), "{e}");
        assert!(s.produced <= cap + 1);
        // A window past the bound is refused before anything is allocated for it.
        let mut huge = rle_frame(b"x\n", b'y', 1);
        huge[5] = 0xf8; // window log 41
        let e = Stream::new(&huge[..], u64::MAX)
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert!(e.to_string().contains("window"), "{e}");
        // Not zstd.
        let e = Stream::new(&b"{\"a\":1}\n"[..], u64::MAX)
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert!(e.to_string().contains("not a zstd page"), "{e}");
    }

    #[test]
    fn lines_are_read_by_offset_forward_and_back() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.jsonl.zst");
        let mut plain = Vec::new();
        for i in 0..5000 {
            plain.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        std::fs::write(&p, rle_frame(&plain[..48000], b'.', 0)).unwrap();
        let at = |o: usize, n: usize| Pages::read(&p, o as u64, n).unwrap();
        assert_eq!(at(0, 7), b"line 0\n");
        assert_eq!(at(40000, 10), &plain[40000..40010]);
        assert_eq!(at(10, 5), &plain[10..15]);
        assert!(Pages::read(&p, 47999, 5).is_err());
        // Replaced: read from the new file.
        std::fs::write(&p, rle_frame(b"other\n", b'.', 0)).unwrap();
        assert_eq!(at(0, 5), b"other");
    }
}
