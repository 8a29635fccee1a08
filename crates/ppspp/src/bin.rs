//! Bin numbers (RFC 7574 §4.3, libswift `bin.h`): one `u64` names an aligned power-of-two
//! range of chunks *and* the Merkle tree node above it.
//!
//! Chunk `i` is bin `2i`; the node at layer `l`, offset `o` is `((2o + 1) << l) - 1`, so a
//! bin's layer is its number of trailing one bits and a parent is the mean of its children.
//! Width-8 tree: `7` on top, then `3 11`, `1 5 9 13`, leaves `0 2 4 … 14`.
//!
//! Every method is total: bins arrive from peers, so nothing here panics on any `u64`.
//! Operations that would leave the 63-layer space answer [`Bin::NONE`].

use core::fmt;

/// An aligned range of `2^layer` chunks, which is also a node of the Merkle tree.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bin(u64);

/// The highest layer a bin can have; [`Bin::ALL`] sits there.
pub const MAX_LAYER: u32 = 63;

impl Bin {
    /// Every chunk: layer 63, offset 0 (`0x7FFF…F`).
    pub const ALL: Bin = Bin(0x7FFF_FFFF_FFFF_FFFF);
    /// The empty interval (`0xFFFF…F`).
    pub const NONE: Bin = Bin(u64::MAX);

    /// The bin with this raw number (as sent on the wire in the 64-bit bin encoding).
    pub const fn from_raw(raw: u64) -> Bin {
        Bin(raw)
    }

    /// The raw bin number.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// The bin at `layer` and `offset`, or `None` if it does not fit in 63 layers.
    pub const fn new(layer: u32, offset: u64) -> Option<Bin> {
        if layer > MAX_LAYER || offset >= (1u64 << (MAX_LAYER - layer)) {
            return None;
        }
        Some(Bin((((offset << 1) | 1) << layer) - 1))
    }

    /// The leaf bin of chunk `index`, or `None` past chunk `2^63 - 1`.
    pub const fn chunk(index: u64) -> Option<Bin> {
        Bin::new(0, index)
    }

    /// True for [`Bin::NONE`], the empty interval.
    pub const fn is_none(self) -> bool {
        self.0 == u64::MAX
    }

    /// True for [`Bin::ALL`], the bin covering every chunk.
    pub const fn is_all(self) -> bool {
        self.0 == Bin::ALL.0
    }

    /// True for a single-chunk bin.
    pub const fn is_base(self) -> bool {
        self.0 & 1 == 0
    }

    /// Height above the chunks (0 for a chunk). [`Bin::NONE`] has layer 64.
    pub const fn layer(self) -> u32 {
        self.0.trailing_ones()
    }

    /// Mask of the low `layer + 1` bits (`v ^ (v + 1)`).
    pub const fn layer_bits(self) -> u64 {
        self.0 ^ self.0.wrapping_add(1)
    }

    /// Position among the bins of the same layer.
    pub const fn layer_offset(self) -> u64 {
        match self.0.checked_shr(self.layer() + 1) {
            Some(o) => o,
            None => 0,
        }
    }

    /// Index of the first chunk covered.
    pub const fn base_offset(self) -> u64 {
        if self.is_none() {
            return 0;
        }
        (self.0 & self.0.wrapping_add(1)) >> 1
    }

    /// Number of chunks covered (0 for [`Bin::NONE`]).
    pub const fn base_length(self) -> u64 {
        if self.is_none() {
            return 0;
        }
        1u64 << self.layer()
    }

    /// Index of the last chunk covered (inclusive).
    pub const fn last_chunk(self) -> u64 {
        self.base_offset() + self.base_length().saturating_sub(1)
    }

    /// The covered chunks as an inclusive `(first, last)` pair, or `None` for [`Bin::NONE`].
    pub const fn chunk_range(self) -> Option<(u64, u64)> {
        if self.is_none() {
            return None;
        }
        Some((self.base_offset(), self.last_chunk()))
    }

    /// The leftmost chunk bin below this one.
    pub const fn base_left(self) -> Bin {
        if self.is_none() {
            return Bin::NONE;
        }
        Bin(self.0 & self.0.wrapping_add(1))
    }

    /// The rightmost chunk bin below this one.
    pub const fn base_right(self) -> Bin {
        if self.is_none() {
            return Bin::NONE;
        }
        Bin((self.0 | self.0.wrapping_add(1)) - 1)
    }

