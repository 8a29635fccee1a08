//! The DATA sent to a peer and not yet acknowledged nor taken for lost, in the order it
//! was sent, and when it is lost.
//!
//! A chunk is on its way while it is in the queue; a binmap of those chunks lets a
//! REQUEST skip them by a search whose cost follows the ranges asked, not the chunks in
//! them.

use crate::Bin;
use crate::binmap::Binmap;
use crate::congestion::rtt::RttEstimator;
use crate::time::Time;
use core::time::Duration;
use std::collections::VecDeque;

/// One DATA datagram waiting for its acknowledgement.
#[derive(Clone, Debug)]
struct Sent {
    chunk: u64,
    at: Time,
    /// Karn's rule: an acknowledgement of a retransmission may be for the first copy.
    retransmission: bool,
}

/// What an ACK took off the DATA in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Acked {
    /// Datagrams acknowledged.
    pub count: u32,
    /// The round trip of the last of them that may time one (Karn's rule).
    pub rtt_sample: Option<Duration>,
}

/// What loss detection took off the DATA in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Lost {
    /// Datagrams taken for lost.
    pub count: u32,
    /// When the newest of them was sent (the congestion controller reacts once per
    /// window: to losses of DATA sent after its last reaction).
    pub last_sent: Time,
}

#[derive(Debug)]
pub(crate) struct DataInFlight {
    /// In the order sent: the front is the oldest, the first to be lost.
    queue: VecDeque<Sent>,
    /// The chunks of `queue`.
    chunks: Binmap,
    /// Send time of the newest DATA acknowledged (RACK's, RFC 8985): DATA sent before it
    /// and unacknowledged is overdue once a round trip and a reordering window have passed.
    newest_acked_sent: Option<Time>,
    /// When DATA was last taken for lost.
    last_loss: Option<Time>,
}

impl DataInFlight {
    pub(crate) fn new() -> DataInFlight {
        DataInFlight {
            queue: VecDeque::new(),
            chunks: Binmap::new(),
            newest_acked_sent: None,
            last_loss: None,
        }
    }

    /// Datagrams with DATA unacknowledged: what the congestion window bounds.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The chunks on their way, for binmap searches.
    #[inline]
    pub(crate) fn chunks(&self) -> &Binmap {
        &self.chunks
    }

    /// Whether a chunk of `range` is on its way.
    #[inline]
    pub(crate) fn any_of(&self, range: Bin) -> bool {
        !self.chunks.is_empty(range)
    }

    /// `chunk` went out at `now`.
    #[inline]
    pub(crate) fn record(&mut self, chunk: u64, now: Time, retransmission: bool) {
        self.queue.push_back(Sent {
            chunk,
            at: now,
            retransmission,
        });
        self.chunks.set_chunk(chunk);
    }

    /// The peer acknowledged chunks `first..=last` at `now`: they leave the queue.
    ///
    /// Karn's rule skips acknowledgements of retransmissions, since they may be for the
    /// first copy. We retransmit only after a round trip and more, so an acknowledgement
    /// arriving at least one minimum round trip (`min_rtt`) after the retransmission is
    /// hardly ever for the first copy: taking those keeps the RTT (and with it pacing)
    /// current through a backlog of retransmissions, where skipping them all froze it.
    #[inline]
    pub(crate) fn acknowledge(
        &mut self,
        first: u64,
        last: u64,
        now: Time,
        min_rtt: Option<Duration>,
    ) -> Acked {
        let mut acked = Acked {
            count: 0,
            rtt_sample: None,
        };
        let chunks = &mut self.chunks;
        let mut newest_sent = self.newest_acked_sent;
        let mut take = |f: &Sent| {
            chunks.reset_chunk(f.chunk);
            acked.count += 1;
            let elapsed = now.saturating_since(f.at);
            if !f.retransmission || min_rtt.is_some_and(|m| elapsed >= m) {
                acked.rtt_sample = Some(elapsed);
                newest_sent = newest_sent.max(Some(f.at));
            }
        };
        if first == last {
            // The usual ACK names one chunk, near the front of the send-ordered queue: no
            // need to walk the whole window.
            if let Some(i) = self.queue.iter().position(|f| f.chunk == first)
                && let Some(f) = self.queue.remove(i)
            {
                take(&f);
            }
        } else {
            self.queue.retain(|f| {
                if f.chunk < first || f.chunk > last {
                    return true;
                }
                take(f);
                false
            });
        }
        self.newest_acked_sent = newest_sent;
        acked
    }

