//! Whether a peer is of use to us: it offered a chunk we lacked or asked us for one. While
//! we lack chunks, a peer that never was is closed after a while (it only holds a slot);
//! one that was of use once stays, however long it is quiet (a paused player asks for
//! nothing).

use crate::time::Time;
use core::time::Duration;

#[derive(Debug)]
pub(crate) struct Usefulness {
    /// When the peer last offered a chunk we lacked or asked us for one (or, checked
    /// then, still held one we lack).
    last_exchange: Time,
    /// It offered a chunk we lacked or asked us for one at least once.
    exchanged: bool,
}

impl Usefulness {
    pub(crate) fn new(now: Time) -> Usefulness {
        Usefulness {
            last_exchange: now,
            exchanged: false,
        }
    }

    /// The peer offered a chunk we lacked, asked us for one or delivered one, at `now`.
    pub(crate) fn exchanged(&mut self, now: Time) {
        self.last_exchange = now;
        self.exchanged = true;
    }

    /// Checked at `now`, the peer still has something to exchange: the wait starts again,
    /// but it was not of use yet.
    #[inline]
    pub(crate) fn still_of_use(&mut self, now: Time) {
        self.last_exchange = now;
    }

    /// When the peer is to be checked for having nothing to exchange, `after` its last
    /// exchange; `None` once it was of use.
    pub(crate) fn check_due(&self, after: Duration) -> Option<Time> {
        (!self.exchanged).then(|| self.last_exchange + after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> Time {
        Time::from_millis(s * 1000)
    }

    const WAIT: Duration = Duration::from_secs(30);

    #[test]
    fn a_new_peer_is_checked_a_wait_after_it_connected() {
        let u = Usefulness::new(at(5));
        assert_eq!(u.check_due(WAIT), Some(at(35)));
    }

    #[test]
    fn a_peer_still_holding_news_is_checked_again_later() {
        let mut u = Usefulness::new(at(0));
        u.still_of_use(at(30));
        assert_eq!(u.check_due(WAIT), Some(at(60)));
    }

    #[test]
    fn a_peer_of_use_once_is_never_checked() {
        let mut u = Usefulness::new(at(0));
        u.exchanged(at(3));
        assert_eq!(u.check_due(WAIT), None);
        u.still_of_use(at(40));
        assert_eq!(u.check_due(WAIT), None, "it stays");
    }
}
