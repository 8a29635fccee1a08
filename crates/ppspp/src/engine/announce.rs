//! What we tell a peer we hold: the HAVEs announced and held back, and the ACKs for the
//! chunks it delivered.
//!
//! Both may wait a little for company (a datagram of them alone takes a packet's place in
//! the viewer's uplink queue), each until a deadline. HAVEs travel unreliably, so all of
//! them are announced again now and then (`refresh`).

use crate::binmap::Binmap;
use crate::time::Time;

/// A channel's first chunks acknowledged at once, whatever `EngineConfig::ack_every` says.
const QUICK_ACKS: u32 = 16;

#[derive(Debug)]
pub(crate) struct Announcing {
    /// What we announced to the peer.
    announced: Binmap,
    /// `announced` covers all we held when this many chunks had entered `have`
    /// (`Engine::have_gained`): nothing new to announce until it changes.
    done_at: Option<u64>,
    /// When HAVEs not yet announced must leave, company or not (`None`: none wait).
    haves_due_at: Option<Time>,
    /// When our HAVEs were last re-announced in full (they travel unreliably).
    refreshed: Time,
    /// ACKs to send: a chunk and the delay reported with it.
    acks: Vec<(u64, i64)>,
    /// When the oldest of `acks` must leave, company or not.
    acks_due_at: Option<Time>,
    /// Chunks this peer delivered that we acknowledged (the first `QUICK_ACKS` go at once).
    acked_chunks: u32,
}

impl Announcing {
    pub(crate) fn new(now: Time) -> Announcing {
        Announcing {
            announced: Binmap::new(),
            done_at: None,
            haves_due_at: None,
            refreshed: now,
            acks: Vec::new(),
            acks_due_at: None,
            acked_chunks: 0,
        }
    }

    /// Whether everything we held when `gained` chunks had entered `have` was announced.
    #[inline]
    pub(crate) fn announced_all_at(&self, gained: u64) -> bool {
        self.done_at == Some(gained)
    }

    /// Whether any HAVE went to the peer (a channel's first ones are never held back).
    #[inline]
    pub(crate) fn announced_any(&self) -> bool {
        !self.announced.is_clear()
    }

    /// What our handshake answer announced, before the channel existed.
    pub(crate) fn announced_with_answer(&mut self, announced: Binmap) {
        self.announced = announced;
    }

    /// Announces what is new with `push`, which marks in the map what it announced and
    /// says whether it found everything: then nothing is new until `gained` changes.
    pub(crate) fn announce(&mut self, gained: u64, push: impl FnOnce(&mut Binmap) -> bool) {
        if push(&mut self.announced) {
            self.done_at = Some(gained);
        }
    }

    /// Announce everything again (the peer may have missed our HAVEs).
    pub(crate) fn forget_haves_sent(&mut self) {
        self.announced.clear();
        self.done_at = None;
    }

    /// The chunks of `bin` count as not announced (they left the stream's window).
    #[inline]
    pub(crate) fn unannounce(&mut self, bin: crate::Bin) {
        self.announced.reset(bin);
    }

    /// Nothing counts as announced (the chunks were of a run that no longer exists). Not
    /// a refresh: what is new is still searched for only once we gain a chunk.
    pub(crate) fn unannounce_all(&mut self) {
        self.announced.clear();
    }

    /// When our HAVEs were last announced again in full.
    #[inline]
    pub(crate) fn refreshed_at(&self) -> Time {
        self.refreshed
    }

    /// Time to announce everything again, at `now`.
    pub(crate) fn refresh(&mut self, now: Time) {
        self.refreshed = now;
        self.forget_haves_sent();
    }

    /// When held-back HAVEs must leave (`None`: none wait).
    #[inline]
    pub(crate) fn haves_due_at(&self) -> Option<Time> {
        self.haves_due_at
    }

    /// HAVEs are held back: they must leave by `deadline`, or by the deadline of those
    /// held already. The deadline that holds.
    pub(crate) fn hold_haves(&mut self, deadline: Time) -> Time {
        *self.haves_due_at.get_or_insert(deadline)
    }

    /// No HAVEs wait any more.
    #[inline]
    pub(crate) fn no_haves_held(&mut self) {
        self.haves_due_at = None;
    }

    /// `chunk` was delivered and kept, `delay` after it arrived: its ACK is to go, by
    /// `deadline` if no other waits.
    pub(crate) fn ack(&mut self, chunk: u64, delay: i64, deadline: Time) {
        if self.acks.is_empty() {
            self.acks_due_at = Some(deadline);
        }
        self.acks.push((chunk, delay));
        self.acked_chunks = self.acked_chunks.saturating_add(1);
    }

