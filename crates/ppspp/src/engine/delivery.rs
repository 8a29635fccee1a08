//! How a peer delivers to us: how fast its chunks arrive, how quickly it answers a
//! request, and whether it delivers at all.
//!
//! A peer whose requests expire gets one request at a time until it delivers again, and
//! one that goes on not delivering is found out: by how long it stayed silent since it
//! last delivered, and by how many distinct expiry windows passed without it ever
//! delivering.

use super::request::InterArrival;
use crate::time::Time;
use core::time::Duration;

#[derive(Debug)]
pub(crate) struct Delivery {
    /// The period between the peer's DATA (requests are sized by it, Algorithm 1).
    inter_arrival: InterArrival,
    /// Fastest time from a REQUEST to its chunk verified, on this channel.
    min_request_rtt: Option<Duration>,
    /// When the latest-sent request this peer answered was sent: one sent before it and
    /// still waiting was passed over.
    newest_answered: Option<Time>,
    /// When the peer last answered a request of ours.
    last_answer: Option<Time>,
    /// When this peer last delivered a verified chunk (or a wait for it began).
    last_delivery: Time,
    /// It has delivered at least one verified chunk.
    delivered_any: bool,
    /// Chunks from this peer with a hash missing that were searched for another shape of
    /// the tree (recv.rs, `MISSING_HASH_SEARCHES`).
    length_searches: u8,
    /// Requests to this peer expired since it last delivered: its silence goes on counting
    /// when we ask again, and it gets one request at a time until it delivers.
    expired_since_delivery: bool,
    /// Distinct expiry windows in which requests to this peer expired, and the last one.
    expiry_rounds: u32,
    last_expiry_round: Time,
    /// When requests to this peer last expired.
    last_expired: Time,
}

impl Delivery {
    pub(crate) fn new(now: Time) -> Delivery {
        Delivery {
            inter_arrival: InterArrival::new(Duration::from_secs(1)),
            min_request_rtt: None,
            newest_answered: None,
            last_answer: None,
            last_delivery: now,
            delivered_any: false,
            length_searches: 0,
            expired_since_delivery: false,
            expiry_rounds: 0,
            last_expiry_round: now,
            last_expired: now,
        }
    }

    /// The period between the peer's DATA, that requests are planned with.
    #[inline]
    pub(crate) fn inter_arrival(&self) -> &InterArrival {
        &self.inter_arrival
    }

    /// A DATA from the peer arrived at `now`.
    #[inline]
    pub(crate) fn data_arrived(&mut self, now: Time) {
        self.inter_arrival.on_data(now);
    }

    /// Fastest time from a REQUEST to its chunk verified, if one was timed.
    #[inline]
    pub(crate) fn min_request_rtt(&self) -> Option<Duration> {
        self.min_request_rtt
    }

    /// The peer delivered a chunk we keep at `now`, asked for at `requested_at` (if we
    /// know when): it is not probed any more.
    pub(crate) fn delivered(&mut self, now: Time, requested_at: Option<Time>) {
        self.last_delivery = now;
        self.delivered_any = true;
        self.expired_since_delivery = false;
        if let Some(at) = requested_at {
            self.newest_answered = Some(self.newest_answered.map_or(at, |n| n.max(at)));
            self.last_answer = Some(now);
            let took = now.saturating_since(at);
            self.min_request_rtt = Some(self.min_request_rtt.map_or(took, |m| m.min(took)));
        }
    }

    /// Requests to the peer expired since it last delivered (it is probed with one).
    #[inline]
    pub(crate) fn expired_since_delivery(&self) -> bool {
        self.expired_since_delivery
    }

    /// We ask the peer at `now` while nothing waits at it: a new wait starts now. Not
    /// right after expired requests, or a peer that stopped delivering would never be
    /// found out; but once we asked it nothing for `idle` after they expired, the silence
    /// since was ours, not the peer's, and it is judged from now.
    pub(crate) fn wait_begins(&mut self, now: Time, idle: Duration) {
        if !self.expired_since_delivery || now.saturating_since(self.last_expired) >= idle {
            self.last_delivery = now;
        }
    }

    /// Requests to the peer expired at `now`, `expiry` after they were sent: it is probed
    /// from now on. If they count as `withheld`, one more expiry window counts against it
    /// (one per window, however many timer calls it spans).
    pub(crate) fn requests_expired(&mut self, now: Time, expiry: Duration, withheld: bool) {
        self.expired_since_delivery = true;
        self.last_expired = now;
        if !withheld {
            return;
        }
        if self.expiry_rounds == 0 || now.saturating_since(self.last_expiry_round) >= expiry {
            self.expiry_rounds += 1;
            self.last_expiry_round = now;
        }
    }

    /// Whether the peer is not answering a request sent at `requested_at` in turn: it has
    /// answered none since, or one sent after it (it does not hold the chunk after all, or
    /// the DATA was lost).
    #[inline]
    pub(crate) fn passed_over(&self, requested_at: Time) -> bool {
        self.last_answer.is_none_or(|a| a < requested_at)
            || self.newest_answered.is_some_and(|n| n > requested_at)
    }

    /// Whether the peer never delivered, through at least `rounds` expiry windows.
    #[inline]
    pub(crate) fn never_delivered(&self, rounds: u32) -> bool {
        !self.delivered_any && self.expiry_rounds >= rounds
    }

    /// How long the peer has not delivered (or since a wait for it began), at `now`.
    #[inline]
    pub(crate) fn since_delivery(&self, now: Time) -> Duration {
        now.saturating_since(self.last_delivery)
    }

