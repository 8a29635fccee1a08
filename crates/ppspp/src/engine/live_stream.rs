//! A live stream's own state and rules (RFC 7574 §6.1; digest §2.4): where the edge and
//! the discard window are, which munros move them, what peers' HAVEs are taken up to,
//! which munro to tell a peer, how often each chunk went out. The engine's side (channels,
//! store, picker, events) is in `live_engine.rs`.
//!
//! - The swarm ID is the source's public key; channels agree on the Unified Merkle Tree
//!   (option 3), the signature algorithm (option 5) and say their discard window (7).
//! - The source signs a munro every `chunks_per_signature` chunks and only then holds and
//!   announces them. A viewer accepts a munro only with the source's signature and a
//!   recent timestamp, and a chunk only under an accepted munro: nothing unsigned is
//!   stored, relayed or handed on. A bad signature, a stale munro or a chunk that does not
//!   hash up to its munro gets the peer banned.
//! - Serving a chunk, the munro and its signature go first unless the peer holds a chunk
//!   under it, then the uncles up to the munro, then DATA. Each new munro is also sent on
//!   every channel on its own (secure tune-in): it is how a peer learns the live edge, and
//!   HAVEs beyond the edge a peer proved are not taken.
//! - The discard window slides behind the edge: chunks, hashes, requests and what peers
//!   announced behind it are forgotten, so memory follows the window.
//! - Sign All (one chunk per signature, option 3 = 2): each chunk's signature goes just
//!   before it, and is checked with its bytes. A signature on its own proves nothing, so
//!   the edge moves only with verified chunks. Peers' HAVEs are taken up to half a
//!   discard window past it (`reach`). To tune in, a peer's newest chunk's signature,
//!   sent once as it connects, is a claim that lets us ask for chunks up to there; what
//!   was taken beyond the reach is dropped when the first chunk verifies. Before that
//!   nothing bounds a claim: a lying peer can send a newcomer after chunks that do not
//!   exist, at the cost of requests that expire, but it cannot steer the other channels,
//!   since the picker keeps no position until a chunk verifies (`Picker::unanchor`). The
//!   Unified Merkle Tree has no such gap, which is one reason it is the default.

use super::config::ContentInfo;
use super::handshake::{LiveHandshake, SwarmParams};
use crate::Bin;
use crate::codec::ContentIntegrity;
use crate::live::{
    LIVE_CHUNKS, LiveError, LiveInfo, LiveParams, LiveSigningKey, LiveSource, LiveVerifier,
    SignedMunro, SignedWithin, SpecFormat, unix_micros_from_ntp,
};
use crate::merkle::{Hash, VerifyingTree};
use core::ops::Range;
use std::collections::BTreeMap;

/// The source signs; a viewer verifies.
#[derive(Debug)]
// One per engine, inside the boxed `LiveStream`: the sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Side {
    Source(LiveSource),
    Viewer(LiveVerifier),
}

/// A live engine's stream: it decides where the edge, the window and the reach are; the
/// engine applies what follows to channels, store and picker.
#[derive(Debug)]
pub(super) struct LiveStream {
    info: LiveInfo,
    format: SpecFormat,
    side: Side,
    /// One past the newest chunk under a signed munro: the live edge.
    edge: u64,
    /// Chunks before this were discarded.
    floor: u64,
    /// The newest signed munro, sent on every channel (secure tune-in).
    newest: Option<SignedMunro>,
    /// How many times each chunk in the window was sent (see `least_sent`).
    copies_sent: BTreeMap<u64, u32>,
    /// Sign All, before a chunk verified: one past the newest chunk peers claim
    /// (unverified, the tune-in); chunks up to it may be asked for.
    claimed: u64,
    /// The caller set the playhead (`Engine::set_playhead`): tuning in does not move it,
    /// and the read-ahead bound counts from it.
    aimed: bool,
}

