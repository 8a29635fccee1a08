//! Swarm availability for rarest-first picking (libswift `avail.h`, report §2.2.2).
//!
//! Level `k` is a [`Binmap`] of the chunks held by exactly `k` connected non-seeder peers.
//! The levels are pairwise disjoint and together cover every chunk, so a chunk moves one
//! level up or down when a peer gains or loses it. Unlike libswift there is no fixed cap
//! on the number of levels (they grow as needed and empty top levels are dropped), and
//! seeders are a plain counter added to every level, so a seeder joining or leaving costs
//! O(1) instead of shifting every map.

use crate::bin::Bin;
use crate::binmap::Binmap;

/// How many connected peers hold each chunk, as one [`Binmap`] per rarity level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Availability {
    levels: Vec<Binmap>,
    seeders: usize,
}

impl Default for Availability {
    fn default() -> Availability {
        Availability::new()
    }
}

/// The smallest bin inside `scope` that holds every chunk of `map` inside `scope`.
fn narrow(map: &Binmap, mut scope: Bin) -> Bin {
    while let Some((left, right)) = scope.children() {
        if map.is_empty(left) {
            scope = right;
        } else if map.is_empty(right) {
            scope = left;
        } else {
            break;
        }
    }
    scope
}

fn everything() -> Binmap {
    let mut m = Binmap::new();
    m.set(Bin::ALL);
    m
}

impl Availability {
    /// No peers: every chunk is at level 0.
    pub fn new() -> Availability {
        Availability {
            levels: vec![everything()],
            seeders: 0,
        }
    }

    /// The chunks of level `k` that are set in `chunks`, which lies inside `scope`: only
    /// that part of the level is copied, so a HAVE costs what its bin covers.
    fn moving(&self, k: usize, chunks: &Binmap, scope: Bin) -> Binmap {
        let mut moving = Binmap::new();
        moving.copy_range(&self.levels[k], scope);
        moving.intersect(chunks);
        moving
    }

    /// The level holding every chunk of `bin`, if one does.
    fn level_of(&self, bin: Bin) -> Option<usize> {
        self.levels.iter().position(|l| l.is_filled(bin))
    }

    /// Moves the chunks set in `chunks` (all inside `scope`) one level up.
    fn raise(&mut self, chunks: &Binmap, scope: Bin) {
        let scope = narrow(chunks, scope);
        // One chunk (a HAVE's bin usually covers what the peer held already, plus one new
        // chunk): it sits in exactly one level.
        if scope.is_base() {
            if let Some(k) = chunks
                .is_filled(scope)
                .then(|| self.level_of(scope))
                .flatten()
            {
                self.step(scope, k, k + 1);
            }
            return;
        }
        // Bottom up, taking each chunk once and stopping when none is left: the cost is
        // the levels up to the highest one holding a chunk of `chunks`, not all of them.
        let mut left = Binmap::new();
        left.copy_range(chunks, scope);
        for k in 0..self.levels.len() {
            if Binmap::find_match(&self.levels[k], &left, scope, 0).is_none() {
                continue;
            }
            let moving = self.moving(k, &left, scope);
            self.levels[k].subtract(&moving);
            left.subtract(&moving);
            if k + 1 == self.levels.len() {
                self.levels.push(Binmap::new());
            }
            self.levels[k + 1].fill(&moving);
            if left.is_clear() {
                break;
            }
        }
    }

    /// Moves the chunks set in `chunks` (all inside `scope`) one level down (chunks at
    /// level 0 stay there).
    fn lower(&mut self, chunks: &Binmap, scope: Bin) {
        let scope = narrow(chunks, scope);
        if scope.is_base() {
            if let Some(k) = chunks
                .is_filled(scope)
                .then(|| self.level_of(scope))
                .flatten()
                && k > 0
            {
                self.step(scope, k, k - 1);
                self.trim();
            }
            return;
        }
        let mut left = Binmap::new();
        left.copy_range(chunks, scope);
        for k in 0..self.levels.len() {
            if Binmap::find_match(&self.levels[k], &left, scope, 0).is_none() {
                continue;
            }
            let moving = self.moving(k, &left, scope);
            left.subtract(&moving);
            if k > 0 {
                self.levels[k].subtract(&moving);
                self.levels[k - 1].fill(&moving);
            }
            if left.is_clear() {
                break;
            }
        }
        self.trim();
    }

