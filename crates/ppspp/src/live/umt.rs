//! The Unified Merkle Tree (RFC 7574 §6.1.2; digest §2.4), both sides of it.
//!
//! - The source ([`LiveSource`]) hashes chunks as they come; every `chunks_per_signature`
//!   chunks (a power of two) form a subtree whose root, the munro, it signs. When the
//!   stream ends, the chunks left over are signed as smaller subtrees, largest first.
//! - A viewer ([`LiveVerifier`]) accepts a munro only with a valid signature by the key
//!   the swarm ID names, and a chunk only under an accepted munro, through the uncle
//!   hashes up to it. What it verified it can prove to others (relaying).
//! - Both keep only a window of the stream: what falls behind it is forgotten.
//! - With one chunk per signature, every chunk is signed itself (RFC 7574's Sign All,
//!   §6.1.1): the source signs each chunk as it comes, and a viewer checks a chunk with
//!   the signature sent before it; no hashes travel.

use super::key::{LivePublicKey, LiveSigningKey};
use super::munro::{SignedMunro, SpecFormat};
use super::session::{session_of, stamp};
use crate::Bin;
use crate::codec::EncodeError;
use crate::merkle::{Hash, HashAlgorithm};
use core::fmt;
use std::collections::{BTreeMap, VecDeque};

/// Why a live munro or chunk was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveError {
    /// `chunks_per_signature` is not a power of two, or the window is empty.
    BadParameters(&'static str),
    /// The munro's signature is not the source's.
    BadSignature(Bin),
    /// A munro larger than a signing group, or one overlapping another munro.
    NotAMunro(Bin),
    /// A munro signed earlier than the oldest time still accepted.
    Stale {
        /// The munro.
        bin: Bin,
        /// Its timestamp.
        timestamp: u64,
    },
    /// No accepted munro covers the chunk.
    NoMunro(u64),
    /// A hash needed on the way to the munro was not given.
    MissingHash(Bin),
    /// A hash was given for a bin that is not on the chunk's way to its munro.
    HashNotOnPath(Bin),
    /// The chunk does not hash up to its munro.
    Mismatch(Bin),
    /// The chunk is empty or longer than a chunk.
    WrongLength(usize),
    /// The munro or chunk lies behind the discard window.
    BehindWindow(u64),
    /// The source's stream has ended (`LiveSource::finish`).
    Finished,
    /// The munro's chunk specification cannot be written in the swarm's addressing.
    Encode(EncodeError),
    /// A signature dated later than the newest time accepted (`not_after`).
    Ahead {
        /// The munro or chunk.
        bin: Bin,
        /// Its timestamp.
        timestamp: u64,
    },
    /// A munro (or Sign All chunk) of another run of the source than the one followed
    /// (`live::session`), no newer than what was accepted: an earlier run's, replayed or
    /// relayed late. Not taken, and no fault of the peer's.
    OtherSession(Bin),
    /// A munro (or Sign All chunk) too old to join the stream by: a viewer that follows no
    /// run yet takes only one signed within `SignedWithin::tune_in_not_before`, so a
    /// recording of an ended run, replayed, does not become its stream. Not taken, no fault.
    TooOldToTuneIn(Bin),
    /// A genuine munro (or chunk) of a run of the source newer than everything accepted:
    /// the source restarted. The viewer must start over with it
    /// ([`LiveVerifier::new`]); nothing was taken.
    NewSession(Bin),
}

impl fmt::Display for LiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LiveError::BadParameters(why) => write!(f, "bad live parameters: {why}"),
            LiveError::BadSignature(b) => {
                write!(f, "the signature of munro {} is not the source's", b.raw())
            }
            LiveError::NotAMunro(b) => write!(f, "bin {} is not a munro of this stream", b.raw()),
            LiveError::Stale { bin, timestamp } => {
                write!(
                    f,
                    "munro {} was signed too long ago (NTP {timestamp:#x})",
                    bin.raw()
                )
            }
            LiveError::NoMunro(c) => write!(f, "no signed munro covers chunk {c}"),
            LiveError::MissingHash(b) => write!(f, "missing hash for bin {}", b.raw()),
            LiveError::HashNotOnPath(b) => {
                write!(f, "hash for bin {} is not on the chunk's path", b.raw())
            }
            LiveError::Mismatch(b) => write!(f, "the chunk does not hash up to munro {}", b.raw()),
            LiveError::WrongLength(n) => write!(f, "a live chunk of {n} bytes"),
            LiveError::BehindWindow(c) => write!(f, "chunk {c} is behind the discard window"),
            LiveError::Finished => f.write_str("the live stream has ended"),
            LiveError::Encode(e) => write!(f, "{e}"),
            LiveError::Ahead { bin, timestamp } => write!(
                f,
                "munro {} is dated ahead of our clock (NTP {timestamp:#x})",
                bin.raw()
            ),
            LiveError::OtherSession(b) => {
                write!(f, "munro {} is of an earlier run of the source", b.raw())
            }
            LiveError::TooOldToTuneIn(b) => {
                write!(f, "munro {} is too old to join the stream by", b.raw())
            }
            LiveError::NewSession(b) => {
                write!(f, "munro {} is of a newer run of the source", b.raw())
            }
        }
    }
}