    /// The bin one layer up that contains this one ([`Bin::NONE`] above [`Bin::ALL`]).
    pub const fn parent(self) -> Bin {
        if self.layer() >= MAX_LAYER {
            return Bin::NONE;
        }
        let lb = self.layer_bits();
        Bin((self.0 | lb) & !(lb + 1))
    }

    /// Both halves, or `None` for a chunk (and for [`Bin::NONE`]).
    pub const fn children(self) -> Option<(Bin, Bin)> {
        if self.is_base() || self.is_none() {
            return None;
        }
        let t = (self.0.wrapping_add(1) & self.0.wrapping_add(1).wrapping_neg()) >> 1;
        Some((Bin(self.0 ^ t), Bin(self.0 + t)))
    }

    /// Left half ([`Bin::NONE`] for a chunk).
    pub const fn left(self) -> Bin {
        match self.children() {
            Some((l, _)) => l,
            None => Bin::NONE,
        }
    }

    /// Right half ([`Bin::NONE`] for a chunk).
    pub const fn right(self) -> Bin {
        match self.children() {
            Some((_, r)) => r,
            None => Bin::NONE,
        }
    }

    /// The other child of this bin's parent ([`Bin::NONE`] at the top).
    pub const fn sibling(self) -> Bin {
        if self.layer() >= MAX_LAYER {
            return Bin::NONE;
        }
        Bin(self.0 ^ (self.layer_bits() + 1))
    }

    /// True if this bin is the left child of its parent.
    pub const fn is_left(self) -> bool {
        self.0 & (self.layer_bits() + 1) == 0
    }

    /// True if this bin is the right child of its parent.
    pub const fn is_right(self) -> bool {
        !self.is_left()
    }

    /// True if `other` lies within this bin (a bin contains itself). Nothing contains
    /// [`Bin::NONE`] and [`Bin::NONE`] contains nothing.
    pub const fn contains(self, other: Bin) -> bool {
        if self.is_none() || other.is_none() {
            return false;
        }
        let lo = self.0 & self.0.wrapping_add(1);
        let hi = self.0 | self.0.wrapping_add(1);
        lo <= other.0 && other.0 < hi
    }

    /// Mirrors subtrees chosen by the bits of `mask` (libswift's `twisted`): used to start
    /// scans at a random position so channels do not all pick the same chunk.
    pub const fn twisted(self, mask: u64) -> Bin {
        if self.is_none() {
            return Bin::NONE;
        }
        Bin(self.0 ^ ((mask << 1) & !self.layer_bits()))
    }

    /// The 32-bit wire form: ALL and NONE map to `0x7FFFFFFF` and `0xFFFFFFFF`; a bin that
    /// does not fit in 32 bits (or would collide with those values) gives `None`.
    pub const fn to_u32(self) -> Option<u32> {
        if self.is_all() {
            Some(0x7FFF_FFFF)
        } else if self.is_none() {
            Some(0xFFFF_FFFF)
        } else if self.0 < 0x7FFF_FFFF || (self.0 > 0x7FFF_FFFF && self.0 < 0xFFFF_FFFF) {
            Some(self.0 as u32)
        } else {
            None
        }
    }

    /// libswift's lossy conversion: anything that does not fit becomes `0xFFFFFFFF` (NONE).
    pub const fn to_u32_or_none(self) -> u32 {
        match self.to_u32() {
            Some(v) => v,
            None => 0xFFFF_FFFF,
        }
    }

    /// The bin for a 32-bit wire value, mapping `0x7FFFFFFF` to ALL and `0xFFFFFFFF` to NONE.
    pub const fn from_u32(v: u32) -> Bin {
        match v {
            0x7FFF_FFFF => Bin::ALL,
            0xFFFF_FFFF => Bin::NONE,
            _ => Bin(v as u64),
        }
    }

    /// The smallest bin whose chunks include `0..n_chunks` (the Merkle root's position).
    /// `None` when `n_chunks` is 0 or above `2^63`.
    pub const fn covering(n_chunks: u64) -> Option<Bin> {
        if n_chunks == 0 || n_chunks > (1u64 << MAX_LAYER) {
            return None;
        }
        let layer = (n_chunks - 1).checked_ilog2();
        let layer = match layer {
            Some(l) => l + 1,
            None => 0,
        };
        Bin::new(layer, 0)
    }