/// A munro that moved the edge.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct EdgeMoved {
    /// The new edge.
    pub end: u64,
    /// When the munro was signed.
    pub signed_at_unix_micros: u64,
    /// Chunks the reach no longer covers (Sign All's first verified chunk bounds the
    /// claims): what peers announced there is not taken any more.
    pub out_of_reach: Range<u64>,
}

/// Sign All: a peer's chunk signature worth keeping until its chunk comes.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ChunkClaim {
    pub chunk: u64,
    /// Signed by the run of the source we follow: what the peer announces is of our run.
    pub our_run: bool,
}

/// A live chunk's proof as sent with it: the munro and its signature (when the peer may
/// not have it), and the uncles up to the munro.
pub(super) struct LiveProof {
    pub munro: Option<SignedMunro>,
    pub uncles: Vec<(Bin, Hash)>,
}

impl LiveStream {
    /// A viewer of the stream `info` describes.
    pub(super) fn viewer(info: LiveInfo, format: SpecFormat) -> Result<LiveStream, LiveError> {
        let verifier = LiveVerifier::new(
            info.key.clone(),
            info.params.hash,
            format,
            info.params.chunks_per_signature,
        )?;
        Ok(LiveStream::with_side(info, format, Side::Viewer(verifier)))
    }

    /// The source of a stream signed with `key`, tagging its signatures with `session`
    /// (so viewers take no munro of an earlier run of the same key).
    pub(super) fn source(
        key: LiveSigningKey,
        params: LiveParams,
        format: SpecFormat,
        session: u64,
    ) -> Result<LiveStream, LiveError> {
        let info = LiveInfo {
            key: key.public_key().clone(),
            params,
        };
        let mut source = LiveSource::new(
            key,
            params.hash,
            format,
            params.chunks_per_signature,
            params.discard_window,
        )?;
        source.set_session(session);
        Ok(LiveStream::with_side(info, format, Side::Source(source)))
    }

    fn with_side(info: LiveInfo, format: SpecFormat, side: Side) -> LiveStream {
        LiveStream {
            info,
            format,
            side,
            edge: 0,
            floor: 0,
            newest: None,
            copies_sent: BTreeMap::new(),
            claimed: 0,
            aimed: false,
        }
    }

    pub(super) fn info(&self) -> &LiveInfo {
        &self.info
    }

    /// Whether this is a Sign All stream (its signatures travel without hashes).
    pub(super) fn signs_every_chunk(&self) -> bool {
        self.info.params.signs_every_chunk()
    }

    /// One past the newest chunk under a signed munro (0 before the first).
    pub(super) fn edge(&self) -> u64 {
        self.edge
    }

    /// The first chunk still in the discard window.
    pub(super) fn floor(&self) -> u64 {
        self.floor
    }

    pub(super) fn newest(&self) -> Option<&SignedMunro> {
        self.newest.as_ref()
    }

    /// The caller aimed the playhead.
    pub(super) fn aim(&mut self) {
        self.aimed = true;
    }

    pub(super) fn is_aimed(&self) -> bool {
        self.aimed
    }

    /// Whether the next verified chunk is the first proof of where the stream is, and
    /// nobody aimed the playhead: picking is to start from it.
    pub(super) fn tunes_in_next(&self) -> bool {
        self.edge == 0 && !self.aimed
    }

    /// Whether this is a viewer (not the source).
    pub(super) fn is_viewer(&self) -> bool {
        matches!(self.side, Side::Viewer(_))
    }

    /// A viewer's verifier (`None` at the source).
    pub(super) fn viewer_mut(&mut self) -> Option<&mut LiveVerifier> {
        match &mut self.side {
            Side::Viewer(v) => Some(v),
            Side::Source(_) => None,
        }
    }

    /// The source's signer (`None` at a viewer).
    pub(super) fn source_mut(&mut self) -> Option<&mut LiveSource> {
        match &mut self.side {
            Side::Source(s) => Some(s),
            Side::Viewer(_) => None,
        }
    }

