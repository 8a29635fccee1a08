//! A router's strict-priority queue (DiffServ's expedited class against best effort):
//! a high-priority packet leaves before any low-priority one, and the buffer is shared, so
//! a high-priority packet that finds it full pushes out the newest low-priority packet
//! (it is dropped only when the buffer holds high-priority packets alone). Service is not
//! preemptive: the packet on the wire finishes first. The network serves it packet by
//! packet (see [`crate::net`]); this holds only the waiting packets.

use std::collections::VecDeque;

/// What happened to a packet offered to the queue.
#[derive(Debug, PartialEq, Eq)]
pub enum Offer<T> {
    /// It waits in the queue.
    Queued,
    /// It waits in the queue; this low-priority packet was pushed out for it.
    PushedOut(T),
    /// The buffer was full: the packet offered is dropped.
    Dropped,
}

#[derive(Debug)]
pub struct StrictPriority<T> {
    high: VecDeque<T>,
    low: VecDeque<T>,
    /// Packets waiting at most (the one on the wire excluded).
    limit: usize,
    /// A packet is on the wire.
    pub busy: bool,
}

impl<T> StrictPriority<T> {
    pub fn new(limit: usize) -> StrictPriority<T> {
        StrictPriority {
            high: VecDeque::new(),
            low: VecDeque::new(),
            limit,
            busy: false,
        }
    }

    pub fn waiting(&self) -> usize {
        self.high.len() + self.low.len()
    }

    pub fn offer(&mut self, packet: T, high: bool) -> Offer<T> {
        if self.waiting() < self.limit {
            if high {
                self.high.push_back(packet);
            } else {
                self.low.push_back(packet);
            }
            return Offer::Queued;
        }
        if !high {
            return Offer::Dropped;
        }
        match self.low.pop_back() {
            Some(out) => {
                self.high.push_back(packet);
                Offer::PushedOut(out)
            }
            None => Offer::Dropped,
        }
    }

    /// The next packet to put on the wire: the oldest high-priority one, else the oldest
    /// other.
    pub fn pop_next(&mut self) -> Option<T> {
        self.high.pop_front().or_else(|| self.low.pop_front())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn high_priority_leaves_first_and_each_class_in_order() {
        let mut q = StrictPriority::new(10);
        for (p, high) in [(1, false), (2, true), (3, false), (4, true)] {
            assert_eq!(q.offer(p, high), Offer::Queued);
        }
        let order: Vec<i32> = std::iter::from_fn(|| q.pop_next()).collect();
        assert_eq!(order, vec![2, 4, 1, 3]);
    }

    #[test]
    fn a_full_buffer_drops_low_priority_and_pushes_it_out_for_high_priority() {
        let mut q = StrictPriority::new(2);
        assert_eq!(q.offer(1, false), Offer::Queued);
        assert_eq!(q.offer(2, false), Offer::Queued);
        assert_eq!(q.offer(3, false), Offer::Dropped);
        assert_eq!(q.offer(4, true), Offer::PushedOut(2));
        assert_eq!(q.offer(5, true), Offer::PushedOut(1));
        // Only high-priority packets wait now: a third one is dropped.
        assert_eq!(q.offer(6, true), Offer::Dropped);
        assert_eq!(q.pop_next(), Some(4));
        assert_eq!(q.pop_next(), Some(5));
        assert_eq!(q.pop_next(), None);
    }
}
