//! A bound on the content an engine holds ([`EngineConfig::max_held_bytes`]): a page
//! playing a long video keeps a window of it, not all of it.
//!
//! - Chunks are wanted only in a window from the playhead, three quarters of the bound
//!   long; the rest of the bound keeps chunks already played, which peers behind may ask
//!   for. Chunks outside the window are in `exclude`, so no picker chooses them; when the
//!   playhead moves, chunks entering the window become wanted unless held or asked for.
//! - When a kept chunk takes the engine past the bound, held chunks outside the window
//!   are let go of, those behind the playhead first (the oldest first), then the farthest
//!   ahead (after a seek back). A seek back to them fetches them again.
//! - RFC 7574 has no message that takes a HAVE back, so both sides read what the other does:
//!   - a peer that asks for chunks it announced let go of them: it is served, and its map
//!     forgets them (`on_request`);
//!   - peers may still ask us for a chunk that went. Its request is not answered and
//!     expires; a peer whose request for the same chunk expired twice, while another peer
//!     or the HTTP origin has it, takes it for not held there (`timers.rs`) until a HAVE
//!     says otherwise. (Where nobody else has it, it keeps asking: a congested seeder is
//!     not forgotten.) A peer that held everything when it first said what it holds
//!     seeds the file and never lets go: its expiries are lost REQUESTs or congestion,
//!     and it stays a seeder (else a viewer's lossy uplink turned every seeder into a
//!     partial peer, to be told of every chunk verified).
//!
//!
//! The window's arithmetic (what is wanted, what entered or left it, which held chunk
//! goes first) is `HeldWindow`'s (`held_window.rs`); this file applies it to the exclude
//! map, the store and the channels.
//!
//! [`EngineConfig::max_held_bytes`]: super::EngineConfig::max_held_bytes

use super::channel::Channel;
use super::held_window::WindowMove;
use super::{Engine, PeerAddr};
use crate::Bin;
use crate::store::ChunkStore;
use core::ops::Range;

/// The bins covering chunks `r` (none for an empty range).
pub(super) fn bins(r: &Range<u64>) -> impl Iterator<Item = Bin> {
    let (start, end) = (r.start, r.end);
    (start < end)
        .then(|| Bin::from_chunk_range(start, end - 1))
        .into_iter()
        .flatten()
}

impl<A: PeerAddr, S: ChunkStore> Engine<A, S> {
    /// The chunks wanted now: the window from the playhead (the shorter of the memory
    /// bound's and the read-ahead's), or every chunk without either.
    pub(super) fn wanted(&self) -> Range<u64> {
        match self.live() {
            Some(l) => self.held.wanted_live(l.floor(), l.is_aimed()),
            None => self.held.wanted(),
        }
    }

    /// Whether `chunk` may be picked (held or not).
    pub(super) fn is_wanted(&self, chunk: u64) -> bool {
        self.wanted().contains(&chunk)
    }

    /// The wanted window was `old`: chunks that left it are not picked any more, those
    /// that entered it are unless held or asked for already.
    pub(super) fn move_window(&mut self, old: Range<u64>) {
        let moved = WindowMove::between(&old, &self.wanted());
        for gone in moved.left {
            for b in bins(&gone) {
                self.exclude.set(b);
            }
        }
        for came in moved.entered {
            if came.is_empty() {
                continue;
            }
            // Chunks to fetch now: picked on the next timer, not when a datagram next comes.
            self.pick_again = true;
            for b in bins(&came) {
                self.exclude.copy_range(&self.have, b);
            }
            for ch in self.channels.values() {
                for c in ch.requests.chunks_in(came.clone()) {
                    self.exclude.set_chunk(c);
                }
            }
            self.exclude_saved(came.clone());
            if self.origin.is_none() {
                // (A live window can be billions of chunks long: no chunk by chunk.)
                continue;
            }
            for c in came {
                if self.origin_fetching(c) {
                    self.exclude.set_chunk(c);
                }
            }
        }
    }

    /// After a chunk was kept: lets go of held chunks outside the wanted window until the
    /// engine is within its bound (if it has one).
    pub(super) fn keep_within_bound(&mut self) {
        while self.held.over_bound(self.have_count) {
            let Some(victim) = self.held.to_let_go(&self.have, &self.wanted()) else {
                return;
            };
            self.evict(victim);
        }
    }