    /// One past the last chunk peers' HAVEs are taken for: the edge; under Sign All,
    /// before a chunk verified, the newest claim, and after, half a discard window past
    /// the edge (a lying peer's HAVEs there can move the picker up to half a window
    /// behind the edge, not past what playback still needs).
    pub(super) fn reach(&self) -> u64 {
        if !self.signs_every_chunk() {
            return self.edge;
        }
        match self.edge {
            0 => self.claimed,
            edge => edge
                .saturating_add((self.info.params.discard_window / 2).max(1))
                .min(LIVE_CHUNKS),
        }
    }

    /// The chunks that exist for us now: from the window's start to the reach.
    pub(super) fn addressable(&self) -> Range<u64> {
        self.floor..self.reach()
    }

    /// Sign All: a chunk's signature from a peer. Kept (`Some`) until the chunk comes
    /// (it is checked with its bytes); it also says the peer has the chunk, which makes it
    /// claimable before a chunk verified (see the module). Not kept: a bin of more than a
    /// chunk, one behind the window (nothing to check it with), one dated ahead of our
    /// clock (perhaps the clocks differ: no fault). A stale timestamp is refused at once:
    /// an honest peer sends none.
    pub(super) fn take_chunk_signature(
        &mut self,
        bin: Bin,
        timestamp: u64,
        within: SignedWithin,
    ) -> Result<Option<ChunkClaim>, LiveError> {
        let Some((chunk, last)) = bin.chunk_range() else {
            return Ok(None);
        };
        if chunk != last || chunk < self.floor {
            return Ok(None);
        }
        if timestamp < within.not_before {
            return Err(LiveError::Stale { bin, timestamp });
        }
        if timestamp > within.not_after {
            return Ok(None);
        }
        let our_run = match &self.side {
            Side::Viewer(v) => v.session() == Some(crate::live::session::session_of(timestamp)),
            Side::Source(_) => false,
        };
        if self.edge == 0 {
            // Tuning in: nothing verified yet to bound a claim by.
            self.claimed = self.claimed.max(chunk + 1).min(LIVE_CHUNKS);
        }
        Ok(Some(ChunkClaim { chunk, our_run }))
    }

    /// A munro was signed or accepted: the edge moves on if it ends past it (`None`
    /// otherwise), and it becomes the newest, told on every channel.
    pub(super) fn accept_munro(&mut self, munro: SignedMunro) -> Option<EdgeMoved> {
        let end = munro.bin.base_offset() + munro.bin.base_length();
        if end <= self.edge {
            return None;
        }
        let reach_before = self.reach();
        self.edge = end;
        let reach = self.reach();
        let signed_at_unix_micros = unix_micros_from_ntp(munro.timestamp);
        self.newest = Some(munro);
        Some(EdgeMoved {
            end,
            signed_at_unix_micros,
            out_of_reach: reach.min(reach_before)..reach_before,
        })
    }

    /// Slides the discard window behind the edge: the new floor if it moved. What falls
    /// behind it is forgotten here (copies sent, a viewer's hashes); the rest is the
    /// engine's to let go of.
    pub(super) fn slide_window(&mut self) -> Option<u64> {
        let floor = self.edge.saturating_sub(self.info.params.discard_window);
        if floor <= self.floor {
            return None;
        }
        self.floor = floor;
        self.copies_sent = self.copies_sent.split_off(&floor);
        match &mut self.side {
            Side::Viewer(v) => v.discard_before(floor),
            // The source keeps its own window of hashes (the same length).
            Side::Source(_) => {}
        }
        Some(floor)
    }

