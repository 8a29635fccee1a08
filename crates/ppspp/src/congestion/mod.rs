//! Congestion control per channel, with DTL's runtime priority:
//!
//! - priority 0: LEDBAT (RFC 6817), a delay-based controller that keeps the queue it adds
//!   near `target` and yields to loss-based traffic, with the two DTL fixes for intra-LEDBAT
//!   fairness: slow start at flow start (so a late-comer sees the true base delay) and a
//!   multiplicative decrease by `beta` per acknowledged datagram while over target (so
//!   faster flows give back more), here bounded to half the window per round trip so a
//!   slow-start overshoot does not take a large window to the minimum;
//! - priority N > 0: MulTCP, a loss-based AIMD that behaves like N TCP flows (increase N
//!   datagrams per round trip, decrease by 1/(2N) of the window on loss).
//!
//! LEDBAT halves on loss (RFC 6817 §2.4.1), so random loss (a wireless hop, noise) costs it
//! more than congestion does. A loss after a round trip in which no delay sample showed a
//! queue is unlikely to come from a full buffer deeper than `random_loss_delay`: like TCP
//! Veno (Fu and Liew, IEEE JSAC 21(2), 2003), which tells random from congestive loss by
//! the backlog Vegas estimates, it then shrinks the window by `random_loss_decrease` only.
//! With a queue (another flow filling the buffer) it halves as before. Buffers shallower
//! than that threshold hide congestion from the delay signal, and there LEDBAT takes more
//! from a loss-based flow than it did (docs/EXPERIMENTS.md).
//!
//! One engine's LEDBAT channels are coupled: they usually share one bottleneck, the host's
//! uplink, and LEDBAT's promise (at most `target` of added queue) is about that queue. N
//! channels that each add up to a datagram per round trip grow it N times as fast as one,
//! and overshoot a shallow buffer before any of their delay estimates (each a round trip
//! or two old) shows it. So the channels in congestion avoidance with data in flight share
//! one additive increase, divided among them, as RFC 6356 couples the subflows of a
//! multipath TCP connection so that together they are no more aggressive than one flow on
//! a shared bottleneck. Decreases stay per channel.
//!
//! The window counts datagrams, as in libswift: every datagram carries at most one chunk
//! plus its hashes, so datagrams and bytes are proportional.

pub mod delay;
pub mod rtt;

use crate::time::Time;
use core::fmt;
use core::time::Duration;
use delay::{BaseDelay, CurrentDelay};

/// Tunables; [`CongestionConfig::default`] gives the values used everywhere unless a test
/// or an experiment says otherwise.
#[derive(Clone, Debug, PartialEq)]
pub struct CongestionConfig {
    /// LEDBAT's TARGET queuing delay; RFC 6817 requires at most 100 ms.
    pub target: Duration,
    /// LEDBAT's GAIN for increases; RFC 6817 requires at most 1.
    pub gain: f64,
    /// DTL's multiplicative decrease per datagram acknowledged over target; 1.0 turns it
    /// off and leaves the RFC's additive decrease.
    pub beta: f64,
    /// DTL's slow start at flow start; off gives the RFC's plain linear controller.
    pub slow_start: bool,
    /// RFC 6817 MIN_CWND (and INIT_CWND), in datagrams.
    pub min_cwnd: f64,
    /// Upper bound, in datagrams, on bursts and on sender state per channel.
    pub max_cwnd: f64,
    /// RFC 6817 ALLOWED_INCREASE: the window may exceed what is in flight by this much.
    pub allowed_increase: f64,
    /// Base-delay history: `base_history` minima of `base_interval` each.
    pub base_history: usize,
    /// Length of one base-delay interval.
    pub base_interval: Duration,
    /// 0 = LEDBAT; N > 0 = MulTCP emulating N TCP flows.
    pub priority: u32,
    /// LEDBAT takes a loss for random when the queuing delay is below this (`None`: every
    /// loss is congestion, as in RFC 6817).
    pub random_loss_delay: Option<Duration>,
    /// The share of the window a random loss takes (a congestive one takes half).
    pub random_loss_decrease: f64,
    /// An engine's LEDBAT channels share one additive increase (see the module doc); off,
    /// each channel is on its own, as in RFC 6817 and libswift.
    pub coupled: bool,
}

