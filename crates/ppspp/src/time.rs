//! Time as the engine sees it: a point in microseconds on the adapter's clock.
//!
//! The core never reads a clock (`std::time::Instant` does not even exist on
//! `wasm32-unknown-unknown`); every adapter passes `now` in. The epoch is the adapter's
//! choice (process start, `performance.now()`, simulated zero), so only differences and
//! comparisons between `Time`s of one adapter mean anything.

use core::fmt;
use core::ops::{Add, AddAssign, Sub};
use core::time::Duration;

/// A point in time, in microseconds since the adapter's epoch.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(u64);

impl Time {
    /// The adapter's epoch.
    pub const ZERO: Time = Time(0);
    /// Later than any real time; used for "never".
    pub const NEVER: Time = Time(u64::MAX);

    /// The time `us` microseconds after the epoch.
    pub const fn from_micros(us: u64) -> Time {
        Time(us)
    }

    /// The time `ms` milliseconds after the epoch (saturating at [`Time::NEVER`]).
    pub const fn from_millis(ms: u64) -> Time {
        Time(ms.saturating_mul(1000))
    }

    /// Microseconds since the epoch.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Time) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }

    /// Signed difference `self - other` in microseconds (one-way-delay samples are signed).
    pub fn signed_micros_since(self, other: Time) -> i64 {
        (self.0 as i128 - other.0 as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }
}

/// Whole microseconds of a duration, saturating.
pub fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        Time(self.0.saturating_add(micros(d)))
    }
}

impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Time {
    type Output = Time;
    fn sub(self, d: Duration) -> Time {
        Time(self.0.saturating_sub(micros(d)))
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Time::NEVER {
            f.write_str("never")
        } else {
            write!(f, "{}.{:06}s", self.0 / 1_000_000, self.0 % 1_000_000)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Time::from_millis(5);
        assert_eq!((t + Duration::from_millis(2)).as_micros(), 7000);
        assert_eq!(t - Duration::from_secs(1), Time::ZERO);
        assert_eq!(Time::NEVER + Duration::from_secs(1), Time::NEVER);
        assert_eq!(t.saturating_since(Time::from_millis(9)), Duration::ZERO);
        assert_eq!(
            t.saturating_since(Time::from_millis(1)),
            Duration::from_millis(4)
        );
        assert_eq!(Time::ZERO.signed_micros_since(t), -5000);
        assert_eq!(format!("{:?}", Time::from_micros(1_500_000)), "1.500000s");
    }
}
