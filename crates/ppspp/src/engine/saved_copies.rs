//! Chunks the adapter saved outside the engine (a page's Origin Private File System): read
//! back when they are wanted, instead of fetched again, and checked against the root like
//! any peer's chunk.
//!
//! - A verified chunk's proof ([`Engine::chunk_proof`]) is its uncles' hashes from the
//!   leaf up. Saved with the chunk, it verifies the chunk against the root with nothing
//!   else known: after a reload the engine knows only the root.
//! - The adapter names the chunks it holds ([`Engine::add_saved`]); those in the wanted
//!   window are read back before any peer or the HTTP origin is asked for them
//!   ([`Engine::poll_saved_read`]), nearest the playhead first. Chunks let go of to stay
//!   within the memory bound are read back when the playhead comes back to them.
//! - A saved copy that fails verification ([`Engine::handle_saved_chunk`]), or that cannot
//!   be read ([`Engine::handle_saved_missing`]), is forgotten: the chunk is fetched again.
//! - A chunk read back is the engine's like any other: announced and served to peers.

use super::event::Event;
use super::memory_bound::bins;
use super::{Engine, PeerAddr};
use crate::Bin;
use crate::binmap::Binmap;
use crate::merkle::{Hash, VerifyError};
use crate::store::ChunkStore;
use core::ops::Range;

/// Chunks per read at most.
const MAX_READ_CHUNKS: u64 = 64;
/// Reads in flight at most.
const MAX_READS: usize = 4;

/// What the engine knows of the adapter's saved copies: which chunks have one, which are
/// to be read back, which reads are in flight. It decides what to read next; the engine
/// decides what is wanted and held.
#[derive(Debug, Default)]
pub(super) struct SavedCopies {
    /// Chunks the adapter holds a copy of (as far as the engine knows).
    saved: Binmap,
    /// Saved chunks not held and not being read: read back when wanted.
    to_read: Binmap,
    /// Reads in flight.
    reading: Vec<Range<u64>>,
}

impl SavedCopies {
    /// The adapter holds copies of `chunks`. Each not held (in `have`) and not being read
    /// is to be read back; `exclude` is called with those in `wanted`, which no peer is to
    /// be asked for.
    fn add(
        &mut self,
        chunks: Range<u64>,
        have: &Binmap,
        wanted: &Range<u64>,
        mut exclude: impl FnMut(Bin),
    ) {
        for b in bins(&chunks) {
            self.saved.set(b);
            self.to_read.set(b);
        }
        for c in chunks {
            let Some(b) = Bin::chunk(c) else { continue };
            if have.is_filled(b) || self.is_reading(c) {
                self.to_read.reset(b);
            } else if wanted.contains(&c) {
                exclude(b);
            }
        }
    }

    fn is_reading(&self, chunk: u64) -> bool {
        self.reading.iter().any(|r| r.contains(&chunk))
    }

    /// Whether `chunk` is to be read back, or being read.
    fn is_pending(&self, chunk: u64) -> bool {
        self.to_read.has_chunk(chunk) || self.is_reading(chunk)
    }

    /// Sets in `exclude` the chunks of `range` to be read back or being read.
    fn exclude_pending(&self, range: &Range<u64>, exclude: &mut Binmap) {
        let mut at = range.start;
        while let Some(b) = self.to_read.find_filled(at..range.end) {
            exclude.set(b);
            at = b.base_offset() + b.base_length();
        }
        for r in &self.reading {
            for b in bins(&(r.start.max(range.start)..r.end.min(range.end))) {
                exclude.set(b);
            }
        }
    }

    /// `chunk` is held: it needs no reading back.
    fn held(&mut self, chunk: u64) {
        self.to_read.reset_chunk(chunk);
    }

    /// `chunk` was let go of: read back when wanted again, if it has a saved copy.
    fn evicted(&mut self, chunk: u64) {
        if self.saved.has_chunk(chunk) {
            self.to_read.set_chunk(chunk);
        }
    }

    /// A copy of `chunk` was handed over but could not be stored: read it again later.
    fn read_later(&mut self, chunk: u64) {
        self.to_read.set_chunk(chunk);
    }

