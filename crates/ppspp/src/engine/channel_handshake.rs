//! A channel's side of the three-way handshake (RFC 7574 §8.4): the peer's channel ID,
//! whether the channel is established, the initiator's retries, and when our handshake
//! went out, which times the first round trip.
//!
//! The options we send and accept are `handshake.rs`; a responder's state before the
//! initiator's third datagram is `half_open.rs`.

use crate::time::Time;
use core::time::Duration;

/// Initiator handshake attempts before the peer counts as unreachable (1+2+4+8+16 s).
const HANDSHAKE_TRIES: u32 = 5;

/// The initiator's handshake retries.
#[derive(Clone, Debug)]
struct HandshakeRetry {
    tries: u32,
    next: Time,
}

#[derive(Debug)]
pub(crate) struct ChannelHandshake {
    /// The peer's channel ID, 0 until its handshake arrives.
    remote_id: u32,
    established: bool,
    /// We sent the first handshake and wait for the answer.
    retry: Option<HandshakeRetry>,
    /// We opened the channel and have heard nothing from the peer but its answer: a
    /// close now means it was full when our next datagram came (see `Engine::refuse`).
    answered_only: bool,
    /// Our handshake must go out (again) in the next datagram.
    to_send: bool,
    sent_at: Option<Time>,
    /// Our handshake went out more than once: its answer cannot time a round trip.
    resent: bool,
}

impl ChannelHandshake {
    pub(crate) fn new() -> ChannelHandshake {
        ChannelHandshake {
            remote_id: 0,
            established: false,
            retry: None,
            answered_only: false,
            to_send: false,
            sent_at: None,
            resent: false,
        }
    }

    /// The peer's channel ID, 0 until its handshake arrives.
    #[inline]
    pub(crate) fn remote_id(&self) -> u32 {
        self.remote_id
    }

    #[inline]
    pub(crate) fn is_established(&self) -> bool {
        self.established
    }

    /// We opened the channel at `now`: our handshake goes out at once, and again until
    /// the answer arrives.
    pub(crate) fn open(&mut self, now: Time) {
        self.retry = Some(HandshakeRetry {
            tries: 0,
            next: now,
        });
        self.to_send = true;
    }

    /// We opened the channel and wait for the peer's answer.
    #[inline]
    pub(crate) fn awaits_answer(&self) -> bool {
        self.retry.is_some()
    }

    /// When the opening handshake is to be sent again, while we wait for the answer.
    pub(crate) fn retry_at(&self) -> Option<Time> {
        self.retry.as_ref().map(|r| r.next)
    }

    /// The opening handshake went out as often as it may: the peer is unreachable.
    pub(crate) fn out_of_tries(&self) -> bool {
        self.retry
            .as_ref()
            .is_some_and(|r| r.tries >= HANDSHAKE_TRIES)
    }

    /// While we wait for the answer: whether the opening handshake is to go out at `now`.
    pub(crate) fn opening_due(&self, now: Time) -> bool {
        self.retry
            .as_ref()
            .is_some_and(|r| self.to_send || now >= r.next)
    }

    /// Our handshake must go out (again) in the next datagram.
    #[inline]
    pub(crate) fn send_again(&mut self) {
        self.to_send = true;
    }

    /// The opening handshake goes out at `now`; the next retry waits twice as long.
    pub(crate) fn opening_sent(&mut self, now: Time) {
        self.went_out(now);
        if let Some(retry) = self.retry.as_mut() {
            retry.next = now + Duration::from_secs(1 << retry.tries.min(HANDSHAKE_TRIES));
            retry.tries += 1;
        }
    }

    /// If our handshake is to go out, it goes at `now`: true, it is to be written.
    pub(crate) fn take_to_send(&mut self, now: Time) -> bool {
        if !self.to_send {
            return false;
        }
        self.went_out(now);
        true
    }

    fn went_out(&mut self, now: Time) {
        self.to_send = false;
        self.resent |= self.sent_at.is_some();
        self.sent_at = Some(now);
    }

    /// The peer answered our opening handshake from channel `remote_id`.
    pub(crate) fn answered(&mut self, remote_id: u32) {
        self.remote_id = remote_id;
        self.retry = None;
        self.answered_only = true;
    }

