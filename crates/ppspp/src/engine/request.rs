//! How much to request from one peer: libswift's Algorithm 1. The receiver keeps about one
//! planning window of data requested from each peer, sized by how fast that peer's data has
//! been arriving (the data inter-arrival period), not by an RTT it cannot measure well.

use crate::time::Time;
use core::time::Duration;
use std::collections::VecDeque;

/// libswift's HINT_TIME: plan at least one second ahead.
pub const MIN_PLAN: Duration = Duration::from_secs(1);
/// Inter-arrival samples kept per channel.
const MAX_SAMPLES: usize = 64;
/// The estimate needs at least this many recent samples before it trusts them over the
/// smoothed average.
const MIN_SAMPLES: usize = 4;

/// Data inter-arrival period of one channel.
#[derive(Clone, Debug)]
pub struct InterArrival {
    last_arrival: Option<Time>,
    /// (arrival time, gap since the previous arrival)
    samples: VecDeque<(Time, Duration)>,
    average: Duration,
}

impl InterArrival {
    /// Before any data arrives, assume one chunk per `initial` (libswift: one second).
    pub fn new(initial: Duration) -> InterArrival {
        InterArrival {
            last_arrival: None,
            samples: VecDeque::new(),
            average: initial,
        }
    }

    pub fn on_data(&mut self, now: Time) {
        if let Some(last) = self.last_arrival {
            let gap = now.saturating_since(last);
            self.average = (self.average * 3 + gap) / 4;
            if self.samples.len() == MAX_SAMPLES {
                self.samples.pop_front();
            }
            self.samples.push_back((now, gap));
        }
        self.last_arrival = Some(now);
    }

    /// Mean gap over the last `window` (at least the newest four samples), falling back to
    /// the smoothed average while there are fewer samples. Never zero.
    pub fn period(&self, now: Time, window: Duration) -> Duration {
        // Asked once per chunk received: summed in place, nothing allocated.
        let mut sum = Duration::ZERO;
        let mut count = 0u32;
        for (i, (t, gap)) in self.samples.iter().rev().enumerate() {
            if i >= MIN_SAMPLES && now.saturating_since(*t) > window {
                break;
            }
            sum += *gap;
            count += 1;
        }
        let period = if count as usize >= MIN_SAMPLES {
            sum / count
        } else {
            self.average
        };
        period.max(Duration::from_micros(1))
    }
}

/// Algorithm 1, lines 1–4: how many more chunks may be requested from this peer now.
/// `outstanding` are chunks requested and not yet received; `floor` is the minimum
/// pipeline (so a new channel is not limited to one chunk per second before any data has
/// arrived).
pub fn request_budget(
    now: Time,
    rtt: Duration,
    inter_arrival: &InterArrival,
    outstanding: u64,
    floor: u64,
) -> u64 {
    let plan = plan_ahead(rtt);
    let period = inter_arrival.period(now, plan / 2);
    let in_plan = (plan.as_micros() / period.as_micros().max(1)) as u64;
    in_plan.max(floor).max(1).saturating_sub(outstanding)
}

/// Algorithm 1, line 1: the planning horizon, max(1 s, 4·RTT).
pub fn plan_ahead(rtt: Duration) -> Duration {
    MIN_PLAN.max(rtt * 4)
}

/// Requests not served within two planning horizons expire (go back to the pool).
pub fn request_expiry(rtt: Duration) -> Duration {
    2 * plan_ahead(rtt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_follows_the_arrival_rate() {
        let mut inter_arrival = InterArrival::new(Duration::from_secs(1));
        let rtt = Duration::from_millis(20);
        // Nothing arrived yet: one chunk per second, so only the floor.
        assert_eq!(request_budget(Time::ZERO, rtt, &inter_arrival, 0, 4), 4);
        assert_eq!(request_budget(Time::ZERO, rtt, &inter_arrival, 3, 4), 1);
        // Data every 10 ms: a second's worth is 100 chunks.
        let mut now = Time::ZERO;
        for _ in 0..20 {
            now += Duration::from_millis(10);
            inter_arrival.on_data(now);
        }
        assert_eq!(
            inter_arrival.period(now, Duration::from_millis(500)),
            Duration::from_millis(10)
        );
        assert_eq!(request_budget(now, rtt, &inter_arrival, 30, 4), 70);
        assert_eq!(request_budget(now, rtt, &inter_arrival, 500, 4), 0);
        // A slow path plans 4 RTTs ahead.
        assert_eq!(
            plan_ahead(Duration::from_millis(500)),
            Duration::from_secs(2)
        );
    }

    #[test]
    fn old_samples_age_out_but_four_remain() {
        let mut inter_arrival = InterArrival::new(Duration::from_secs(1));
        let mut now = Time::ZERO;
        for _ in 0..10 {
            now += Duration::from_millis(1);
            inter_arrival.on_data(now);
        }
        for _ in 0..4 {
            now += Duration::from_millis(100);
            inter_arrival.on_data(now);
        }
        // The fast samples are older than the window: only the four slow ones count.
        assert_eq!(
            inter_arrival.period(now, Duration::from_millis(250)),
            Duration::from_millis(100)
        );
        assert!(inter_arrival.period(now, Duration::from_secs(10)) < Duration::from_millis(40));
    }
}