    /// The next read: consecutive chunks to read back within `wanted`, the first at or
    /// after `playhead` (else the first from the window's start), at most
    /// [`MAX_READ_CHUNKS`] of them; `None` with [`MAX_READS`] reads in flight or nothing
    /// to read there.
    fn next_read(&mut self, playhead: u64, wanted: Range<u64>) -> Option<Range<u64>> {
        if self.reading.len() >= MAX_READS || self.to_read.is_clear() {
            return None;
        }
        let from = playhead.clamp(wanted.start, wanted.end);
        let first = self
            .to_read
            .find_filled(from..wanted.end)
            .or_else(|| self.to_read.find_filled(wanted.start..from))?
            .base_offset();
        let mut end = first + 1;
        while end < wanted.end && end - first < MAX_READ_CHUNKS && self.to_read.has_chunk(end) {
            end += 1;
        }
        for b in bins(&(first..end)) {
            self.to_read.reset(b);
        }
        self.reading.push(first..end);
        Some(first..end)
    }

    /// Takes `chunk` out of the read in flight that covers it (a read ends chunk by chunk).
    fn read_done(&mut self, chunk: u64) {
        let Some(i) = self.reading.iter().position(|r| r.contains(&chunk)) else {
            return;
        };
        let r = self.reading.swap_remove(i);
        for part in [r.start..chunk, chunk + 1..r.end] {
            if !part.is_empty() {
                self.reading.push(part);
            }
        }
    }

    /// The saved copy of `chunk` is no more.
    fn forget(&mut self, chunk: u64) {
        self.saved.reset_chunk(chunk);
        self.to_read.reset_chunk(chunk);
    }
}

/// The uncles a saved `proof` stands for, for `chunk` of `chunk_count` under `root_bin`
/// with hashes of `hash_len` bytes: as many hashes as the path needs, from the leaf up.
fn proof_uncles(
    chunk: u64,
    chunk_count: u64,
    root_bin: Bin,
    hash_len: usize,
    proof: &[u8],
) -> Result<Vec<(Bin, Hash)>, VerifyError> {
    let mut node = Bin::chunk(chunk).ok_or(VerifyError::OutOfRange { chunk, chunk_count })?;
    let mut hashes = proof.chunks(hash_len);
    let mut out = Vec::new();
    while node != root_bin {
        let sib = node.sibling();
        if sib.base_offset() < chunk_count {
            let bytes = hashes.next().ok_or(VerifyError::MissingHash(sib))?;
            let hash = Hash::from_slice(bytes).filter(|h| h.len() == hash_len);
            let hash = hash.ok_or(VerifyError::WrongHashLength {
                bin: sib,
                expected: hash_len,
                got: bytes.len(),
            })?;
            out.push((sib, hash));
        }
        node = node.parent();
    }
    match hashes.next() {
        Some(_) => Err(VerifyError::HashNotOnPath(root_bin)),
        None => Ok(out),
    }
}

impl<A: PeerAddr, S: ChunkStore> Engine<A, S> {
    /// The proof that held `chunk` belongs to the content: the hashes of its uncles from the
    /// leaf up, concatenated (which uncles follows from the chunk count). With the chunk it
    /// verifies against the root alone. `None` if the chunk is not held.
    pub fn chunk_proof(&self, chunk: u64) -> Option<Vec<u8>> {
        let leaf = Bin::chunk(chunk)?;
        if !self.have.is_filled(leaf) {
            return None;
        }
        let uncles = self.tree()?.uncles(chunk, |_| false);
        if uncles.is_empty() && self.chunk_count > 1 {
            return None;
        }
        // `uncles` is in wire order (from the root down): the proof goes from the leaf up.
        Some(
            uncles
                .iter()
                .rev()
                .flat_map(|(_, h)| h.as_bytes().iter().copied())
                .collect(),
        )
    }

    /// The adapter holds saved copies of `chunks`: they are read back
    /// ([`poll_saved_read`](Self::poll_saved_read)) when wanted, rather than fetched.
    pub fn add_saved(&mut self, chunks: Range<u64>) {
        if self.is_live() {
            // Saved copies are of static content (a live chunk's proof is its munro's
            // signature, gone with the window).
            return;
        }
        let chunks = chunks.start..chunks.end.min(self.chunk_count);
        let wanted = self.wanted();
        let exclude = &mut self.exclude;
        self.saved
            .add(chunks, &self.have, &wanted, |b| exclude.set(b));
    }

