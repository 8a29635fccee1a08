//! Choking, both ways: whether we serve the peer and what we must tell it, and whether
//! it serves us.
//!
//! CHOKE and UNCHOKE are not acknowledged. A REQUEST is what shows an UNCHOKE arrived, so
//! one that none followed is sent again (a lost UNCHOKE would leave the peer waiting
//! forever), and a REQUEST while we choke means the CHOKE was lost: it goes again.

use crate::time::Time;
use core::time::Duration;

/// An UNCHOKE no REQUEST followed is sent again after this, doubling, at most this often.
const UNCHOKE_RESEND: Duration = Duration::from_secs(1);
const UNCHOKE_RESENDS: u32 = 4;

#[derive(Debug)]
pub(crate) struct ChokeState {
    /// We do not serve the peer.
    choking: bool,
    /// A CHOKE (true) or UNCHOKE (false) to send.
    to_send: Option<bool>,
    /// An UNCHOKE not yet confirmed by a REQUEST: when to send it again, and how often it
    /// was.
    unchoke_resend: Option<(Time, u32)>,
    /// The peer does not serve us.
    choked_by_peer: bool,
}

impl ChokeState {
    pub(crate) fn new() -> ChokeState {
        ChokeState {
            choking: false,
            to_send: None,
            unchoke_resend: None,
            choked_by_peer: false,
        }
    }

    /// Whether we choke the peer.
    #[inline]
    pub(crate) fn is_choking(&self) -> bool {
        self.choking
    }

    /// Whether the peer chokes us.
    #[inline]
    pub(crate) fn choked_by_peer(&self) -> bool {
        self.choked_by_peer
    }

    /// The peer sent a CHOKE (true) or an UNCHOKE (false).
    #[inline]
    pub(crate) fn peer_chokes(&mut self, choked: bool) {
        self.choked_by_peer = choked;
    }

    /// We stop serving the peer: a CHOKE goes out, and no UNCHOKE is sent again.
    pub(crate) fn choke(&mut self) {
        self.choking = true;
        self.to_send = Some(true);
        self.unchoke_resend = None;
    }

    /// We serve the peer again at `now`: an UNCHOKE goes out, and again until a REQUEST
    /// shows it arrived.
    pub(crate) fn unchoke(&mut self, now: Time) {
        self.choking = false;
        self.to_send = Some(false);
        self.unchoke_resend = Some((now + UNCHOKE_RESEND, 0));
    }

    /// The peer asked for chunks. While we choke it, it missed our CHOKE, which goes
    /// again: false, the request is not served. Else it got our UNCHOKE: true.
    #[inline]
    pub(crate) fn peer_asked(&mut self) -> bool {
        if self.choking {
            self.to_send = Some(true);
            return false;
        }
        self.unchoke_resend = None;
        true
    }

    /// When an UNCHOKE no REQUEST followed goes again.
    #[inline]
    pub(crate) fn unchoke_resend_at(&self) -> Option<Time> {
        self.unchoke_resend.map(|(due, _)| due)
    }

    /// The time to send the UNCHOKE again came at `now`: it goes, and the next time is
    /// twice as far, until it went `UNCHOKE_RESENDS` times.
    pub(crate) fn resend_unchoke(&mut self, now: Time) {
        let Some((_, tries)) = self.unchoke_resend else {
            return;
        };
        self.unchoke_resend = (tries + 1 < UNCHOKE_RESENDS && !self.choking)
            .then(|| (now + UNCHOKE_RESEND * 2u32.pow(tries + 1), tries + 1));
        if !self.choking {
            self.to_send = Some(false);
        }
    }

    /// The CHOKE (true) or UNCHOKE (false) waiting to go.
    #[inline]
    pub(crate) fn to_send(&self) -> Option<bool> {
        self.to_send
    }

    /// The waiting CHOKE or UNCHOKE went out.
    #[inline]
    pub(crate) fn sent(&mut self) {
        self.to_send = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> Time {
        Time::from_millis(s * 1000)
    }

    #[test]
    fn a_choke_goes_out_once_and_again_if_the_peer_asks() {
        let mut c = ChokeState::new();
        assert!(!c.is_choking() && c.to_send().is_none());
        c.choke();
        assert!(c.is_choking());
        assert_eq!(c.to_send(), Some(true));
        c.sent();
        assert_eq!(c.to_send(), None);
        assert!(!c.peer_asked(), "a choked peer is not served");
        assert_eq!(c.to_send(), Some(true), "it missed the CHOKE");
    }

    #[test]
    fn an_unchoke_goes_again_doubling_until_a_request_shows_it_arrived() {
        let mut c = ChokeState::new();
        c.choke();
        c.unchoke(at(0));
        assert!(!c.is_choking());
        assert_eq!(c.to_send(), Some(false));
        c.sent();
        assert_eq!(c.unchoke_resend_at(), Some(at(1)));
        c.resend_unchoke(at(1));
        assert_eq!(c.to_send(), Some(false));
        assert_eq!(c.unchoke_resend_at(), Some(at(3)));
        c.sent();
        assert!(c.peer_asked());
        assert_eq!(c.unchoke_resend_at(), None);
        assert_eq!(c.to_send(), None);
    }

    #[test]
    fn an_unchoke_goes_again_at_most_four_times() {
        let mut c = ChokeState::new();
        c.unchoke(at(0));
        let mut times = Vec::new();
        while let Some(t) = c.unchoke_resend_at() {
            times.push(t);
            c.sent();
            c.resend_unchoke(t);
            assert_eq!(c.to_send(), Some(false));
        }
        assert_eq!(times, [at(1), at(3), at(7), at(15)]);
    }

    #[test]
    fn a_choke_stops_the_unchoke_resends() {
        let mut c = ChokeState::new();
        c.unchoke(at(0));
        c.choke();
        assert_eq!(c.unchoke_resend_at(), None);
        c.sent();
        c.resend_unchoke(at(1));
        assert_eq!(c.to_send(), None, "nothing was due");
    }

    #[test]
    fn the_peer_choking_us_is_its_own_state() {
        let mut c = ChokeState::new();
        c.peer_chokes(true);
        assert!(c.choked_by_peer() && !c.is_choking());
        c.choke();
        c.peer_chokes(false);
        assert!(!c.choked_by_peer() && c.is_choking());
    }
}
