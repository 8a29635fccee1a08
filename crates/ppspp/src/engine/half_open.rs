//! Handshakes we answered whose initiator has not come back yet (RFC 7574 §12).
//!
//! An opening handshake costs its sender one datagram and can come from a spoofed address.
//! Answering it must not cost a channel: those are few (`max_peers`) and each holds
//! binmaps and congestion state. So an answered handshake waits here, in a bounded table of
//! a few words per entry, and becomes a channel only when the initiator's next datagram
//! arrives on the channel ID we gave it, from the address we answered: proof that the
//! address is real and the peer is there. When the table is full the oldest entry goes,
//! so a flood only delays honest peers by as long as the flood takes to cycle the table.

use super::PeerAddr;
use crate::binmap::Binmap;
use crate::codec::CodecConfig;
use crate::time::Time;
use std::collections::{BTreeMap, VecDeque};

/// One answered handshake.
#[derive(Debug)]
pub(crate) struct HalfOpen<A> {
    pub addr: A,
    /// The initiator's channel ID, where our datagrams go.
    pub remote_id: u32,
    /// The channel's codec with the initiator's options applied.
    pub codec: CodecConfig,
    /// When our answer last went out (a round-trip sample once the initiator answers).
    pub answered_at: Option<Time>,
    /// The answer went out more than once: its reply cannot time a round trip.
    pub answer_resent: bool,
    /// What our answer announced (HAVEs ride with it, as libswift's do).
    pub announced: Binmap,
    /// When the entry was made or last refreshed by a repeated handshake.
    pub since: Time,
    /// A live peer's discard window (handshake option 7).
    pub peer_window: Option<u64>,
    /// Our answer must (again) go out.
    answer_due: bool,
    /// The initiator came back when we had no room and was refused: it is refused again
    /// whenever it comes back, until the entry expires.
    pub refused: bool,
}

impl<A> HalfOpen<A> {
    pub fn new(addr: A, remote_id: u32, codec: CodecConfig, now: Time) -> Self {
        HalfOpen {
            addr,
            remote_id,
            codec,
            answered_at: None,
            answer_resent: false,
            announced: Binmap::new(),
            since: now,
            peer_window: None,
            answer_due: false,
            refused: false,
        }
    }
}

/// The bounded table of half-open handshakes, keyed by the channel ID we chose.
#[derive(Debug)]
pub(crate) struct HalfOpenTable<A> {
    by_id: BTreeMap<u32, HalfOpen<A>>,
    by_addr: BTreeMap<A, u32>,
    /// IDs in insertion order, for eviction and expiry; IDs no longer in `by_id` (or
    /// re-inserted later) are skipped when they come up.
    order: VecDeque<(Time, u32)>,
    /// IDs whose answer must (again) go out.
    due: VecDeque<u32>,
    capacity: usize,
}