    /// The peaks of content with `n_chunks` chunks: the largest complete subtrees, left to
    /// right (so in descending size); one per set bit of `n_chunks`.
    pub fn peaks(n_chunks: u64) -> Peaks {
        Peaks {
            remaining: n_chunks.min(1u64 << MAX_LAYER),
            start: 0,
        }
    }

    /// The minimal list of aligned bins covering chunks `first..=last`, left to right.
    /// Empty when `first > last`.
    pub fn from_chunk_range(first: u64, last: u64) -> ChunkRangeBins {
        ChunkRangeBins {
            next: first,
            last,
            done: first > last || first >= (1u64 << MAX_LAYER),
        }
    }
}

/// Iterator over [`Bin::peaks`].
#[derive(Clone, Debug)]
pub struct Peaks {
    remaining: u64,
    start: u64,
}

impl Iterator for Peaks {
    type Item = Bin;

    fn next(&mut self) -> Option<Bin> {
        if self.remaining == 0 {
            return None;
        }
        let layer = self.remaining.ilog2();
        let width = 1u64 << layer;
        let bin = Bin::new(layer, self.start >> layer)?;
        self.start += width;
        self.remaining -= width;
        Some(bin)
    }
}

/// Iterator over [`Bin::from_chunk_range`].
#[derive(Clone, Debug)]
pub struct ChunkRangeBins {
    next: u64,
    last: u64,
    done: bool,
}

impl Iterator for ChunkRangeBins {
    type Item = Bin;

    fn next(&mut self) -> Option<Bin> {
        if self.done {
            return None;
        }
        let last = self.last.min((1u64 << MAX_LAYER) - 1);
        // Largest aligned block starting at `next` that does not pass `last`.
        let align = if self.next == 0 {
            MAX_LAYER
        } else {
            self.next.trailing_zeros().min(MAX_LAYER)
        };
        let span = last - self.next + 1;
        let layer = align.min(span.ilog2());
        let bin = Bin::new(layer, self.next >> layer)?;
        let end = bin.last_chunk();
        if end >= last {
            self.done = true;
        } else {
            self.next = end + 1;
        }
        Some(bin)
    }
}

impl fmt::Debug for Bin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            f.write_str("Bin(NONE)")
        } else if self.is_all() {
            f.write_str("Bin(ALL)")
        } else {
            write!(
                f,
                "Bin({} = layer {} offset {})",
                self.0,
                self.layer(),
                self.layer_offset()
            )
        }
    }
}

impl fmt::Display for Bin {
    /// Chunk range notation, e.g. `4..=7`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.chunk_range() {
            None => f.write_str("none"),
            Some((a, b)) if a == b => write!(f, "{a}"),
            Some((a, b)) => write!(f, "{a}..={b}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(layer: u32, offset: u64) -> Bin {
        Bin::new(layer, offset).unwrap()
    }

    #[test]
    fn libswift_bin64_vectors() {
        assert_eq!(b(1, 0).raw(), 1);
        assert_eq!(b(2, 1).raw(), 0xB);
        assert_eq!(b(34, 2345).layer(), 34);
        assert_eq!(b(34, 2345).layer_bits(), 0x7_FFFF_FFFF);
        assert_eq!(b(4, 18).parent(), b(5, 9));
        assert_eq!(b(5, 9).children(), Some((b(4, 18), b(4, 19))));
        assert_eq!(b(30, 1).parent(), b(31, 0));
        assert_eq!(b(2, 3).base_length(), 4);
        assert_eq!(b(1, 1).base_left(), b(0, 2));
        assert_eq!(Bin::ALL.to_u32(), Some(0x7FFF_FFFF));
        assert_eq!(Bin::NONE.to_u32(), Some(0xFFFF_FFFF));
        assert_eq!(b(40, 18).to_u32(), None);
        assert_eq!(b(40, 18).to_u32_or_none(), 0xFFFF_FFFF);
    }

