//! One direction of a link: a drop-tail FIFO queue limited in bytes (and optionally in
//! packets, as a router's buffer is), a serializer of `bandwidth_bps`, and seeded random
//! loss. Propagation delay is added by the network after the link (see [`crate::net`]).
//! A link with `strict_priority` is served by the network packet by packet instead (see
//! [`crate::priority_queue`]): only the counters and the settings here apply to it.

use ppspp::rng::Rng;
use ppspp::time::Time;
use std::collections::VecDeque;

/// Settings of one link direction.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkConfig {
    /// Serialization rate in bits per second; 0 means infinitely fast (no queue).
    pub bandwidth_bps: u64,
    /// Bytes the queue holds, the packet being serialized included.
    pub queue_bytes: usize,
    /// Probability that a packet is lost on this link, independent of the queue.
    pub loss: f64,
    /// Packets the queue holds, the one being serialized excluded (`None`: bytes only).
    pub queue_packets: Option<usize>,
    /// Real-time packets leave before any other (a DiffServ-like priority queue).
    pub strict_priority: bool,
}

impl LinkConfig {
    pub fn unlimited() -> LinkConfig {
        LinkConfig {
            bandwidth_bps: 0,
            queue_bytes: usize::MAX,
            loss: 0.0,
            queue_packets: None,
            strict_priority: false,
        }
    }

    pub fn new(bandwidth_bps: u64, queue_bytes: usize) -> LinkConfig {
        LinkConfig {
            bandwidth_bps,
            queue_bytes,
            loss: 0.0,
            queue_packets: None,
            strict_priority: false,
        }
    }

    /// A link whose queue holds `packets` packets whatever their size (and is not limited
    /// in bytes), as a base station's buffer.
    pub fn packets(bandwidth_bps: u64, packets: usize) -> LinkConfig {
        LinkConfig {
            queue_bytes: usize::MAX,
            queue_packets: Some(packets),
            ..LinkConfig::new(bandwidth_bps, 0)
        }
    }

    pub fn with_strict_priority(mut self) -> LinkConfig {
        self.strict_priority = true;
        self
    }

    pub fn with_loss(mut self, loss: f64) -> LinkConfig {
        self.loss = loss;
        self
    }
}

/// Why a packet did not get onto the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    QueueFull,
    RandomLoss,
}

/// Counters of one link.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub packets: u64,
    pub bytes: u64,
    pub dropped_queue: u64,
    pub dropped_loss: u64,
}

/// One link direction. Packets leave in arrival order; since a packet's departure time is
/// known when it is queued, the queue is kept as (departure time, size) pairs only.
#[derive(Clone, Debug)]
pub struct Link {
    pub config: LinkConfig,
    busy_until: Time,
    backlog: VecDeque<(Time, usize)>,
    backlog_bytes: usize,
    pub stats: LinkStats,
}

impl Link {
    pub fn new(config: LinkConfig) -> Link {
        Link {
            config,
            busy_until: Time::ZERO,
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            stats: LinkStats::default(),
        }
    }

    /// Microseconds to serialize `size` bytes (rounded up).
    pub fn serialization_us(&self, size: usize) -> u64 {
        if self.config.bandwidth_bps == 0 {
            return 0;
        }
        (size as u64 * 8 * 1_000_000).div_ceil(self.config.bandwidth_bps)
    }

    /// Bytes queued or being serialized at `now`.
    pub fn queued_bytes(&mut self, now: Time) -> usize {
        while let Some(&(t, size)) = self.backlog.front() {
            if t > now {
                break;
            }
            self.backlog.pop_front();
            self.backlog_bytes -= size;
        }
        self.backlog_bytes
    }