    /// The ACKs to send, oldest first.
    #[inline]
    pub(crate) fn acks(&self) -> &[(u64, i64)] {
        &self.acks
    }

    /// Whether ACKs wait to go.
    #[inline]
    pub(crate) fn has_acks(&self) -> bool {
        !self.acks.is_empty()
    }

    /// When the waiting ACKs must leave, company or not (`None`: none wait).
    pub(crate) fn acks_due_at(&self) -> Option<Time> {
        self.acks_due_at.filter(|_| !self.acks.is_empty())
    }

    /// The first `n` ACKs went out.
    pub(crate) fn acks_sent(&mut self, n: usize) {
        self.acks.drain(..n);
        if self.acks.is_empty() {
            self.acks_due_at = None;
        }
    }

    /// Whether the waiting ACKs must go at `now` rather than wait for company (`every` of
    /// them wait, or the oldest is due). The first `QUICK_ACKS` chunks of a channel are
    /// acknowledged at once (as Linux's quick ACKs): the peer sends its first chunk alone
    /// and waits for the ACK, and then grows a window of two from there, so early ACKs are
    /// what its sending waits on.
    pub(crate) fn acks_must_go(&self, now: Time, every: usize) -> bool {
        self.acked_chunks <= QUICK_ACKS
            || self.acks.len() >= every
            || self.acks_due_at.is_none_or(|t| t <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bin;

    fn at(ms: u64) -> Time {
        Time::from_millis(ms)
    }

    #[test]
    fn the_first_ack_sets_the_deadline_and_sending_all_clears_it() {
        let mut a = Announcing::new(at(0));
        assert_eq!(a.acks_due_at(), None);
        a.ack(1, 5, at(10));
        a.ack(2, 6, at(20));
        assert_eq!(a.acks_due_at(), Some(at(10)), "the oldest sets it");
        assert_eq!(a.acks(), [(1, 5), (2, 6)]);
        a.acks_sent(1);
        assert_eq!(a.acks(), [(2, 6)]);
        assert_eq!(a.acks_due_at(), Some(at(10)));
        a.acks_sent(1);
        assert!(!a.has_acks());
        assert_eq!(a.acks_due_at(), None);
    }

    #[test]
    fn a_channels_first_acks_go_at_once_and_later_ones_wait() {
        let mut a = Announcing::new(at(0));
        for c in 0..u64::from(QUICK_ACKS) {
            a.ack(c, 0, at(100));
            assert!(a.acks_must_go(at(0), 1000));
        }
        a.ack(99, 0, at(100));
        assert!(!a.acks_must_go(at(0), 1000), "they wait for company");
        assert!(
            a.acks_must_go(at(0), QUICK_ACKS as usize + 1),
            "enough wait"
        );
        assert!(a.acks_must_go(at(100), 1000), "due");
    }

    #[test]
    fn held_haves_keep_the_first_deadline_until_none_wait() {
        let mut a = Announcing::new(at(0));
        assert_eq!(a.hold_haves(at(5)), at(5));
        assert_eq!(a.hold_haves(at(9)), at(5));
        assert_eq!(a.haves_due_at(), Some(at(5)));
        a.no_haves_held();
        assert_eq!(a.hold_haves(at(9)), at(9));
    }

    #[test]
    fn a_refresh_announces_everything_again() {
        let mut a = Announcing::new(at(0));
        a.announce(3, |m| {
            m.set(Bin::chunk(0).unwrap());
            true
        });
        assert!(a.announced_any() && a.announced_all_at(3));
        a.refresh(at(7));
        assert_eq!(a.refreshed_at(), at(7));
        assert!(!a.announced_any() && !a.announced_all_at(3));
    }

    #[test]
    fn an_unfinished_announcement_leaves_news_and_unannouncing_keeps_the_mark() {
        let mut a = Announcing::new(at(0));
        a.announce(1, |m| {
            m.set(Bin::chunk(0).unwrap());
            false
        });
        assert!(a.announced_any() && !a.announced_all_at(1), "more to say");
        a.announce(2, |_| true);
        a.unannounce(Bin::chunk(0).unwrap());
        assert!(!a.announced_any());
        assert!(a.announced_all_at(2), "no search until a chunk is gained");
        a.unannounce_all();
        assert!(a.announced_all_at(2));
    }
}
