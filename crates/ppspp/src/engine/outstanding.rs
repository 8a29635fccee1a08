//! The chunks we asked a peer for and have not received, and the REQUESTs and CANCELs
//! waiting to go to it.
//!
//! Each request is kept twice: by chunk, for the questions the engine asks (was it asked
//! here, when), and in the order asked, so the oldest is found without a scan. A request
//! answered or cancelled leaves only the first: its entry in the order is skipped when it
//! comes up.

use crate::Bin;
use crate::time::Time;
use core::ops::RangeBounds;
use core::time::Duration;
use std::collections::{BTreeMap, VecDeque};

#[derive(Debug)]
pub(crate) struct OutstandingRequests {
    /// Requested chunks not yet received, with the time of the request.
    asked: BTreeMap<u64, Time>,
    /// The same requests in the order they were made (oldest first); entries no longer in
    /// `asked`, or asked again since, are stale.
    order: VecDeque<(Time, u64)>,
    /// REQUESTs not yet sent, oldest first.
    to_request: Vec<Bin>,
    /// CANCELs not yet sent, oldest first.
    to_cancel: Vec<Bin>,
}

impl OutstandingRequests {
    pub(crate) fn new() -> OutstandingRequests {
        OutstandingRequests {
            asked: BTreeMap::new(),
            order: VecDeque::new(),
            to_request: Vec::new(),
            to_cancel: Vec::new(),
        }
    }

