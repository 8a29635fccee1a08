//! Peers that refused us a channel because they were full, asked again later.
//!
//! A full peer answers an opening handshake with a close (RFC 7574 §8.4) rather than
//! leaving it unanswered or answered and then ignored. A seeder everyone starts from is
//! full exactly when many peers arrive at once; each refused peer comes back after a back-off
//! that doubles, with jitter, so that the refused crowd spreads out instead of knocking in
//! step. The table is bounded; when full, the entry due last goes.

use crate::rng::Rng;
use crate::time::Time;
use core::time::Duration;
use std::collections::BTreeMap;

/// The first wait after a refusal; it doubles per refusal in a row.
const FIRST_WAIT: Duration = Duration::from_secs(1);
/// The longest wait.
const MAX_WAIT: Duration = Duration::from_secs(30);
/// Addresses kept at most.
const CAPACITY: usize = 256;

#[derive(Debug)]
struct Entry {
    /// When to ask again; `None` while the new attempt is under way.
    at: Option<Time>,
    refusals: u32,
}

#[derive(Debug)]
pub(crate) struct Redials<A> {
    entries: BTreeMap<A, Entry>,
}

impl<A: Ord + Clone> Redials<A> {
    pub fn new() -> Self {
        Redials {
            entries: BTreeMap::new(),
        }
    }

    /// `peer` refused us at `now`: ask again after its back-off (half to the whole of it,
    /// at random).
    pub fn refused(&mut self, peer: A, now: Time, rng: &mut Rng) {
        let refusals = self.entries.get(&peer).map_or(0, |e| e.refusals) + 1;
        let full = FIRST_WAIT
            .saturating_mul(1 << (refusals - 1).min(16))
            .min(MAX_WAIT);
        let half = full / 2;
        let jitter = Duration::from_micros(rng.below(half.as_micros() as u64 + 1));
        if !self.entries.contains_key(&peer)
            && self.entries.len() >= CAPACITY
            && let Some(last) = self
                .entries
                .iter()
                .max_by_key(|(_, e)| e.at.unwrap_or(Time::from_micros(u64::MAX)))
                .map(|(a, _)| a.clone())
        {
            self.entries.remove(&last);
        }
        self.entries.insert(
            peer,
            Entry {
                at: Some(now + half + jitter),
                refusals,
            },
        );
    }

    /// `peer` took us (or is gone for good): no more asking, and its count starts over.
    pub fn forget(&mut self, peer: &A) {
        self.entries.remove(peer);
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Some peer is still to be asked again.
    pub fn pending(&self) -> bool {
        self.entries.values().any(|e| e.at.is_some())
    }

    /// The earliest time a peer is to be asked again.
    pub fn next_at(&self) -> Option<Time> {
        self.entries.values().filter_map(|e| e.at).min()
    }

    /// The peers due at `now`; they stay in the table (with their count) until
    /// [`forget`](Self::forget) or the next refusal.
    pub fn due(&mut self, now: Time) -> Vec<A> {
        let due: Vec<A> = self
            .entries
            .iter()
            .filter(|(_, e)| e.at.is_some_and(|t| t <= now))
            .map(|(a, _)| a.clone())
            .collect();
        for a in &due {
            if let Some(e) = self.entries.get_mut(a) {
                e.at = None;
            }
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_off_doubles_with_jitter_and_caps() {
        let mut r = Redials::new();
        let mut rng = Rng::new(7);
        let now = Time::from_micros(0);
        let mut waits = Vec::new();
        for _ in 0..8 {
            r.refused(1u32, now, &mut rng);
            waits.push(r.next_at().unwrap().as_micros());
        }
        // Each wait is within [half, whole] of 1, 2, 4, ... 30 s.
        for (i, w) in waits.iter().enumerate() {
            let full = (1_000_000u64 << i).min(30_000_000);
            assert!(*w >= full / 2 && *w <= full, "refusal {i}: {w} µs");
        }
    }

    #[test]
    fn due_peers_come_once_and_forget_resets() {
        let mut r = Redials::new();
        let mut rng = Rng::new(1);
        r.refused(1u32, Time::from_micros(0), &mut rng);
        r.refused(2u32, Time::from_micros(0), &mut rng);
        assert!(r.due(Time::from_micros(100)).is_empty());
        let mut due = r.due(Time::from_micros(2_000_000));
        due.sort();
        assert_eq!(due, vec![1, 2]);
        assert!(r.due(Time::from_micros(60_000_000)).is_empty());
        assert!(!r.pending());
        r.forget(&1);
        r.refused(1, Time::from_micros(0), &mut rng);
        assert!(r.next_at().unwrap().as_micros() <= 1_000_000);
    }

    #[test]
    fn the_table_is_bounded() {
        let mut r = Redials::new();
        let mut rng = Rng::new(3);
        for a in 0..(CAPACITY as u32 * 2) {
            r.refused(a, Time::from_micros(a as u64), &mut rng);
        }
        assert_eq!(r.entries.len(), CAPACITY);
    }
}
