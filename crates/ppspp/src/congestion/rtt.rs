//! Round-trip time and retransmission timeout (RFC 6298 smoothing, libswift's 50 ms floor
//! on the deviation so a quiet loopback link does not time out on scheduling jitter).

use core::time::Duration;

/// Before any sample: RFC 6817's initial timeout of one second.
pub const INITIAL_RTT: Duration = Duration::from_secs(1);
/// libswift's `MIN_DEV`.
pub const MIN_DEVIATION: Duration = Duration::from_millis(50);
/// Upper bound on the timeout after backoff.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(30);
/// Timeouts double at most this many times in a row.
const MAX_BACKOFF: u32 = 5;

/// Smoothed RTT, deviation and the derived retransmission timeout.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Duration,
    deviation: Duration,
    latest: Option<Duration>,
    min: Option<Duration>,
    backoff: u32,
}

impl Default for RttEstimator {
    fn default() -> Self {
        RttEstimator {
            srtt: INITIAL_RTT,
            deviation: Duration::ZERO,
            latest: None,
            min: None,
            backoff: 0,
        }
    }
}

impl RttEstimator {
    /// Takes one measured round trip (never from a retransmitted datagram: Karn's rule is
    /// the caller's job, since only it knows what was retransmitted).
    pub fn on_sample(&mut self, sample: Duration) {
        if self.latest.is_none() {
            self.srtt = sample;
            self.deviation = sample / 2;
        } else {
            let diff = self.srtt.abs_diff(sample);
            self.deviation = (self.deviation * 3 + diff) / 4;
            self.srtt = (self.srtt * 7 + sample) / 8;
        }
        self.latest = Some(sample);
        self.min = Some(self.min.map_or(sample, |m| m.min(sample)));
        self.backoff = 0;
    }

    /// A retransmission timeout fired: double the timeout until a new sample arrives.
    pub fn on_timeout(&mut self) {
        self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
    }

    /// The smoothed round-trip time (one second before the first sample).
    pub fn srtt(&self) -> Duration {
        self.srtt
    }

    /// The smoothed mean deviation of the round-trip time.
    pub fn deviation(&self) -> Duration {
        self.deviation
    }

    /// The smallest round trip measured, `None` before the first sample.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min
    }

    /// True once a round trip has been measured.
    pub fn has_sample(&self) -> bool {
        self.latest.is_some()
    }

    /// How long to wait for an acknowledgement before calling a datagram lost.
    pub fn timeout(&self) -> Duration {
        let base = self.srtt + 4 * self.deviation.max(MIN_DEVIATION);
        (base * (1u32 << self.backoff)).min(MAX_TIMEOUT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_replaces_the_initial_guess() {
        let mut r = RttEstimator::default();
        assert_eq!(r.timeout(), INITIAL_RTT + 4 * MIN_DEVIATION);
        r.on_sample(Duration::from_millis(100));
        assert_eq!(r.srtt(), Duration::from_millis(100));
        assert_eq!(r.deviation(), Duration::from_millis(50));
        assert_eq!(r.timeout(), Duration::from_millis(300));
    }

    #[test]
    fn smoothing_and_backoff() {
        let mut r = RttEstimator::default();
        for _ in 0..50 {
            r.on_sample(Duration::from_millis(40));
        }
        assert!(r.srtt().abs_diff(Duration::from_millis(40)) < Duration::from_micros(10));
        // The deviation decays, but the timeout keeps libswift's 4 x 50 ms floor.
        assert_eq!(r.timeout(), r.srtt() + 4 * MIN_DEVIATION);
        let t = r.timeout();
        r.on_timeout();
        assert_eq!(r.timeout(), 2 * t);
        for _ in 0..20 {
            r.on_timeout();
        }
        assert_eq!(r.timeout(), 32 * t, "at most five doublings");
        let mut slow = RttEstimator::default();
        for _ in 0..20 {
            slow.on_timeout();
        }
        assert_eq!(slow.timeout(), MAX_TIMEOUT);
        r.on_sample(Duration::from_millis(40));
        assert!(r.timeout() < Duration::from_millis(300));
        assert_eq!(r.min_rtt(), Some(Duration::from_millis(40)));
    }
}