    /// The source restarted (a genuine munro of a newer run, signed at `timestamp`): a
    /// viewer starts over, following only that run. False at the source, which has
    /// nothing to start over.
    pub(super) fn restart(&mut self, timestamp: u64) -> bool {
        if !self.is_viewer() {
            return false;
        }
        let Ok(mut fresh) = LiveVerifier::new(
            self.info.key.clone(),
            self.info.params.hash,
            self.format,
            self.info.params.chunks_per_signature,
        ) else {
            return false;
        };
        fresh.follow_session_of(timestamp);
        self.side = Side::Viewer(fresh);
        self.edge = 0;
        self.floor = 0;
        self.newest = None;
        self.claimed = 0;
        self.copies_sent.clear();
        true
    }

    /// The accepted (or signed) munro covering `chunk`.
    pub(super) fn munro_of(&self, chunk: u64) -> Option<&SignedMunro> {
        match &self.side {
            Side::Source(s) => s.munro_of(chunk),
            Side::Viewer(v) => v.munro_of(chunk),
        }
    }

    fn uncles(&self, chunk: u64) -> Option<Vec<(Bin, Hash)>> {
        match &self.side {
            Side::Source(s) => s.uncles(chunk),
            Side::Viewer(v) => v.uncles(chunk),
        }
    }

    /// The proof to send with `chunk`: the munro and its signature when the peer may not
    /// hold it (`known` is the lowest layer whose ancestor of the chunk the peer holds a
    /// chunk under, as for static content), and the uncles below that layer.
    pub(super) fn proof(&self, chunk: u64, known: u32) -> Option<LiveProof> {
        let munro = self.munro_of(chunk)?;
        let uncles = self
            .uncles(chunk)?
            .into_iter()
            .filter(|(b, _)| b.layer() + 1 < known)
            .collect();
        Some(LiveProof {
            munro: (known > munro.bin.layer()).then(|| munro.clone()),
            uncles,
        })
    }

    /// The newest munro, if a peer told munros up to `told` (one past the last chunk
    /// under them) has not been sent it yet (secure tune-in).
    pub(super) fn munro_to_tell(&self, told: u64) -> Option<&SignedMunro> {
        if self.signs_every_chunk() && told > 0 {
            // Sign All: once. A signature alone proves nothing, and each chunk's own comes
            // with it; past its first verified chunk a peer takes HAVEs a window ahead.
            return None;
        }
        (told < self.edge).then_some(self.newest.as_ref()).flatten()
    }

    /// `chunk` went out once more.
    pub(super) fn copy_sent(&mut self, chunk: u64) {
        *self.copies_sent.entry(chunk).or_insert(0) += 1;
    }

    /// How many times `chunk` went out while in the window.
    pub(super) fn copies_sent(&self, chunk: u64) -> u32 {
        self.copies_sent.get(&chunk).copied().unwrap_or(0)
    }

    /// Of `queued` (position in a serve queue, chunk), the position of the chunk sent
    /// fewest times so far, the earliest on a tie: fewest copies first spreads distinct
    /// chunks over the peers, who pass them on.
    pub(super) fn least_sent(&self, queued: impl Iterator<Item = (usize, u64)>) -> Option<usize> {
        queued
            .min_by_key(|&(i, c)| (self.copies_sent(c), i))
            .map(|(i, _)| i)
    }
}

/// How chunks are verified: against a known root, or under signed munros.
#[derive(Debug)]
pub(super) enum Integrity {
    Static(VerifyingTree),
    Live(Box<LiveStream>),
}

impl Integrity {
    pub(super) fn is_live(&self) -> bool {
        matches!(self, Integrity::Live(_))
    }

    /// What a channel's handshake must agree on: the swarm ID is the root hash, or a live
    /// source's public key.
    pub(super) fn swarm_params<'a>(&'a self, content: &'a ContentInfo) -> SwarmParams<'a> {
        match self {
            Integrity::Static(_) => SwarmParams::of_content(content),
            Integrity::Live(l) => SwarmParams {
                swarm_id: l.info.key.swarm_id(),
                hash: content.hash,
                chunk_size: content.chunk_size,
                live: Some(LiveHandshake {
                    integrity: if l.signs_every_chunk() {
                        ContentIntegrity::SignAll
                    } else {
                        ContentIntegrity::UnifiedMerkleTree
                    },
                    algorithm: l.info.key.algorithm().dnssec_number(),
                    discard_window: l.info.params.discard_window,
                    addressing: l.format.addressing,
                }),
            },
        }
    }