    /// When the oldest DATA in flight counts as lost: a retransmission timeout after it was
    /// sent or, once DATA sent after it was acknowledged, a round trip and a reordering
    /// window (a quarter round trip, at least the timer granularity) after it was sent.
    /// The timeout alone (libswift's, with its 50 ms deviation floor) left a receiver's
    /// dropped datagrams in flight for far longer than the path's round trip, the window
    /// full of them and the sender idle.
    #[inline]
    pub(crate) fn loss_deadline(&self, rtt: &RttEstimator, granularity: Duration) -> Option<Time> {
        let oldest = self.queue.front()?.at;
        let timeout = oldest + rtt.timeout();
        if self.newest_acked_sent.is_none_or(|t| oldest >= t) {
            return Some(timeout);
        }
        let srtt = rtt.srtt();
        Some(timeout.min(oldest + srtt + (srtt / 4).max(granularity)))
    }

    /// Takes the DATA past its loss deadline at `now` for lost, oldest first, handing each
    /// chunk to `lost` (to be sent again).
    #[inline]
    pub(crate) fn take_lost(
        &mut self,
        now: Time,
        rtt: &RttEstimator,
        granularity: Duration,
        mut lost: impl FnMut(u64),
    ) -> Lost {
        let mut taken = Lost {
            count: 0,
            last_sent: Time::ZERO,
        };
        while self
            .loss_deadline(rtt, granularity)
            .is_some_and(|t| t <= now)
        {
            if let Some(f) = self.queue.pop_front() {
                taken.count += 1;
                taken.last_sent = taken.last_sent.max(f.at);
                self.chunks.reset_chunk(f.chunk);
                lost(f.chunk);
            }
        }
        if taken.count > 0 {
            self.last_loss = Some(now);
        }
        taken
    }

    /// No DATA was lost for `calm` before `now`.
    #[inline]
    pub(crate) fn no_loss_for(&self, now: Time, calm: Duration) -> bool {
        self.last_loss
            .is_none_or(|at| now.saturating_since(at) >= calm)
    }

    /// The chunks of `range` no longer count as on their way (behind a live window): a
    /// REQUEST for them is served again. Their entries of the queue stay, to be
    /// acknowledged or lost.
    pub(crate) fn forget(&mut self, range: Bin) {
        self.chunks.reset(range);
    }