impl core::error::Error for LiveError {}

/// Chunks per signature at most.
pub const MAX_CHUNKS_PER_SIGNATURE: u64 = 1 << 16;

/// Chunks per signature that make every chunk signed itself (Sign All).
pub const SIGN_ALL: u64 = 1;

/// The layer of munros for `chunks_per_signature` chunks: a power of two up to
/// [`MAX_CHUNKS_PER_SIGNATURE`] (1: Sign All, each chunk its own munro).
fn munro_layer(chunks_per_signature: u64) -> Result<u32, LiveError> {
    if !(1..=MAX_CHUNKS_PER_SIGNATURE).contains(&chunks_per_signature)
        || !chunks_per_signature.is_power_of_two()
    {
        return Err(LiveError::BadParameters(
            "chunks per signature must be 1 (sign every chunk) or a power of two up to 65536",
        ));
    }
    Ok(chunks_per_signature.trailing_zeros())
}

/// The hashes of a subtree, by layer: `layers[0]` the leaves, the last the root.
fn subtree(alg: HashAlgorithm, leaves: Vec<Hash>) -> Vec<Vec<Hash>> {
    let mut layers = vec![leaves];
    while layers.last().is_some_and(|l| l.len() > 1) {
        let below = layers.last().map(Vec::as_slice).unwrap_or_default();
        let up = below
            .chunks(2)
            .map(|p| alg.parent(&p[0], p.get(1).unwrap_or(&p[0])))
            .collect();
        layers.push(up);
    }
    layers
}

/// A signed subtree the source still holds.
#[derive(Debug)]
struct Signed {
    munro: SignedMunro,
    layers: Vec<Vec<Hash>>,
}

/// The source side: chunks in, signed munros out.
#[derive(Debug)]
pub struct LiveSource {
    key: LiveSigningKey,
    alg: HashAlgorithm,
    format: SpecFormat,
    layer: u32,
    window: u64,
    next_chunk: u64,
    /// Leaf hashes of the group being filled.
    leaves: Vec<Hash>,
    signed: VecDeque<Signed>,
    finished: bool,
    /// This run's tag, in every signature's timestamp (`live::session`).
    session: u64,
}

impl LiveSource {
    /// A source signing with `key` every `chunks_per_signature` chunks (a power of two),
    /// keeping the last `window` chunks' hashes for serving.
    pub fn new(
        key: LiveSigningKey,
        alg: HashAlgorithm,
        format: SpecFormat,
        chunks_per_signature: u64,
        window: u64,
    ) -> Result<LiveSource, LiveError> {
        if window == 0 {
            return Err(LiveError::BadParameters(
                "the window must hold at least one chunk",
            ));
        }
        Ok(LiveSource {
            key,
            alg,
            format,
            layer: munro_layer(chunks_per_signature)?,
            window,
            next_chunk: 0,
            leaves: Vec::new(),
            signed: VecDeque::new(),
            finished: false,
            session: 0,
        })
    }

    /// Names this run of the source in its signatures (`live::session`); pick it at
    /// random when the source starts, before the first chunk.
    pub fn set_session(&mut self, session: u64) {
        self.session = session;
    }

    /// The public key (the swarm ID).
    pub fn public_key(&self) -> &LivePublicKey {
        self.key.public_key()
    }

    /// The index the next chunk gets.
    pub fn next_chunk(&self) -> u64 {
        self.next_chunk
    }

    /// Adds the next chunk; when it completes a group, returns the group's signed munro
    /// (signed at `timestamp`, NTP). Before that the chunk may not be announced.
    pub fn push_chunk(
        &mut self,
        data: &[u8],
        timestamp: u64,
    ) -> Result<Option<SignedMunro>, LiveError> {
        if self.finished {
            return Err(LiveError::Finished);
        }
        let timestamp = stamp(timestamp, self.session);
        if data.is_empty() || data.len() > self.format.chunk_size as usize {
            return Err(LiveError::WrongLength(data.len()));
        }
        if self.layer == 0 {
            // Sign All: the chunk itself is signed, at once.
            let chunk = Bin::chunk(self.next_chunk).ok_or(LiveError::NotAMunro(Bin::NONE))?;
            let munro =
                SignedMunro::sign_chunk(&self.key, chunk, timestamp, data, self.alg, self.format)
                    .map_err(LiveError::Encode)?;
            self.next_chunk += 1;
            self.keep(munro.clone(), vec![vec![munro.hash]]);
            return Ok(Some(munro));
        }
        self.leaves.push(self.alg.digest(data));
        self.next_chunk += 1;
        if self.leaves.len() < 1 << self.layer {
            return Ok(None);
        }
        let leaves = std::mem::take(&mut self.leaves);
        let first = self.next_chunk - leaves.len() as u64;
        self.sign_group(first, leaves, timestamp).map(Some)
    }