    /// `ch`'s peer does not hold the chunks of `bin` (any more): its map and our
    /// availability forget them. A peer that held everything becomes a partial one.
    pub(super) fn peer_let_go(&mut self, ch: &mut Channel<A>, bin: Bin) {
        if ch.holdings.holds_none_of(bin) {
            return;
        }
        let track = ch.handshake.is_established() && self.tracks_availability();
        if ch.holdings.is_complete() {
            ch.holdings.no_longer_complete(bin);
            if track {
                self.avail.remove_seeder();
                self.avail.add_peer(ch.holdings.map());
            }
        } else {
            if track {
                self.avail.apply_lost(ch.holdings.map(), bin);
            }
            ch.holdings.let_go(bin);
        }
    }

    /// The request for `chunk` to `ch`'s peer expired: the second time, if another peer or
    /// the HTTP origin has it and the peer is not a seeder, the peer is taken not to hold it.
    pub(super) fn request_expired(&mut self, ch: &mut Channel<A>, chunk: u64) {
        let Some(b) = Bin::chunk(chunk) else {
            return;
        };
        if !ch.holdings.holds(b) {
            return;
        }
        if !ch.holdings.expired_twice(b) {
            return;
        }
        if self.held_elsewhere(chunk) && !ch.holdings.seeds() {
            self.peer_let_go(ch, b);
            ch.holdings.presume_gone(chunk);
        }
    }

    /// Whether another peer (besides one that announced it) or the HTTP origin has `chunk`.
    pub(super) fn held_elsewhere(&self, chunk: u64) -> bool {
        self.avail.rarity(chunk) >= 2 || self.has_http_origin()
    }

    /// A peer left: the chunks other peers were presumed to have let go (their requests
    /// expired twice while this one held them too) are believed held again, so that a
    /// peer merely slow then is asked once more rather than never (until it announces
    /// them anew). Where it really let them go, two more expiries say so again.
    pub(super) fn restore_presumed_gone(&mut self) {
        let ids: Vec<u32> = self
            .channels
            .iter()
            .filter(|(_, c)| c.holdings.has_presumed_gone())
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            let Some(mut ch) = self.channels.remove(&id) else {
                continue;
            };
            // As a HAVE of each would say.
            for chunk in ch.holdings.take_presumed_gone() {
                self.peer_holds(&mut ch, chunk, chunk);
            }
            self.channels.insert(id, ch);
            self.pick_again = true;
        }
    }

    fn evict(&mut self, chunk: u64) {
        let Some(b) = Bin::chunk(chunk) else {
            return;
        };
        self.store.evict_chunk(chunk);
        self.have.reset(b);
        self.have_count -= 1;
        self.stats.chunks_evicted += 1;
        // Outside the window it stays excluded: wanted again when the window comes back.
        self.exclude.set(b);
        self.saved_chunk_evicted(chunk);
    }
}

#[cfg(test)]
mod tests {
    use crate::Bin;
    use crate::engine::{ContentInfo, Engine, EngineConfig};
    use crate::merkle::{HashAlgorithm, MerkleTree};
    use crate::store::MemoryStore;
    use crate::time::Time;

    /// A leecher of 64 chunks with channels to peers 1 (holding everything, as a page that
    /// played it through announces) and 2.
    fn leecher_with_two_peers(two_hold: bool) -> Engine<u32, MemoryStore> {
        let data = vec![7u8; 64 * 1024];
        let tree = MerkleTree::from_content(HashAlgorithm::Sha256, 1024, &data).unwrap();
        let info = ContentInfo {
            root: tree.root(),
            hash: tree.algorithm(),
            chunk_size: 1024,
            content_len: data.len() as u64,
        };
        let store = MemoryStore::new(data.len(), 1024);
        let mut e = Engine::new(EngineConfig::default(), info, store, Time::ZERO).unwrap();
        for peer in [1, 2] {
            e.connect(peer, Time::ZERO);
            let id = e.by_addr[&peer];
            let mut ch = e.channels.remove(&id).unwrap();
            ch.handshake.forget_opening();
            e.establish(Time::ZERO, &mut ch);
            if peer == 1 || two_hold {
                // As a page playing through announces: in more than one datagram.
                e.peer_gained(Time::ZERO, &mut ch, 0, 31);
                ch.holdings.note_heard();
                e.peer_gained(Time::ZERO, &mut ch, 32, 63);
            }
            e.channels.insert(id, ch);
        }
        e
    }