impl Default for CongestionConfig {
    fn default() -> Self {
        CongestionConfig {
            // libswift's value: low enough to keep a viewer's calls and page loads snappy.
            target: Duration::from_millis(25),
            gain: 1.0,
            beta: 0.99,
            slow_start: true,
            min_cwnd: 2.0,
            max_cwnd: 4096.0,
            allowed_increase: 1.0,
            base_history: 10,
            base_interval: Duration::from_secs(60),
            priority: 0,
            random_loss_delay: Some(Duration::from_millis(5)),
            random_loss_decrease: 0.1,
            coupled: true,
        }
    }
}

/// Why a [`CongestionConfig`] was refused.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError(pub &'static str);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid congestion control setting: {}", self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Largest priority accepted: DTL found no gain beyond about 4 and loss grows with N.
pub const MAX_PRIORITY: u32 = 16;

impl CongestionConfig {
    /// Checks every setting against its allowed range (the RFC's bounds where it has any).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.target.is_zero() || self.target > Duration::from_millis(100) {
            return Err(ConfigError(
                "target must be above 0 and at most 100 ms (RFC 6817)",
            ));
        }
        if !(self.gain > 0.0 && self.gain <= 1.0) {
            return Err(ConfigError("gain must be in (0, 1] (RFC 6817)"));
        }
        if !(self.beta > 0.0 && self.beta <= 1.0) {
            return Err(ConfigError("beta must be in (0, 1]"));
        }
        if !(self.min_cwnd >= 1.0 && self.max_cwnd >= self.min_cwnd && self.max_cwnd.is_finite()) {
            return Err(ConfigError("need 1 <= min_cwnd <= max_cwnd < infinity"));
        }
        if !(self.allowed_increase > 0.0 && self.allowed_increase.is_finite()) {
            return Err(ConfigError("allowed_increase must be above 0 (RFC 6817)"));
        }
        if self.base_history == 0 || self.base_interval.is_zero() {
            return Err(ConfigError(
                "base delay history needs at least one interval",
            ));
        }
        if self.priority > MAX_PRIORITY {
            return Err(ConfigError("priority must be at most 16"));
        }
        if self.random_loss_delay.is_some_and(|d| d >= self.target) {
            return Err(ConfigError("random_loss_delay must be below target"));
        }
        if !(self.random_loss_decrease >= 0.0 && self.random_loss_decrease <= 0.5) {
            return Err(ConfigError("random_loss_decrease must be in [0, 0.5]"));
        }
        Ok(())
    }
}

/// Where the window's growth comes from at the moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Exponential growth: one datagram per datagram acknowledged.
    SlowStart,
    /// LEDBAT's delay-based control (priority 0) or MulTCP's AIMD (priority > 0).
    Avoidance,
}

/// The per-channel congestion window.
#[derive(Clone, Debug)]
pub struct Controller {
    config: CongestionConfig,
    cwnd: f64,
    ssthresh: f64,
    phase: Phase,
    base: BaseDelay,
    current: CurrentDelay,
    /// Losses shrink the window at most once per round trip.
    last_decrease: Option<Time>,
    /// The last delay sample that showed at least `random_loss_delay` of queue.
    queue_seen_at: Option<Time>,
    /// Most datagrams in flight during this round trip and the previous one: what the
    /// sender really used. RFC 6817 caps the window at flightsize + ALLOWED_INCREASE so an
    /// idle sender does not grow it; measured per acknowledgement that cap would pin the
    /// window when acknowledgements arrive in a batch and each one sees a smaller flight.
    flight_max: u32,
    flight_prev: u32,
    flight_epoch: Time,
    /// The multiplicative decrease takes the window at most to `decrease_floor` (half of
    /// what it was when the round trip starting at `decrease_epoch` began).
    decrease_epoch: Option<Time>,
    decrease_floor: f64,
}