    /// The stream ended: the chunks not signed yet are signed as subtrees of decreasing
    /// size (aligned, as the RFC's peaks), which complete the tree.
    pub fn finish(&mut self, timestamp: u64) -> Result<Vec<SignedMunro>, LiveError> {
        if self.finished {
            return Err(LiveError::Finished);
        }
        self.finished = true;
        let timestamp = stamp(timestamp, self.session);
        let mut leaves = std::mem::take(&mut self.leaves);
        let mut first = self.next_chunk - leaves.len() as u64;
        let mut out = Vec::new();
        while !leaves.is_empty() {
            let take = 1usize << leaves.len().ilog2();
            let rest = leaves.split_off(take);
            out.push(self.sign_group(first, leaves, timestamp)?);
            first += take as u64;
            leaves = rest;
        }
        Ok(out)
    }

    fn sign_group(
        &mut self,
        first: u64,
        leaves: Vec<Hash>,
        timestamp: u64,
    ) -> Result<SignedMunro, LiveError> {
        let layer = leaves.len().trailing_zeros();
        // Groups are aligned by construction (full groups, then decreasing powers of two).
        if !first.is_multiple_of(leaves.len() as u64) {
            return Err(LiveError::NotAMunro(Bin::NONE));
        }
        let bin = Bin::new(layer, first >> layer).ok_or(LiveError::NotAMunro(Bin::NONE))?;
        let layers = subtree(self.alg, leaves);
        let hash = layers
            .last()
            .and_then(|l| l.first())
            .copied()
            .unwrap_or_else(|| Hash::zero(self.alg));
        let munro = SignedMunro::sign(&self.key, bin, timestamp, hash, self.format)
            .map_err(LiveError::Encode)?;
        self.keep(munro.clone(), layers);
        Ok(munro)
    }

    /// Keeps a signed subtree for serving, and lets go of those behind the window.
    fn keep(&mut self, munro: SignedMunro, layers: Vec<Vec<Hash>>) {
        self.signed.push_back(Signed { munro, layers });
        let keep_from = self.next_chunk.saturating_sub(self.window);
        while self
            .signed
            .front()
            .is_some_and(|s| s.munro.bin.base_offset() + s.munro.bin.base_length() <= keep_from)
        {
            self.signed.pop_front();
        }
    }

    fn signed_for(&self, chunk: u64) -> Option<&Signed> {
        // In stream order: the last one starting at or before `chunk`.
        let after = self
            .signed
            .partition_point(|s| s.munro.bin.base_offset() <= chunk);
        let s = self.signed.get(after.checked_sub(1)?)?;
        let b = s.munro.bin;
        (chunk < b.base_offset() + b.base_length()).then_some(s)
    }

    /// The signed munro covering `chunk`, while it is in the window.
    pub fn munro_of(&self, chunk: u64) -> Option<&SignedMunro> {
        self.signed_for(chunk).map(|s| &s.munro)
    }

    /// The uncle hashes from `chunk` up to its munro (wire order: from the munro down).
    pub fn uncles(&self, chunk: u64) -> Option<Vec<(Bin, Hash)>> {
        let s = self.signed_for(chunk)?;
        let base = s.munro.bin.base_offset();
        let mut out = Vec::new();
        let mut node = Bin::chunk(chunk)?;
        while node != s.munro.bin {
            let sib = node.sibling();
            let layer = sib.layer() as usize;
            let at = (sib.base_offset() - base) >> layer;
            out.push((sib, *s.layers.get(layer)?.get(at as usize)?));
            node = node.parent();
        }
        out.reverse();
        Some(out)
    }
}

/// A viewer's side: signed munros and the chunks under them.
#[derive(Debug)]
pub struct LiveVerifier {
    key: LivePublicKey,
    alg: HashAlgorithm,
    format: SpecFormat,
    layer: u32,
    /// Accepted munros, by their first chunk.
    munros: BTreeMap<u64, SignedMunro>,
    /// Verified hashes below the munros.
    nodes: BTreeMap<Bin, Hash>,
    /// Chunks before this were discarded: nothing behind it is accepted again.
    floor: u64,
    /// The run of the source followed (`live::session`): that of the first munro taken.
    session: Option<u64>,
    /// The newest signature timestamp taken.
    newest_signed: u64,
}

/// The times a signature may be dated within (64-bit NTP), as the wall clock allows now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignedWithin {
    /// Older is stale.
    pub not_before: u64,
    /// Newer is dated ahead of our clock.
    pub not_after: u64,
    /// A viewer that follows no run yet takes nothing older (it joins the stream at a
    /// signature this recent).
    pub tune_in_not_before: u64,
}

impl SignedWithin {
    /// Any time at all (tests, and callers that check dates themselves).
    pub const ANY: SignedWithin = SignedWithin {
        not_before: 0,
        not_after: u64::MAX,
        tune_in_not_before: 0,
    };
}

impl LiveVerifier {
    /// A verifier of the stream signed by `key`, with munros of at most
    /// `chunks_per_signature` chunks.
    pub fn new(
        key: LivePublicKey,
        alg: HashAlgorithm,
        format: SpecFormat,
        chunks_per_signature: u64,
    ) -> Result<LiveVerifier, LiveError> {
        Ok(LiveVerifier {
            key,
            alg,
            format,
            layer: munro_layer(chunks_per_signature)?,
            munros: BTreeMap::new(),
            nodes: BTreeMap::new(),
            floor: 0,
            session: None,
            newest_signed: 0,
        })
    }