    /// A live stream's newest signed munro.
    pub(super) fn newest_munro(&self) -> Option<&SignedMunro> {
        match self {
            Integrity::Live(l) => l.newest(),
            Integrity::Static(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ChunkClaim, EdgeMoved, LiveStream};
    use crate::Bin;
    use crate::codec::ChunkAddressing;
    use crate::live::{
        LiveAlgorithm, LiveError, LiveInfo, LiveParams, LiveSigningKey, SIGN_ALL, SignedMunro,
        SignedWithin, SpecFormat,
    };
    use crate::merkle::HashAlgorithm;

    const CS: u32 = 64;
    const FORMAT: SpecFormat = SpecFormat {
        addressing: ChunkAddressing::Chunk32,
        chunk_size: CS,
    };
    /// A timestamp within [`SignedWithin::ANY`], as the source stamps it.
    const AT: u64 = 1 << 40;

    fn key() -> LiveSigningKey {
        LiveSigningKey::from_secret(LiveAlgorithm::Ed25519, &[3; 32]).unwrap()
    }

    fn params(per_sig: u64, window: u64) -> LiveParams {
        LiveParams {
            hash: HashAlgorithm::Sha256,
            chunk_size: CS,
            chunks_per_signature: per_sig,
            discard_window: window,
        }
    }

    fn source(per_sig: u64, window: u64) -> LiveStream {
        LiveStream::source(key(), params(per_sig, window), FORMAT, 7).unwrap()
    }

    fn viewer(per_sig: u64, window: u64) -> LiveStream {
        let info = LiveInfo {
            key: key().public_key().clone(),
            params: params(per_sig, window),
        };
        LiveStream::viewer(info, FORMAT).unwrap()
    }

    fn chunk(i: u64) -> Vec<u8> {
        (0..u64::from(CS)).map(|j| (i * 31 + j) as u8).collect()
    }

    /// The source's next `n` chunks pushed: the munros it signed.
    fn push(src: &mut LiveStream, n: u64) -> Vec<SignedMunro> {
        let s = src.source_mut().unwrap();
        (0..n)
            .filter_map(|_| s.push_chunk(&chunk(s.next_chunk()), AT).unwrap())
            .collect()
    }

    /// Each munro accepted in turn, the window slid after each, as the engine does.
    fn accept_all(live: &mut LiveStream, munros: Vec<SignedMunro>) {
        for m in munros {
            live.accept_munro(m);
            live.slide_window();
        }
    }

    #[test]
    fn the_edge_and_floor_follow_signed_munros() {
        let mut src = source(4, 16);
        assert_eq!((src.edge(), src.floor(), src.reach()), (0, 0, 0));
        assert!(push(&mut src, 3).is_empty(), "no munro before 4 chunks");
        let m = push(&mut src, 1).pop().unwrap();
        let moved = src.accept_munro(m.clone()).unwrap();
        assert_eq!(moved.end, 4);
        assert!(moved.out_of_reach.is_empty(), "the reach only grows");
        assert_eq!((src.edge(), src.reach()), (4, 4));
        assert_eq!(src.newest().map(|n| n.bin), Some(m.bin));
        assert_eq!(src.slide_window(), None, "the window is not full");
        // The same munro again, or an older one, moves nothing.
        assert_eq!(src.accept_munro(m), None);
        let munros = push(&mut src, 16);
        assert_eq!(munros.len(), 4);
        accept_all(&mut src, munros);
        assert_eq!((src.edge(), src.floor()), (20, 4));
        assert_eq!(src.addressable(), 4..20);
        assert_eq!(
            src.newest().map(|n| n.bin),
            Bin::from_chunk_range(16, 19).next()
        );
    }

    #[test]
    fn a_viewer_moves_its_edge_with_the_munros_it_accepts() {
        let mut src = source(4, 16);
        let munros = push(&mut src, 12);
        let mut view = viewer(4, 16);
        // Out of order: the newest first, then an older one that does not move it back.
        let v = view.viewer_mut().unwrap();
        assert_eq!(v.add_munro(&munros[2], SignedWithin::ANY), Ok(true));
        let moved = view.accept_munro(munros[2].clone()).unwrap();
        assert_eq!(moved.end, 12);
        let v = view.viewer_mut().unwrap();
        assert_eq!(v.add_munro(&munros[0], SignedWithin::ANY), Ok(true));
        assert_eq!(view.accept_munro(munros[0].clone()), None);
        assert_eq!(view.edge(), 12);
        assert_eq!(view.munro_of(1).map(|m| m.bin), Some(munros[0].bin));
        assert!(!view.tunes_in_next(), "the edge is known");
    }

    #[test]
    fn sign_all_reach_is_the_claim_then_half_a_window_past_the_edge() {
        let mut src = source(SIGN_ALL, 16);
        let signed = push(&mut src, 1).pop().unwrap();
        let mut view = viewer(SIGN_ALL, 16);
        assert!(view.tunes_in_next());
        assert_eq!(view.reach(), 0);
        // A peer's signature of chunk 40: a claim, unverified.
        let claim = view.take_chunk_signature(Bin::chunk(40).unwrap(), AT, SignedWithin::ANY);
        let want = ChunkClaim {
            chunk: 40,
            our_run: false,
        };
        assert_eq!(claim, Ok(Some(want)));
        assert_eq!((view.edge(), view.reach()), (0, 41));
        // An older claim does not lower it.
        let _ = view.take_chunk_signature(Bin::chunk(9).unwrap(), AT, SignedWithin::ANY);
        assert_eq!(view.reach(), 41);
        // Chunk 0 verifies: the edge is 1, the reach half a window past it.
        let v = view.viewer_mut().unwrap();
        let munro = v
            .verify_signed_chunk(
                0,
                &chunk(0),
                signed.timestamp,
                &signed.signature,
                SignedWithin::ANY,
            )
            .unwrap();
        let moved = view.accept_munro(munro).unwrap();
        assert_eq!(
            moved,
            EdgeMoved {
                end: 1,
                signed_at_unix_micros: moved.signed_at_unix_micros,
                out_of_reach: 9..41,
            }
        );
        assert_eq!((view.edge(), view.reach()), (1, 9));
        assert!(!view.tunes_in_next());
        // Claims no longer move it; this one is of our run now.
        let claim = view.take_chunk_signature(
            Bin::chunk(100).unwrap(),
            signed.timestamp,
            SignedWithin::ANY,
        );
        assert_eq!(claim.map(|c| c.map(|c| c.our_run)), Ok(Some(true)));
        assert_eq!(view.reach(), 9);
    }

    #[test]
    fn chunk_signatures_not_worth_keeping_are_dropped_and_stale_ones_refused() {
        let mut view = viewer(SIGN_ALL, 16);
        let within = SignedWithin {
            not_before: 100,
            not_after: 200,
            tune_in_not_before: 0,
        };
        let c = |i| Bin::chunk(i).unwrap();
        let two_chunks = Bin::from_chunk_range(2, 3).next().unwrap();
        assert_eq!(view.take_chunk_signature(two_chunks, 150, within), Ok(None));
        assert_eq!(
            view.take_chunk_signature(c(5), 201, within),
            Ok(None),
            "ahead"
        );
        assert!(matches!(
            view.take_chunk_signature(c(5), 99, within),
            Err(LiveError::Stale { .. })
        ));
        assert_eq!(view.reach(), 0, "none of them is a claim");
        assert!(
            view.take_chunk_signature(c(5), 150, within)
                .unwrap()
                .is_some()
        );
        assert_eq!(view.reach(), 6);
    }

    #[test]
    fn the_discard_window_slides_behind_the_edge_and_forgets_copies_sent() {
        let mut src = source(4, 8);
        src.copy_sent(1);
        src.copy_sent(5);
        src.copy_sent(5);
        let munros = push(&mut src, 8);
        accept_all(&mut src, munros);
        assert_eq!((src.edge(), src.floor()), (8, 0));
        let munros = push(&mut src, 4);
        let m = munros[0].clone();
        src.accept_munro(m);
        assert_eq!(src.slide_window(), Some(4));
        assert_eq!(src.slide_window(), None, "already there");
        assert_eq!(src.floor(), 4);
        assert_eq!(src.copies_sent(1), 0, "behind the floor");
        assert_eq!(src.copies_sent(5), 2);
        // A viewer forgets the munros behind it.
        let mut src = source(4, 8);
        let munros = push(&mut src, 16);
        let mut view = viewer(4, 8);
        for m in &munros {
            let v = view.viewer_mut().unwrap();
            assert_eq!(v.add_munro(m, SignedWithin::ANY), Ok(true));
        }
        accept_all(&mut view, munros);
        assert_eq!((view.edge(), view.floor()), (16, 8));
        assert!(view.munro_of(7).is_none());
        assert!(view.munro_of(8).is_some());
    }

    #[test]
    fn the_least_sent_chunk_is_served_first_the_earliest_on_a_tie() {
        let mut live = source(4, 16);
        live.copy_sent(5);
        live.copy_sent(5);
        live.copy_sent(6);
        assert_eq!((live.copies_sent(5), live.copies_sent(6)), (2, 1));
        assert_eq!(
            live.least_sent([(0, 5), (1, 6), (2, 7)].into_iter()),
            Some(2)
        );
        assert_eq!(live.least_sent([(0, 5), (1, 6)].into_iter()), Some(1));
        assert_eq!(live.least_sent([(3, 8), (4, 9)].into_iter()), Some(3));
        assert_eq!(live.least_sent(core::iter::empty()), None);
    }

    #[test]
    fn the_newest_munro_is_told_once_per_edge_and_once_under_sign_all() {
        let mut src = source(4, 16);
        assert!(src.munro_to_tell(0).is_none(), "nothing signed yet");
        let munros = push(&mut src, 8);
        accept_all(&mut src, munros);
        assert_eq!(
            src.munro_to_tell(0).map(|m| m.bin),
            src.newest().map(|m| m.bin)
        );
        assert!(src.munro_to_tell(4).is_some(), "told an older edge");
        assert!(src.munro_to_tell(8).is_none(), "told this one");
        let mut all = source(SIGN_ALL, 16);
        let munros = push(&mut all, 2);
        accept_all(&mut all, munros);
        assert!(all.munro_to_tell(0).is_some());
        assert!(all.munro_to_tell(1).is_none(), "once");
    }

    #[test]
    fn a_restarted_viewer_starts_over_and_a_source_does_not_restart() {
        let mut src = source(4, 8);
        let munros = push(&mut src, 16);
        let mut view = viewer(4, 8);
        view.aim();
        for m in &munros {
            view.viewer_mut()
                .unwrap()
                .add_munro(m, SignedWithin::ANY)
                .unwrap();
        }
        accept_all(&mut view, munros);
        view.copy_sent(12);
        assert!(view.restart(AT));
        assert_eq!((view.edge(), view.floor(), view.reach()), (0, 0, 0));
        assert!(view.newest().is_none());
        assert_eq!(view.copies_sent(12), 0);
        assert!(view.munro_of(12).is_none());
        assert!(view.is_aimed(), "the caller's aim stays");
        assert!(view.is_viewer() && !src.is_viewer());
        assert!(!src.restart(AT));
        assert_eq!(src.edge(), 0, "never accepted here; left as it was");
    }
}