impl Controller {
    /// A controller for a new flow; the configuration must pass [`CongestionConfig::validate`].
    pub fn new(config: CongestionConfig) -> Result<Controller, ConfigError> {
        config.validate()?;
        Ok(Controller {
            cwnd: config.min_cwnd,
            ssthresh: config.max_cwnd,
            phase: if config.slow_start || config.priority > 0 {
                Phase::SlowStart
            } else {
                Phase::Avoidance
            },
            base: BaseDelay::new(config.base_interval, config.base_history),
            current: CurrentDelay::default(),
            last_decrease: None,
            queue_seen_at: None,
            flight_max: 0,
            flight_prev: 0,
            flight_epoch: Time::ZERO,
            decrease_epoch: None,
            decrease_floor: 0.0,
            config,
        })
    }

    /// Datagrams that may be in flight.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// Whether the window is in slow start or congestion avoidance.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// 0 for LEDBAT, N for MulTCP emulating N TCP flows.
    pub fn priority(&self) -> u32 {
        self.config.priority
    }

    /// The settings in effect (the priority as last set).
    pub fn config(&self) -> &CongestionConfig {
        &self.config
    }

    /// Switches between LEDBAT and MulTCP on a live flow (DTL runtime priority). The window
    /// carries over so the flow is not disrupted; above `MAX_PRIORITY` it is clamped.
    pub fn set_priority(&mut self, priority: u32) {
        self.config.priority = priority.min(MAX_PRIORITY);
        // The loss-based controller starts from where the delay-based one was, not from a
        // fresh slow start.
        if self.phase == Phase::Avoidance {
            self.ssthresh = self.cwnd;
        }
    }

    /// Records a one-way-delay sample (from an ACK) taken at `now`.
    pub fn on_delay_sample(&mut self, now: Time, owd_us: i64, rtt: Duration) {
        self.base.update(now, owd_us);
        self.current.update(now, owd_us, rtt);
        if let (Some(d), Some(base)) = (self.config.random_loss_delay, self.base.get()) {
            let queue = owd_us.saturating_sub(base);
            if queue >= i64::try_from(d.as_micros()).unwrap_or(i64::MAX) {
                self.queue_seen_at = Some(now);
            }
        }
    }

    /// Estimated queuing delay (current minus base), once samples exist.
    pub fn queuing_delay(&self) -> Option<Duration> {
        let q = self.current.get()?.saturating_sub(self.base.get()?);
        Some(Duration::from_micros(q.max(0) as u64))
    }

    /// A datagram went out, leaving `in_flight` outstanding.
    pub fn on_sent(&mut self, now: Time, in_flight: u32, rtt: Duration) {
        if now.saturating_since(self.flight_epoch) > rtt {
            self.flight_prev = self.flight_max;
            self.flight_max = 0;
            self.flight_epoch = now;
        }
        self.flight_max = self.flight_max.max(in_flight);
    }

    /// `acked` datagrams were newly acknowledged at `now` while `in_flight` were
    /// outstanding (before this acknowledgement); `rtt` is the smoothed round trip;
    /// `flows` counts the engine's LEDBAT channels in congestion avoidance with data in
    /// flight, this one included, which share the increase (unless not `coupled`).
    pub fn on_ack(&mut self, now: Time, acked: u32, in_flight: u32, rtt: Duration, flows: u32) {
        if acked == 0 {
            return;
        }
        let flows = if self.config.coupled { flows.max(1) } else { 1 };
        let acked = f64::from(acked);
        let queuing = self.queuing_delay();
        let over_target = queuing.is_some_and(|q| q > self.config.target);
        if self.phase == Phase::SlowStart {
            if self.config.priority == 0 && over_target {
                // The queue has started to build: slow start has found the base delay.
                self.phase = Phase::Avoidance;
                self.ssthresh = self.cwnd;
            } else {
                self.cwnd += acked;
                if self.cwnd >= self.ssthresh {
                    self.phase = Phase::Avoidance;
                }
            }
        } else if self.config.priority > 0 {
            self.cwnd += f64::from(self.config.priority) * acked / self.cwnd;
        } else if let Some(q) = queuing {
            let target = self.config.target.as_secs_f64();
            let off_target = (target - q.as_secs_f64()) / target;
            if off_target < 0.0 && self.config.beta < 1.0 {
                // DTL's decrease is per datagram acknowledged over target. Bounded here to
                // half the window per round trip (as LEDBAT++ bounds its decrease): after a
                // slow-start overshoot a whole large window comes back over target, and
                // β^window (0.99^500 ≈ 0.007) would take it to the minimum, from where the
                // additive increase needs minutes on a long path.
                if self
                    .decrease_epoch
                    .is_none_or(|t| now.saturating_since(t) >= rtt)
                {
                    self.decrease_epoch = Some(now);
                    self.decrease_floor = self.cwnd / 2.0;
                }
                self.cwnd = (self.cwnd * self.config.beta.powf(acked)).max(self.decrease_floor);
            } else {
                let gain = self.config.gain / f64::from(flows);
                self.cwnd += gain * off_target * acked / self.cwnd;
            }
        }
        // RFC 6817: never grow past what the sender actually uses.
        let used = f64::from(in_flight.max(self.flight_max).max(self.flight_prev));
        // Slow start doubles a used window per round trip; avoidance adds at most
        // ALLOWED_INCREASE beyond it (RFC 6817).
        let cap = match self.phase {
            Phase::SlowStart => 2.0 * used + self.config.allowed_increase,
            Phase::Avoidance => used + self.config.allowed_increase,
        };
        self.cwnd = self
            .cwnd
            .min(cap.max(self.config.min_cwnd))
            .clamp(self.config.min_cwnd, self.config.max_cwnd);
    }

