//! A file's chunks read and written a block at a time. With small chunks a seeder that
//! read each chunk with its own system calls, and a fetcher that wrote each so, spent
//! more of their time in the kernel's file code than in the protocol (BENCHMARKS.md,
//! "Native UDP at 1 KiB: where the time goes").
//!
//! A block is a whole number of chunks (so no chunk spans two) of about [`BLOCK_BYTES`].
//! Reads keep the last few blocks read; writes gather a block's chunks and write the
//! block once it is whole, or its runs of chunks when too many blocks wait.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// About how many bytes a block holds.
pub const BLOCK_BYTES: usize = 64 * 1024;
/// Blocks kept for reading: peers at different places in the content each keep one.
const READ_BLOCKS: usize = 16;
/// Blocks waiting for their missing chunks before the oldest is written as it is.
const WRITE_BLOCKS: usize = 16;
/// At most this many chunks to a block, so a block's chunks fit one `u64` mask.
const MAX_CHUNKS_PER_BLOCK: usize = 64;

/// Reads and writes at an offset: a file, or memory in the tests.
pub trait Positioned {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
}

impl Positioned for File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        FileExt::write_all_at(self, buf, offset)
    }
}

/// How content of `len` bytes in `chunk_size`-byte chunks is cut into blocks.
#[derive(Debug, Clone, Copy)]
pub struct Geometry {
    len: u64,
    chunk_size: u64,
    chunks: u64,
    chunks_per_block: u64,
}

impl Geometry {
    pub fn new(len: u64, chunk_size: usize) -> Geometry {
        let chunk_size = chunk_size.max(1);
        let chunks_per_block = (BLOCK_BYTES / chunk_size).clamp(1, MAX_CHUNKS_PER_BLOCK) as u64;
        Geometry {
            len,
            chunk_size: chunk_size as u64,
            chunks: len.div_ceil(chunk_size as u64),
            chunks_per_block,
        }
    }

    fn block_of(&self, chunk: u64) -> u64 {
        chunk / self.chunks_per_block
    }

    fn block_bytes(&self) -> u64 {
        self.chunks_per_block * self.chunk_size
    }

    /// The byte range of block `block`, cut at the content's end.
    fn block_span(&self, block: u64) -> std::ops::Range<u64> {
        let start = block.saturating_mul(self.block_bytes()).min(self.len);
        start..start.saturating_add(self.block_bytes()).min(self.len)
    }

    /// How many chunks block `block` holds (fewer in the last block).
    fn chunks_in(&self, block: u64) -> u64 {
        let first = block * self.chunks_per_block;
        self.chunks.saturating_sub(first).min(self.chunks_per_block)
    }
}

/// The last blocks read, each whole, the least recently used given up first.
#[derive(Debug)]
pub struct ReadBlocks {
    geometry: Geometry,
    /// (block, bytes, last use)
    blocks: Vec<(u64, Vec<u8>, u64)>,
    uses: u64,
}

impl ReadBlocks {
    pub fn new(geometry: Geometry) -> ReadBlocks {
        ReadBlocks {
            geometry,
            blocks: Vec::new(),
            uses: 0,
        }
    }

    /// Appends the bytes of `span` (one chunk's) to `out`, reading its block from `file`
    /// if it is not kept. An error leaves `out` as it was.
    pub fn read(
        &mut self,
        file: &impl Positioned,
        chunk: u64,
        span: std::ops::Range<u64>,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let block = self.geometry.block_of(chunk);
        let block_span = self.geometry.block_span(block);
        if span.start < block_span.start || span.end > block_span.end {
            return Err(io::Error::other("a chunk outside its block"));
        }
        self.uses += 1;
        let uses = self.uses;
        let at = match self.blocks.iter().position(|(b, _, _)| *b == block) {
            Some(at) => at,
            None => {
                let len = (block_span.end - block_span.start) as usize;
                // The least recently used block's buffer is read into (none is zeroed
                // again), or a new one while fewer than READ_BLOCKS are kept.
                let at = if self.blocks.len() < READ_BLOCKS {
                    self.blocks.push((block, Vec::new(), uses));
                    self.blocks.len() - 1
                } else {
                    let (at, _) = self
                        .blocks
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, (_, _, used))| *used)
                        .expect("READ_BLOCKS > 0");
                    at
                };
                let (b, bytes, _) = &mut self.blocks[at];
                bytes.resize(len, 0);
                if let Err(e) = file.read_exact_at(bytes, block_span.start) {
                    // Nothing half-read is kept.
                    self.blocks.swap_remove(at);
                    return Err(e);
                }
                *b = block;
                at
            }
        };
        let (_, bytes, used) = &mut self.blocks[at];
        *used = uses;
        let from = (span.start - block_span.start) as usize;
        let to = (span.end - block_span.start) as usize;
        out.extend_from_slice(&bytes[from..to]);
        Ok(())
    }

    /// Drops the kept copies of `blocks`, which were just written.
    pub fn forget(&mut self, blocks: &[u64]) {
        self.blocks.retain(|(b, _, _)| !blocks.contains(b));
    }
}

