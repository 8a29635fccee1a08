//! Whether a page has peers: one connected, connections being set up, or none for a
//! while (alone, when the origin serves more than what playback needs next).

use crate::time::Time;
use core::time::Duration;

/// Connections being set up keep a page from counting as alone for at most this many
/// `alone_after`s: ICE that takes longer may never finish (a firewall), and then the page
/// is alone after all.
const COMING_FOR: u32 = 3;

#[derive(Debug)]
pub(super) struct Presence {
    alone_after: Duration,
    /// Since when no peer has been connected (or coming).
    alone_since: Option<Time>,
    /// The adapter is setting up connections to peers, and since when.
    peers_coming: bool,
    coming_since: Option<Time>,
    /// A peer was connected at the last look.
    connected: bool,
}

impl Presence {
    /// A page with no peer yet, from `now`.
    pub(super) fn new(now: Time, alone_after: Duration) -> Presence {
        Presence {
            alone_after,
            alone_since: Some(now),
            peers_coming: false,
            coming_since: None,
            connected: false,
        }
    }

    /// The adapter is (or is no longer) setting up connections to peers.
    pub(super) fn set_coming(&mut self, coming: bool) {
        self.peers_coming = coming;
    }

    /// Takes note of whether a peer is connected at `now`.
    pub(super) fn observe(&mut self, now: Time, connected: bool) {
        self.connected = connected;
        self.coming_since = self.peers_coming.then(|| self.coming_since.unwrap_or(now));
        let coming = self
            .coming_since
            .is_some_and(|t| now.saturating_since(t) < self.alone_after * COMING_FOR);
        self.alone_since = if connected || coming {
            None
        } else {
            Some(self.alone_since.unwrap_or(now))
        };
    }

    /// A peer was connected at the last look.
    pub(super) fn connected(&self) -> bool {
        self.connected
    }

    /// No peer has been connected or coming for `alone_after`, as of the last look.
    pub(super) fn is_alone(&self, now: Time) -> bool {
        self.alone_since
            .is_some_and(|t| now.saturating_since(t) >= self.alone_after)
    }

    /// When the page comes to count as alone if nothing changes.
    pub(super) fn alone_at(&self) -> Option<Time> {
        self.alone_since.map(|t| t + self.alone_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AFTER: Duration = Duration::from_secs(3);

    fn at(ms: u64) -> Time {
        Time::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn a_page_without_peers_is_alone_once_alone_after_has_passed() {
        let mut p = Presence::new(at(0), AFTER);
        p.observe(at(2_999), false);
        assert!(!p.is_alone(at(2_999)));
        assert_eq!(p.alone_at(), Some(at(3_000)));
        p.observe(at(3_000), false);
        assert!(p.is_alone(at(3_000)));
    }

    #[test]
    fn a_connected_peer_ends_being_alone_and_its_loss_starts_the_wait_again() {
        let mut p = Presence::new(at(0), AFTER);
        p.observe(at(5_000), true);
        assert!(p.connected());
        assert!(!p.is_alone(at(5_000)));
        assert_eq!(p.alone_at(), None);
        p.observe(at(6_000), false);
        assert!(!p.connected());
        assert_eq!(p.alone_at(), Some(at(9_000)));
        assert!(!p.is_alone(at(8_999)));
    }

    #[test]
    fn peers_coming_keep_a_page_from_being_alone_for_three_alone_afters() {
        let mut p = Presence::new(at(0), AFTER);
        p.set_coming(true);
        p.observe(at(1_000), false);
        p.observe(at(9_999), false);
        assert!(!p.is_alone(at(9_999)));
        assert_eq!(p.alone_at(), None);
        // Three `alone_after`s since the connections started: they may never open.
        p.observe(at(10_000), false);
        assert_eq!(p.alone_at(), Some(at(13_000)));
        p.observe(at(13_000), false);
        assert!(p.is_alone(at(13_000)));
    }

    #[test]
    fn connections_set_up_again_count_from_when_they_start() {
        let mut p = Presence::new(at(0), AFTER);
        p.set_coming(true);
        p.observe(at(0), false);
        p.set_coming(false);
        p.observe(at(1_000), false);
        p.set_coming(true);
        p.observe(at(2_000), false);
        p.observe(at(10_999), false);
        assert_eq!(p.alone_at(), None);
    }
}
