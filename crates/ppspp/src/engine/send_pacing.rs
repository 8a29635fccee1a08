//! How fast DATA goes to one peer: the congestion controller, the round-trip estimate,
//! and when the next DATA may leave.
//!
//! Until a DATA is first acknowledged the channel plays ping-pong, one datagram in flight;
//! after that the controller's window, spread over one round trip, sets the pace.

use super::event::SendState;
use crate::congestion::rtt::RttEstimator;
use crate::congestion::{CongestionConfig, Controller, Phase};
use crate::time::Time;
use core::time::Duration;

#[derive(Debug)]
pub(crate) struct SendPacing {
    cc: Controller,
    rtt: RttEstimator,
    /// A DATA was acknowledged at least once (ping-pong is over).
    acked_data: bool,
    last_ack: Option<Time>,
    /// When the next DATA may leave.
    next_data: Time,
}

impl SendPacing {
    pub(crate) fn new(congestion: &CongestionConfig, now: Time) -> SendPacing {
        SendPacing {
            // The configuration was validated when the engine was built.
            cc: Controller::new(congestion.clone()).unwrap_or_else(|_| {
                Controller::new(CongestionConfig::default()).expect("default config is valid")
            }),
            rtt: RttEstimator::default(),
            acked_data: false,
            last_ack: None,
            next_data: now,
        }
    }

    /// The round-trip estimate (loss deadlines are reckoned from it).
    #[inline]
    pub(crate) fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    #[inline]
    pub(crate) fn srtt(&self) -> Duration {
        self.rtt.srtt()
    }

    #[inline]
    pub(crate) fn min_rtt(&self) -> Option<Duration> {
        self.rtt.min_rtt()
    }

    /// A measured round trip (Karn's rule is the caller's: it knows what was resent).
    #[inline]
    pub(crate) fn rtt_sample(&mut self, sample: Duration) {
        self.rtt.on_sample(sample);
    }

    #[inline]
    pub(crate) fn cwnd(&self) -> f64 {
        self.cc.cwnd()
    }

    #[inline]
    pub(crate) fn queuing_delay(&self) -> Option<Duration> {
        self.cc.queuing_delay()
    }

    /// The congestion-control priority (0 = LEDBAT, N = N TCPs).
    #[inline]
    pub(crate) fn priority(&self) -> u32 {
        self.cc.priority()
    }

    #[inline]
    pub(crate) fn set_priority(&mut self, priority: u32) {
        self.cc.set_priority(priority);
    }

    /// LEDBAT in congestion avoidance: a flow that shares the additive increase.
    pub(crate) fn ledbat_avoiding(&self) -> bool {
        self.cc.priority() == 0 && self.cc.phase() == Phase::Avoidance
    }

    /// An ACK's window increase is shared with the engine's other LEDBAT flows.
    pub(crate) fn shares_increase(&self) -> bool {
        self.cc.config().coupled && self.ledbat_avoiding()
    }

    /// Datagrams with DATA that may be unacknowledged at once.
    pub(crate) fn window(&self) -> usize {
        if self.acked_data {
            (self.cc.cwnd() as usize).max(1)
        } else {
            1
        }
    }

    /// When the next DATA may leave.
    #[inline]
    pub(crate) fn next_data(&self) -> Time {
        self.next_data
    }

    /// Whether the channel plays ping-pong or sends a window, and in which phase (a channel
    /// with nothing to send is the caller's to tell).
    pub(crate) fn state(&self) -> SendState {
        if !self.acked_data {
            SendState::PingPong
        } else {
            SendState::Window(self.cc.phase())
        }
    }

    /// Pacing interval between DATA datagrams: one round trip spread over the window.
    /// (The round trip must stay current for this: see the retransmission samples in
    /// `on_ack`.)
    fn send_interval(&self) -> Duration {
        if !self.acked_data {
            return Duration::ZERO;
        }
        self.rtt.srtt().div_f64(self.cc.cwnd().max(1.0))
    }