    fn expire_at_peer_1(e: &mut Engine<u32, MemoryStore>, chunk: u64) {
        let id = e.by_addr[&1];
        let mut ch = e.channels.remove(&id).unwrap();
        e.request_expired(&mut ch, chunk);
        e.channels.insert(id, ch);
    }

    fn peer_1_holds(e: &Engine<u32, MemoryStore>, chunk: u64) -> bool {
        e.channels[&e.by_addr[&1]]
            .holdings
            .map()
            .is_filled(Bin::chunk(chunk).unwrap())
    }

    #[test]
    fn a_chunk_asked_twice_in_vain_is_taken_for_not_held_where_another_has_it() {
        let mut e = leecher_with_two_peers(true);
        assert_eq!(e.avail.rarity(5), 2);
        expire_at_peer_1(&mut e, 5);
        assert!(peer_1_holds(&e, 5), "once may be a loss");
        expire_at_peer_1(&mut e, 5);
        assert!(!peer_1_holds(&e, 5));
        assert!(peer_1_holds(&e, 6));
        assert_eq!(e.avail.rarity(5), 1, "availability follows");
        assert_eq!(e.avail.rarity(6), 2);
        e.avail.check_invariants().unwrap();
    }

    #[test]
    fn when_the_other_holder_leaves_a_presumed_let_go_chunk_is_asked_of_the_peer_again() {
        let mut e = leecher_with_two_peers(true);
        expire_at_peer_1(&mut e, 5);
        expire_at_peer_1(&mut e, 5);
        assert!(!peer_1_holds(&e, 5));
        assert!(!e.pick_again);
        // Peer 2, the other holder, leaves: peer 1 was perhaps only slow.
        let two = e.by_addr[&2];
        e.remove_channel(two, crate::engine::CloseReason::ClosedByPeer);
        assert!(peer_1_holds(&e, 5));
        assert!(
            e.channels[&e.by_addr[&1]].holdings.is_complete(),
            "a seeder again"
        );
        assert_eq!(e.avail.rarity(5), 1);
        e.avail.check_invariants().unwrap();
        // And it is asked at once, not at its next datagram.
        assert!(e.pick_again);
        assert_eq!(e.poll_timeout(), Some(Time::ZERO));
        e.handle_timeout(Time::from_millis(1));
        assert!(!e.pick_again);
        let asked = e.channels[&e.by_addr[&1]].requests.contains(5);
        assert!(asked, "chunk 5 asked of peer 1 again");
    }

    #[test]
    fn a_peer_announcing_a_presumed_let_go_chunk_is_believed() {
        let mut e = leecher_with_two_peers(true);
        expire_at_peer_1(&mut e, 5);
        expire_at_peer_1(&mut e, 5);
        let one = e.by_addr[&1];
        let mut ch = e.channels.remove(&one).unwrap();
        e.peer_gained(Time::ZERO, &mut ch, 5, 5);
        assert!(!ch.holdings.has_presumed_gone(), "its word, not our guess");
        e.channels.insert(one, ch);
        assert!(peer_1_holds(&e, 5));
        e.avail.check_invariants().unwrap();
    }

    #[test]
    fn a_seeder_is_never_taken_to_have_let_go() {
        let mut e = leecher_with_two_peers(true);
        // Peer 1 held everything in the first datagram that said what it holds.
        let one = e.by_addr[&1];
        let mut ch = e.channels.remove(&one).unwrap();
        ch.holdings.set_seeds();
        e.channels.insert(one, ch);
        for _ in 0..4 {
            expire_at_peer_1(&mut e, 5);
        }
        assert!(peer_1_holds(&e, 5), "lost requests, not a chunk let go");
        assert!(e.channels[&one].holdings.is_complete());
    }

    #[test]
    fn where_nobody_else_has_it_the_peer_is_asked_again() {
        let mut e = leecher_with_two_peers(false);
        for _ in 0..4 {
            expire_at_peer_1(&mut e, 5);
        }
        assert!(
            peer_1_holds(&e, 5),
            "a congested only source is not forgotten"
        );
    }
}