    /// Moves one chunk from level `from` to level `to`.
    fn step(&mut self, chunk: Bin, from: usize, to: usize) {
        self.levels[from].reset(chunk);
        if to == self.levels.len() {
            self.levels.push(Binmap::new());
        }
        self.levels[to].set(chunk);
    }

    fn trim(&mut self) {
        while self.levels.len() > 1 && self.levels.last().is_some_and(Binmap::is_clear) {
            self.levels.pop();
        }
    }

    /// Registers a newly connected peer with its current map. A complete map
    /// (`have.is_filled(Bin::ALL)`) counts as a seeder; for content of known finite size
    /// the caller calls [`Availability::add_seeder`] instead.
    pub fn add_peer(&mut self, have: &Binmap) {
        if have.is_filled(Bin::ALL) {
            self.seeders += 1;
        } else {
            self.raise(have, Bin::ALL);
        }
    }

    /// Registers a peer that holds every chunk: O(1).
    pub fn add_seeder(&mut self) {
        self.seeders += 1;
    }

    /// Unregisters a seeder (no-op if there is none): O(1).
    pub fn remove_seeder(&mut self) {
        self.seeders = self.seeders.saturating_sub(1);
    }

    /// Unregisters a peer with its last known map (a complete map is a seeder, matching
    /// [`Availability::add_peer`] and [`Availability::apply_have`]).
    pub fn remove_peer(&mut self, have: &Binmap) {
        if have.is_filled(Bin::ALL) {
            self.remove_seeder();
        } else {
            self.lower(have, Bin::ALL);
        }
    }

    /// Records a HAVE for `bin` from a peer whose map is `peer_have`. Call it *before*
    /// setting `bin` in `peer_have`: only the chunks of `bin` new for this peer move up.
    /// If the peer's map becomes complete it is turned into a seeder, so that
    /// [`Availability::remove_peer`] with its complete map stays consistent.
    pub fn apply_have(&mut self, peer_have: &Binmap, bin: Bin) {
        if bin.is_none() || peer_have.is_filled(bin) || peer_have.is_filled(Bin::ALL) {
            return;
        }
        let mut new = Binmap::new();
        new.set(bin);
        new.subtract(peer_have);
        self.raise(&new, bin);
        let (lo, hi) = (bin.base_offset(), bin.last_chunk().saturating_add(1));
        let complete =
            peer_have.find_empty(0..lo).is_none() && peer_have.find_empty(hi..u64::MAX).is_none();
        // Every chunk is now held by this peer, so level 0 is empty unless the caller's
        // bookkeeping is off; then keep the peer as a regular one.
        if complete && self.levels.len() > 1 && self.levels[0].is_clear() {
            self.levels.remove(0);
            self.seeders += 1;
        }
    }

    /// Records that a peer whose map is `peer_have` no longer holds `bin`. Call it *before*
    /// resetting `bin` in `peer_have`: only the chunks of `bin` the peer held move down. A
    /// seeder's map is left alone (turn it into a peer first: `remove_seeder`, `add_peer`).
    pub fn apply_lost(&mut self, peer_have: &Binmap, bin: Bin) {
        if bin.is_none() || peer_have.is_filled(Bin::ALL) {
            return;
        }
        let mut gone = Binmap::new();
        gone.set(bin);
        gone.intersect(peer_have);
        if !gone.is_clear() {
            self.lower(&gone, bin);
        }
    }

