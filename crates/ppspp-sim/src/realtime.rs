//! Real-time flows: a source sending a packet of fixed size at a constant interval (an
//! audio or video call's UDP stream, unresponsive to congestion), and a sink that logs
//! when each packet arrives, for inter-arrival percentiles and loss.

use ppspp::time::Time;

/// A constant-bit-rate UDP source: a `packet_bytes` packet every `interval_us` from
/// `start` until `stop`.
#[derive(Clone, Debug)]
pub struct RtSource {
    pub to: u32,
    pub packet_bytes: usize,
    pub interval_us: u64,
    pub stop: Time,
    next_at: Time,
    /// Packets sent so far (the next packet's sequence number).
    pub sent: u64,
}

impl RtSource {
    /// A source of `bit_rate` bit/s in packets of `packet_bytes` (64 kbit/s in 576-byte
    /// packets: one every 72 ms).
    pub fn new(to: u32, bit_rate: u64, packet_bytes: usize, start: Time, stop: Time) -> RtSource {
        RtSource {
            to,
            packet_bytes,
            interval_us: packet_bytes as u64 * 8 * 1_000_000 / bit_rate,
            stop,
            next_at: start,
            sent: 0,
        }
    }

    /// The sequence number of the next packet due at `now`, if one is.
    pub fn poll_transmit(&mut self, now: Time) -> Option<u64> {
        if self.next_at > now || self.next_at >= self.stop {
            return None;
        }
        self.next_at = Time::from_micros(self.next_at.as_micros() + self.interval_us);
        self.sent += 1;
        Some(self.sent - 1)
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        (self.next_at < self.stop).then_some(self.next_at)
    }
}

/// The receiving end: each packet's sequence number and arrival time, in arrival order.
#[derive(Clone, Debug, Default)]
pub struct RtSink {
    pub arrivals: Vec<(u64, Time)>,
}

impl RtSink {
    /// Milliseconds between consecutive arrivals (a lost packet makes one gap longer).
    pub fn inter_arrivals_ms(&self) -> Vec<f64> {
        self.arrivals
            .windows(2)
            .map(|w| w[1].1.saturating_since(w[0].1).as_micros() as f64 / 1e3)
            .collect()
    }

    /// The share of `sent` packets that never arrived.
    pub fn loss(&self, sent: u64) -> f64 {
        if sent == 0 {
            return 0.0;
        }
        1.0 - self.arrivals.len() as f64 / sent as f64
    }
}

/// The `p`-th percentile (0–100) of `xs` by nearest rank; `NaN` for no values.
pub fn percentile(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_sends_at_its_interval_between_start_and_stop() {
        // 64 kbit/s in 576-byte packets: 72 ms apart.
        let mut s = RtSource::new(
            1,
            64_000,
            576,
            Time::from_millis(100),
            Time::from_millis(300),
        );
        assert_eq!(s.interval_us, 72_000);
        assert_eq!(s.poll_timeout(), Some(Time::from_millis(100)));
        assert_eq!(s.poll_transmit(Time::from_millis(99)), None);
        assert_eq!(s.poll_transmit(Time::from_millis(100)), Some(0));
        assert_eq!(s.poll_transmit(Time::from_millis(100)), None);
        // Woken late, it sends what was due, one at a time.
        assert_eq!(s.poll_transmit(Time::from_millis(250)), Some(1));
        assert_eq!(s.poll_transmit(Time::from_millis(250)), Some(2));
        assert_eq!(s.poll_transmit(Time::from_millis(250)), None);
        // The next would be at 316 ms, after the stop.
        assert_eq!(s.poll_timeout(), None);
        assert_eq!(s.sent, 3);
    }

    #[test]
    fn a_sink_measures_gaps_and_loss() {
        let sink = RtSink {
            arrivals: vec![
                (0, Time::from_millis(10)),
                (1, Time::from_millis(82)),
                (3, Time::from_millis(226)),
            ],
        };
        assert_eq!(sink.inter_arrivals_ms(), vec![72.0, 144.0]);
        assert!((sink.loss(4) - 0.25).abs() < 1e-12);
        let xs = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(percentile(&xs, 50.0), 3.0);
        assert_eq!(percentile(&xs, 95.0), 5.0);
        assert_eq!(percentile(&xs, 5.0), 1.0);
        assert!(percentile(&[], 50.0).is_nan());
    }
}