    /// The run of the source this verifier follows, once it took a munro.
    pub fn session(&self) -> Option<u64> {
        self.session
    }

    /// Follows the run of the source that signed at `timestamp` from the start (a viewer
    /// starting over after [`LiveError::NewSession`]): no other run's munro is taken, not
    /// even before the first of this run's.
    pub fn follow_session_of(&mut self, timestamp: u64) {
        self.session = Some(session_of(timestamp));
    }

    /// Whether a signature is of the run followed: `Ok` if so (or none is followed yet),
    /// else why not. One of another run is checked with `verify` only if it is newer than
    /// everything taken and within `within`, since only then does it matter (the source
    /// restarted). Asked before the window: a new run's chunks start again from 0.
    fn check_run(
        &self,
        bin: Bin,
        timestamp: u64,
        within: SignedWithin,
        verify: impl FnOnce() -> bool,
    ) -> Result<(), LiveError> {
        match self.session {
            // A stale one is left to the date check (it is a fault).
            None if (within.not_before..within.tune_in_not_before).contains(&timestamp) => {
                Err(LiveError::TooOldToTuneIn(bin))
            }
            Some(s) if s != session_of(timestamp) => {
                if timestamp <= self.newest_signed || timestamp < within.not_before {
                    Err(LiveError::OtherSession(bin))
                } else if timestamp > within.not_after {
                    Err(LiveError::Ahead { bin, timestamp })
                } else if verify() {
                    Err(LiveError::NewSession(bin))
                } else {
                    Err(LiveError::BadSignature(bin))
                }
            }
            _ => Ok(()),
        }
    }

    /// Whether a signature's date is within `within`.
    fn check_date(bin: Bin, timestamp: u64, within: SignedWithin) -> Result<(), LiveError> {
        if timestamp < within.not_before {
            return Err(LiveError::Stale { bin, timestamp });
        }
        if timestamp > within.not_after {
            return Err(LiveError::Ahead { bin, timestamp });
        }
        Ok(())
    }

    /// A signature dated `timestamp` was taken.
    fn took(&mut self, timestamp: u64) {
        self.session = Some(session_of(timestamp));
        self.newest_signed = self.newest_signed.max(timestamp);
    }

    /// Whether every chunk is signed itself (Sign All): chunks are then checked with
    /// [`verify_signed_chunk`](Self::verify_signed_chunk), and there are no munros to add.
    pub fn signs_every_chunk(&self) -> bool {
        self.layer == 0
    }

    /// Sign All: checks `chunk` against the `signature` and `timestamp` sent before it,
    /// and keeps the signature for relaying the chunk. Refused: not Sign All, a wrong
    /// length, a chunk behind the discard window, a timestamp outside `within`, another
    /// run of the source (`OtherSession`, `NewSession`), a bad signature. Nothing changes
    /// on an error.
    pub fn verify_signed_chunk(
        &mut self,
        chunk: u64,
        data: &[u8],
        timestamp: u64,
        signature: &[u8],
        within: SignedWithin,
    ) -> Result<SignedMunro, LiveError> {
        let bin = Bin::chunk(chunk).ok_or(LiveError::NoMunro(chunk))?;
        if !self.signs_every_chunk() {
            return Err(LiveError::NotAMunro(bin));
        }
        if data.is_empty() || data.len() > self.format.chunk_size as usize {
            return Err(LiveError::WrongLength(data.len()));
        }
        let verified = || {
            SignedMunro::verified_chunk(
                &self.key,
                bin,
                timestamp,
                data,
                signature,
                self.alg,
                self.format,
            )
        };
        self.check_run(bin, timestamp, within, || verified().is_some())?;
        if chunk < self.floor {
            return Err(LiveError::BehindWindow(chunk));
        }
        Self::check_date(bin, timestamp, within)?;
        let munro = verified().ok_or(LiveError::BadSignature(bin))?;
        self.took(timestamp);
        self.munros.insert(chunk, munro.clone());
        self.nodes.insert(bin, munro.hash);
        Ok(munro)
    }

