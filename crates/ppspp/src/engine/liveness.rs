//! Whether a channel's peer is still there, and keeping it aware that we are: when we
//! last heard from it and sent to it, the keep-alive interval, the dead-peer rule, and a
//! close on its way out.

use super::event::CloseReason;
use crate::time::Time;
use core::time::Duration;

/// RFC 7574 §8.15 / libswift: a keep-alive at most every 58 s.
const MAX_KEEPALIVE: Duration = Duration::from_secs(58);
/// RFC 7574 §8.15: a peer silent this long, while we sent at least three datagrams, is dead.
const DEAD_PEER: Duration = Duration::from_secs(180);
const DEAD_PEER_DATAGRAMS: u32 = 3;
/// The keep-alive interval never drops below this, however short the round trip.
const MIN_KEEPALIVE: Duration = Duration::from_secs(1);

/// How a channel gets closed once the close is sent.
#[derive(Clone, Debug)]
struct Closing {
    reason: CloseReason,
    /// Send an explicit close first (not to peers that broke the protocol).
    notify: bool,
}

#[derive(Debug)]
pub(crate) struct Liveness {
    last_recv: Time,
    last_send: Time,
    /// Datagrams sent since the peer was last heard from (the dead-peer rule).
    sent_since_recv: u32,
    keepalive: Duration,
    closing: Option<Closing>,
}

impl Liveness {
    /// A channel opened at `now` counts as heard from and sent to then.
    pub(crate) fn new(now: Time) -> Liveness {
        Liveness {
            last_recv: now,
            last_send: now,
            sent_since_recv: 0,
            keepalive: MIN_KEEPALIVE,
            closing: None,
        }
    }

    /// A datagram from the peer arrived at `now`.
    #[inline]
    pub(crate) fn heard_from(&mut self, now: Time) {
        self.last_recv = now;
        self.sent_since_recv = 0;
    }

    /// A datagram to the peer went out at `now`.
    #[inline]
    pub(crate) fn sent(&mut self, now: Time) {
        self.last_send = now;
        self.sent_since_recv = self.sent_since_recv.saturating_add(1);
    }

    /// When the peer was last heard from.
    #[inline]
    pub(crate) fn last_heard(&self) -> Time {
        self.last_recv
    }

    /// When a datagram last went to the peer.
    #[inline]
    pub(crate) fn last_sent(&self) -> Time {
        self.last_send
    }

    /// When the peer counts as dead if it stays silent (`None` while we have sent it too
    /// little since it was last heard from to tell).
    pub(crate) fn dead_peer_at(&self) -> Option<Time> {
        (self.sent_since_recv >= DEAD_PEER_DATAGRAMS).then(|| self.last_recv + DEAD_PEER)
    }

    /// The keep-alive interval.
    #[inline]
    pub(crate) fn keepalive(&self) -> Duration {
        self.keepalive
    }

    /// When a keep-alive is due if nothing else goes out before.
    #[inline]
    pub(crate) fn keepalive_at(&self) -> Time {
        self.last_send + self.keepalive
    }

    /// Nothing went to the peer for a keep-alive interval.
    #[inline]
    pub(crate) fn keepalive_due(&self, now: Time) -> bool {
        now.saturating_since(self.last_send) >= self.keepalive
    }

    /// A keep-alive went out: the interval doubles while the channel is idle.
    pub(crate) fn keepalive_sent(&mut self) {
        self.keepalive = (self.keepalive * 2).min(MAX_KEEPALIVE);
    }

    /// The channel is busy again: keep-alives go one round trip `srtt` apart.
    pub(crate) fn keepalive_from_rtt(&mut self, srtt: Duration) {
        self.keepalive = srtt.max(MIN_KEEPALIVE);
    }

    /// The channel is to close for `reason`, after an explicit close if `notify`.
    pub(crate) fn close(&mut self, reason: CloseReason, notify: bool) {
        self.closing = Some(Closing { reason, notify });
    }

    #[inline]
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.is_some()
    }

    /// While closing: true once if an explicit close is to go out (it is taken as sent).
    pub(crate) fn take_close_notice(&mut self) -> bool {
        match &mut self.closing {
            Some(closing) if closing.notify => {
                closing.notify = false;
                true
            }
            _ => false,
        }
    }

    /// The reason the channel closes, once nothing more is to go out (taken: once).
    pub(crate) fn take_ended(&mut self) -> Option<CloseReason> {
        self.closing.take_if(|c| !c.notify).map(|c| c.reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Time {
        Time::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn a_peer_is_dead_only_after_enough_datagrams_unanswered() {
        let mut l = Liveness::new(at(0));
        for _ in 0..DEAD_PEER_DATAGRAMS - 1 {
            l.sent(at(10));
            assert_eq!(l.dead_peer_at(), None);
        }
        l.sent(at(20));
        assert_eq!(l.dead_peer_at(), Some(at(0) + DEAD_PEER));
        l.heard_from(at(30));
        assert_eq!(l.last_heard(), at(30));
        assert_eq!(l.dead_peer_at(), None);
    }

    #[test]
    fn keepalives_back_off_to_the_cap() {
        let mut l = Liveness::new(at(0));
        assert_eq!(l.keepalive(), MIN_KEEPALIVE);
        for _ in 0..10 {
            l.keepalive_sent();
        }
        assert_eq!(l.keepalive(), MAX_KEEPALIVE);
        l.keepalive_from_rtt(Duration::from_millis(300));
        assert_eq!(l.keepalive(), MIN_KEEPALIVE);
        l.keepalive_from_rtt(Duration::from_secs(3));
        assert_eq!(l.keepalive(), Duration::from_secs(3));
    }

    #[test]
    fn a_keepalive_is_due_an_interval_after_the_last_datagram() {
        let mut l = Liveness::new(at(0));
        l.sent(at(500));
        assert_eq!(l.last_sent(), at(500));
        assert_eq!(l.keepalive_at(), at(1500));
        assert!(!l.keepalive_due(at(1499)));
        assert!(l.keepalive_due(at(1500)));
    }

    #[test]
    fn a_notified_close_goes_out_once_then_ends() {
        let mut l = Liveness::new(at(0));
        assert!(!l.is_closing() && !l.take_close_notice() && l.take_ended().is_none());
        l.close(CloseReason::ClosedLocally, true);
        assert!(l.is_closing());
        assert!(l.take_ended().is_none(), "the close must go out first");
        assert!(l.take_close_notice());
        assert!(!l.take_close_notice());
        assert!(matches!(l.take_ended(), Some(CloseReason::ClosedLocally)));
        assert!(!l.is_closing() && l.take_ended().is_none());
    }

    #[test]
    fn a_silent_close_ends_at_once() {
        let mut l = Liveness::new(at(0));
        l.close(CloseReason::ClosedLocally, false);
        assert!(!l.take_close_notice());
        assert!(matches!(l.take_ended(), Some(CloseReason::ClosedLocally)));
    }
}
