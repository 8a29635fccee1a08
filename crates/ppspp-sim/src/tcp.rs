//! A TCP-like bulk flow (Reno: slow start, +1 MSS per RTT, halve on three duplicate ACKs,
//! RTO with back-off and go-back-N), counted in whole segments, optionally fed by an
//! application at a capped rate (a P2P client's upload limit). It exists to compete with
//! LEDBAT on the same simulated links.

use ppspp::time::Time;
use std::collections::BTreeSet;

/// Bytes of a full data segment on the wire (1460 payload + 40 header).
pub const SEGMENT_BYTES: usize = 1500;
/// Bytes of a pure ACK on the wire.
pub const ACK_BYTES: usize = 40;

/// What a TCP packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpSeg {
    Data {
        seq: u64,
    },
    /// Cumulative: every segment below `next` arrived.
    Ack {
        next: u64,
    },
}

const MIN_RTO_US: u64 = 200_000;
const MAX_RTO_US: u64 = 60_000_000;

/// The sending side of a bulk transfer that runs from `start` to `stop`.
#[derive(Clone, Debug)]
pub struct TcpSender {
    pub peer: u32,
    pub start: Time,
    pub stop: Time,
    pub cwnd: f64,
    ssthresh: f64,
    next_seq: u64,
    snd_una: u64,
    dupacks: u32,
    recover: Option<u64>,
    srtt_us: Option<f64>,
    rttvar_us: f64,
    rto_us: u64,
    rto_deadline: Option<Time>,
    /// (seq, sent at) of the one segment being timed (Karn: never a retransmission).
    timing: Option<(u64, Time)>,
    highest_sent: u64,
    out: Vec<TcpSeg>,
    /// Segments acknowledged (goodput counter).
    pub acked: u64,
    pub retransmits: u64,
    /// The application hands over new segments at most at this rate (segments per µs).
    rate_limit: Option<f64>,
    /// New segments the application has handed over and TCP has not sent yet (at most 1).
    tokens: f64,
    refilled: Time,
    /// When the next new segment will be handed over, while the rate limit holds it back.
    app_wait: Option<Time>,
}

impl TcpSender {
    pub fn new(peer: u32, start: Time, stop: Time) -> TcpSender {
        TcpSender {
            peer,
            start,
            stop,
            cwnd: 2.0,
            ssthresh: f64::INFINITY,
            next_seq: 0,
            snd_una: 0,
            dupacks: 0,
            recover: None,
            srtt_us: None,
            rttvar_us: 0.0,
            rto_us: 1_000_000,
            rto_deadline: None,
            timing: None,
            highest_sent: 0,
            out: Vec::new(),
            acked: 0,
            retransmits: 0,
            rate_limit: None,
            tokens: 1.0,
            refilled: start,
            app_wait: None,
        }
    }

    /// The application writes new data at most at `bit_rate` bit/s of segments on the
    /// wire (retransmissions are TCP's own and not limited).
    pub fn with_rate_limit(mut self, bit_rate: u64) -> TcpSender {
        self.rate_limit = Some(bit_rate as f64 / (SEGMENT_BYTES as f64 * 8.0) / 1e6);
        self
    }

    /// Whether the application has a new segment ready at `now`; takes it if so.
    fn take_new_segment(&mut self, now: Time) -> bool {
        let Some(rate) = self.rate_limit else {
            return true;
        };
        let elapsed = now.saturating_since(self.refilled).as_micros() as f64;
        self.tokens = (self.tokens + elapsed * rate).min(1.0);
        self.refilled = now;
        if self.tokens >= 1.0 - 1e-9 {
            self.tokens -= 1.0;
            self.app_wait = None;
            return true;
        }
        let wait = ((1.0 - self.tokens) / rate).ceil() as u64;
        self.app_wait = Some(Time::from_micros(now.as_micros() + wait.max(1)));
        false
    }

    fn active(&self, now: Time) -> bool {
        now >= self.start && now < self.stop
    }

    fn in_flight(&self) -> u64 {
        self.next_seq - self.snd_una
    }

    fn send_new(&mut self, now: Time) {
        if !self.active(now) {
            return;
        }
        while (self.in_flight() as f64) < self.cwnd.floor().max(1.0) {
            let seq = self.next_seq;
            if seq >= self.highest_sent && !self.take_new_segment(now) {
                break;
            }
            self.next_seq += 1;
            if seq >= self.highest_sent {
                self.highest_sent = seq + 1;
                if self.timing.is_none() {
                    self.timing = Some((seq, now));
                }
            } else {
                self.retransmits += 1;
            }
            self.out.push(TcpSeg::Data { seq });
            if self.rto_deadline.is_none() {
                self.rto_deadline = Some(Time::from_micros(now.as_micros() + self.rto_us));
            }
        }
    }