    #[test]
    fn peaks_and_covering() {
        let p: Vec<u64> = Bin::peaks(7).map(Bin::raw).collect();
        assert_eq!(p, [3, 9, 12]);
        let p: Vec<u64> = Bin::peaks(26).map(Bin::raw).collect();
        assert_eq!(p, [15, 39, 49]);
        assert_eq!(Bin::peaks(0).count(), 0);
        assert_eq!(Bin::covering(1), Some(b(0, 0)));
        assert_eq!(Bin::covering(2), Some(b(1, 0)));
        assert_eq!(Bin::covering(7), Some(b(3, 0)));
        assert_eq!(Bin::covering(8), Some(b(3, 0)));
        assert_eq!(Bin::covering(9), Some(b(4, 0)));
        assert_eq!(Bin::covering(0), None);
        assert_eq!(Bin::covering(1 << 63), Some(Bin::ALL));
    }

    #[test]
    fn chunk_ranges() {
        let v: Vec<u64> = Bin::from_chunk_range(5, 25).map(Bin::raw).collect();
        assert_eq!(v, [10, 13, 23, 39, 49]);
        assert_eq!(Bin::from_chunk_range(3, 2).count(), 0);
        let all: Vec<Bin> = Bin::from_chunk_range(0, (1 << 63) - 1).collect();
        assert_eq!(all, [Bin::ALL]);
        // Exhaustive round trip as in libswift's chunkaddrtest.
        for s in 0..269u64 {
            for len in 1..312u64 {
                let bins: Vec<Bin> = Bin::from_chunk_range(s, s + len - 1).collect();
                let mut next = s;
                for (i, bin) in bins.iter().enumerate() {
                    assert_eq!(bin.base_offset(), next);
                    next = bin.last_chunk() + 1;
                    // Minimal: no two neighbours could merge into their parent.
                    if let Some(n) = bins.get(i + 1) {
                        assert!(!(bin.sibling() == *n && bin.is_left()));
                    }
                }
                assert_eq!(next, s + len);
            }
        }
    }

    #[test]
    fn relations() {
        let x = b(3, 1); // chunks 8..=15, bin 23
        assert_eq!(x.raw(), 23);
        assert_eq!(x.chunk_range(), Some((8, 15)));
        assert_eq!(x.sibling(), b(3, 0));
        assert!(x.is_right() && b(3, 0).is_left());
        assert!(x.contains(x) && x.contains(b(0, 8)) && x.contains(b(1, 7)));
        assert!(!x.contains(b(0, 16)) && !x.contains(b(4, 0)));
        assert_eq!(b(0, 6).children(), None);
        assert_eq!(b(0, 6).left(), Bin::NONE);
        assert_eq!(Bin::ALL.parent(), Bin::NONE);
        assert_eq!(Bin::ALL.sibling(), Bin::NONE);
        assert_eq!(Bin::ALL.base_offset(), 0);
        assert_eq!(Bin::ALL.base_length(), 1 << 63);
        assert!(Bin::ALL.contains(b(0, (1 << 63) - 1)));
        assert!(!Bin::NONE.contains(b(0, 0)) && !Bin::ALL.contains(Bin::NONE));
        assert_eq!(Bin::NONE.base_length(), 0);
        assert_eq!(Bin::NONE.parent(), Bin::NONE);
        assert_eq!(Bin::NONE.children(), None);
        assert_eq!(Bin::new(64, 0), None);
        assert_eq!(Bin::new(62, 2), None);
        assert_eq!(format!("{}", x), "8..=15");
    }

    #[test]
    fn twist_is_an_involution_inside_the_parent_layer() {
        let x = b(2, 5);
        for mask in [0u64, 1, 6, 63, u64::MAX >> 2] {
            let t = x.twisted(mask);
            assert_eq!(t.layer(), x.layer());
            assert_eq!(t.twisted(mask), x);
        }
    }

    #[test]
    fn total_on_every_raw_value() {
        for raw in [
            0u64,
            1,
            u64::MAX,
            u64::MAX - 1,
            1 << 63,
            (1 << 63) + 5,
            0x7FFF_FFFF,
        ] {
            let x = Bin::from_raw(raw);
            let _ = (
                x.parent(),
                x.children(),
                x.sibling(),
                x.base_offset(),
                x.last_chunk(),
            );
            let _ = (x.base_left(), x.base_right(), x.to_u32(), x.layer_offset());
            let _ = (
                x.contains(Bin::ALL),
                x.twisted(u64::MAX),
                format!("{x:?} {x}"),
            );
        }
    }
}