    /// Whether `chunk` is to be read back from a saved copy, or being read.
    pub(super) fn saved_pending(&self, chunk: u64) -> bool {
        self.saved.is_pending(chunk)
    }

    /// Chunks of `range` to read back, or being read, rather than fetched: taken out of
    /// the pickers' choice.
    pub(super) fn exclude_saved(&mut self, range: Range<u64>) {
        self.saved.exclude_pending(&range, &mut self.exclude);
    }

    /// A chunk is held (from anywhere): no need to read it back.
    pub(super) fn saved_chunk_held(&mut self, chunk: u64) {
        self.saved.held(chunk);
    }

    /// A chunk was let go of: if it has a saved copy, that is read back when wanted again.
    pub(super) fn saved_chunk_evicted(&mut self, chunk: u64) {
        self.saved.evicted(chunk);
    }

    /// The next saved chunks to read back and hand over with
    /// [`handle_saved_chunk`](Self::handle_saved_chunk) (or
    /// [`handle_saved_missing`](Self::handle_saved_missing)): consecutive chunks of the
    /// wanted window, nearest the playhead first. Drain it after every call, as
    /// [`poll_transmit`](Self::poll_transmit).
    pub fn poll_saved_read(&mut self) -> Option<Range<u64>> {
        if self.storing_paused {
            return None;
        }
        let wanted = self.wanted();
        self.saved.next_read(self.held.playhead(), wanted)
    }

    /// A saved copy of `chunk` with its proof ([`chunk_proof`](Self::chunk_proof)), asked
    /// for or not: verified against the root, then kept, announced and served like a
    /// peer's chunk ([`Event::ChunkRestored`]). A copy that does not verify is refused and
    /// forgotten: the chunk is fetched again.
    pub fn handle_saved_chunk(
        &mut self,
        chunk: u64,
        data: &[u8],
        proof: &[u8],
    ) -> Result<(), VerifyError> {
        let leaf = Bin::chunk(chunk).ok_or(VerifyError::OutOfRange {
            chunk,
            chunk_count: self.chunk_count,
        })?;
        self.saved.read_done(chunk);
        if self.have.is_filled(leaf) {
            self.saved.held(chunk);
            return Ok(());
        }
        let hash_len = self.content.hash.size();
        let verified = proof_uncles(chunk, self.chunk_count, self.root_bin, hash_len, proof)
            .and_then(|uncles| match self.tree_mut() {
                Some(tree) => tree.verify_chunk(chunk, data, &uncles),
                None => Err(VerifyError::SizeUnknown),
            });
        if let Err(reason) = verified {
            self.stats.chunks_saved_corrupt += 1;
            self.forget_saved(chunk);
            return Err(reason);
        }
        self.cancel_at_peers(chunk);
        if !self.store_chunk(chunk, data) {
            // The copy is good: read again once storing resumes.
            self.saved.read_later(chunk);
            return Ok(());
        }
        self.stats.chunks_restored += 1;
        self.stats.bytes_restored += data.len() as u64;
        self.chunk_kept(chunk, data.len(), Event::ChunkRestored { chunk });
        Ok(())
    }

    /// The saved copies of `chunks` are gone or unreadable: they are fetched instead.
    pub fn handle_saved_missing(&mut self, chunks: Range<u64>) {
        for c in chunks.start..chunks.end.min(self.chunk_count) {
            self.saved.read_done(c);
            self.forget_saved(c);
        }
    }