    /// The peer is judged on its deliveries from `now` on (the pause was ours).
    pub(crate) fn judge_from(&mut self, now: Time) {
        self.last_delivery = now;
        self.expired_since_delivery = false;
        self.expiry_rounds = 0;
    }

    /// A chunk from the peer failed to verify, with a hash missing if `missing`: whether
    /// to search for another shape of the tree. A missing hash bans nobody, so such
    /// searches are made at most `limit` times per peer.
    pub(crate) fn may_search_shape(&mut self, missing: bool, limit: u8) -> bool {
        let search = !missing || self.length_searches < limit;
        if missing && search {
            self.length_searches += 1;
        }
        search
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> Time {
        Time::from_millis(s * 1000)
    }

    #[test]
    fn a_request_is_passed_over_until_answered_in_turn() {
        let mut d = Delivery::new(at(0));
        assert!(d.passed_over(at(1)), "nothing answered at all");
        // Requests sent at 1 and 2; the one of 1 answered at 3.
        d.delivered(at(3), Some(at(1)));
        assert!(!d.passed_over(at(1)));
        assert!(
            !d.passed_over(at(2)),
            "answered in turn: the one before it came"
        );
        // The one of 4 answered at 5, before the one of 2: that one was passed over.
        d.delivered(at(5), Some(at(4)));
        assert!(d.passed_over(at(2)));
        assert!(!d.passed_over(at(4)));
        assert!(d.passed_over(at(6)), "nothing answered since it was sent");
        // A chunk not asked for (no request time) says nothing of the order.
        d.delivered(at(7), None);
        assert!(d.passed_over(at(6)));
    }

    #[test]
    fn expiries_count_once_per_window() {
        let mut d = Delivery::new(at(0));
        let window = Duration::from_secs(2);
        d.requests_expired(at(1), window, true);
        d.requests_expired(at(2), window, true);
        assert!(!d.never_delivered(2), "one window");
        d.requests_expired(at(3), window, true);
        assert!(d.never_delivered(2));
        assert!(d.expired_since_delivery());
    }

    #[test]
    fn expiries_not_withheld_probe_but_do_not_count() {
        let mut d = Delivery::new(at(0));
        let window = Duration::from_secs(1);
        for s in [1, 3, 5, 7] {
            d.requests_expired(at(s), window, false);
        }
        assert!(d.expired_since_delivery(), "probed, one request at a time");
        assert!(!d.never_delivered(1), "no window counted");
        d.requests_expired(at(9), window, true);
        assert!(d.never_delivered(1));
    }

    #[test]
    fn a_delivery_ends_the_probing_but_not_the_rounds() {
        let mut d = Delivery::new(at(0));
        d.requests_expired(at(1), Duration::from_secs(1), true);
        d.delivered(at(5), Some(at(4)));
        assert!(!d.expired_since_delivery());
        assert!(!d.never_delivered(1), "it delivered");
        assert_eq!(d.since_delivery(at(7)), Duration::from_secs(2));
    }

    #[test]
    fn the_fastest_request_round_trip_is_kept() {
        let mut d = Delivery::new(at(0));
        d.delivered(at(1), None);
        assert_eq!(d.min_request_rtt(), None);
        d.delivered(at(5), Some(at(2)));
        d.delivered(at(9), Some(at(8)));
        d.delivered(at(20), Some(at(10)));
        assert_eq!(d.min_request_rtt(), Some(Duration::from_secs(1)));
    }

    #[test]
    fn a_wait_restarts_only_while_not_probing() {
        let idle = Duration::from_secs(4);
        let mut d = Delivery::new(at(0));
        d.wait_begins(at(4), idle);
        assert_eq!(d.since_delivery(at(5)), Duration::from_secs(1));
        d.requests_expired(at(6), Duration::from_secs(1), true);
        d.wait_begins(at(8), idle);
        assert_eq!(
            d.since_delivery(at(9)),
            Duration::from_secs(5),
            "silence counts on"
        );
        d.judge_from(at(9));
        assert!(!d.expired_since_delivery());
        assert_eq!(d.since_delivery(at(9)), Duration::ZERO);
    }

    #[test]
    fn asked_again_long_after_an_expiry_a_peer_is_judged_afresh() {
        // A request expired once, then we asked the peer nothing for a minute (what it
        // held was not wanted): asked again, its silence counts from the new request.
        let idle = Duration::from_secs(4);
        let mut d = Delivery::new(at(0));
        d.wait_begins(at(1), idle);
        d.requests_expired(at(5), Duration::from_secs(4), true);
        d.wait_begins(at(65), idle);
        assert_eq!(d.since_delivery(at(66)), Duration::from_secs(1));
        assert!(
            d.expired_since_delivery(),
            "still probed, one request at a time"
        );
        // Asked again right after the next expiry: the silence goes on counting.
        d.requests_expired(at(69), Duration::from_secs(4), true);
        d.wait_begins(at(69), idle);
        assert_eq!(d.since_delivery(at(70)), Duration::from_secs(5));
    }

    #[test]
    fn shape_searches_for_missing_hashes_are_bounded() {
        let mut d = Delivery::new(at(0));
        assert!(d.may_search_shape(true, 2));
        assert!(
            d.may_search_shape(false, 2),
            "other failures are not counted"
        );
        assert!(d.may_search_shape(true, 2));
        assert!(!d.may_search_shape(true, 2));
        assert!(d.may_search_shape(false, 2));
    }
}