    /// Queues a packet of `size` bytes arriving at `now`; returns when its last bit leaves
    /// the link, or why it was dropped.
    pub fn enqueue(&mut self, now: Time, size: usize, rng: &mut Rng) -> Result<Time, Drop> {
        if self.config.loss > 0.0 && rng.next_f64() < self.config.loss {
            self.stats.dropped_loss += 1;
            return Err(Drop::RandomLoss);
        }
        if self.config.bandwidth_bps == 0 {
            self.stats.packets += 1;
            self.stats.bytes += size as u64;
            return Ok(now);
        }
        let bytes_full = self.queued_bytes(now) + size > self.config.queue_bytes;
        // The backlog holds the packet being serialized too; the packet limit does not.
        let packets_full = self
            .config
            .queue_packets
            .is_some_and(|n| self.backlog.len() > n);
        if bytes_full || packets_full {
            self.stats.dropped_queue += 1;
            return Err(Drop::QueueFull);
        }
        let start = self.busy_until.max(now);
        let done = Time::from_micros(start.as_micros() + self.serialization_us(size));
        self.busy_until = done;
        self.backlog.push_back((done, size));
        self.backlog_bytes += size;
        self.stats.packets += 1;
        self.stats.bytes += size as u64;
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_is_queueing_plus_serialization() {
        // 8 Mbit/s: 1000 bytes take 1 ms.
        let mut l = Link::new(LinkConfig::new(8_000_000, 10_000));
        let mut rng = Rng::new(1);
        let t0 = Time::from_millis(5);
        assert_eq!(l.enqueue(t0, 1000, &mut rng), Ok(Time::from_millis(6)));
        // The second waits for the first: 1 ms queueing + 1 ms serialization.
        assert_eq!(l.enqueue(t0, 1000, &mut rng), Ok(Time::from_millis(7)));
        assert_eq!(l.queued_bytes(t0), 2000);
        assert_eq!(l.queued_bytes(Time::from_millis(6)), 1000);
        // An idle link starts at once.
        assert_eq!(
            l.enqueue(Time::from_millis(20), 500, &mut rng),
            Ok(Time::from_micros(20_500))
        );
    }

    #[test]
    fn drop_tail_drops_when_full_and_recovers_when_drained() {
        let mut l = Link::new(LinkConfig::new(8_000_000, 3000));
        let mut rng = Rng::new(1);
        for _ in 0..3 {
            assert!(l.enqueue(Time::ZERO, 1000, &mut rng).is_ok());
        }
        assert_eq!(l.enqueue(Time::ZERO, 1000, &mut rng), Err(Drop::QueueFull));
        assert_eq!(l.stats.dropped_queue, 1);
        // After 1 ms one packet has left: room for one more, which queues behind two.
        assert_eq!(
            l.enqueue(Time::from_millis(1), 1000, &mut rng),
            Ok(Time::from_millis(4))
        );
        assert_eq!(
            l.enqueue(Time::from_millis(1), 1, &mut rng),
            Err(Drop::QueueFull)
        );
    }

    #[test]
    fn a_packet_limited_queue_counts_packets_not_bytes() {
        // 8 Mbit/s, 2 packets of queue: one in service plus two waiting fit, a fourth not.
        let mut l = Link::new(LinkConfig::packets(8_000_000, 2));
        let mut rng = Rng::new(1);
        for _ in 0..3 {
            assert!(l.enqueue(Time::ZERO, 1500, &mut rng).is_ok());
        }
        assert_eq!(l.enqueue(Time::ZERO, 40, &mut rng), Err(Drop::QueueFull));
        // Once the first has left (1.5 ms), there is room for one more, however big.
        assert!(l.enqueue(Time::from_micros(1500), 9000, &mut rng).is_ok());
        assert_eq!(
            l.enqueue(Time::from_micros(1500), 40, &mut rng),
            Err(Drop::QueueFull)
        );
    }

    #[test]
    fn random_loss_matches_the_configured_rate() {
        let mut l = Link::new(LinkConfig::unlimited().with_loss(0.03));
        let mut rng = Rng::new(99);
        let n = 200_000;
        let lost = (0..n)
            .filter(|_| l.enqueue(Time::ZERO, 100, &mut rng).is_err())
            .count();
        let rate = lost as f64 / n as f64;
        // Binomial sd = sqrt(0.03*0.97/200000) = 0.00038; allow about 5 sd.
        assert!((rate - 0.03).abs() < 0.002, "loss rate {rate}");
        assert_eq!(l.stats.dropped_loss as usize, lost);
    }
}
