//! What a peer asked us for and waits to be sent: retransmissions first, then requests in
//! the order they came, and requests that found the queue full, deferred.
//!
//! An entry of the queues counts only while its chunk is marked queued: a CANCEL or an
//! ACK clears the mark, and the stale entry is skipped when it comes up, so neither needs
//! a walk of the queue.

use crate::Bin;
use crate::binmap::Binmap;
use crate::time::Time;
use std::collections::VecDeque;

#[derive(Debug)]
pub(crate) struct ServeQueue {
    /// Requested chunks in arrival order, with when they were asked for.
    serve: VecDeque<(u64, Time)>,
    /// Chunks taken for lost, to go again before anything new.
    retransmit: VecDeque<u64>,
    /// Chunks waiting in `serve` or `retransmit`.
    queued: Binmap,
    /// Requested chunks that found `serve` full: they enter it as it drains. A peer that
    /// asks for more than the queue holds (libswift asks for a whole file at once on a
    /// fast path) is served all of it, not only the first `max_serve_queue` chunks, and a
    /// binmap costs what the ranges asked cost, not 16 bytes a chunk.
    deferred: Binmap,
}

impl ServeQueue {
    pub(crate) fn new() -> ServeQueue {
        ServeQueue {
            serve: VecDeque::new(),
            retransmit: VecDeque::new(),
            queued: Binmap::new(),
            deferred: Binmap::new(),
        }
    }

    /// Entries of the serve queue, stale ones too: what bounds its length.
    pub(crate) fn len(&self) -> usize {
        self.serve.len()
    }

    /// The chunks waiting to be sent (for searches of what is not queued yet).
    pub(crate) fn queued(&self) -> &Binmap {
        &self.queued
    }

    pub(crate) fn is_queued(&self, chunk: u64) -> bool {
        self.queued.has_chunk(chunk)
    }

    /// Whether requested chunks wait to be sent: retransmissions, the serve queue, or
    /// requests deferred past it.
    pub(crate) fn has_data(&self) -> bool {
        !self.retransmit.is_empty() || !self.serve.is_empty() || !self.deferred.is_clear()
    }

    /// Chunks `first..=last`, asked for at `now`, join the back of the queue.
    pub(crate) fn push(&mut self, first: u64, last: u64, now: Time) {
        for chunk in first..=last {
            self.serve.push_back((chunk, now));
        }
        for b in Bin::from_chunk_range(first, last) {
            self.queued.set(b);
        }
    }

    /// The chunks of `range` wait until the queue has room.
    pub(crate) fn defer(&mut self, range: Bin) {
        self.deferred.set(range);
    }

    /// Nothing is deferred.
    pub(crate) fn none_deferred(&self) -> bool {
        self.deferred.is_clear()
    }

    /// The deferred chunks, taken out to queue what has room; give back what is left with
    /// [`keep_deferred`](Self::keep_deferred).
    pub(crate) fn take_deferred(&mut self) -> Binmap {
        core::mem::take(&mut self.deferred)
    }

    pub(crate) fn keep_deferred(&mut self, deferred: Binmap) {
        self.deferred = deferred;
    }

    /// Takes `chunk` off the queue of chunks to send; false if it was not on it (a stale
    /// entry).
    pub(crate) fn unqueue(&mut self, chunk: u64) -> bool {
        if !self.queued.has_chunk(chunk) {
            return false;
        }
        self.queued.reset_chunk(chunk);
        true
    }

    /// The peer no longer wants the chunks of `range` (a CANCEL; behind a live window):
    /// neither queued nor deferred.
    pub(crate) fn cancel(&mut self, range: Bin) {
        self.queued.reset(range);
        self.deferred.reset(range);
    }

    /// The peer acknowledged the chunks of `range`: a queued retransmission of them is
    /// moot.
    pub(crate) fn acknowledged(&mut self, range: Bin) {
        self.queued.reset(range);
    }

    /// `chunk` was taken for lost: it goes again after the retransmissions before it.
    pub(crate) fn lost(&mut self, chunk: u64) {
        self.mark(chunk);
        self.retransmit.push_back(chunk);
    }

    /// A chunk taken from the queues goes back in front, for a later datagram.
    pub(crate) fn put_back(&mut self, chunk: u64, retransmission: bool, now: Time) {
        if retransmission {
            self.retransmit.push_front(chunk);
        } else {
            self.serve.push_front((chunk, now));
        }
        self.mark(chunk);
    }

    fn mark(&mut self, chunk: u64) {
        self.queued.set_chunk(chunk);
    }

