//! Peer exchange on one channel (RFC 7574 §8.12): when to ask the peer for addresses, and
//! the request and answers waiting to go out.
//!
//! Both travel unreliably: a lost request is made up for by the next one, and a lost
//! answer by the peer asking again.

use crate::time::Time;
use core::time::Duration;
use std::net::SocketAddr;

/// A new PEX request this often while we have room for peers.
const PEX_INTERVAL: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub(crate) struct ChannelPex {
    /// When to ask the peer for addresses (`None`: not while we have no room for peers).
    request_due: Option<Time>,
    /// A PEX_REQ to send.
    request_to_send: bool,
    /// Addresses to send in answer to the peer's request.
    answers: Vec<SocketAddr>,
}

impl ChannelPex {
    pub(crate) fn new() -> ChannelPex {
        ChannelPex {
            request_due: None,
            request_to_send: false,
            answers: Vec::new(),
        }
    }

    /// When the peer is next to be asked for addresses.
    #[inline]
    pub(crate) fn request_due(&self) -> Option<Time> {
        self.request_due
    }

    /// The channel is established at `now`: ask the peer for addresses at once.
    pub(crate) fn ask_at(&mut self, now: Time) {
        self.request_due = Some(now);
    }

    /// The request is due at `now`: with room for peers a request goes out, and the next
    /// one an interval later; without, none goes, and none is planned.
    pub(crate) fn request_timer(&mut self, now: Time, room_for_peers: bool) {
        self.request_to_send = room_for_peers;
        self.request_due = room_for_peers.then_some(now + PEX_INTERVAL);
    }

    /// The peer asked us for addresses: these are the answer (any earlier one not sent
    /// yet is replaced).
    pub(crate) fn answer(&mut self, addrs: Vec<SocketAddr>) {
        self.answers = addrs;
    }

    /// A request or answers wait to go out.
    #[inline]
    pub(crate) fn has_to_send(&self) -> bool {
        self.request_to_send || !self.answers.is_empty()
    }

    #[inline]
    pub(crate) fn request_to_send(&self) -> bool {
        self.request_to_send
    }

    pub(crate) fn request_sent(&mut self) {
        self.request_to_send = false;
    }

    /// The answers not sent yet, in order.
    #[inline]
    pub(crate) fn answers_to_send(&self) -> &[SocketAddr] {
        &self.answers
    }

    /// The first `n` answers went out.
    pub(crate) fn answers_sent(&mut self, n: usize) {
        self.answers.drain(..n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> Time {
        Time::ZERO + Duration::from_secs(s)
    }

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 1], port))
    }

    #[test]
    fn nothing_is_due_or_waits_at_first() {
        let pex = ChannelPex::new();
        assert_eq!(pex.request_due(), None);
        assert!(!pex.has_to_send() && !pex.request_to_send());
        assert!(pex.answers_to_send().is_empty());
    }

    #[test]
    fn a_request_goes_then_again_an_interval_later() {
        let mut pex = ChannelPex::new();
        pex.ask_at(at(5));
        assert_eq!(pex.request_due(), Some(at(5)));
        assert!(!pex.has_to_send(), "due is not yet sent");
        pex.request_timer(at(5), true);
        assert!(pex.request_to_send() && pex.has_to_send());
        assert_eq!(pex.request_due(), Some(at(5) + PEX_INTERVAL));
        pex.request_sent();
        assert!(!pex.request_to_send() && !pex.has_to_send());
    }

    #[test]
    fn without_room_for_peers_no_request_goes_or_is_planned() {
        let mut pex = ChannelPex::new();
        pex.ask_at(at(0));
        pex.request_timer(at(0), true);
        pex.request_timer(at(30), false);
        assert!(!pex.request_to_send());
        assert_eq!(pex.request_due(), None);
    }

    #[test]
    fn answers_leave_in_order_as_they_fit() {
        let mut pex = ChannelPex::new();
        pex.answer(vec![addr(1), addr(2), addr(3)]);
        assert!(pex.has_to_send());
        pex.answers_sent(2);
        assert_eq!(pex.answers_to_send(), &[addr(3)]);
        pex.answers_sent(1);
        assert!(!pex.has_to_send());
    }

    #[test]
    fn a_new_request_replaces_answers_not_sent() {
        let mut pex = ChannelPex::new();
        pex.answer(vec![addr(1), addr(2)]);
        pex.answer(vec![addr(9)]);
        assert_eq!(pex.answers_to_send(), &[addr(9)]);
    }
}
