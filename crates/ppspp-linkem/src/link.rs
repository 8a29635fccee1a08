//! The link model, apart from netfilter so it can be tested: which packets are lost and
//! when the others leave.

use ppspp::rng::Rng;
use std::collections::VecDeque;
use std::time::Duration;

/// Delay, jitter and loss of one link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    delay: Duration,
    jitter: Duration,
    /// Probability of a loss.
    loss: f64,
    seed: u64,
}

impl LinkConfig {
    /// Checks the figures: delays of at most 10 s, a loss share in [0, 100] percent.
    pub fn new(
        delay_ms: f64,
        jitter_ms: f64,
        loss_percent: f64,
        seed: u64,
    ) -> Result<Self, String> {
        let ms = |name: &str, v: f64| {
            if !(0.0..=10_000.0).contains(&v) {
                return Err(format!("{name} must be between 0 and 10000 ms, not {v}"));
            }
            Ok(Duration::from_secs_f64(v / 1000.0))
        };
        if !(0.0..=100.0).contains(&loss_percent) {
            return Err(format!(
                "loss must be between 0 and 100 %, not {loss_percent}"
            ));
        }
        Ok(LinkConfig {
            delay: ms("delay", delay_ms)?,
            jitter: ms("jitter", jitter_ms)?,
            loss: loss_percent / 100.0,
            seed,
        })
    }
}

/// Packets on their way, in order, each with the time it leaves.
pub struct Link<P> {
    config: LinkConfig,
    rng: Rng,
    held: VecDeque<(Duration, P)>,
}

impl<P> Link<P> {
    pub fn new(config: LinkConfig) -> Self {
        Link {
            rng: Rng::new(config.seed),
            config,
            held: VecDeque::new(),
        }
    }

    /// Whether the packet arriving at `now` survives the link (false: it is lost).
    pub fn admit(&mut self, _now: Duration) -> bool {
        self.config.loss == 0.0 || self.rng.next_f64() >= self.config.loss
    }

    /// Holds an admitted packet until its delay (and jitter) have passed, and never
    /// releases it before the one ahead of it.
    pub fn hold(&mut self, now: Duration, packet: P) {
        let jitter = if self.config.jitter.is_zero() {
            Duration::ZERO
        } else {
            self.config.jitter.mul_f64(self.rng.next_f64())
        };
        let mut due = now + self.config.delay + jitter;
        if let Some((last, _)) = self.held.back() {
            due = due.max(*last);
        }
        self.held.push_back((due, packet));
    }

    /// The next packet whose time has come, if any, with how late it leaves (`now` past
    /// its time: a process held off the CPU releases late, which lengthens the path).
    pub fn release(&mut self, now: Duration) -> Option<(P, Duration)> {
        if self.held.front().is_some_and(|(due, _)| *due <= now) {
            return self.held.pop_front().map(|(due, p)| (p, now - due));
        }
        None
    }

    /// When the next held packet leaves.
    pub fn next_due(&self) -> Option<Duration> {
        self.held.front().map(|(due, _)| *due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn packets_leave_after_the_delay_in_order() {
        let mut link = Link::new(LinkConfig::new(20.0, 10.0, 0.0, 7).unwrap());
        for i in 0..100u64 {
            assert!(link.admit(ms(i)));
            link.hold(ms(i), i);
        }
        let mut out = Vec::new();
        let mut last = Duration::ZERO;
        for t in 0..200u64 {
            while let Some((p, late)) = link.release(ms(t)) {
                assert!(late < ms(1), "packet {p} released {late:?} after its time");
                assert!(ms(t) >= ms(p) + ms(20), "packet {p} left at {t} ms");
                assert!(
                    ms(t) <= ms(p) + ms(31) || ms(t) <= last + ms(1),
                    "packet {p} late"
                );
                out.push(p);
                last = ms(t);
            }
        }
        assert_eq!(out, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn the_loss_share_is_kept_and_one_seed_gives_one_sequence() {
        let losses = |seed| {
            let mut link: Link<()> = Link::new(LinkConfig::new(0.0, 0.0, 1.0, seed).unwrap());
            (0..100_000)
                .map(|_| !link.admit(Duration::ZERO))
                .collect::<Vec<bool>>()
        };
        let a = losses(3);
        let lost = a.iter().filter(|l| **l).count();
        assert!((800..1200).contains(&lost), "{lost} of 100000 lost at 1 %");
        assert_eq!(a, losses(3));
        assert_ne!(a, losses(4));
    }

    #[test]
    fn figures_out_of_range_are_refused() {
        assert!(LinkConfig::new(-1.0, 0.0, 0.0, 1).is_err());
        assert!(LinkConfig::new(0.0, 20_000.0, 0.0, 1).is_err());
        assert!(LinkConfig::new(0.0, 0.0, 101.0, 1).is_err());
        assert!(LinkConfig::new(f64::NAN, 0.0, 0.0, 1).is_err());
    }
}