    /// How many connected peers (seeders included) hold `chunk`.
    pub fn rarity(&self, chunk: u64) -> usize {
        let Some(bin) = Bin::chunk(chunk) else {
            return self.seeders;
        };
        let k = self
            .levels
            .iter()
            .position(|l| l.is_filled(bin))
            .unwrap_or(0);
        k + self.seeders
    }

    /// The chunks held by exactly `k` non-seeder peers.
    pub fn level(&self, k: usize) -> Option<&Binmap> {
        self.levels.get(k)
    }

    /// Number of levels (at least 1; the top one is non-empty unless it is level 0).
    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    /// Number of peers counted as seeders.
    pub fn seeders(&self) -> usize {
        self.seeders
    }

    /// A maximal bin inside `range` held by the fewest peers, present in `offer` (the
    /// serving peer's map) and absent from `exclude` (what we have or already requested).
    /// `twist` randomises the scan as in [`Binmap::find_complement`]. The three maps are
    /// searched together, level by level, so a bin is never missed because its first
    /// match in `offer` happened to be excluded.
    pub fn find_rarest(
        &self,
        offer: &Binmap,
        exclude: &Binmap,
        range: Bin,
        twist: u64,
    ) -> Option<Bin> {
        self.levels.iter().find_map(|level| {
            Binmap::find_all(
                [(level, true), (offer, true), (exclude, false)],
                range,
                twist,
            )
        })
    }