/// Chunks written but not yet in the file, gathered by block.
#[derive(Debug)]
pub struct WriteBlocks {
    geometry: Geometry,
    /// Blocks in the order they were started.
    pending: Vec<Pending>,
}

#[derive(Debug)]
struct Pending {
    block: u64,
    bytes: Vec<u8>,
    /// Bit `i` set: the block's `i`-th chunk is in `bytes`.
    have: u64,
}

impl WriteBlocks {
    pub fn new(geometry: Geometry) -> WriteBlocks {
        WriteBlocks {
            geometry,
            pending: Vec::new(),
        }
    }

    /// Takes chunk `chunk` (its bytes at `span`); writes its block to `file` once whole,
    /// and the oldest waiting block when too many wait. Returns the blocks written, whose
    /// kept read copies are stale.
    pub fn write(
        &mut self,
        file: &impl Positioned,
        chunk: u64,
        span: std::ops::Range<u64>,
        data: &[u8],
        written: &mut Vec<u64>,
    ) -> io::Result<()> {
        let g = self.geometry;
        let block = g.block_of(chunk);
        let block_span = g.block_span(block);
        if span.start < block_span.start || span.end > block_span.end {
            return Err(io::Error::other("a chunk outside its block"));
        }
        let at = match self.pending.iter().position(|p| p.block == block) {
            Some(at) => at,
            None => {
                if self.pending.len() >= WRITE_BLOCKS {
                    let oldest = self.pending.remove(0);
                    written.push(oldest.block);
                    self.write_runs(file, &oldest)?;
                }
                self.pending.push(Pending {
                    block,
                    bytes: vec![0; (block_span.end - block_span.start) as usize],
                    have: 0,
                });
                self.pending.len() - 1
            }
        };
        let p = &mut self.pending[at];
        let from = (span.start - block_span.start) as usize;
        p.bytes[from..from + data.len()].copy_from_slice(data);
        p.have |= 1 << (chunk - block * g.chunks_per_block);
        if p.have.count_ones() as u64 == g.chunks_in(block) {
            let whole = self.pending.remove(at);
            written.push(whole.block);
            file.write_all_at(&whole.bytes, block_span.start)?;
        }
        Ok(())
    }

    /// Appends chunk `chunk`'s bytes (at `span`) if it waits here; false if it does not.
    pub fn read(&self, chunk: u64, span: std::ops::Range<u64>, out: &mut Vec<u8>) -> bool {
        let g = self.geometry;
        let block = g.block_of(chunk);
        let Some(p) = self.pending.iter().find(|p| p.block == block) else {
            return false;
        };
        if p.have & (1 << (chunk - block * g.chunks_per_block)) == 0 {
            return false;
        }
        let start = g.block_span(block).start;
        out.extend_from_slice(&p.bytes[(span.start - start) as usize..(span.end - start) as usize]);
        true
    }

    /// Writes every waiting chunk to `file`.
    pub fn flush(&mut self, file: &impl Positioned, written: &mut Vec<u64>) -> io::Result<()> {
        while !self.pending.is_empty() {
            let p = self.pending.remove(0);
            written.push(p.block);
            self.write_runs(file, &p)?;
        }
        Ok(())
    }