    /// The oldest retransmission still queued, taken off the queue.
    pub(crate) fn next_retransmission(&mut self) -> Option<u64> {
        while let Some(c) = self.retransmit.pop_front() {
            if self.unqueue(c) {
                return Some(c);
            }
        }
        None
    }

    /// The oldest request still queued, taken off the queue.
    pub(crate) fn next_request(&mut self) -> Option<u64> {
        while let Some((c, _)) = self.serve.pop_front() {
            if self.unqueue(c) {
                return Some(c);
            }
        }
        None
    }

    /// The first `n` entries of the serve queue still queued, with their places.
    pub(crate) fn first_requests(&self, n: usize) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.serve
            .iter()
            .take(n)
            .enumerate()
            .map(|(i, &(c, _))| (i, c))
            .filter(|&(_, c)| self.is_queued(c))
    }

    /// The request at place `i` of the serve queue (from
    /// [`first_requests`](Self::first_requests)), taken off the queue.
    pub(crate) fn take_request_at(&mut self, i: usize) -> Option<u64> {
        let (c, _) = self.serve.remove(i)?;
        self.unqueue(c).then_some(c)
    }

    /// A CHOKE: the requests queued and deferred are dropped (retransmissions of what was
    /// sent stay).
    pub(crate) fn drop_requests(&mut self) {
        while let Some((c, _)) = self.serve.pop_front() {
            self.unqueue(c);
        }
        self.deferred.clear();
    }

    /// Forgets every chunk queued or deferred (a live stream that restarted); the stale
    /// entries are skipped when they come up.
    pub(crate) fn forget(&mut self) {
        self.queued.clear();
        self.deferred.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Time = Time::ZERO;

    fn drain(q: &mut ServeQueue) -> Vec<u64> {
        core::iter::from_fn(|| q.next_retransmission().or_else(|| q.next_request())).collect()
    }

    #[test]
    fn retransmissions_go_first_then_requests_in_the_order_they_came() {
        let mut q = ServeQueue::new();
        q.push(5, 7, NOW);
        q.push(2, 2, NOW);
        q.lost(40);
        q.lost(30);
        assert!(q.has_data());
        assert_eq!(drain(&mut q), [40, 30, 5, 6, 7, 2]);
        assert!(!q.has_data());
    }

    #[test]
    fn cancelled_and_acknowledged_chunks_are_skipped_where_they_wait() {
        let mut q = ServeQueue::new();
        q.push(0, 7, NOW);
        q.lost(20);
        q.cancel(Bin::new(1, 1).unwrap()); // chunks 2 and 3
        q.acknowledged(Bin::chunk(20).unwrap());
        assert!(!q.is_queued(2) && q.is_queued(4));
        assert_eq!(q.len(), 8, "stale entries stay until they come up");
        assert_eq!(drain(&mut q), [0, 1, 4, 5, 6, 7]);
    }

    #[test]
    fn a_chunk_put_back_goes_out_next() {
        let mut q = ServeQueue::new();
        q.push(0, 3, NOW);
        let c = q.next_request().unwrap();
        q.put_back(c, false, NOW);
        q.lost(9);
        let r = q.next_retransmission().unwrap();
        q.put_back(r, true, NOW);
        assert_eq!(drain(&mut q), [9, 0, 1, 2, 3]);
    }

    #[test]
    fn deferred_requests_wait_and_a_choke_drops_them_with_the_queue() {
        let mut q = ServeQueue::new();
        q.defer(Bin::new(3, 1).unwrap());
        assert!(!q.none_deferred());
        assert!(q.has_data(), "deferred requests wait to be sent");
        let deferred = q.take_deferred();
        assert!(q.none_deferred());
        q.keep_deferred(deferred);
        q.push(0, 1, NOW);
        q.lost(5);
        q.drop_requests();
        assert!(q.none_deferred());
        assert_eq!(drain(&mut q), [5], "what was sent and lost still goes");
    }

    #[test]
    fn a_request_can_be_taken_from_its_place() {
        let mut q = ServeQueue::new();
        q.push(10, 14, NOW);
        q.cancel(Bin::chunk(11).unwrap());
        let places: Vec<(usize, u64)> = q.first_requests(3).collect();
        assert_eq!(places, [(0, 10), (2, 12)]);
        assert_eq!(q.take_request_at(2), Some(12));
        assert_eq!(q.take_request_at(0), Some(10));
        assert_eq!(drain(&mut q), [13, 14]);
        q.push(1, 1, NOW);
        q.forget();
        assert_eq!(drain(&mut q), Vec::<u64>::new());
    }
}