    /// The saved copy of `chunk` is no more: the chunk is wanted from peers or the origin,
    /// unless one of them is already asked for it.
    fn forget_saved(&mut self, chunk: u64) {
        if Bin::chunk(chunk).is_some() {
            self.saved.forget(chunk);
            let asked = self.channels.values().any(|c| c.requests.contains(chunk));
            if !asked && !self.origin_fetching(chunk) {
                self.release_request(chunk);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::{HashAlgorithm, MerkleTree};

    fn copies_of(chunks: Range<u64>) -> SavedCopies {
        let mut saved = SavedCopies::default();
        saved.add(chunks, &Binmap::new(), &(0..0), |_| {});
        saved
    }

    #[test]
    fn copies_held_or_being_read_are_not_read_again_and_only_wanted_ones_are_excluded() {
        let mut saved = copies_of(10..12);
        assert_eq!(saved.next_read(0, 0..100), Some(10..12));
        let mut have = Binmap::new();
        have.set(Bin::chunk(20).unwrap());
        let mut excluded = Vec::new();
        saved.add(8..24, &have, &(0..16), |b| excluded.push(b.base_offset()));
        // 10 and 11 are being read, 20 is held; of the rest only 8..16 are wanted.
        assert_eq!(excluded, [8, 9, 12, 13, 14, 15]);
        assert!(saved.is_pending(10) && saved.is_pending(21) && !saved.is_pending(20));
        let mut exclude = Binmap::new();
        saved.exclude_pending(&(0..12), &mut exclude);
        assert!(exclude.is_filled(Bin::new(2, 2).unwrap()), "chunks 8..12");
        assert_eq!(exclude.count_filled(), 4);
    }

    #[test]
    fn reads_start_nearest_the_playhead_and_are_bounded() {
        let mut saved = copies_of(0..300);
        // From the playhead to the window's end, at most MAX_READ_CHUNKS at a time.
        assert_eq!(saved.next_read(100, 50..200), Some(100..164));
        assert_eq!(saved.next_read(100, 50..200), Some(164..200));
        // Then the window's start.
        assert_eq!(saved.next_read(100, 50..200), Some(50..100));
        // MAX_READS in flight: nothing more until one ends.
        assert_eq!(saved.reading.len(), 3);
        assert_eq!(saved.next_read(0, 0..300), Some(0..50));
        assert_eq!(saved.next_read(0, 0..300), None);
        // A read that ended but for a chunk is still in flight.
        for c in 164..199 {
            saved.read_done(c);
        }
        assert_eq!(saved.next_read(0, 0..300), None);
        saved.read_done(199);
        assert_eq!(saved.next_read(0, 0..300), Some(200..264));
    }

    #[test]
    fn a_read_ends_chunk_by_chunk() {
        let mut saved = copies_of(0..10);
        assert_eq!(saved.next_read(0, 0..10), Some(0..10));
        saved.read_done(4);
        assert!(saved.is_pending(3) && !saved.is_pending(4) && saved.is_pending(5));
        let mut parts = saved.reading.clone();
        parts.sort_by_key(|r| r.start);
        assert_eq!(parts, [0..4, 5..10]);
    }

    #[test]
    fn only_chunks_with_a_copy_are_read_back_after_eviction() {
        let mut saved = copies_of(0..4);
        saved.held(1);
        saved.held(7);
        assert!(!saved.is_pending(1));
        saved.evicted(1);
        saved.evicted(7);
        assert!(saved.is_pending(1), "its copy is read back");
        assert!(!saved.is_pending(7), "no copy of it");
        saved.forget(1);
        saved.evicted(1);
        assert!(!saved.is_pending(1), "its copy is gone");
        saved.read_later(7);
        assert!(saved.is_pending(7), "a copy handed over is read again");
    }

    #[test]
    fn a_proof_stands_for_the_uncles_from_the_leaf_up() {
        let data: Vec<u8> = (0..5 * 1024).map(|i| (i * 7) as u8).collect();
        let tree = MerkleTree::from_content(HashAlgorithm::Sha256, 1024, &data).unwrap();
        let root_bin = Bin::covering(5).unwrap();
        for chunk in 0..5 {
            let mut uncles = tree.uncles(chunk, |_| false);
            uncles.reverse();
            let proof: Vec<u8> = uncles
                .iter()
                .flat_map(|(_, h)| h.as_bytes().iter().copied())
                .collect();
            assert_eq!(proof_uncles(chunk, 5, root_bin, 32, &proof), Ok(uncles));
            let short = &proof[..proof.len() - 32];
            assert!(matches!(
                proof_uncles(chunk, 5, root_bin, 32, short),
                Err(VerifyError::MissingHash(_))
            ));
            let cut = &proof[..proof.len() - 1];
            assert!(matches!(
                proof_uncles(chunk, 5, root_bin, 32, cut),
                Err(VerifyError::WrongHashLength { .. })
            ));
            let long = [proof.as_slice(), &[0; 32]].concat();
            assert_eq!(
                proof_uncles(chunk, 5, root_bin, 32, &long),
                Err(VerifyError::HashNotOnPath(root_bin))
            );
        }
        assert!(matches!(
            proof_uncles(u64::MAX, 5, root_bin, 32, &[]),
            Err(VerifyError::OutOfRange { .. })
        ));
    }
}
