//! Token-bucket rate limits (per swarm, upload and download), driven by the caller's clock.

use crate::time::{Time, micros};
use core::time::Duration;

/// A byte-rate limit: tokens accrue at `rate` bytes/s up to `burst` bytes.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate: Option<u64>,
    burst: u64,
    tokens: u64,
    /// Sub-byte remainder of accrued tokens, in byte-microseconds, so slow rates are exact.
    remainder: u64,
    last: Time,
}

impl TokenBucket {
    /// No limit.
    pub fn unlimited() -> TokenBucket {
        TokenBucket {
            rate: None,
            burst: 0,
            tokens: 0,
            remainder: 0,
            last: Time::ZERO,
        }
    }

    /// At most `rate` bytes per second on average, with bursts of up to `burst` bytes
    /// (at least one byte; a burst below one datagram stalls, so callers pick one above).
    /// The bucket starts full.
    pub fn new(rate: u64, burst: u64, now: Time) -> TokenBucket {
        TokenBucket {
            rate: Some(rate),
            burst: burst.max(1),
            tokens: burst.max(1),
            remainder: 0,
            last: now,
        }
    }

    /// The rate in bytes per second, or `None` when unlimited.
    pub fn rate(&self) -> Option<u64> {
        self.rate
    }

    /// True for a bucket made by [`TokenBucket::unlimited`].
    pub fn is_unlimited(&self) -> bool {
        self.rate.is_none()
    }

    fn refill(&mut self, now: Time) {
        let Some(rate) = self.rate else { return };
        let elapsed = micros(now.saturating_since(self.last));
        self.last = self.last.max(now);
        let accrued = u128::from(elapsed) * u128::from(rate) + u128::from(self.remainder);
        let whole = accrued / 1_000_000;
        self.remainder = (accrued % 1_000_000) as u64;
        self.tokens = (u128::from(self.tokens) + whole).min(u128::from(self.burst)) as u64;
        if self.tokens == self.burst {
            self.remainder = 0;
        }
    }

    /// Takes `bytes` tokens if all are there. A request larger than the burst is allowed
    /// once the bucket is full, so one oversized datagram cannot block the limit forever.
    pub fn try_take(&mut self, now: Time, bytes: u64) -> bool {
        if self.rate.is_none() {
            return true;
        }
        self.refill(now);
        let need = bytes.min(self.burst);
        if self.tokens >= need {
            self.tokens -= need;
            true
        } else {
            false
        }
    }

    /// How long until `bytes` could be taken (zero if now; `None` if the rate is zero).
    pub fn wait_for(&mut self, now: Time, bytes: u64) -> Option<Duration> {
        let Some(rate) = self.rate else {
            return Some(Duration::ZERO);
        };
        self.refill(now);
        let need = bytes.min(self.burst);
        if self.tokens >= need {
            return Some(Duration::ZERO);
        }
        if rate == 0 {
            return None;
        }
        let missing = u128::from(need - self.tokens) * 1_000_000 - u128::from(self.remainder);
        let us = missing.div_ceil(u128::from(rate));
        Some(Duration::from_micros(u64::try_from(us).unwrap_or(u64::MAX)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_always_allows() {
        let mut b = TokenBucket::unlimited();
        assert!(b.try_take(Time::ZERO, u64::MAX));
        assert_eq!(b.wait_for(Time::ZERO, 1 << 40), Some(Duration::ZERO));
    }

    #[test]
    fn long_run_rate_is_exact() {
        // 10 kB/s in 1000-byte datagrams over a simulated minute.
        let mut b = TokenBucket::new(10_000, 2_000, Time::ZERO);
        let mut now = Time::ZERO;
        let mut sent = 0u64;
        while now < Time::from_millis(60_000) {
            match b.wait_for(now, 1000) {
                Some(d) if d.is_zero() => {
                    assert!(b.try_take(now, 1000));
                    sent += 1000;
                }
                Some(d) => now += d,
                None => unreachable!(),
            }
        }
        // Burst (2000) plus 60 s at 10 kB/s.
        assert!((600_000..=602_000).contains(&sent), "sent {sent}");
    }

    #[test]
    fn slow_rates_accumulate_fractions() {
        let mut b = TokenBucket::new(3, 10, Time::ZERO);
        assert!(b.try_take(Time::ZERO, 10));
        assert!(!b.try_take(Time::from_millis(300), 1));
        assert!(b.try_take(Time::from_millis(334), 1));
        let t = Time::from_millis(334);
        let wait = b.wait_for(t, 3).unwrap();
        // 3 tokens minus the 0.002 already accrued, at 3 per second, rounded up.
        assert_eq!(wait, Duration::from_micros(999_334));
        assert!(!b.clone().try_take(t + wait - Duration::from_micros(1), 3));
        assert!(b.try_take(t + wait, 3));
    }

    #[test]
    fn zero_rate_never_refills_and_oversized_requests_pass_when_full() {
        let mut z = TokenBucket::new(0, 100, Time::ZERO);
        assert!(z.try_take(Time::ZERO, 100));
        assert_eq!(z.wait_for(Time::from_millis(1000), 1), None);
        let mut b = TokenBucket::new(1000, 100, Time::ZERO);
        assert!(
            b.try_take(Time::ZERO, 5000),
            "a full bucket lets one big datagram through"
        );
        assert!(!b.try_take(Time::ZERO, 1));
    }
}
