//! Failed origin requests: the wait before the next doubles per failure in a row, and a
//! permanent failure (or too many in a row) ends the origin's use.

use super::config::HttpOriginConfig;
use crate::time::Time;
use core::time::Duration;

#[derive(Debug)]
pub(super) struct Backoff {
    base: Duration,
    max: Duration,
    max_failures: u32,
    /// Failures in a row, and when requests may go out again.
    failures: u32,
    retry_at: Option<Time>,
    /// The origin is no longer used.
    disabled: bool,
}

impl Backoff {
    pub(super) fn new(config: &HttpOriginConfig) -> Backoff {
        Backoff {
            base: config.retry_base,
            max: config.retry_max,
            max_failures: config.max_failures,
            failures: 0,
            retry_at: None,
            disabled: false,
        }
    }

    /// Whether requests may go out at `now`.
    pub(super) fn ready(&self, now: Time) -> bool {
        !self.disabled && self.retry_at.is_none_or(|t| now >= t)
    }

    /// When requests may go out again after a failure (perhaps already past).
    pub(super) fn retry_at(&self) -> Option<Time> {
        self.retry_at
    }

    pub(super) fn is_disabled(&self) -> bool {
        self.disabled
    }

    /// A request was answered: the failures in a row end.
    pub(super) fn succeeded(&mut self) {
        self.failures = 0;
    }

    /// The origin is no longer used, whatever comes.
    pub(super) fn disable(&mut self) {
        self.disabled = true;
    }

    /// A request failed at `now`: the wait before requests go out again, or `None` if
    /// the origin is no longer used (then [`is_disabled`](Self::is_disabled)).
    pub(super) fn failed(&mut self, now: Time, permanent: bool) -> Option<Duration> {
        // Requests that failed together (a server down) count as one failure.
        if self.retry_at.is_none_or(|t| t <= now) {
            self.failures += 1;
        }
        if permanent || self.failures >= self.max_failures {
            self.disabled = true;
            return None;
        }
        let doublings = self.failures.saturating_sub(1).min(16);
        let wait = self.base.saturating_mul(1 << doublings).min(self.max);
        self.retry_at = Some(now + wait);
        Some(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Time {
        Time::ZERO + Duration::from_millis(ms)
    }

    fn backoff(max_failures: u32) -> Backoff {
        Backoff::new(&HttpOriginConfig {
            retry_base: Duration::from_millis(500),
            retry_max: Duration::from_secs(3),
            max_failures,
            ..HttpOriginConfig::default()
        })
    }

    #[test]
    fn the_wait_doubles_per_failure_in_a_row_up_to_the_longest() {
        let mut b = backoff(100);
        let mut now = at(0);
        let mut waits = Vec::new();
        for _ in 0..5 {
            let wait = b.failed(now, false).unwrap();
            assert!(!b.ready(now));
            now += wait;
            assert!(b.ready(now));
            waits.push(wait.as_millis());
        }
        assert_eq!(waits, [500, 1_000, 2_000, 3_000, 3_000]);
    }

    #[test]
    fn failures_within_one_wait_count_once() {
        let mut b = backoff(100);
        assert_eq!(b.failed(at(0), false), Some(Duration::from_millis(500)));
        // Three more requests in flight fail before the retry: the same failure, and
        // the wait counts from the last of them.
        for t in [10, 20, 499] {
            assert_eq!(b.failed(at(t), false), Some(Duration::from_millis(500)));
        }
        assert!(!b.ready(at(998)));
        assert_eq!(b.retry_at(), Some(at(999)));
        assert_eq!(b.failed(at(999), false), Some(Duration::from_millis(1_000)));
    }

    #[test]
    fn an_answer_ends_the_failures_in_a_row() {
        let mut b = backoff(100);
        b.failed(at(0), false);
        b.failed(at(500), false);
        b.succeeded();
        assert_eq!(b.failed(at(2_000), false), Some(Duration::from_millis(500)));
    }

    #[test]
    fn a_permanent_failure_ends_the_origin_at_once() {
        let mut b = backoff(100);
        assert_eq!(b.failed(at(0), true), None);
        assert!(b.is_disabled());
        assert!(!b.ready(at(1_000_000)));
    }

    #[test]
    fn too_many_failures_in_a_row_end_the_origin() {
        let mut b = backoff(3);
        assert!(b.failed(at(0), false).is_some());
        assert!(b.failed(at(500), false).is_some());
        assert_eq!(b.failed(at(1_500), false), None);
        assert!(b.is_disabled());
    }
}