    /// A DATA went out at `now`, leaving `in_flight` unacknowledged: the next one waits
    /// a pacing interval.
    pub(crate) fn data_sent(&mut self, now: Time, in_flight: u32, slack: Duration) {
        self.cc.on_sent(now, in_flight, self.rtt.srtt());
        // Pace from the schedule, not from now, so a burst of at most `slack` is the only
        // deviation from one window per round trip.
        self.next_data = self.next_data.max(now - slack) + self.send_interval();
    }

    /// An ACK carried a one-way delay of `delay_us`.
    pub(crate) fn delay_sample(&mut self, now: Time, delay_us: i64) {
        self.cc.on_delay_sample(now, delay_us, self.rtt.srtt());
    }

    /// `count` DATA were acknowledged at `now`, with `in_flight` unacknowledged before,
    /// the window's increase shared by `flows`: ping-pong is over.
    pub(crate) fn acked(&mut self, now: Time, count: u32, in_flight: u32, flows: u32) {
        self.cc
            .on_ack(now, count, in_flight, self.rtt.srtt(), flows);
        self.acked_data = true;
        self.last_ack = Some(now);
    }

    /// DATA was taken for lost at `now`, the newest of it sent at `last_sent`. With no ACK
    /// for a retransmission timeout the path went silent: the window collapses and the
    /// timeout backs off. Otherwise it is one loss.
    pub(crate) fn data_lost(&mut self, now: Time, last_sent: Time) {
        let rto = self.rtt.timeout();
        let silent = self.last_ack.is_none_or(|t| now.saturating_since(t) >= rto);
        if silent {
            self.cc.on_timeout(now);
            self.rtt.on_timeout();
        } else {
            self.cc.on_loss(now, last_sent, self.rtt.srtt());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Time {
        Time::ZERO + Duration::from_millis(ms)
    }

    fn pacing() -> SendPacing {
        SendPacing::new(&CongestionConfig::default(), at(0))
    }

    #[test]
    fn ping_pong_until_the_first_ack() {
        let mut p = pacing();
        assert_eq!(p.window(), 1);
        assert!(matches!(p.state(), SendState::PingPong));
        p.data_sent(at(0), 1, Duration::ZERO);
        assert_eq!(p.next_data(), at(0), "no pacing in ping-pong");
        p.acked(at(100), 1, 1, 1);
        assert!(matches!(p.state(), SendState::Window(_)));
        assert_eq!(p.window(), (p.cwnd() as usize).max(1));
    }

    #[test]
    fn pacing_spreads_a_round_trip_over_the_window() {
        let mut p = pacing();
        p.rtt_sample(Duration::from_millis(100));
        p.acked(at(100), 1, 1, 1);
        let interval = p.srtt().div_f64(p.cwnd().max(1.0));
        let before = p.next_data();
        p.data_sent(at(100), 1, Duration::ZERO);
        let after_first = p.next_data();
        assert!(after_first >= before);
        // Sent on schedule: the next slot follows the last, not `now`.
        p.data_sent(at(100), 2, Duration::from_millis(50));
        assert!(interval > Duration::ZERO);
        assert!(p.next_data() > after_first);
    }

    #[test]
    fn a_loss_long_after_the_last_ack_is_a_timeout() {
        let mut p = pacing();
        p.rtt_sample(Duration::from_millis(100));
        let rto = p.rtt().timeout();
        p.acked(at(0), 1, 1, 1);
        p.data_lost(at(0) + rto, at(0));
        assert!(p.rtt().timeout() > rto, "the timeout backs off");
    }

    #[test]
    fn a_loss_soon_after_an_ack_keeps_the_timeout() {
        let mut p = pacing();
        p.rtt_sample(Duration::from_millis(100));
        let rto = p.rtt().timeout();
        p.acked(at(0), 1, 1, 1);
        p.data_lost(at(10), at(5));
        assert_eq!(p.rtt().timeout(), rto);
    }

    #[test]
    fn priority_decides_who_shares_the_increase() {
        let mut p = pacing();
        assert_eq!(p.priority(), 0);
        p.set_priority(2);
        assert_eq!(p.priority(), 2);
        assert!(!p.ledbat_avoiding() && !p.shares_increase());
    }
}