    /// Writes a block's runs of consecutive chunks, one write each.
    fn write_runs(&self, file: &impl Positioned, p: &Pending) -> io::Result<()> {
        let g = self.geometry;
        let start = g.block_span(p.block).start;
        let n = g.chunks_in(p.block);
        let mut i = 0;
        while i < n {
            if p.have & (1 << i) == 0 {
                i += 1;
                continue;
            }
            let run = i;
            while i < n && p.have & (1 << i) != 0 {
                i += 1;
            }
            let from = (run * g.chunk_size) as usize;
            let to = ((i * g.chunk_size) as usize).min(p.bytes.len());
            file.write_all_at(&p.bytes[from..to], start + from as u64)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};

    /// A file in memory that counts its calls.
    struct Memory {
        bytes: RefCell<Vec<u8>>,
        reads: Cell<usize>,
        writes: Cell<usize>,
    }

    impl Memory {
        fn new(bytes: Vec<u8>) -> Memory {
            Memory {
                bytes: RefCell::new(bytes),
                reads: Cell::new(0),
                writes: Cell::new(0),
            }
        }
    }

    impl Positioned for Memory {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            self.reads.set(self.reads.get() + 1);
            let bytes = self.bytes.borrow();
            let from = offset as usize;
            let src = bytes
                .get(from..from + buf.len())
                .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
            buf.copy_from_slice(src);
            Ok(())
        }
        fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
            self.writes.set(self.writes.get() + 1);
            let mut bytes = self.bytes.borrow_mut();
            let from = offset as usize;
            bytes[from..from + buf.len()].copy_from_slice(buf);
            Ok(())
        }
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    fn span(g: &Geometry, chunk: u64) -> std::ops::Range<u64> {
        let start = chunk * g.chunk_size;
        start..(start + g.chunk_size).min(g.len)
    }

    #[test]
    fn geometry_keeps_chunks_inside_blocks() {
        let g = Geometry::new(1_000_000, 1024);
        assert_eq!(g.chunks_per_block, 64);
        assert_eq!(g.block_span(0), 0..65_536);
        assert_eq!(g.chunks_in(15), 1_000_000u64.div_ceil(1024) - 15 * 64);
        assert_eq!(g.block_span(15), 983_040..1_000_000);
        let big = Geometry::new(10 << 20, 1 << 20);
        assert_eq!(big.chunks_per_block, 1);
        let small = Geometry::new(1 << 20, 100);
        assert_eq!(small.chunks_per_block, 64);
        assert_eq!(small.block_bytes(), 6_400);
    }

    #[test]
    fn reads_come_from_one_read_per_block() {
        let content = pattern(300_000);
        let file = Memory::new(content.clone());
        let g = Geometry::new(content.len() as u64, 1024);
        let mut reads = ReadBlocks::new(g);
        let mut out = Vec::new();
        for chunk in 0..g.chunks {
            reads.read(&file, chunk, span(&g, chunk), &mut out).unwrap();
        }
        assert_eq!(out, content);
        assert_eq!(file.reads.get(), content.len().div_ceil(65_536));
    }

    #[test]
    fn reads_keep_the_most_recently_used_blocks() {
        let content = pattern(64 * 65_536);
        let file = Memory::new(content.clone());
        let g = Geometry::new(content.len() as u64, 1024);
        let mut reads = ReadBlocks::new(g);
        let mut out = Vec::new();
        // Block 0 stays in use while 20 others are read once each: it is never read again.
        for block in 1..=20u64 {
            reads.read(&file, 0, span(&g, 0), &mut out).unwrap();
            reads
                .read(&file, block * 64, span(&g, block * 64), &mut out)
                .unwrap();
        }
        assert_eq!(file.reads.get(), 21);
        // Block 1 was given up long ago.
        reads.read(&file, 64, span(&g, 64), &mut out).unwrap();
        assert_eq!(file.reads.get(), 22);
    }

    #[test]
    fn a_failed_read_leaves_out_alone() {
        let file = Memory::new(pattern(10_000));
        // The content claims more than the file holds: its block cannot be read whole.
        let g = Geometry::new(20_000, 1024);
        let mut reads = ReadBlocks::new(g);
        let mut out = vec![1, 2, 3];
        assert!(reads.read(&file, 0, span(&g, 0), &mut out).is_err());
        assert_eq!(out, [1, 2, 3]);
    }

