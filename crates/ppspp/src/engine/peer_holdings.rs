//! What a peer holds, as far as we know: its HAVEs and ACKs, and what we presume it let go.
//!
//! A peer's word is not all: a request that expires twice for a chunk someone else holds
//! takes the chunk for let go (an engine bounded in memory lets chunks go without saying
//! so). That is a guess, kept apart so that it can be taken back (`take_presumed_gone`)
//! and gives way to the peer's own word (`confirmed`). A seeder is never taken to have
//! let go: its requests expiring are losses or congestion.

use crate::Bin;
use crate::binmap::Binmap;
use std::collections::BTreeSet;

#[derive(Debug)]
pub(crate) struct PeerHoldings {
    /// What the peer holds (its HAVEs and ACKs).
    have: Binmap,
    /// Chunks whose request to this peer expired once; a second expiry takes them for not
    /// held if someone else holds them (`memory_bound.rs`).
    expired_once: Binmap,
    /// Chunks taken for not held by that rule, not on the peer's word: they are believed
    /// held again when another holder leaves (`restore_presumed_gone`).
    presumed_gone: BTreeSet<u64>,
    /// The peer holds every chunk (it counts as a seeder in availability).
    complete: bool,
    /// A datagram of the peer's has told us what it holds already: coming to hold every
    /// chunk after that is playing through, not seeding.
    heard: bool,
    /// The peer held every chunk in the first datagram that told us what it holds: it
    /// seeds the file, and a seeder does not let chunks go (an engine bounded below the
    /// content's size never holds it all), so its requests expiring are losses or
    /// congestion, never a sign that it let them go.
    seeds: bool,
}

impl PeerHoldings {
    pub(crate) fn new() -> PeerHoldings {
        PeerHoldings {
            have: Binmap::new(),
            expired_once: Binmap::new(),
            presumed_gone: BTreeSet::new(),
            complete: false,
            heard: false,
            seeds: false,
        }
    }

    /// What the peer holds, for searches against our own maps and for availability.
    #[inline]
    pub(crate) fn map(&self) -> &Binmap {
        &self.have
    }

    /// Whether the peer holds every chunk of `bin`.
    #[inline]
    pub(crate) fn holds(&self, bin: Bin) -> bool {
        self.have.is_filled(bin)
    }

    /// Whether the peer holds no chunk of `bin`.
    #[inline]
    pub(crate) fn holds_none_of(&self, bin: Bin) -> bool {
        self.have.is_empty(bin)
    }

    /// Whether the peer holds every chunk of the content.
    #[inline]
    pub(crate) fn is_complete(&self) -> bool {
        self.complete
    }

    /// Whether the peer seeds: it held everything when it first said what it holds.
    #[inline]
    pub(crate) fn seeds(&self) -> bool {
        self.seeds
    }

    /// The peer holds the chunks of `bin` now.
    #[inline]
    pub(crate) fn gained(&mut self, bin: Bin) {
        self.have.set(bin);
    }

    /// The peer is taken not to hold the chunks of `bin` any more (they left a window, or
    /// it let them go).
    #[inline]
    pub(crate) fn let_go(&mut self, bin: Bin) {
        self.have.reset(bin);
    }

    /// A peer that held everything lets the chunks of `bin` go: a partial holder from now.
    pub(crate) fn no_longer_complete(&mut self, bin: Bin) {
        self.complete = false;
        self.have.reset(bin);
    }

    /// The peer holds every chunk now: if nothing it said before told us what it holds,
    /// it seeds; else it played the content through.
    pub(crate) fn now_complete(&mut self) {
        self.complete = true;
        self.seeds = !self.heard;
    }

    /// A datagram of the peer's was handled: once it has told us of anything it holds,
    /// holding everything later is not seeding.
    #[inline]
    pub(crate) fn note_heard(&mut self) {
        self.heard |= self.complete || !self.have.is_clear();
    }

    /// What the peer holds is forgotten (its chunks are of a run that no longer exists).
    pub(crate) fn forget_all(&mut self) {
        self.have.clear();
    }

    /// A request for the chunk `bin` expired: true the second time (the first is marked,
    /// and the mark is taken off the second).
    pub(crate) fn expired_twice(&mut self, bin: Bin) -> bool {
        if !self.expired_once.is_filled(bin) {
            self.expired_once.set(bin);
            return false;
        }
        self.expired_once.reset(bin);
        true
    }

    /// `chunk` is taken for let go by the peer on our guess, not its word.
    pub(crate) fn presume_gone(&mut self, chunk: u64) {
        self.presumed_gone.insert(chunk);
    }

    /// Whether some chunk is presumed let go.
    #[inline]
    pub(crate) fn has_presumed_gone(&self) -> bool {
        !self.presumed_gone.is_empty()
    }

    /// The chunks presumed let go, no longer presumed so (to be believed held again).
    pub(crate) fn take_presumed_gone(&mut self) -> BTreeSet<u64> {
        std::mem::take(&mut self.presumed_gone)
    }

    /// The peer says it holds `first..=last`: its own word, no longer our presumption.
    pub(crate) fn confirmed(&mut self, first: u64, last: u64) {
        let presumed: Vec<u64> = self.presumed_gone.range(first..=last).copied().collect();
        for c in presumed {
            self.presumed_gone.remove(&c);
        }
    }

    /// Tests: the peer is taken for a seeder.
    #[cfg(test)]
    pub(crate) fn set_seeds(&mut self) {
        self.seeds = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(c: u64) -> Bin {
        Bin::chunk(c).unwrap()
    }

    #[test]
    fn a_second_expiry_counts_and_starts_the_count_again() {
        let mut h = PeerHoldings::new();
        assert!(!h.expired_twice(chunk(3)));
        assert!(!h.expired_twice(chunk(4)), "each chunk counts on its own");
        assert!(h.expired_twice(chunk(3)));
        assert!(!h.expired_twice(chunk(3)), "counted from the start again");
        assert!(h.expired_twice(chunk(3)));
    }

    #[test]
    fn holding_everything_first_is_seeding() {
        let mut h = PeerHoldings::new();
        h.note_heard();
        h.gained(chunk(0));
        h.now_complete();
        assert!(h.is_complete() && h.seeds(), "nothing was heard before");
    }

    #[test]
    fn holding_everything_after_saying_less_is_playing_through() {
        let mut h = PeerHoldings::new();
        h.gained(chunk(0));
        h.note_heard();
        h.gained(chunk(1));
        h.now_complete();
        assert!(h.is_complete() && !h.seeds());
    }

    #[test]
    fn letting_go_makes_a_complete_peer_partial() {
        let mut h = PeerHoldings::new();
        h.gained(Bin::new(1, 0).unwrap());
        h.now_complete();
        h.no_longer_complete(chunk(1));
        assert!(!h.is_complete());
        assert!(h.holds(chunk(0)) && !h.holds(chunk(1)));
        assert!(h.holds_none_of(chunk(1)) && !h.holds_none_of(Bin::new(1, 0).unwrap()));
    }

    #[test]
    fn the_peers_word_takes_back_only_what_it_names() {
        let mut h = PeerHoldings::new();
        for c in [2, 5, 9] {
            h.presume_gone(c);
        }
        h.confirmed(3, 5);
        assert_eq!(
            h.take_presumed_gone().into_iter().collect::<Vec<_>>(),
            [2, 9]
        );
        assert!(!h.has_presumed_gone(), "taken");
    }
}