    /// Accepts a signed munro: true if new, false if already known. Refused: a bad
    /// signature, a bin larger than a signing group or overlapping another munro of the
    /// same run, one behind the discard window, a timestamp outside `within`, or another
    /// run of the source (`OtherSession`, `NewSession`). Nothing changes on an error.
    pub fn add_munro(
        &mut self,
        munro: &SignedMunro,
        within: SignedWithin,
    ) -> Result<bool, LiveError> {
        let bin = munro.bin;
        // Under Sign All a signature covers a chunk's bytes: it is checked with them.
        if bin.is_none() || bin.layer() > self.layer || self.signs_every_chunk() {
            return Err(LiveError::NotAMunro(bin));
        }
        self.check_run(bin, munro.timestamp, within, || {
            munro.verify(&self.key, self.format)
        })?;
        let first = bin.base_offset();
        if first + bin.base_length() <= self.floor {
            return Err(LiveError::BehindWindow(first));
        }
        if let Some(known) = self.munros.get(&first)
            && known.bin == bin
            && known.hash == munro.hash
        {
            return Ok(false);
        }
        Self::check_date(bin, munro.timestamp, within)?;
        let overlaps = self
            .munros
            .range(..first + bin.base_length())
            .next_back()
            .is_some_and(|(_, m)| m.bin.contains(bin) || bin.contains(m.bin));
        if overlaps {
            return Err(LiveError::NotAMunro(bin));
        }
        if !munro.verify(&self.key, self.format) {
            return Err(LiveError::BadSignature(bin));
        }
        self.took(munro.timestamp);
        self.munros.insert(first, munro.clone());
        Ok(true)
    }

    /// The accepted munro covering `chunk`.
    pub fn munro_of(&self, chunk: u64) -> Option<&SignedMunro> {
        self.munros
            .range(..=chunk)
            .next_back()
            .map(|(_, m)| m)
            .filter(|m| chunk < m.bin.base_offset() + m.bin.base_length())
    }

    /// The newest accepted munro (the rightmost), for a secure tune-in.
    pub fn newest_munro(&self) -> Option<&SignedMunro> {
        self.munros.values().next_back()
    }

    /// Verifies `chunk` against its munro with the `uncles` sent with it (those already
    /// verified may be left out). On success the path is kept for relaying; on an error
    /// nothing changes.
    pub fn verify_chunk(
        &mut self,
        chunk: u64,
        data: &[u8],
        uncles: &[(Bin, Hash)],
    ) -> Result<(), LiveError> {
        if data.is_empty() || data.len() > self.format.chunk_size as usize {
            return Err(LiveError::WrongLength(data.len()));
        }
        if chunk < self.floor {
            return Err(LiveError::BehindWindow(chunk));
        }
        let munro = self.munro_of(chunk).ok_or(LiveError::NoMunro(chunk))?;
        let (top, expected) = (munro.bin, munro.hash);
        let mut node = Bin::chunk(chunk).ok_or(LiveError::NoMunro(chunk))?;
        for &(b, h) in uncles {
            // The munro's own hash may come along (INTEGRITY before SIGNED_INTEGRITY).
            let is_munro = b == top && h == expected;
            let sibling = top.contains(b) && b != top && b.sibling().contains(node);
            if !is_munro && !sibling {
                return Err(LiveError::HashNotOnPath(b));
            }
        }
        let mut hash = self.alg.digest(data);
        let mut path = vec![(node, hash)];
        while node != top {
            let sib = node.sibling();
            let sib_hash = match self.nodes.get(&sib) {
                Some(h) => *h,
                None => uncles
                    .iter()
                    .find(|(b, _)| *b == sib)
                    .map(|(_, h)| *h)
                    .ok_or(LiveError::MissingHash(sib))?,
            };
            hash = if node.is_left() {
                self.alg.parent(&hash, &sib_hash)
            } else {
                self.alg.parent(&sib_hash, &hash)
            };
            path.push((sib, sib_hash));
            node = node.parent();
            path.push((node, hash));
        }
        if hash != expected {
            return Err(LiveError::Mismatch(top));
        }
        self.nodes.extend(path);
        Ok(())
    }

    /// Verifies every chunk under the accepted munro `bin` at once (all of them, in
    /// order; say, a segment taken whole from a web server): no uncle hashes are needed.
    /// On success every hash below the munro is kept for relaying; on an error nothing
    /// changes.
    pub fn verify_munro_chunks(&mut self, bin: Bin, chunks: &[&[u8]]) -> Result<(), LiveError> {
        let first = bin.base_offset();
        if first < self.floor {
            return Err(LiveError::BehindWindow(first));
        }
        let munro = self
            .munros
            .get(&first)
            .filter(|m| m.bin == bin)
            .ok_or(LiveError::NoMunro(first))?;
        if chunks.len() as u64 != bin.base_length() {
            return Err(LiveError::MissingHash(bin));
        }
        if let Some(bad) = chunks
            .iter()
            .find(|c| c.is_empty() || c.len() > self.format.chunk_size as usize)
        {
            return Err(LiveError::WrongLength(bad.len()));
        }
        let layers = subtree(
            self.alg,
            chunks.iter().map(|c| self.alg.digest(c)).collect(),
        );
        if layers.last().and_then(|l| l.first()) != Some(&munro.hash) {
            return Err(LiveError::Mismatch(bin));
        }
        for (layer, hashes) in layers.iter().enumerate() {
            for (i, h) in hashes.iter().enumerate() {
                if let Some(b) = Bin::new(layer as u32, (first >> layer) + i as u64) {
                    self.nodes.insert(b, *h);
                }
            }
        }
        Ok(())
    }