    /// A datagram sent at `sent` was detected lost at `now` (timeout-based detection with
    /// data still being acknowledged). At most one decrease per `rtt`, and for LEDBAT one
    /// per flight: a datagram sent before the last decrease was in flight when it was
    /// made, so its loss is the same event (RFC 5681's one reduction per window). Without
    /// that, a receiver that stalls for longer than the timeout (a browser page's long
    /// task) has its window's datagrams time out one round trip's worth after another,
    /// and the round trip measured before the stall is far shorter than the stall: the
    /// window was cut once per short round trip until it hit the minimum. MulTCP keeps
    /// one decrease per round trip, the pace its 1/(2N) was set against: once per flight
    /// it took TCP's share on a shared buffer (docs/EXPERIMENTS.md, `priority`).
    pub fn on_loss(&mut self, now: Time, sent: Time, rtt: Duration) {
        let ledbat = self.config.priority == 0;
        if self
            .last_decrease
            .is_some_and(|t| (ledbat && sent <= t) || now.saturating_since(t) < rtt)
        {
            return;
        }
        self.last_decrease = Some(now);
        // Random only if no sample of the last round trip showed a queue: a competing flow
        // that fills the buffer shows in some of them even while the MIN filter is low.
        let random = self.config.random_loss_delay.is_some()
            && self.base.get().is_some()
            && self
                .queue_seen_at
                .is_none_or(|t| now.saturating_since(t) > rtt);
        let factor = match self.config.priority {
            0 if random => 1.0 - self.config.random_loss_decrease,
            0 => 0.5,
            n => 1.0 - 1.0 / (2.0 * f64::from(n)),
        };
        self.cwnd = (self.cwnd * factor).max(self.config.min_cwnd);
        self.ssthresh = self.cwnd;
        self.phase = Phase::Avoidance;
    }