    /// No chunk counts as on its way (a live stream that restarted).
    pub(crate) fn forget_all(&mut self) {
        self.chunks.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const GRANULARITY: Duration = Duration::from_millis(1);

    fn at(ms: u64) -> Time {
        Time::from_millis(ms)
    }

    fn rtt_of(ms: u64) -> RttEstimator {
        let mut rtt = RttEstimator::default();
        rtt.on_sample(Duration::from_millis(ms));
        rtt
    }

    fn chunk(c: u64) -> Bin {
        Bin::chunk(c).unwrap()
    }

    #[test]
    fn a_chunk_sent_is_on_its_way_until_acknowledged() {
        let mut d = DataInFlight::new();
        d.record(4, at(0), false);
        d.record(5, at(1), false);
        assert_eq!(d.len(), 2);
        assert!(d.any_of(chunk(4)) && d.any_of(Bin::new(1, 2).unwrap()));
        assert!(!d.any_of(chunk(6)));
        let acked = d.acknowledge(4, 4, at(30), None);
        assert_eq!(
            acked,
            Acked {
                count: 1,
                rtt_sample: Some(30 * MS)
            }
        );
        assert!(!d.any_of(chunk(4)) && d.any_of(chunk(5)));
        assert_eq!(
            d.acknowledge(4, 4, at(31), None).count,
            0,
            "acknowledged once"
        );
        assert_eq!(d.acknowledge(0, 9, at(40), None).count, 1);
        assert!(d.is_empty() && d.chunks().is_clear());
    }

    #[test]
    fn a_retransmission_times_a_round_trip_only_when_it_cannot_be_the_first_copy() {
        let mut d = DataInFlight::new();
        d.record(1, at(0), true);
        d.record(2, at(0), true);
        d.record(3, at(0), false);
        let early = d.acknowledge(1, 1, at(10), Some(20 * MS));
        assert_eq!(early.count, 1);
        assert_eq!(early.rtt_sample, None, "may be the first copy's");
        let late = d.acknowledge(2, 2, at(25), Some(20 * MS));
        assert_eq!(late.rtt_sample, Some(25 * MS));
        let fresh = d.acknowledge(3, 3, at(12), Some(20 * MS));
        assert_eq!(fresh.rtt_sample, Some(12 * MS));
    }

    #[test]
    fn data_is_lost_a_timeout_after_it_went_or_a_round_trip_after_newer_data_landed() {
        let rtt = rtt_of(100); // timeout 300 ms, reordering window 25 ms
        let mut d = DataInFlight::new();
        assert_eq!(d.loss_deadline(&rtt, GRANULARITY), None);
        d.record(0, at(0), false);
        d.record(1, at(10), false);
        assert_eq!(d.loss_deadline(&rtt, GRANULARITY), Some(at(300)));
        d.acknowledge(1, 1, at(110), None);
        assert_eq!(d.loss_deadline(&rtt, GRANULARITY), Some(at(125)));
        assert_eq!(
            d.loss_deadline(&rtt, 40 * MS),
            Some(at(140)),
            "the window is at least the timer granularity"
        );
    }

    #[test]
    fn what_is_past_its_deadline_is_taken_for_lost_oldest_first() {
        let rtt = rtt_of(100);
        let mut d = DataInFlight::new();
        d.record(7, at(0), false);
        d.record(3, at(20), true);
        d.record(9, at(250), false);
        let mut lost = Vec::new();
        assert_eq!(
            d.take_lost(at(299), &rtt, GRANULARITY, |c| lost.push(c))
                .count,
            0
        );
        assert!(d.no_loss_for(at(299), 1000 * MS));
        let taken = d.take_lost(at(320), &rtt, GRANULARITY, |c| lost.push(c));
        assert_eq!(
            taken,
            Lost {
                count: 2,
                last_sent: at(20)
            }
        );
        assert_eq!(lost, [7, 3]);
        assert_eq!(d.len(), 1);
        assert!(!d.any_of(chunk(7)) && !d.any_of(chunk(3)) && d.any_of(chunk(9)));
        assert!(!d.no_loss_for(at(1000), 1000 * MS));
        assert!(d.no_loss_for(at(1320), 1000 * MS));
    }

    #[test]
    fn forgotten_chunks_are_off_the_map_but_still_in_flight() {
        let mut d = DataInFlight::new();
        for c in 0..4 {
            d.record(c, at(c), false);
        }
        d.forget(Bin::new(1, 0).unwrap()); // chunks 0 and 1
        assert!(!d.any_of(Bin::new(1, 0).unwrap()) && d.any_of(chunk(2)));
        assert_eq!(d.len(), 4);
        d.forget_all();
        assert!(d.chunks().is_clear());
        assert_eq!(d.acknowledge(0, 3, at(50), None).count, 4);
    }
}