    #[test]
    fn a_failed_read_keeps_no_half_read_block() {
        let content = pattern(20 * 65_536);
        // The file lacks the content's last block.
        let file = Memory::new(content[..19 * 65_536].to_vec());
        let g = Geometry::new(content.len() as u64, 1024);
        let mut reads = ReadBlocks::new(g);
        let mut out = Vec::new();
        for block in 0..READ_BLOCKS as u64 {
            reads
                .read(&file, block * 64, span(&g, block * 64), &mut out)
                .unwrap();
        }
        // Block 0's buffer, the least recently used, is the one the failed read used.
        assert!(
            reads
                .read(&file, 19 * 64, span(&g, 19 * 64), &mut out)
                .is_err()
        );
        out.clear();
        reads.read(&file, 1, span(&g, 1), &mut out).unwrap();
        assert_eq!(out, content[1024..2048]);
        assert_eq!(
            file.reads.get(),
            READ_BLOCKS + 2,
            "block 0 read again, whole"
        );
    }

    #[test]
    fn whole_blocks_are_written_once_in_any_order() {
        let content = pattern(200_000);
        let file = Memory::new(vec![0; content.len()]);
        let g = Geometry::new(content.len() as u64, 1024);
        let mut writes = WriteBlocks::new(g);
        let mut written = Vec::new();
        // Every chunk, odd ones first, then even ones backwards.
        let order: Vec<u64> = (0..g.chunks)
            .filter(|c| c % 2 == 1)
            .chain((0..g.chunks).filter(|c| c % 2 == 0).rev())
            .collect();
        for chunk in order {
            let s = span(&g, chunk);
            let data = &content[s.start as usize..s.end as usize];
            writes.write(&file, chunk, s, data, &mut written).unwrap();
        }
        assert_eq!(*file.bytes.borrow(), content);
        assert_eq!(file.writes.get(), 4, "one write per block");
        written.sort();
        assert_eq!(written, [0, 1, 2, 3]);
    }

    #[test]
    fn waiting_chunks_are_read_back_and_flushed_as_runs() {
        let content = pattern(100_000);
        let file = Memory::new(vec![0; content.len()]);
        let g = Geometry::new(content.len() as u64, 1024);
        let mut writes = WriteBlocks::new(g);
        let mut written = Vec::new();
        for chunk in [3u64, 4, 5, 9, 70] {
            let s = span(&g, chunk);
            let data = &content[s.start as usize..s.end as usize];
            writes.write(&file, chunk, s, data, &mut written).unwrap();
        }
        assert_eq!(file.writes.get(), 0);
        let mut out = Vec::new();
        assert!(writes.read(4, span(&g, 4), &mut out));
        assert_eq!(out, content[4096..5120]);
        assert!(!writes.read(6, span(&g, 6), &mut out));
        writes.flush(&file, &mut written).unwrap();
        assert_eq!(file.writes.get(), 3, "runs 3-5, 9 and 70");
        let bytes = file.bytes.borrow();
        for chunk in [3usize, 4, 5, 9, 70] {
            let s = chunk * 1024..((chunk + 1) * 1024).min(content.len());
            assert_eq!(bytes[s.clone()], content[s]);
        }
        assert!(bytes[6 * 1024..9 * 1024].iter().all(|b| *b == 0));
    }

    #[test]
    fn too_many_waiting_blocks_write_the_oldest() {
        let content = pattern(40 * 65_536);
        let file = Memory::new(vec![0; content.len()]);
        let g = Geometry::new(content.len() as u64, 1024);
        let mut writes = WriteBlocks::new(g);
        let mut written = Vec::new();
        // One chunk in each of 17 blocks: the 17th start writes block 0's one chunk.
        for block in 0..=WRITE_BLOCKS as u64 {
            let chunk = block * 64;
            let s = span(&g, chunk);
            let data = &content[s.start as usize..s.end as usize];
            writes.write(&file, chunk, s, data, &mut written).unwrap();
        }
        assert_eq!(written, [0]);
        assert_eq!(file.bytes.borrow()[..1024], content[..1024]);
        let mut out = Vec::new();
        assert!(!writes.read(0, span(&g, 0), &mut out), "no longer waiting");
    }
}