    /// A responder's channel, promoted from the half-open handshake that answered
    /// `remote_id` at `answered_at` (more than once if `resent`).
    pub(crate) fn promoted(&mut self, remote_id: u32, answered_at: Option<Time>, resent: bool) {
        self.remote_id = remote_id;
        self.sent_at = answered_at;
        self.resent = resent;
    }

    /// We have heard nothing from the peer but its answer (see `answered_only`).
    #[inline]
    pub(crate) fn answered_only(&self) -> bool {
        self.answered_only
    }

    /// The peer sent more than its answer: it took us in.
    #[inline]
    pub(crate) fn taken_in(&mut self) {
        self.answered_only = false;
    }

    /// The channel is established; false if it already was.
    pub(crate) fn establish(&mut self) -> bool {
        if self.established {
            return false;
        }
        self.established = true;
        true
    }

    /// When our handshake went out, if it went only once: its answer times a round trip
    /// (Karn's rule: after a retry the answer may be to either copy).
    pub(crate) fn round_trip_start(&self) -> Option<Time> {
        self.sent_at.filter(|_| !self.resent)
    }

    /// Stops waiting for the answer, as if it came (tests that establish channels by hand).
    #[cfg(test)]
    pub(crate) fn forget_opening(&mut self) {
        self.retry = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> Time {
        Time::ZERO + Duration::from_secs(s)
    }

    #[test]
    fn opening_retries_back_off_then_give_up() {
        let mut hs = ChannelHandshake::new();
        assert!(!hs.awaits_answer() && !hs.opening_due(at(0)));
        hs.open(at(0));
        assert!(hs.awaits_answer() && hs.opening_due(at(0)));
        hs.opening_sent(at(0));
        assert_eq!(hs.retry_at(), Some(at(1)));
        assert!(!hs.opening_due(at(0)) && hs.opening_due(at(1)));
        hs.opening_sent(at(1));
        assert_eq!(hs.retry_at(), Some(at(3)));
        for _ in 2..HANDSHAKE_TRIES {
            assert!(!hs.out_of_tries());
            hs.opening_sent(at(3));
        }
        assert!(hs.out_of_tries());
    }

    #[test]
    fn a_retry_asked_for_goes_before_its_time() {
        let mut hs = ChannelHandshake::new();
        hs.open(at(0));
        hs.opening_sent(at(0));
        assert!(!hs.opening_due(at(0)));
        hs.send_again();
        assert!(hs.opening_due(at(0)));
    }

    #[test]
    fn only_a_handshake_sent_once_times_a_round_trip() {
        let mut hs = ChannelHandshake::new();
        hs.open(at(0));
        hs.opening_sent(at(0));
        assert_eq!(hs.round_trip_start(), Some(at(0)));
        hs.opening_sent(at(1));
        assert_eq!(hs.round_trip_start(), None);

        let mut responder = ChannelHandshake::new();
        responder.promoted(7, Some(at(2)), false);
        assert_eq!(responder.remote_id(), 7);
        assert_eq!(responder.round_trip_start(), Some(at(2)));
        responder.promoted(7, Some(at(2)), true);
        assert_eq!(responder.round_trip_start(), None);
    }

    #[test]
    fn the_answer_ends_the_retries_and_marks_answered_only() {
        let mut hs = ChannelHandshake::new();
        hs.open(at(0));
        hs.opening_sent(at(0));
        hs.answered(42);
        assert_eq!(hs.remote_id(), 42);
        assert!(!hs.awaits_answer() && hs.retry_at().is_none() && !hs.out_of_tries());
        assert!(hs.answered_only());
        hs.taken_in();
        assert!(!hs.answered_only());
    }

    #[test]
    fn establishes_once() {
        let mut hs = ChannelHandshake::new();
        assert!(!hs.is_established());
        assert!(hs.establish());
        assert!(hs.is_established());
        assert!(!hs.establish());
    }

    #[test]
    fn a_handshake_to_send_goes_once() {
        let mut hs = ChannelHandshake::new();
        assert!(!hs.take_to_send(at(0)));
        hs.send_again();
        assert!(hs.take_to_send(at(5)));
        assert!(!hs.take_to_send(at(6)));
        assert_eq!(hs.round_trip_start(), Some(at(5)));
        hs.send_again();
        assert!(hs.take_to_send(at(7)));
        assert_eq!(hs.round_trip_start(), None);
    }
}