    /// Chunks asked for and not received.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.asked.len()
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.asked.is_empty()
    }

    /// Whether `chunk` is asked of this peer.
    #[inline]
    pub(crate) fn contains(&self, chunk: u64) -> bool {
        self.asked.contains_key(&chunk)
    }

    /// When `chunk` was asked of this peer, if it is.
    #[inline]
    pub(crate) fn asked_at(&self, chunk: u64) -> Option<Time> {
        self.asked.get(&chunk).copied()
    }

    /// The chunks asked, in chunk order, with when.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, Time)> + '_ {
        self.asked.iter().map(|(&c, &t)| (c, t))
    }

    /// The chunks of `range` asked, in chunk order.
    pub(crate) fn chunks_in(&self, range: impl RangeBounds<u64>) -> impl Iterator<Item = u64> + '_ {
        self.asked.range(range).map(|(&c, _)| c)
    }

    /// Asks for the chunks of `bin` at `now`: they are outstanding, and a REQUEST for
    /// `bin` goes out with the next datagram.
    #[inline]
    pub(crate) fn ask(&mut self, now: Time, bin: Bin) {
        if let Some((first, last)) = bin.chunk_range() {
            for c in first..=last {
                self.asked.insert(c, now);
                self.order.push_back((now, c));
            }
        }
        self.to_request.push(bin);
    }

    /// `chunk` arrived (or is no longer wanted from this peer, and it need not be told):
    /// it is no longer outstanding. False if it was not.
    #[inline]
    pub(crate) fn delivered(&mut self, chunk: u64) -> bool {
        self.asked.remove(&chunk).is_some()
    }

    /// `chunk` is no longer wanted from this peer: if it was asked, a CANCEL goes out.
    /// False if it was not asked.
    #[inline]
    pub(crate) fn cancel(&mut self, chunk: u64) -> bool {
        if self.asked.remove(&chunk).is_none() {
            return false;
        }
        if let Some(b) = Bin::chunk(chunk) {
            self.to_cancel.push(b);
        }
        true
    }

    /// Takes back the request of `chunk`, asked: a REQUEST of that chunk alone not sent
    /// yet is dropped, and a CANCEL goes out only if it was sent.
    pub(crate) fn withdraw(&mut self, chunk: u64) {
        self.asked.remove(&chunk);
        let Some(b) = Bin::chunk(chunk) else { return };
        let unsent = self.to_request.len();
        self.to_request.retain(|&p| p != b);
        if self.to_request.len() == unsent {
            self.to_cancel.push(b);
        }
    }

    /// Cancels every request below `floor` (behind a live window), in chunk order.
    pub(crate) fn cancel_below(&mut self, floor: u64) {
        while let Some((&c, _)) = self.asked.first_key_value()
            && c < floor
        {
            self.cancel(c);
        }
        self.order.retain(|&(_, c)| c >= floor);
    }

    /// Cancels every request (a live stream that restarted), in chunk order.
    pub(crate) fn cancel_all(&mut self) {
        for c in core::mem::take(&mut self.asked).into_keys() {
            if let Some(b) = Bin::chunk(c) {
                self.to_cancel.push(b);
            }
        }
        self.order.clear();
    }

    /// Forgets every request, with no CANCEL (the peer choked us: it drops them itself),
    /// and gives the chunks, in chunk order, to be asked elsewhere.
    pub(crate) fn drop_all(&mut self) -> impl Iterator<Item = u64> + use<> {
        self.order.clear();
        core::mem::take(&mut self.asked).into_keys()
    }

    /// When the oldest outstanding request was made. The front entry may be stale (its
    /// chunk arrived); that only makes a timer fire early once, and `expire` drops it.
    #[inline]
    pub(crate) fn oldest(&self) -> Option<Time> {
        self.order.front().map(|(t, _)| *t)
    }

    /// The requests older than `expiry` at `now` are given up: each leaves with a CANCEL,
    /// and they are returned oldest first. Stale entries are dropped on the way.
    pub(crate) fn expire(&mut self, now: Time, expiry: Duration) -> Vec<u64> {
        let mut expired = Vec::new();
        while let Some(&(t, c)) = self.order.front() {
            let current = self.asked.get(&c) == Some(&t);
            if current && t + expiry > now {
                break;
            }
            self.order.pop_front();
            if current {
                self.asked.remove(&c);
                expired.push(c);
            }
        }
        for &c in &expired {
            if let Some(b) = Bin::chunk(c) {
                self.to_cancel.push(b);
            }
        }
        expired
    }

    /// Whether the peer still has chunks to send us for REQUESTs it got (those not sent
    /// yet left out): the next to arrive brings company for waiting ACKs and REQUESTs. With
    /// none left, a REQUEST that waited would leave the peer idle.
    #[inline]
    pub(crate) fn awaiting_chunks(&self) -> bool {
        let unsent: u64 = self.to_request.iter().map(|b| b.base_length()).sum();
        self.asked.len() as u64 > unsent
    }

    /// REQUESTs waiting to go, oldest first.
    #[inline]
    pub(crate) fn to_request(&self) -> &[Bin] {
        &self.to_request
    }

    /// The first `n` of [`to_request`](Self::to_request) went out.
    #[inline]
    pub(crate) fn requests_sent(&mut self, n: usize) {
        self.to_request.drain(..n);
    }

    /// CANCELs waiting to go, oldest first.
    #[inline]
    pub(crate) fn to_cancel(&self) -> &[Bin] {
        &self.to_cancel
    }

    /// The first `n` of [`to_cancel`](Self::to_cancel) went out.
    #[inline]
    pub(crate) fn cancels_sent(&mut self, n: usize) {
        self.to_cancel.drain(..n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn at(ms: u64) -> Time {
        Time::from_millis(ms)
    }

    fn chunk(c: u64) -> Bin {
        Bin::chunk(c).unwrap()
    }

    #[test]
    fn a_request_is_outstanding_until_delivered_and_its_request_goes_once() {
        let mut r = OutstandingRequests::new();
        r.ask(at(5), Bin::new(1, 1).unwrap()); // chunks 2 and 3
        r.ask(at(7), chunk(9));
        assert_eq!(r.len(), 3);
        assert_eq!(r.asked_at(3), Some(at(5)));
        assert_eq!(r.asked_at(4), None);
        assert_eq!(r.to_request(), [Bin::new(1, 1).unwrap(), chunk(9)]);
        assert!(!r.awaiting_chunks(), "no REQUEST has gone yet");
        r.requests_sent(1);
        assert_eq!(r.to_request(), [chunk(9)]);
        assert!(r.awaiting_chunks());
        assert!(r.delivered(2));
        assert!(!r.delivered(2), "delivered once");
        assert!(!r.contains(2) && r.contains(3));
        assert_eq!(r.chunks_in(0..=8).collect::<Vec<_>>(), [3]);
        assert_eq!(r.iter().collect::<Vec<_>>(), [(3, at(5)), (9, at(7))]);
        assert!(r.to_cancel().is_empty(), "a delivery needs no CANCEL");
    }

    #[test]
    fn the_oldest_requests_expire_and_answered_ones_are_skipped() {
        let mut r = OutstandingRequests::new();
        r.ask(at(0), chunk(1));
        r.ask(at(10), chunk(2));
        r.ask(at(20), chunk(3));
        r.delivered(1);
        assert_eq!(
            r.oldest(),
            Some(at(0)),
            "a stale front only fires a timer early"
        );
        assert_eq!(r.expire(at(25), 20 * MS), Vec::<u64>::new());
        assert_eq!(r.oldest(), Some(at(10)), "the stale front is gone");
        assert_eq!(r.expire(at(40), 20 * MS), [2, 3]);
        assert_eq!(r.to_cancel(), [chunk(2), chunk(3)]);
        assert!(r.is_empty() && r.oldest().is_none());
        r.cancels_sent(1);
        assert_eq!(r.to_cancel(), [chunk(3)]);
    }

    #[test]
    fn a_chunk_asked_again_expires_from_its_new_request() {
        let mut r = OutstandingRequests::new();
        r.ask(at(0), chunk(4));
        r.ask(at(30), chunk(4));
        assert_eq!(r.len(), 1);
        assert_eq!(r.expire(at(25), 20 * MS), Vec::<u64>::new());
        assert!(r.contains(4));
        assert_eq!(r.expire(at(50), 20 * MS), [4]);
    }

    #[test]
    fn cancels_go_only_for_requests_sent() {
        let mut r = OutstandingRequests::new();
        r.ask(at(0), chunk(1));
        r.ask(at(0), chunk(2));
        r.requests_sent(1);
        r.withdraw(1);
        r.withdraw(2);
        assert!(r.is_empty());
        assert!(r.to_request().is_empty(), "the unsent REQUEST is dropped");
        assert_eq!(r.to_cancel(), [chunk(1)], "the sent one is cancelled");
        assert!(!r.cancel(7), "never asked");
        r.ask(at(0), chunk(7));
        assert!(r.cancel(7));
        assert_eq!(r.to_cancel(), [chunk(1), chunk(7)]);
    }

    #[test]
    fn a_live_window_cancels_what_falls_behind_and_a_choke_drops_all() {
        let mut r = OutstandingRequests::new();
        for c in [8, 3, 5, 12] {
            r.ask(at(c), chunk(c));
        }
        r.cancel_below(6);
        assert_eq!(r.to_cancel(), [chunk(3), chunk(5)]);
        assert_eq!(r.iter().map(|(c, _)| c).collect::<Vec<_>>(), [8, 12]);
        assert_eq!(r.oldest(), Some(at(8)));
        assert_eq!(r.drop_all().collect::<Vec<_>>(), [8, 12]);
        assert!(r.is_empty() && r.oldest().is_none());
        assert_eq!(r.to_cancel().len(), 2, "a choke sends no CANCEL");
        r.ask(at(1), chunk(20));
        r.ask(at(1), chunk(21));
        r.cancel_all();
        assert!(r.is_empty() && r.oldest().is_none());
        assert_eq!(r.to_cancel()[2..], [chunk(20), chunk(21)]);
    }
}