    /// Nothing was acknowledged for a whole retransmission timeout: the path may have
    /// changed completely, so start over from one datagram (RFC 6817 §2.4.2).
    pub fn on_timeout(&mut self, now: Time) {
        self.ssthresh = (self.cwnd / 2.0).max(self.config.min_cwnd);
        self.cwnd = 1.0;
        self.phase = Phase::SlowStart;
        self.last_decrease = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTT: Duration = Duration::from_millis(50);

    fn controller(priority: u32) -> Controller {
        Controller::new(CongestionConfig {
            priority,
            ..CongestionConfig::default()
        })
        .unwrap()
    }

    /// A loss found at `t` of a datagram sent at `t`: after every earlier decrease, so
    /// only the once-per-round-trip rule can hold it back.
    fn loss_of_a_fresh_datagram(c: &mut Controller, t: Time) {
        c.on_loss(t, t, RTT);
    }

    /// Feeds `n` acknowledgements, each with a delay sample `base + queue`.
    fn ack_with_queue(c: &mut Controller, now: &mut Time, n: u32, queue_ms: i64) {
        for _ in 0..n {
            *now += Duration::from_millis(1);
            c.on_delay_sample(*now, 40_000 + queue_ms * 1000, RTT);
            let in_flight = c.cwnd() as u32 + 1;
            c.on_ack(*now, 1, in_flight, RTT, 1);
        }
    }

    #[test]
    fn config_limits_follow_the_rfc() {
        let ok = CongestionConfig::default();
        assert!(ok.validate().is_ok());
        for bad in [
            CongestionConfig {
                target: Duration::from_millis(101),
                ..ok.clone()
            },
            CongestionConfig {
                target: Duration::ZERO,
                ..ok.clone()
            },
            CongestionConfig {
                gain: 1.5,
                ..ok.clone()
            },
            CongestionConfig {
                gain: f64::NAN,
                ..ok.clone()
            },
            CongestionConfig {
                beta: 0.0,
                ..ok.clone()
            },
            CongestionConfig {
                min_cwnd: 0.5,
                ..ok.clone()
            },
            CongestionConfig {
                max_cwnd: f64::INFINITY,
                ..ok.clone()
            },
            CongestionConfig {
                base_history: 0,
                ..ok.clone()
            },
            CongestionConfig {
                priority: 17,
                ..ok.clone()
            },
        ] {
            assert!(Controller::new(bad.clone()).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn slow_start_grows_until_the_queue_passes_target() {
        let mut c = controller(0);
        let mut now = Time::ZERO;
        assert_eq!(c.phase(), Phase::SlowStart);
        ack_with_queue(&mut c, &mut now, 1, 0);
        ack_with_queue(&mut c, &mut now, 20, 1);
        assert_eq!(c.phase(), Phase::SlowStart);
        assert!(c.cwnd() > 20.0, "cwnd {}", c.cwnd());
        // The MIN filter reacts once the queue has lasted a whole round trip.
        ack_with_queue(&mut c, &mut now, 60, 30);
        assert_eq!(c.phase(), Phase::Avoidance);
    }

    #[test]
    fn ledbat_grows_below_target_and_shrinks_above() {
        let mut c = controller(0);
        let mut now = Time::ZERO;
        ack_with_queue(&mut c, &mut now, 1, 0);
        ack_with_queue(&mut c, &mut now, 80, 30); // leave slow start
        assert_eq!(c.phase(), Phase::Avoidance);
        let w = c.cwnd();
        ack_with_queue(&mut c, &mut now, 30, 5);
        let grown = c.cwnd();
        assert!(grown > w, "{grown} <= {w}");
        ack_with_queue(&mut c, &mut now, 100, 60);
        let shrunk = c.cwnd();
        // Multiplicative: some 50 acks over target at beta 0.99 cut about 40 %.
        assert!(shrunk < grown * 0.8, "{shrunk} vs {grown}");
    }

    #[test]
    fn coupled_flows_share_one_increase() {
        let in_avoidance = |coupled| {
            let mut c = Controller::new(CongestionConfig {
                coupled,
                ..CongestionConfig::default()
            })
            .unwrap();
            let mut now = Time::ZERO;
            ack_with_queue(&mut c, &mut now, 1, 0);
            ack_with_queue(&mut c, &mut now, 80, 30);
            assert_eq!(c.phase(), Phase::Avoidance);
            (c, now)
        };
        let (mut alone, mut now) = in_avoidance(true);
        let (mut one_of_two, _) = in_avoidance(true);
        let (mut uncoupled, _) = in_avoidance(false);
        let w = alone.cwnd();
        let in_flight = w as u32 + 1;
        for _ in 0..30 {
            now += Duration::from_millis(1);
            // 5 ms of queue: under target, so each grows.
            for c in [&mut alone, &mut one_of_two, &mut uncoupled] {
                c.on_delay_sample(now, 45_000, RTT);
            }
            alone.on_ack(now, 1, in_flight, RTT, 1);
            one_of_two.on_ack(now, 1, in_flight, RTT, 2);
            uncoupled.on_ack(now, 1, in_flight, RTT, 2);
        }
        let grown_alone = alone.cwnd() - w;
        assert!(grown_alone > 0.0);
        let ratio = (one_of_two.cwnd() - w) / grown_alone;
        assert!(
            (0.45..=0.55).contains(&ratio),
            "one of two grew {ratio} of one alone"
        );
        assert_eq!(
            uncoupled.cwnd(),
            alone.cwnd(),
            "uncoupled, the others do not count"
        );
        // Decreases are each flow's own: about the same share of either window.
        let (before, before_alone) = (one_of_two.cwnd(), alone.cwnd());
        // Past a round trip, so the MIN filter holds only the queued samples.
        for _ in 0..80 {
            now += Duration::from_millis(1);
            for c in [&mut alone, &mut one_of_two] {
                c.on_delay_sample(now, 80_000, RTT);
            }
            alone.on_ack(now, 1, in_flight, RTT, 1);
            one_of_two.on_ack(now, 1, in_flight, RTT, 2);
        }
        let (kept, kept_alone) = (one_of_two.cwnd() / before, alone.cwnd() / before_alone);
        assert!(kept < 1.0);
        // (Not to the digit: both grew, by different steps, until the filter saw the queue.)
        assert!((kept - kept_alone).abs() < 0.02, "{kept} vs {kept_alone}");
    }

    #[test]
    fn without_the_dtl_fix_decrease_is_additive_and_smaller() {
        let md = controller(0);
        let ad = Controller::new(CongestionConfig {
            beta: 1.0,
            ..CongestionConfig::default()
        })
        .unwrap();
        let (mut a, mut b) = (md, ad);
        let mut now = Time::ZERO;
        let mut now2 = Time::ZERO;
        for (c, t) in [(&mut a, &mut now), (&mut b, &mut now2)] {
            ack_with_queue(c, t, 1, 0);
            ack_with_queue(c, t, 200, 10);
            ack_with_queue(c, t, 150, 60);
        }
        assert!(a.cwnd() < b.cwnd(), "{} vs {}", a.cwnd(), b.cwnd());
    }

    #[test]
    fn window_never_outgrows_use_or_bounds() {
        let mut c = controller(0);
        let mut now = Time::ZERO;
        for _ in 0..1000 {
            now += Duration::from_millis(1);
            c.on_delay_sample(now, 10_000, RTT);
            c.on_ack(now, 1, 3, RTT, 1); // application-limited: 3 in flight
        }
        // Still in slow start (the queue stays under target): at most twice what is used.
        assert_eq!(c.phase(), Phase::SlowStart);
        assert!(c.cwnd() <= 7.0, "cwnd {}", c.cwnd());
        assert!(c.cwnd() >= 2.0);
    }

    #[test]
    fn a_batch_of_acknowledgements_does_not_pin_a_full_window() {
        let mut c = controller(0);
        let mut now = Time::ZERO;
        c.on_delay_sample(now, 1000, RTT);
        for round in 0..5 {
            // Fill the window, then every acknowledgement arrives at once.
            let window = c.cwnd() as u32;
            for i in 1..=window {
                c.on_sent(now, i, RTT);
            }
            now += RTT;
            for left in (1..=window).rev() {
                c.on_delay_sample(now, 1000, RTT);
                c.on_ack(now, 1, left, RTT, 1);
            }
            assert_eq!(
                c.cwnd() as u32,
                2 * window,
                "round {round}: slow start doubles"
            );
        }
    }

    #[test]
    fn delay_over_target_at_most_halves_the_window_per_round_trip() {
        let mut c = controller(0);
        let mut now = Time::ZERO;
        // Slow start to about 500 datagrams with no queue.
        c.on_delay_sample(now, 40_000, RTT);
        while c.cwnd() < 500.0 {
            let w = c.cwnd() as u32;
            for i in 1..=w {
                c.on_sent(now, i, RTT);
            }
            for left in (1..=w).rev() {
                c.on_delay_sample(now, 40_000, RTT);
                c.on_ack(now, 1, left, RTT, 1);
            }
            now += RTT;
        }
        let w = c.cwnd();
        // One round trip in which every datagram comes back 200 ms over the base delay.
        for i in 0..w as u32 {
            let t = now + Duration::from_micros(u64::from(i) * 10);
            c.on_delay_sample(t, 240_000, RTT);
            c.on_ack(t, 1, w as u32, RTT, 1);
        }
        assert_eq!(c.phase(), Phase::Avoidance);
        assert!(c.cwnd() >= w / 2.0 - 1e-9, "{} from {w}", c.cwnd());
        assert!(
            c.cwnd() < w * 0.6,
            "{} from {w}: still a decrease",
            c.cwnd()
        );
        // Persistently over target it keeps shrinking, by half per round trip while the
        // window is large and by β per datagram (the DTL rule) once that is less.
        let start = c.cwnd();
        for round in 1..=12u32 {
            now += RTT;
            let w = c.cwnd();
            for i in 0..(w as u32).max(1) {
                let t = now + Duration::from_micros(u64::from(i));
                c.on_delay_sample(t, 240_000, RTT);
                c.on_ack(t, 1, w as u32 + 1, RTT, 1);
            }
            assert!(c.cwnd() >= w / 2.0 - 1e-9, "round {round}");
        }
        assert!(c.cwnd() < start / 20.0, "{} after 12 round trips", c.cwnd());
    }

    #[test]
    fn loss_halves_once_per_rtt() {
        let mut c = controller(0);
        let mut now = Time::ZERO;
        ack_with_queue(&mut c, &mut now, 1, 0);
        // A queue below target, but one a full buffer could have dropped from (the
        // current-delay filter keeps a round trip of samples).
        ack_with_queue(&mut c, &mut now, 60, 10);
        let w = c.cwnd();
        loss_of_a_fresh_datagram(&mut c, now);
        assert_eq!(c.cwnd(), w / 2.0);
        loss_of_a_fresh_datagram(&mut c, now + Duration::from_millis(10));
        assert_eq!(c.cwnd(), w / 2.0, "second loss in the same RTT ignored");
        ack_with_queue(&mut c, &mut now, 60, 10);
        let w = c.cwnd();
        loss_of_a_fresh_datagram(&mut c, now);
        assert_eq!(c.cwnd(), w / 2.0);
        c.on_timeout(now + Duration::from_secs(2));
        assert_eq!(c.cwnd(), 1.0);
        assert_eq!(c.phase(), Phase::SlowStart);
    }

    #[test]
    fn one_flight_lost_over_a_long_stall_costs_one_decrease() {
        let mut c = controller(0);
        let mut now = Time::ZERO;
        ack_with_queue(&mut c, &mut now, 1, 0);
        ack_with_queue(&mut c, &mut now, 60, 10);
        let w = c.cwnd();
        // The receiver stalls: the datagrams sent over the last 50 ms time out one after
        // another, each detected a little later than the one before, far apart in round
        // trips of 5 ms.
        let rtt = Duration::from_millis(5);
        let sent_from = now;
        let stalled_at = now + Duration::from_millis(250);
        c.on_loss(stalled_at, sent_from, rtt);
        let once = c.cwnd();
        assert!(once < w);
        for i in 1..50 {
            let ms = Duration::from_millis(i);
            c.on_loss(stalled_at + ms, sent_from + ms, rtt);
        }
        assert_eq!(c.cwnd(), once, "one decrease for the whole flight");
        // A datagram sent after that decrease and lost is a new event.
        let after = stalled_at + Duration::from_millis(100);
        c.on_loss(after, stalled_at + Duration::from_millis(60), rtt);
        assert!(c.cwnd() < once);
    }

    #[test]
    fn a_loss_with_almost_no_queue_is_random_and_costs_a_tenth() {
        let mut c = controller(0);
        let mut now = Time::ZERO;
        ack_with_queue(&mut c, &mut now, 1, 0);
        ack_with_queue(&mut c, &mut now, 40, 1);
        let w = c.cwnd();
        loss_of_a_fresh_datagram(&mut c, now);
        assert!((c.cwnd() - w * 0.9).abs() < 1e-9, "{} from {w}", c.cwnd());
        loss_of_a_fresh_datagram(&mut c, now + Duration::from_millis(10));
        assert!((c.cwnd() - w * 0.9).abs() < 1e-9, "once per round trip");
        // The queue builds (another flow fills the buffer): a loss is congestion again.
        ack_with_queue(&mut c, &mut now, 60, 30);
        let w = c.cwnd();
        loss_of_a_fresh_datagram(&mut c, now);
        assert_eq!(c.cwnd(), w / 2.0);
        // A round trip later with no queue seen since, a loss is random again.
        ack_with_queue(&mut c, &mut now, 60, 1);
        let w = c.cwnd();
        loss_of_a_fresh_datagram(&mut c, now);
        assert!((c.cwnd() - w * 0.9).abs() < 1e-9);
        // Turned off, every loss halves (RFC 6817).
        let mut rfc = Controller::new(CongestionConfig {
            random_loss_delay: None,
            ..CongestionConfig::default()
        })
        .unwrap();
        let mut now = Time::ZERO;
        ack_with_queue(&mut rfc, &mut now, 1, 0);
        ack_with_queue(&mut rfc, &mut now, 40, 1);
        let w = rfc.cwnd();
        loss_of_a_fresh_datagram(&mut rfc, now);
        assert_eq!(rfc.cwnd(), w / 2.0);
        // Extreme delay samples from a peer: no overflow, and a queue is a queue.
        let mut c = controller(0);
        c.on_delay_sample(Time::ZERO, i64::MIN, RTT);
        c.on_delay_sample(Time::from_millis(1), i64::MAX, RTT);
        let w = c.cwnd();
        loss_of_a_fresh_datagram(&mut c, Time::from_millis(2));
        assert_eq!(c.cwnd(), (w / 2.0).max(2.0));
        // Bad settings are refused.
        for bad in [
            CongestionConfig {
                random_loss_delay: Some(Duration::from_millis(25)),
                ..CongestionConfig::default()
            },
            CongestionConfig {
                random_loss_decrease: 0.6,
                ..CongestionConfig::default()
            },
        ] {
            assert!(bad.validate().is_err());
        }
    }

    #[test]
    fn multcp_grows_n_times_faster_and_backs_off_less() {
        let mut one = controller(1);
        let mut two = controller(2);
        for c in [&mut one, &mut two] {
            loss_of_a_fresh_datagram(c, Time::ZERO); // leave slow start at the same window
        }
        let start = one.cwnd();
        // Ten round trips, each acknowledging a whole window.
        for _ in 0..10 {
            for c in [&mut one, &mut two] {
                let window = c.cwnd() as u32;
                for _ in 0..window {
                    // A window-limited sender: everything the window allows is in flight.
                    let in_flight = c.cwnd() as u32;
                    c.on_ack(Time::ZERO, 1, in_flight, RTT, 1);
                }
            }
        }
        let g1 = one.cwnd() - start;
        let g2 = two.cwnd() - start;
        // About one datagram per round trip per emulated flow (less the whole-datagram
        // rounding of small windows).
        assert!((6.0..=10.0).contains(&g1), "one flow grew {g1} in 10 RTTs");
        assert!(
            (1.7..=2.3).contains(&(g2 / g1)),
            "two flows grew {g2}, one {g1}"
        );
        let (w1, w2) = (one.cwnd(), two.cwnd());
        loss_of_a_fresh_datagram(&mut one, Time::from_millis(1000));
        loss_of_a_fresh_datagram(&mut two, Time::from_millis(1000));
        assert!((one.cwnd() - w1 * 0.5).abs() < 1e-9);
        assert!((two.cwnd() - w2 * 0.75).abs() < 1e-9);
    }

    #[test]
    fn priority_changes_keep_the_window() {
        let mut c = controller(0);
        let mut now = Time::ZERO;
        ack_with_queue(&mut c, &mut now, 1, 0);
        ack_with_queue(&mut c, &mut now, 80, 40);
        assert_eq!(c.phase(), Phase::Avoidance);
        let w = c.cwnd();
        c.set_priority(2);
        assert_eq!(c.priority(), 2);
        assert_eq!(c.cwnd(), w);
        // Now loss-based: delay over target no longer shrinks the window.
        ack_with_queue(&mut c, &mut now, 30, 80);
        assert!(c.cwnd() > w);
        c.set_priority(99);
        assert_eq!(c.priority(), MAX_PRIORITY);
    }
}
