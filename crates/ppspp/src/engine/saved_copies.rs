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

/// What the engine knows of the adapter's saved copies.
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
    fn is_reading(&self, chunk: u64) -> bool {
        self.reading.iter().any(|r| r.contains(&chunk))
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

    /// The uncles `proof` stands for, for `chunk`: as many hashes as the path needs.
    fn proof_uncles(&self, chunk: u64, proof: &[u8]) -> Result<Vec<(Bin, Hash)>, VerifyError> {
        let n = self.chunk_count;
        let mut node = Bin::chunk(chunk).ok_or(VerifyError::OutOfRange {
            chunk,
            chunk_count: n,
        })?;
        let len = self.content.hash.size();
        let mut hashes = proof.chunks(len);
        let mut out = Vec::new();
        while node != self.root_bin {
            let sib = node.sibling();
            if sib.base_offset() < n {
                let bytes = hashes.next().ok_or(VerifyError::MissingHash(sib))?;
                let hash = Hash::from_slice(bytes).filter(|h| h.len() == len);
                let hash = hash.ok_or(VerifyError::WrongHashLength {
                    bin: sib,
                    expected: len,
                    got: bytes.len(),
                })?;
                out.push((sib, hash));
            }
            node = node.parent();
        }
        match hashes.next() {
            Some(_) => Err(VerifyError::HashNotOnPath(self.root_bin)),
            None => Ok(out),
        }
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
        for b in bins(&chunks) {
            self.saved.saved.set(b);
            self.saved.to_read.set(b);
        }
        let wanted = self.wanted();
        for c in chunks {
            let Some(b) = Bin::chunk(c) else { continue };
            if self.have.is_filled(b) || self.saved.is_reading(c) {
                self.saved.to_read.reset(b);
            } else if wanted.contains(&c) {
                // Read back before any peer is asked.
                self.exclude.set(b);
            }
        }
    }

    /// Whether `chunk` is to be read back from a saved copy, or being read.
    pub(super) fn saved_pending(&self, chunk: u64) -> bool {
        Bin::chunk(chunk).is_some_and(|b| self.saved.to_read.is_filled(b))
            || self.saved.is_reading(chunk)
    }

    /// Chunks of `range` to read back, or being read, rather than fetched: taken out of
    /// the pickers' choice.
    pub(super) fn exclude_saved(&mut self, range: Range<u64>) {
        let mut at = range.start;
        while let Some(b) = self.saved.to_read.find_filled(at..range.end) {
            self.exclude.set(b);
            at = b.base_offset() + b.base_length();
        }
        for r in &self.saved.reading {
            for b in bins(&(r.start.max(range.start)..r.end.min(range.end))) {
                self.exclude.set(b);
            }
        }
    }

    /// A chunk is held (from anywhere): no need to read it back.
    pub(super) fn saved_chunk_held(&mut self, chunk: u64) {
        if let Some(b) = Bin::chunk(chunk) {
            self.saved.to_read.reset(b);
        }
    }

    /// A chunk was let go of: if it has a saved copy, that is read back when wanted again.
    pub(super) fn saved_chunk_evicted(&mut self, chunk: u64) {
        if let Some(b) = Bin::chunk(chunk)
            && self.saved.saved.is_filled(b)
        {
            self.saved.to_read.set(b);
        }
    }

    /// The next saved chunks to read back and hand over with
    /// [`handle_saved_chunk`](Self::handle_saved_chunk) (or
    /// [`handle_saved_missing`](Self::handle_saved_missing)): consecutive chunks of the
    /// wanted window, nearest the playhead first. Drain it after every call, as
    /// [`poll_transmit`](Self::poll_transmit).
    pub fn poll_saved_read(&mut self) -> Option<Range<u64>> {
        if self.storing_paused
            || self.saved.reading.len() >= MAX_READS
            || self.saved.to_read.is_clear()
        {
            return None;
        }
        let wanted = self.wanted();
        let from = self.playhead.clamp(wanted.start, wanted.end);
        let first = self
            .saved
            .to_read
            .find_filled(from..wanted.end)
            .or_else(|| self.saved.to_read.find_filled(wanted.start..from))?
            .base_offset();
        let mut end = first + 1;
        while end < wanted.end
            && end - first < MAX_READ_CHUNKS
            && Bin::chunk(end).is_some_and(|b| self.saved.to_read.is_filled(b))
        {
            end += 1;
        }
        for b in bins(&(first..end)) {
            self.saved.to_read.reset(b);
        }
        self.saved.reading.push(first..end);
        Some(first..end)
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
            self.saved.to_read.reset(leaf);
            return Ok(());
        }
        let verified = self
            .proof_uncles(chunk, proof)
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
            self.saved.to_read.set(leaf);
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
        if let Some(b) = Bin::chunk(chunk) {
            self.saved.saved.reset(b);
            self.saved.to_read.reset(b);
            let asked = self
                .channels
                .values()
                .any(|c| c.requests.contains_key(&chunk));
            if !asked && !self.origin_fetching(chunk) {
                self.release_request(chunk);
            }
        }
    }
}
