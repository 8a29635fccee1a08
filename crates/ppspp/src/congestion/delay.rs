//! LEDBAT's two delay estimators (RFC 6817 §2.4): the base delay, a minimum over
//! `history` intervals so an old minimum expires after a route change or clock drift, and
//! the current delay, a MIN filter over the samples of the last round trip.
//!
//! Samples are signed microseconds (`receiver clock - sender timestamp`): the clock offset
//! between the hosts is in every sample and cancels in `current - base`.

use crate::time::Time;
use core::time::Duration;
use std::collections::VecDeque;

/// Minimum one-way delay per interval, for the last `history` intervals.
#[derive(Clone, Debug)]
pub struct BaseDelay {
    minima: VecDeque<i64>,
    interval_start: Time,
    interval: Duration,
    history: usize,
}

impl BaseDelay {
    /// Keeps one minimum per `interval`, for the last `history` intervals (at least one).
    pub fn new(interval: Duration, history: usize) -> BaseDelay {
        BaseDelay {
            minima: VecDeque::with_capacity(history.max(1)),
            interval_start: Time::ZERO,
            interval,
            history: history.max(1),
        }
    }

    /// Takes a delay sample (microseconds), starting a new interval when the current one
    /// is over and dropping the oldest beyond `history`.
    pub fn update(&mut self, now: Time, sample_us: i64) {
        let rolled = now.saturating_since(self.interval_start) >= self.interval;
        match self.minima.back_mut() {
            Some(last) if !rolled => *last = (*last).min(sample_us),
            _ => {
                if self.minima.len() == self.history {
                    self.minima.pop_front();
                }
                self.minima.push_back(sample_us);
                self.interval_start = now;
            }
        }
    }

    /// The base delay, `None` before the first sample.
    pub fn get(&self) -> Option<i64> {
        self.minima.iter().copied().min()
    }
}

/// Recent one-way-delay samples; keeps at least `MIN_SAMPLES` and drops those older than
/// one round trip beyond that.
#[derive(Clone, Debug, Default)]
pub struct CurrentDelay {
    samples: VecDeque<(Time, i64)>,
}

/// RFC 6817: the filter needs at least four samples per round trip.
const MIN_SAMPLES: usize = 4;
/// Bounds memory when acknowledgements arrive very fast.
const MAX_SAMPLES: usize = 64;

impl CurrentDelay {
    /// Takes a delay sample (microseconds) and drops samples older than `rtt`, keeping
    /// at least `MIN_SAMPLES`.
    pub fn update(&mut self, now: Time, sample_us: i64, rtt: Duration) {
        if self.samples.len() == MAX_SAMPLES {
            self.samples.pop_front();
        }
        self.samples.push_back((now, sample_us));
        while self.samples.len() > MIN_SAMPLES
            && self
                .samples
                .front()
                .is_some_and(|(t, _)| now.saturating_since(*t) > rtt)
        {
            self.samples.pop_front();
        }
    }

    /// The MIN filter over the kept samples, `None` before the first.
    pub fn get(&self) -> Option<i64> {
        self.samples.iter().map(|(_, d)| *d).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_delay_forgets_old_minima() {
        let mut b = BaseDelay::new(Duration::from_secs(60), 3);
        assert_eq!(b.get(), None);
        b.update(Time::from_millis(0), 500);
        b.update(Time::from_millis(10), 300);
        assert_eq!(b.get(), Some(300));
        // Three more intervals with a higher floor push the 300 out.
        for minute in 1..=3 {
            b.update(Time::from_millis(minute * 60_000), 900);
        }
        assert_eq!(b.get(), Some(900));
    }

    #[test]
    fn negative_samples_from_clock_offset_are_fine() {
        let mut b = BaseDelay::new(Duration::from_secs(60), 10);
        b.update(Time::ZERO, -1_000_000);
        b.update(Time::from_millis(1), -999_000);
        assert_eq!(b.get(), Some(-1_000_000));
    }

    #[test]
    fn current_delay_keeps_one_rtt_but_at_least_four() {
        let mut c = CurrentDelay::default();
        let rtt = Duration::from_millis(100);
        for (i, d) in [10, 20, 30, 40, 50, 60].into_iter().enumerate() {
            c.update(Time::from_millis(i as u64 * 1000), d, rtt);
        }
        // Samples are a second apart: only the newest four survive.
        assert_eq!(c.get(), Some(30));
        for i in 0..10 {
            c.update(Time::from_millis(6000 + i), 70, rtt);
        }
        // Everything older than one round trip is gone once enough fresh samples exist.
        assert_eq!(c.get(), Some(70));
    }
}