impl<A: PeerAddr> HalfOpenTable<A> {
    pub fn new(capacity: usize) -> Self {
        HalfOpenTable {
            by_id: BTreeMap::new(),
            by_addr: BTreeMap::new(),
            order: VecDeque::new(),
            due: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn contains(&self, id: u32) -> bool {
        self.by_id.contains_key(&id)
    }

    /// The entry for `addr`, if any.
    pub fn id_of(&self, addr: &A) -> Option<u32> {
        self.by_addr.get(addr).copied()
    }

    pub fn get_mut(&mut self, id: u32) -> Option<&mut HalfOpen<A>> {
        self.by_id.get_mut(&id)
    }

    /// Adds an entry under `id` (fresh), evicting the oldest when full; its answer is due.
    pub fn insert(&mut self, id: u32, mut entry: HalfOpen<A>) {
        while self.by_id.len() >= self.capacity {
            let Some((_, oldest)) = self.order.pop_front() else {
                break;
            };
            self.remove(oldest);
        }
        self.order.push_back((entry.since, id));
        entry.answer_due = true;
        self.by_addr.insert(entry.addr.clone(), id);
        self.by_id.insert(id, entry);
        self.due.push_back(id);
    }

    /// The initiator repeated its handshake: our answer was lost, and the HAVEs that rode
    /// with it: send both again.
    pub fn answer_again(&mut self, id: u32, now: Time) {
        if let Some(e) = self.by_id.get_mut(&id) {
            e.since = now;
            e.announced.clear();
            self.order.push_back((now, id));
            if !std::mem::replace(&mut e.answer_due, true) {
                self.due.push_back(id);
            }
        }
    }

    pub fn remove(&mut self, id: u32) -> Option<HalfOpen<A>> {
        let entry = self.by_id.remove(&id)?;
        if self.by_addr.get(&entry.addr) == Some(&id) {
            self.by_addr.remove(&entry.addr);
        }
        Some(entry)
    }

    /// The next entry whose answer is due, taken off the due list.
    pub fn next_due(&mut self) -> Option<(u32, &mut HalfOpen<A>)> {
        while let Some(id) = self.due.pop_front() {
            if self
                .by_id
                .get_mut(&id)
                .is_some_and(|e| std::mem::take(&mut e.answer_due))
            {
                return self.by_id.get_mut(&id).map(|e| (id, e));
            }
        }
        None
    }

    /// Drops entries whose initiator stayed silent for `ttl`.
    pub fn expire(&mut self, now: Time, ttl: core::time::Duration) {
        while let Some(&(at, id)) = self.order.front() {
            let current = self.by_id.get(&id).is_some_and(|e| e.since == at);
            if current && at + ttl > now {
                break;
            }
            self.order.pop_front();
            if current {
                self.remove(id);
            }
        }
        // Stale entries of `order` (re-inserted or removed) could otherwise pile up under
        // a flood of repeated handshakes.
        if self.order.len() > 2 * self.capacity {
            let by_id = &self.by_id;
            self.order
                .retain(|(at, id)| by_id.get(id).is_some_and(|e| e.since == *at));
        }
    }

    /// When the oldest entry expires with `ttl`, if any.
    pub fn next_expiry(&self, ttl: core::time::Duration) -> Option<Time> {
        self.order
            .iter()
            .find(|(at, id)| self.by_id.get(id).is_some_and(|e| e.since == *at))
            .map(|(at, _)| *at + ttl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(addr: u32, now: Time) -> HalfOpen<u32> {
        HalfOpen::new(addr, addr + 1000, CodecConfig::default(), now)
    }

    #[test]
    fn full_table_evicts_the_oldest_and_expiry_drops_the_silent() {
        let mut t = HalfOpenTable::new(3);
        for i in 0..5u32 {
            t.insert(i, entry(i, Time::from_millis(u64::from(i))));
        }
        assert_eq!(t.len(), 3);
        assert!(!t.contains(0) && !t.contains(1));
        assert_eq!(t.id_of(&4), Some(4));
        // A repeated handshake refreshes its entry.
        t.answer_again(2, Time::from_millis(100));
        t.expire(Time::from_millis(60), core::time::Duration::from_millis(50));
        assert!(t.contains(2) && !t.contains(3) && !t.contains(4));
        assert_eq!(
            t.next_expiry(core::time::Duration::from_millis(50)),
            Some(Time::from_millis(150))
        );
        let due: Vec<u32> = std::iter::from_fn(|| t.next_due().map(|(id, _)| id)).collect();
        assert_eq!(due, [2]);
        t.answer_again(2, Time::from_millis(100));
        t.answer_again(2, Time::from_millis(101));
        let due: Vec<u32> = std::iter::from_fn(|| t.next_due().map(|(id, _)| id)).collect();
        assert_eq!(due, [2], "one answer per repeat burst");
        assert!(t.remove(2).is_some());
        assert_eq!((t.len(), t.id_of(&2)), (0, None));
    }
}