    /// Debugging aid: checks that the levels are pairwise disjoint, cover every chunk,
    /// are internally consistent, and that no empty level is kept on top.
    pub fn check_invariants(&self) -> Result<(), String> {
        if self.levels.is_empty() {
            return Err("no levels".into());
        }
        let mut union = Binmap::new();
        for (i, a) in self.levels.iter().enumerate() {
            a.check_invariants()
                .map_err(|e| format!("level {i}: {e}"))?;
            if let Some(x) = Binmap::find_match(&union, a, Bin::ALL, 0) {
                return Err(format!("level {i} overlaps a lower level at {x:?}"));
            }
            union.fill(a);
        }
        if !union.is_filled(Bin::ALL) {
            return Err(format!(
                "levels do not cover everything: {:?} missing",
                union.find_empty(0..u64::MAX)
            ));
        }
        if self.levels.len() > 1 && self.levels.last().is_some_and(Binmap::is_clear) {
            return Err("empty top level".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(layer: u32, offset: u64) -> Bin {
        Bin::new(layer, offset).unwrap()
    }

    fn c(i: u64) -> Bin {
        Bin::chunk(i).unwrap()
    }

    fn map(bins: &[Bin]) -> Binmap {
        let mut m = Binmap::new();
        for x in bins {
            m.set(*x);
        }
        m
    }

    #[test]
    fn peers_and_haves() {
        let mut av = Availability::new();
        av.check_invariants().unwrap();
        assert_eq!(av.rarity(5), 0);
        let p1 = map(&[b(2, 0)]);
        let mut p2 = map(&[b(1, 0)]);
        av.add_peer(&p1);
        av.add_peer(&p2);
        av.check_invariants().unwrap();
        assert_eq!((av.rarity(0), av.rarity(2), av.rarity(4)), (2, 1, 0));
        assert_eq!(av.levels(), 3);
        assert!(av.level(2).unwrap().is_filled(b(1, 0)));
        // The report's figure 4: a HAVE for bin 5 = chunks 2..=3.
        av.apply_have(&p2, b(1, 1));
        p2.set(b(1, 1));
        av.check_invariants().unwrap();
        assert_eq!((av.rarity(2), av.rarity(3)), (2, 2));
        // A repeated HAVE changes nothing.
        av.apply_have(&p2, c(3));
        assert_eq!(av.rarity(3), 2);
        // A HAVE overlapping known chunks moves only the new ones.
        av.apply_have(&p2, b(3, 0));
        p2.set(b(3, 0));
        av.check_invariants().unwrap();
        assert_eq!((av.rarity(1), av.rarity(6)), (2, 1));
        av.remove_peer(&p1);
        av.check_invariants().unwrap();
        assert_eq!((av.rarity(1), av.rarity(6), av.rarity(9)), (1, 1, 0));
        assert_eq!(av.levels(), 2);
        av.remove_peer(&p2);
        av.check_invariants().unwrap();
        assert_eq!(av, Availability::new());
    }

    #[test]
    fn seeders_are_counted_apart() {
        let mut av = Availability::new();
        av.add_seeder();
        av.add_peer(&map(&[Bin::ALL]));
        av.add_peer(&map(&[c(7)]));
        av.check_invariants().unwrap();
        assert_eq!((av.rarity(7), av.rarity(8)), (3, 2));
        assert_eq!(av.seeders(), 2);
        assert_eq!(av.levels(), 2);
        av.remove_seeder();
        av.remove_peer(&map(&[Bin::ALL]));
        assert_eq!((av.rarity(7), av.rarity(8)), (1, 0));
        av.remove_seeder();
        assert_eq!(av.seeders(), 0);
        // A peer whose HAVEs complete its map becomes a seeder.
        let mut p = map(&[b(62, 0)]);
        av.add_peer(&p);
        av.apply_have(&p, b(62, 1));
        p.set(b(62, 1));
        av.check_invariants().unwrap();
        assert_eq!(av.seeders(), 1);
        assert_eq!((av.rarity(7), av.rarity(8)), (2, 1));
        av.remove_peer(&p);
        av.remove_peer(&map(&[c(7)]));
        assert_eq!(av, Availability::new());
    }

    #[test]
    fn levels_grow_past_libswift_cap() {
        let mut av = Availability::new();
        let peers: Vec<Binmap> = (0..30u64).map(|i| map(&[c(0), c(i + 1)])).collect();
        for p in &peers {
            av.add_peer(p);
        }
        av.check_invariants().unwrap();
        assert_eq!(av.levels(), 31);
        assert_eq!((av.rarity(0), av.rarity(5), av.rarity(40)), (30, 1, 0));
        assert!(av.level(30).unwrap().is_filled(c(0)));
        assert_eq!(av.level(31), None);
        for p in &peers {
            av.remove_peer(p);
        }
        assert_eq!(av, Availability::new());
    }

    #[test]
    fn rarest_first() {
        let mut av = Availability::new();
        // Chunks 0..8 held by three peers, 8..12 by one, 12..16 by two.
        av.add_peer(&map(&[b(3, 0), b(2, 3)]));
        av.add_peer(&map(&[b(3, 0)]));
        av.add_peer(&map(&[b(4, 0)]));
        av.check_invariants().unwrap();
        let offer = map(&[b(4, 0)]);
        let none = Binmap::new();
        let range = b(4, 0);
        assert_eq!(av.find_rarest(&offer, &none, range, 0), Some(b(2, 2)));
        assert_eq!(av.find_rarest(&offer, &none, range, 1), Some(b(2, 2)));
        // Excluding the first rarest chunks moves to what is left of that level.
        let got = map(&[b(1, 4)]);
        assert_eq!(av.find_rarest(&offer, &got, range, 0), Some(b(1, 5)));
        // Then the next rarity level.
        let got = map(&[b(2, 2)]);
        assert_eq!(av.find_rarest(&offer, &got, range, 0), Some(b(2, 3)));
        let got = map(&[b(3, 1)]);
        assert_eq!(av.find_rarest(&offer, &got, range, 0), Some(b(3, 0)));
        let got = map(&[b(4, 0)]);
        assert_eq!(av.find_rarest(&offer, &got, range, 0), None);
        // An offer limited to common chunks.
        let offer = map(&[b(1, 0)]);
        assert_eq!(av.find_rarest(&offer, &none, range, 0), Some(b(1, 0)));
        assert_eq!(av.find_rarest(&offer, &none, Bin::NONE, 0), None);
    }
}