    /// The uncle hashes from verified `chunk` up to its munro (wire order: from the munro
    /// down), for relaying it; `None` if it was not verified here.
    pub fn uncles(&self, chunk: u64) -> Option<Vec<(Bin, Hash)>> {
        let top = self.munro_of(chunk)?.bin;
        let mut node = Bin::chunk(chunk)?;
        self.nodes.get(&node)?;
        let mut out = Vec::new();
        while node != top {
            let sib = node.sibling();
            out.push((sib, *self.nodes.get(&sib)?));
            node = node.parent();
        }
        out.reverse();
        Some(out)
    }

    /// Forgets munros and hashes wholly before chunk `first` (the discard window), and
    /// accepts nothing behind it again.
    pub fn discard_before(&mut self, first: u64) {
        self.floor = self.floor.max(first);
        self.munros
            .retain(|&start, m| start + m.bin.base_length() > first);
        self.nodes
            .retain(|b, _| b.base_offset() + b.base_length() > first);
    }

    /// Hashes held (for memory figures).
    pub fn stored_hashes(&self) -> usize {
        self.nodes.len() + self.munros.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::ChunkAddressing;
    use crate::live::LiveAlgorithm;

    const CS: u32 = 64;
    const FORMAT: SpecFormat = SpecFormat {
        addressing: ChunkAddressing::Chunk32,
        chunk_size: CS,
    };

    fn chunk(i: u64) -> Vec<u8> {
        (0..CS as u64).map(|j| (i * 31 + j) as u8).collect()
    }

    fn source(per_sig: u64, window: u64) -> LiveSource {
        let key = LiveSigningKey::from_secret(LiveAlgorithm::Ed25519, &[3; 32]).unwrap();
        LiveSource::new(key, HashAlgorithm::Sha256, FORMAT, per_sig, window).unwrap()
    }

    fn since(not_before: u64) -> SignedWithin {
        SignedWithin {
            not_before,
            ..SignedWithin::ANY
        }
    }

    fn verifier(src: &LiveSource, per_sig: u64) -> LiveVerifier {
        LiveVerifier::new(
            src.public_key().clone(),
            HashAlgorithm::Sha256,
            FORMAT,
            per_sig,
        )
        .unwrap()
    }

    #[test]
    fn chunks_verify_under_their_signed_munro_and_can_be_relayed() {
        let mut src = source(8, 1000);
        let mut munros = Vec::new();
        for i in 0..21 {
            if let Some(m) = src.push_chunk(&chunk(i), 100 + i).unwrap() {
                munros.push(m);
            }
        }
        assert_eq!(
            munros.iter().map(|m| m.bin).collect::<Vec<_>>(),
            [Bin::new(3, 0).unwrap(), Bin::new(3, 1).unwrap()]
        );
        // Chunks 16..21 are not signed yet; finishing signs 4 + 1.
        munros.extend(src.finish(200).unwrap());
        assert_eq!(
            munros[2..].iter().map(|m| m.bin).collect::<Vec<_>>(),
            [Bin::new(2, 4).unwrap(), Bin::chunk(20).unwrap()]
        );

        let mut viewer = verifier(&src, 8);
        let mut relay = verifier(&src, 8);
        for m in &munros {
            assert_eq!(viewer.add_munro(m, SignedWithin::ANY), Ok(true));
            assert_eq!(viewer.add_munro(m, SignedWithin::ANY), Ok(false));
            relay.add_munro(m, SignedWithin::ANY).unwrap();
        }
        for i in 0..21 {
            let uncles = src.uncles(i).unwrap();
            viewer.verify_chunk(i, &chunk(i), &uncles).unwrap();
            // The viewer proves it to the next one with the same hashes.
            assert_eq!(viewer.uncles(i).unwrap(), uncles, "chunk {i}");
            relay
                .verify_chunk(i, &chunk(i), &viewer.uncles(i).unwrap())
                .unwrap();
        }
    }

    /// Two runs of one source (the same key, chunks from 0 each time): a viewer of the
    /// second takes no munro of the first, whatever chunks it covers, and blames nobody
    /// for it; a viewer that took the first run's moves on when the second's come.
    #[test]
    fn munros_of_another_run_of_the_source_are_not_taken() {
        let run = |session: u64, at: u64| {
            let mut src = source(4, 1000);
            src.set_session(session);
            let munros: Vec<SignedMunro> = (0..16)
                .flat_map(|i| src.push_chunk(&chunk(i + session), at << 32).unwrap())
                .collect();
            (src, munros)
        };
        let (src, first) = run(7, 1000);
        let (_, second) = run(8, 1040);
        let mut viewer = verifier(&src, 4);
        viewer.add_munro(&second[0], SignedWithin::ANY).unwrap();
        assert_eq!(viewer.session(), Some(8));
        for m in &first {
            assert_eq!(
                viewer.add_munro(m, SignedWithin::ANY),
                Err(LiveError::OtherSession(m.bin)),
                "the earlier run's munro {:?}",
                m.bin
            );
        }
        viewer.add_munro(&second[1], SignedWithin::ANY).unwrap();
        // Taken the earlier run first (its munros were all it had heard of): the later
        // run's are genuine and newer, so the source restarted.
        let mut late = verifier(&src, 4);
        late.add_munro(&first[3], SignedWithin::ANY).unwrap();
        assert_eq!(
            late.add_munro(&second[0], SignedWithin::ANY),
            Err(LiveError::NewSession(second[0].bin))
        );
        // A newer date under a forged signature proves nothing.
        let forger = LiveSigningKey::from_secret(LiveAlgorithm::Ed25519, &[4; 32]).unwrap();
        let forged = SignedMunro::sign(
            &forger,
            second[0].bin,
            second[0].timestamp,
            second[0].hash,
            FORMAT,
        )
        .unwrap();
        assert_eq!(
            late.add_munro(&forged, SignedWithin::ANY),
            Err(LiveError::BadSignature(forged.bin))
        );
        // Dated past the newest time allowed.
        let mut fresh = verifier(&src, 4);
        let ahead = SignedWithin {
            not_after: (1040 << 32) - 1,
            ..SignedWithin::ANY
        };
        let late = SignedWithin {
            tune_in_not_before: (1040 << 32) + (1 << 32),
            ..SignedWithin::ANY
        };
        assert_eq!(
            fresh.add_munro(&second[0], late),
            Err(LiveError::TooOldToTuneIn(second[0].bin))
        );
        assert!(matches!(
            fresh.add_munro(&second[0], ahead),
            Err(LiveError::Ahead { .. })
        ));
        assert_eq!(fresh.session(), None);
    }

    #[test]
    fn forged_chunks_munros_and_hashes_are_refused() {
        let mut src = source(4, 1000);
        let mut munros = Vec::new();
        for i in 0..8 {
            munros.extend(src.push_chunk(&chunk(i), 10).unwrap());
        }
        let mut viewer = verifier(&src, 4);
        assert_eq!(
            viewer.verify_chunk(1, &chunk(1), &src.uncles(1).unwrap()),
            Err(LiveError::NoMunro(1))
        );
        // A munro signed by another key, or changed after signing.
        let forger = LiveSigningKey::from_secret(LiveAlgorithm::Ed25519, &[4; 32]).unwrap();
        let forged = SignedMunro::sign(&forger, munros[0].bin, 10, munros[0].hash, FORMAT).unwrap();
        assert_eq!(
            viewer.add_munro(&forged, SignedWithin::ANY),
            Err(LiveError::BadSignature(munros[0].bin))
        );
        let mut changed = munros[0].clone();
        changed.hash = HashAlgorithm::Sha256.digest(b"evil");
        assert_eq!(
            viewer.add_munro(&changed, SignedWithin::ANY),
            Err(LiveError::BadSignature(munros[0].bin))
        );
        // Too old, or larger than a signing group.
        assert!(matches!(
            viewer.add_munro(&munros[0], since(11)),
            Err(LiveError::Stale { .. })
        ));
        let big = SignedMunro::sign(
            &src.key,
            Bin::new(3, 0).unwrap(),
            10,
            munros[0].hash,
            FORMAT,
        )
        .unwrap();
        assert_eq!(
            viewer.add_munro(&big, SignedWithin::ANY),
            Err(LiveError::NotAMunro(big.bin))
        );
        viewer.add_munro(&munros[0], SignedWithin::ANY).unwrap();
        // A munro overlapping an accepted one of the same run, even signed by the source.
        let inner = SignedMunro::sign(
            &src.key,
            Bin::new(1, 0).unwrap(),
            munros[0].timestamp,
            munros[0].hash,
            FORMAT,
        )
        .unwrap();
        assert_eq!(
            viewer.add_munro(&inner, SignedWithin::ANY),
            Err(LiveError::NotAMunro(inner.bin))
        );

        let uncles = src.uncles(2).unwrap();
        let mut bad = chunk(2);
        bad[0] ^= 1;
        assert_eq!(
            viewer.verify_chunk(2, &bad, &uncles),
            Err(LiveError::Mismatch(munros[0].bin))
        );
        let mut wrong = uncles.clone();
        wrong[0].1 = HashAlgorithm::Sha256.digest(b"x");
        assert_eq!(
            viewer.verify_chunk(2, &chunk(2), &wrong),
            Err(LiveError::Mismatch(munros[0].bin))
        );
        assert!(matches!(
            viewer.verify_chunk(2, &chunk(2), &uncles[1..]),
            Err(LiveError::MissingHash(_))
        ));
        for stray in [9, 0, 2].map(|c| Bin::chunk(c).unwrap()) {
            let mut off_path = uncles.clone();
            off_path.push((stray, uncles[0].1));
            assert_eq!(
                viewer.verify_chunk(2, &chunk(2), &off_path),
                Err(LiveError::HashNotOnPath(stray))
            );
        }
        assert_eq!(
            viewer.verify_chunk(2, &[], &uncles),
            Err(LiveError::WrongLength(0))
        );
        // Nothing of the failures was kept: the true chunk still needs all its uncles.
        assert!(viewer.uncles(2).is_none());
        // The munro's own hash along with the uncles is fine.
        let mut with_munro = uncles.clone();
        with_munro.push((munros[0].bin, munros[0].hash));
        viewer.verify_chunk(2, &chunk(2), &with_munro).unwrap();
        // Its sibling now needs no hashes at all.
        viewer.verify_chunk(3, &chunk(3), &[]).unwrap();
    }

    #[test]
    fn the_window_forgets_what_falls_behind() {
        let mut src = source(4, 8);
        let mut munros = Vec::new();
        for i in 0..32 {
            munros.extend(src.push_chunk(&chunk(i), 10).unwrap());
        }
        assert!(src.munro_of(23).is_none(), "behind the source's window");
        assert!(src.munro_of(24).is_some());
        let mut viewer = verifier(&src, 4);
        for m in &munros {
            viewer.add_munro(m, SignedWithin::ANY).unwrap();
        }
        viewer
            .verify_chunk(25, &chunk(25), &src.uncles(25).unwrap())
            .unwrap();
        viewer.discard_before(28);
        assert!(viewer.munro_of(25).is_none());
        assert!(viewer.uncles(25).is_none());
        // Replayed, an old munro or chunk is refused: memory stays within the window.
        assert_eq!(
            viewer.add_munro(&munros[6], SignedWithin::ANY),
            Err(LiveError::BehindWindow(24))
        );
        assert_eq!(
            viewer.verify_chunk(25, &chunk(25), &src.uncles(24).unwrap_or_default()),
            Err(LiveError::BehindWindow(25))
        );
        assert_eq!(
            viewer.newest_munro().map(|m| m.bin),
            Some(Bin::new(2, 7).unwrap())
        );
    }

    #[test]
    fn sign_all_signs_each_chunk_at_once_and_checks_it_with_its_bytes() {
        let mut src = source(SIGN_ALL, 4);
        let mut view = verifier(&src, SIGN_ALL);
        assert!(view.signs_every_chunk());
        for i in 0..6u64 {
            let m = src
                .push_chunk(&chunk(i), 100 + i)
                .unwrap()
                .expect("signed at once");
            assert_eq!(m.bin, Bin::chunk(i).unwrap());
            assert_eq!(src.uncles(i), Some(vec![]), "no hashes travel");
            // Bytes, place, time and signer must all be the signed ones.
            let other = chunk(i + 1);
            for (data, ts, sig) in [
                (&other[..], m.timestamp, &m.signature[..]),
                (&chunk(i)[..], m.timestamp + 1, &m.signature[..]),
                (&chunk(i)[..], m.timestamp, &[0u8; 64][..]),
            ] {
                assert_eq!(
                    view.verify_signed_chunk(i, data, ts, sig, SignedWithin::ANY),
                    Err(LiveError::BadSignature(m.bin))
                );
            }
            assert_eq!(
                view.verify_signed_chunk(
                    i,
                    &chunk(i),
                    m.timestamp,
                    &m.signature,
                    since(m.timestamp + 1)
                ),
                Err(LiveError::Stale {
                    bin: m.bin,
                    timestamp: m.timestamp
                })
            );
            let kept = view
                .verify_signed_chunk(i, &chunk(i), m.timestamp, &m.signature, SignedWithin::ANY)
                .unwrap();
            assert_eq!(kept, m);
            assert_eq!(view.munro_of(i), Some(&m), "kept for relaying");
            assert_eq!(view.uncles(i), Some(vec![]));
            // A signature alone proves nothing under Sign All.
            assert_eq!(
                view.add_munro(&m, SignedWithin::ANY),
                Err(LiveError::NotAMunro(m.bin))
            );
        }
        // The source keeps its window's signatures; the viewer lets go of what it is told.
        assert!(src.munro_of(1).is_none() && src.munro_of(2).is_some());
        view.discard_before(3);
        assert!(view.munro_of(2).is_none() && view.munro_of(3).is_some());
        let m = src.push_chunk(&chunk(6), 106).unwrap().unwrap();
        assert_eq!(
            view.verify_signed_chunk(2, &chunk(2), m.timestamp, &m.signature, SignedWithin::ANY),
            Err(LiveError::BehindWindow(2))
        );
        assert!(
            src.finish(107).unwrap().is_empty(),
            "nothing was left unsigned"
        );
    }

    #[test]
    fn bad_parameters_are_refused() {
        let key = || LiveSigningKey::from_secret(LiveAlgorithm::Ed25519, &[3; 32]).unwrap();
        for per_sig in [0, 6, 1 << 17, 1 << 40] {
            let made = LiveSource::new(key(), HashAlgorithm::Sha256, FORMAT, per_sig, 10);
            assert!(made.is_err(), "{per_sig}");
        }
        assert!(LiveSource::new(key(), HashAlgorithm::Sha256, FORMAT, 8, 0).is_err());
        let mut src = source(8, 10);
        assert_eq!(
            src.push_chunk(&[0; CS as usize + 1], 1),
            Err(LiveError::WrongLength(CS as usize + 1))
        );
        // After the end, nothing more is signed.
        src.push_chunk(&chunk(0), 1).unwrap();
        assert_eq!(src.finish(2).unwrap().len(), 1);
        assert_eq!(src.push_chunk(&chunk(1), 3), Err(LiveError::Finished));
        assert_eq!(src.finish(4), Err(LiveError::Finished));
    }
}