    pub fn handle_ack(&mut self, now: Time, next: u64) {
        if next > self.snd_una {
            let newly = next - self.snd_una;
            self.snd_una = next;
            self.next_seq = self.next_seq.max(next);
            self.acked += newly;
            self.dupacks = 0;
            if let Some((seq, sent)) = self.timing
                && next > seq
            {
                self.rtt_sample(now.saturating_since(sent).as_micros() as f64);
                self.timing = None;
            }
            match self.recover {
                Some(r) if next <= r => {
                    // Partial ACK (NewReno): resend the next hole, stay in recovery.
                    self.out.push(TcpSeg::Data { seq: next });
                    self.retransmits += 1;
                }
                Some(_) => {
                    self.recover = None;
                    self.cwnd = self.ssthresh;
                }
                None if self.cwnd < self.ssthresh => self.cwnd += newly as f64,
                None => self.cwnd += newly as f64 / self.cwnd,
            }
            self.rto_deadline =
                (self.in_flight() > 0).then(|| Time::from_micros(now.as_micros() + self.rto_us));
        } else if next == self.snd_una && self.in_flight() > 0 {
            self.dupacks += 1;
            if self.dupacks == 3 && self.recover.is_none() {
                self.ssthresh = (self.in_flight() as f64 / 2.0).max(2.0);
                self.cwnd = self.ssthresh;
                self.recover = Some(self.next_seq - 1);
                self.out.push(TcpSeg::Data { seq: self.snd_una });
                self.retransmits += 1;
                self.timing = None;
            }
        }
        self.send_new(now);
    }

    fn rtt_sample(&mut self, r: f64) {
        match self.srtt_us {
            None => {
                self.srtt_us = Some(r);
                self.rttvar_us = r / 2.0;
            }
            Some(s) => {
                self.rttvar_us = 0.75 * self.rttvar_us + 0.25 * (s - r).abs();
                self.srtt_us = Some(0.875 * s + 0.125 * r);
            }
        }
        let rto = self.srtt_us.unwrap_or(r) + 4.0 * self.rttvar_us;
        self.rto_us = (rto as u64).clamp(MIN_RTO_US, MAX_RTO_US);
    }

    pub fn srtt_us(&self) -> Option<f64> {
        self.srtt_us
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        let mut t = self.rto_deadline;
        if t.is_none() && self.next_seq == 0 {
            t = Some(self.start);
        }
        match (t, self.app_wait) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn handle_timeout(&mut self, now: Time) {
        if let Some(d) = self.rto_deadline
            && d <= now
        {
            if now >= self.stop {
                self.rto_deadline = None;
                return;
            }
            // Retransmission timeout: back to one segment, go back N.
            self.ssthresh = (self.in_flight() as f64 / 2.0).max(2.0);
            self.cwnd = 1.0;
            self.next_seq = self.snd_una;
            self.recover = None;
            self.dupacks = 0;
            self.timing = None;
            self.rto_us = (self.rto_us * 2).min(MAX_RTO_US);
            self.rto_deadline = None;
        }
        self.send_new(now);
    }

    pub fn poll_transmit(&mut self) -> Option<TcpSeg> {
        if self.out.is_empty() {
            None
        } else {
            Some(self.out.remove(0))
        }
    }
}

/// The receiving side: cumulative ACK for every segment.
#[derive(Clone, Debug, Default)]
pub struct TcpReceiver {
    expected: u64,
    out_of_order: BTreeSet<u64>,
    /// Distinct segments received in order.
    pub received: u64,
}

impl TcpReceiver {
    /// Takes a data segment and returns the ACK to send.
    pub fn handle_data(&mut self, seq: u64) -> TcpSeg {
        if seq == self.expected {
            self.expected += 1;
            while self.out_of_order.remove(&self.expected) {
                self.expected += 1;
            }
        } else if seq > self.expected {
            self.out_of_order.insert(seq);
        }
        self.received = self.expected;
        TcpSeg::Ack {
            next: self.expected,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_then_halving_on_three_dupacks() {
        let mut s = TcpSender::new(1, Time::ZERO, Time::from_millis(1_000_000));
        s.handle_timeout(Time::ZERO);
        let first: Vec<_> = std::iter::from_fn(|| s.poll_transmit()).collect();
        assert_eq!(first.len(), 2);
        s.handle_ack(Time::from_millis(100), 2);
        assert_eq!(s.cwnd, 4.0);
        let sent: Vec<_> = std::iter::from_fn(|| s.poll_transmit()).collect();
        assert_eq!(sent.len(), 4);
        for _ in 0..3 {
            s.handle_ack(Time::from_millis(200), 2);
        }
        assert_eq!(s.cwnd, 2.0);
        assert_eq!(s.poll_transmit(), Some(TcpSeg::Data { seq: 2 }));
    }

    #[test]
    fn a_rate_limited_application_hands_over_segments_at_its_rate() {
        // 120 kbit/s of 1500-byte segments: one every 100 ms, however large the window.
        let mut s =
            TcpSender::new(1, Time::ZERO, Time::from_millis(1_000_000)).with_rate_limit(120_000);
        s.cwnd = 50.0;
        s.handle_timeout(Time::ZERO);
        assert_eq!(std::iter::from_fn(|| s.poll_transmit()).count(), 1);
        assert_eq!(s.poll_timeout(), Some(Time::from_millis(100)));
        s.handle_timeout(Time::from_millis(100));
        assert_eq!(s.poll_transmit(), Some(TcpSeg::Data { seq: 1 }));
        assert_eq!(s.poll_transmit(), None);
        // Acknowledged segments do not let more through before their time.
        s.handle_ack(Time::from_millis(150), 2);
        assert_eq!(s.poll_transmit(), None);
        s.handle_timeout(Time::from_millis(1_000));
        // The bucket holds one segment at most: a long idle time is no burst.
        assert_eq!(std::iter::from_fn(|| s.poll_transmit()).count(), 1);
    }

    #[test]
    fn receiver_acks_cumulatively() {
        let mut r = TcpReceiver::default();
        assert_eq!(r.handle_data(0), TcpSeg::Ack { next: 1 });
        assert_eq!(r.handle_data(2), TcpSeg::Ack { next: 1 });
        assert_eq!(r.handle_data(1), TcpSeg::Ack { next: 3 });
    }
}
